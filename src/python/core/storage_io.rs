//! Raw storage bytes for checkpoints (torch's zip format, see
//! `python/ferrograd/serialization.py`): a storage's bytes out, a storage
//! from bytes in, and views over a storage. All copies happen here.
//!
//! torch dtypes ferrograd lacks load widened (values kept exactly):
//! float16/bfloat16 as float32.

use crate::buffer::Element;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::Layout;
use crate::{DType, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

fn le<const N: usize, T>(b: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
    b.chunks_exact(N)
        .map(|c| f(c.try_into().expect("chunks of N")))
        .collect()
}

/// IEEE half to f32 (exact).
fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // subnormal: m * 2^-24
            let v = m as f32 * (1.0 / (1u32 << 24) as f32);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

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

/// The values of little-endian `data` of the torch dtype `dtype`, widened
/// to float32 where ferrograd lacks the dtype (float16, bfloat16), as a fresh 1-D tensor.
pub(crate) fn tensor_from_le_bytes(data: &[u8], dtype: &str) -> PyResult<Tensor> {
    let size = match dtype {
        "bool" | "int8" | "uint8" => 1,
        "int16" | "float16" | "bfloat16" => 2,
        "int32" | "float32" => 4,
        "int64" | "float64" => 8,
        other => {
            return Err(PyRuntimeError::new_err(format!(
                "ferrograd cannot load a storage of dtype {other}"
            )))
        }
    };
    if !data.len().is_multiple_of(size) {
        return Err(PyValueError::new_err(format!(
            "storage of {} bytes is not a whole number of {dtype} elements",
            data.len()
        )));
    }
    let n = data.len() / size;
    if let Some(dt) = DType::from_name(dtype) {
        return Ok(Tensor::from_le_bytes(data, dt, &[n])?);
    }
    let t = match dtype {
        "float16" => Tensor::from_vec(le(data, |b| f16_to_f32(u16::from_le_bytes(b))), &[n]),
        _ => Tensor::from_vec(
            le(data, |b| {
                f32::from_bits((u16::from_le_bytes(b) as u32) << 16)
            }),
            &[n],
        ),
    }?;
    Ok(t)
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
    m.add_function(wrap_pyfunction!(_storage_info, m)?)?;
    m.add_function(wrap_pyfunction!(_storage_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(_storage_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(_storage_view, m)?)
}

#[cfg(test)]
mod tests {
    use super::f16_to_f32;

    #[test]
    fn half_values() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert!(f16_to_f32(0x7c00).is_infinite());
        assert!(f16_to_f32(0x7e00).is_nan());
    }
}
