//! Joining and splitting from Python: the module functions `cat`
//! (`concat`, `concatenate`), `stack`, `split`, and the views `split`,
//! `split_with_sizes`, `chunk`, `unbind`. Argument parsing only; the
//! semantics live in `src/ops/join.rs`.

use crate::ops::join;
use crate::python::core::args::tensor_list;
use crate::python::core::batched;
use crate::python::core::bind::bind_functions;
use crate::python::core::bind::bind_methods;
use crate::python::core::tensor::{view_result, wrap, PyTensor};
use crate::Tensor;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// The views of `slf` a multi-output view op made, as a tuple (each keeps
/// `slf`'s base object for `_base`).
fn views_of<'py>(slf: &Bound<'py, PyTensor>, ts: Vec<Tensor>) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(slf.py(), ts.into_iter().map(|t| view_result(slf, t)))
}

/// `split_size_or_sections`: an int or a sequence of ints.
fn split_impl(t: &Tensor, arg: &Bound<'_, PyAny>, dim: i64) -> PyResult<Vec<Tensor>> {
    if let Ok(n) = arg.extract::<i64>() {
        return Ok(t.split(n, dim)?);
    }
    let sizes: Vec<i64> = arg.extract()?;
    Ok(t.split_with_sizes(&sizes, dim)?)
}

bind_methods! { join_fns, register_fns:
    #[pyo3(signature = (chunks, dim=0))]
    fn chunk<'py>(slf: &Bound<'py, Self>, chunks: i64, dim: i64) -> PyResult<Bound<'py, PyTuple>> {
        let ts = slf.borrow().inner.chunk(chunks, dim)?;
        views_of(slf, ts)
    }
    #[pyo3(signature = (dim=0))]
    fn unbind<'py>(slf: &Bound<'py, Self>, dim: i64) -> PyResult<Bound<'py, PyTuple>> {
        let ts = slf.borrow().inner.unbind(dim)?;
        views_of(slf, ts)
    }
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (split_size, dim=0))]
    fn split<'py>(
        slf: &Bound<'py, Self>,
        split_size: &Bound<'py, PyAny>,
        dim: i64,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let ts = split_impl(&slf.borrow().inner, split_size, dim)?;
        views_of(slf, ts)
    }
    #[pyo3(signature = (split_sizes, dim=0))]
    fn split_with_sizes<'py>(
        slf: &Bound<'py, Self>,
        split_sizes: Vec<i64>,
        dim: i64,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let ts = slf.borrow().inner.split_with_sizes(&split_sizes, dim)?;
        views_of(slf, ts)
    }
}

bind_functions! { register_functions:
    #[pyo3(signature = (tensors, dim=0))]
    fn cat(tensors: &Bound<'_, PyAny>, dim: i64) -> PyResult<Py<PyAny>> {
        if let Some(r) = batched::join(tensors, dim, false)? {
            return Ok(r);
        }
        let out = wrap(join::cat(&tensor_list(tensors, "cat")?, dim)?);
        Ok(Bound::new(tensors.py(), out)?.into_any().unbind())
    }
    #[pyo3(signature = (tensors, dim=0))]
    fn concat(tensors: &Bound<'_, PyAny>, dim: i64) -> PyResult<PyTensor> {
        Ok(wrap(join::cat(&tensor_list(tensors, "concat")?, dim)?))
    }
    #[pyo3(signature = (tensors, axis=0))]
    fn concatenate(tensors: &Bound<'_, PyAny>, axis: i64) -> PyResult<PyTensor> {
        Ok(wrap(join::cat(
            &tensor_list(tensors, "concatenate")?,
            axis,
        )?))
    }
    #[pyo3(signature = (tensors, dim=0))]
    fn stack(tensors: &Bound<'_, PyAny>, dim: i64) -> PyResult<Py<PyAny>> {
        if let Some(r) = batched::join(tensors, dim, true)? {
            return Ok(r);
        }
        let out = wrap(join::stack(&tensor_list(tensors, "stack")?, dim)?);
        Ok(Bound::new(tensors.py(), out)?.into_any().unbind())
    }
    /// torch.split is a Python function that calls `tensor.split(...)`: any
    /// object with a `split` method is accepted, others raise its AttributeError.
    #[pyo3(signature = (tensor, split_size_or_sections, dim=0))]
    fn split<'py>(
        tensor: &Bound<'py, PyAny>,
        split_size_or_sections: &Bound<'py, PyAny>,
        dim: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        tensor.call_method1("split", (split_size_or_sections, dim))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    register_fns(m)?;
    Ok(())
}
