//! The one place Rust errors become Python exceptions.

use crate::{Error, ErrorKind};
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::PyErr;

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        match e.kind {
            ErrorKind::Runtime | ErrorKind::Internal => PyRuntimeError::new_err(e.msg),
            ErrorKind::Value => PyValueError::new_err(e.msg),
            ErrorKind::Type => PyTypeError::new_err(e.msg),
            ErrorKind::Index => PyIndexError::new_err(e.msg),
        }
    }
}
