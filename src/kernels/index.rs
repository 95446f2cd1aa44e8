//! Gather / scatter loops for the indexing ops. No autograd here: the ops in
//! `src/ops/index.rs` validate arguments, call these, and record history.
//!
//! Every kernel validates all of its indices before it writes anything, so a
//! bad index leaves the destination untouched, and reads its value operands
//! into a buffer before it takes the destination's write lock (a value may
//! alias the destination).

use super::copy::{expanded, to_vec_as, with_slice};
use super::shared_out::SharedOut;
use crate::buffer::layout::{for_each_offset, for_each_offset2, for_each_offset3};
use crate::buffer::pool;
use crate::buffer::{DType, Dims, Element, Layout, StorageData, Strided};
use crate::parallel::{for_each_index, num_threads};
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
pub fn nonzero(mask: &Strided) -> (usize, Vec<Vec<i64>>) {
    let (n, rows) = nonzero_rows(mask);
    let nd = mask.ndim();
    let coords = (0..nd)
        .map(|d| {
            let mut c = vec![0i64; n];
            crate::parallel::for_each_chunk_mut(&mut c, 1 << 15, |start, chunk| {
                for (i, c) in chunk.iter_mut().enumerate() {
                    *c = rows[(start + i) * nd + d];
                }
            });
            c
        })
        .collect();
    (n, coords)
}

/// `[n, ndim]` int64 coordinates of the true elements of a bool tensor, in
/// row-major order (the layout of torch's `nonzero()`). Counted per fixed
/// piece in parallel; then each piece walks its elements with an odometer
/// (no division per element) and writes its own rows.
pub fn nonzero_rows(mask: &Strided) -> (usize, Vec<i64>) {
    const PIECE: usize = 1 << 16;
    let owned;
    let guard = mask.storage().read_recursive();
    let vals: &[bool] = match mask.layout().contiguous_range() {
        Some(r) => &guard.as_slice::<bool>()[r],
        None => {
            owned = to_vec_as::<bool>(mask);
            &owned
        }
    };
    let shape = mask.shape();
    let nd = shape.len().max(1);
    let shape: Dims = if shape.is_empty() {
        smallvec::smallvec![1]
    } else {
        shape.into()
    };
    let pieces = vals.len().div_ceil(PIECE);
    let par = vals.len() >= 1 << 15;
    let piece = |p: usize| &vals[p * PIECE..((p + 1) * PIECE).min(vals.len())];
    let counts = crate::parallel::map_collect(pieces, par, |p| {
        piece(p).iter().map(|&b| b as usize).sum::<usize>()
    });
    let mut starts = Vec::with_capacity(pieces);
    let mut total = 0;
    for &c in &counts {
        starts.push(total);
        total += c;
    }
    let mut out = vec![0i64; total * nd];
    let shared = SharedOut::new(&mut out);
    let fill = |p: usize| {
        // SAFETY: piece p writes rows starts[p]..starts[p] + counts[p],
        // ranges that partition `out`; `out` outlives the call.
        let dst = unsafe { shared.run(starts[p] * nd, counts[p] * nd) };
        let mut idx: Dims = smallvec::smallvec![0; nd];
        let mut rem = p * PIECE;
        for d in (0..nd).rev() {
            idx[d] = rem % shape[d];
            rem /= shape[d];
        }
        let (last, inner) = (nd - 1, shape[nd - 1]);
        let mut k = 0;
        let mut rest = piece(p);
        while !rest.is_empty() {
            // A run along the innermost dim: only its coordinate changes.
            let (run, tail) = rest.split_at((inner - idx[last]).min(rest.len()));
            for (j, &b) in run.iter().enumerate() {
                // Branch-free: write every row, advance past the true ones.
                if let Some(row) = dst.get_mut(k * nd..(k + 1) * nd) {
                    for (c, &i) in row[..last].iter_mut().zip(&idx[..last]) {
                        *c = i as i64;
                    }
                    row[last] = (idx[last] + j) as i64;
                }
                k += b as usize;
            }
            rest = tail;
            idx[last] = 0;
            for d in (0..last).rev() {
                idx[d] += 1;
                if idx[d] < shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    };
    if par && pieces > 1 {
        crate::parallel::for_each_index(pieces, &fill);
    } else {
        (0..pieces).for_each(fill);
    }
    (total, if mask.ndim() == 0 { Vec::new() } else { out })
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
        let all_valid = std::sync::atomic::AtomicBool::new(true);
        // In parallel pieces, the range check folded into a flag (no early
        // exit per element); an invalid index is then found and reported
        // by the serial pass below.
        crate::parallel::for_each_chunk_mut(&mut offs, 1 << 15, |start, chunk| {
            let mut valid = true;
            for (j, &d) in self.dims.iter().enumerate() {
                let (size, stride) = (l.shape[d] as i64, l.strides[d]);
                let idx = &self.idx[j][start..start + chunk.len()];
                for (o, &i) in chunk.iter_mut().zip(idx) {
                    let w = if i < 0 { i + size } else { i };
                    valid &= (0..size).contains(&w);
                    *o += (w as usize).wrapping_mul(stride);
                }
            }
            if !valid {
                all_valid.store(false, std::sync::atomic::Ordering::Relaxed);
            }
        });
        if !all_valid.into_inner() {
            for (j, &d) in self.dims.iter().enumerate() {
                for &i in &self.idx[j] {
                    wrap_index(i, l.shape[d], d)?;
                }
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
pub fn index_gather(src: &Strided, plan: &AdvPlan) -> Result<Strided> {
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
        src: &Strided,
        shape: &[usize],
        pre: &[usize],
        offs: &[usize],
        (piece, step): (usize, Option<usize>),
        (post_s, post_st): (&[usize], &[usize]),
    ) -> Strided {
        let st = src.storage().read_recursive();
        let d = st.as_slice::<T>();
        let n: usize = shape.iter().product();
        let mut out = crate::buffer::pool::buffer::<T>(n);
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
        Strided::contiguous(T::wrap(out), shape)
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

/// index_select's backward (torch's `index_add` into zeros): a fresh
/// tensor of `shape` with `g`'s slice `j` along `dim` added at position
/// `index[j]` (valid indices into `shape[dim]`), `g` being `shape` with
/// `index.len()` along `dim`. Units take ranges of the leading dims, or
/// column blocks of the trailing ones when there are few leading
/// positions; within a unit the slices are added in index order, so every
/// element sums in the same order at any thread count.
pub fn index_add_new(shape: &[usize], dim: usize, index: &[i64], g: &Strided) -> Result<Strided> {
    let outer: usize = shape[..dim].iter().product();
    let inner: usize = shape[dim + 1..].iter().product();
    let (size, n) = (shape[dim], index.len());
    fn go<T: Accumulate>(g: &[T], index: &[i64], [outer, size, inner, n]: [usize; 4]) -> Vec<T> {
        let mut out = pool::buffer::<T>(outer * size * inner);
        let threads = num_threads();
        let work = outer * n * inner;
        let (o_per, cols) = if threads < 2 || work < 2 * GATHER_UNIT {
            (outer.max(1), inner)
        } else if outer >= 4 * threads {
            (outer.div_ceil(4 * threads), inner)
        } else {
            (
                1,
                inner
                    .div_ceil(4 * threads / outer.max(1))
                    .max(64)
                    .min(inner),
            )
        };
        let col_blocks = inner.div_ceil(cols.max(1)).max(1);
        let units = outer.div_ceil(o_per.max(1)) * col_blocks;
        let shared = SharedOut::new(&mut out);
        let unit = |u: usize| {
            let (ob, cb) = (u / col_blocks, u % col_blocks);
            let (o0, o1) = (ob * o_per, ((ob + 1) * o_per).min(outer));
            let (c0, c1) = (cb * cols, ((cb + 1) * cols).min(inner));
            let w = c1 - c0;
            for o in o0..o1 {
                // SAFETY: unit u alone writes leading positions o0..o1,
                // columns c0..c1 of the output (inside it: o < outer,
                // positions < size, c1 <= inner).
                let row = |p: usize| unsafe { shared.run((o * size + p) * inner + c0, w) };
                if w == inner {
                    // SAFETY: as above; whole rows, so one contiguous slab.
                    unsafe { shared.run(o * size * inner, size * inner) }.fill(T::zero());
                } else {
                    (0..size).for_each(|p| row(p).fill(T::zero()));
                }
                if inner == 1 {
                    let gs = &g[o * n..(o + 1) * n];
                    for (&i, &v) in index.iter().zip(gs) {
                        // SAFETY: as above, one element.
                        let d = unsafe { shared.at(o * size + i as usize) };
                        *d = d.acc(v);
                    }
                    continue;
                }
                for (j, &i) in index.iter().enumerate() {
                    let src = &g[(o * n + j) * inner + c0..(o * n + j) * inner + c1];
                    let dst = row(i as usize);
                    for (d, &v) in dst.iter_mut().zip(src) {
                        *d = d.acc(v);
                    }
                }
            }
        };
        if units > 1 {
            for_each_index(units, &unit);
        } else {
            (0..units).for_each(unit);
        }
        out
    }
    let dims = [outer, size, inner, n];
    if g.shape().iter().product::<usize>() != outer * n * inner {
        bail!(
            internal,
            "index_add_new: gradient of {:?} for {} indices",
            g.shape(),
            n
        );
    }
    let data = dispatch_acc!(g.dtype(), T => {
        let v = with_slice::<T, _>(g, |gs| go::<T>(gs, index, dims));
        T::wrap(v)
    });
    Ok(Strided::contiguous(data, shape))
}

/// `dst[indices] = values` (or `+=` with `accumulate`) in `dst`'s memory.
/// `values` must have `dst`'s dtype and broadcast to the indexed shape.
/// Does not bump versions.
pub fn index_scatter(
    dst: &Strided,
    plan: &AdvPlan,
    values: &Strided,
    accumulate: bool,
) -> Result<()> {
    let offs = plan.offsets(dst.layout())?;
    let shape = plan.out_shape(dst.shape());
    let values = expanded(values, &shape)?;
    fn go<T: Accumulate>(
        dst: &Strided,
        plan: &AdvPlan,
        offs: &[usize],
        values: &Strided,
        accumulate: bool,
    ) {
        let vals: Vec<T> = to_vec_as::<T>(values);
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
    index: &Strided,
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

/// One run of gather's output: `out[j] = src[a + j * ia + index[b + j *
/// ib] * stride]`, zero where the index is outside `0..size` (the first
/// such index is returned). The usual case, the gathered dim innermost
/// (`ia == 0`) with a contiguous index run, is a tight loop whose loads
/// overlap in flight.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn gather_run<T: Element>(
    out: &mut [T],
    src: &[T],
    a: usize,
    ia: usize,
    stride: usize,
    size: usize,
    index: &[i64],
    b: usize,
    ib: usize,
) -> Option<i64> {
    let mut bad = None;
    if ia == 0 && ib == 1 && size > 0 {
        let idx = &index[b..b + out.len()];
        let lane = &src[a..a + (size - 1) * stride + 1];
        if stride == 1 {
            for (o, &i) in out.iter_mut().zip(idx) {
                *o = match lane.get(i as u64 as usize) {
                    Some(&v) if i >= 0 => v,
                    _ => {
                        bad.get_or_insert(i);
                        T::zero()
                    }
                };
            }
        } else {
            for (o, &i) in out.iter_mut().zip(idx) {
                *o = if (i as u64) < size as u64 {
                    lane[i as usize * stride]
                } else {
                    bad.get_or_insert(i);
                    T::zero()
                };
            }
        }
        return bad;
    }
    for (j, o) in out.iter_mut().enumerate() {
        let i = index[b + j * ib];
        *o = if (i as u64) < size as u64 {
            src[a + j * ia + i as usize * stride]
        } else {
            bad.get_or_insert(i);
            T::zero()
        };
    }
    bad
}

/// Elements of gather's output per unit of work.
const GATHER_UNIT: usize = 1 << 14;

/// `out[p] = src[p with p[dim] = index[p]]`, of `index`'s shape. One pass:
/// each element is read as its index is checked (nothing is written to a
/// tensor anyone sees before all are valid).
pub fn gather(src: &Strided, dim: usize, index: &Strided) -> Result<Strided> {
    check_gather_scatter("gather", src.shape(), dim, index, None)?;
    let size = src.shape().get(dim).copied().unwrap_or(1);
    let stride = src.strides().get(dim).copied().unwrap_or(0);
    let (_, sst) = strides_without(src.layout(), dim);
    let (ishape, istrides) = padded(index.layout());
    fn go<T: Element>(
        src: &Strided,
        index: &Strided,
        (ishape, istrides, sst): (&[usize], &[usize], &[usize]),
        (dim, size, stride): (usize, usize, usize),
    ) -> Result<Strided> {
        let ist = index.storage().read_recursive();
        let iv = ist.as_slice::<i64>();
        let st = src.storage().read_recursive();
        let d = st.as_slice::<T>();
        let mut out = pool::buffer::<T>(index.numel());
        // Units of whole rows along the index's dim 0, written in place:
        // loads of different rows overlap in flight and over the threads.
        // A 1-D index is one row.
        let (ishape, istrides, sst) = if ishape.len() == 1 {
            let two =
                |v: &[usize], lead: usize| -> Dims { [lead].iter().chain(v).copied().collect() };
            (two(ishape, 1), two(istrides, 0), two(sst, 0))
        } else {
            (ishape.into(), istrides.into(), sst.into())
        };
        let n = ishape.len();
        let (inner, ia, ib) = (ishape[n - 1], sst[n - 1], istrides[n - 1]);
        let rows = ishape[0];
        let per_row = out.len() / rows.max(1);
        let rows_per_unit = (GATHER_UNIT / per_row.max(1)).max(1);
        let units = rows.div_ceil(rows_per_unit);
        let shared = SharedOut::new(&mut out);
        // The first bad index in row order (the lowest unit's), as serially.
        let bad = parking_lot::Mutex::new(None::<(usize, i64)>);
        let unit = |u: usize| {
            let (r0, r1) = (u * rows_per_unit, ((u + 1) * rows_per_unit).min(rows));
            // SAFETY: unit u alone writes rows r0..r1 of the output, which
            // lie inside it (r1 <= rows, per_row elements each).
            let o = unsafe { shared.run(r0 * per_row, (r1 - r0) * per_row) };
            let mut runs = o.chunks_exact_mut(inner.max(1));
            let mut first_bad = None;
            let outer: Dims = [r1 - r0].iter().chain(&ishape[1..n - 1]).copied().collect();
            for_each_offset2(
                &outer,
                &sst[..n - 1],
                src.storage_offset() + r0 * sst[0],
                &istrides[..n - 1],
                index.storage_offset() + r0 * istrides[0],
                |a, b| {
                    let Some(run) = runs.next() else { return };
                    if let Some(i) = gather_run(run, d, a, ia, stride, size, iv, b, ib) {
                        first_bad.get_or_insert(i);
                    }
                },
            );
            if let Some(i) = first_bad {
                let mut b = bad.lock();
                if b.is_none_or(|(v, _)| u < v) {
                    *b = Some((u, i));
                }
            }
        };
        if num_threads() < 2 || out.len() < 2 * GATHER_UNIT || units < 2 {
            (0..units).for_each(unit);
        } else {
            for_each_index(units, &unit);
        }
        if let Some((_, i)) = bad.into_inner() {
            check_gs_index(i, size, dim)?;
        }
        Ok(Strided::contiguous(T::wrap(out), index.shape()))
    }
    crate::dispatch_all!(src.dtype(), T => go::<T>(
        src, index, (&ishape, &istrides, &sst), (dim, size, stride)
    ))
}

/// What scatter writes: a tensor of values (read at the index's positions)
/// or one scalar value (already of the destination's dtype).
pub enum ScatterSrc<'a> {
    Array(&'a Strided),
    Value(crate::buffer::Scalar),
}

/// `dst[p with p[dim] = index[p]] = src[p]` (or `+=` with `accumulate`)
/// for every position `p` of `index`, in `dst`'s memory.
pub fn scatter(
    dst: &Strided,
    dim: usize,
    index: &Strided,
    src: ScatterSrc<'_>,
    accumulate: bool,
) -> Result<()> {
    let op = if accumulate { "scatter_add" } else { "scatter" };
    let src_shape = match &src {
        ScatterSrc::Array(s) => Some(s.shape()),
        ScatterSrc::Value(_) => None,
    };
    check_gather_scatter(op, dst.shape(), dim, index, src_shape)?;
    if let ScatterSrc::Array(s) = &src {
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
    let (ishape, istrides) = padded(index.layout());
    let (_, dst_st) = strides_without(dst.layout(), dim);
    let src_st = match &src {
        ScatterSrc::Array(s) => padded(s.layout()).1,
        ScatterSrc::Value(_) => smallvec::smallvec![0; ishape.len()],
    };
    // Every index is checked before anything is written.
    {
        let ist = index.storage().read_recursive();
        let iv = ist.as_slice::<i64>();
        let mut bad = None;
        match index.layout().contiguous_range() {
            Some(r) => {
                let iv = &iv[r];
                // A branch-free scan (vectorised), split over the threads;
                // the first bad index is looked up only when there is one.
                let pieces = iv.len().div_ceil(1 << 16).max(1);
                let any = std::sync::atomic::AtomicBool::new(false);
                let scan = |p: usize| {
                    let part = &iv[p << 16..((p + 1) << 16).min(iv.len())];
                    if part
                        .iter()
                        .fold(false, |acc, &i| acc | ((i as u64) >= size as u64))
                    {
                        any.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                };
                if pieces > 1 && num_threads() > 1 {
                    for_each_index(pieces, &scan);
                } else {
                    (0..pieces).for_each(scan);
                }
                if any.into_inner() {
                    bad = iv.iter().copied().find(|&i| (i as u64) >= size as u64);
                }
            }
            None => for_each_offset(&ishape, &istrides, index.storage_offset(), |b| {
                let i = iv[b];
                if (i as u64) >= size as u64 {
                    bad.get_or_insert(i);
                }
            }),
        }
        if let Some(i) = bad {
            check_gs_index(i, size, dim)?;
        }
    }
    // Index positions that differ outside `dim` write different elements
    // of `dst`, so the walk is split over another dim (the first one, or
    // the last when scattering along the first), each unit walking its
    // positions in row-major order: every element receives its values in
    // the order a serial walk gives them, whatever the thread count. Not when `dst`
    // repeats elements or shares memory with `src`: then serially.
    let n = ishape.len();
    let split = if dim != 0 { 0 } else { n - 1 };
    let shares = match &src {
        ScatterSrc::Array(s) => std::sync::Arc::ptr_eq(s.storage(), dst.storage()),
        ScatterSrc::Value(_) => false,
    };
    let parallel = split != dim
        && !shares
        && !super::iter::has_internal_overlap(dst.layout())
        && num_threads() > 1
        && ishape.iter().product::<usize>() >= 2 * GATHER_UNIT;
    let strides = [istrides.clone(), src_st, dst_st];
    let bases = [
        index.storage_offset(),
        match &src {
            ScatterSrc::Array(s) => s.storage_offset(),
            ScatterSrc::Value(_) => 0,
        },
        dst.storage_offset(),
    ];
    // Units take slabs of the split dim: whole rows when it is the first,
    // blocks of columns when the last (each unit then reads its part of
    // every row, in order).
    let numel: usize = ishape.iter().product();
    let slab = if !parallel {
        ishape[split].max(1)
    } else if split == 0 {
        (GATHER_UNIT / (numel / ishape[0].max(1)).max(1)).max(1)
    } else {
        ishape[split].div_ceil(4 * num_threads()).clamp(1, 32)
    };
    fn go<T: Accumulate>(
        dst: &Strided,
        index: &Strided,
        src: &ScatterSrc<'_>,
        (shape, strides, bases): (&[usize], &[Dims; 3], [usize; 3]),
        (split, slab): (usize, usize),
        stride: usize,
        accumulate: bool,
    ) {
        let ist = index.storage().read_recursive();
        let iv = ist.as_slice::<i64>();
        // A source sharing dst's storage is read from a copy.
        let (src_vals, value): (Option<Vec<T>>, T) = match src {
            ScatterSrc::Array(s) if std::sync::Arc::ptr_eq(s.storage(), dst.storage()) => (
                Some(s.storage().read_recursive().as_slice::<T>().to_vec()),
                T::zero(),
            ),
            ScatterSrc::Array(_) => (None, T::zero()),
            ScatterSrc::Value(x) => (None, x.cast::<T>()),
        };
        let src_guard = match src {
            ScatterSrc::Array(s) if src_vals.is_none() => Some(s.storage().read_recursive()),
            _ => None,
        };
        let sv: &[T] = match (&src_vals, &src_guard) {
            (Some(v), _) => v,
            (None, Some(g)) => g.as_slice::<T>(),
            (None, None) => &[],
        };
        let is_value = matches!(src, ScatterSrc::Value(_));
        let mut st = dst.storage().write();
        let d = st.as_mut_slice::<T>();
        let out = SharedOut::new(d);
        let units = shape[split].div_ceil(slab);
        let unit = |u: usize| {
            let (c0, c1) = (u * slab, ((u + 1) * slab).min(shape[split]));
            let mut sub: Dims = shape.into();
            sub[split] = c1 - c0;
            let at = |k: usize| bases[k] + c0 * strides[k][split];
            let n = sub.len();
            let steps = [strides[0][n - 1], strides[1][n - 1], strides[2][n - 1]];
            let outer: [Dims; 3] = std::array::from_fn(|k| strides[k][..n - 1].into());
            let src = (!is_value).then_some(sv);
            for_each_offset3(&sub[..n - 1], &outer, [at(0), at(1), at(2)], |b, s, a| {
                // SAFETY: the index was checked to lie inside `dim`, so
                // every element written is inside dst's storage; units
                // write disjoint elements (their positions differ along the
                // split dim, which is not `dim`, and dst repeats no
                // element), and a single unit runs when that does not hold.
                unsafe {
                    let at = [b, s, a];
                    let len = sub[n - 1];
                    let run = if accumulate {
                        scatter_run::<T, true>
                    } else {
                        scatter_run::<T, false>
                    };
                    run(out, iv, src, value, at, steps, stride, len)
                }
            });
        };
        // (one unit, the whole walk, unless a parallel split was chosen)
        if units > 1 {
            for_each_index(units, &unit);
        } else {
            (0..units).for_each(unit);
        }
    }
    dispatch_acc!(dst.dtype(), T => go::<T>(
        dst, index, &src, (&ishape, &strides, bases), (split, slab), stride, accumulate
    ));
    Ok(())
}

/// One run of scatter: `dst[a + j * ia + index[b + j * ib] * stride]`
/// set (or, with `ACC`, added to) `src[s + j * is]` (or `value` without a
/// source) for `j < len`. Every argument is a value, so the loop keeps them
/// in registers across its stores.
///
/// # Safety
/// Every index read is in `0..size` of the scattered dim, every element
/// written lies inside the buffer behind `out`, and no other thread
/// touches those elements meanwhile.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn scatter_run<T: Accumulate, const ACC: bool>(
    out: SharedOut<T>,
    index: &[i64],
    src: Option<&[T]>,
    value: T,
    [b, s, a]: [usize; 3],
    [ib, is, ia]: [usize; 3],
    stride: usize,
    len: usize,
) {
    let put = |p: usize, v: T| {
        let e = out.at(p);
        *e = if ACC { e.acc(v) } else { v };
    };
    match src {
        Some(src) => {
            for j in 0..len {
                put(
                    a + j * ia + index[b + j * ib] as usize * stride,
                    src[s + j * is],
                );
            }
        }
        None => {
            for j in 0..len {
                put(a + j * ia + index[b + j * ib] as usize * stride, value);
            }
        }
    }
}

/// Writes `value` into `dst` wherever `mask` (bool, broadcast to `dst`'s
/// shape) is true. Does not bump versions.
pub fn masked_fill(dst: &Strided, mask: &Strided, value: crate::buffer::Scalar) -> Result<()> {
    let mask = expanded(mask, dst.shape())?;
    let m: Vec<bool> = to_vec_as::<bool>(&mask);
    fn go<T: Element>(dst: &Strided, m: &[bool], x: T) {
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
    crate::dispatch_all!(dst.dtype(), T => go::<T>(dst, &m, value.cast::<T>()));
    Ok(())
}

/// `!mask` for a bool tensor, contiguous.
pub fn logical_not(mask: &Strided) -> Strided {
    let v: Vec<bool> = to_vec_as::<bool>(mask).into_iter().map(|b| !b).collect();
    Strided::contiguous(
        StorageData::Bool(crate::buffer::storage::Buf::Owned(v)),
        mask.shape(),
    )
}
