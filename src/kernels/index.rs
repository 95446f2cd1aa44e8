//! Gather / scatter loops for the indexing ops. No autograd here: the ops in
//! `src/ops/index.rs` validate arguments, call these, and record history.
//!
//! Every kernel validates all of its indices before it writes anything, so a
//! bad index leaves the destination untouched, and reads its value operands
//! into a buffer before it takes the destination's write lock (a value may
//! alias the destination).

use crate::tensor::layout::{for_each_offset, for_each_offset2};
use crate::tensor::{DType, Dims, Element, Layout, StorageData, Tensor};
use crate::{bail, Result};

/// Addition for accumulating kernels (wrapping for int64, `or` for bool).
pub trait Accumulate: Element {
    fn acc(self, other: Self) -> Self;
}
impl Accumulate for f32 {
    #[inline(always)]
    fn acc(self, o: Self) -> Self {
        self + o
    }
}
impl Accumulate for f64 {
    #[inline(always)]
    fn acc(self, o: Self) -> Self {
        self + o
    }
}
impl Accumulate for i64 {
    #[inline(always)]
    fn acc(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
}
impl Accumulate for bool {
    #[inline(always)]
    fn acc(self, o: Self) -> Self {
        self || o
    }
}

/// Dispatches on any dtype with `$T: Accumulate`.
macro_rules! dispatch_acc {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::Bool => {
                type $T = bool;
                $body
            }
            DType::I64 => {
                type $T = i64;
                $body
            }
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}

/// `i` wrapped into `0..size` (negative counts from the end), or torch's
/// IndexError for dimension `dim`.
#[inline]
pub fn wrap_index(i: i64, size: usize, dim: usize) -> Result<usize> {
    let s = size as i64;
    if i < -s || i >= s {
        bail!(
            index,
            "index {} is out of bounds for dimension {} with size {}",
            i,
            dim,
            size
        );
    }
    Ok(if i < 0 { (i + s) as usize } else { i as usize })
}

/// The number of true elements of a bool tensor and, per dim, the
/// coordinate of each in row-major order (torch's nonzero).
pub fn nonzero(mask: &Tensor) -> (usize, Vec<Vec<i64>>) {
    let vals: Vec<bool> = mask.to_vec::<bool>();
    let shape = mask.shape();
    let n = shape.len();
    let count = vals.iter().filter(|&&b| b).count();
    let mut out: Vec<Vec<i64>> = (0..n).map(|_| Vec::with_capacity(count)).collect();
    let strides = crate::tensor::layout::contiguous_strides(shape);
    for (flat, _) in vals.iter().enumerate().filter(|(_, &b)| b) {
        let mut rem = flat;
        for d in 0..n {
            out[d].push((rem / strides[d]) as i64);
            rem %= strides[d];
        }
    }
    (count, out)
}

/// Advanced indexing plan over a layout: dims `pre` (kept, before the
/// indexed block), the indexed block (one storage offset per element of the
/// broadcast index shape `bshape`), dims `post` (kept, after it).
pub struct AdvPlan {
    pub pre: Vec<usize>,
    pub post: Vec<usize>,
    pub bshape: Dims,
    /// The indexed dims, in index order.
    pub dims: Vec<usize>,
    /// Per indexed dim, the (broadcast, row-major) index values.
    pub idx: Vec<Vec<i64>>,
}

impl AdvPlan {
    /// The shape of `src[indices]` for a source of shape `shape`.
    pub fn out_shape(&self, shape: &[usize]) -> Dims {
        let mut out = Dims::new();
        out.extend(self.pre.iter().map(|&d| shape[d]));
        out.extend(self.bshape.iter().copied());
        out.extend(self.post.iter().map(|&d| shape[d]));
        out
    }
    /// Storage offsets (relative to the layout's offset) of each indexed
    /// block element in `l`; checks every index against its dim.
    pub fn offsets(&self, l: &Layout) -> Result<Vec<usize>> {
        let n: usize = self.bshape.iter().product();
        let mut offs = vec![0usize; n];
        for (j, &d) in self.dims.iter().enumerate() {
            let (size, stride) = (l.shape[d], l.strides[d]);
            for (o, &i) in offs.iter_mut().zip(&self.idx[j]) {
                *o += wrap_index(i, size, d)? * stride;
            }
        }
        Ok(offs)
    }
    /// Visits the storage offsets of `l` in the row-major order of the
    /// indexed result.
    fn for_each(&self, l: &Layout, offs: &[usize], mut f: impl FnMut(usize)) {
        let pick = |ds: &[usize]| -> (Dims, Dims) {
            (
                ds.iter().map(|&d| l.shape[d]).collect(),
                ds.iter().map(|&d| l.strides[d]).collect(),
            )
        };
        let (pre_s, pre_st) = pick(&self.pre);
        let (post_s, post_st) = pick(&self.post);
        for_each_offset(&pre_s, &pre_st, l.offset, |p| {
            for &o in offs {
                if post_s.is_empty() {
                    f(p + o);
                } else {
                    for_each_offset(&post_s, &post_st, p + o, &mut f);
                }
            }
        });
    }
}

/// `src[indices]` as a fresh contiguous tensor.
///
/// The result is row-major over (kept dims before the block, the indexed
/// block, kept dims after it): one piece of `prod(post)` elements per
/// (leading position, indexed offset), copied as a run (or a strided
/// gather) when the trailing dims merge into one, split over the threads
/// by whole pieces.
pub fn index_gather(src: &Tensor, plan: &AdvPlan) -> Result<Tensor> {
    let l = src.layout();
    let offs = plan.offsets(l)?;
    let shape = plan.out_shape(src.shape());
    let pick = |ds: &[usize]| -> (Dims, Dims) {
        (
            ds.iter().map(|&d| l.shape[d]).collect(),
            ds.iter().map(|&d| l.strides[d]).collect(),
        )
    };
    let (pre_s, pre_st) = pick(&plan.pre);
    let (post_s, post_st) = pick(&plan.post);
    let piece: usize = post_s.iter().product();
    let mut pre = Vec::new();
    for_each_offset(&pre_s, &pre_st, l.offset, |p| pre.push(p));
    let step = run_stride(&post_s, &post_st);
    fn go<T: Element>(
        src: &Tensor,
        shape: &[usize],
        pre: &[usize],
        offs: &[usize],
        (piece, step): (usize, Option<usize>),
        (post_s, post_st): (&[usize], &[usize]),
    ) -> Tensor {
        let st = src.storage().read_recursive();
        let d = st.as_slice::<T>();
        let n: usize = shape.iter().product();
        let mut out = crate::tensor::pool::buffer::<T>(n);
        if n > 0 {
            let grain = (1 << 15) / piece + 1;
            crate::parallel::for_each_chunk_mut_aligned(
                &mut out,
                grain * piece,
                piece,
                |at, chunk| {
                    let b = at / piece;
                    let (mut p, mut o) = (b / offs.len(), b % offs.len());
                    if piece == 1 {
                        // One element per (leading position, offset): a run of
                        // offsets per leading position.
                        let mut rest = chunk;
                        while !rest.is_empty() {
                            let n = (offs.len() - o).min(rest.len());
                            let (head, tail) = rest.split_at_mut(n);
                            let row = &d[pre[p]..];
                            for (v, &off) in head.iter_mut().zip(&offs[o..o + n]) {
                                *v = row[off];
                            }
                            (rest, p, o) = (tail, p + 1, 0);
                        }
                        return;
                    }
                    for dst in chunk.chunks_exact_mut(piece) {
                        let base = pre[p] + offs[o];
                        o += 1;
                        if o == offs.len() {
                            (p, o) = (p + 1, 0);
                        }
                        match step {
                            Some(s) => super::slices::gather(&d[base..], s, dst),
                            None => {
                                let mut it = dst.iter_mut();
                                for_each_offset(post_s, post_st, base, |o| {
                                    if let Some(v) = it.next() {
                                        *v = d[o];
                                    }
                                });
                            }
                        }
                    }
                },
            );
        }
        Tensor::from_data(T::wrap(out), shape)
    }
    Ok(crate::dispatch_all!(src.dtype(), T => go::<T>(
        src, &shape, &pre, &offs, (piece, step), (&post_s, &post_st)
    )))
}

/// The stride of dims `shape`/`strides` walked in row-major order when they
/// form one evenly spaced run (size-1 dims ignored; 1 for no dims), else
/// `None`.
fn run_stride(shape: &[usize], strides: &[usize]) -> Option<usize> {
    let dims: Vec<(usize, usize)> = shape
        .iter()
        .zip(strides)
        .filter(|(&n, _)| n != 1)
        .map(|(&n, &s)| (n, s))
        .collect();
    let Some(&(_, inner)) = dims.last() else {
        return Some(1);
    };
    let merges = dims.windows(2).all(|w| w[0].1 == w[1].1 * w[1].0);
    merges.then_some(inner)
}

/// `dst[indices] = values` (or `+=` with `accumulate`) in `dst`'s memory.
/// `values` must have `dst`'s dtype and broadcast to the indexed shape.
/// Does not bump versions.
pub fn index_scatter(
    dst: &Tensor,
    plan: &AdvPlan,
    values: &Tensor,
    accumulate: bool,
) -> Result<()> {
    let offs = plan.offsets(dst.layout())?;
    let shape = plan.out_shape(dst.shape());
    let values = values.broadcast_to_raw(&shape)?;
    fn go<T: Accumulate>(
        dst: &Tensor,
        plan: &AdvPlan,
        offs: &[usize],
        values: &Tensor,
        accumulate: bool,
    ) {
        let vals: Vec<T> = values.to_vec::<T>();
        let mut st = dst.storage().write();
        let d = st.as_mut_slice::<T>();
        let mut it = vals.into_iter();
        if accumulate {
            plan.for_each(dst.layout(), offs, |o| d[o] = d[o].acc(it.next().unwrap()));
        } else {
            plan.for_each(dst.layout(), offs, |o| d[o] = it.next().unwrap());
        }
    }
    dispatch_acc!(dst.dtype(), T => go::<T>(dst, plan, &offs, &values, accumulate));
    Ok(())
}

/// Checks `index` (int64, same ndim as `self_shape` unless both are at most
/// 1-D) against `self_shape` for gather/scatter along `dim`.
fn check_gather_scatter(
    op: &str,
    self_shape: &[usize],
    dim: usize,
    index: &Tensor,
    src_shape: Option<&[usize]>,
) -> Result<()> {
    if index.dtype() != DType::I64 {
        bail!(runtime, "{}(): Expected dtype int64 for index", op);
    }
    let (ni, ns) = (index.ndim().max(1), self_shape.len().max(1));
    if ni != ns {
        bail!(
            runtime,
            "Index tensor must have the same number of dimensions as {} tensor",
            if op == "gather" { "input" } else { "self" }
        );
    }
    if let Some(src) = src_shape {
        if src.len().max(1) != ni {
            bail!(
                runtime,
                "Index tensor must have the same number of dimensions as src tensor"
            );
        }
    }
    let idx = index.shape();
    for d in 0..idx.len() {
        let too_big_self = d != dim && self_shape.get(d).is_some_and(|&s| idx[d] > s);
        let too_big_src = src_shape.is_some_and(|s| s.get(d).is_some_and(|&s| idx[d] > s));
        if too_big_self || too_big_src {
            match src_shape {
                None => bail!(
                    runtime,
                    "Size does not match at dimension {} expected index {:?} to be no larger than self {:?} apart from dimension {}",
                    d,
                    idx,
                    self_shape,
                    dim
                ),
                Some(s) => bail!(
                    runtime,
                    "Expected index {:?} to be no larger than self {:?} apart from dimension {} and to be no larger size than src {:?}",
                    idx,
                    self_shape,
                    dim,
                    s
                ),
            }
        }
    }
    Ok(())
}

/// Checks an index value of gather/scatter (no wrapping of negatives; a
/// RuntimeError, as torch raises there).
#[inline]
fn check_gs_index(i: i64, size: usize, dim: usize) -> Result<usize> {
    if i < 0 || i >= size as i64 {
        bail!(
            runtime,
            "index {} is out of bounds for dimension {} with size {}",
            i,
            dim,
            size
        );
    }
    Ok(i as usize)
}

/// Shape and strides of `l`, padded to at least 1-D (0-dim tensors act as
/// 1-element vectors in gather/scatter).
fn padded(l: &Layout) -> (Dims, Dims) {
    let (mut shape, mut strides) = (l.shape.clone(), l.strides.clone());
    if shape.is_empty() {
        shape.push(1);
        strides.push(0);
    }
    (shape, strides)
}

/// `padded` with the stride of `dim` zeroed.
fn strides_without(l: &Layout, dim: usize) -> (Dims, Dims) {
    let (shape, mut strides) = padded(l);
    strides[dim] = 0;
    (shape, strides)
}

/// `out[p] = src[p with p[dim] = index[p]]`, of `index`'s shape. One pass:
/// each element is read as its index is checked (nothing is written to a
/// tensor anyone sees before all are valid).
pub fn gather(src: &Tensor, dim: usize, index: &Tensor) -> Result<Tensor> {
    check_gather_scatter("gather", src.shape(), dim, index, None)?;
    let size = src.shape().get(dim).copied().unwrap_or(1);
    let stride = src.strides().get(dim).copied().unwrap_or(0);
    let (_, sst) = strides_without(src.layout(), dim);
    let (ishape, istrides) = padded(index.layout());
    fn go<T: Element>(
        src: &Tensor,
        index: &Tensor,
        (ishape, istrides, sst): (&[usize], &[usize], &[usize]),
        (dim, size, stride): (usize, usize, usize),
    ) -> Result<Tensor> {
        let ist = index.storage().read_recursive();
        let iv = ist.as_slice::<i64>();
        let st = src.storage().read_recursive();
        let d = st.as_slice::<T>();
        let mut out: Vec<T> = Vec::with_capacity(index.numel());
        let mut bad = None;
        for_each_offset2(
            ishape,
            sst,
            src.storage_offset(),
            istrides,
            index.storage_offset(),
            |a, b| {
                let i = iv[b];
                if (i as u64) < size as u64 {
                    out.push(d[a + i as usize * stride]);
                } else {
                    bad.get_or_insert(i);
                    out.push(T::zero());
                }
            },
        );
        if let Some(i) = bad {
            check_gs_index(i, size, dim)?;
        }
        Ok(Tensor::from_data(T::wrap(out), index.shape()))
    }
    crate::dispatch_all!(src.dtype(), T => go::<T>(
        src, index, (&ishape, &istrides, &sst), (dim, size, stride)
    ))
}

/// What scatter writes: a tensor of values (read at the index's positions)
/// or one scalar value (already of the destination's dtype).
pub enum ScatterSrc<'a> {
    Tensor(&'a Tensor),
    Value(crate::Scalar),
}

/// `dst[p with p[dim] = index[p]] = src[p]` (or `+=` with `accumulate`)
/// for every position `p` of `index`, in `dst`'s memory.
pub fn scatter(
    dst: &Tensor,
    dim: usize,
    index: &Tensor,
    src: ScatterSrc<'_>,
    accumulate: bool,
) -> Result<()> {
    let op = if accumulate { "scatter_add" } else { "scatter" };
    let src_shape = match &src {
        ScatterSrc::Tensor(s) => Some(s.shape()),
        ScatterSrc::Value(_) => None,
    };
    check_gather_scatter(op, dst.shape(), dim, index, src_shape)?;
    if let ScatterSrc::Tensor(s) = &src {
        if s.dtype() != dst.dtype() {
            bail!(
                runtime,
                "{}(): Expected self.dtype to be equal to src.dtype",
                op
            );
        }
    }
    let size = dst.shape().get(dim).copied().unwrap_or(1);
    let stride = dst.strides().get(dim).copied().unwrap_or(0);
    let (ishape, _) = padded(index.layout());
    let (_, dst_st) = strides_without(dst.layout(), dim);
    let iv = index.to_vec::<i64>();
    // Destination offsets, validated before anything is written.
    let mut offs: Vec<usize> = Vec::with_capacity(iv.len());
    let mut k = 0;
    let mut err = None;
    for_each_offset(&ishape, &dst_st, dst.storage_offset(), |a| {
        if err.is_none() {
            match check_gs_index(iv[k], size, dim) {
                Ok(i) => offs.push(a + i * stride),
                Err(e) => err = Some(e),
            }
        }
        k += 1;
    });
    if let Some(e) = err {
        return Err(e);
    }
    fn go<T: Accumulate>(
        dst: &Tensor,
        offs: &[usize],
        ishape: &[usize],
        src: &ScatterSrc<'_>,
        accumulate: bool,
    ) {
        let vals: Vec<T> = match src {
            ScatterSrc::Tensor(s) => {
                let st = s.storage().read_recursive();
                let d = st.as_slice::<T>();
                let (_, sst) = padded(s.layout());
                let mut v = Vec::with_capacity(offs.len());
                for_each_offset(ishape, &sst, s.storage_offset(), |o| v.push(d[o]));
                v
            }
            ScatterSrc::Value(x) => {
                let t = Tensor::scalar(*x, T::DTYPE);
                vec![t.to_vec::<T>()[0]; offs.len()]
            }
        };
        let mut st = dst.storage().write();
        let d = st.as_mut_slice::<T>();
        if accumulate {
            for (&o, v) in offs.iter().zip(vals) {
                d[o] = d[o].acc(v);
            }
        } else {
            for (&o, v) in offs.iter().zip(vals) {
                d[o] = v;
            }
        }
    }
    dispatch_acc!(dst.dtype(), T => go::<T>(dst, &offs, &ishape, &src, accumulate));
    Ok(())
}

/// Writes `value` into `dst` wherever `mask` (bool, broadcast to `dst`'s
/// shape) is true. Does not bump versions.
pub fn masked_fill(dst: &Tensor, mask: &Tensor, value: crate::Scalar) -> Result<()> {
    let mask = mask.broadcast_to_raw(dst.shape())?;
    let m: Vec<bool> = mask.to_vec::<bool>();
    let v = Tensor::scalar(value, dst.dtype());
    fn go<T: Element>(dst: &Tensor, m: &[bool], v: &Tensor) {
        let x = v.to_vec::<T>()[0];
        let mut st = dst.storage().write();
        let d = st.as_mut_slice::<T>();
        let l = dst.layout();
        let mut k = 0;
        for_each_offset(&l.shape, &l.strides, l.offset, |o| {
            if m[k] {
                d[o] = x;
            }
            k += 1;
        });
    }
    crate::dispatch_all!(dst.dtype(), T => go::<T>(dst, &m, &v));
    Ok(())
}

/// `!mask` for a bool tensor, contiguous.
pub fn logical_not(mask: &Tensor) -> Tensor {
    let v: Vec<bool> = mask.to_vec::<bool>().into_iter().map(|b| !b).collect();
    Tensor::from_data(
        StorageData::Bool(crate::tensor::storage::Buf::Owned(v)),
        mask.shape(),
    )
}
