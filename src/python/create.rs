//! Tensor creation from Python: `tensor`, `zeros`, `randn`, ...

use super::dtype::PyDType;
use super::tensor::{dims_usize, shape_arg, wrap, PyTensor};
use crate::{DType, Tensor};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyTuple};

/// Flattens nested Python lists/tuples of numbers; returns values, shape
/// and the inferred dtype.
fn flatten_nested(
    obj: &Bound<'_, PyAny>,
    shape: &mut Vec<usize>,
    depth: usize,
    out: &mut Vec<f64>,
    kind: &mut u8,
) -> PyResult<()> {
    if obj.is_instance_of::<PyBool>()
        || obj.is_instance_of::<PyInt>()
        || obj.is_instance_of::<PyFloat>()
    {
        if depth != shape.len() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "expected sequence, got number",
            ));
        }
        let k = if obj.is_instance_of::<PyBool>() {
            0
        } else if obj.is_instance_of::<PyInt>() {
            1
        } else {
            2
        };
        *kind = (*kind).max(k);
        out.push(obj.extract::<f64>()?);
        return Ok(());
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.borrow().inner;
        if t.numel() != 1 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "only one element tensors can be converted to Python scalars",
            ));
        }
        *kind = (*kind).max(t.dtype().category());
        out.push(t.item()?.to_f64());
        return Ok(());
    }
    let items: Vec<Bound<'_, PyAny>> = obj.try_iter()?.collect::<PyResult<_>>()?;
    if depth == shape.len() {
        shape.push(items.len());
    } else if shape[depth] != items.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "expected sequence of length {} at dim {} (got {})",
            shape[depth],
            depth,
            items.len()
        )));
    }
    for it in &items {
        flatten_nested(it, shape, depth + 1, out, kind)?;
    }
    Ok(())
}

pub fn tensor_from_py(data: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Tensor> {
    if let Ok(t) = data.cast::<PyTensor>() {
        let t = t.borrow().inner.detach().clone_tensor()?;
        return Ok(t.to_dtype(dtype.unwrap_or(t.dtype()))?);
    }
    let mut shape = Vec::new();
    let mut vals = Vec::new();
    let mut kind = 0u8;
    flatten_nested(data, &mut shape, 0, &mut vals, &mut kind)?;
    if shape.len() > 0 && vals.is_empty() {
        kind = 2; // torch.tensor([]) is float32
    }
    let inferred = match kind {
        0 => DType::Bool,
        1 => DType::I64,
        _ => DType::F32,
    };
    let dt = dtype.unwrap_or(inferred);
    let t = match dt {
        DType::I64 => Tensor::from_vec(vals.iter().map(|&v| v as i64).collect::<Vec<_>>(), &shape)?,
        _ => Tensor::from_vec(vals, &shape)?.cast_raw(dt),
    };
    Ok(t)
}

#[pyfunction]
#[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false))]
fn tensor(
    data: &Bound<'_, PyAny>,
    dtype: Option<PyDType>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let _ = device;
    let t = tensor_from_py(data, dtype.map(|d| d.dtype))?;
    t.set_requires_grad(requires_grad)?;
    Ok(wrap(t))
}

fn make(
    shape: &Bound<'_, PyTuple>,
    dtype: Option<PyDType>,
    requires_grad: bool,
    f: impl FnOnce(&[usize], DType) -> crate::Result<Tensor>,
) -> PyResult<PyTensor> {
    let shape = dims_usize(&shape_arg(shape)?)?;
    let t = f(&shape, dtype.map_or(DType::F32, |d| d.dtype))?;
    t.set_requires_grad(requires_grad)?;
    Ok(wrap(t))
}

#[pyfunction]
#[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false))]
fn zeros(
    size: &Bound<'_, PyTuple>,
    dtype: Option<PyDType>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let _ = device;
    make(size, dtype, requires_grad, |s, d| Ok(Tensor::zeros(s, d)))
}

#[pyfunction]
#[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false))]
fn ones(
    size: &Bound<'_, PyTuple>,
    dtype: Option<PyDType>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let _ = device;
    make(size, dtype, requires_grad, |s, d| Ok(Tensor::ones(s, d)))
}

#[pyfunction]
#[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false))]
fn randn(
    size: &Bound<'_, PyTuple>,
    dtype: Option<PyDType>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let _ = device;
    make(size, dtype, requires_grad, Tensor::randn)
}

#[pyfunction]
#[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false))]
fn rand(
    size: &Bound<'_, PyTuple>,
    dtype: Option<PyDType>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let _ = device;
    make(size, dtype, requires_grad, Tensor::rand)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tensor, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(ones, m)?)?;
    m.add_function(wrap_pyfunction!(randn, m)?)?;
    m.add_function(wrap_pyfunction!(rand, m)?)?;
    Ok(())
}
