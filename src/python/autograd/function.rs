//! Python custom Functions: `Function.apply` and the ctx object.
//!
//! `MyFn.apply` creates the ctx, an instance of the per-class `MyFnBackward`
//! type (a subclass of `_FunctionBase`, made by the metaclass in
//! python/ferrograd/autograd/function.py), runs forward, and hands the
//! outputs to the shared custom-Function machinery
//! (src/autograd/custom.rs). The node it records is the ctx object
//! (`y.grad_fn is ctx`); its backward takes the GIL only to call the user's
//! `backward`.
//!
//! No reference cycles: a graph is freed by reference counting as soon as
//! nothing outside it refers to it, with the garbage collector off.
//! - Node and ctx own each other in turn, never both at once (torch's
//!   ownership as well). The node owns its ctx until Python is handed the
//!   ctx (`y.grad_fn`, `next_functions`); from then on the ctx owns the node
//!   and the node only has a weak reference to the ctx. When Python drops
//!   the ctx while the node still has other owners (output tensors, later
//!   nodes), the ctx's finalizer (`BackwardCFunction.__del__`) gives it back
//!   to the node, which owns it again.
//! - Tensors the user stores on ctx (`ctx.out = out`, in lists, tuples and
//!   dicts too) that are this node's outputs, or views of them, would own
//!   the node: when apply returns they are replaced by stand-ins (the same
//!   memory and version counter, no history), and put back for the duration
//!   of each backward call (the original object while it lives, else an
//!   alias of the output with this node as grad_fn, as a saved output is
//!   unpacked), so backward and double backward see what torch gives them.

use super::body::{user_fn, PyBody};
use super::stash::{stash_own_tensors, Stash};
use crate::autograd::custom::{apply_custom, delayed_error, intern, CustomNode, FunctionCtx};
use crate::autograd::Node;
use crate::python::autograd::hooks::{self, PyRemovableHandle};
use crate::python::core::bind::bind_functions;
use crate::python::core::errors::error_from_py;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use parking_lot::Mutex;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType, PyWeakrefReference};
use pyo3::{intern, PyTraverseError, PyVisit};
use std::sync::Arc;

/// The Python object for a graph node: the ctx of a Python custom Function,
/// a generic `Node` otherwise.
pub(crate) fn node_to_py<'py>(py: Python<'py>, node: Arc<Node>) -> PyResult<Bound<'py, PyAny>> {
    if let Some(body) = py_body(&node) {
        let obj = body.ctx(py)?;
        if let Ok(ctx) = obj.cast::<PyFunctionCtx>() {
            let this = ctx.get();
            let mut slot = this.node.lock();
            // Python now holds the ctx: the ctx owns the node and the node
            // refers to it weakly, unless the finalizer already ran once
            // (then the node keeps owning it; the ctx finds its node through
            // the weak link of `FunctionCtx`).
            if slot.is_none()
                && !this.finalized.load(std::sync::atomic::Ordering::Relaxed)
                && obj.is_instance(bases(py)?.backward_cfunction.bind(py))?
            {
                let weak = PyWeakrefReference::new(&obj)?.unbind();
                *slot = Some(node.clone());
                drop(slot);
                body.lend(weak);
            }
        }
        return Ok(obj);
    }
    crate::python::autograd::node::node_object(py, node)
}

fn py_body(node: &Node) -> Option<&PyBody> {
    node.as_any()
        .downcast_ref::<CustomNode>()?
        .body()
        .as_any()
        .downcast_ref::<PyBody>()
}

/// `((node or None, input_nr), ...)` for the edges of `node`.
pub(crate) fn next_functions<'py>(py: Python<'py>, node: &Node) -> PyResult<Bound<'py, PyTuple>> {
    let items: Vec<Bound<'py, PyAny>> = node
        .next_edges()
        .iter()
        .map(|e| match e {
            Some(e) => Ok(PyTuple::new(
                py,
                [
                    node_to_py(py, e.node.clone())?,
                    e.input_nr.into_pyobject(py)?.into_any(),
                ],
            )?
            .into_any()),
            None => Ok((py.None(), 0usize).into_pyobject(py)?.into_any()),
        })
        .collect::<PyResult<_>>()?;
    PyTuple::new(py, items)
}

pub(super) fn as_tensor(obj: &Bound<'_, PyAny>) -> Option<Tensor> {
    let t = obj.cast::<PyTensor>().ok()?;
    let t = t.try_borrow().ok()?;
    Some(t.inner.clone())
}

/// Tensors (or None) from `*args`, for the ctx methods that take tensors.
fn tensor_args(
    what: &str,
    args: &Bound<'_, PyTuple>,
    none_ok: bool,
) -> PyResult<Vec<Option<Tensor>>> {
    args.iter()
        .enumerate()
        .map(|(i, a)| match as_tensor(&a) {
            Some(t) => Ok(Some(t)),
            None if none_ok && a.is_none() => Ok(None),
            None => Err(PyTypeError::new_err(format!(
                "{} {}, but argument {} is of type {}",
                what,
                if none_ok {
                    "can only save variables"
                } else {
                    "can only accept variables"
                },
                i,
                a.get_type().name()?
            ))),
        })
        .collect()
}

/// Python objects the binding needs from function.py.
pub(super) struct Bases {
    /// The base of the ctx classes, whose `__del__` hands a ctx back to its
    /// node.
    backward_cfunction: Py<PyAny>,
    setup_context: Py<PyAny>,
    pub(super) backward: Py<PyAny>,
    pub(super) vjp: Py<PyAny>,
}

static BASES: PyOnceLock<Bases> = PyOnceLock::new();

pub(super) fn bases(py: Python<'_>) -> PyResult<&'static Bases> {
    BASES.get_or_try_init(py, || {
        let m = py.import("ferrograd.autograd.function")?;
        let base = m.getattr("_SingleLevelFunction")?;
        Ok(Bases {
            backward_cfunction: m.getattr("BackwardCFunction")?.unbind(),
            setup_context: base.getattr("setup_context")?.unbind(),
            backward: base.getattr("backward")?.unbind(),
            vjp: base.getattr("vjp")?.unbind(),
        })
    })
}

/// torch's handling of keyword arguments to `apply` (without
/// setup_context): each goes to the position of the forward parameter of
/// that name, and every position before the last one must be filled.
fn kwargs_to_positional<'py>(
    forward: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyTuple>> {
    let py = args.py();
    let code = forward.getattr(intern!(py, "__code__"))?;
    let argcount: usize = code.getattr(intern!(py, "co_argcount"))?.extract()?;
    let names: Vec<String> = code.getattr(intern!(py, "co_varnames"))?.extract()?;
    let params = &names[1.min(argcount)..argcount]; // without ctx
    let mut slots: Vec<Option<Bound<'py, PyAny>>> = args.iter().map(Some).collect();
    for (k, v) in kwargs.iter() {
        let k: String = k.extract()?;
        let Some(pos) = params.iter().position(|p| *p == k) else {
            return Err(PyTypeError::new_err(format!(
                "forward() got an unexpected keyword argument '{k}'"
            )));
        };
        if slots.len() <= pos {
            slots.resize(pos + 1, None);
        }
        if slots[pos].is_some() {
            return Err(PyTypeError::new_err(format!(
                "forward() got multiple values for argument '{k}'"
            )));
        }
        slots[pos] = Some(v);
    }
    let items = slots
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            s.ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "forward() missing required argument: '{}' (position {})",
                    params[i], i
                ))
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

/// The ctx object of a Python custom Function (torch's `_C._FunctionBase`):
/// the per-class `MyFnBackward` types derive from it, and so does
/// `Function` itself (for `apply`).
#[pyclass(
    name = "_FunctionBase",
    module = "ferrograd._C",
    subclass,
    dict,
    weakref,
    frozen
)]
pub struct PyFunctionCtx {
    ctx: FunctionCtx,
    /// The node, while Python holds this ctx (it was handed out as
    /// `y.grad_fn`): a ctx held by Python keeps its node alive, as in torch,
    /// and the node then refers to the ctx weakly (see the module docs).
    node: Mutex<Option<Arc<Node>>>,
    /// Set once the finalizer gave the ctx back to its node: Python calls a
    /// finalizer only once per object, so the node keeps owning it.
    finalized: std::sync::atomic::AtomicBool,
    /// Tensors on ctx that would own the node (see the module docs).
    pub(super) stash: Mutex<Stash>,
    /// `save_for_forward`'s tensors: what `saved_tensors` gives inside `jvp`.
    pub(super) saved_for_forward: Mutex<Option<Vec<Option<Tensor>>>>,
    in_jvp: std::sync::atomic::AtomicBool,
}

#[pymethods]
impl PyFunctionCtx {
    /// The user's backward (or vjp) that this ctx's node calls.
    fn _get_user_fn<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        user_fn(slf.as_any())
    }
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        PyFunctionCtx {
            ctx: FunctionCtx::new(),
            node: Mutex::new(None),
            finalized: Default::default(),
            stash: Mutex::new(Stash::default()),
            saved_for_forward: Mutex::new(None),
            in_jvp: Default::default(),
        }
    }

    /// Runs the Function and records it in the graph.
    #[classmethod]
    #[pyo3(signature = (*args, **kwargs))]
    fn apply<'py>(
        cls: &Bound<'py, PyType>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        function_apply(cls, args, kwargs)
    }

    /// Tensors for `jvp` (forward AD), read there through `saved_tensors`.
    #[pyo3(signature = (*tensors))]
    fn save_for_forward(&self, tensors: &Bound<'_, PyTuple>) -> PyResult<()> {
        let t = tensors
            .iter()
            .map(|a| match as_tensor(&a) {
                Some(t) => Ok(Some(t)),
                None if a.is_none() => Ok(None),
                None => Err(pyo3::exceptions::PyAssertionError::new_err(
                    "save_for_forward expects all arguments to be tensors; you should save non-tensors as attributes on ctx.",
                )),
            })
            .collect::<PyResult<Vec<_>>>()?;
        *self.saved_for_forward.lock() = Some(t);
        Ok(())
    }
    #[getter]
    fn saved_for_forward<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        match self.saved_for_forward.lock().clone() {
            Some(v) => Ok(Some(PyTuple::new(py, v.into_iter().map(|t| t.map(wrap)))?)),
            None => Ok(None),
        }
    }
    #[pyo3(signature = (*tensors))]
    fn save_for_backward(&self, tensors: &Bound<'_, PyTuple>) -> PyResult<()> {
        let t = tensor_args("save_for_backward", tensors, true)?;
        self.ctx.save_for_backward_opt(t);
        Ok(())
    }
    #[getter]
    fn saved_tensors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        if self.in_jvp.load(std::sync::atomic::Ordering::Relaxed) {
            let saved = self.saved_for_forward.lock().clone().unwrap_or_default();
            return PyTuple::new(py, saved.into_iter().map(|t| t.map(wrap)));
        }
        let saved = self.ctx.saved_tensors_opt()?;
        PyTuple::new(py, saved.into_iter().map(|t| t.map(wrap)))
    }
    /// torch's: frees the saved tensors now when called from a backward
    /// that does not keep its graph (no `retain_graph`); else does nothing.
    fn maybe_clear_saved_tensors(&self) {
        if crate::autograd::engine::current_keeps_graph() {
            return;
        }
        if let Some(node) = self.ctx.node() {
            node.backward().release_saved();
        }
    }
    #[getter]
    fn saved_variables<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        self.saved_tensors(py)
    }
    #[getter]
    fn needs_input_grad<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.ctx.needs_input_grads())
    }
    #[pyo3(signature = (*tensors))]
    fn mark_dirty(&self, tensors: &Bound<'_, PyTuple>) -> PyResult<()> {
        let t: Vec<Tensor> = tensor_args("mark_dirty", tensors, false)?
            .into_iter()
            .flatten()
            .collect();
        self.ctx.mark_dirty(&t.iter().collect::<Vec<_>>());
        Ok(())
    }
    #[pyo3(signature = (*tensors))]
    fn mark_non_differentiable(&self, tensors: &Bound<'_, PyTuple>) -> PyResult<()> {
        let t: Vec<Tensor> = tensor_args("mark_non_differentiable", tensors, false)?
            .into_iter()
            .flatten()
            .collect();
        self.ctx
            .mark_non_differentiable(&t.iter().collect::<Vec<_>>());
        Ok(())
    }
    fn set_materialize_grads(&self, value: bool) {
        self.ctx.set_materialize_grads(value);
    }
    #[getter]
    fn materialize_grads(&self) -> bool {
        self.ctx.materialize_grads()
    }
    #[setter(materialize_grads)]
    fn set_materialize_grads_attr(&self, value: bool) {
        self.ctx.set_materialize_grads(value);
    }
    /// torch's `ctx.dirty_tensors`: the tuple given to `mark_dirty` while
    /// forward runs, else None.
    #[getter]
    fn dirty_tensors<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.ctx
            .dirty_tensors()
            .map(|v| PyTuple::new(py, v.into_iter().map(wrap)))
            .transpose()
    }
    /// torch's `ctx.non_differentiable` (as `dirty_tensors`).
    #[getter]
    fn non_differentiable<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.ctx
            .non_differentiable_tensors()
            .map(|v| PyTuple::new(py, v.into_iter().map(wrap)))
            .transpose()
    }
    /// torch's `ctx.to_save`: what `save_for_backward` got, while forward
    /// runs, else None.
    #[getter]
    fn to_save<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.ctx
            .to_save()
            .map(|v| PyTuple::new(py, v.into_iter().map(|t| t.map(wrap))))
            .transpose()
    }
    /// Whether any input of the call requires grad.
    #[getter]
    fn requires_grad(&self) -> bool {
        self.ctx.requires_grad()
    }
    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let node = self.graph_node("next_functions")?;
        next_functions(py, &node)
    }
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let node = self.graph_node("metadata")?;
        Ok(hooks::node_metadata(py, &node))
    }
    fn register_hook(&self, hook: &Bound<'_, PyAny>) -> PyResult<PyRemovableHandle> {
        Ok(hooks::register_node_hook(
            &self.graph_node("register_hook")?,
            hook,
        ))
    }
    fn register_prehook(&self, hook: &Bound<'_, PyAny>) -> PyResult<PyRemovableHandle> {
        Ok(hooks::register_node_prehook(
            &self.graph_node("register_prehook")?,
            hook,
        ))
    }
    fn name(slf: &Bound<'_, Self>) -> PyResult<String> {
        Ok(slf.get_type().name()?.to_string())
    }
    fn _sequence_nr(&self) -> PyResult<u64> {
        Ok(self.graph_node("_sequence_nr")?.sequence_nr())
    }

    /// Called by `BackwardCFunction.__del__` when Python drops its last
    /// reference: a node that other owners keep alive takes its ctx back
    /// (which resurrects this object); otherwise the node goes with it.
    fn _release_node(slf: &Bound<'_, Self>) {
        let this = slf.get();
        let Some(node) = this.node.lock().take() else {
            return;
        };
        if Arc::strong_count(&node) > 1 {
            if let Some(body) = py_body(&node) {
                this.finalized
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                body.own(slf.clone().into_any().unbind());
            }
        }
        drop(node);
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self.stash.try_lock() {
            Some(st) => st.traverse(&visit),
            None => Ok(()),
        }
    }

    fn __clear__(&self) {
        let node = self.node.lock().take();
        drop(node);
        let stash = self.stash.lock().take();
        drop(stash);
    }
}

impl PyFunctionCtx {
    /// The graph node of this ctx; torch's error for `attr` without one.
    fn graph_node(&self, attr: &str) -> PyResult<Arc<Node>> {
        self.ctx.node().ok_or_else(|| {
            PyRuntimeError::new_err(format!(
                "Attribute '{attr}' is invalid for this instance of _C._FunctionBase. Accessing this attribute directly on an instance of autograd.Function is a legacy access pattern that is no longer supported. For examples on how to use new-style autograd functions, see https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function ",
            ))
        })
    }
}

/// A custom Function applied to batched tensors inside vmap: torch's
/// errors when the class has no vmap support (or both kinds); with a
/// `vmap` staticmethod or `generate_vmap_rule = True`, vmap's per-slice
/// fallback (each sample runs the Function as written, old-style
/// `forward(ctx, ...)` ones too), named after the class.
fn vmap_support(cls: &Bound<'_, PyType>) -> PyResult<PyErr> {
    let py = cls.py();
    let name = cls.name()?.to_string();
    let generate = cls
        .getattr(intern!(py, "generate_vmap_rule"))?
        .is_truthy()?;
    let base = py
        .import(intern!(py, "ferrograd.autograd.function"))?
        .getattr(intern!(py, "Function"))?
        .getattr(intern!(py, "vmap"))?;
    let own_rule = !cls.getattr(intern!(py, "vmap"))?.is(&base);
    let doc =
        "For more details, please see https://pytorch.org/docs/main/notes/extending.func.html";
    Ok(match (generate, own_rule) {
        (false, false) => PyRuntimeError::new_err(format!(
            "You tried to vmap over {name}, but it does not have vmap support. Please override and implement the vmap staticmethod or set generate_vmap_rule=True. {doc}"
        )),
        (true, true) => PyRuntimeError::new_err(format!(
            "You tried to vmap over {name}, but it has both generate_vmap_rule=True and an overridden vmap staticmethod. Please set generate_vmap_rule=False or delete the overridden vmap staticmethod to avoid ambiguity. {doc}"
        )),
        _ => crate::python::core::batched::fallback(&format!("{name}.apply")),
    })
}

fn function_apply<'py>(
    cls: &Bound<'py, PyType>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = cls.py();
    let batched_args: Vec<Bound<'py, PyAny>> = args
        .iter()
        .chain(kwargs.into_iter().flat_map(|k| k.values()))
        .collect();
    if crate::python::core::batched::any_batched(&batched_args.iter().collect::<Vec<_>>()) {
        return Err(vmap_support(cls)?);
    }
    let backward_cls = cls.getattr(intern!(py, "_backward_cls"))?;
    let ctx_obj = backward_cls.call0()?;
    let ctx = ctx_obj.cast::<PyFunctionCtx>()?.get().ctx.clone();
    // `ordered_backward = True` on the class: the backward communicates
    // (ferrograd.distributed), the engine runs it in its ordered lane.
    if let Some(ordered) = cls.getattr_opt(intern!(py, "ordered_backward"))? {
        ctx.set_ordered(ordered.is_truthy()?);
    }
    let name = intern(&backward_cls.cast::<PyType>()?.name()?.to_cow()?);
    let forward = cls.getattr(intern!(py, "forward"))?;
    let setup_context = cls.getattr(intern!(py, "setup_context"))?;
    let bases = bases(py)?;
    let has_setup = !setup_context.is(&bases.setup_context);
    let kwargs = kwargs.filter(|k| !k.is_empty());

    let (args, kwargs) = if has_setup {
        let has_defaults = forward
            .getattr_opt(intern!(py, "__defaults__"))?
            .is_some_and(|d| !d.is_none());
        if kwargs.is_some() || has_defaults {
            // forward's signature binds the arguments, with defaults
            let sig = py
                .import(intern!(py, "inspect"))?
                .call_method1(intern!(py, "signature"), (&forward,))?;
            let bound = sig.call_method(intern!(py, "bind"), args, kwargs)?;
            bound.call_method0(intern!(py, "apply_defaults"))?;
            let a = bound.getattr(intern!(py, "args"))?.cast_into::<PyTuple>()?;
            let k = bound
                .getattr(intern!(py, "kwargs"))?
                .cast_into::<PyDict>()?;
            (a, Some(k).filter(|k| !k.is_empty()))
        } else {
            (args.clone(), None)
        }
    } else {
        match kwargs {
            Some(kw) if forward.hasattr(intern!(py, "__code__"))? => {
                (kwargs_to_positional(&forward, args, kw)?, None)
            }
            kw => (args.clone(), kw.cloned()),
        }
    };
    let inputs: Vec<Option<Tensor>> = args.iter().map(|a| as_tensor(&a)).collect();

    let mut out_obj: Option<Bound<'py, PyAny>> = None;
    let mut out_items: Vec<Bound<'py, PyAny>> = Vec::new();
    // Forward AD: forward runs on primals; the tangents come from `jvp`.
    let fw_tangents = if crate::autograd::forward::is_active() {
        let present: Vec<&Tensor> = inputs.iter().flatten().collect();
        crate::autograd::forward::input_tangents(&present)
    } else {
        None
    };
    let suspend = crate::autograd::forward::Suspend::new(
        fw_tangents
            .iter()
            .flatten()
            .map(|(level, _)| *level)
            .collect(),
    );
    let result = apply_custom(
        name,
        &ctx,
        &inputs,
        |_| {
            let run = || -> PyResult<Bound<'py, PyAny>> {
                if has_setup {
                    let out = forward.call(&args, kwargs.as_ref())?;
                    setup_context.call1((&ctx_obj, &args, &out))?;
                    Ok(out)
                } else {
                    let mut full = Vec::with_capacity(args.len() + 1);
                    full.push(ctx_obj.clone());
                    full.extend(args.iter());
                    forward.call(PyTuple::new(py, full)?, kwargs.as_ref())
                }
            };
            let out = run().map_err(|e| error_from_py(py, e))?;
            out_items = match out.cast::<PyTuple>() {
                Ok(t) => t.iter().collect(),
                Err(_) => vec![out.clone()],
            };
            out_obj = Some(out);
            Ok(out_items.iter().map(as_tensor).collect())
        },
        |_| Box::new(PyBody::new(ctx_obj.clone().unbind())),
    )?;

    drop(suspend);
    if let Some(levels) = fw_tangents {
        custom_jvp(&ctx_obj, &inputs, &result, levels)?;
    }
    if let Some(node) = ctx.node() {
        stash_own_tensors(ctx_obj.cast::<PyFunctionCtx>()?, &node)?;
    }
    let out = out_obj.expect("forward returned");
    let changed = |(item, r): (&Bound<'py, PyAny>, &Option<Tensor>)| match (as_tensor(item), r) {
        (Some(orig), Some(r)) => !orig.same(r),
        _ => false,
    };
    if !out_items.iter().zip(&result).any(changed) {
        return Ok(out);
    }
    let items = out_items
        .iter()
        .zip(result)
        .map(|(item, r)| match r {
            Some(r) if !as_tensor(item).is_some_and(|t| t.same(&r)) => {
                Ok(Bound::new(py, wrap(r))?.into_any())
            }
            _ => Ok(item.clone()),
        })
        .collect::<PyResult<Vec<_>>>()?;
    if out.is_instance_of::<PyTuple>() {
        Ok(PyTuple::new(py, items)?.into_any())
    } else {
        Ok(items.into_iter().next().expect("one output"))
    }
}

/// Sets the outputs' tangents from the user's `jvp(ctx, *tangents)`, one
/// tangent (or None) per forward input, per level with tangents.
fn custom_jvp(
    ctx_obj: &Bound<'_, PyAny>,
    inputs: &[Option<Tensor>],
    outputs: &[Option<Tensor>],
    levels: crate::autograd::forward::LevelTangents,
) -> PyResult<()> {
    let py = ctx_obj.py();
    for (level, tangents) in levels {
        // `input_tangents` saw only the tensor inputs: spread them back.
        let mut it = tangents.into_iter();
        // torch passes zeros for tensor inputs without a tangent, None for
        // non-tensor arguments.
        let args: Vec<Bound<'_, PyAny>> = inputs
            .iter()
            .map(|i| match i {
                Some(x) => {
                    let t = it.next().flatten().unwrap_or_else(|| x.zeros_like());
                    Ok(Bound::new(py, wrap(t))?.into_any())
                }
                None => Ok(py.None().into_bound(py)),
            })
            .collect::<PyResult<_>>()?;
        let _suspend = crate::autograd::forward::Suspend::new(vec![level]);
        let pctx = ctx_obj.cast::<PyFunctionCtx>()?.get();
        pctx.in_jvp
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let res = ctx_obj.call_method1(intern!(py, "apply_jvp"), PyTuple::new(py, args)?);
        pctx.in_jvp
            .store(false, std::sync::atomic::Ordering::Relaxed);
        let res = res?;
        let res: Vec<Bound<'_, PyAny>> = match res.cast::<PyTuple>() {
            Ok(t) => t.iter().collect(),
            Err(_) => vec![res],
        };
        let n_out = outputs.iter().filter(|o| o.is_some()).count();
        if res.len() != outputs.len() && res.len() != n_out {
            return Err(PyRuntimeError::new_err(format!(
                "jvp returned an incorrect number of tangents (expected {}, got {})",
                outputs.len(),
                res.len()
            )));
        }
        for (out, t) in outputs.iter().zip(res) {
            let (Some(out), Some(t)) = (out, as_tensor(&t)) else {
                continue;
            };
            if out.dtype().is_floating() {
                out.set_fw_grad(level, Some(&t))?;
            }
        }
    }
    Ok(())
}

bind_functions! { register_functions:
    /// torch's `_functions.DelayedError` (for `once_differentiable`): returns
    /// aliases of `tensors` whose backward raises `msg`.
    #[pyo3(signature = (msg, *tensors))]
    fn _delayed_error<'py>(
        py: Python<'py>,
        msg: &str,
        tensors: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let t: Vec<Option<Tensor>> = tensors.iter().map(|a| as_tensor(&a)).collect();
        PyTuple::new(py, delayed_error(msg, &t).into_iter().map(|t| t.map(wrap)))
    }
}

/// Runs a section that waits on the thread pool with the GIL released when
/// this thread holds it (see `crate::parallel::set_blocking_wrapper`).
fn without_gil(section: &mut dyn FnMut()) {
    // Not in the limited API pyo3 binds under abi3, but exported by every
    // CPython 3 (since 3.4); the symbol resolves from the interpreter.
    extern "C" {
        fn PyGILState_Check() -> std::os::raw::c_int;
    }
    // SAFETY: PyGILState_Check only reads this thread's state; the
    // interpreter is initialized (this module is loaded).
    if unsafe { PyGILState_Check() } == 0 {
        return section();
    }
    /// `detach` wants a `Send` closure so that no Python object is touched
    /// without the GIL; the section is a kernel over tensor buffers, which
    /// holds none, and it runs on this same thread.
    struct NoPython<'a>(&'a mut dyn FnMut());
    // SAFETY: see above; the section touches no Python object.
    unsafe impl Send for NoPython<'_> {}
    let s = NoPython(section);
    Python::attach(|py| {
        py.detach(move || {
            let s = s;
            (s.0)()
        })
    });
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    crate::parallel::set_blocking_wrapper(without_gil);
    m.add_class::<PyFunctionCtx>()?;
    Ok(())
}
