//! Rounding and rounding division: `floor`, `ceil`, `trunc`/`fix`, `round`,
//! `frac`, `remainder` (`%`), `fmod`, `floor_divide` (`//`), each as a
//! Tensor method, an in-place method and a module function.

use crate::ops::rounding::RoundingMode;
use crate::python::core::args::operands;
use crate::python::core::args::{as_scalar, not_an_operand, operator, tensor_or_scalar};
use crate::python::core::batched;
use crate::python::core::bind::bind_functions;
use crate::python::core::bind::{bind_methods, result_or_out};
use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

/// `remainder`/`fmod` of `a` by `other`: by a Python number (whose node
/// has only `a`'s input, as torch's `RemainderBackward0`), by a tensor, or
/// None for anything else.
fn remainder_like(a: &Tensor, other: &Bound<'_, PyAny>, fmod: bool) -> PyResult<Option<Tensor>> {
    let r = if let Some(s) = as_scalar(other) {
        match fmod {
            true => a.fmod_scalar(s)?,
            false => a.remainder_scalar(s)?,
        }
    } else if let Ok(t) = other.cast::<PyTensor>() {
        let t = t.borrow().inner.clone();
        match fmod {
            true => a.fmod(&t)?,
            false => a.remainder(&t)?,
        }
    } else {
        return Ok(None);
    };
    Ok(Some(r))
}

/// [`remainder_like`], with torch's TypeError for a foreign operand.
fn remainder_or_raise(a: &Tensor, other: &Bound<'_, PyAny>, fmod: bool) -> PyResult<Tensor> {
    match remainder_like(a, other, fmod)? {
        Some(r) => Ok(r),
        None => Err(not_an_operand(other)),
    }
}

fn mode(rounding_mode: Option<&str>) -> PyResult<Option<RoundingMode>> {
    Ok(RoundingMode::parse(rounding_mode)?)
}

bind_methods! { rounding_fns, register_fns:
    fn floor(&self) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.floor()?))
    }
    fn ceil(&self) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.ceil()?))
    }
    fn trunc(&self) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.trunc()?))
    }
    fn fix(&self) -> PyResult<PyTensor> {
        self.trunc()
    }
    #[pyo3(signature = (*, decimals=0))]
    fn round(&self, decimals: i64) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.round(decimals)?))
    }
    fn frac(&self) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.frac()?))
    }
}

#[pymethods]
impl PyTensor {
    fn floor_(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        slf.inner.floor_()?;
        Ok(slf)
    }
    fn ceil_(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        slf.inner.ceil_()?;
        Ok(slf)
    }
    fn trunc_(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        slf.inner.trunc_()?;
        Ok(slf)
    }
    fn fix_(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        slf.inner.trunc_()?;
        Ok(slf)
    }
    #[pyo3(signature = (*, decimals=0))]
    fn round_(slf: PyRef<'_, Self>, decimals: i64) -> PyResult<PyRef<'_, Self>> {
        slf.inner.round_(decimals)?;
        Ok(slf)
    }
    fn frac_(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        slf.inner.frac_()?;
        Ok(slf)
    }

    fn remainder(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(wrap(remainder_or_raise(&self.inner, other, false)?))
    }
    fn fmod(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(wrap(remainder_or_raise(&self.inner, other, true)?))
    }
    fn floor_divide(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let o = tensor_or_scalar(other, &self.inner)?;
        Ok(wrap(self.inner.floor_divide(&o)?))
    }
    fn remainder_<'py>(
        slf: PyRef<'py, Self>,
        other: &Bound<'py, PyAny>,
    ) -> PyResult<PyRef<'py, Self>> {
        slf.inner
            .remainder_(&tensor_or_scalar(other, &slf.inner)?)?;
        Ok(slf)
    }
    fn fmod_<'py>(slf: PyRef<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<PyRef<'py, Self>> {
        slf.inner.fmod_(&tensor_or_scalar(other, &slf.inner)?)?;
        Ok(slf)
    }
    fn floor_divide_<'py>(
        slf: PyRef<'py, Self>,
        other: &Bound<'py, PyAny>,
    ) -> PyResult<PyRef<'py, Self>> {
        let o = tensor_or_scalar(other, &slf.inner)?;
        slf.inner.div_rounding_(&o, Some(RoundingMode::Floor))?;
        Ok(slf)
    }

    /// `self / other`, rounded as `rounding_mode` says (None: true division).
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn div(&self, other: &Bound<'_, PyAny>, rounding_mode: Option<&str>) -> PyResult<PyTensor> {
        let o = tensor_or_scalar(other, &self.inner)?;
        Ok(wrap(self.inner.div_rounding(&o, mode(rounding_mode)?)?))
    }
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn divide(&self, other: &Bound<'_, PyAny>, rounding_mode: Option<&str>) -> PyResult<PyTensor> {
        self.div(other, rounding_mode)
    }
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn div_<'py>(
        slf: PyRef<'py, Self>,
        other: &Bound<'py, PyAny>,
        rounding_mode: Option<&str>,
    ) -> PyResult<PyRef<'py, Self>> {
        let o = tensor_or_scalar(other, &slf.inner)?;
        match mode(rounding_mode)? {
            None => slf.inner.div_(&o)?,
            m => slf.inner.div_rounding_(&o, m)?,
        }
        Ok(slf)
    }

    fn __mod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match remainder_like(&self.inner, other, false)? {
            Some(r) => Ok(Py::new(py, wrap(r))?.into_any()),
            None => Ok(py.NotImplemented()),
        }
    }
    fn __rmod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        operator(py, &self.inner, other, true, Tensor::remainder)
    }
    fn __imod__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        Ok(self
            .inner
            .remainder_(&tensor_or_scalar(other, &self.inner)?)?)
    }
    fn __floordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        operator(py, &self.inner, other, false, Tensor::floor_divide)
    }
    fn __rfloordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        operator(py, &self.inner, other, true, Tensor::floor_divide)
    }
    fn __ifloordiv__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        let o = tensor_or_scalar(other, &self.inner)?;
        Ok(self.inner.div_rounding_(&o, Some(RoundingMode::Floor))?)
    }
}

macro_rules! binary_functions {
    ($($name:ident => $op:ident),*) => {$(
        #[pyfunction]
        fn $name(input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
            if let Some(r) = batched_pointwise(stringify!($name), input, other, None) {
                return r;
            }
            let (a, b) = operands(input, other)?;
            wrap(a.$op(&b)?).into_py_any(input.py())
        }
    )*};
}
binary_functions!(floor_divide => floor_divide);

/// `torch.remainder(input, other)` / `torch.fmod(input, other)`: `input`
/// may be a Python number when `other` is a tensor.
fn remainder_function(
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    fmod: bool,
) -> PyResult<Py<PyAny>> {
    let name = if fmod { "fmod" } else { "remainder" };
    if let Some(r) = batched_pointwise(name, input, other, None) {
        return r;
    }
    let py = input.py();
    if let Ok(t) = input.cast::<PyTensor>() {
        let t = t.borrow().inner.clone();
        return wrap(remainder_or_raise(&t, other, fmod)?).into_py_any(py);
    }
    let (a, b) = operands(input, other)?;
    wrap(if fmod { a.fmod(&b)? } else { a.remainder(&b)? }).into_py_any(py)
}

/// Inside vmap, `_C.name` with a batched operand: the pointwise rule
/// (`rounding_mode` passed on).
fn batched_pointwise(
    name: &str,
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    rounding_mode: Option<&str>,
) -> Option<PyResult<Py<PyAny>>> {
    batched::pointwise_if_batched("ferrograd._C", name, &[input, other], || {
        let Some(m) = rounding_mode else {
            return Ok(None);
        };
        let d = pyo3::types::PyDict::new(input.py());
        d.set_item("rounding_mode", m)?;
        Ok(Some(d))
    })
}

bind_functions! { register_functions:
    fn remainder(input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        remainder_function(input, other, false)
    }
    fn fmod(input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        remainder_function(input, other, true)
    }
    /// `torch.div(input, other, *, rounding_mode=None)`.
    #[pyo3(signature = (input, other, *, rounding_mode=None, out=None))]
    pub(crate) fn div<'py>(
        input: &Bound<'py, PyAny>,
        other: &Bound<'py, PyAny>,
        rounding_mode: Option<&str>,
        out: Option<&Bound<'py, PyTensor>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if out.is_none() {
            if let Some(r) = batched_pointwise("div", input, other, rounding_mode) {
                return Ok(r?.into_bound(input.py()));
            }
        }
        let (a, b) = operands(input, other)?;
        let m = mode(rounding_mode)?;
        Ok(result_or_out(input.py(), "div", out, &[&a, &b], || a.div_rounding(&b, m))?.into_any())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    register_fns(m)?;
    m.add_function(wrap_pyfunction!(floor_divide, m)?)?;
    m.add("divide", m.getattr("div")?)?;
    Ok(())
}
