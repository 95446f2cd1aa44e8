//! AccumulateGrad: the node at the end of every path to a leaf; it adds the
//! incoming gradient into the leaf's `.grad`.

use super::grad_mode::is_grad_enabled;
use super::node::{Backward, InputMeta, Node};
use crate::tensor::layout::contiguous_strides;
use crate::tensor::{Element, Layout, Tensor};
use crate::Result;
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

/// Gives a gradient the layout of its parameter (the autograd docs'
/// layout contract): a non-overlapping dense parameter gets a gradient with
/// its strides, any other a contiguous one. Reuses `g` when nobody else can
/// see it; with create_graph, keeps `g` and its history.
fn grad_for(param: &Tensor, g: Tensor) -> Result<Tensor> {
    if is_grad_enabled() {
        return Ok(g);
    }
    let pl = param.layout();
    let strides = if is_non_overlapping_dense(pl) {
        pl.strides.clone()
    } else {
        contiguous_strides(&pl.shape)
    };
    let exclusive =
        Arc::strong_count(&g.0) == 1 && Arc::strong_count(&g.storage) == 1 && !g.is_view();
    if exclusive && g.storage_offset() == 0 && g.strides() == &strides[..] {
        return Ok(g.detach());
    }
    let layout = Layout {
        shape: pl.shape.clone(),
        strides,
        offset: 0,
    };
    // Dense either way: the copy below writes every element of the buffer.
    let buf = crate::dispatch_all!(g.dtype(), T => {
        T::wrap(crate::tensor::pool::buffer::<T>(layout.storage_extent()))
    });
    let out = Tensor::from_data(buf, &[layout.storage_extent()])
        .alias_with_layout(layout)
        .data();
    crate::kernels::copy::copy_into(&out, &g)?;
    Ok(out)
}

fn is_non_overlapping_dense(l: &Layout) -> bool {
    let mut dims: Vec<(usize, usize)> = l
        .shape
        .iter()
        .copied()
        .zip(l.strides.iter().copied())
        .collect();
    dims.sort_by_key(|&(_, s)| s);
    let mut expected = 1;
    for (d, s) in dims {
        if d == 1 {
            continue;
        }
        if s != expected {
            return false;
        }
        expected *= d;
    }
    true
}

/// Adds `g` into `t.grad` (shared by AccumulateGrad and retain_grad).
pub(crate) fn accumulate_into(t: &Tensor, g: Tensor) -> Result<()> {
    let old = t.grad();
    let new = match old {
        None => grad_for(t, g)?,
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
