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
    pub fn requires_grad(&self) -> bool {
        self.peek_meta(|m| m.requires_grad || m.grad_fn.is_some())
    }
    pub fn is_leaf(&self) -> bool {
        self.peek_meta(|m| m.grad_fn.is_none())
    }
    pub fn grad_fn(&self) -> Option<Arc<Node>> {
        self.peek_meta(|m| m.grad_fn.clone())
    }
    pub fn output_nr(&self) -> usize {
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
    /// torch's `requires_grad_()`: only on leaves, only for floating dtypes.
    pub fn set_requires_grad(&self, requires_grad: bool) -> Result<&Tensor> {
        let mut m = self.meta();
        if m.grad_fn.is_some() {
            if !requires_grad {
                bail!(
                    runtime,
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
                );
            }
            return Ok(self);
        }
        if requires_grad && !self.dtype().is_floating() {
            bail!(
                runtime,
                "only Tensors of floating point dtype can require gradients"
            );
        }
        m.requires_grad = requires_grad;
        Ok(self)
    }
    /// Builder form of `set_requires_grad(true)` for fresh leaves.
    pub fn requires_grad_(self, requires_grad: bool) -> Result<Tensor> {
        self.set_requires_grad(requires_grad)?;
        Ok(self)
    }
    pub fn retain_grad(&self) -> Result<()> {
        let mut m = self.meta();
        if m.grad_fn.is_none() {
            if !m.requires_grad {
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
    /// Sets the history of a fresh op output.
    pub(crate) fn set_history(&self, node: Arc<Node>, output_nr: usize) {
        let mut m = self.meta();
        m.grad_fn = Some(node);
        m.output_nr = output_nr;
    }
    /// Drops history in place (`detach_()`).
    pub fn detach_(&self) -> Result<()> {
        if self.is_view() && self.requires_grad() && !self.is_leaf() {
            bail!(
                runtime,
                "Can't detach views in-place. Use detach() instead."
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
