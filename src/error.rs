//! One error type for the whole crate. The Python bindings map each kind to
//! the exception type torch raises for it (see `src/python/errors.rs`).

use thiserror::Error;

/// The kind of failure, which decides the Python exception type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Shape/dtype mismatches, autograd misuse: `RuntimeError`.
    Runtime,
    /// Bad argument values: `ValueError`.
    Value,
    /// Wrong argument types: `TypeError`.
    Type,
    /// Out-of-range indices and dims: `IndexError`.
    Index,
    /// A bug inside ferrograd (a caught panic): `RuntimeError`.
    Internal,
}

#[derive(Debug, Clone, Error)]
#[error("{msg}")]
pub struct Error {
    pub kind: ErrorKind,
    pub msg: String,
}

impl Error {
    pub fn new(kind: ErrorKind, msg: impl Into<String>) -> Self {
        Error {
            kind,
            msg: msg.into(),
        }
    }
    pub fn runtime(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Runtime, msg)
    }
    pub fn value(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Value, msg)
    }
    pub fn type_error(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Type, msg)
    }
    pub fn index(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Index, msg)
    }
    pub fn internal(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, msg)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// `bail!(runtime, "...", args)` returns early with an error of that kind.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::Error::$kind(format!($($arg)*)))
    };
}
