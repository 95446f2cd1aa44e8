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
use crate::kernels::overlap::{
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
        let t = &t.index_form();
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
        bail!(runtime, "{}", crate::kernels::overlap::PARTIAL_OVERLAP);
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
    t.before_write()?;
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
                TensorIndex::Tensor(t) => {
                    let t = &t.index_form();
                    match (t.dtype(), t.ndim()) {
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
                    }
                }
            }
        }
        Ok((r, adv))
    }

    /// An int32 index as int64 (both index as torch's do); others as they
    /// are.
    pub fn long_index(&self) -> Tensor {
        match self.dtype() {
            DType::I32 => self.cast_raw(DType::I64),
            _ => self.clone(),
        }
    }

    /// An index tensor in the form indexing reads: int32 as int64, uint8
    /// as a bool mask (torch's deprecated byte masks); others as they are.
    fn index_form(&self) -> Tensor {
        match self.dtype() {
            DType::U8 => self.cast_raw(DType::Bool),
            _ => self.long_index(),
        }
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
        // Indexing that selects the whole tensor (`...`, `()`, full
        // slices) writes into self itself, not through a view, so `t[...] =
        // v` records CopyBackwards / FillBackward3 on `t`, not CopySlices.
        let r = if r.same(self) || self.selects_whole(items) {
            self.clone()
        } else {
            r
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

    /// Whether basic indexing by `items` is torch's self: only ellipses and
    /// slices that applySlice skips (start 0 as written, step 1, a stop
    /// past the end or none), so `t[0:-1]` or `t[-2:]` of a 2-element `t`
    /// are views even where they cover it all.
    fn selects_whole(&self, items: &[TensorIndex]) -> bool {
        let ellipsis = items
            .iter()
            .position(|i| matches!(i, TensorIndex::Ellipsis));
        let after = ellipsis.map_or(0, |e| items.len() - e - 1);
        items.iter().enumerate().all(|(k, item)| match item {
            TensorIndex::Ellipsis => true,
            TensorIndex::Slice { start, stop, step } => {
                let dim = match ellipsis {
                    Some(e) if k > e => (self.ndim() + k).checked_sub(e + 1 + after),
                    _ => Some(k),
                };
                let Some(size) = dim.and_then(|d| self.shape().get(d)) else {
                    return false;
                };
                *step == 1 && start.unwrap_or(0) == 0 && stop.is_none_or(|s| s >= *size as i64)
            }
            _ => false,
        })
    }

    /// `self[items] = scalar` (the scalar becomes `self`'s dtype).
    pub fn setitem_scalar(&self, items: &[TensorIndex], value: Scalar) -> Result<()> {
        let value = value.checked_to(self.dtype())?;
        self.setitem(items, &Tensor::scalar(value, self.dtype()))
    }
}

mod select;
mod slices;
