//! Truth-value reductions and closeness checks (`all`, `any`, `isclose`,
//! `allclose`, `equal`): Tensor methods and module functions with torch's
//! signatures. Argument parsing only; the math is in `ops::reduce` and
//! `ops::pointwise`.

use crate::python::core::bind::bind_functions;
use crate::python::core::bind::bind_methods;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use pyo3::prelude::*;
use pyo3::types::PyModule;

/// `dim=`: `None` reduces every dim; an int or a sequence of ints (an
/// empty one reduces none, as torch), parsed as the other reductions'.
fn truth_dims(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    match dim {
        Some(d) if !d.is_none() => Ok(Some(crate::python::core::args::dims(Some(d))?)),
        _ => Ok(None),
    }
}

fn all(t: &Tensor, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<PyTensor> {
    Ok(wrap(t.all(truth_dims(dim)?.as_deref(), keepdim)?))
}

fn any(t: &Tensor, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<PyTensor> {
    Ok(wrap(t.any(truth_dims(dim)?.as_deref(), keepdim)?))
}

bind_methods! { compare_fns, register_fns:
    #[pyo3(signature = (other, rtol=1e-05, atol=1e-08, equal_nan=false))]
    fn isclose(
        &self,
        other: PyRef<'_, PyTensor>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.isclose(
            &other.inner,
            rtol,
            atol,
            equal_nan,
        )?))
    }
    #[pyo3(signature = (other, rtol=1e-05, atol=1e-08, equal_nan=false))]
    fn allclose(
        &self,
        other: PyRef<'_, PyTensor>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> PyResult<bool> {
        Ok(self.inner.allclose(&other.inner, rtol, atol, equal_nan)?)
    }
    fn equal(&self, other: PyRef<'_, PyTensor>) -> PyResult<bool> {
        Ok(self.inner.equal(&other.inner)?)
    }
}

#[pymethods]
impl PyTensor {
    #[pyo3(name = "all", signature = (dim=None, keepdim=false))]
    fn all_method(&self, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<PyTensor> {
        all(&self.inner, dim, keepdim)
    }
    #[pyo3(name = "any", signature = (dim=None, keepdim=false))]
    fn any_method(&self, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<PyTensor> {
        any(&self.inner, dim, keepdim)
    }
}

bind_functions! { register_functions:
    #[pyo3(name = "all", signature = (input, dim=None, keepdim=false))]
    fn all_fn(
        input: PyRef<'_, PyTensor>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        all(&input.inner, dim, keepdim)
    }
    #[pyo3(name = "any", signature = (input, dim=None, keepdim=false))]
    fn any_fn(
        input: PyRef<'_, PyTensor>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        any(&input.inner, dim, keepdim)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    register_fns(m)?;
    Ok(())
}
