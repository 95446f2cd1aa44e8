//! Custom autograd Functions: user code supplies the forward and the
//! backward, this module makes the node (torch's `autograd.Function`).
//!
//! ```
//! use ferrograd::autograd::custom::{Function, FunctionCtx};
//! use ferrograd::{Result, Tensor};
//!
//! /// y = x * x, with a hand-written derivative.
//! struct Square;
//! impl Function for Square {
//!     fn forward(&mut self, ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
//!         ctx.save_for_backward(&[&inputs[0]]);
//!         Ok(vec![inputs[0].mul(&inputs[0])?])
//!     }
//!     fn backward(&self, ctx: &FunctionCtx, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
//!         let x = &ctx.saved_tensors()?[0];
//!         Ok(vec![Some(grads[0].as_ref().unwrap().mul(x)?.mul_scalar(2.0)?)])
//!     }
//! }
//!
//! let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap().requires_grad_(true).unwrap();
//! let y = Square.apply(&[&x]).unwrap().remove(0);
//! assert_eq!(y.grad_fn().unwrap().name(), "SquareBackward");
//! y.sum().unwrap().backward().unwrap();
//! assert_eq!(x.grad().unwrap().to_f64_vec(), vec![2.0, 4.0]);
//! ```
//!
//! The same machinery backs Python's `Function.apply` (src/python/function.rs):
//! one node type, [`CustomNode`], whose backward is a [`CustomBody`] — the
//! Rust trait object or the Python class.

use super::grad_mode::{is_grad_enabled, no_grad};
use super::meta::ViewCreation;
use super::node::{Backward, InputMeta, Node};
use super::saved::{SavedTensor, FREED_MSG};
use crate::tensor::{DType, Tensor};
use crate::{bail, Error, Result};
use parking_lot::Mutex;
use std::any::Any;
use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Weak};

/// A user-defined differentiable operation (torch's `autograd.Function`).
///
/// `forward` runs with grad mode off; what it saves, marks dirty or marks
/// non-differentiable on `ctx` takes effect when it returns. `backward` gets
/// one gradient per output (`None` for an output that got no gradient when
/// `set_materialize_grads(false)`, zeros otherwise) and returns one gradient
/// per input (`None` = no gradient). Backward is written in ferrograd ops, so
/// it is itself differentiable (double backward) when the engine runs with
/// `create_graph`.
pub trait Function: Send + Sync + Sized + 'static {
    /// The node's name; by default the type's name followed by `Backward`.
    fn name(&self) -> Cow<'static, str> {
        let full = std::any::type_name::<Self>();
        let base = full.split('<').next().unwrap_or(full);
        let short = base.rsplit("::").next().unwrap_or(base);
        Cow::Owned(format!("{short}Backward"))
    }
    fn forward(&mut self, ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>>;
    fn backward(
        &self,
        ctx: &FunctionCtx,
        grad_outputs: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>>;
    /// Whether backward communicates (a collective across processes): the
    /// engine then runs this node in its ordered lane, after every
    /// communicating node of the same backward created later and before
    /// every one created earlier, so that all processes issue their
    /// collectives in one order ([`Backward::ordered`]). Python Functions
    /// say so with the class attribute `ordered_backward = True`.
    fn ordered(&self) -> bool {
        false
    }

    /// Runs the function and records it in the graph (torch's `Function.apply`).
    fn apply(self, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        let name = intern(&self.name());
        let args: Vec<Option<Tensor>> = inputs.iter().map(|t| Some((*t).clone())).collect();
        // Forward borrows the function, then the node takes it.
        let ctx = FunctionCtx::new();
        ctx.set_ordered(self.ordered());
        let f = std::cell::RefCell::new(Some(self));
        let outs = apply_custom(
            name,
            &ctx,
            &args,
            |ctx| {
                let owned: Vec<Tensor> = inputs.iter().map(|t| (*t).clone()).collect();
                let mut f = f.borrow_mut();
                let f = f.as_mut().expect("forward runs once");
                Ok(f.forward(ctx, &owned)?.into_iter().map(Some).collect())
            },
            |_| Box::new(RustBody(f.borrow_mut().take().expect("after forward"))),
        )?;
        Ok(outs.into_iter().flatten().collect())
    }
}

struct RustBody<F>(F);

impl<F: Function> CustomBody for RustBody<F> {
    fn backward(
        &self,
        node: &CustomNode,
        grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        let out = self.0.backward(node.ctx(), grads)?;
        let n = node.num_forward_inputs();
        check_num_grads(node.name(), out, n, Option::is_none)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What the user's backward returns, checked like torch: trailing `None`s
/// beyond the number of forward inputs are dropped, any other count is an
/// error.
pub(crate) fn check_num_grads<T>(
    name: &str,
    mut grads: Vec<T>,
    expected: usize,
    is_none: impl Fn(&T) -> bool,
) -> Result<Vec<T>> {
    if grads.len() > expected && grads[expected..].iter().all(is_none) {
        grads.truncate(expected);
    }
    if grads.len() != expected {
        bail!(
            runtime,
            "function {} returned an incorrect number of gradients (expected {}, got {})",
            name,
            expected,
            grads.len()
        );
    }
    Ok(grads)
}

/// The node's backward: turns output gradients into gradients for the
/// tensor inputs (one per next edge), with the count and types checked.
#[cfg_attr(not(feature = "python"), allow(dead_code))]
pub(crate) trait CustomBody: Send + Sync + 'static {
    fn backward(
        &self,
        node: &CustomNode,
        grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>>;
    /// Called after a backward without `retain_graph`, with the saved tensors.
    fn release(&self) {}
    fn as_any(&self) -> &dyn Any;
}

struct CtxState {
    name: &'static str,
    needs_input_grad: Vec<bool>,
    materialize_grads: bool,
    /// Staged by forward / setup_context; consumed when forward returns.
    to_save: Option<Vec<Option<Tensor>>>,
    dirty: Vec<Tensor>,
    non_differentiable: Vec<Tensor>,
    saved: Vec<Option<SavedTensor>>,
    released: bool,
    node: Weak<Node>,
    /// The node runs in the engine's ordered lane (it communicates).
    ordered: bool,
}

/// The context of one call of a custom Function (torch's `ctx`): what
/// forward tells autograd, and what backward reads back. Cheap to clone;
/// clones share state.
#[derive(Clone)]
pub struct FunctionCtx(Arc<Mutex<CtxState>>);

impl Default for FunctionCtx {
    fn default() -> Self {
        Self::new()
    }
}

impl FunctionCtx {
    pub fn new() -> Self {
        FunctionCtx(Arc::new(Mutex::new(CtxState {
            name: "",
            needs_input_grad: Vec::new(),
            materialize_grads: true,
            to_save: None,
            dirty: Vec::new(),
            non_differentiable: Vec::new(),
            saved: Vec::new(),
            released: false,
            node: Weak::new(),
            ordered: false,
        })))
    }
    /// Saves tensors for backward (replaces an earlier call).
    pub fn save_for_backward(&self, tensors: &[&Tensor]) {
        self.save_for_backward_opt(tensors.iter().map(|t| Some((*t).clone())).collect());
    }
    /// Like `save_for_backward`, with `None` entries allowed (kept in place).
    pub fn save_for_backward_opt(&self, tensors: Vec<Option<Tensor>>) {
        self.0.lock().to_save = Some(tensors);
    }
    /// The saved tensors, version checked. Fails with torch's message once
    /// they were freed by a backward without `retain_graph`.
    pub fn saved_tensors_opt(&self) -> Result<Vec<Option<Tensor>>> {
        let st = self.0.lock();
        if st.released {
            return Err(Error::runtime(FREED_MSG));
        }
        st.saved
            .iter()
            .map(|s| s.as_ref().map(SavedTensor::unpack_for_ctx).transpose())
            .collect()
    }
    /// The saved tensors (none of which was saved as `None`).
    pub fn saved_tensors(&self) -> Result<Vec<Tensor>> {
        self.saved_tensors_opt()?
            .into_iter()
            .map(|t| t.ok_or_else(|| Error::runtime("a saved tensor is None")))
            .collect()
    }
    /// Whether forward input `i` requires grad (false for non-tensors).
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.0
            .lock()
            .needs_input_grad
            .get(i)
            .copied()
            .unwrap_or(false)
    }
    pub fn needs_input_grads(&self) -> Vec<bool> {
        self.0.lock().needs_input_grad.clone()
    }
    /// Declares inputs that forward modified in place; they must be returned
    /// as outputs. Their version is bumped and their history rebased onto
    /// this function's node.
    pub fn mark_dirty(&self, tensors: &[&Tensor]) {
        self.0.lock().dirty = tensors.iter().map(|t| (*t).clone()).collect();
    }
    /// Declares outputs that are not differentiable: they do not require
    /// grad (backward still receives a gradient slot for them).
    pub fn mark_non_differentiable(&self, tensors: &[&Tensor]) {
        self.0.lock().non_differentiable = tensors.iter().map(|t| (*t).clone()).collect();
    }
    /// With `false`, backward receives `None` for outputs that got no
    /// gradient instead of zero tensors.
    pub fn set_materialize_grads(&self, value: bool) {
        self.0.lock().materialize_grads = value;
    }
    pub fn materialize_grads(&self) -> bool {
        self.0.lock().materialize_grads
    }
    /// The tensors `mark_dirty` declared, while forward runs (torch's
    /// `ctx.dirty_tensors`; `None` before the call and after `apply`).
    pub fn dirty_tensors(&self) -> Option<Vec<Tensor>> {
        let st = self.0.lock();
        (!st.dirty.is_empty()).then(|| st.dirty.clone())
    }
    /// The tensors `mark_non_differentiable` declared, while forward runs.
    pub fn non_differentiable_tensors(&self) -> Option<Vec<Tensor>> {
        let st = self.0.lock();
        (!st.non_differentiable.is_empty()).then(|| st.non_differentiable.clone())
    }
    /// The tensors `save_for_backward` was given, while forward runs.
    pub fn to_save(&self) -> Option<Vec<Option<Tensor>>> {
        self.0.lock().to_save.clone()
    }
    /// Whether any input requires grad (the node's `requires_grad`).
    pub fn requires_grad(&self) -> bool {
        self.0.lock().needs_input_grad.iter().any(|&b| b)
    }
    /// Marks the call's node as communicating (set before `apply`): the
    /// engine runs it in its ordered lane ([`Backward::ordered`]).
    pub fn set_ordered(&self, value: bool) {
        self.0.lock().ordered = value;
    }
    pub fn ordered(&self) -> bool {
        self.0.lock().ordered
    }
    /// The graph node of this call, while it is alive (None when the call
    /// was not recorded).
    pub fn node(&self) -> Option<Arc<Node>> {
        self.0.lock().node.upgrade()
    }
    /// The node's name (e.g. `MyFnBackward`).
    pub fn name(&self) -> &'static str {
        self.0.lock().name
    }
    /// Whether backward freed the saved tensors.
    pub fn is_released(&self) -> bool {
        self.0.lock().released
    }
    fn release(&self) {
        let saved = {
            let mut st = self.0.lock();
            st.released = true;
            std::mem::take(&mut st.saved)
        };
        drop(saved);
    }
}

/// The graph node of a custom Function call.
pub struct CustomNode {
    name: &'static str,
    ctx: FunctionCtx,
    /// Per forward argument: whether it is a tensor (tensor arguments, and
    /// only those, have a next edge).
    is_tensor_input: Vec<bool>,
    /// Per output: whether it is a tensor (only those get zero gradients).
    is_tensor_output: Vec<bool>,
    body: Box<dyn CustomBody>,
    ordered: bool,
}

impl CustomNode {
    pub fn ctx(&self) -> &FunctionCtx {
        &self.ctx
    }
    pub fn name(&self) -> &'static str {
        self.name
    }
    /// Number of forward arguments, tensors or not.
    pub fn num_forward_inputs(&self) -> usize {
        self.is_tensor_input.len()
    }
    pub fn is_tensor_input(&self) -> &[bool] {
        &self.is_tensor_input
    }
    #[cfg_attr(not(feature = "python"), allow(dead_code))]
    pub(crate) fn body(&self) -> &dyn CustomBody {
        &*self.body
    }
}

impl Backward for CustomNode {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(self.name)
    }
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let materialize = self.ctx.materialize_grads();
        let grads = grads
            .into_iter()
            .zip(node.input_meta())
            .zip(&self.is_tensor_output)
            .map(|((g, m), &is_tensor)| match g {
                None if materialize && is_tensor => Some(Tensor::zeros(&m.shape, m.dtype)),
                g => g,
            })
            .collect();
        self.body.backward(self, grads)
    }
    fn release_saved(&self) {
        self.ctx.release();
        self.body.release();
    }
    fn ordered(&self) -> bool {
        self.ordered
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A process-lifetime copy of a node name (names are few: one per Function
/// class).
pub(crate) fn intern(name: &str) -> &'static str {
    static NAMES: LazyLock<Mutex<HashSet<&'static str>>> = LazyLock::new(Default::default);
    let mut names = NAMES.lock();
    if let Some(n) = names.get(name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(n);
    n
}

fn position(list: &[Option<Tensor>], t: &Tensor) -> Option<usize> {
    list.iter()
        .position(|x| x.as_ref().is_some_and(|x| x.same(t)))
}

/// Runs a custom Function: `forward` (grad mode off) returns one entry per
/// output (`None` for a non-tensor output); `body` builds the node's
/// backward when the call is recorded. `inputs` has one entry per forward
/// argument (`None` for a non-tensor). Returns the outputs as the caller
/// sees them: the dirty inputs themselves, aliases of returned inputs, or
/// the forward's tensors with history attached.
pub(crate) fn apply_custom(
    name: &'static str,
    ctx: &FunctionCtx,
    inputs: &[Option<Tensor>],
    forward: impl FnOnce(&FunctionCtx) -> Result<Vec<Option<Tensor>>>,
    body: impl FnOnce(&FunctionCtx) -> Box<dyn CustomBody>,
) -> Result<Vec<Option<Tensor>>> {
    let needs: Vec<bool> = inputs
        .iter()
        .map(|t| t.as_ref().is_some_and(|t| t.requires_grad()))
        .collect();
    let executable = is_grad_enabled() && needs.iter().any(|&b| b);
    if executable {
        // torch collects the inputs' edges (reads their grad_fn) first.
        for t in inputs.iter().flatten() {
            t.check_view_history()?;
        }
    }
    {
        let mut st = ctx.0.lock();
        st.name = name;
        st.needs_input_grad = needs;
    }
    let outputs = {
        let _g = no_grad();
        forward(ctx)?
    };
    let (dirty, non_diff, to_save) = {
        let mut st = ctx.0.lock();
        (
            std::mem::take(&mut st.dirty),
            std::mem::take(&mut st.non_differentiable),
            st.to_save.take(),
        )
    };
    let dirty: Vec<Option<Tensor>> = dirty.into_iter().map(Some).collect();

    // torch's `_mark_dirty`: the dirty tensors' versions move on first,
    // whatever happens next (the forward has modified them). The version
    // counter's record of the op is the Function's own name (its node's,
    // less `Backward`).
    let op = name.strip_suffix("Backward").unwrap_or(name);
    for d in dirty.iter().flatten() {
        d.modified_by(op);
    }

    // Check everything before changing anything else.
    for d in dirty.iter().flatten() {
        if position(&outputs, d).is_none() {
            bail!(
                runtime,
                "Some elements marked as dirty during the forward method were not returned as output. The inputs that are modified inplace must all be outputs of the Function."
            );
        }
    }
    let is_diff =
        |t: &Tensor| executable && !non_diff.iter().any(|n| n.same(t)) && t.dtype().is_floating();
    if executable {
        // torch's checks on a modified output, in its order (set_history in
        // `_process_backward_mode_ad`).
        for o in outputs.iter().flatten() {
            if position(&dirty, o).is_none() || !is_diff(o) {
                continue;
            }
            if o.is_leaf() && o.requires_grad() {
                bail!(
                    runtime,
                    "a leaf Variable that requires grad has been used in an in-place operation."
                );
            }
            if o.is_view() && outputs.len() > 1 {
                bail!(
                    runtime,
                    "If your Function modifies inplace an input that is a view of another Tensor, your Function cannot return more than one Tensor. This is not supported by the current autograd engine. You should either make sure the input is not a view (using .clone() for example) or make your Function only return one Tensor (potentially splitting it into two Functions: one doing the inplace that returns a single Tensor and a second one that does the other operations). You can ask on the forum https://discuss.pytorch.org/ if you need help to do this change."
                );
            }
            // A view that may not be rebased, a view of a leaf (its base
            // is a leaf, whether or not the base requires grad).
            o.check_inplace_when(true)?;
        }
    }

    let node = if executable {
        let edges = inputs.iter().flatten().map(|t| t.gradient_edge()).collect();
        let meta = outputs
            .iter()
            .map(|o| match o {
                Some(t) => InputMeta {
                    shape: t.dims(),
                    dtype: t.dtype(),
                },
                None => InputMeta {
                    shape: Default::default(),
                    dtype: DType::F32,
                },
            })
            .collect();
        let custom = CustomNode {
            name,
            ctx: ctx.clone(),
            is_tensor_input: inputs.iter().map(Option::is_some).collect(),
            is_tensor_output: outputs.iter().map(Option::is_some).collect(),
            body: body(ctx),
            ordered: ctx.ordered(),
        };
        Some(Arc::new(Node::new(Box::new(custom), edges, meta)))
    } else {
        None
    };

    let mut result = Vec::with_capacity(outputs.len());
    for (i, o) in outputs.iter().enumerate() {
        let Some(t) = o else {
            result.push(None);
            continue;
        };
        let is_input = position(inputs, t).is_some();
        let is_dirty = position(&dirty, t).is_some();
        let out = match &node {
            Some(node) if is_diff(t) => {
                if is_dirty {
                    // torch resets a recorded dirty output's `.grad` (a
                    // retained gradient of its old history)
                    t.meta().grad = None;
                    rebase_history(t, node, i);
                    t.clone()
                } else if is_input {
                    let alias = t.alias_with_layout(t.layout().clone());
                    alias.set_history(node.clone(), i);
                    alias.mark_view(Some(ViewCreation::InCustomFunction));
                    alias
                } else {
                    t.set_history(node.clone(), i);
                    if t.is_view() {
                        // torch: autograd's view+inplace rebase would replace
                        // the custom backward, so in-place on it is refused.
                        t.set_view_creation(Some(ViewCreation::InCustomFunction));
                    }
                    t.clone()
                }
            }
            _ => {
                if !t.requires_grad() {
                    if is_input && !is_dirty {
                        t.alias_with_layout(t.layout().clone())
                    } else {
                        t.clone()
                    }
                } else if is_input {
                    t.detach()
                } else {
                    if !t.is_view() {
                        // Cannot fail: only views refuse detach_().
                        let _ = t.detach_();
                    }
                    t.clone()
                }
            }
        };
        result.push(Some(out));
    }

    if let Some(node) = &node {
        for t in to_save.iter().flatten().flatten() {
            super::saved::check_saveable(t)?;
        }
        let weak = Arc::downgrade(node);
        let saved = to_save
            .unwrap_or_default()
            .into_iter()
            .map(|t| {
                t.map(|t| {
                    let own = t.grad_fn().is_some_and(|f| Arc::ptr_eq(&f, node));
                    match position(&outputs, &t) {
                        Some(nr) if own || position(&dirty, &t).is_some() => {
                            SavedTensor::output(&t, weak.clone(), nr, name)
                        }
                        _ => SavedTensor::input(&t, name),
                    }
                })
            })
            .collect::<Vec<Option<SavedTensor>>>();
        // A pack hook's error propagates from apply itself.
        if let Some(e) = saved.iter().flatten().find_map(|s| s.pack_error()) {
            let e = e.clone();
            super::saved_hooks::take_pack_error();
            return Err(e);
        }
        let mut st = ctx.0.lock();
        st.saved = saved;
        st.node = weak;
    }
    Ok(result)
}

/// Makes `node`'s output `nr` the new history of `t`, which forward modified
/// in place; a view also rewrites its base's history.
fn rebase_history(t: &Tensor, node: &Arc<Node>, nr: usize) {
    match t.view_base() {
        None => t.set_history(node.clone(), nr),
        Some(base) => {
            let r = t.detach();
            r.set_history(node.clone(), nr);
            crate::ops::inplace::rebase_view(base, t, &r);
        }
    }
}

/// torch's `DelayedError` node: gives `tensors` (detached aliases that
/// require grad) a node that fails with `msg` if a gradient ever reaches it.
/// Used by `once_differentiable`.
pub fn delayed_error(msg: &str, tensors: &[Option<Tensor>]) -> Vec<Option<Tensor>> {
    let aliases: Vec<Option<Tensor>> = tensors
        .iter()
        .map(|t| {
            t.as_ref().map(|t| {
                let a = t.detach();
                if a.dtype().is_floating() {
                    let _ = a.set_requires_grad(true);
                }
                a
            })
        })
        .collect();
    if !is_grad_enabled() || !aliases.iter().flatten().any(Tensor::requires_grad) {
        return aliases;
    }
    let edges = aliases
        .iter()
        .flatten()
        .map(Tensor::gradient_edge)
        .collect();
    let meta = aliases
        .iter()
        .map(|t| InputMeta {
            shape: t.as_ref().map(|t| t.dims()).unwrap_or_default(),
            dtype: t.as_ref().map_or(DType::F32, |t| t.dtype()),
        })
        .collect();
    let node = Arc::new(Node::new(
        Box::new(DelayedError {
            msg: msg.to_owned(),
        }),
        edges,
        meta,
    ));
    aliases
        .iter()
        .enumerate()
        .map(|(i, t)| {
            t.as_ref().map(|t| {
                let out = t.detach();
                out.set_history(node.clone(), i);
                out
            })
        })
        .collect()
}

struct DelayedError {
    msg: String,
}

impl Backward for DelayedError {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("torch::autograd::Error")
    }
    fn apply(&self, _node: &Node, _grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        Err(Error::runtime(self.msg.clone()))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
