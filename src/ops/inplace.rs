//! In-place ops. Every in-place op goes through [`Tensor::apply_inplace`]:
//! the new value is computed out of place (recording the graph as usual),
//! written into the tensor's memory, the version is bumped and the tensor's
//! history is rebased onto the op. In-place on a view also rewrites the
//! base's history (torch's CopySlices), so the base's gradient flows
//! through the op too.

use crate::autograd::node::{Backward, Edge, InputMeta, Node};
use crate::autograd::{is_grad_enabled, no_grad};
use crate::kernels::binary::apply2_inplace;
use crate::kernels::copy::{check_can_cast, copy_into, fill};
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::{DType, Layout, Scalar, Tensor};
use crate::{bail, Result};
use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

impl Tensor {
    /// Errors torch raises before any in-place op on `self`.
    pub(crate) fn check_inplace(&self) -> Result<()> {
        if !is_grad_enabled() {
            return Ok(());
        }
        if self.is_leaf() && self.requires_grad() {
            if self.is_view() {
                bail!(runtime, "a view of a leaf Variable that requires grad is being used in an in-place operation.");
            }
            bail!(
                runtime,
                "a leaf Variable that requires grad is being used in an in-place operation."
            );
        }
        // torch: a view that requires grad may not be modified in place when
        // its base is a leaf (whether or not the base requires grad).
        if let Some(base) = self.view_base() {
            if self.requires_grad() && base.is_leaf() {
                bail!(runtime, "a view of a leaf Variable that requires grad is being used in an in-place operation.");
            }
        }
        Ok(())
    }

    /// Runs an in-place op whose out-of-place value is `f(self_value)`;
    /// `others` are the op's other tensor inputs (for requires-grad checks).
    pub fn apply_inplace(
        &self,
        others: &[&Tensor],
        f: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<()> {
        self.check_inplace()?;
        crate::autograd::saved_hooks::before_inplace(self)?;
        let tracked =
            is_grad_enabled() && (self.requires_grad() || others.iter().any(|t| t.requires_grad()));
        if !tracked {
            let r = {
                let _g = no_grad();
                f(self)?
            };
            check_can_cast(r.dtype(), self.dtype())?;
            if r.shape() != self.shape() {
                bail!(
                    runtime,
                    "output with shape {:?} doesn't match the broadcast shape {:?}",
                    self.shape(),
                    r.shape()
                );
            }
            copy_into(self, &r)?;
            self.bump_version();
            crate::autograd::forward::inplace_update(self, &r)?;
            return Ok(());
        }
        // A stand-in for self's current value with self's autograd identity,
        // so what the op saves survives the overwrite below.
        let before = crate::dispatch_all!(self.dtype(), T => Tensor::from(crate::kernels::copy::contiguous_as::<T>(self)));
        if let Some(node) = self.grad_fn() {
            before.set_history(node, self.output_nr());
        }
        before.copy_fw_grads_from(self);
        let r = f(&before)?;
        check_can_cast(r.dtype(), self.dtype())?;
        let r = r.to_dtype(self.dtype())?;
        if r.shape() != self.shape() {
            bail!(
                runtime,
                "output with shape {:?} doesn't match the broadcast shape {:?}",
                self.shape(),
                r.shape()
            );
        }
        copy_into(self, &r)?;
        self.bump_version();
        crate::autograd::forward::inplace_update(self, &r)?;
        match self.view_base() {
            None => match r.gradient_edge() {
                Some(e) => self.set_history(e.node, e.input_nr),
                None => {
                    self.meta().grad_fn = None;
                }
            },
            Some(base) => rebase_view(base, self, &r),
        }
        Ok(())
    }

    /// `self.copy_(src)`: broadcast, cast, differentiable w.r.t. `src`.
    pub fn copy_(&self, src: &Tensor) -> Result<()> {
        let mut res = Ok(());
        if self.try_fast_inplace(self.untracked_operand(src), |s| res = copy_into(s, src))? {
            return res;
        }
        let shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
        let dt = self.dtype();
        self.apply_inplace(&[src], |_| {
            let v = src.expand(&shape)?;
            let v = if v.dtype() == dt { v } else { v.to_dtype(dt)? };
            v.clone_tensor()
        })
    }
    pub fn fill_(&self, value: Scalar) -> Result<()> {
        let mut res = Ok(());
        if self.try_fast_inplace(true, |s| res = fill(s, value))? {
            return res;
        }
        let dt = self.dtype();
        let shape = self.dims();
        self.apply_inplace(&[], |_| Ok(Tensor::full(&shape, value, dt)))
    }
    pub fn zero_(&self) -> Result<()> {
        self.fill_(Scalar::Int(0))
    }
    pub fn add_(&self, other: &Tensor) -> Result<()> {
        if self.try_fast_binary_inplace(other, Arith::Add)? {
            return Ok(());
        }
        self.apply_inplace(&[other], |s| s.add(other))
    }
    pub fn sub_(&self, other: &Tensor) -> Result<()> {
        if self.try_fast_binary_inplace(other, Arith::Sub)? {
            return Ok(());
        }
        self.apply_inplace(&[other], |s| s.sub(other))
    }
    pub fn mul_(&self, other: &Tensor) -> Result<()> {
        if self.try_fast_binary_inplace(other, Arith::Mul)? {
            return Ok(());
        }
        self.apply_inplace(&[other], |s| s.mul(other))
    }
    pub fn div_(&self, other: &Tensor) -> Result<()> {
        if self.try_fast_binary_inplace(other, Arith::Div)? {
            return Ok(());
        }
        self.apply_inplace(&[other], |s| s.div(other))
    }

    /// True when `other` lets an in-place op on self skip the recorded path:
    /// it records no graph or tangent and broadcasts to self's shape.
    fn untracked_operand(&self, other: &Tensor) -> bool {
        let records = (is_grad_enabled() && other.requires_grad()) || other.has_fw_grad();
        !records
            && broadcast_shapes(self.shape(), other.shape()).is_ok_and(|s| s[..] == *self.shape())
    }

    /// The untracked path of `add_`/`sub_`/`mul_`/`div_`: computes in self's
    /// memory when [`Self::untracked_operand`] holds and the result dtype is
    /// self's. Returns false for every other case, which `apply_inplace`
    /// handles (and reports the errors of).
    fn try_fast_binary_inplace(&self, other: &Tensor, op: Arith) -> Result<bool> {
        let dt = self.dtype();
        let dtype_ok = match op {
            Arith::Div => dt.is_floating(),
            _ => dt != DType::Bool,
        } && self.result_type(other) == dt;
        let eligible = dtype_ok && self.untracked_operand(other);
        let mut res = Ok(());
        let done = self.try_fast_inplace(eligible, |s| {
            let o = other.cast_raw(dt);
            res = match dt {
                DType::F32 => arith_inplace::<f32>(s, &o, op),
                DType::F64 => arith_inplace::<f64>(s, &o, op),
                DType::I64 => arith_inplace::<i64>(s, &o, op),
                DType::Bool => Err(crate::Error::runtime("bool arithmetic has no fast path")),
            };
        })?;
        res?;
        Ok(done)
    }
}

/// `dst = dst (op) src` in dst's memory, both of dtype `T`.
fn arith_inplace<T>(dst: &Tensor, src: &Tensor, op: Arith) -> Result<()>
where
    T: crate::tensor::Element + std::ops::Add<Output = T> + std::ops::Sub<Output = T>,
    T: std::ops::Mul<Output = T> + std::ops::Div<Output = T>,
{
    match op {
        Arith::Add => apply2_inplace::<T>(dst, src, |x, y| x + y),
        Arith::Sub => apply2_inplace::<T>(dst, src, |x, y| x - y),
        Arith::Mul => apply2_inplace::<T>(dst, src, |x, y| x * y),
        Arith::Div => apply2_inplace::<T>(dst, src, |x, y| x / y),
    }
}

/// The arithmetic in-place ops with an untracked fast path.
#[derive(Clone, Copy)]
enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

/// After in-place op result `r` was written into `view`: the base's new
/// history is CopySlices(old base, r); the view's is a view of that.
pub(crate) fn rebase_view(base: &Tensor, view: &Tensor, r: &Tensor) {
    let base_layout = base.layout().clone();
    let view_layout = view.layout().clone();
    let copy_slices = Arc::new(Node::new(
        Box::new(CopySlices {
            base: base_layout.clone(),
            view: view_layout.clone(),
        }),
        vec![base.gradient_edge(), r.gradient_edge()],
        vec![InputMeta {
            shape: base.dims(),
            dtype: base.dtype(),
        }],
    ));
    base.set_history(copy_slices.clone(), 0);
    let view_node = Arc::new(Node::new(
        Box::new(ViewOfBase {
            base: base_layout,
            view: view_layout,
        }),
        vec![Some(Edge {
            node: copy_slices,
            input_nr: 0,
        })],
        vec![InputMeta {
            shape: view.dims(),
            dtype: view.dtype(),
        }],
    ));
    view.set_history(view_node, 0);
}

/// A view function placing `target` (a layout in storage coordinates) onto
/// a 1-D tensor that stands for the storage, whatever its stride/offset.
fn onto(target: &Layout) -> crate::ops::view::ViewFn {
    let target = target.clone();
    Arc::new(move |l: &Layout| {
        let s = l.strides[0];
        Layout {
            shape: target.shape.clone(),
            strides: target.strides.iter().map(|&x| x * s).collect(),
            offset: l.offset + target.offset * s,
        }
    })
}

/// Moves a gradient between two layouts over one storage: writes `g` at
/// `from` into a zeroed storage-sized buffer (then zeroes `zero_region`),
/// reads it back at `to`. Built from differentiable ops, so in-place ops on
/// views support double backward.
fn relayout(
    g: &Tensor,
    from: &Layout,
    to: &Layout,
    zero_region: Option<&Layout>,
) -> Result<Tensor> {
    let extent = from.storage_extent().max(to.storage_extent());
    let mut buf = g.strided_scatter(&[extent], onto(from))?;
    if let Some(z) = zero_region {
        let keep = Tensor::ones(&[extent], g.dtype());
        crate::kernels::copy::fill(&keep.alias_with_layout(z.clone()), Scalar::Int(0))?;
        buf = buf.mul(&keep)?;
    }
    buf.strided_view("AsStridedBackward0", onto(to))?
        .clone_tensor()
}

/// The base's node after an in-place op on one of its views.
struct CopySlices {
    base: Layout,
    view: Layout,
}

impl Backward for CopySlices {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("CopySlices")
    }
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None, None]);
        };
        let old_base = match node.next_edges()[0] {
            Some(_) => Some(relayout(&g, &self.base, &self.base, Some(&self.view))?),
            None => None,
        };
        let result = match node.next_edges()[1] {
            Some(_) => Some(relayout(&g, &self.base, &self.view, None)?),
            None => None,
        };
        Ok(vec![old_base, result])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A view's node after an in-place op on it: its gradient is placed into
/// the base's shape.
struct ViewOfBase {
    base: Layout,
    view: Layout,
}

impl Backward for ViewOfBase {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("AsStridedBackward0")
    }
    fn apply(&self, _node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None]);
        };
        Ok(vec![Some(relayout(&g, &self.view, &self.base, None)?)])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
