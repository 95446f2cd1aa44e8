//! Forward-mode AD bindings: the primitives behind
//! `ferrograd.autograd.forward_ad` (levels, make_dual, unpack_dual).

use crate::autograd::forward;
use crate::python::core::bind::bind_functions;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::Tensor;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

bind_functions! { register_functions:
    fn _enter_dual_level() -> usize {
        forward::enter_dual_level()
    }
    #[pyo3(signature = (level=None))]
    fn _exit_dual_level(level: Option<usize>) -> PyResult<()> {
        Ok(forward::exit_dual_level(level)?)
    }
    /// A view of `tensor` carrying `tangent` at `level` (torch's `_make_dual`).
    #[pyo3(signature = (tensor, tangent, level=None))]
    fn _make_dual(
        tensor: PyRef<'_, PyTensor>,
        tangent: PyRef<'_, PyTensor>,
        level: Option<usize>,
    ) -> PyResult<PyTensor> {
        let id = forward::level_id(level)?;
        let (primal, tangent) = (&tensor.inner, &tangent.inner);
        check_floating("primal", primal)?;
        check_floating("tangent", tangent)?;
        let shape: Vec<i64> = primal.shape().iter().map(|&d| d as i64).collect();
        let dual = primal.view(&shape)?;
        dual.set_fw_grad(id, Some(tangent))?;
        Ok(wrap(dual))
    }
    /// `(primal, tangent)` of `tensor` at `level`: the primal is a view without
    /// that level's tangent; the tangent is None when there is none.
    #[pyo3(signature = (tensor, level=None))]
    fn _unpack_dual(
        tensor: PyRef<'_, PyTensor>,
        level: Option<usize>,
    ) -> PyResult<(PyTensor, Option<PyTensor>)> {
        forward::take_error()?;
        let t = &tensor.inner;
        if !forward::is_active() {
            return Ok((wrap(t.clone()), None));
        }
        let id = forward::level_id(level)?;
        let Some(tangent) = t.fw_grad(id) else {
            return Ok((wrap(t.clone()), None));
        };
        let shape: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
        let primal = t.view(&shape)?;
        primal.set_fw_grad(id, None)?;
        Ok((wrap(primal), Some(wrap(tangent))))
    }
}

fn check_floating(what: &str, t: &Tensor) -> PyResult<()> {
    if t.dtype().is_floating() {
        return Ok(());
    }
    Err(PyValueError::new_err(format!(
        "Expected {what} to be floating point or complex, but got: torch.{}",
        t.dtype().name()
    )))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    Ok(())
}
