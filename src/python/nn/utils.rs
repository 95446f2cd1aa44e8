//! `_C._nn.clip_grad_norm_` / `clip_grad_value_` for `nn.utils` (the rules
//! are `crate::nn::clip`).

use crate::nn::clip;
use crate::python::core::bind::bind_functions;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// A tensor or an iterable of tensors.
fn tensors(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(vec![t.borrow().inner.clone()]);
    }
    obj.try_iter()?
        .map(|o| Ok(o?.cast::<PyTensor>()?.borrow().inner.clone()))
        .collect()
}

/// A norm order: a number or the string "inf".
fn norm_order(obj: &Bound<'_, PyAny>) -> PyResult<f64> {
    if let Ok(s) = obj.extract::<String>() {
        return match s.as_str() {
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            _ => Err(PyValueError::new_err(format!(
                "could not convert string to float: '{s}'"
            ))),
        };
    }
    obj.extract::<f64>()
}

bind_functions! { register_nn_fns:
    #[pyo3(signature = (parameters, max_norm, norm_type=None, error_if_nonfinite=false, foreach=None))]
    fn clip_grad_norm_(
        parameters: &Bound<'_, PyAny>,
        max_norm: f64,
        norm_type: Option<&Bound<'_, PyAny>>,
        error_if_nonfinite: bool,
        foreach: Option<bool>,
    ) -> PyResult<PyTensor> {
        let _ = foreach;
        let p = norm_type.map(norm_order).transpose()?.unwrap_or(2.0);
        let total = clip::clip_grad_norm_(&tensors(parameters)?, max_norm, p, error_if_nonfinite)?;
        Ok(wrap(total))
    }
}

#[pyfunction]
#[pyo3(signature = (parameters, clip_value, foreach=None))]
fn clip_grad_value_(
    parameters: &Bound<'_, PyAny>,
    clip_value: f64,
    foreach: Option<bool>,
) -> PyResult<()> {
    let _ = foreach;
    Ok(clip::clip_grad_value_(&tensors(parameters)?, clip_value)?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let nn = m.getattr("_nn")?.cast_into::<PyModule>()?;
    register_nn_fns(&nn)?;
    nn.add_function(wrap_pyfunction!(clip_grad_value_, &nn)?)
}
