//! `ferrograd.autograd.graph` internals: saved-tensor hooks with Python
//! callables, gradient edges, version bumps and the DOT export of a
//! backward graph (its graph walk is `crate::autograd::dot`).

use crate::autograd::multi_grad_hook::{
    register_multi_grad_hook, MultiGradFn, MultiGradHandle, MultiGradMode,
};
use crate::autograd::saved_hooks::{self, Packed, SavedTensorHooks};
use crate::python::autograd::function::node_to_py;
use crate::python::core::bind::bind_functions;
use crate::python::core::errors::error_from_py;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::Tensor;
use crate::{Error, Result};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashMap;
use std::sync::Arc;

/// A (pack, unpack) pair of Python callables. The GIL is taken only to
/// call them.
struct PyHooks {
    pack: Py<PyAny>,
    unpack: Py<PyAny>,
}

impl SavedTensorHooks for PyHooks {
    fn pack(&self, t: &Tensor) -> Result<Packed> {
        Python::attach(|py| {
            let r = self
                .pack
                .call1(py, (wrap(t.clone()),))
                .map_err(|e| error_from_py(py, e))?;
            Ok(Box::new(r) as Packed)
        })
    }
    fn unpack(&self, packed: &Packed) -> Result<Tensor> {
        let p = packed
            .downcast_ref::<Py<PyAny>>()
            .ok_or_else(|| Error::runtime("saved tensor hooks: bad packed value"))?;
        Python::attach(|py| {
            let r = self
                .unpack
                .call1(py, (p.clone_ref(py),))
                .map_err(|e| error_from_py(py, e))?;
            let r = r.bind(py);
            match r.cast::<PyTensor>() {
                Ok(t) => Ok(t.borrow().inner.clone()),
                Err(_) => Err(Error::type_error(format!(
                    "Output of saved tensor unpack_hook expected to be a Tensor but got result of type {}",
                    r.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                ))),
            }
        })
    }
}

bind_functions! { register_functions:
    fn _push_saved_tensors_hooks(pack_hook: Py<PyAny>, unpack_hook: Py<PyAny>) -> PyResult<()> {
        saved_hooks::push_hooks(Arc::new(PyHooks {
            pack: pack_hook,
            unpack: unpack_hook,
        }))?;
        Ok(())
    }
    fn _push_save_on_cpu_hooks() -> PyResult<()> {
        saved_hooks::push_hooks(Arc::new(saved_hooks::SaveOnCpu))?;
        Ok(())
    }
    fn _pop_saved_tensors_hooks() {
        saved_hooks::pop_hooks();
    }
    /// Re-raises the first error a pack hook raised under a built-in op since
    /// the last call (built-in ops cannot fail at record time).
    fn _take_saved_tensors_pack_error() -> PyResult<()> {
        match saved_hooks::take_pack_error() {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }
    #[pyo3(signature = (message))]
    fn _saved_tensors_hooks_disable(message: Option<String>) -> PyResult<()> {
        saved_hooks::set_disabled(message)?;
        Ok(())
    }
    fn _enter_allow_mutation_on_saved_tensors() -> PyResult<()> {
        saved_hooks::enter_allow_mutation()?;
        Ok(())
    }
    fn _exit_allow_mutation_on_saved_tensors() {
        saved_hooks::exit_allow_mutation();
    }
    fn _increment_version(t: PyRef<'_, PyTensor>) {
        t.inner.modified_by("increment_version");
    }
    /// (node, output_nr) of the edge a gradient for `t` flows along.
    fn _get_gradient_edge<'py>(
        py: Python<'py>,
        t: PyRef<'_, PyTensor>,
    ) -> PyResult<(Bound<'py, PyAny>, usize)> {
        if !t.inner.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "It is not possible to get the gradient edge for a Tensor that does not require gradients",
            ));
        }
        t.inner.check_view_history()?;
        let e = t
            .inner
            .gradient_edge()
            .ok_or_else(|| PyRuntimeError::new_err("tensor has no gradient edge"))?;
        Ok((node_to_py(py, e.node)?, e.input_nr))
    }
    fn _register_multi_grad_hook(
        tensors: Vec<PyRef<'_, PyTensor>>,
        f: Py<PyAny>,
        mode: &str,
    ) -> PyResult<PyMultiGradHandle> {
        let mode = match mode {
            "all" => MultiGradMode::All,
            "any" => MultiGradMode::Any,
            m => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "Expects mode to be one of ('all', 'any') but got {m}"
                )))
            }
        };
        let ts: Vec<Tensor> = tensors.iter().map(|t| t.inner.clone()).collect();
        let call: MultiGradFn = Arc::new(move |grads: Vec<Option<Tensor>>| {
            Python::attach(|py| {
                let r = match mode {
                    MultiGradMode::Any => {
                        let g = grads.into_iter().next().flatten().map(wrap);
                        f.call1(py, (g,))
                    }
                    MultiGradMode::All => {
                        let items: Vec<Option<PyTensor>> =
                            grads.into_iter().map(|g| g.map(wrap)).collect();
                        let list =
                            pyo3::types::PyList::new(py, items).map_err(|e| error_from_py(py, e))?;
                        f.call1(py, (list,))
                    }
                };
                r.map(|_| ()).map_err(|e| error_from_py(py, e))
            })
        });
        Ok(PyMultiGradHandle(register_multi_grad_hook(
            &ts, call, mode,
        )?))
    }
    /// `to_dot(tensor_or_tensors, params, show_saved)`.
    #[pyo3(signature = (tensor, params=None, show_saved=false))]
    fn _to_dot(
        tensor: &Bound<'_, PyAny>,
        params: Option<&Bound<'_, PyDict>>,
        show_saved: bool,
    ) -> PyResult<String> {
        let mut names: HashMap<usize, String> = HashMap::new();
        if let Some(p) = params {
            for (k, v) in p.iter() {
                let t = v.cast::<PyTensor>().map_err(|_| {
                    pyo3::exceptions::PyTypeError::new_err("to_dot: params values must be tensors")
                })?;
                names.insert(
                    Arc::as_ptr(&t.borrow().inner.0) as usize,
                    k.str()?.to_string(),
                );
            }
        }
        let mut roots = Vec::new();
        let items: Vec<Bound<'_, PyAny>> = match tensor.cast::<PyTensor>() {
            Ok(t) => vec![t.clone().into_any()],
            Err(_) => tensor
                .try_iter()
                .map_err(|_| {
                    pyo3::exceptions::PyTypeError::new_err(
                        "to_dot: expected a Tensor or a sequence of Tensors",
                    )
                })?
                .collect::<PyResult<_>>()?,
        };
        for it in items {
            let t = it.cast::<PyTensor>().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(
                    "to_dot: expected a Tensor or a sequence of Tensors",
                )
            })?;
            let inner = t.borrow().inner.clone();
            let name = names.get(&(Arc::as_ptr(&inner.0) as usize)).cloned();
            roots.push((inner, name));
        }
        Ok(crate::autograd::dot::graph_to_dot(&roots, &names, show_saved))
    }
}

#[pyfunction]
fn _saved_tensors_hooks_get_disabled_error_message() -> Option<String> {
    saved_hooks::disabled_message()
}

/// Handle of `register_multi_grad_hook`.
#[pyclass(
    name = "_MultiGradHookHandle",
    module = "ferrograd.autograd.graph",
    frozen
)]
struct PyMultiGradHandle(MultiGradHandle);

#[pymethods]
impl PyMultiGradHandle {
    fn remove(&self) {
        self.0.remove();
    }
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) {
        self.0.remove();
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    m.add_function(wrap_pyfunction!(
        _saved_tensors_hooks_get_disabled_error_message,
        m
    )?)?;
    m.add_class::<PyMultiGradHandle>()?;
    Ok(())
}
