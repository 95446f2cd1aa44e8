//! Module-level forms of the view ops (`ferrograd.reshape(x, shape)`, ...).

use crate::python::core::tensor::{wrap, PyTensor};
use pyo3::prelude::*;

#[pymethods]
impl PyTensor {
    /// Splits dim `dim` into `sizes` (one of them may be -1), as a view.
    fn unflatten(&self, dim: i64, sizes: Vec<i64>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.unflatten(dim, &sizes)?))
    }
}

#[pyfunction]
fn reshape(input: PyRef<'_, PyTensor>, shape: Vec<i64>) -> PyResult<PyTensor> {
    Ok(wrap(input.inner.reshape(&shape)?))
}

#[pyfunction]
fn transpose(input: PyRef<'_, PyTensor>, dim0: i64, dim1: i64) -> PyResult<PyTensor> {
    Ok(wrap(input.inner.transpose(dim0, dim1)?))
}

#[pyfunction]
fn t(input: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    Ok(wrap(input.inner.t()?))
}

#[pyfunction]
fn permute(input: PyRef<'_, PyTensor>, dims: Vec<i64>) -> PyResult<PyTensor> {
    Ok(wrap(input.inner.permute(&dims)?))
}

#[pyfunction]
#[pyo3(signature = (input, dim=None))]
fn squeeze(input: PyRef<'_, PyTensor>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
    // torch's overloads: squeeze() / squeeze(int) / squeeze(tuple)
    let t = &input.inner;
    Ok(wrap(match dim {
        None => t.squeeze(None)?,
        Some(d) => match d.extract::<i64>() {
            Ok(i) => t.squeeze_dim(i)?,
            Err(_) => t.squeeze(Some(&d.extract::<Vec<i64>>()?))?,
        },
    }))
}

#[pyfunction]
fn unsqueeze(input: PyRef<'_, PyTensor>, dim: i64) -> PyResult<PyTensor> {
    Ok(wrap(input.inner.unsqueeze(dim)?))
}

#[pyfunction]
#[pyo3(signature = (input, start_dim=0, end_dim=-1))]
fn flatten(input: PyRef<'_, PyTensor>, start_dim: i64, end_dim: i64) -> PyResult<PyTensor> {
    Ok(wrap(input.inner.flatten(start_dim, end_dim)?))
}

/// Splits dim `dim` of `input` into `sizes` (one of them may be -1), as a view.
#[pyfunction]
fn unflatten(input: PyRef<'_, PyTensor>, dim: i64, sizes: Vec<i64>) -> PyResult<PyTensor> {
    Ok(wrap(input.inner.unflatten(dim, &sizes)?))
}

#[pyfunction]
fn narrow(input: PyRef<'_, PyTensor>, dim: i64, start: i64, length: usize) -> PyResult<PyTensor> {
    Ok(wrap(input.inner.narrow(dim, start, length)?))
}

#[pyfunction]
fn select(input: PyRef<'_, PyTensor>, dim: i64, index: i64) -> PyResult<PyTensor> {
    Ok(wrap(input.inner.select(dim, index)?))
}

#[pyfunction]
fn clone(input: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    Ok(wrap(input.inner.clone_tensor()?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(reshape, m)?)?;
    m.add_function(wrap_pyfunction!(transpose, m)?)?;
    m.add_function(wrap_pyfunction!(t, m)?)?;
    m.add_function(wrap_pyfunction!(permute, m)?)?;
    m.add_function(wrap_pyfunction!(squeeze, m)?)?;
    m.add_function(wrap_pyfunction!(unsqueeze, m)?)?;
    m.add_function(wrap_pyfunction!(flatten, m)?)?;
    m.add_function(wrap_pyfunction!(unflatten, m)?)?;
    m.add_function(wrap_pyfunction!(narrow, m)?)?;
    m.add_function(wrap_pyfunction!(select, m)?)?;
    m.add_function(wrap_pyfunction!(clone, m)?)?;
    Ok(())
}
