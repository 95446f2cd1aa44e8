//! Pointwise ops from Python: Tensor methods, operators (`**`, `abs()`,
//! comparisons, `& | ^ ~`) and module functions (`ferrograd.exp(x)`, ...).

use crate::ops::compare::compare_ops;
use crate::python::core::args::{as_scalar, tensor_arg, tensor_or_scalar};
use crate::python::core::batched;
use crate::python::core::bind::bind_functions;
use crate::python::core::bind::{bind_compare_ops, bind_methods, bind_unary};
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::Scalar;
use crate::{DType, Tensor};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

/// A clamp bound: absent, a Python number or a tensor.
enum ClampBound {
    None,
    Scalar(Scalar),
    Tensor(Tensor),
}

fn bound_arg(obj: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<ClampBound> {
    let Some(o) = obj else {
        return Ok(ClampBound::None);
    };
    if o.is_none() {
        return Ok(ClampBound::None);
    }
    if let Ok(t) = o.cast::<PyTensor>() {
        return Ok(ClampBound::Tensor(t.borrow().inner.clone()));
    }
    if let Some(s) = as_scalar(o) {
        return Ok(ClampBound::Scalar(s));
    }
    Err(PyTypeError::new_err(format!(
        "clamp(): argument '{}' must be Number or Tensor, not {}",
        name,
        o.get_type().name()?
    )))
}

/// torch.clamp's dispatch: all-number bounds use the scalar overload, any
/// tensor bound the tensor overload (numbers wrapped against `x`).
fn clamp_impl(
    x: &Tensor,
    min: Option<&Bound<'_, PyAny>>,
    max: Option<&Bound<'_, PyAny>>,
    inplace: bool,
) -> PyResult<Option<Tensor>> {
    let (lo, hi) = (bound_arg(min, "min")?, bound_arg(max, "max")?);
    let scalar = |b: &ClampBound| match b {
        ClampBound::Scalar(s) => Some(*s),
        _ => None,
    };
    let any_tensor = matches!(lo, ClampBound::Tensor(_)) || matches!(hi, ClampBound::Tensor(_));
    if !any_tensor {
        let (lo, hi) = (scalar(&lo), scalar(&hi));
        return Ok(if inplace {
            x.clamp_(lo, hi)?;
            None
        } else {
            Some(x.clamp(lo, hi)?)
        });
    }
    let as_tensor = |b: ClampBound| match b {
        ClampBound::None => None,
        ClampBound::Scalar(s) => Some(x.wrap_scalar(s)),
        ClampBound::Tensor(t) => Some(t),
    };
    let (lo, hi) = (as_tensor(lo), as_tensor(hi));
    Ok(if inplace {
        x.clamp_tensor_(lo.as_ref(), hi.as_ref())?;
        None
    } else {
        Some(x.clamp_tensor(lo.as_ref(), hi.as_ref())?)
    })
}

/// `base ** exponent` where either side may be a Python number.
fn pow_any(base: &Bound<'_, PyAny>, exponent: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Ok(b) = base.cast::<PyTensor>() {
        let b = b.borrow().inner.clone();
        if let Some(e) = as_scalar(exponent) {
            return Ok(b.pow_scalar(e)?);
        }
        return Ok(b.pow(&tensor_or_scalar(exponent, &b)?)?);
    }
    let e = exponent
        .cast::<PyTensor>()
        .map_err(|_| PyTypeError::new_err("pow() received an invalid combination of arguments"))?;
    let e = e.borrow().inner.clone();
    match as_scalar(base) {
        Some(b) => Ok(Tensor::scalar_pow(b, &e)?),
        None => Err(PyTypeError::new_err(format!(
            "pow(): argument 'self' must be Number or Tensor, not {}",
            base.get_type().name()?
        ))),
    }
}

/// Whether an operator takes `obj` as its other operand (a tensor or a
/// Python number); for anything else it returns NotImplemented.
fn is_operand(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyTensor>() || as_scalar(obj).is_some()
}

/// torch's overflow error for a number operand of `where` that does not
/// fit the result's dtype (uint8 with 300).
fn check_wrapped(obj: &Bound<'_, PyAny>, t: &Tensor) -> PyResult<()> {
    if let Some(s) = as_scalar(obj) {
        s.checked_to(crate::tensor::dtype::result_type_scalar(t.dtype(), s))?;
    }
    Ok(())
}

/// torch.where's operands: tensors, or numbers wrapped against the other
/// operand (two numbers give their own default dtype).
fn where_impl(cond: &Tensor, x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let tx = x.cast::<PyTensor>().ok().map(|t| t.borrow().inner.clone());
    let ty = y.cast::<PyTensor>().ok().map(|t| t.borrow().inner.clone());
    let (a, b) = match (tx, ty) {
        (Some(a), Some(b)) => (a, b),
        (Some(a), None) => {
            check_wrapped(y, &a)?;
            let b = tensor_or_scalar(y, &a)?;
            (a, b)
        }
        (None, Some(b)) => {
            check_wrapped(x, &b)?;
            (tensor_or_scalar(x, &b)?, b)
        }
        (None, None) => {
            let (sx, sy) = match (as_scalar(x), as_scalar(y)) {
                (Some(sx), Some(sy)) => (sx, sy),
                _ => {
                    return Err(PyTypeError::new_err(
                        "where(): argument 'input' and 'other' must be Tensor or Number",
                    ))
                }
            };
            let dt = DType::promote(sx.dtype(), sy.dtype());
            (Tensor::scalar(sx, dt), Tensor::scalar(sy, dt))
        }
    };
    Ok(Tensor::where_cond(cond, &a, &b)?)
}

bind_unary! { logical_fns, register_logical:
    /// Elementwise logical NOT (a bool tensor).
    logical_not, logical_not_ => logical_not, logical_not_;
    /// Elementwise bitwise NOT of an integer or bool tensor.
    bitwise_not, bitwise_not_ => bitwise_not, bitwise_not_;
}

/// Methods and module functions with no argument and no in-place form.
macro_rules! predicates {
    ($($name:ident),*) => {
        #[pymethods]
        impl PyTensor {
            $(fn $name(&self) -> PyResult<PyTensor> {
                Ok(wrap(self.inner.$name()?))
            })*
        }
        mod predicate_fns {
            use super::*;
            $(#[pyfunction]
            pub fn $name(input: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
                input.$name()
            })*
        }
        fn register_predicates(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(m.add_function(wrap_pyfunction!(predicate_fns::$name, m)?)?;)*
            Ok(())
        }
    };
}
predicates!(isnan, isinf, isfinite);

compare_ops!(bind_compare_ops);

bind_methods! { pointwise_fns, register_fns:
    #[pyo3(signature = (min=None, max=None))]
    fn clamp(
        &self,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        Ok(wrap(clamp_impl(&self.inner, min, max, false)?.unwrap()))
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clip(
        &self,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        self.clamp(min, max)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clamp_<'py>(
        slf: PyRef<'py, Self>,
        min: Option<&Bound<'py, PyAny>>,
        max: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRef<'py, PyTensor>> {
        clamp_impl(&slf.inner, min, max, true)?;
        Ok(slf)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clip_<'py>(
        slf: PyRef<'py, Self>,
        min: Option<&Bound<'py, PyAny>>,
        max: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRef<'py, PyTensor>> {
        Self::clamp_(slf, min, max)
    }
    fn clamp_min(&self, min: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(wrap(match as_scalar(min) {
            Some(s) => self.inner.clamp_min(s)?,
            None => self
                .inner
                .clamp_min_tensor(&tensor_or_scalar(min, &self.inner)?)?,
        }))
    }
    fn clamp_max(&self, max: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(wrap(match as_scalar(max) {
            Some(s) => self.inner.clamp_max(s)?,
            None => self
                .inner
                .clamp_max_tensor(&tensor_or_scalar(max, &self.inner)?)?,
        }))
    }
    fn clamp_min_<'py>(
        slf: PyRef<'py, Self>,
        min: &Bound<'py, PyAny>,
    ) -> PyResult<PyRef<'py, PyTensor>> {
        clamp_impl(&slf.inner, Some(min), None, true)?;
        Ok(slf)
    }
    fn clamp_max_<'py>(
        slf: PyRef<'py, Self>,
        max: &Bound<'py, PyAny>,
    ) -> PyResult<PyRef<'py, PyTensor>> {
        clamp_impl(&slf.inner, None, Some(max), true)?;
        Ok(slf)
    }
}

#[pymethods]
impl PyTensor {
    fn pow(slf: &Bound<'_, Self>, exponent: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(wrap(pow_any(slf.as_any(), exponent)?))
    }
    fn pow_<'py>(
        slf: PyRef<'py, Self>,
        exponent: &Bound<'py, PyAny>,
    ) -> PyResult<PyRef<'py, Self>> {
        match as_scalar(exponent) {
            Some(e) => slf.inner.pow_scalar_(e)?,
            None => {
                let e = tensor_or_scalar(exponent, &slf.inner)?;
                slf.inner.pow_(&e)?
            }
        }
        Ok(slf)
    }
    fn maximum(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let o = tensor_arg(other, "maximum", "other", 1)?;
        Ok(wrap(self.inner.maximum(&o)?))
    }
    fn minimum(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let o = tensor_arg(other, "minimum", "other", 1)?;
        Ok(wrap(self.inner.minimum(&o)?))
    }
    /// `self.where(condition, other)` is `where(condition, self, other)`.
    #[pyo3(name = "where")]
    fn where_method(
        slf: &Bound<'_, Self>,
        condition: PyRef<'_, PyTensor>,
        other: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        Ok(wrap(where_impl(&condition.inner, slf.as_any(), other)?))
    }

    // ----- operators -----

    fn __pow__(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if !is_operand(other) {
            return Ok(slf.py().NotImplemented());
        }
        Ok(Py::new(slf.py(), wrap(pow_any(slf.as_any(), other)?))?.into_any())
    }
    fn __rpow__(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if !is_operand(other) {
            return Ok(slf.py().NotImplemented());
        }
        Ok(Py::new(slf.py(), wrap(pow_any(other, slf.as_any())?))?.into_any())
    }
    fn __ipow__(
        &self,
        other: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        match as_scalar(other) {
            Some(e) => self.inner.pow_scalar_(e)?,
            None => self.inner.pow_(&tensor_or_scalar(other, &self.inner)?)?,
        }
        Ok(())
    }
    fn __abs__(&self) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.abs()?))
    }
    fn __invert__(&self) -> PyResult<PyTensor> {
        if self.inner.dtype().is_floating() {
            return Err(PyTypeError::new_err(
                "~ (operator.invert) is only implemented on integer and Boolean-type tensors",
            ));
        }
        Ok(wrap(self.inner.bitwise_not()?))
    }
    // (the rich comparisons and `& | ^` come from the comparison table)
    /// Hashable by identity, as torch tensors are (defining `__eq__` would
    /// otherwise make the class unhashable).
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }
}

/// Inside vmap, `_C.name` with a batched argument: the pointwise rule.
fn batched_pointwise(name: &str, args: &[&Bound<'_, PyAny>]) -> Option<PyResult<Py<PyAny>>> {
    batched::pointwise_if_batched("ferrograd._C", name, args, || Ok(None))
}

bind_functions! { register_functions:
    pub fn pow(input: &Bound<'_, PyAny>, exponent: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if let Some(r) = batched_pointwise("pow", &[input, exponent]) {
            return r;
        }
        wrap(pow_any(input, exponent)?).into_py_any(input.py())
    }
    pub fn maximum(input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if let Some(r) = batched_pointwise("maximum", &[input, other]) {
            return r;
        }
        let a = tensor_arg(input, "maximum", "input", 1)?;
        let o = tensor_arg(other, "maximum", "other", 2)?;
        wrap(a.maximum(&o)?).into_py_any(input.py())
    }
    pub fn minimum(input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if let Some(r) = batched_pointwise("minimum", &[input, other]) {
            return r;
        }
        let a = tensor_arg(input, "minimum", "input", 1)?;
        let o = tensor_arg(other, "minimum", "other", 2)?;
        wrap(a.minimum(&o)?).into_py_any(input.py())
    }
    /// `where(condition, input, other)`; numbers allowed for input/other.
    /// `where(condition)` is `condition.nonzero(as_tuple=True)`.
    #[pyo3(name = "where", signature = (condition, input=None, other=None))]
    pub fn where_fn<'py>(
        condition: &Bound<'py, PyAny>,
        input: Option<&Bound<'py, PyAny>>,
        other: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = condition.py();
        match (input, other) {
            (Some(x), Some(y)) => {
                if let Some(r) = batched_pointwise("where", &[condition, x, y]) {
                    return Ok(r?.into_bound(py));
                }
                let c = tensor_arg(condition, "where", "condition", 1)?;
                Ok(Bound::new(py, wrap(where_impl(&c, x, y)?))?.into_any())
            }
            (None, None) => {
                let kw = pyo3::types::PyDict::new(py);
                kw.set_item("as_tuple", true)?;
                condition.call_method("nonzero", (), Some(&kw))
            }
            _ => Err(PyTypeError::new_err(
                "where() missing required argument: both 'input' and 'other' must be given",
            )),
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    register_fns(m)?;
    register_logical(m)?;
    register_predicates(m)?;
    register_binary_table(m)?;
    Ok(())
}
