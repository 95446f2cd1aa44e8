//! In-place ops. Every in-place op goes through [`Tensor::apply_inplace`]:
//! the new value is computed out of place (recording the graph as usual),
//! written into the tensor's memory, the version is bumped and the tensor's
//! history is rebased onto the op. In-place on a view also rewrites the
//! base's history (torch's CopySlices), so the base's gradient flows
//! through the op too.

use crate::autograd::node::{Backward, InputMeta, Node};
use crate::autograd::{is_grad_enabled, no_grad, record};
use crate::kernels::copy::{check_can_cast, copy_into, fill};
use crate::kernels::overlap::{check_write, has_internal_overlap};
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::{DType, Layout, Scalar, Strided, Tensor};
use crate::{bail, Result};
use smallvec::SmallVec;
use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

impl Tensor {
    /// The iteration layer's memory-overlap checks for a write into `self`
    /// that reads `inputs` ([`check_write`]): run by every in-place op,
    /// `copy_` and `out=` before anything is written.
    pub fn check_write(&self, inputs: &[&Tensor]) -> Result<()> {
        let inputs: SmallVec<[&Strided; 4]> = inputs.iter().map(|t| &***t).collect();
        check_write(self, &inputs)
    }

    /// Errors torch raises before an in-place op on `self` that reads
    /// `others` (torch's `check_inplace`), when autograd records it: a view
    /// whose history cannot be rebased (made by a multi-output op, under
    /// no_grad or inference mode, or by a custom Function), a view of a
    /// leaf that requires grad, or such a leaf itself.
    pub(crate) fn check_inplace(&self, others: &[&Tensor]) -> Result<()> {
        let requires_grad = self.requires_grad() || others.iter().any(|t| t.requires_grad());
        self.check_inplace_when(requires_grad)
    }

    /// torch's `check_inplace(self, requires_grad)`: the checks above when
    /// grad mode is on and `requires_grad` (the op is recorded).
    pub(crate) fn check_inplace_when(&self, requires_grad: bool) -> Result<()> {
        if !is_grad_enabled() || !requires_grad {
            return Ok(());
        }
        let self_rg = self.requires_grad();
        if let Some(base) = self.view_base() {
            self.check_view_rebase()?;
            // torch: a view that requires grad may not be modified in place
            // when its base is a leaf (whether or not the base requires grad).
            if self_rg && base.is_leaf() {
                bail!(runtime, "a view of a leaf Variable that requires grad is being used in an in-place operation.");
            }
        }
        if self_rg && self.is_leaf() {
            bail!(
                runtime,
                "a leaf Variable that requires grad is being used in an in-place operation."
            );
        }
        Ok(())
    }

    /// What every in-place op runs just before it writes into `self`
    /// (nothing written yet): torch's refusal of an inference tensor outside
    /// inference mode, then the `allow_mutation_on_saved_tensors` clones.
    pub(crate) fn before_write(&self) -> Result<()> {
        self.check_inference_write()?;
        crate::autograd::saved_hooks::before_inplace(self)
    }

    /// Records that `op` modified this tensor in place: bumps the version
    /// counter (shared with its views) and remembers `op`, with where it was
    /// called when anomaly mode is on, for the error a saved tensor raises
    /// when it was modified.
    pub fn modified_by(&self, op: impl Into<std::borrow::Cow<'static, str>>) {
        self.bump_version(op.into(), crate::autograd::anomaly::capture());
    }

    /// Runs an in-place op whose out-of-place value is `f(self_value)`;
    /// `others` are the op's other tensor inputs (for requires-grad checks).
    pub fn apply_inplace(
        &self,
        op: &'static str,
        others: &[&Tensor],
        f: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<()> {
        self.check_write(others)?;
        self.apply_inplace_unchecked(op, others, f)
    }

    /// [`Self::apply_inplace`] without the memory-overlap checks (for
    /// `copy_` of a tensor onto its very same data, which torch allows).
    fn apply_inplace_unchecked(
        &self,
        op: &'static str,
        others: &[&Tensor],
        f: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<()> {
        self.apply_inplace_writing(op, others, f, |r| copy_into(self, r))
    }

    /// [`Self::apply_inplace`] for an op that writes only some elements of
    /// `self` (`index_put_`, `index_fill_`), which torch allows into an
    /// expanded tensor (deprecated): `write` writes them into `self`'s
    /// memory (element by element, so into an expanded `self` as torch's
    /// kernel does) instead of a copy of the whole result, and `self` may
    /// overlap itself; the caller has checked its other operands' overlap.
    /// The graph is still recorded from `f` on a dense copy of `self` (its
    /// gradients do not read the result's values).
    pub(crate) fn apply_inplace_partial(
        &self,
        op: &'static str,
        others: &[&Tensor],
        f: impl FnOnce(&Tensor) -> Result<Tensor>,
        write: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        if !has_internal_overlap(self.layout()) {
            return self.apply_inplace(op, others, f);
        }
        self.apply_inplace_writing(op, others, f, |_| write())
    }

    /// Writes an in-place op's value `r` (self's dtype or castable to it)
    /// with `write` once its shape is checked, and records the write: the
    /// version bump naming `op`, and the forward-AD tangent.
    fn store_inplace_result(
        &self,
        r: &Tensor,
        op: &'static str,
        write: impl FnOnce(&Tensor) -> Result<()>,
    ) -> Result<()> {
        if r.shape() != self.shape() {
            bail!(
                runtime,
                "output with shape {:?} doesn't match the broadcast shape {:?}",
                self.shape(),
                r.shape()
            );
        }
        write(r)?;
        self.modified_by(op);
        crate::autograd::forward::inplace_update(self, r)
    }

    /// The body of the in-place ops above: `write(r)` puts the op's value
    /// `r` into `self`'s memory.
    fn apply_inplace_writing(
        &self,
        op: &'static str,
        others: &[&Tensor],
        f: impl FnOnce(&Tensor) -> Result<Tensor>,
        write: impl FnOnce(&Tensor) -> Result<()>,
    ) -> Result<()> {
        self.check_inplace(others)?;
        self.before_write()?;
        let tracked =
            is_grad_enabled() && (self.requires_grad() || others.iter().any(|t| t.requires_grad()));
        if !tracked {
            let r = {
                let _g = no_grad();
                f(self)?
            };
            check_can_cast(r.dtype(), self.dtype())?;
            self.store_inplace_result(&r, op, write)?;
            return Ok(());
        }
        // A stand-in for self's current value with self's autograd identity,
        // so what the op saves survives the overwrite below.
        let before = crate::dispatch_all!(self.dtype(), T => Tensor::from(crate::kernels::copy::contiguous_as::<T>(self)?));
        if let Some(node) = self.grad_fn() {
            before.set_history(node, self.output_nr());
        }
        before.copy_fw_grads_from(self);
        let r = f(&before)?;
        check_can_cast(r.dtype(), self.dtype())?;
        let r = r.to_dtype(self.dtype())?;
        self.store_inplace_result(&r, op, write)?;
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

    /// `self.copy_(src)`: broadcast, cast, differentiable w.r.t. `src`
    /// (self's old value gets a zero gradient: torch's `CopyBackwards`).
    pub fn copy_(&self, src: &Tensor) -> Result<()> {
        // torch's copy_ of the very same data (same memory, layout and
        // dtype) writes nothing and skips the overlap checks (an expanded
        // `t.copy_(t)` is fine); it still counts as an in-place op.
        let same_data = Arc::ptr_eq(self.storage(), src.storage())
            && self.layout() == src.layout()
            && self.dtype() == src.dtype();
        let shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
        let dt = self.dtype();
        let op = |before: &Tensor| {
            let rec = record("CopyBackwards", &[before, src]);
            let out = {
                let _g = no_grad();
                src.expand(&shape)?.to_dtype(dt)?.clone_tensor()?
            };
            rec.finish(out, |c| {
                Ok(vec![
                    c.grad_for(0, || Ok(c.grad().zeros_like()))?,
                    c.grad_for(1, || Ok(c.grad().clone()))?,
                ])
            })
        };
        if same_data {
            let tracked = is_grad_enabled() && (self.requires_grad() || src.requires_grad());
            if !tracked && !self.has_fw_grad() {
                // Nothing to write: the values are already there.
                self.check_inplace(&[src])?;
                self.before_write()?;
                self.modified_by("copy_");
                return Ok(());
            }
            // recorded, still writing nothing (self may overlap itself)
            return self.apply_inplace_writing("copy_", &[src], op, |_| Ok(()));
        }
        self.check_write(&[src])?;
        if !self.dtype().is_floating() {
            // torch: a copy into a non-differentiable dtype records nothing
            // and leaves self's history as it is.
            self.before_write()?;
            copy_into(self, src)?;
            self.modified_by("copy_");
            return Ok(());
        }
        let mut res = Ok(());
        if self.try_fast_inplace_any_dtype("copy_", self.untracked_operand(src), |s| {
            res = copy_into(s, src)
        })? {
            return res;
        }
        self.apply_inplace("copy_", &[src], op)
    }
    pub fn fill_(&self, value: Scalar) -> Result<()> {
        self.fill_named(value, "fill_", "FillBackward2")
    }
    pub fn zero_(&self) -> Result<()> {
        self.fill_named(Scalar::Int(0), "zero_", "ZeroBackward0")
    }
    /// `fill_` with a 0-dim tensor value, differentiable in it (its
    /// gradient is the sum of the filled elements').
    pub fn fill_tensor_(&self, value: &Tensor) -> Result<()> {
        if value.ndim() != 0 {
            bail!(
                runtime,
                "fill_ only supports 0-dimension value tensor but got tensor with {} dimensions.",
                value.ndim()
            );
        }
        // torch's fill_(Tensor) is a copy_ (fill_(Scalar) is not): it may
        // not write an expanded view.
        crate::kernels::overlap::assert_no_internal_overlap(self.layout())?;
        if !(is_grad_enabled() && (value.requires_grad() || self.requires_grad())) {
            return self.fill_named(value.item()?, "fill_", "FillBackward3");
        }
        let shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
        let dt = self.dtype();
        // no overlap check against the value: torch copies a clone of a
        // value that aliases self (`t[None] = t` of a 0-dim t), and here the
        // value is read before anything is written
        self.apply_inplace_unchecked("fill_", &[value], |before| {
            let rec = record("FillBackward3", &[before, value]);
            let out = {
                let _g = no_grad();
                value.expand(&shape)?.to_dtype(dt)?.clone_tensor()?
            };
            rec.finish(out, |c| {
                Ok(vec![
                    c.grad_for(0, || Ok(c.grad().zeros_like()))?,
                    c.grad_for(1, || c.grad().sum())?,
                ])
            })
        })
    }
    fn fill_named(&self, value: Scalar, op: &'static str, node: &'static str) -> Result<()> {
        let value = value.checked_to(self.dtype())?;
        // torch lets fill_ write an expanded view (every repeat of an
        // element gets the same value), when no graph is recorded.
        let recorded = (is_grad_enabled() && self.requires_grad()) || self.has_fw_grad();
        if !recorded && has_internal_overlap(self.layout()) {
            self.check_inplace(&[])?;
            self.before_write()?;
            fill(self, value)?;
            self.modified_by(op);
            return Ok(());
        }
        let mut res = Ok(());
        if self.try_fast_inplace_any_dtype(op, true, |s| res = fill(s, value))? {
            return res;
        }
        let dt = self.dtype();
        let shape = self.dims();
        // recorded into an expanded view too, as torch (its CopySlices
        // refuses such a view only when a backward reaches it)
        self.apply_inplace_partial(
            op,
            &[],
            |before| {
                let rec = record(node, &[before]);
                rec.finish(Tensor::full(&shape, value, dt), |c| {
                    Ok(vec![c.grad_for(0, || Ok(c.grad().zeros_like()))?])
                })
            },
            || fill(self, value),
        )
    }
    /// True when `other` lets an in-place op on self skip the recorded path:
    /// it records no graph or tangent and broadcasts to self's shape.
    fn untracked_operand(&self, other: &Tensor) -> bool {
        let records = (is_grad_enabled() && other.requires_grad()) || other.has_fw_grad();
        !records
            && broadcast_shapes(self.shape(), other.shape()).is_ok_and(|s| s[..] == *self.shape())
    }

    /// The untracked path of a binary table op's in-place twin (see
    /// `ops::arith`): runs `kernel(self, other in self's dtype)` in self's
    /// memory when [`Self::untracked_operand`] holds, `dtype_ok` (the rule
    /// has a kernel for self's dtype) and the result dtype is self's.
    /// Returns false for every other case, which `apply_inplace` handles
    /// (and reports the errors of).
    pub(crate) fn try_fast_binary_inplace(
        &self,
        name: &'static str,
        other: &Tensor,
        dtype_ok: bool,
        kernel: impl FnOnce(&Tensor, &Tensor) -> Result<()>,
    ) -> Result<bool> {
        self.check_write(&[other])?;
        let dt = self.dtype();
        let eligible = dtype_ok && self.result_type(other) == dt && self.untracked_operand(other);
        let mut res = Ok(());
        let done = self.try_fast_inplace(name, eligible, |s| {
            res = kernel(s, &other.cast_raw(dt));
        })?;
        res?;
        Ok(done)
    }
}

/// After in-place op result `r` was written into `view`: the base's new
/// history is CopySlices(old base, r); the view's is a view of that.
///
/// As torch's CopySlices, when `r` is the output of one op node whose
/// first input is the view's old value, the base's node runs that op's
/// backward itself: its gradient for the view's old value goes straight
/// into the view's slice of the base's gradient, and the view's old
/// history (and any hook registered on it) is no longer part of the graph.
/// Otherwise (a result made by several ops, or cast), `r` is an input of
/// the base's node.
pub(crate) fn rebase_view(base: &Tensor, view: &Tensor, r: &Tensor) {
    let old = view.peek_meta(|m| m.grad_fn.clone().map(|f| (f, m.output_nr)));
    let op = r.gradient_edge().filter(|e| {
        let first = e.node.next_edges().first().and_then(|x| x.as_ref());
        let same = match (first, &old) {
            (Some(a), Some((f, nr))) => Arc::ptr_eq(&a.node, f) && a.input_nr == *nr,
            _ => false,
        };
        e.input_nr == 0 && e.node.num_inputs() == 1 && same
    });
    let mut edges = vec![base.gradient_edge()];
    match &op {
        Some(e) => edges.extend(e.node.next_edges()[1..].iter().cloned()),
        None => edges.push(r.gradient_edge()),
    }
    let copy_slices = Arc::new(Node::new(
        Box::new(CopySlices {
            base: base.layout().clone(),
            view: view.layout().clone(),
            op: op.map(|e| e.node),
        }),
        edges,
        vec![InputMeta {
            shape: base.dims(),
            dtype: base.dtype(),
        }],
    ));
    base.set_history(copy_slices, 0);
    view.set_history(view_of_base_node(base, view), 0);
    view.set_view_version_current();
}

/// The history of `view` as a strided view of `base`'s current history
/// (`AsStridedBackward0`).
pub(crate) fn view_of_base_node(base: &Tensor, view: &Tensor) -> Arc<Node> {
    Arc::new(Node::new(
        Box::new(ViewOfBase {
            base: base.layout().clone(),
            view: view.layout().clone(),
        }),
        vec![base.gradient_edge()],
        vec![InputMeta {
            shape: view.dims(),
            dtype: view.dtype(),
        }],
    ))
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
    relayout_view(g, from, to, zero_region)?.clone_tensor()
}

/// [`relayout`] as a view of the storage-sized buffer (torch's
/// `as_strided_backward` returns such a view).
fn relayout_view(
    g: &Tensor,
    from: &Layout,
    to: &Layout,
    zero_region: Option<&Layout>,
) -> Result<Tensor> {
    let extent = from.storage_extent().max(to.storage_extent());
    let mut buf = g.strided_scatter(&[extent], onto(from))?;
    if let Some(z) = zero_region {
        // a masked fill, not a product with a 0/1 mask: an inf gradient
        // outside the region stays inf (inf * 0 would be NaN), as torch's
        // `grad_slice.zero_()`
        let zero = Tensor::zeros(&[extent], DType::Bool);
        fill(&zero.alias_with_layout(z.clone()), Scalar::Bool(true))?;
        buf = buf.masked_fill_scalar(&zero, Scalar::Int(0))?;
    }
    buf.strided_view("AsStridedBackward0", onto(to))
}

/// The base's node after an in-place op on one of its views.
struct CopySlices {
    base: Layout,
    view: Layout,
    /// The in-place op's node, run from here (see [`rebase_view`]); its
    /// inputs after the first are this node's inputs after the base.
    op: Option<Arc<Node>>,
}

impl Backward for CopySlices {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("CopySlices")
    }
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(vec![None; node.next_edges().len()]);
        };
        if node.next_edges()[0].is_some() {
            // torch copies the op's gradient for the view's old value into
            // the view's slice of the base's gradient: refused when the
            // view overlaps itself (an in-place op on an expanded tensor)
            crate::kernels::overlap::assert_no_internal_overlap(&self.view)?;
        }
        let old_base = match node.next_edges()[0] {
            Some(_) => Some(relayout(&g, &self.base, &self.base, Some(&self.view))?),
            None => None,
        };
        let Some(op) = &self.op else {
            let result = match node.next_edges()[1] {
                Some(_) => Some(relayout(&g, &self.base, &self.view, None)?),
                None => None,
            };
            return Ok(vec![old_base, result]);
        };
        // torch: the op's backward on the view's slice of the gradient; its
        // gradient for the view's old value fills that slice of the base's.
        let slice = relayout(&g, &self.base, &self.view, None)?;
        let mut grads = op.backward().apply(op, vec![Some(slice)])?;
        grads.resize(op.next_edges().len().max(1), None);
        let of_view = std::mem::take(&mut grads[0]);
        let old_base = match (old_base, of_view) {
            (Some(b), Some(v)) => Some(b.add(&relayout(&v, &self.view, &self.base, None)?)?),
            (b, _) => b,
        };
        grads[0] = old_base;
        Ok(grads)
    }
    fn release_saved(&self) {
        if let Some(op) = &self.op {
            op.backward().release_saved();
        }
    }
    fn saved_ranges(&self, out: &mut Vec<(usize, usize)>) {
        if let Some(op) = &self.op {
            op.backward().saved_ranges(out);
        }
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
        if self.view.numel() == 0 {
            // torch's `as_strided_backward` returns fresh zeros for an
            // empty view: no history, even under create_graph
            return Ok(vec![Some(Tensor::zeros(&self.base.shape, g.dtype()))]);
        }
        Ok(vec![Some(relayout_view(&g, &self.view, &self.base, None)?)])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
