//! One error type for the whole crate. The Python bindings map each kind to
//! the exception type torch raises for it (see `src/python/errors.rs`).

use std::any::Any;
use std::sync::Arc;
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
    /// A failed internal check torch makes with `assert`: `AssertionError`.
    Assertion,
}

#[derive(Debug, Clone, Error)]
#[error("{msg}")]
pub struct Error {
    pub kind: ErrorKind,
    pub msg: String,
    /// The original foreign error this one carries, if any (e.g. the Python
    /// exception a custom Function raised), for the bindings to re-raise as is.
    pub payload: Option<Arc<dyn Any + Send + Sync>>,
}

impl Error {
    pub fn new(kind: ErrorKind, msg: impl Into<String>) -> Self {
        Error {
            kind,
            msg: msg.into(),
            payload: None,
        }
    }
    /// An error carrying a foreign error object (see `payload`).
    pub fn with_payload(
        kind: ErrorKind,
        msg: impl Into<String>,
        payload: Arc<dyn Any + Send + Sync>,
    ) -> Self {
        Error {
            kind,
            msg: msg.into(),
            payload: Some(payload),
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
    pub fn assertion(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Assertion, msg)
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
