//! safetensors bindings: `_C._safetensors_save` (name -> tensor dict and
//! string metadata to bytes) and `_C._safetensors_load` (bytes to a dict
//! and the metadata); the format is `tensor::safetensors`'s. The Python
//! front is `ferrograd.utils.safetensors`.

use crate::python::core::bind::add_functions;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::safetensors::{deserialize, serialize};
use crate::Tensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::collections::HashMap;

/// A loaded file: its tensors by name and its metadata.
type Loaded<'py> = (Bound<'py, PyDict>, Option<HashMap<String, String>>);

/// The safetensors bytes of `tensors` (a dict of name -> contiguous or not
/// tensor) with optional string `metadata`.
#[pyfunction]
#[pyo3(signature = (tensors, metadata=None))]
fn _safetensors_save<'py>(
    py: Python<'py>,
    tensors: &Bound<'py, PyDict>,
    metadata: Option<HashMap<String, String>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut named: Vec<(String, Tensor)> = Vec::with_capacity(tensors.len());
    for (k, v) in tensors.iter() {
        let name: String = k.extract()?;
        let t = v.cast::<PyTensor>().map_err(|_| {
            PyTypeError::new_err(format!(
                "Key `{name}` is invalid, expected ferrograd.Tensor but received {}",
                v.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        let t = t.borrow().inner.clone();
        named.push((name, t));
    }
    let out = serialize(named.iter().map(|(n, t)| (n.as_str(), t)), metadata)?;
    Ok(PyBytes::new(py, &out))
}

/// A dict of name -> tensor and the metadata (or None) of safetensors bytes.
#[pyfunction]
fn _safetensors_load<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Loaded<'py>> {
    let (tensors, meta) = deserialize(data)?;
    let out = PyDict::new(py);
    for (name, t) in tensors {
        out.set_item(name, wrap(t))?;
    }
    Ok((out, meta))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m => _safetensors_save, _safetensors_load);
    Ok(())
}
