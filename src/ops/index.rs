//! Indexing: `getitem`/`setitem` (torch's `x[...]` and `x[...] = v`),
//! advanced indexing (`index`, `index_put`), `index_select`, `gather`,
//! `scatter`/`scatter_add`, `masked_fill`, `masked_select`, `take`,
//! `index_add`/`index_copy`/`index_fill` (whole slices along one dim).
//!
//! | op                          | d/dself                                        | d/dother                     |
//! |-----------------------------|------------------------------------------------|------------------------------|
//! | index(I)                    | zeros(self).index_put(I, grad, accumulate)     |                              |
//! | index_put(I, v, acc=false)  | grad.index_put(I, 0)                           | v: grad.index(I)             |
//! | index_put(I, v, acc=true)   | grad                                           | v: grad.index(I)             |
//! | index_select(d, i)          | zeros(self).index_put([:,..,i], grad, acc)     |                              |
//! | take(i)                     | zeros(numel).index_put([i], grad, acc).view    |                              |
//! | gather(d, i)                | zeros(self).scatter_add(d, i, grad)            |                              |
//! | scatter_add(d, i, src)      | grad                                           | src: grad.gather(d, i)       |
//! | scatter(d, i, src)          | grad.scatter(d, i, 0)                          | src: grad.gather(d, i)       |
//! | scatter(d, i, value)        | grad.scatter(d, i, 0)                          |                              |
//! | masked_fill(m, value)       | grad.masked_fill(m, 0)                         | value: grad.masked_fill(!m, 0).sum() |
//! | masked_select(m)            | zeros(bcast).index_put([m], grad, acc)         |                              |
//! | index_add(d, i, src, alpha) | grad                                           | src: grad.index_select(d, i) * alpha |
//! | index_copy(d, i, src)       | grad.index_fill(d, i, 0)                       | src: grad.index_select(d, i) |
//! | index_fill(d, i, value)     | grad.index_fill(d, i, 0)                       | value: grad.index_select(d, unique(i)).sum() |
//!
//! Basic indexing (ints, slices, None, Ellipsis) is made of the view ops of
//! `view.rs` (select, slice, unsqueeze) and returns views; advanced indexing
//! (int64 / bool tensors) copies. In-place forms go through
//! `Tensor::apply_inplace` (a direct kernel write when nothing is tracked).

use super::to_i64;
use crate::autograd::{is_grad_enabled, record};
use crate::kernels::index::{self as k, AdvPlan, ScatterSrc};
use crate::kernels::iter::{
    assert_no_internal_overlap, assert_no_overlap, assert_no_partial_overlap,
};
use crate::tensor::layout::{broadcast_shapes, wrap_dim};
use crate::tensor::{DType, Dims, Layout, Scalar, Tensor};
use crate::{bail, Result};
use std::sync::Arc;

/// One item of a Python-style index (`x[1, ::2, None, ..., idx]`).
#[derive(Clone, Debug)]
pub enum TensorIndex {
    Int(i64),
    /// `start:stop:step` (Python slice rules; step must be positive).
    Slice {
        start: Option<i64>,
        stop: Option<i64>,
        step: i64,
    },
    /// `None` / `np.newaxis`: inserts a dim of size 1.
    None,
    Ellipsis,
    /// A Python bool: a 0-dim mask (inserts a dim of size 1 or 0).
    Bool(bool),
    /// An int64 index tensor or a bool mask.
    Tensor(Tensor),
}

impl TensorIndex {
    /// The full slice `:`.
    pub fn full() -> Self {
        TensorIndex::Slice {
            start: None,
            stop: None,
            step: 1,
        }
    }
}

/// torch's short dtype name, as in its index_put messages.
fn shape_str(s: &[usize]) -> String {
    format!("{:?}", s)
}

/// Turns a list of per-dim indices (None = `:`; int64 tensors; bool masks,
/// each covering as many dims as it has) into an indexing plan for a tensor
/// of `shape`: masks become their nonzero coordinates, index tensors are
/// broadcast together, and the placement rule is chosen (adjacent indexed
/// dims stay in place, otherwise the indexed block goes first).
pub fn plan_indices(shape: &[usize], indices: &[Option<Tensor>]) -> Result<AdvPlan> {
    let ndim = shape.len();
    let too_many =
        || crate::Error::index(format!("too many indices for tensor of dimension {}", ndim));
    // (dim, broadcastable shape, values) per indexed dim
    let mut entries: Vec<(usize, Dims, Tensor)> = Vec::new();
    let mut dim = 0usize;
    for idx in indices {
        let Some(t) = idx else {
            dim += 1;
            if dim > ndim {
                return Err(too_many());
            }
            continue;
        };
        match t.dtype() {
            DType::Bool => {
                if t.ndim() == 0 {
                    bail!(
                        index,
                        "a 0-dim bool index is only supported in __getitem__/__setitem__"
                    );
                }
                if dim + t.ndim() > ndim {
                    return Err(too_many());
                }
                for (j, &m) in t.shape().iter().enumerate() {
                    if m != shape[dim + j] {
                        bail!(
                            index,
                            "The shape of the mask {} at index {} does not match the shape of the indexed tensor {} at index {}",
                            shape_str(t.shape()),
                            j,
                            shape_str(shape),
                            dim + j
                        );
                    }
                }
                for coords in k::nonzero(t).1 {
                    let n = coords.len();
                    entries.push((dim, smallvec::smallvec![n], Tensor::from_vec(coords, &[n])?));
                    dim += 1;
                }
            }
            DType::I64 => {
                if dim >= ndim {
                    return Err(too_many());
                }
                entries.push((dim, t.dims(), t.clone()));
                dim += 1;
            }
            _ => bail!(
                index,
                "tensors used as indices must be long, int, byte or bool tensors"
            ),
        }
    }
    if entries.is_empty() {
        bail!(runtime, "index: expected at least one index tensor");
    }
    let mut bshape: Dims = entries[0].1.clone();
    for e in &entries[1..] {
        bshape = broadcast_shapes(&bshape, &e.1).map_err(|_| {
            let shapes: Vec<String> = entries.iter().map(|e| shape_str(&e.1)).collect();
            crate::Error::index(format!(
                "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                shapes.join(", ")
            ))
        })?;
    }
    let dims: Vec<usize> = entries.iter().map(|e| e.0).collect();
    let idx: Vec<Vec<i64>> = entries
        .iter()
        .map(|e| e.2.broadcast_to_raw(&bshape)?.try_to_vec::<i64>())
        .collect::<Result<_>>()?;
    let (first, last) = (dims[0], *dims.last().unwrap());
    let adjacent = last - first + 1 == dims.len();
    let rest = (0..ndim).filter(|d| !dims.contains(d));
    let (pre, post) = if adjacent {
        let (a, b): (Vec<usize>, Vec<usize>) = rest.partition(|&d| d < first);
        (a, b)
    } else {
        (Vec::new(), rest.collect())
    };
    Ok(AdvPlan {
        pre,
        post,
        bshape,
        dims,
        idx,
    })
}

/// Checks that `values` may be written through `plan` into a tensor of
/// `shape` and dtype `dt` (index_put's rules).
fn check_put_values(plan: &AdvPlan, shape: &[usize], dt: DType, values: &Tensor) -> Result<()> {
    if values.dtype() != dt {
        bail!(
            runtime,
            "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
            dt.scalar_type_name(),
            values.dtype().scalar_type_name()
        );
    }
    let out = plan.out_shape(shape);
    if values.layout().expand(&out).is_err() {
        bail!(
            runtime,
            "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            shape_str(values.shape()),
            shape_str(&out)
        );
    }
    Ok(())
}

/// torch's `canDispatchToMaskedFill`: `index_put_` without accumulate of a
/// one-element value under a single bool mask (the other indices None) runs
/// as `masked_fill_(mask, value.item())`: the value is converted to self's
/// dtype as a number (any dtype, any shape), and the mask may be self.
fn put_as_masked_fill(indices: &[Option<Tensor>], values: &Tensor, accumulate: bool) -> bool {
    let mut given = indices.iter().flatten();
    !accumulate
        && values.numel() == 1
        && matches!((given.next(), given.next()), (Some(m), None) if m.dtype() == DType::Bool)
}

/// The value `index_put_plan` writes for [`put_as_masked_fill`]: 0-dim.
fn masked_fill_value(values: &Tensor) -> Result<Tensor> {
    match values.ndim() {
        0 => Ok(values.clone()),
        _ => values.reshape(&[]),
    }
}

/// torch's `assert_no_overlap` for tensors: the very same tensor always
/// overlaps itself (its `get_overlap_status` says Full before looking at
/// layouts, even when empty or not dense).
fn no_overlap(a: &Tensor, b: &Tensor) -> Result<()> {
    if a.same(b) {
        bail!(runtime, "{}", crate::kernels::iter::PARTIAL_OVERLAP);
    }
    assert_no_overlap(a, b)
}

/// Whether an in-place op on `t` with other inputs `others` records history
/// (the same test `apply_inplace` makes) or carries forward-AD tangents
/// (which `apply_inplace` updates).
fn inplace_tracked(t: &Tensor, others: &[&Tensor]) -> bool {
    let all = || std::iter::once(t).chain(others.iter().copied());
    (is_grad_enabled() && all().any(|o| o.requires_grad())) || all().any(|o| o.has_fw_grad())
}

/// The in-place ops that write only the elements they select, which torch
/// allows into an expanded tensor, recorded or not: their `direct` write
/// runs when recorded too ([`Tensor::apply_inplace_partial`]).
const WRITES_SELECTED: [&str; 3] = ["index_put_", "index_fill_", "masked_fill_"];

/// Runs an in-place op: `direct` writes into `t` when nothing is tracked;
/// otherwise (history or tangents) the out-of-place `f` goes through
/// `apply_inplace`.
fn inplace(
    op: &'static str,
    t: &Tensor,
    others: &[&Tensor],
    direct: impl FnOnce() -> Result<()>,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<()> {
    if inplace_tracked(t, others) {
        if WRITES_SELECTED.contains(&op) {
            return t.apply_inplace_partial(op, others, f, direct);
        }
        return t.apply_inplace(op, others, f);
    }
    t.check_inplace(others)?;
    crate::autograd::saved_hooks::before_inplace(t)?;
    direct()?;
    t.modified_by(op);
    Ok(())
}

impl Tensor {
    // ----- advanced indexing -----

    /// torch's `aten::index`: `self[indices]` where each entry indexes the
    /// next dim(s): None is `:`, an int64 tensor picks, a bool mask selects.
    pub fn index(&self, indices: &[Option<Tensor>]) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let plan = Arc::new(plan_indices(self.shape(), indices)?);
        self.index_plan(plan)
    }

    pub(crate) fn index_plan(&self, plan: Arc<AdvPlan>) -> Result<Tensor> {
        let rec = record("IndexBackward0", &[self]);
        let layout = plan.torch_layout(self.layout());
        let out = Tensor::from(k::index_gather_as(self, &plan, &layout)?);
        let shape = self.dims();
        rec.finish(out, move |c| {
            let g = c.grad();
            let z = Tensor::zeros(&shape, g.dtype());
            Ok(vec![Some(z.index_put_plan(plan.clone(), g, true)?)])
        })
    }

    /// Out-of-place `index_put`: a copy of `self` with `values` written (or
    /// added, with `accumulate`) at `indices`.
    pub fn index_put(
        &self,
        indices: &[Option<Tensor>],
        values: &Tensor,
        accumulate: bool,
    ) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self, values])?;
        let plan = Arc::new(plan_indices(self.shape(), indices)?);
        if put_as_masked_fill(indices, values, accumulate) {
            return self.index_put_plan(plan, &masked_fill_value(values)?, false);
        }
        check_put_values(&plan, self.shape(), self.dtype(), values)?;
        self.index_put_plan(plan, values, accumulate)
    }

    pub(crate) fn index_put_plan(
        &self,
        plan: Arc<AdvPlan>,
        values: &Tensor,
        accumulate: bool,
    ) -> Result<Tensor> {
        let rec = record("IndexPutBackward0", &[self, values]);
        let out = crate::dispatch_all!(self.dtype(), T => Tensor::from(crate::kernels::copy::contiguous_as::<T>(self)?));
        let v = values.cast_raw(self.dtype());
        k::index_scatter(&out, &plan, &v, accumulate)?;
        rec.finish(out, move |c| {
            let g = c.grad();
            let ds = if !c.needs(0) {
                None
            } else if accumulate {
                Some(g.clone())
            } else {
                let zero = Tensor::scalar(Scalar::Int(0), g.dtype());
                Some(g.index_put_plan(plan.clone(), &zero, false)?)
            };
            let dv = c.grad_for(1, || g.index_plan(plan.clone()))?;
            Ok(vec![ds, dv])
        })
    }

    /// In-place `index_put_`.
    pub fn index_put_(
        &self,
        indices: &[Option<Tensor>],
        values: &Tensor,
        accumulate: bool,
    ) -> Result<()> {
        let plan = Arc::new(plan_indices(self.shape(), indices)?);
        if put_as_masked_fill(indices, values, accumulate) {
            // torch's masked_fill_ (value read first): no dtype or shape
            // check of the value, the mask may be self itself
            for m in indices.iter().flatten() {
                assert_no_partial_overlap(self, m)?;
            }
            let v = masked_fill_value(values)?;
            let direct = Tensor::scalar(values.item()?, self.dtype());
            let p2 = plan.clone();
            return inplace(
                "index_put_",
                self,
                &[values],
                || k::index_scatter(self, &plan, &direct, false),
                |s| s.index_put_plan(p2, &v, false),
            );
        }
        check_put_values(&plan, self.shape(), self.dtype(), values)?;
        // torch: writing an expanded self is allowed (deprecated); values
        // and indices may not share memory with self.
        no_overlap(self, values)?;
        for i in indices.iter().flatten() {
            no_overlap(self, i)?;
        }
        // validate the indices before anything is written
        plan.offsets(self.layout())?;
        let p2 = plan.clone();
        inplace(
            "index_put_",
            self,
            &[values],
            || k::index_scatter(self, &plan, values, accumulate),
            |s| s.index_put_plan(p2, values, accumulate),
        )
    }

    // ----- Python-style indexing -----

    /// Applies the basic part of `items` (ints, slices, None, Ellipsis) as
    /// views; returns the view and the advanced indices left for `index`
    /// (one entry per dim of the view, as `index` takes them). A full slice
    /// (start 0, stop at or past the end, step 1) is skipped, as torch's
    /// applySlice does.
    fn apply_basic(&self, items: &[TensorIndex]) -> Result<(Tensor, Vec<Option<Tensor>>)> {
        let ndim = self.ndim();
        let mut consumed = 0usize;
        for it in items {
            match it {
                TensorIndex::Int(_) | TensorIndex::Slice { .. } => consumed += 1,
                TensorIndex::Tensor(t) => {
                    consumed += if t.dtype() == DType::Bool {
                        t.ndim()
                    } else {
                        1
                    }
                }
                TensorIndex::Ellipsis | TensorIndex::None | TensorIndex::Bool(_) => {}
            }
        }
        if ndim == 0 && items.iter().any(|i| matches!(i, TensorIndex::Int(_))) {
            bail!(index, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
        }
        if consumed > ndim {
            bail!(index, "too many indices for tensor of dimension {}", ndim);
        }
        let mut r = self.clone();
        let mut dim = 0usize;
        let mut adv: Vec<Option<Tensor>> = Vec::new();
        // dims of `r` covered by the entries of `adv` so far
        let mut covered = 0usize;
        let mut record_adv = |adv: &mut Vec<Option<Tensor>>, dim: usize, t: Tensor, span: usize| {
            while covered < dim {
                adv.push(None);
                covered += 1;
            }
            adv.push(Some(t));
            covered += span;
        };
        let bool_index = |b: bool| -> Result<Tensor> {
            let v: Vec<i64> = if b { vec![0] } else { vec![] };
            let n = v.len();
            Tensor::from_vec(v, &[n])
        };
        for it in items {
            match it {
                TensorIndex::Int(i) => r = r.select_for_index(dim as i64, *i)?,
                TensorIndex::Slice { start, stop, step } => {
                    let full = *step == 1
                        && start.unwrap_or(0) == 0
                        && stop.is_none_or(|s| s >= r.shape()[dim] as i64);
                    if !full {
                        r = r.slice(dim as i64, *start, *stop, *step)?;
                    }
                    dim += 1;
                }
                TensorIndex::None => {
                    r = r.unsqueeze(dim as i64)?;
                    dim += 1;
                }
                TensorIndex::Ellipsis => dim += ndim - consumed,
                TensorIndex::Bool(b) => {
                    r = r.unsqueeze(dim as i64)?;
                    record_adv(&mut adv, dim, bool_index(*b)?, 1);
                    dim += 1;
                }
                TensorIndex::Tensor(t) => match (t.dtype(), t.ndim()) {
                    (DType::I64, 0) => {
                        let i = t.to_vec::<i64>()[0];
                        r = r.select_for_index(dim as i64, i)?;
                    }
                    (DType::Bool, 0) => {
                        let b = t.item()?.to_f64() != 0.0;
                        r = r.unsqueeze(dim as i64)?;
                        record_adv(&mut adv, dim, bool_index(b)?, 1);
                        dim += 1;
                    }
                    (DType::Bool, n) => {
                        record_adv(&mut adv, dim, t.clone(), n);
                        dim += n;
                    }
                    (DType::I64, _) => {
                        record_adv(&mut adv, dim, t.clone(), 1);
                        dim += 1;
                    }
                    _ => bail!(
                        index,
                        "tensors used as indices must be long, int, byte or bool tensors"
                    ),
                },
            }
        }
        Ok((r, adv))
    }

    /// `self[start:stop:step]`, a lone slice (not in a tuple): torch makes
    /// it a slice view even when it covers the whole tensor.
    pub fn getitem_slice(
        &self,
        start: Option<i64>,
        stop: Option<i64>,
        step: i64,
    ) -> Result<Tensor> {
        if self.ndim() == 0 {
            bail!(index, "slice() cannot be applied to a 0-dim tensor.");
        }
        self.slice(0, start, stop, step)
    }

    /// `self[items]` with torch's semantics: basic indexing gives a view,
    /// advanced indexing a copy.
    pub fn getitem(&self, items: &[TensorIndex]) -> Result<Tensor> {
        let (r, adv) = self.apply_basic(items)?;
        if adv.iter().any(|a| a.is_some()) {
            return r.index(&adv);
        }
        if r.same(self) {
            // x[...] / x[()]: an alias of the whole tensor
            return self.strided_view("AliasBackward0", Arc::new(|l: &Layout| l.clone()));
        }
        Ok(r)
    }

    /// `self[items] = value` (value broadcast and cast to `self`'s dtype for
    /// basic indexing; advanced indexing needs `self`'s dtype, as in torch).
    pub fn setitem(&self, items: &[TensorIndex], value: &Tensor) -> Result<()> {
        let (r, adv) = self.apply_basic(items)?;
        let orig = value;
        let scalar_value = value.ndim() == 0;
        // torch drops leading size-1 dims of the value (slicePrefix1sSize)
        let lead = value.shape().iter().take_while(|&&d| d == 1).count();
        let value = if lead > 0 {
            value.view(&to_i64(&value.shape()[lead..]))?
        } else {
            value.clone()
        };
        if adv.iter().any(|a| a.is_some()) {
            return r.index_put_(&adv, &value, false);
        }
        let r = match r.same(self) {
            // x[...] = v writes through an alias, as torch does (CopySlices)
            true => self.strided_view("AliasBackward0", Arc::new(|l: &Layout| l.clone()))?,
            false => r,
        };
        // torch's copy_to: a value of the target's very shape is copied as
        // it is (`t[:] = t` onto its very same data, allowed), ...
        if orig.shape() == r.shape() {
            return r.copy_(orig);
        }
        // ... a 0-dim value of another shape is a fill (read
        // before anything is written, so it may be an element of self)
        if scalar_value && r.ndim() != 0 {
            return r.fill_tensor_(&value);
        }
        // ... and otherwise the value expanded to the target's shape
        // (expand_inplace), so that `t[None] = t` copies a tensor onto its
        // very same data (allowed) rather than onto an overlapping view.
        if value.shape() != r.shape() {
            // torch views the value even with no leading 1 to drop:
            // `view` gives its size-1 dims computeStride's strides, which
            // the overlap check compares (`t[None] = t` with `t`
            // transposed is a partial overlap in torch)
            let value = match lead {
                0 => value.view(&to_i64(value.shape()))?,
                _ => value,
            };
            let value = value.expand(&to_i64(r.shape()))?;
            return r.copy_(&value);
        }
        r.copy_(&value)
    }

    /// `self[items] = scalar` (the scalar becomes `self`'s dtype).
    pub fn setitem_scalar(&self, items: &[TensorIndex], value: Scalar) -> Result<()> {
        self.setitem(items, &Tensor::scalar(value, self.dtype()))
    }

    // ----- index_select / take / masked_select -----

    pub fn index_select(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        if index.dtype() != DType::I64 {
            bail!(
                runtime,
                "index_select(): Expected dtype int32 or int64 for index"
            );
        }
        if index.ndim() > 1 {
            bail!(index, "index_select(): Index is supposed to be a vector");
        }
        if self.ndim() == 0 {
            wrap_dim(dim, 0)?;
            let r = self
                .reshape(&[1])?
                .index_select(0, &index.reshape(&[-1])?)?;
            return r.reshape(&[]);
        }
        let d = wrap_dim(dim, self.ndim())?;
        let size = self.shape()[d] as i64;
        let iv = index.try_to_vec::<i64>()?;
        if iv.iter().any(|&i| i < 0 || i >= size) {
            bail!(index, "index out of range in self");
        }
        let n = iv.len();
        let mut idx: Vec<Option<Tensor>> = vec![None; d];
        idx.push(Some(Tensor::from_vec(iv.clone(), &[n])?));
        let plan = Arc::new(plan_indices(self.shape(), &idx)?);
        let rec = record("IndexSelectBackward0", &[self]);
        let out = Tensor::from(k::index_gather(self, &plan)?);
        let shape = self.dims();
        let index_values = iv;
        rec.save("index", index).finish(out, move |c| {
            let g = c.grad();
            if !crate::autograd::is_grad_enabled() {
                // No graph of the backward: one kernel.
                return Ok(vec![Some(Tensor::from(k::index_add_new(
                    &shape,
                    d,
                    &index_values,
                    g,
                )?))]);
            }
            let z = Tensor::zeros(&shape, g.dtype());
            Ok(vec![Some(z.index_put_plan(plan.clone(), g, true)?)])
        })
    }

    /// `self.flatten()[index]`, shaped like `index`.
    pub fn take(&self, index: &Tensor) -> Result<Tensor> {
        if index.dtype() != DType::I64 {
            bail!(
                runtime,
                "take(): Expected a long tensor for index, but got {}",
                index.dtype().scalar_type_name()
            );
        }
        let n = self.numel() as i64;
        for &i in index.try_to_vec::<i64>()?.iter() {
            if i < -n || i >= n {
                bail!(
                    index,
                    "out of range: tried to access index {} on a tensor of {} elements.",
                    i,
                    n
                );
            }
        }
        let flat_shape = [self.numel()];
        let plan = Arc::new(plan_indices(&flat_shape, &[Some(index.clone())])?);
        let flat = self.detach().reshape(&[-1])?;
        let rec = record("TakeBackward0", &[self]);
        let out = Tensor::from(k::index_gather(&flat, &plan)?);
        let shape = to_i64(self.shape());
        rec.save("index", index).finish(out, move |c| {
            let g = c.grad();
            let z = Tensor::zeros(&flat_shape, g.dtype());
            Ok(vec![Some(
                z.index_put_plan(plan.clone(), g, true)?.reshape(&shape)?,
            )])
        })
    }

    /// The elements of `self` (broadcast with `mask`) where `mask` is true, as
    /// a 1-D tensor.
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        if mask.dtype() != DType::Bool {
            bail!(runtime, "masked_select: expected BoolTensor for mask");
        }
        let shape = broadcast_shapes(self.shape(), mask.shape())?;
        let m = mask.broadcast_to_raw(&shape)?;
        let plan = Arc::new(plan_indices(&shape, &[Some(m)])?);
        let rec = record("MaskedSelectBackward0", &[self]);
        let out = Tensor::from(k::index_gather(&*self.broadcast_to_raw(&shape)?, &plan)?);
        rec.save("mask", mask).finish(out, move |c| {
            let g = c.grad();
            let z = Tensor::zeros(&shape, g.dtype());
            Ok(vec![Some(z.index_put_plan(plan.clone(), g, true)?)])
        })
    }

    /// Coordinates of the nonzero elements, `[n, ndim]` int64.
    pub fn nonzero(&self) -> Result<Tensor> {
        let mask = self.cast_raw(DType::Bool);
        let (n, rows) = k::nonzero_rows(&mask);
        Tensor::from_vec(rows, &[n, self.ndim()])
    }

    // ----- gather / scatter -----

    /// `out[p] = self[p with p[dim] = index[p]]`.
    pub fn gather(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        if index.dtype() != DType::I64 {
            bail!(runtime, "gather(): Expected dtype int32/int64 for index");
        }
        let d = wrap_dim(dim, self.ndim())?;
        let rec = record("GatherBackward0", &[self]);
        let out = Tensor::from(k::gather(self, d, index)?);
        let shape = self.dims();
        rec.save("index", index).finish(out, move |c| {
            let g = c.grad();
            let index = c.saved(0)?;
            let z = Tensor::zeros(&shape, g.dtype());
            Ok(vec![Some(z.scatter_add(d as i64, &index, g)?)])
        })
    }

    fn check_scatter_index(&self, op: &str, dim: i64, index: &Tensor) -> Result<usize> {
        if index.dtype() != DType::I64 {
            bail!(runtime, "{}(): Expected dtype int32/int64 for index", op);
        }
        wrap_dim(dim, self.ndim())
    }

    /// A copy of `self` with `src` added at `index` along `dim`.
    pub fn scatter_add(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        self.scatter_impl("scatter_add", dim, index, Some(src), None, true)
    }
    /// A copy of `self` with `src` written at `index` along `dim`.
    pub fn scatter(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        self.scatter_impl("scatter", dim, index, Some(src), None, false)
    }
    /// A copy of `self` with `value` written at `index` along `dim`.
    pub fn scatter_value(&self, dim: i64, index: &Tensor, value: Scalar) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        self.scatter_impl("scatter", dim, index, None, Some(value), false)
    }
    pub fn scatter_add_(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<()> {
        self.scatter_inplace("scatter_add", dim, index, Some(src), None, true)
    }
    pub fn scatter_(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<()> {
        self.scatter_inplace("scatter", dim, index, Some(src), None, false)
    }
    pub fn scatter_value_(&self, dim: i64, index: &Tensor, value: Scalar) -> Result<()> {
        self.scatter_inplace("scatter", dim, index, None, Some(value), false)
    }

    fn scatter_impl(
        &self,
        op: &str,
        dim: i64,
        index: &Tensor,
        src: Option<&Tensor>,
        value: Option<Scalar>,
        accumulate: bool,
    ) -> Result<Tensor> {
        let d = self.check_scatter_index(op, dim, index)?;
        let rec = match src {
            None => record("ScatterBackward1", &[self]),
            Some(src) if accumulate => record("ScatterAddBackward0", &[self, src]),
            Some(src) => record("ScatterBackward0", &[self, src]),
        };
        let out = crate::dispatch_all!(self.dtype(), T => Tensor::from(crate::kernels::copy::contiguous_as::<T>(self)?));
        let ks = match (src, value) {
            (Some(s), _) => ScatterSrc::Array(s),
            (None, Some(v)) => ScatterSrc::Value(v),
            _ => unreachable!("scatter needs src or value"),
        };
        k::scatter(&out, d, index, ks, accumulate)?;
        let di = d as i64;
        let Some(src) = src else {
            return rec.save("index", index).finish(out, move |c| {
                let index = c.saved(0)?;
                Ok(vec![Some(c.grad().scatter_value(
                    di,
                    &index,
                    Scalar::Int(0),
                )?)])
            });
        };
        let src_shape = src.dims();
        // d/dsrc: gather of the grad, placed into src's shape when src is
        // larger than index
        let grad_src = move |g: &Tensor, index: &Tensor| -> Result<Tensor> {
            let r = g.gather(di, index)?;
            if r.shape() == src_shape.as_slice() {
                return Ok(r);
            }
            let ishape = if index.ndim() == 0 {
                smallvec::smallvec![1]
            } else {
                index.dims()
            };
            let r = r.reshape(&to_i64(&ishape))?;
            let src_shape2 = src_shape.clone();
            let f: crate::ops::view::ViewFn = Arc::new(move |l: &Layout| {
                let mut l = l.clone();
                for (dd, &n) in ishape.iter().enumerate() {
                    l = l.narrow(dd, 0, n).expect("index fits in src");
                }
                l
            });
            let padded = if src_shape2.is_empty() {
                smallvec::smallvec![1usize]
            } else {
                src_shape2.clone()
            };
            r.strided_scatter(&padded, f)?.reshape(&to_i64(&src_shape2))
        };
        if accumulate {
            rec.save("index", index).finish(out, move |c| {
                let g = c.grad();
                let dsrc = c.grad_for(1, || grad_src(g, &c.saved(0)?))?;
                Ok(vec![Some(g.clone()), dsrc])
            })
        } else {
            rec.save("index", index).finish(out, move |c| {
                let g = c.grad();
                let index = c.saved(0)?;
                let dself = c.grad_for(0, || g.scatter_value(di, &index, Scalar::Int(0)))?;
                let dsrc = c.grad_for(1, || grad_src(g, &index))?;
                Ok(vec![dself, dsrc])
            })
        }
    }

    fn scatter_inplace(
        &self,
        op: &'static str,
        dim: i64,
        index: &Tensor,
        src: Option<&Tensor>,
        value: Option<Scalar>,
        accumulate: bool,
    ) -> Result<()> {
        let d = self.check_scatter_index(op, dim, index)?;
        assert_no_internal_overlap(self.layout())?;
        no_overlap(self, index)?;
        if let Some(s) = src {
            no_overlap(self, s)?;
        }
        let others: Vec<&Tensor> = src.into_iter().collect();
        let direct = || {
            let ks = match (src, value) {
                (Some(s), _) => ScatterSrc::Array(s),
                (None, Some(v)) => ScatterSrc::Value(v),
                _ => unreachable!("scatter needs src or value"),
            };
            k::scatter(self, d, index, ks, accumulate)
        };
        let name = if accumulate {
            "scatter_add_"
        } else {
            "scatter_"
        };
        inplace(name, self, &others, direct, |s| {
            s.scatter_impl(op, dim, index, src, value, accumulate)
        })
    }

    // ----- masked_fill -----

    fn check_mask(&self, mask: &Tensor) -> Result<Dims> {
        if mask.dtype() != DType::Bool {
            bail!(
                runtime,
                "masked_fill_ only supports boolean masks, but got mask with dtype {}",
                mask.dtype().cpp_type_name()
            );
        }
        broadcast_shapes(self.shape(), mask.shape())
    }

    /// A copy of `self` (broadcast with `mask`) with `value` where `mask`.
    pub fn masked_fill_scalar(&self, mask: &Tensor, value: Scalar) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let shape = self.check_mask(mask)?;
        let rec = record("MaskedFillBackward0", &[self]);
        let out = crate::dispatch_all!(self.dtype(), T =>
            Tensor::from(crate::kernels::copy::contiguous_as::<T>(&*self.broadcast_to_raw(&shape)?)?));
        k::masked_fill(&out, mask, value)?;
        rec.save("mask", mask).finish(out, move |c| {
            let m = c.saved(0)?;
            Ok(vec![Some(c.grad().masked_fill_scalar(&m, Scalar::Int(0))?)])
        })
    }

    /// `masked_fill` with a 0-dim tensor value (differentiable in it).
    pub fn masked_fill(&self, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self, value])?;
        if value.ndim() != 0 {
            bail!(
                runtime,
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                value.ndim()
            );
        }
        let shape = self.check_mask(mask)?;
        let rec = record("MaskedFillBackward1", &[self, value]);
        let out = crate::dispatch_all!(self.dtype(), T =>
            Tensor::from(crate::kernels::copy::contiguous_as::<T>(&*self.broadcast_to_raw(&shape)?)?));
        k::masked_fill(&out, mask, value.item()?)?;
        rec.save("mask", mask).finish(out, move |c| {
            let (g, m) = (c.grad(), c.saved(0)?);
            let ds = c.grad_for(0, || g.masked_fill_scalar(&m, Scalar::Int(0)))?;
            let dv = if c.needs(1) {
                let not_m = Tensor::from(k::logical_not(&m));
                Some(g.masked_fill_scalar(&not_m, Scalar::Int(0))?.sum()?)
            } else {
                None
            };
            Ok(vec![ds, dv])
        })
    }

    fn check_masked_fill_inplace(&self, mask: &Tensor) -> Result<()> {
        let shape = self.check_mask(mask)?;
        assert_no_partial_overlap(self, mask)?;
        if shape.as_slice() != self.shape() {
            bail!(
                runtime,
                "output with shape {} doesn't match the broadcast shape {}",
                shape_str(self.shape()),
                shape_str(&shape)
            );
        }
        Ok(())
    }

    pub fn masked_fill_scalar_(&self, mask: &Tensor, value: Scalar) -> Result<()> {
        self.check_masked_fill_inplace(mask)?;
        inplace(
            "masked_fill_",
            self,
            &[],
            || k::masked_fill(self, mask, value),
            |s| s.masked_fill_scalar(mask, value),
        )
    }

    pub fn masked_fill_(&self, mask: &Tensor, value: &Tensor) -> Result<()> {
        if value.ndim() != 0 {
            bail!(
                runtime,
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                value.ndim()
            );
        }
        self.check_masked_fill_inplace(mask)?;
        let v = value.item()?;
        inplace(
            "masked_fill_",
            self,
            &[value],
            || k::masked_fill(self, mask, v),
            |s| s.masked_fill(mask, value),
        )
    }
}

// ----- index_add / index_copy / index_fill: whole slices along one dim -----

/// torch's `self.size(dim)` in a message: an IndexError for a 0-dim tensor
/// (or a dim past its end) instead of a number.
fn size_at(t: &Tensor, dim: usize) -> Result<usize> {
    if t.ndim() == 0 {
        bail!(
            index,
            "Dimension specified as {} but tensor has no dimensions",
            dim
        );
    }
    Ok(t.shape()[wrap_dim(dim as i64, t.ndim())?])
}

/// `shape` without dim `dim` (unchanged when it has no dims), as torch's
/// index_* checks compare slices.
fn without_dim(shape: &[usize], dim: usize) -> Vec<usize> {
    let mut s = shape.to_vec();
    if !s.is_empty() {
        s.remove(dim);
    }
    s
}

/// `s` converted to `dt`, or torch's error when it does not fit
/// (`checked_convert`: a float beyond float32's range, a non-finite or
/// out-of-range float for int64).
fn checked_scalar(s: Scalar, dt: DType) -> Result<Scalar> {
    let v = s.to_f64();
    let overflow = match (dt, s) {
        (DType::F32, Scalar::Float(f)) => f.is_finite() && f.abs() > f32::MAX as f64,
        (DType::I64, Scalar::Float(f)) => !(f >= -(2f64.powi(63)) && f < 2f64.powi(63)),
        _ => false,
    };
    if overflow {
        let ty = if dt == DType::F32 { "float" } else { "int64_t" };
        bail!(
            runtime,
            "value cannot be converted to type {} without overflow",
            ty
        );
    }
    Ok(match dt {
        DType::I64 => Scalar::Int(match s {
            Scalar::Int(i) => i,
            _ => v as i64,
        }),
        DType::Bool => Scalar::Bool(v != 0.0 || v.is_nan()),
        _ => Scalar::Float(v),
    })
}

/// `t`'s memory as a 1-element vector when `t` is 0-dim (the index_* ops
/// treat a scalar as one slice along dim 0), else `t` itself.
fn at_least_1d(t: &Tensor) -> crate::buffer::Strided {
    match t.ndim() {
        0 => (**t).with_layout(Layout {
            shape: smallvec::smallvec![1],
            strides: smallvec::smallvec![1],
            offset: t.storage_offset(),
        }),
        _ => (**t).clone(),
    }
}

/// The plan that writes slice `j` of a source into slice `index[j]` of a
/// tensor of `shape` along `dim` (`index` valid and non-negative).
fn slice_plan(shape: &[usize], dim: usize, index: &[i64]) -> Result<Arc<AdvPlan>> {
    let shape = if shape.is_empty() { &[1][..] } else { shape };
    let mut idx: Vec<Option<Tensor>> = vec![None; dim];
    idx.push(Some(Tensor::from_vec(index.to_vec(), &[index.len()])?));
    Ok(Arc::new(plan_indices(shape, &idx)?))
}

/// A contiguous copy of `t`, without history (the caller records).
fn contiguous_copy(t: &Tensor) -> Result<Tensor> {
    Ok(
        crate::dispatch_all!(t.dtype(), T => Tensor::from(crate::kernels::copy::contiguous_as::<T>(t)?)),
    )
}

/// `grad.index_select(dim, index)` shaped as `source` (torch: expanded as
/// the source, or a 0-dim source's one element).
fn select_as_source(g: &Tensor, dim: usize, index: &Tensor, source: &[usize]) -> Result<Tensor> {
    let r = g.index_select(dim as i64, index)?;
    if r.shape() == source {
        return Ok(r);
    }
    r.reshape(&to_i64(source))
}

/// index_add's checked arguments: the wrapped dim, the index values (empty
/// when there is nothing to write) and alpha in self's dtype.
struct IndexAddArgs {
    dim: usize,
    index: Vec<i64>,
    alpha: Scalar,
}

/// index_copy's checked arguments: the wrapped dim and the index values
/// (empty when there is nothing to write).
struct IndexCopyArgs {
    dim: usize,
    index: Vec<i64>,
}

impl Tensor {
    /// torch's index_add checks (`index_func_meta_impl`, then the kernel's
    /// index checks), in torch's order.
    fn check_index_add(
        &self,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        alpha: Scalar,
    ) -> Result<IndexAddArgs> {
        let d = wrap_dim(dim, self.ndim())?;
        if index.ndim() > 1 {
            bail!(
                index,
                "index_add_(): Index is supposed to be a vector, but got dim: {} with type: {} and size: {:?}",
                index.ndim(),
                index.dtype().scalar_type_name(),
                index.shape()
            );
        }
        if index.dtype() != DType::I64 {
            bail!(
                runtime,
                "index_add_(): Expected dtype int32/int64 for index but got: {}",
                index.dtype().scalar_type_name()
            );
        }
        if self.dtype() != source.dtype() {
            bail!(
                runtime,
                "index_add_(): self ({}) and source ({}) must have the same scalar type",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            );
        }
        if d != 0 && d >= source.ndim() {
            bail!(
                runtime,
                "index_add_(): Indexing dim {} is out of bounds of the source tensor with dim {}",
                d,
                source.ndim()
            );
        }
        let n = index.numel();
        let expected = match source.ndim() {
            0 => 1,
            _ => source.shape()[d],
        };
        if n != expected {
            bail!(
                runtime,
                "index_add_(): Number of indices ({}) should be equal to source.size(dim): ({}), for dim: {}",
                n,
                size_at(source, d)?,
                d
            );
        }
        let sliced = |t: &Tensor| match (self.ndim(), source.ndim()) {
            (0, _) | (_, 0) => t.shape().to_vec(),
            _ => without_dim(t.shape(), d),
        };
        if sliced(self) != sliced(source) {
            bail!(
                runtime,
                "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = {:?} source.shape = {:?}",
                self.shape(),
                source.shape()
            );
        }
        let given = alpha;
        let alpha = checked_scalar(alpha, self.dtype())?;
        let iv = index.try_to_vec::<i64>()?;
        let size = self.shape().get(d).copied().unwrap_or(1) as i64;
        if self.ndim() > 1 {
            if n == 0 || self.numel() == 0 {
                return Ok(IndexAddArgs {
                    dim: d,
                    index: Vec::new(),
                    alpha,
                });
            }
            // torch adds through scatter_add (its index message) along the
            // first or last dim with alpha 1, else slice by slice
            if (d == 0 || d == self.ndim() - 1) && given.to_f64() == 1.0 {
                if let Some(&i) = iv.iter().find(|&&i| i < 0 || i >= size) {
                    bail!(
                        runtime,
                        "index {} is out of bounds for dimension {} with size {}",
                        i,
                        d,
                        size
                    );
                }
            }
        }
        if iv.iter().any(|&i| i < 0 || i >= size) {
            bail!(index, "index out of range in self");
        }
        Ok(IndexAddArgs {
            dim: d,
            index: iv,
            alpha,
        })
    }

    /// `source * alpha` as index_add adds it (alpha in self's dtype), with
    /// no history.
    fn index_add_values(source: &Tensor, alpha: Scalar) -> Result<Tensor> {
        if alpha.to_f64() == 1.0 {
            return Ok(source.detach());
        }
        let _g = crate::autograd::no_grad();
        source.detach().mul(&Tensor::scalar(alpha, source.dtype()))
    }

    /// A copy of `self` with `alpha * source`'s slices along `dim` added at
    /// positions `index` (repeated positions accumulate).
    pub fn index_add(
        &self,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        alpha: Scalar,
    ) -> Result<Tensor> {
        let a = self.check_index_add(dim, index, source, alpha)?;
        self.index_add_checked(a, index, source)
    }

    fn index_add_checked(
        &self,
        a: IndexAddArgs,
        index: &Tensor,
        source: &Tensor,
    ) -> Result<Tensor> {
        let rec = record("IndexAddBackward0", &[self, source]);
        let out = contiguous_copy(self)?;
        if !a.index.is_empty() {
            let plan = slice_plan(self.shape(), a.dim, &a.index)?;
            let v = Self::index_add_values(source, a.alpha)?;
            k::index_scatter(&at_least_1d(&out), &plan, &at_least_1d(&v), true)?;
        }
        let (d, alpha, src_shape) = (a.dim, a.alpha, source.dims());
        rec.save("index", index).finish(out, move |c| {
            let g = c.grad();
            let ds = c.grad_for(1, || {
                let r = select_as_source(g, d, &c.saved(0)?, &src_shape)?;
                match alpha.to_f64() == 1.0 {
                    true => Ok(r),
                    false => r.mul(&Tensor::scalar(alpha, r.dtype())),
                }
            })?;
            Ok(vec![Some(g.clone()), ds])
        })
    }

    /// In-place `index_add_`.
    pub fn index_add_(
        &self,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        alpha: Scalar,
    ) -> Result<()> {
        let a = self.check_index_add(dim, index, source, alpha)?;
        assert_no_internal_overlap(self.layout())?;
        no_overlap(self, index)?;
        no_overlap(self, source)?;
        let (d, iv, alpha) = (a.dim, a.index.clone(), a.alpha);
        inplace(
            "index_add_",
            self,
            &[source],
            || {
                if iv.is_empty() {
                    return Ok(());
                }
                let plan = slice_plan(self.shape(), d, &iv)?;
                let v = Self::index_add_values(source, alpha)?;
                k::index_scatter(&at_least_1d(self), &plan, &at_least_1d(&v), true)
            },
            |s| s.index_add_checked(a, index, source),
        )
    }

    /// torch's index_copy checks, in its order.
    fn check_index_copy(&self, dim: i64, index: &Tensor, source: &Tensor) -> Result<IndexCopyArgs> {
        let d = wrap_dim(dim, self.ndim())?;
        if index.ndim() >= 2 {
            bail!(
                index,
                "index_copy_(): Index should have dimension 1 or 0 (got {})",
                index.ndim()
            );
        }
        let n = index.numel();
        if source.ndim() == 0 && n != 1 {
            bail!(
                index,
                "index_copy_(): When source is scalar, index should have one element (got {})",
                n
            );
        }
        if source.ndim() != self.ndim() && source.ndim() != 0 && self.ndim() != 0 {
            bail!(
                index,
                "index_copy_(): When source and destination are not scalars, their dimensionality must match. Source dimensionality ({}), destination dimensionality ({})",
                source.ndim(),
                self.ndim()
            );
        }
        if index.dtype() != DType::I64 {
            bail!(
                runtime,
                "index_copy_(): Expected a long tensor for index, but got {}",
                index.dtype().scalar_type_name()
            );
        }
        if self.dtype() != source.dtype() {
            bail!(
                runtime,
                "index_copy_(): self and source expected to have the same dtype, but got (self) {} and (source) {}",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            );
        }
        let (ds, ss) = (without_dim(self.shape(), d), without_dim(source.shape(), d));
        if ds != ss {
            let words = |s: &[usize]| {
                s.iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            bail!(
                runtime,
                "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: {} at dimension {} and source slice shape: {} at dimension 0.",
                words(&ds),
                d,
                words(&ss)
            );
        }
        if source.ndim() != 0 && n != source.shape()[d] {
            bail!(
                index,
                "index_copy_(): Number of indices ({}) should be equal to source.size(dim) ({})",
                n,
                source.shape()[d]
            );
        }
        let iv = index.try_to_vec::<i64>()?;
        let size = self.shape().get(d).copied().unwrap_or(1);
        // torch checks the indices as it copies: not at all when the
        // slices are empty
        let slice_numel: usize = without_dim(self.shape(), d).iter().product();
        if slice_numel == 0 && self.ndim() > 1 {
            return Ok(IndexCopyArgs {
                dim: d,
                index: Vec::new(),
            });
        }
        if let Some(&i) = iv.iter().find(|&&i| i < 0 || i >= size as i64) {
            bail!(
                index,
                "index_copy_(): index {} is out of bounds for dimension {} with size {}",
                i,
                d,
                size
            );
        }
        Ok(IndexCopyArgs { dim: d, index: iv })
    }

    /// A copy of `self` with `source`'s slices along `dim` written at
    /// positions `index` (the last write wins for a repeated position).
    pub fn index_copy(&self, dim: i64, index: &Tensor, source: &Tensor) -> Result<Tensor> {
        let a = self.check_index_copy(dim, index, source)?;
        self.index_copy_checked(a, index, source)
    }

    fn index_copy_checked(
        &self,
        a: IndexCopyArgs,
        index: &Tensor,
        source: &Tensor,
    ) -> Result<Tensor> {
        let rec = record("IndexCopyBackward0", &[self, source]);
        let out = contiguous_copy(self)?;
        if !a.index.is_empty() {
            let plan = slice_plan(self.shape(), a.dim, &a.index)?;
            k::index_scatter(&at_least_1d(&out), &plan, &at_least_1d(source), false)?;
        }
        let (d, src_shape) = (a.dim, source.dims());
        rec.save("index", index).finish(out, move |c| {
            let (g, index) = (c.grad(), c.saved(0)?);
            let ds = c.grad_for(0, || g.index_fill_scalar(d as i64, &index, Scalar::Int(0)))?;
            let dsrc = c.grad_for(1, || select_as_source(g, d, &index, &src_shape))?;
            Ok(vec![ds, dsrc])
        })
    }

    /// In-place `index_copy_`.
    pub fn index_copy_(&self, dim: i64, index: &Tensor, source: &Tensor) -> Result<()> {
        let a = self.check_index_copy(dim, index, source)?;
        assert_no_internal_overlap(self.layout())?;
        no_overlap(self, index)?;
        no_overlap(self, source)?;
        let (d, iv) = (a.dim, a.index.clone());
        inplace(
            "index_copy_",
            self,
            &[source],
            || {
                if iv.is_empty() {
                    return Ok(());
                }
                let plan = slice_plan(self.shape(), d, &iv)?;
                k::index_scatter(&at_least_1d(self), &plan, &at_least_1d(source), false)
            },
            |s| s.index_copy_checked(a, index, source),
        )
    }

    /// torch's index_fill checks, in its order (`inplace`: the index may
    /// not share memory with `self`); the wrapped dim and the wrapped index
    /// values.
    fn check_index_fill(
        &self,
        dim: i64,
        index: &Tensor,
        inplace: bool,
    ) -> Result<(usize, Vec<i64>)> {
        if index.dtype() != DType::I64 {
            bail!(index, "index_fill_(): Expected dtype int64 for index.");
        }
        if inplace {
            no_overlap(self, index)?;
        }
        let d = wrap_dim(dim, self.ndim())?;
        if index.ndim() > 1 {
            bail!(runtime, "Index has to be a vector/scalar");
        }
        let size = self.shape().get(d).copied().unwrap_or(1);
        // torch checks the indices as it fills: not at all when the slices
        // are empty
        let slice_numel: usize = without_dim(self.shape(), d).iter().product();
        if slice_numel == 0 && self.ndim() > 1 {
            return Ok((d, Vec::new()));
        }
        let iv = index
            .to_vec::<i64>()
            .into_iter()
            .map(|i| Ok(k::wrap_index(i, size, d)? as i64))
            .collect::<Result<Vec<i64>>>()?;
        Ok((d, iv))
    }

    /// Writes `value` into `self`'s slices `index` along `dim`, in place.
    fn fill_slices(t: &crate::buffer::Strided, d: usize, iv: &[i64], value: Scalar) -> Result<()> {
        if iv.is_empty() {
            return Ok(());
        }
        let plan = slice_plan(t.shape(), d, iv)?;
        let v = Tensor::scalar(value, t.dtype());
        k::index_scatter(t, &plan, &v, false)
    }

    /// A copy of `self` (laid out as torch's clone) with `value` in the
    /// slices `index` along `dim`.
    pub fn index_fill_scalar(&self, dim: i64, index: &Tensor, value: Scalar) -> Result<Tensor> {
        let (d, iv) = self.check_index_fill(dim, index, false)?;
        let value = checked_scalar(value, self.dtype())?;
        let rec = record("IndexFillBackward0", &[self]);
        let out = crate::dispatch_all!(self.dtype(), T => Tensor::from(crate::kernels::copy::copy_as::<T>(self)?));
        Self::fill_slices(&at_least_1d(&out), d, &iv, value)?;
        rec.save("index", index).finish(out, move |c| {
            let index = c.saved(0)?;
            Ok(vec![Some(c.grad().index_fill_scalar(
                d as i64,
                &index,
                Scalar::Int(0),
            )?)])
        })
    }

    /// `index_fill` with a 0-dim tensor value (differentiable in it: the
    /// sum of the gradient over the distinct indices, as torch).
    pub fn index_fill(&self, dim: i64, index: &Tensor, value: &Tensor) -> Result<Tensor> {
        check_fill_value(value)?;
        let (d, iv) = self.check_index_fill(dim, index, false)?;
        let v = checked_scalar(value.item()?, self.dtype())?;
        let rec = record("IndexFillBackward1", &[self, value]);
        let out = crate::dispatch_all!(self.dtype(), T => Tensor::from(crate::kernels::copy::copy_as::<T>(self)?));
        Self::fill_slices(&at_least_1d(&out), d, &iv, v)?;
        rec.save("index", index).finish(out, move |c| {
            let (g, index) = (c.grad(), c.saved(0)?);
            let ds = c.grad_for(0, || g.index_fill_scalar(d as i64, &index, Scalar::Int(0)))?;
            let dv = c.grad_for(1, || {
                // torch: grad.index_select(dim, unique(index)).sum()
                let mut u = index.try_to_vec::<i64>()?;
                u.sort_unstable();
                u.dedup();
                let n = u.len();
                g.index_select(d as i64, &Tensor::from_vec(u, &[n])?)?.sum()
            })?;
            Ok(vec![ds, dv])
        })
    }

    pub fn index_fill_scalar_(&self, dim: i64, index: &Tensor, value: Scalar) -> Result<()> {
        let (d, iv) = self.check_index_fill(dim, index, true)?;
        let v = checked_scalar(value, self.dtype())?;
        inplace(
            "index_fill_",
            self,
            &[],
            || Self::fill_slices(&at_least_1d(self), d, &iv, v),
            |s| s.index_fill_scalar(dim, index, value),
        )
    }

    pub fn index_fill_(&self, dim: i64, index: &Tensor, value: &Tensor) -> Result<()> {
        check_fill_value(value)?;
        let (d, iv) = self.check_index_fill(dim, index, true)?;
        let v = checked_scalar(value.item()?, self.dtype())?;
        inplace(
            "index_fill_",
            self,
            &[value],
            || Self::fill_slices(&at_least_1d(self), d, &iv, v),
            |s| s.index_fill(dim, index, value),
        )
    }
}

/// index_fill's value tensor must be 0-dim.
fn check_fill_value(value: &Tensor) -> Result<()> {
    if value.ndim() != 0 {
        bail!(
            runtime,
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
            value.ndim()
        );
    }
    Ok(())
}
