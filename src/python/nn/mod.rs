//! What `ferrograd.nn` calls: parameter initialisation and utilities.

pub(crate) mod init;
pub(crate) mod utils;
