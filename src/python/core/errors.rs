//! The one place Rust errors become Python exceptions.

use crate::{Error, ErrorKind};
use pyo3::exceptions::{PyAssertionError, PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::PyErr;

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        // A Python exception that crossed Rust code comes out unchanged.
        if let Some(p) = e
            .payload
            .as_ref()
            .and_then(|p| p.downcast_ref::<crate::python::autograd::function::PyErrPayload>())
        {
            return pyo3::Python::attach(|py| p.0.clone_ref(py));
        }
        match e.kind {
            ErrorKind::Runtime | ErrorKind::Internal => PyRuntimeError::new_err(e.msg),
            ErrorKind::Value => PyValueError::new_err(e.msg),
            ErrorKind::Type => PyTypeError::new_err(e.msg),
            ErrorKind::Index => PyIndexError::new_err(e.msg),
            ErrorKind::Assertion => PyAssertionError::new_err(e.msg),
        }
    }
}
