//! Module-level forms of the view ops (`ferrograd.reshape(x, shape)`, ...).

use crate::python::core::bind::bind_methods;
use crate::python::core::tensor::{view_result, wrap, PyTensor};
use pyo3::prelude::*;

bind_methods! { view_fns, register_fns:
    /// Splits dim `dim` into `sizes` (one of them may be -1), as a view.
    fn unflatten(slf: &Bound<'_, Self>, dim: i64, sizes: Vec<i64>) -> PyResult<PyTensor> {
        let t = slf.borrow().inner.unflatten(dim, &sizes)?;
        Ok(view_result(slf, t))
    }
}

#[pyfunction]
fn reshape(input: &Bound<'_, PyTensor>, shape: Vec<i64>) -> PyResult<PyTensor> {
    let t = input.borrow().inner.reshape(&shape)?;
    Ok(view_result(input, t))
}

#[pyfunction]
fn transpose(input: &Bound<'_, PyTensor>, dim0: i64, dim1: i64) -> PyResult<PyTensor> {
    let t = input.borrow().inner.transpose(dim0, dim1)?;
    Ok(view_result(input, t))
}

#[pyfunction]
fn t(input: &Bound<'_, PyTensor>) -> PyResult<PyTensor> {
    let t = input.borrow().inner.t()?;
    Ok(view_result(input, t))
}

#[pyfunction]
fn permute(input: &Bound<'_, PyTensor>, dims: Vec<i64>) -> PyResult<PyTensor> {
    let t = input.borrow().inner.permute(&dims)?;
    Ok(view_result(input, t))
}

#[pyfunction]
#[pyo3(signature = (input, dim=None))]
fn squeeze(input: &Bound<'_, PyTensor>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
    PyTensor::squeeze(input, dim)
}

#[pyfunction]
fn unsqueeze(input: &Bound<'_, PyTensor>, dim: i64) -> PyResult<PyTensor> {
    let t = input.borrow().inner.unsqueeze(dim)?;
    Ok(view_result(input, t))
}

#[pyfunction]
#[pyo3(signature = (input, start_dim=0, end_dim=-1))]
fn flatten<'py>(
    input: &Bound<'py, PyTensor>,
    start_dim: i64,
    end_dim: i64,
) -> PyResult<Bound<'py, PyAny>> {
    let t = input.borrow().inner.flatten(start_dim, end_dim)?;
    crate::python::core::tensor::same_or_new(input, t)
}

#[pyfunction]
fn narrow(input: &Bound<'_, PyTensor>, dim: i64, start: i64, length: usize) -> PyResult<PyTensor> {
    let t = input.borrow().inner.narrow(dim, start, length)?;
    Ok(view_result(input, t))
}

#[pyfunction]
fn select(input: &Bound<'_, PyTensor>, dim: i64, index: i64) -> PyResult<PyTensor> {
    let t = input.borrow().inner.select(dim, index)?;
    Ok(view_result(input, t))
}

#[pyfunction]
fn clone(input: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    Ok(wrap(input.inner.clone_tensor()?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_fns(m)?;
    m.add_function(wrap_pyfunction!(reshape, m)?)?;
    m.add_function(wrap_pyfunction!(transpose, m)?)?;
    m.add_function(wrap_pyfunction!(t, m)?)?;
    m.add_function(wrap_pyfunction!(permute, m)?)?;
    m.add_function(wrap_pyfunction!(squeeze, m)?)?;
    m.add_function(wrap_pyfunction!(unsqueeze, m)?)?;
    m.add_function(wrap_pyfunction!(flatten, m)?)?;
    m.add_function(wrap_pyfunction!(narrow, m)?)?;
    m.add_function(wrap_pyfunction!(select, m)?)?;
    m.add_function(wrap_pyfunction!(clone, m)?)?;
    Ok(())
}
