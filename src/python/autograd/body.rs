//! The backward body of a Python custom Function's node: calls the user's
//! `backward` (or `vjp`) on the ctx object, which it owns or refers to
//! weakly (see `function.rs`'s module docs).

use super::function::{as_tensor, bases, PyFunctionCtx};
use crate::autograd::custom::{check_num_grads, CustomBody, CustomNode};
use crate::python::core::args::type_name;
use crate::python::core::errors::error_from_py;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use parking_lot::Mutex;
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple, PyWeakrefReference};
use std::any::Any;

/// The user's `backward`, or its `vjp` (torch refuses a Function that
/// defines both): the one place this is decided.
pub(super) fn user_fn<'py>(ctx: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = ctx.py();
    let bases = bases(py)?;
    let fwd = ctx.getattr(intern!(py, "_forward_cls"))?;
    let backward = fwd.getattr(intern!(py, "backward"))?;
    let vjp = fwd.getattr(intern!(py, "vjp"))?;
    let custom_vjp = !vjp.is(&bases.vjp);
    if custom_vjp && !backward.is(&bases.backward) {
        return Err(PyRuntimeError::new_err(
            "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You should only implement one of them.",
        ));
    }
    Ok(if custom_vjp { vjp } else { backward })
}

/// The backward of a Python Function: calls the user's `backward` (or
/// `vjp`) on the ctx object, with the GIL held for that call only.
pub(super) struct PyBody {
    obj: Mutex<CtxRef>,
}

/// How the node refers to its ctx object (see the module docs).
enum CtxRef {
    /// The node owns the ctx.
    Owned(Py<PyAny>),
    /// Python holds the ctx, which owns the node.
    Lent(Py<PyWeakrefReference>),
}

impl PyBody {
    pub(super) fn new(obj: Py<PyAny>) -> Self {
        PyBody {
            obj: Mutex::new(CtxRef::Owned(obj)),
        }
    }
    /// The ctx object.
    pub(super) fn ctx<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // No Python code runs under the lock (upgrade only takes a reference).
        let obj = match &*self.obj.lock() {
            CtxRef::Owned(o) => Some(o.bind(py).clone()),
            CtxRef::Lent(w) => w.bind(py).upgrade(),
        };
        obj.ok_or_else(|| {
            PyRuntimeError::new_err("the ctx object of this custom Function node was freed")
        })
    }
    /// Python took the ctx: the node refers to it weakly from now on.
    pub(super) fn lend(&self, weak: Py<PyWeakrefReference>) {
        let old = std::mem::replace(&mut *self.obj.lock(), CtxRef::Lent(weak));
        drop(old); // outside the lock: a decref
    }
    /// Python dropped the ctx: the node owns it again.
    pub(super) fn own(&self, obj: Py<PyAny>) {
        let old = std::mem::replace(&mut *self.obj.lock(), CtxRef::Owned(obj));
        drop(old);
    }

    fn run(
        &self,
        py: Python<'_>,
        node: &CustomNode,
        grads: Vec<Option<Tensor>>,
    ) -> crate::Result<Vec<Option<Tensor>>> {
        let ctx = &self.ctx(py).map_err(|e| error_from_py(py, e))?;
        let pctx = ctx.cast::<PyFunctionCtx>().ok().map(|c| c.get());
        // Tensors stashed away from ctx are back for the user's backward
        // (and stashed again when it returns or fails).
        struct Unrestore<'a, 'py>(Option<&'a PyFunctionCtx>, Python<'py>);
        impl Drop for Unrestore<'_, '_> {
            fn drop(&mut self) {
                if let Some(c) = self.0 {
                    c.unrestore_stash(self.1);
                }
            }
        }
        let graph_node = node.ctx().node();
        let restored = Unrestore(pctx.filter(|_| graph_node.is_some()), py);
        if let (Some(pctx), Some(n)) = (restored.0, &graph_node) {
            pctx.restore_stash(py, n)
                .map_err(|e| error_from_py(py, e))?;
        }
        let call = || -> PyResult<Bound<'_, PyAny>> {
            let user_fn = user_fn(ctx)?;
            let mut args = Vec::with_capacity(grads.len() + 1);
            args.push(ctx.clone());
            for g in grads {
                args.push(match g {
                    Some(g) => Bound::new(py, wrap(g))?.into_any(),
                    None => py.None().into_bound(py),
                });
            }
            user_fn.call1(PyTuple::new(py, args)?)
        };
        let r = call().map_err(|e| error_from_py(py, e))?;
        let items: Vec<Bound<'_, PyAny>> = match r.cast::<PyTuple>() {
            Ok(t) => t.iter().collect(),
            Err(_) => vec![r],
        };
        let items = check_num_grads(node.name(), items, node.num_forward_inputs(), |o| {
            o.is_none()
        })?;
        let mut out = Vec::with_capacity(items.len());
        for (i, (o, &is_tensor)) in items.iter().zip(node.is_tensor_input()).enumerate() {
            if !is_tensor {
                if !o.is_none() {
                    crate::bail!(
                        runtime,
                        "function {} returned a gradient different than None at position {}, but the corresponding forward input was not a Variable",
                        node.name(),
                        i + 1
                    );
                }
                continue;
            }
            if o.is_none() {
                out.push(None);
            } else if let Some(t) = as_tensor(o) {
                out.push(Some(t));
            } else {
                let ty = type_name(o);
                crate::bail!(runtime, "expected Variable or None (got {})", ty);
            }
        }
        Ok(out)
    }
}

impl CustomBody for PyBody {
    fn backward(
        &self,
        node: &CustomNode,
        grads: Vec<Option<Tensor>>,
    ) -> crate::Result<Vec<Option<Tensor>>> {
        Python::attach(|py| self.run(py, node, grads))
    }
    /// Tensors stored as plain ctx attributes (`ctx.x = x`) are released
    /// with the saved tensors, so they cannot keep the graph alive.
    fn release(&self) {
        Python::attach(|py| {
            let Ok(obj) = self.ctx(py) else {
                return;
            };
            if let Ok(c) = obj.cast::<PyFunctionCtx>() {
                let stash = c.get().stash.lock().take();
                drop(stash);
            }
            let Ok(dict) = obj.getattr(intern!(py, "__dict__")) else {
                return;
            };
            let Ok(dict) = dict.cast_into::<PyDict>() else {
                return;
            };
            let holds_tensor = |v: &Bound<'_, PyAny>| {
                v.is_instance_of::<PyTensor>()
                    || ((v.is_instance_of::<PyTuple>() || v.is_instance_of::<PyList>())
                        && v.try_iter().is_ok_and(|mut it| {
                            it.any(|x| x.is_ok_and(|x| x.is_instance_of::<PyTensor>()))
                        }))
            };
            let keys: Vec<Bound<'_, PyAny>> = dict
                .iter()
                .filter(|(_, v)| holds_tensor(v))
                .map(|(k, _)| k)
                .collect();
            for k in keys {
                let _ = dict.del_item(k);
            }
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
