//! Hooks from Python: `Tensor.register_hook`,
//! `Tensor.register_post_accumulate_grad_hook`, `Node.register_hook` /
//! `register_prehook`, their removable handles, and the graph-inspection
//! helpers shared by built-in nodes (`PyNode`) and custom-Function ctx
//! objects (`metadata`, `_saved_<name>`, `_raw_saved_<name>`).
//!
//! Python hooks are stored in the Rust graph as closures; the engine runs
//! them on its worker threads, and each takes the GIL only while its Python
//! function runs. A Python exception raised by a hook crosses the engine as
//! a `crate::Error` payload and comes out of `.backward()` unchanged.

use crate::autograd::node::{next_hook_id, PostHook, PreHook};
use crate::autograd::Node;
use crate::python::core::args::type_name as type_name_of;
use crate::python::core::errors::error_from_py;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::{DType, TensorImpl};
use crate::Tensor;
use pyo3::exceptions::{PyAttributeError, PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyWeakrefReference};
use std::sync::{Arc, Weak};

/// What a handle removes its hook from.
enum Target {
    Node(Weak<Node>),
    Tensor(Weak<TensorImpl>),
}

/// torch.utils.hooks.RemovableHandle: `remove()` unregisters the hook (a
/// second call does nothing); as a context manager it removes on exit.
#[pyclass(name = "RemovableHandle", module = "ferrograd._C", frozen)]
pub struct PyRemovableHandle {
    target: Target,
    #[pyo3(get)]
    id: u64,
}

#[pymethods]
impl PyRemovableHandle {
    fn remove(&self) {
        match &self.target {
            Target::Node(n) => {
                if let Some(n) = n.upgrade() {
                    n.remove_hook(self.id);
                }
            }
            Target::Tensor(t) => {
                if let Some(t) = t.upgrade() {
                    Tensor(t).remove_hook(self.id);
                }
            }
        }
    }
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) {
        self.remove();
    }
}

fn node_handle(node: &Arc<Node>, id: u64) -> PyRemovableHandle {
    PyRemovableHandle {
        target: Target::Node(Arc::downgrade(node)),
        id,
    }
}

/// The hook's `__name__`, as torch names it in its messages.
fn hook_name(hook: &Bound<'_, PyAny>) -> String {
    hook.getattr("__name__")
        .and_then(|n| n.extract::<String>())
        .unwrap_or_else(|_| "<unknown>".to_string())
}

/// torch's legacy type name of a CPU tensor ("torch.FloatTensor").
fn type_name(dt: DType) -> String {
    format!("torch.{}", dt.legacy_tensor_name())
}

fn grads_tuple<'py>(py: Python<'py>, grads: &[Option<Tensor>]) -> PyResult<Bound<'py, PyTuple>> {
    let items = grads
        .iter()
        .map(|g| match g {
            Some(g) => Ok(Bound::new(py, wrap(g.clone()))?.into_any()),
            None => Ok(py.None().into_bound(py)),
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

/// torch's `check_single_result`: what one value a hook returned replaces
/// `original` with (None: the gradient becomes undefined).
fn check_single_result(
    original: Option<&Tensor>,
    result: &Bound<'_, PyAny>,
    hook: &Bound<'_, PyAny>,
) -> PyResult<Option<Tensor>> {
    if result.is_none() {
        return Ok(None);
    }
    let Some(original) = original else {
        return Err(PyRuntimeError::new_err(
            "can't replace a None gradient with a non-None value",
        ));
    };
    let Ok(r) = result.cast::<PyTensor>() else {
        return Err(PyTypeError::new_err(format!(
            "expected Variable, but hook returned '{}'",
            type_name_of(result)
        )));
    };
    let r = r.borrow().inner.clone();
    if r.dtype() != original.dtype() {
        return Err(PyRuntimeError::new_err(format!(
            "hook '{}' has changed the type of value (was {} got {})",
            hook_name(hook),
            type_name(original.dtype()),
            type_name(r.dtype())
        )));
    }
    if r.shape() != original.shape() {
        return Err(PyRuntimeError::new_err(format!(
            "hook '{}' has changed the size of value",
            hook_name(hook)
        )));
    }
    Ok(Some(r))
}

/// torch's `check_result` for node hooks: a tuple with one value per
/// gradient in `prev`.
fn check_result(
    prev: &[Option<Tensor>],
    result: &Bound<'_, PyAny>,
    hook: &Bound<'_, PyAny>,
) -> PyResult<Vec<Option<Tensor>>> {
    let Ok(t) = result.cast::<PyTuple>() else {
        return Err(PyTypeError::new_err(format!(
            "expected tuple, but hook returned '{}'",
            type_name_of(result)
        )));
    };
    if t.len() != prev.len() {
        return Err(PyRuntimeError::new_err(format!(
            "hook '{}' has returned an incorrect number of values (got {}, but expected {})",
            hook_name(hook),
            t.len(),
            prev.len()
        )));
    }
    prev.iter()
        .zip(t.iter())
        .map(|(p, r)| check_single_result(p.as_ref(), &r, hook))
        .collect()
}

/// A Python gradient hook as the engine stores it.
fn tensor_hook(f: Py<PyAny>) -> crate::autograd::TensorHook {
    Arc::new(move |g: Option<&Tensor>| {
        Python::attach(|py| {
            let run = || -> PyResult<Option<Tensor>> {
                let f = f.bind(py);
                // An undefined gradient reaches the hook as None, as in torch.
                let r = f.call1((g.cloned().map(wrap),))?;
                // A hook returning None keeps the gradient; a tensor replaces it.
                check_single_result(g, &r, f)
            };
            run().map_err(|e| error_from_py(py, e))
        })
    })
}

fn pre_hook(f: Py<PyAny>) -> PreHook {
    Arc::new(move |grads: &[Option<Tensor>]| {
        Python::attach(|py| {
            let run = || -> PyResult<Option<Vec<Option<Tensor>>>> {
                let f = f.bind(py);
                let r = f.call1((grads_tuple(py, grads)?,))?;
                if r.is_none() {
                    return Ok(None);
                }
                check_result(grads, &r, f).map(Some)
            };
            run().map_err(|e| error_from_py(py, e))
        })
    })
}

fn post_hook(f: Py<PyAny>) -> PostHook {
    Arc::new(
        move |grad_inputs: &[Option<Tensor>], grad_outputs: &[Option<Tensor>]| {
            Python::attach(|py| {
                let run = || -> PyResult<Option<Vec<Option<Tensor>>>> {
                    let f = f.bind(py);
                    let r = f.call1((
                        grads_tuple(py, grad_inputs)?,
                        grads_tuple(py, grad_outputs)?,
                    ))?;
                    if r.is_none() {
                        return Ok(None);
                    }
                    check_result(grad_inputs, &r, f).map(Some)
                };
                run().map_err(|e| error_from_py(py, e))
            })
        },
    )
}

// ----- node API, shared by PyNode and the custom-Function ctx -----

/// `node.register_hook(fn(grad_inputs, grad_outputs))`.
pub(crate) fn register_node_hook(node: &Arc<Node>, f: &Bound<'_, PyAny>) -> PyRemovableHandle {
    let id = node.add_post_hook(post_hook(f.clone().unbind()));
    node_handle(node, id)
}

/// `node.register_prehook(fn(grad_outputs))`.
pub(crate) fn register_node_prehook(node: &Arc<Node>, f: &Bound<'_, PyAny>) -> PyRemovableHandle {
    let id = node.add_pre_hook(pre_hook(f.clone().unbind()));
    node_handle(node, id)
}

/// `node.metadata`: one dict per node, created on first access.
pub(crate) fn node_metadata<'py>(py: Python<'py>, node: &Node) -> Bound<'py, PyDict> {
    let mut slot = node.metadata.lock();
    if let Some(d) = slot.as_ref().and_then(|b| b.downcast_ref::<Py<PyDict>>()) {
        return d.bind(py).clone();
    }
    let d = PyDict::new(py);
    *slot = Some(Box::new(d.clone().unbind()));
    d
}

/// The short class name torch gives a node ("AccumulateGrad").
pub(crate) fn node_class_name(node: &Node) -> String {
    let name = node.name();
    match name.rfind("::") {
        Some(i) => name[i + 2..].to_string(),
        None => name.into_owned(),
    }
}

/// A saved tensor of a node, as `node._raw_saved_<name>` returns it (torch's
/// `torch._C._autograd.SavedTensor`). `unpack()` / `.data` give the tensor;
/// pack/unpack hooks (`register_hooks`) are not supported.
#[pyclass(name = "SavedTensor", module = "ferrograd._C", frozen)]
pub struct PySavedTensor {
    node: Arc<Node>,
    name: &'static str,
}

#[pymethods]
impl PySavedTensor {
    fn unpack(&self) -> PyResult<PyTensor> {
        match self.node.backward().saved(self.name, &self.node) {
            Some(r) => Ok(wrap(r?)),
            None => Err(PyRuntimeError::new_err("saved tensor not found")),
        }
    }
    #[getter]
    fn data(&self) -> PyResult<PyTensor> {
        self.unpack()
    }
    fn __repr__(&self) -> String {
        format!("<SavedTensor '{}' of {}>", self.name, self.node.name())
    }
}

/// `_saved_<name>`, `_raw_saved_<name>` and AccumulateGrad's `variable`;
/// AttributeError for anything else.
/// A node's non-tensor saved value as torch shows it: ints (a negative
/// single int as the unsigned 64-bit number torch's bindings print),
/// tuples of ints, bools, floats, strings or None.
fn saved_attr_to_py<'py>(
    py: Python<'py>,
    v: &crate::autograd::SavedAttr,
) -> PyResult<Bound<'py, PyAny>> {
    use crate::autograd::SavedAttr;
    use pyo3::IntoPyObjectExt;
    match v {
        SavedAttr::Int(i) => (*i as u64).into_bound_py_any(py),
        SavedAttr::Ints(v) => {
            pyo3::types::PyTuple::new(py, v.iter().map(|&i| i as u64))?.into_bound_py_any(py)
        }
        SavedAttr::Bool(b) => b.into_bound_py_any(py),
        SavedAttr::Float(f) => f.into_bound_py_any(py),
        SavedAttr::Str(s) => s.into_bound_py_any(py),
        SavedAttr::None => Ok(py.None().into_bound(py)),
    }
}

pub(crate) fn node_getattr<'py>(
    py: Python<'py>,
    node: &Arc<Node>,
    attr: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let backward = node.backward();
    let find = |name: &str| backward.saved_names().into_iter().find(|n| *n == name);
    if let Some(name) = attr.strip_prefix("_raw_saved_") {
        if let Some(name) = find(name) {
            let st = PySavedTensor {
                node: node.clone(),
                name,
            };
            return Bound::new(py, st).map(|b| b.into_any());
        }
    } else if let Some(name) = attr.strip_prefix("_saved_") {
        if let Some(r) = backward.saved(name, node) {
            return crate::python::core::identity::object(py, r?);
        }
        if let Some((_, v)) = backward.saved_attrs().iter().find(|(n, _)| *n == name) {
            return saved_attr_to_py(py, v);
        }
    } else if attr == "variable" {
        if let Some(acc) = node
            .as_any()
            .downcast_ref::<crate::autograd::AccumulateGrad>()
        {
            return crate::python::core::identity::object(py, acc.variable());
        }
    }
    Err(PyAttributeError::new_err(format!(
        "'{}' object has no attribute '{}'",
        node_class_name(node),
        attr
    )))
}

// ----- tensor hooks -----

const NO_GRAD_MSG: &str = "cannot register a hook on a tensor that doesn't require gradient";

#[pymethods]
impl PyTensor {
    /// Registers `hook(grad)`, run on the gradient of this tensor each time
    /// one is computed; it may return a replacement gradient.
    fn register_hook(&self, hook: &Bound<'_, PyAny>) -> PyResult<PyRemovableHandle> {
        let t = &self.inner;
        if !t.requires_grad() {
            return Err(PyRuntimeError::new_err(NO_GRAD_MSG));
        }
        t.check_view_history()?;
        let id = next_hook_id();
        let target = match t.grad_fn() {
            Some(node) => Target::Node(Arc::downgrade(&node)),
            None => Target::Tensor(Arc::downgrade(&t.0)),
        };
        t.add_hook(id, tensor_hook(hook.clone().unbind()));
        Ok(PyRemovableHandle { target, id })
    }

    /// Registers `hook(tensor)`, run on a leaf after its `.grad` was updated.
    fn register_post_accumulate_grad_hook(
        slf: &Bound<'_, Self>,
        hook: &Bound<'_, PyAny>,
    ) -> PyResult<PyRemovableHandle> {
        let t = slf.borrow().inner.clone();
        if !t.requires_grad() {
            return Err(PyRuntimeError::new_err(NO_GRAD_MSG));
        }
        if t.grad_fn().is_some() {
            return Err(PyRuntimeError::new_err(
                "post accumulate grad hooks cannot be registered on non-leaf tensors",
            ));
        }
        // The hook gets the Python object it was registered on while that
        // object lives (a weak reference: no cycle through the tensor).
        let obj = PyWeakrefReference::new(slf)?.unbind();
        let f = hook.clone().unbind();
        let id = next_hook_id();
        let run = move |t: &Tensor| -> crate::Result<()> {
            Python::attach(|py| {
                let call = || -> PyResult<()> {
                    let arg = match obj.bind(py).upgrade() {
                        Some(o) => o,
                        None => Bound::new(py, wrap(t.clone()))?.into_any(),
                    };
                    let r = f.bind(py).call1((&arg,))?;
                    // torch lets a hook return its argument back.
                    if !r.is_none() && !r.is(&arg) {
                        return Err(PyRuntimeError::new_err(
                            "Tensor post accumulate grad hooks should return None.",
                        ));
                    }
                    Ok(())
                };
                call().map_err(|e| error_from_py(py, e))
            })
        };
        t.meta().post_accumulate_hooks.push((id, Arc::new(run)));
        Ok(PyRemovableHandle {
            target: Target::Tensor(Arc::downgrade(&t.0)),
            id,
        })
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRemovableHandle>()?;
    m.add_class::<PySavedTensor>()?;
    Ok(())
}
