//! Raw storage bytes for checkpoints (torch's zip format, see
//! `python/ferrograd/serialization.py`): a storage's bytes out, a storage
//! from bytes in, and views over a storage. All copies happen here.

use crate::buffer::Element;
use crate::python::core::bind::add_functions;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::Layout;
use crate::{DType, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// (key, storage element count, storage offset, dtype name) of a tensor:
/// tensors sharing a storage share the key while they live.
#[pyfunction]
fn _storage_info(t: PyRef<'_, PyTensor>) -> (usize, usize, usize, &'static str) {
    let t = &t.inner;
    let st = t.storage();
    (
        std::sync::Arc::as_ptr(st) as usize,
        st.read().len(),
        t.storage_offset(),
        t.dtype().name(),
    )
}

/// The whole storage of `t` as little-endian bytes (bool: one byte each).
#[pyfunction]
fn _storage_bytes<'py>(py: Python<'py>, t: PyRef<'py, PyTensor>) -> Bound<'py, PyBytes> {
    let st = t.inner.storage().clone();
    let data = st.read();
    let mut out = Vec::with_capacity(data.len() * data.dtype().itemsize());
    crate::dispatch_all!(data.dtype(), T => data
        .as_slice::<T>()
        .iter()
        .for_each(|&v| v.put_le(&mut out)));
    drop(data);
    PyBytes::new(py, &out)
}

/// A 1-D tensor over a fresh storage copied from little-endian `data` of
/// the torch dtype `dtype` (e.g. "float32", "bfloat16").
#[pyfunction]
fn _storage_from_bytes(data: &[u8], dtype: &str) -> PyResult<PyTensor> {
    Ok(wrap(tensor_from_le_bytes(data, dtype)?))
}

/// The values of little-endian `data` of the torch dtype `dtype`, as a
/// fresh 1-D tensor.
fn tensor_from_le_bytes(data: &[u8], dtype: &str) -> PyResult<Tensor> {
    let Some(dt) = DType::from_name(dtype) else {
        return Err(PyRuntimeError::new_err(format!(
            "ferrograd cannot load a storage of dtype {dtype}"
        )));
    };
    let size = dt.itemsize();
    if !data.len().is_multiple_of(size) {
        return Err(PyValueError::new_err(format!(
            "storage of {} bytes is not a whole number of {dtype} elements",
            data.len()
        )));
    }
    Ok(Tensor::from_le_bytes(data, dt, &[data.len() / size])?)
}

/// A tensor over `storage`'s memory with the given size, stride and offset
/// (torch's `set_(storage, offset, size, stride)`): no copy; the bounds
/// are checked.
#[pyfunction]
fn _storage_view(
    storage: PyRef<'_, PyTensor>,
    offset: usize,
    size: Vec<usize>,
    stride: Vec<usize>,
) -> PyResult<PyTensor> {
    let base = &storage.inner;
    if size.len() != stride.len() {
        return Err(PyRuntimeError::new_err(format!(
            "mismatch in length of strides and shape: {} vs {}",
            stride.len(),
            size.len()
        )));
    }
    let layout = Layout::strided(&size, &stride, offset);
    let len = base.storage().read().len();
    if layout.numel() > 0 && layout.storage_extent() > len {
        return Err(PyRuntimeError::new_err(format!(
            "setStorage: sizes {size:?}, strides {stride:?}, storage offset {offset} require a storage of more than {len} elements"
        )));
    }
    Ok(wrap(Tensor::from_storage(base.storage().clone(), layout)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m => _storage_info, _storage_bytes, _storage_from_bytes, _storage_view);
    Ok(())
}
