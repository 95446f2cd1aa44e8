//! torch.nn's non-op parts: parameter initialisation.

pub mod init;
