//! Advanced indexing (`src[indices]`, `dst[indices] = values`) through an
//! [`AdvPlan`], and index_select's backward ([`index_add_new`]).

use super::super::copy::{expanded, to_vec_as, with_slice};
use super::super::iter::Plan;
use super::super::shared_out::SharedOut;
use super::{wrap_index, Accumulate, GATHER_UNIT};
use crate::buffer::layout::for_each_offset;
use crate::buffer::pool;
use crate::buffer::{Dims, Element, Layout, Strided};
use crate::parallel::{for_each_index, num_threads};
use crate::{bail, Result};

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
    /// The plan of one index vector along dim `dim` of an `ndim`-dim
    /// tensor (index_select's): the other dims kept in their places.
    pub fn along(ndim: usize, dim: usize, index: Vec<i64>) -> AdvPlan {
        AdvPlan {
            pre: (0..dim).collect(),
            post: (dim + 1..ndim).collect(),
            bshape: smallvec::smallvec![index.len()],
            dims: vec![dim],
            idx: vec![index],
        }
    }
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
                    // Wrapping: an out-of-range index is reported below, not read.
                    *o = o.wrapping_add((w as usize).wrapping_mul(stride));
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

impl AdvPlan {
    /// The layout torch gives `src[indices]` (`aten::index`): its
    /// TensorIterator orders the result's dims by the strides of the source
    /// restrided to the result's shape (the indexed block at stride 0) and
    /// of the index tensors (taken as contiguous, viewed with size-1 dims
    /// for the kept ones), so the kept dims keep the source's memory order.
    /// Contiguous when the source is.
    pub fn torch_layout(&self, src: &Layout) -> Layout {
        let shape = self.out_shape(&src.shape);
        if src.is_contiguous() && !shape.contains(&1) {
            // Every comparison of the ordering is then strict and already in
            // row-major order, or ambiguous (an indexed dim against a kept
            // one): the result is contiguous. (Size-1 dims can reorder the
            // others: torch's insertion sort is not transitive.)
            return Layout::contiguous(&shape);
        }
        let (src_st, blk_st) = self.restrided(src);
        let as_layout = |strides: Dims| Layout {
            shape: shape.clone(),
            strides,
            offset: 0,
        };
        super::super::iter::output_layout(&shape, &[&as_layout(src_st), &as_layout(blk_st)])
    }
    /// Strides over the result's shape: the source's along the kept dims (0
    /// along the indexed block), and an index tensor's as torch's iterator
    /// sees it (row-major over the block shape padded with size-1 dims, 0
    /// where those are broadcast over a kept dim), which also steps through
    /// [`AdvPlan::offsets`]: only the block dims advance it.
    fn restrided(&self, src: &Layout) -> (Dims, Dims) {
        let (np, nb, nq) = (self.pre.len(), self.bshape.len(), self.post.len());
        let kept = |ds: &[usize]| ds.iter().map(|&d| src.strides[d]).collect::<Dims>();
        let mut src_st = kept(&self.pre);
        src_st.extend(std::iter::repeat_n(0, nb));
        src_st.extend(kept(&self.post));
        let mut padded: Dims = std::iter::repeat_n(1, np).collect();
        padded.extend(self.bshape.iter().copied());
        padded.extend(std::iter::repeat_n(1, nq));
        let mut blk_st = crate::buffer::layout::contiguous_strides(&padded);
        for (k, n) in self.out_shape(&src.shape).into_iter().enumerate() {
            if padded[k] != n {
                blk_st[k] = 0;
            }
        }
        (src_st, blk_st)
    }
}

/// `src[indices]` as a fresh tensor laid out as `out` (a dense layout of
/// the result's shape, [`AdvPlan::torch_layout`]): [`index_gather`] when
/// `out` is contiguous, else one walk over the result in `out`'s memory
/// order, split over the threads.
pub fn index_gather_as(src: &Strided, plan: &AdvPlan, out: &Layout) -> Result<Strided> {
    if out.is_contiguous() {
        return index_gather(src, plan);
    }
    let l = src.layout();
    let offs = plan.offsets(l)?;
    let (src_st, blk_st) = plan.restrided(l);
    let walk = Plan::new(
        &out.shape,
        [(&out.strides, 0), (&src_st, l.offset), (&blk_st, 0)],
    );
    fn go<T: Element>(
        src: &Strided,
        offs: &[usize],
        walk: &Plan<3>,
        out: &Layout,
    ) -> Result<Strided> {
        let st = src.storage().read_recursive();
        let d = st.as_slice::<T>();
        let mut buf = pool::try_buffer::<T>(out.numel())?;
        let shared = SharedOut::new(&mut buf);
        let (io, is, ib) = (walk.inner(0), walk.inner(1), walk.inner(2));
        walk.for_each_run(GATHER_UNIT, |[o, s, b], len| {
            for j in 0..len {
                let v = d[s + j * is + offs[b + j * ib]];
                // SAFETY: the runs of the plan cover each element of the
                // dense layout `out` (inside `buf`, of its numel) once.
                unsafe { shared.write(o + j * io, v) };
            }
        });
        Ok(Strided::fresh(T::wrap(buf), out.clone()))
    }
    crate::dispatch_all!(src.dtype(), T => go::<T>(src, &offs, &walk, out))
}

/// How many pieces ahead [`index_gather`] prefetches.
const GATHER_AHEAD: usize = 4;

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
    ) -> Result<Strided> {
        let st = src.storage().read_recursive();
        let d = st.as_slice::<T>();
        let n: usize = shape.iter().product();
        let mut out = crate::buffer::pool::try_buffer::<T>(n)?;
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
                    // The piece `GATHER_AHEAD` on, prefetched while this
                    // one is copied: pieces at random places are each a
                    // wait on memory that the hardware does not foresee.
                    let ahead = b + GATHER_AHEAD;
                    let (mut pa, mut oa) = (ahead / offs.len(), ahead % offs.len());
                    let size = std::mem::size_of::<T>();
                    for dst in chunk.chunks_exact_mut(piece) {
                        let base = pre[p] + offs[o];
                        o += 1;
                        if o == offs.len() {
                            (p, o) = (p + 1, 0);
                        }
                        if step == Some(1) && pa < pre.len() {
                            let at = d.as_ptr() as usize + (pre[pa] + offs[oa]) * size;
                            crate::kernels::prefetch::prefetch_bytes(at, piece * size);
                            oa += 1;
                            if oa == offs.len() {
                                (pa, oa) = (pa + 1, 0);
                            }
                        }
                        match step {
                            // A contiguous piece: a plain copy (no SIMD
                            // dispatch per piece).
                            Some(1) => dst.copy_from_slice(&d[base..base + piece]),
                            Some(s) => super::super::slices::gather(&d[base..], s, dst),
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
        Ok(Strided::contiguous(T::wrap(out), shape))
    }
    crate::dispatch_all!(src.dtype(), T => go::<T>(
        src, &shape, &pre, &offs, (piece, step), (&post_s, &post_st)
    ))
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
    let dims = [outer, shape[dim], inner, index.len()];
    if g.shape().iter().product::<usize>() != outer * index.len() * inner {
        bail!(
            internal,
            "index_add_new: gradient of {:?} for {} indices",
            g.shape(),
            index.len()
        );
    }
    let data = dispatch_acc!(g.dtype(), T => {
        let v = with_slice::<T, _>(g, |gs| {
            let mut out = pool::buffer::<T>(outer * dims[1] * inner);
            put_slices(&mut out, gs, index, dims, Put::AddToZeros);
            out
        })?;
        T::wrap(v)
    });
    Ok(Strided::contiguous(data, shape))
}

/// How [`put_slices`] writes a source slice into its destination slice.
#[derive(Clone, Copy, PartialEq)]
enum Put {
    /// Zero the destination first (a fresh buffer), then add.
    AddToZeros,
    /// Add to the destination's values.
    Add,
    /// Overwrite the destination (repeated indices: the last one wins).
    Copy,
}

/// For a contiguous `out` of `[outer, size, inner]` and a contiguous `src`
/// of `[outer, n, inner]`: source slice `j` along the middle dim written at
/// position `index[j]` (each in `0..size`). Units take ranges of the
/// leading dim; with few leading positions, ranges of the destination
/// positions (each unit reads the whole index and writes the slices that
/// land in its range), or column blocks of long rows. Within a unit the
/// slices go in index order, so every element sums (or is overwritten) in
/// the same order at any thread count.
fn put_slices<T: Accumulate>(
    out: &mut [T],
    src: &[T],
    index: &[i64],
    [outer, size, inner, n]: [usize; 4],
    put: Put,
) {
    if out.is_empty() {
        return;
    }
    let threads = num_threads();
    let work = outer * n * inner;
    // Per unit: leading positions, destination positions, columns. Column
    // blocks are whole cache lines (two threads writing one line of a row
    // made index_add_ 4x slower at 2 threads than at 1).
    let (o_per, p_per, cols) = if threads < 2 || work < 2 * GATHER_UNIT {
        (outer.max(1), size, inner)
    } else if outer >= 4 * threads {
        (outer.div_ceil(4 * threads), size, inner)
    } else if size >= 2 * threads {
        // Measured on zeros(10000, 100).index_add_(0, 5000 indices, rows)
        // (2 threads, AMD Zen 5): 114 -> 87 us against column blocks of 64
        // (torch 2.13: 80 us).
        (1, size.div_ceil(4 * threads / outer.max(1)).max(1), inner)
    } else {
        let cols = inner.div_ceil(4 * threads / outer.max(1)).max(64);
        (1, size, cols.next_multiple_of(16).min(inner))
    };
    let (o_per, p_per, cols) = (o_per.max(1), p_per.max(1), cols.max(1));
    let (p_blocks, c_blocks) = (size.div_ceil(p_per).max(1), inner.div_ceil(cols).max(1));
    let units = outer.div_ceil(o_per) * p_blocks * c_blocks;
    let shared = SharedOut::new(out);
    let unit = |u: usize| {
        let (ob, pb, cb) = (
            u / (p_blocks * c_blocks),
            u / c_blocks % p_blocks,
            u % c_blocks,
        );
        let (o0, o1) = (ob * o_per, ((ob + 1) * o_per).min(outer));
        let (p0, p1) = (pb * p_per, ((pb + 1) * p_per).min(size));
        let (c0, c1) = (cb * cols, ((cb + 1) * cols).min(inner));
        let w = c1 - c0;
        for o in o0..o1 {
            if w == inner {
                // Whole rows: the unit's destination block is one slab, and
                // a slice is a range of it (no per-slice set-up: slices of
                // one element, as index_select(1)'s backward adds, cost
                // that much more than their adds).
                // SAFETY: unit u alone writes leading positions o0..o1 and
                // destination positions p0..p1 of the output, all columns
                // (inside it: o < outer, p1 <= size).
                let slab = unsafe { shared.run((o * size + p0) * inner, (p1 - p0) * inner) };
                if put == Put::AddToZeros {
                    slab.fill(T::zero());
                }
                let srow = &src[o * n * inner..(o + 1) * n * inner];
                if inner == 1 {
                    for (&v, &i) in srow.iter().zip(index) {
                        let i = i as usize;
                        if (p0..p1).contains(&i) {
                            let d = &mut slab[i - p0];
                            *d = if put == Put::Copy { v } else { d.acc(v) };
                        }
                    }
                    continue;
                }
                for (j, &i) in index.iter().enumerate() {
                    let i = i as usize;
                    if i < p0 || i >= p1 {
                        continue;
                    }
                    let at = (i - p0) * inner;
                    let (s, dst) = (&srow[j * inner..(j + 1) * inner], &mut slab[at..at + inner]);
                    if put == Put::Copy {
                        dst.copy_from_slice(s);
                    } else {
                        for (d, &v) in dst.iter_mut().zip(s) {
                            *d = d.acc(v);
                        }
                    }
                }
                continue;
            }
            // SAFETY: unit u alone writes leading positions o0..o1,
            // destination positions p0..p1 and columns c0..c1 of the output
            // (inside it: o < outer, p1 <= size, c1 <= inner).
            let row = |p: usize| unsafe { shared.run((o * size + p) * inner + c0, w) };
            if put == Put::AddToZeros {
                (p0..p1).for_each(|p| row(p).fill(T::zero()));
            }
            for (j, &i) in index.iter().enumerate() {
                let i = i as usize;
                if i < p0 || i >= p1 {
                    continue;
                }
                let s = &src[(o * n + j) * inner + c0..(o * n + j) * inner + c1];
                let dst = row(i);
                if put == Put::Copy {
                    dst.copy_from_slice(s);
                } else {
                    for (d, &v) in dst.iter_mut().zip(s) {
                        *d = d.acc(v);
                    }
                }
            }
        }
    };
    if units > 1 {
        for_each_index(units, &unit);
    } else {
        (0..units).for_each(unit);
    }
}

/// [`index_scatter`] of a plan that indexes one dim with a 1-D index
/// (index_add_, index_copy_, `x[:, idx] += v`) into a contiguous `dst`:
/// whole slices at a time ([`put_slices`]). `None` (nothing written) for
/// any other plan or layout, values in dst's storage (the general path
/// copies them first), or an index out of range (the general path reports
/// it).
fn scatter_slices(
    dst: &Strided,
    plan: &AdvPlan,
    values: &Strided,
    accumulate: bool,
) -> Result<Option<()>> {
    let nd = dst.ndim();
    let [dim] = plan.dims[..] else {
        return Ok(None);
    };
    let simple = plan.bshape.len() == 1
        && plan.pre.iter().copied().eq(0..dim)
        && plan.post.iter().copied().eq(dim + 1..nd)
        && dst.is_contiguous()
        && values.is_contiguous()
        && values.dtype() == dst.dtype()
        && !std::sync::Arc::ptr_eq(values.storage(), dst.storage());
    let size = dst.shape()[dim];
    let index = &plan.idx[0];
    if !simple || index.iter().any(|&i| i < 0 || i as usize >= size) {
        return Ok(None);
    }
    let outer: usize = dst.shape()[..dim].iter().product();
    let inner: usize = dst.shape()[dim + 1..].iter().product();
    let dims = [outer, size, inner, index.len()];
    let put = if accumulate { Put::Add } else { Put::Copy };
    let off = dst.layout().offset;
    let len = outer * size * inner;
    dispatch_acc!(dst.dtype(), T => with_slice::<T, _>(values, |vs| {
        let mut st = dst.storage().write();
        put_slices(&mut st.as_mut_slice::<T>()[off..off + len], vs, index, dims, put)
    })?);
    Ok(Some(()))
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
    let shape = plan.out_shape(dst.shape());
    let values = expanded(values, &shape)?;
    if scatter_slices(dst, plan, &values, accumulate)?.is_some() {
        return Ok(());
    }
    let offs = plan.offsets(dst.layout())?;
    fn go<T: Accumulate>(
        dst: &Strided,
        plan: &AdvPlan,
        offs: &[usize],
        values: &Strided,
        accumulate: bool,
    ) {
        let vals: Vec<T> = crate::buffer::pool::or_panic(to_vec_as::<T>(values));
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
