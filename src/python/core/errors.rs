//! Errors mapped both ways, in one place: a Rust `Error` becomes the
//! Python exception of its kind, and a Python exception raised inside Rust
//! code (a custom Function, a hook) travels in an `Error` and comes out as
//! the same exception object.

use crate::{Error, ErrorKind};
use pyo3::exceptions::{
    PyAssertionError, PyBufferError, PyIndexError, PyNotImplementedError, PyRuntimeError,
    PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::PyErr;
use std::sync::Arc;

pyo3::create_exception!(
    ferrograd.linalg,
    LinAlgError,
    PyRuntimeError,
    "Raised by ferrograd.linalg for singular or non-positive-definite input (torch.linalg.LinAlgError)."
);

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        // A Python exception that crossed Rust code comes out unchanged.
        if let Some(p) = e
            .payload
            .as_ref()
            .and_then(|p| p.downcast_ref::<PyErrPayload>())
        {
            return pyo3::Python::attach(|py| p.0.clone_ref(py));
        }
        match e.kind {
            ErrorKind::Runtime | ErrorKind::Internal => PyRuntimeError::new_err(e.msg),
            ErrorKind::Value => PyValueError::new_err(e.msg),
            ErrorKind::Type => PyTypeError::new_err(e.msg),
            ErrorKind::Index => PyIndexError::new_err(e.msg),
            ErrorKind::Assertion => PyAssertionError::new_err(e.msg),
            ErrorKind::NotImplemented => PyNotImplementedError::new_err(e.msg),
            ErrorKind::LinAlg => LinAlgError::new_err(e.msg),
            ErrorKind::Buffer => PyBufferError::new_err(e.msg),
        }
    }
}

/// A Python exception carried through Rust code inside a `crate::Error`,
/// re-raised as the same exception object (see `From<Error> for PyErr` above).
pub(crate) struct PyErrPayload(pub PyErr);

/// Wraps a Python exception so that it crosses the engine unchanged.
pub(crate) fn error_from_py(py: Python<'_>, e: PyErr) -> Error {
    let msg = e.value(py).to_string();
    Error::with_payload(ErrorKind::Runtime, msg, Arc::new(PyErrPayload(e)))
}
