//! Module-level forms of the arithmetic and view ops (`ferrograd.add(a, b)`,
//! `ferrograd.reshape(x, shape)`, ...) and the named arithmetic methods.

use crate::python::core::args::{as_scalar, tensor_or_scalar};
use crate::python::core::args::{operands, scaled};
use crate::python::core::tensor::{wrap, PyTensor};
use pyo3::prelude::*;

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (other, *, alpha=None))]
    fn add(
        &self,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.add(&scaled(other, &self.inner, alpha)?)?))
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub(
        &self,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.sub(&scaled(other, &self.inner, alpha)?)?))
    }
    fn mul(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(wrap(
            self.inner.mul(&tensor_or_scalar(other, &self.inner)?)?,
        ))
    }
    fn true_divide(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(wrap(
            self.inner.div(&tensor_or_scalar(other, &self.inner)?)?,
        ))
    }
}

#[pyfunction]
#[pyo3(signature = (input, other, *, alpha=None))]
fn add(
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    alpha: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let (a, b) = operands(input, other)?;
    let b = match alpha.and_then(as_scalar) {
        Some(s) => b.mul(&b.wrap_scalar(s))?,
        None => b,
    };
    Ok(wrap(a.add(&b)?))
}

#[pyfunction]
#[pyo3(signature = (input, other, *, alpha=None))]
fn sub(
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    alpha: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let (a, b) = operands(input, other)?;
    let b = match alpha.and_then(as_scalar) {
        Some(s) => b.mul(&b.wrap_scalar(s))?,
        None => b,
    };
    Ok(wrap(a.sub(&b)?))
}

#[pyfunction]
fn mul(input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let (a, b) = operands(input, other)?;
    Ok(wrap(a.mul(&b)?))
}

#[pyfunction]
fn true_divide(input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let (a, b) = operands(input, other)?;
    Ok(wrap(a.div(&b)?))
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
    let dims: Option<Vec<i64>> = match dim {
        None => None,
        Some(d) => Some(match d.extract::<i64>() {
            Ok(i) => vec![i],
            Err(_) => d.extract::<Vec<i64>>()?,
        }),
    };
    Ok(wrap(input.inner.squeeze(dims.as_deref())?))
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
    m.add_function(wrap_pyfunction!(add, m)?)?;
    m.add_function(wrap_pyfunction!(sub, m)?)?;
    m.add_function(wrap_pyfunction!(mul, m)?)?;
    m.add_function(wrap_pyfunction!(true_divide, m)?)?;
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
