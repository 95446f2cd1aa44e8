//! AccumulateGrad: the node at the end of every path to a leaf; it adds the
//! incoming gradient into the leaf's `.grad`.

use super::grad_mode::is_grad_enabled;
use super::node::{Backward, InputMeta, Node};
use crate::kernels::overlap::is_non_overlapping_dense;
use crate::tensor::{Element, Layout, Tensor};
use crate::{bail, Result};
use parking_lot::Mutex;
use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

pub struct AccumulateGrad {
    /// The leaf; replaced when the leaf's `.data` is set (see
    /// `Tensor::replace_data`).
    variable: Mutex<Tensor>,
}

impl AccumulateGrad {
    /// The leaf this node accumulates into.
    pub fn variable(&self) -> Tensor {
        self.variable.lock().clone()
    }
    pub(crate) fn set_variable(&self, leaf: Tensor) {
        *self.variable.lock() = leaf;
    }
    pub(crate) fn new_node(leaf: &Tensor) -> Arc<Node> {
        let meta = vec![InputMeta {
            shape: leaf.dims(),
            dtype: leaf.dtype(),
        }];
        Arc::new(Node::new(
            Box::new(AccumulateGrad {
                variable: Mutex::new(leaf.clone()),
            }),
            Vec::new(),
            meta,
        ))
    }
}

/// The first gradient stored as `variable.grad` (torch's `accumulateGrad`
/// without a `.grad` yet): `g` itself when no graph is being built (grad
/// mode off), nobody else holds it and it obeys the layout contract; else
/// a copy laid out by the contract (recorded when grad mode is on, so
/// `create_graph=True` gives the `.grad` a history).
///
/// "Nobody else holds it" is torch's test, on the tensor handle: a view
/// that a backward made of a larger gradient (cat's, split's, narrow's
/// slices) is kept as it is, sharing that gradient's buffer (with the
/// `grad_output` passed to `backward`, when the slices are its own), as
/// torch keeps it. A tensor that is not a view is kept only when its
/// buffer is its own.
fn first_grad(variable: &Tensor, g: Tensor) -> Result<Tensor> {
    let exclusive =
        Arc::strong_count(&g.0) == 1 && (g.is_view() || Arc::strong_count(&g.storage) == 1);
    if !is_grad_enabled() && exclusive && obeys_layout_contract(g.layout(), variable.layout()) {
        return Ok(g.detach());
    }
    clone_obey_contract(&g, variable)
}

/// torch's `clone_obey_contract`: a copy of `g` with `variable`'s strides
/// when `variable` is non-overlapping and dense (an empty tensor of those
/// strides, `copy_`'d into: version 1), else a contiguous `clone`.
fn clone_obey_contract(g: &Tensor, variable: &Tensor) -> Result<Tensor> {
    let vl = variable.layout();
    if !is_non_overlapping_dense(vl) {
        return g.clone_contiguous();
    }
    let layout = Layout {
        shape: vl.shape.clone(),
        strides: vl.strides.clone(),
        offset: 0,
    };
    // Dense: the copy below writes every element of the buffer.
    let buf = crate::dispatch_all!(g.dtype(), T => {
        T::wrap(crate::tensor::pool::buffer::<T>(layout.storage_extent()))
    });
    let out = Tensor::from_data(buf, &[layout.storage_extent()])
        .alias_with_layout(layout)
        .data();
    if is_grad_enabled() && g.requires_grad() {
        out.copy_(g)?;
    } else {
        crate::kernels::copy::copy_into(&out, g)?;
        out.modified_by("copy_");
    }
    Ok(out)
}

/// torch's `obeys_layout_contract(grad, variable)` (same shapes): a
/// non-overlapping dense variable's gradient has its strides (size-1 dims
/// aside, which only may not have stride 0); any other variable's gradient
/// is contiguous.
fn obeys_layout_contract(g: &Layout, variable: &Layout) -> bool {
    if !is_non_overlapping_dense(variable) {
        return g.numel() == 0 || g.is_contiguous();
    }
    g.shape
        .iter()
        .zip(&g.strides)
        .zip(&variable.strides)
        .all(|((&d, &gs), &vs)| if d == 1 { gs != 0 } else { gs == vs })
}

/// Adds `g` into the `.grad` of leaf `t` (AccumulateGrad): the first
/// gradient as [`first_grad`] stores it, later ones added in place (out of
/// place when building a graph).
pub(crate) fn accumulate_into(t: &Tensor, g: Tensor) -> Result<()> {
    let new = match t.grad() {
        None => first_grad(t, g)?,
        Some(old) => {
            if is_grad_enabled() {
                old.add(&g)?
            } else {
                crate::kernels::binary::add_assign(&old, &g)?;
                old.modified_by("AccumulateGrad");
                return Ok(());
            }
        }
    };
    t.meta().grad = Some(new);
    Ok(())
}

/// Adds `g` into the `.grad` of a tensor that retains its grad (torch's
/// retain_grad hook): a contiguous clone first, then `grad + g` (a new
/// tensor each time).
pub(crate) fn retain_into(t: &Tensor, g: &Tensor) -> Result<()> {
    let new = match t.grad() {
        None => g.clone_contiguous()?,
        Some(old) => old.add(g)?,
    };
    t.meta().grad = Some(new);
    Ok(())
}

impl Backward for AccumulateGrad {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("torch::autograd::AccumulateGrad")
    }
    fn apply(&self, _node: &Node, mut grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        // The leaf's own hooks ran in the engine (its tensor pre-hooks).
        let Some(g) = grads.pop().flatten() else {
            return Ok(Vec::new());
        };
        let variable = self.variable();
        // As torch: a leaf that got a history since the graph was built
        // (detach_() and then an in-place op with an input that requires
        // grad) is refused, before the requires_grad test.
        if variable.peek_meta(|m| m.grad_fn.is_some()) {
            bail!(
                runtime,
                "leaf variable has been moved into the graph interior"
            );
        }
        // As torch: a leaf whose requires_grad was turned off (or that was
        // detach_()ed) after the graph was built gets nothing.
        if !variable.requires_grad() {
            return Ok(Vec::new());
        }
        accumulate_into(&variable, g)?;
        let post: Vec<_> = variable.peek_meta(|m| {
            m.post_accumulate_hooks
                .iter()
                .map(|(_, h)| h.clone())
                .collect()
        });
        for h in post {
            h(&variable)?;
        }
        Ok(Vec::new())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
