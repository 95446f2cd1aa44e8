//! The view ops (`src/ops/view.rs`) and `clone`: Tensor methods and their
//! module forms (`ferrograd.reshape(x, shape)`, ...).

use crate::python::core::args::shape_arg;
use crate::python::core::bind::bind_functions;
use crate::python::core::bind::bind_methods;
use crate::python::core::tensor::{same_or_new, view_result, wrap, PyTensor};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

bind_methods! { view_fns, register_fns:
    fn transpose(slf: &Bound<'_, Self>, dim0: i64, dim1: i64) -> PyResult<PyTensor> {
        let t = slf.borrow().inner.transpose(dim0, dim1)?;
        Ok(view_result(slf, t))
    }
    fn t(slf: &Bound<'_, Self>) -> PyResult<PyTensor> {
        let t = slf.borrow().inner.t()?;
        Ok(view_result(slf, t))
    }
    fn unsqueeze(slf: &Bound<'_, Self>, dim: i64) -> PyResult<PyTensor> {
        let t = slf.borrow().inner.unsqueeze(dim)?;
        Ok(view_result(slf, t))
    }
    #[pyo3(signature = (dim=None))]
    fn squeeze(
        slf: &Bound<'_, Self>,
        dim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        // torch's overloads: squeeze() / squeeze(int) / squeeze(tuple)
        let me = slf.borrow();
        let t = &me.inner;
        let r = match dim {
            None => t.squeeze(None)?,
            Some(d) => match d.extract::<i64>() {
                Ok(i) => t.squeeze_dim(i)?,
                Err(_) => t.squeeze(Some(&d.extract::<Vec<i64>>()?))?,
            },
        };
        Ok(view_result(slf, r))
    }
    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten<'py>(
        slf: &Bound<'py, Self>,
        start_dim: i64,
        end_dim: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let t = slf.borrow().inner.flatten(start_dim, end_dim)?;
        same_or_new(slf, t)
    }
    fn narrow(slf: &Bound<'_, Self>, dim: i64, start: i64, length: usize) -> PyResult<PyTensor> {
        let t = slf.borrow().inner.narrow(dim, start, length)?;
        Ok(view_result(slf, t))
    }
    fn select(slf: &Bound<'_, Self>, dim: i64, index: i64) -> PyResult<PyTensor> {
        let t = slf.borrow().inner.select(dim, index)?;
        Ok(view_result(slf, t))
    }
    fn clone(&self) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.clone_tensor()?))
    }
    /// Splits dim `dim` into `sizes` (one of them may be -1), as a view.
    fn unflatten(slf: &Bound<'_, Self>, dim: i64, sizes: Vec<i64>) -> PyResult<PyTensor> {
        let t = slf.borrow().inner.unflatten(dim, &sizes)?;
        Ok(view_result(slf, t))
    }
}

bind_functions! { register_functions:
    fn reshape(input: &Bound<'_, PyTensor>, shape: Vec<i64>) -> PyResult<PyTensor> {
        let t = input.borrow().inner.reshape(&shape)?;
        Ok(view_result(input, t))
    }
    fn permute(input: &Bound<'_, PyTensor>, dims: Vec<i64>) -> PyResult<PyTensor> {
        let t = input.borrow().inner.permute(&dims)?;
        Ok(view_result(input, t))
    }
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (*shape))]
    fn view(slf: &Bound<'_, Self>, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let t = slf.borrow().inner.view(&shape_arg(shape)?)?;
        Ok(view_result(slf, t))
    }
    #[pyo3(signature = (*shape))]
    fn reshape(slf: &Bound<'_, Self>, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let t = slf.borrow().inner.reshape(&shape_arg(shape)?)?;
        Ok(view_result(slf, t))
    }
    fn view_as(slf: &Bound<'_, Self>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let s: Vec<i64> = other.inner.shape().iter().map(|&d| d as i64).collect();
        let t = slf.borrow().inner.view(&s)?;
        Ok(view_result(slf, t))
    }
    fn reshape_as(slf: &Bound<'_, Self>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let s: Vec<i64> = other.inner.shape().iter().map(|&d| d as i64).collect();
        let t = slf.borrow().inner.reshape(&s)?;
        Ok(view_result(slf, t))
    }
    #[getter(T)]
    fn big_t(slf: &Bound<'_, Self>) -> PyResult<PyTensor> {
        let n = slf.borrow().inner.ndim() as i64;
        let dims: Vec<i64> = (0..n).rev().collect();
        let t = slf.borrow().inner.permute(&dims)?;
        Ok(view_result(slf, t))
    }
    #[getter(mT)]
    fn m_t(slf: &Bound<'_, Self>) -> PyResult<PyTensor> {
        let t = slf.borrow().inner.transpose(-2, -1)?;
        Ok(view_result(slf, t))
    }
    #[pyo3(signature = (*dims))]
    fn permute(slf: &Bound<'_, Self>, dims: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        if dims.is_empty() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "permute() missing 1 required positional arguments: \"dims\"",
            ));
        }
        let t = slf.borrow().inner.permute(&shape_arg(dims)?)?;
        Ok(view_result(slf, t))
    }
    #[pyo3(signature = (*sizes))]
    fn expand(slf: &Bound<'_, Self>, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let t = slf.borrow().inner.expand(&shape_arg(sizes)?)?;
        Ok(view_result(slf, t))
    }
    fn expand_as(slf: &Bound<'_, Self>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let t = slf.borrow().inner.expand_as(&other.inner)?;
        Ok(view_result(slf, t))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    register_fns(m)?;
    Ok(())
}
