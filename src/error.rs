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
    /// No kernel for this dtype (torch's "\"kernel\" not implemented for
    /// 'Long'"): `NotImplementedError`.
    NotImplemented,
    /// A singular or non-positive-definite input (torch's
    /// `torch.linalg.LinAlgError`, a `RuntimeError` subclass).
    LinAlg,
    /// Memory that cannot be shared as asked (DLPack, the buffer
    /// protocol): `BufferError`.
    Buffer,
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
    pub fn not_implemented(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotImplemented, msg)
    }
    pub fn linalg(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::LinAlg, msg)
    }
    pub fn buffer(msg: impl Into<String>) -> Self {
        Self::new(ErrorKind::Buffer, msg)
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

/// `v` as C++'s default stream formatting prints a double (`%g`: six
/// significant digits, trailing zeros dropped), which torch's messages use.
pub fn cpp_double(v: f64) -> String {
    if !v.is_finite() {
        return match v {
            v if v.is_nan() => "nan",
            v if v > 0.0 => "inf",
            _ => "-inf",
        }
        .into();
    }
    fn trim(s: &str) -> &str {
        match s.contains('.') {
            true => s.trim_end_matches('0').trim_end_matches('.'),
            false => s,
        }
    }
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e}'s exponent is an integer");
    if (-4..6).contains(&exp) {
        trim(&format!("{:.*}", (5 - exp) as usize, v)).to_string()
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::cpp_double;

    #[test]
    fn doubles_print_as_cpp_streams_do() {
        let cases = [
            (-1.0, "-1"),
            (-0.5, "-0.5"),
            (-1e-10, "-1e-10"),
            (1.5e-7, "1.5e-07"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (0.1 + 0.2, "0.3"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (v, want) in cases {
            assert_eq!(cpp_double(v), want, "{v}");
        }
    }
}
