//! torch.nn's non-op parts: parameter initialisation and gradient clipping.

pub mod clip;
pub mod init;
