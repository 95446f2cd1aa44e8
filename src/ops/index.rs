//! Indexing: `getitem`/`setitem` (torch's `x[...]` and `x[...] = v`),
//! advanced indexing (`index`, `index_put`), `index_select`, `gather`,
//! `scatter`/`scatter_add`, `masked_fill`, `masked_select`, `take`.
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
        .map(|e| Ok(e.2.broadcast_to_raw(&bshape)?.to_vec::<i64>()))
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
/// (the same test `apply_inplace` makes).
fn inplace_tracked(t: &Tensor, others: &[&Tensor]) -> bool {
    is_grad_enabled() && (t.requires_grad() || others.iter().any(|o| o.requires_grad()))
}

/// Runs an in-place op: `direct` writes into `t` when nothing is tracked;
/// otherwise the out-of-place `f` goes through `apply_inplace`.
fn inplace(
    op: &'static str,
    t: &Tensor,
    others: &[&Tensor],
    direct: impl FnOnce() -> Result<()>,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<()> {
    if inplace_tracked(t, others) {
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
        let plan = Arc::new(plan_indices(self.shape(), indices)?);
        self.index_plan(plan)
    }

    pub(crate) fn index_plan(&self, plan: Arc<AdvPlan>) -> Result<Tensor> {
        let rec = record("IndexBackward0", &[self]);
        let out = Tensor::from(k::index_gather(self, &plan)?);
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
        let plan = Arc::new(plan_indices(self.shape(), indices)?);
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
        let out = crate::dispatch_all!(self.dtype(), T => Tensor::from(crate::kernels::copy::contiguous_as::<T>(self)));
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
        check_put_values(&plan, self.shape(), self.dtype(), values)?;
        // torch: writing an expanded self is allowed (deprecated); values
        // and indices may not share memory with self, except a 0-dim value
        // under one bool mask (torch runs that as masked_fill_ with the
        // value read first).
        let one_mask = matches!(indices, [Some(m)] if m.dtype() == DType::Bool);
        if !(one_mask && values.ndim() == 0 && !accumulate) {
            no_overlap(self, values)?;
        }
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
    /// (one entry per dim of the view, as `index` takes them).
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
                    r = r.slice(dim as i64, *start, *stop, *step)?;
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
        let scalar_value = value.ndim() == 0;
        // torch drops leading size-1 dims of the value (slicePrefix1sSize)
        let lead = value.shape().iter().take_while(|&&d| d == 1).count();
        let value = if lead > 0 {
            value.reshape(&to_i64(&value.shape()[lead..]))?
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
        // torch's copy_to: a 0-dim value of another shape is a fill (read
        // before anything is written, so it may be an element of self)
        if scalar_value && r.ndim() != 0 {
            return r.fill_tensor_(&value);
        }
        // ... and otherwise the value expanded to the target's shape
        // (expand_inplace), so that `t[None] = t` copies a tensor onto its
        // very same data (allowed) rather than onto an overlapping view.
        if value.shape() != r.shape() {
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
        let iv = index.to_vec::<i64>();
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
        for &i in index.to_vec::<i64>().iter() {
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
        self.scatter_impl("scatter", dim, index, Some(src), None, false)
    }
    /// A copy of `self` with `value` written at `index` along `dim`.
    pub fn scatter_value(&self, dim: i64, index: &Tensor, value: Scalar) -> Result<Tensor> {
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
        let out = crate::dispatch_all!(self.dtype(), T => Tensor::from(crate::kernels::copy::contiguous_as::<T>(self)));
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
        let shape = self.check_mask(mask)?;
        let rec = record("MaskedFillBackward0", &[self]);
        let out = crate::dispatch_all!(self.dtype(), T =>
            Tensor::from(crate::kernels::copy::contiguous_as::<T>(&*self.broadcast_to_raw(&shape)?)));
        k::masked_fill(&out, mask, value)?;
        rec.save("mask", mask).finish(out, move |c| {
            let m = c.saved(0)?;
            Ok(vec![Some(c.grad().masked_fill_scalar(&m, Scalar::Int(0))?)])
        })
    }

    /// `masked_fill` with a 0-dim tensor value (differentiable in it).
    pub fn masked_fill(&self, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
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
            Tensor::from(crate::kernels::copy::contiguous_as::<T>(&*self.broadcast_to_raw(&shape)?)));
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
