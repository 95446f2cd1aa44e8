//! The autograd state a tensor carries (torch's AutogradMeta): its grad,
//! grad_fn, hooks and tangents, and the `Tensor` methods that read and
//! change it. The tensor layer keeps it in an untyped slot, so that layer
//! does not depend on this one.

use super::node::{Edge, Node};
use super::AccumulateGrad;
use crate::tensor::Tensor;
use crate::{bail, Result};
use parking_lot::{MappedMutexGuard, MutexGuard};
use std::sync::{Arc, Weak};

/// A hook on a tensor's gradient: may return a replacement gradient. As in
/// torch it is also called when the gradient is undefined (`None`), and may
/// not replace an undefined gradient.
pub type TensorHook = Arc<dyn Fn(Option<&Tensor>) -> Result<Option<Tensor>> + Send + Sync>;

/// A hook run after a leaf's `.grad` was updated.
pub type PostAccumulateHook = Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>;

/// Autograd state of one tensor.
#[derive(Default)]
pub struct AutogradMeta {
    /// Set on leaves by the user (`requires_grad_()`); non-leaves require
    /// grad because they have a `grad_fn`.
    pub requires_grad: bool,
    pub grad: Option<Tensor>,
    pub grad_fn: Option<Arc<Node>>,
    pub output_nr: usize,
    pub grad_accumulator: Weak<Node>,
    pub retains_grad: bool,
    /// Hooks of a leaf, run by its AccumulateGrad before accumulation.
    pub hooks: Vec<(u64, TensorHook)>,
    /// Hooks run after `.grad` has been accumulated into a leaf.
    pub post_accumulate_hooks: Vec<(u64, PostAccumulateHook)>,
    /// Forward-AD tangents, by level id (see `autograd::forward`).
    pub fw_grads: Vec<(u64, Tensor)>,
    /// How this view was made, when that forbids modifying it in place
    /// with autograd (torch's `CreationMeta`); `None` for ordinary views
    /// and for tensors that are not views.
    pub view_creation: Option<ViewCreation>,
    /// For a view made while grad mode was on: the version counter's value
    /// its `grad_fn` reflects. When the base (or another view of it) is
    /// modified in place the counter moves on, and the view's history is
    /// rebuilt from the base's (torch's `attr_version`).
    pub view_version: Option<u64>,
}

/// Why a view may not be modified in place while autograd records (torch's
/// `CreationMeta` other than `DEFAULT`): autograd cannot rebase its history
/// onto the in-place op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViewCreation {
    /// Returned (or an input returned as-is) by a custom Function.
    InCustomFunction,
    /// One of several views returned by one op (`unbind`, `split`, `chunk`).
    MultiOutputNode,
    /// Made while grad mode was off, of a tensor that may require grad.
    NoGradMode,
    /// Made in inference mode.
    InferenceMode,
}

impl ViewCreation {
    /// The creation meta of a view of `parent` made now by an op with
    /// `multi_output` view outputs (torch's `propagate_creation_meta`: a
    /// view of a restricted view stays restricted; inference mode wins).
    pub(crate) fn for_new_view(parent: Option<ViewCreation>, multi_output: bool) -> Option<Self> {
        let new = if super::grad_mode::is_inference_mode_enabled() {
            Some(ViewCreation::InferenceMode)
        } else if !super::grad_mode::is_grad_enabled() {
            Some(ViewCreation::NoGradMode)
        } else if multi_output {
            Some(ViewCreation::MultiOutputNode)
        } else {
            None
        };
        match (parent, new) {
            (Some(ViewCreation::InferenceMode), _) | (_, None) => parent,
            (_, new) => new,
        }
    }
}

impl Tensor {
    /// This tensor's autograd state, made on first use.
    pub(crate) fn meta(&self) -> MappedMutexGuard<'_, AutogradMeta> {
        MutexGuard::map(self.0.autograd.lock(), |slot| {
            slot.get_or_insert_with(|| Box::new(AutogradMeta::default()))
                .downcast_mut::<AutogradMeta>()
                .expect("a tensor's autograd slot holds only AutogradMeta")
        })
    }
    /// This tensor's autograd state if it has one (a tensor that never met
    /// autograd has none: no grad, no history, no hooks).
    pub(crate) fn existing_meta(&self) -> Option<MappedMutexGuard<'_, AutogradMeta>> {
        MutexGuard::try_map(self.0.autograd.lock(), |slot| {
            slot.as_mut().map(|m| {
                m.downcast_mut::<AutogradMeta>()
                    .expect("a tensor's autograd slot holds only AutogradMeta")
            })
        })
        .ok()
    }
    /// Reads this tensor's autograd state without making one (a tensor
    /// that never met autograd reads as the default state).
    pub(crate) fn peek_meta<R>(&self, f: impl FnOnce(&AutogradMeta) -> R) -> R {
        let slot = self.0.autograd.lock();
        match slot.as_ref() {
            Some(m) => f(m
                .downcast_ref::<AutogradMeta>()
                .expect("a tensor's autograd slot holds only AutogradMeta")),
            None => f(&AutogradMeta::default()),
        }
    }
    /// True for a leaf marked by `requires_grad_()`, a tensor with a
    /// `grad_fn`, and (as in torch) a view of a tensor that requires grad,
    /// also one made under `no_grad` or before its base required grad.
    pub fn requires_grad(&self) -> bool {
        self.refresh_view_history();
        let (own, of_base) = self.peek_meta(|m| {
            let own = m.requires_grad || m.grad_fn.is_some();
            // A differentiable view (made by a view op; not `detach()`)
            // requires grad when its base does.
            let diff_view = m.view_version.is_some()
                || matches!(
                    m.view_creation,
                    Some(ViewCreation::NoGradMode | ViewCreation::InferenceMode)
                );
            (own, diff_view)
        });
        own || (of_base && self.view_base().is_some_and(|b| b.requires_grad()))
    }
    /// How this view was made, when that restricts in-place ops on it.
    pub fn view_creation(&self) -> Option<ViewCreation> {
        self.peek_meta(|m| m.view_creation)
    }
    /// Marks a fresh view output of an op: its in-place restriction, and
    /// the version its history reflects (torch's `attr_version`).
    pub(crate) fn mark_view(&self, c: Option<ViewCreation>) {
        let v = self.version();
        let mut m = self.meta();
        m.view_creation = c;
        m.view_version = Some(v);
    }
    /// A view whose base was modified in place since its history was set
    /// gets a new history: an `AsStridedBackward0` of the base's current
    /// one, as torch's `grad_fn` getter regenerates a view's `grad_fn`, so
    /// gradients flow through the in-place op. As in torch, nothing happens
    /// (and the view stays behind) while neither the view has a history
    /// nor its base requires grad, and a view whose history autograd may
    /// not rebuild (a restricted [`ViewCreation`]) keeps its old one: its
    /// error is [`Self::check_view_history`]'s, raised where torch reads
    /// the view's `grad_fn`.
    fn refresh_view_history(&self) {
        if self.stale_view().is_some_and(|restricted| !restricted) {
            let base = self.view_base().expect("a stale view has a base");
            let node = crate::ops::inplace::view_of_base_node(base, self);
            let now = self.version();
            self.set_history(node, 0);
            self.meta().view_version = Some(now);
        }
    }
    /// For a view whose history no longer reflects its version counter and
    /// that torch's `grad_fn` getter would regenerate: whether its
    /// [`ViewCreation`] forbids that (torch then raises). `None` for
    /// anything else.
    fn stale_view(&self) -> Option<bool> {
        let base = self.view_base()?;
        let now = self.version();
        let (stale, has_fn, restricted) = self.peek_meta(|m| {
            (
                m.view_version.is_some_and(|v| v != now),
                m.grad_fn.is_some(),
                m.view_creation.is_some(),
            )
        });
        (stale && (has_fn || base.requires_grad())).then_some(restricted)
    }
    /// torch's `grad_fn` getter on a view whose base (or another view of
    /// it) was modified in place since the view was made: the error when
    /// autograd may not rebuild its history (a view made by a multi-output
    /// op, under no_grad or inference mode, or by a custom Function). Run
    /// wherever torch reads a tensor's `grad_fn`: the `grad_fn`/`is_leaf`
    /// attributes, ops recording a graph, backward, `retain_grad`, hooks.
    pub fn check_view_history(&self) -> Result<()> {
        match self.stale_view() {
            Some(true) => self.view_rebase_error(true),
            _ => Ok(()),
        }
    }
    /// Records that this view's history reflects the current version.
    pub(crate) fn set_view_version_current(&self) {
        let v = self.version();
        let mut m = self.meta();
        if m.view_version.is_some() {
            m.view_version = Some(v);
        }
    }
    pub(crate) fn set_view_creation(&self, c: Option<ViewCreation>) {
        if c.is_some() || self.view_creation().is_some() {
            self.meta().view_creation = c;
        }
    }
    /// torch's `handle_view_on_rebase`: the error for an in-place op on a
    /// view whose history autograd cannot rebase, if this is one.
    pub(crate) fn check_view_rebase(&self) -> Result<()> {
        self.view_rebase_error(false)
    }
    /// `handle_view_on_rebase`'s error: `indirect` when the base or another
    /// view of it was modified, not this view itself.
    fn view_rebase_error(&self, indirect: bool) -> Result<()> {
        let Some(c) = self.view_creation() else {
            return Ok(());
        };
        let modified = match indirect {
            true => "its base or another view of its base has been",
            false => "is being",
        };
        let grad_fn = self.grad_fn();
        let short = |name: &str| -> String {
            let t = name.trim_end_matches(|ch: char| ch.is_ascii_digit());
            t.strip_suffix("Backward").unwrap_or(t).to_string()
        };
        let mut msg = match (&grad_fn, c) {
            (Some(f), ViewCreation::InferenceMode | ViewCreation::NoGradMode) => format!(
                "Output {} of {} is a view of a view which was created in",
                self.output_nr(),
                short(&f.name())
            ),
            (None, _) => "A view was created in".to_string(),
            (Some(f), _) => format!(
                "Output {} of {} is a view and {modified} modified inplace.",
                self.output_nr(),
                short(&f.name())
            ),
        };
        if grad_fn.is_none() || matches!(c, ViewCreation::InferenceMode | ViewCreation::NoGradMode)
        {
            msg.push_str(&match c {
                ViewCreation::InferenceMode => {
                    format!(" inference mode and {modified} modified inplace in normal mode.")
                }
                _ => {
                    format!(" no_grad mode and {modified} modified inplace with grad mode enabled.")
                }
            });
        }
        msg.push_str(match c {
            ViewCreation::MultiOutputNode => " This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.",
            ViewCreation::NoGradMode => " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).",
            ViewCreation::InferenceMode => " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the inference_mode block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).",
            ViewCreation::InCustomFunction => " This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.",
        });
        Err(crate::Error::runtime(msg))
    }
    pub fn is_leaf(&self) -> bool {
        self.refresh_view_history();
        self.peek_meta(|m| m.grad_fn.is_none())
    }
    pub fn grad_fn(&self) -> Option<Arc<Node>> {
        self.refresh_view_history();
        self.peek_meta(|m| m.grad_fn.clone())
    }
    pub fn output_nr(&self) -> usize {
        self.refresh_view_history();
        self.peek_meta(|m| m.output_nr)
    }
    pub fn grad(&self) -> Option<Tensor> {
        self.peek_meta(|m| m.grad.clone())
    }
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        if let Some(g) = &grad {
            if g.dtype() != self.dtype() {
                bail!(
                    runtime,
                    "attempting to assign a gradient with dtype '{}' to a tensor with grad_dtype '{}'. The gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may break downstream systems that assume they match.",
                    g.dtype().cpp_type_name(),
                    self.dtype().scalar_type_name()
                );
            }
            if g.shape() != self.shape() {
                bail!(
                    runtime,
                    "attempting to assign a gradient of size '{:?}' to a tensor of size '{:?}'. Please ensure that the gradient and the tensor are the same size",
                    g.shape(),
                    self.shape()
                );
            }
        }
        self.meta().grad = grad;
        Ok(())
    }
    /// torch's `requires_grad_()`: only for floating dtypes (checked first,
    /// also on a non-leaf, as torch: an integer tensor that got a `grad_fn`
    /// from a float written into it still refuses), and only `False` on
    /// leaves (`True` on a non-leaf does nothing).
    pub fn set_requires_grad(&self, requires_grad: bool) -> Result<&Tensor> {
        if requires_grad && !self.dtype().is_floating() {
            bail!(
                runtime,
                "only Tensors of floating point dtype can require gradients"
            );
        }
        self.check_inference_requires_grad(requires_grad)?;
        let mut m = self.meta();
        if m.grad_fn.is_some() {
            if !requires_grad {
                bail!(runtime, "{}", requires_grad_leaf_error(false));
            }
            return Ok(self);
        }
        m.requires_grad = requires_grad;
        Ok(self)
    }
    /// torch's `tensor.requires_grad = value` setter: a non-leaf refuses
    /// either value, then the dtype (with the setter's own message).
    pub fn set_requires_grad_attr(&self, requires_grad: bool) -> Result<&Tensor> {
        if !self.is_leaf() {
            bail!(runtime, "{}", requires_grad_leaf_error(requires_grad));
        }
        if requires_grad && !self.dtype().is_floating() {
            bail!(
                runtime,
                "only Tensors of floating point and complex dtype can require gradients"
            );
        }
        self.check_inference_requires_grad(requires_grad)?;
        self.meta().requires_grad = requires_grad;
        Ok(self)
    }
    /// torch's refusal to make an inference tensor require grad outside
    /// inference mode.
    fn check_inference_requires_grad(&self, requires_grad: bool) -> Result<()> {
        if requires_grad && self.is_inference() && !super::grad_mode::is_inference_mode_enabled() {
            bail!(
                runtime,
                "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."
            );
        }
        Ok(())
    }
    /// Builder form of `set_requires_grad(true)` for fresh leaves.
    pub fn requires_grad_(self, requires_grad: bool) -> Result<Tensor> {
        self.set_requires_grad(requires_grad)?;
        Ok(self)
    }
    pub fn retain_grad(&self) -> Result<()> {
        let requires_grad = self.requires_grad();
        if self.peek_meta(|m| m.grad_fn.is_some()) {
            // torch reads a non-leaf's grad_fn here
            self.check_view_history()?;
        }
        let mut m = self.meta();
        if m.grad_fn.is_none() {
            if !requires_grad {
                bail!(
                    runtime,
                    "can't retain_grad on Tensor that has requires_grad=False"
                );
            }
            return Ok(()); // leaves always keep their grad
        }
        if m.retains_grad {
            return Ok(());
        }
        m.retains_grad = true;
        let node = m.grad_fn.clone().unwrap();
        let nr = m.output_nr;
        drop(m);
        node.add_retain_grad(nr, Arc::downgrade(&self.0));
        Ok(())
    }
    pub fn retains_grad(&self) -> bool {
        self.peek_meta(|m| m.retains_grad)
    }
    /// Sets the history of a fresh op output, or the new history of a
    /// tensor modified in place. As torch's `update_tensor_hooks_on_new_gradfn`:
    /// a tensor that retains its grad moves its retain_grad hook to the new
    /// node (the hooks registered so far stay with the old one).
    pub(crate) fn set_history(&self, node: Arc<Node>, output_nr: usize) {
        let mut m = self.meta();
        let old = m.grad_fn.replace(node.clone());
        let old_nr = std::mem::replace(&mut m.output_nr, output_nr);
        let retains = m.retains_grad;
        drop(m);
        if retains {
            if let Some(old) = old {
                old.remove_retain_grad(old_nr, &self.0);
            }
            node.add_retain_grad(output_nr, Arc::downgrade(&self.0));
        }
    }
    /// Drops history in place (`detach_()`).
    pub fn detach_(&self) -> Result<()> {
        // torch refuses every differentiable view (one a view op made;
        // `detach()` of a view is not one).
        let diff_view = self.is_view()
            && self.peek_meta(|m| m.view_version.is_some() || m.view_creation.is_some());
        if diff_view || (self.is_view() && self.requires_grad() && !self.is_leaf()) {
            bail!(
                runtime,
                "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
            );
        }
        if let Some(mut m) = self.existing_meta() {
            m.grad_fn = None;
            m.output_nr = 0;
            m.requires_grad = false;
        }
        Ok(())
    }
    /// torch's `.data = data`: the tensor that takes this one's place, with
    /// `data`'s memory, layout and dtype and this tensor's version counter
    /// and autograd state (grad, grad_fn, hooks). The state moves: this
    /// handle is left a plain tensor, and the AccumulateGrad of graphs that
    /// already end at it adds into the new one (unless shape or dtype
    /// changed, as torch then starts a new accumulator). Those graphs keep
    /// the values they saved.
    pub fn replace_data(&self, data: &Tensor) -> Result<Tensor> {
        let mut m = self.meta();
        if (m.requires_grad || m.grad_fn.is_some()) && !data.dtype().is_floating() {
            bail!(
                runtime,
                "data set to a tensor that requires gradients must be floating point or complex dtype"
            );
        }
        let mut moved = std::mem::take(&mut *m);
        drop(m);
        let new = self.with_data_of(data);
        if let Some(acc) = moved.grad_accumulator.upgrade() {
            let same_kind = data.shape() == self.shape() && data.dtype() == self.dtype();
            match acc.as_any().downcast_ref::<AccumulateGrad>() {
                Some(acc) if same_kind => acc.set_variable(new.clone()),
                _ => moved.grad_accumulator = Weak::new(),
            }
        }
        if let (true, Some(f)) = (moved.retains_grad, &moved.grad_fn) {
            f.add_retain_grad(moved.output_nr, Arc::downgrade(&new.0));
        }
        *new.meta() = moved;
        Ok(new)
    }
    /// The edge a gradient for this tensor flows along: its grad_fn, or its
    /// AccumulateGrad if it is a leaf that requires grad.
    pub fn gradient_edge(&self) -> Option<Edge> {
        self.refresh_view_history();
        let mut m = self.existing_meta()?;
        if let Some(f) = &m.grad_fn {
            return Some(Edge {
                node: f.clone(),
                input_nr: m.output_nr,
            });
        }
        if !m.requires_grad {
            return None;
        }
        if let Some(acc) = m.grad_accumulator.upgrade() {
            return Some(Edge {
                node: acc,
                input_nr: 0,
            });
        }
        let acc = AccumulateGrad::new_node(self);
        m.grad_accumulator = Arc::downgrade(&acc);
        Some(Edge {
            node: acc,
            input_nr: 0,
        })
    }
    /// The AccumulateGrad node of a leaf that requires grad, if one exists.
    pub fn grad_accumulator(&self) -> Option<Arc<Node>> {
        if !self.is_leaf() || !self.requires_grad() {
            return None;
        }
        self.gradient_edge().map(|e| e.node)
    }
    pub fn add_hook(&self, id: u64, hook: TensorHook) {
        let m = self.meta();
        match m.grad_fn.clone() {
            Some(node) => {
                let nr = m.output_nr;
                drop(m);
                node.add_tensor_pre_hook(id, nr, hook);
            }
            None => {
                drop(m);
                self.meta().hooks.push((id, hook));
            }
        }
    }
    pub fn remove_hook(&self, id: u64) -> bool {
        let Some(mut m) = self.existing_meta() else {
            return false;
        };
        let before = m.hooks.len() + m.post_accumulate_hooks.len();
        m.hooks.retain(|(i, _)| *i != id);
        m.post_accumulate_hooks.retain(|(i, _)| *i != id);
        let removed = before != m.hooks.len() + m.post_accumulate_hooks.len();
        let node = m.grad_fn.clone();
        drop(m);
        removed || node.map(|n| n.remove_hook(id)).unwrap_or(false)
    }
}

/// torch's `requires_grad_leaf_error`.
fn requires_grad_leaf_error(requires_grad: bool) -> String {
    let mut s = String::from("you can only change requires_grad flags of leaf variables.");
    if !requires_grad {
        s.push_str(" If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
    }
    s
}
