//! Typed elementwise loops over strided buffers, driven by an iteration
//! [`Plan`]: each run is handed to a SIMD slice loop ([`super::slices`]);
//! an operand that is strided along the run is first gathered into a small
//! buffer, a broadcast one (stride 0) is passed as one value.
//!
//! Kernels see buffers and layouts only. Every function checks that each
//! layout stays inside its buffer and that the written layout has no two
//! indices on one element, before anything is written.

use super::iter::Plan;
use super::overlap::assert_no_internal_overlap;
use super::shared_out::SharedOut;
use super::slices;
use super::transpose;
use crate::buffer::layout::Layout;
use crate::{bail, Result};
use smallvec::SmallVec;

/// A one-input kernel: `run` over contiguous slices (the SIMD loop),
/// `one` for a single element; both give the same bits.
pub trait RowMap<T, U>: Sync {
    fn run(&self, x: &[T], out: &mut [U]);
    fn one(&self, x: T) -> U;
}

/// A two-input kernel, as [`RowMap`]; `left`/`right` run with one input
/// fixed (a broadcast scalar).
pub trait RowZip<T, U>: Sync {
    fn run(&self, a: &[T], b: &[T], out: &mut [U]);
    fn one(&self, a: T, b: T) -> U;
    fn left(&self, a: &[T], b: T, out: &mut [U]);
    fn right(&self, a: T, b: &[T], out: &mut [U]);
}

/// An in-place kernel, as [`RowMap`].
pub trait RowApply<T>: Sync {
    fn run(&self, buf: &mut [T]);
    fn one(&self, x: T) -> T;
}

/// An in-place two-input kernel, as [`RowZip`]: `dst[i] = f(dst[i],
/// src[i])`; `fill` with one `src` value for all.
pub trait RowUpdate<T, S>: Sync {
    fn run(&self, dst: &mut [T], src: &[S]);
    fn one(&self, d: T, s: S) -> T;
    fn fill(&self, dst: &mut [T], s: S);
}

/// A closure as a kernel, its slice loops from [`slices`].
pub struct Each<F>(pub F);

impl<T: Copy, U, F: Fn(T) -> U + Sync> RowMap<T, U> for Each<F> {
    #[inline]
    fn run(&self, x: &[T], out: &mut [U]) {
        slices::map(x, out, &self.0)
    }
    #[inline(always)]
    fn one(&self, x: T) -> U {
        (self.0)(x)
    }
}

impl<T: Copy, F: Fn(T) -> T + Sync> RowApply<T> for Each<F> {
    #[inline]
    fn run(&self, buf: &mut [T]) {
        slices::apply(buf, &self.0)
    }
    #[inline(always)]
    fn one(&self, x: T) -> T {
        (self.0)(x)
    }
}

/// A two-argument closure as a kernel.
pub struct Each2<F>(pub F);

impl<T: Copy, U, F: Fn(T, T) -> U + Sync> RowZip<T, U> for Each2<F> {
    #[inline]
    fn run(&self, a: &[T], b: &[T], out: &mut [U]) {
        slices::zip(a, b, out, &self.0)
    }
    #[inline(always)]
    fn one(&self, a: T, b: T) -> U {
        (self.0)(a, b)
    }
    #[inline]
    fn left(&self, a: &[T], b: T, out: &mut [U]) {
        let f = &self.0;
        slices::map(a, out, &|v| f(v, b))
    }
    #[inline]
    fn right(&self, a: T, b: &[T], out: &mut [U]) {
        let f = &self.0;
        slices::map(b, out, &|v| f(a, v))
    }
}

impl<T: Copy, S: Copy, F: Fn(T, S) -> T + Sync> RowUpdate<T, S> for Each2<F> {
    #[inline]
    fn run(&self, dst: &mut [T], src: &[S]) {
        slices::update(dst, src, &self.0)
    }
    #[inline(always)]
    fn one(&self, d: T, s: S) -> T {
        (self.0)(d, s)
    }
    #[inline]
    fn fill(&self, dst: &mut [T], s: S) {
        let f = &self.0;
        slices::apply(dst, &|v| f(v, s))
    }
}

/// Fails unless every element of `l` lies inside a buffer of `len`.
fn check_in(l: &Layout, len: usize, what: &str) -> Result<()> {
    if l.numel() > 0 && l.storage_extent() > len {
        bail!(
            internal,
            "elementwise kernel: {what} layout {:?} reaches past its buffer of {len}",
            l
        );
    }
    Ok(())
}

/// [`check_in`] for a written layout, which must also not repeat an
/// element (torch's internal-overlap check).
fn check_out(l: &Layout, len: usize) -> Result<()> {
    check_in(l, len, "output")?;
    assert_no_internal_overlap(l)
}

fn check_shape(out: &Layout, l: &Layout) -> Result<()> {
    if out.shape != l.shape {
        bail!(
            internal,
            "elementwise kernel: operand shape {:?} differs from the output's {:?}",
            l.shape,
            out.shape
        );
    }
    Ok(())
}

/// The checks and the plan every loop here starts with: `ls[0]` is the
/// output's layout (in a buffer of `lens[0]`, no element twice), the others
/// the inputs' (the output's shape, in buffers of `lens[k]`). Returns the
/// plan with each operand's inner and outer strides.
#[allow(clippy::type_complexity)]
fn checked_plan<const N: usize>(
    ls: [&Layout; N],
    lens: [usize; N],
) -> Result<(Plan<N>, [usize; N], [usize; N])> {
    for l in &ls[1..] {
        check_shape(ls[0], l)?;
    }
    check_out(ls[0], lens[0])?;
    for (l, &len) in ls[1..].iter().zip(&lens[1..]) {
        check_in(l, len, "input")?;
    }
    let plan = Plan::new(&ls[0].shape, ls.map(|l| (&l.strides[..], l.offset)));
    let inner = std::array::from_fn(|k| plan.inner(k));
    let outer = std::array::from_fn(|k| plan.outer(k));
    Ok((plan, inner, outer))
}

/// A buffer's address and element size, for prefetching.
fn mem<T>(d: &[T]) -> (usize, usize) {
    (d.as_ptr() as usize, std::mem::size_of::<T>())
}

/// A scratch buffer: on the stack up to a run's length, on the heap for a
/// tile.
type Scratch<T> = SmallVec<[T; RUN_PIECE]>;

/// The longest piece of a strided run handed to a slice loop at once (its
/// gathered operands stay in scratch on the stack).
const RUN_PIECE: usize = 512;

/// Calls `f(scratch, offsets, w, h)` for blocks covering the plan (`h`
/// rows of `w` along dim 0, row `i` at `offsets[k] + i * plan.outer(k)`):
/// tiles of a tiled plan; blocks of whole rows when every operand is
/// contiguous or one value along dim 0; else runs (`h == 1`), cut into
/// pieces of at most [`RUN_PIECE`] unless every operand is contiguous or
/// one value along them. `scratch` (made by `init`) is made once per chunk
/// of work and handed to every block of it.
fn each_block<const N: usize, S>(
    plan: &Plan<N>,
    grain: usize,
    mem: [(usize, usize); N],
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, [usize; N], usize, usize) + Sync,
) {
    if plan.is_tiled() {
        return plan.for_each_tile_with(grain, mem, init, f);
    }
    let inner: [usize; N] = std::array::from_fn(|k| plan.inner(k));
    let whole = inner[0] == 1 && inner[1..].iter().all(|&s| s <= 1);
    if whole && plan.dims().0.len() >= 2 {
        return plan.for_each_rows_with(grain, init, f);
    }
    let grain = strided_grain(grain, inner, mem);
    plan.for_each_run_with(grain, init, |bufs, offs, len| {
        if whole {
            return f(bufs, offs, len, 1);
        }
        let mut j = 0;
        while j < len {
            let n = RUN_PIECE.min(len - j);
            f(bufs, std::array::from_fn(|k| offs[k] + j * inner[k]), n, 1);
            j += n;
        }
    });
}

/// `grain` (elements, for contiguous operands) for operands read with
/// `inner` strides along the runs: an element of an operand with a long
/// stride costs a cache line where a contiguous one costs its own bytes,
/// so the work worth the threads comes in fewer elements (a column of a
/// wide matrix, a slice with a step). Never below [`MIN_STRIDED_GRAIN`].
fn strided_grain<const N: usize>(
    grain: usize,
    inner: [usize; N],
    mem: [(usize, usize); N],
) -> usize {
    const LINE: usize = 64;
    let dense: usize = mem.iter().map(|m| m.1).sum();
    let touched: usize = (0..N)
        .map(|k| match inner[k] {
            0 => 0,
            s => (s * mem[k].1).min(LINE).max(mem[k].1),
        })
        .sum();
    if touched <= dense {
        return grain;
    }
    (grain * dense / touched).max(MIN_STRIDED_GRAIN.min(grain))
}

/// The fewest elements of a strided loop split over the threads.
const MIN_STRIDED_GRAIN: usize = 1 << 14;

/// One input's values over a block: rows of its own buffer (contiguous
/// along dim 0), one value per row (stride 0 along dim 0), or copied into
/// scratch (row `i` at `i * w`).
enum In<'a, T> {
    Rows {
        data: &'a [T],
        off: usize,
        s1: usize,
    },
    Cols {
        data: &'a [T],
        off: usize,
        s1: usize,
    },
    Copied,
}

/// The first `n` elements of `buf`, grown (never cleared: every element
/// is written before it is read) to hold them.
#[inline(always)]
fn scratch<T: Copy + Default>(buf: &mut Scratch<T>, n: usize) -> &mut [T] {
    if buf.len() < n {
        if n > RUN_PIECE / 4 && n <= RUN_PIECE && !buf.spilled() {
            // A whole inline buffer at once (a memset), not element by
            // element as `resize` fills it (cheaper for all but short runs).
            *buf = Scratch::from_buf([T::default(); RUN_PIECE]);
        } else {
            buf.resize(n, T::default());
        }
    }
    &mut buf[..n]
}

/// Prepares input `data` over a `w` x `h` block at `off` with strides `s0`
/// (dim 0) and `s1` (dim 1; unused when `h == 1`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn input<'a, T: Copy + Default>(
    data: &'a [T],
    off: usize,
    s0: usize,
    s1: usize,
    w: usize,
    h: usize,
    buf: &mut Scratch<T>,
) -> In<'a, T> {
    match s0 {
        1 => In::Rows { data, off, s1 },
        0 => In::Cols { data, off, s1 },
        _ if h > 1 && s1 == 1 => {
            // A transposed tile: read `h` contiguous elements per column.
            transpose::gather_transposed(data, off, s0, w, h, scratch(buf, w * h));
            In::Copied
        }
        _ => {
            for (i, dst) in scratch(buf, w * h).chunks_exact_mut(w).enumerate() {
                let row = &data[off + i * s1..off + i * s1 + (w - 1) * s0 + 1];
                slices::gather(row, s0, dst);
            }
            In::Copied
        }
    }
}

impl<'a, T: Copy> In<'a, T> {
    /// Row `i` (of length `w`) of the block.
    #[inline(always)]
    fn row<'b>(&self, buf: &'b [T], i: usize, w: usize) -> Src<'b, T>
    where
        'a: 'b,
    {
        match *self {
            In::Rows { data, off, s1 } => Src::Run(&data[off + i * s1..off + i * s1 + w]),
            In::Cols { data, off, s1 } => Src::One(data[off + i * s1]),
            In::Copied => Src::Run(&buf[i * w..i * w + w]),
        }
    }
}

/// One input operand of a row.
enum Src<'a, T> {
    Run(&'a [T]),
    One(T),
}

/// Writes row values `vals(dst)` into the output at `off` with stride `so`
/// along the row: straight into the buffer when `so == 1`, else through
/// `tmp`.
#[inline(always)]
fn write_row<U: Copy + Default>(
    out: SharedOut<U>,
    off: usize,
    so: usize,
    w: usize,
    tmp: &mut Scratch<U>,
    vals: impl FnOnce(&mut [U]),
) {
    if so == 1 {
        // SAFETY: this block owns `off..off + w` of the output (check_out:
        // no two indices share an element; blocks partition the indices).
        vals(unsafe { out.run(off, w) });
    } else {
        let tmp = scratch(tmp, w);
        vals(tmp);
        for (j, &v) in tmp.iter().enumerate() {
            // SAFETY: as above, element by element.
            unsafe { *out.at(off + j * so) = v };
        }
    }
}

/// `out[i] = f(a[i])` over `lo` (the output's layout in `out`); `la` is
/// `a`'s layout broadcast to `lo`'s shape. Split over the threads from
/// `grain` elements.
pub fn map<T, U, F>(
    out: &mut [U],
    lo: &Layout,
    a: &[T],
    la: &Layout,
    grain: usize,
    f: &F,
) -> Result<()>
where
    T: Copy + Default + Send + Sync,
    U: Copy + Default + Send + Sync,
    F: Fn(T) -> U + Sync,
{
    map_with(out, lo, a, la, grain, &Each(f))
}

/// [`map`] with a kernel.
pub fn map_with<T, U, K>(
    out: &mut [U],
    lo: &Layout,
    a: &[T],
    la: &Layout,
    grain: usize,
    k: &K,
) -> Result<()>
where
    T: Copy + Default + Send + Sync,
    U: Copy + Default + Send + Sync,
    K: RowMap<T, U>,
{
    let (plan, [so, sa], [so1, sa1]) = checked_plan([lo, la], [out.len(), a.len()])?;
    let mem = [mem(out), mem(a)];
    let out = SharedOut::new(out);
    let init = || (Scratch::new(), Scratch::new());
    each_block(&plan, grain, mem, init, |(ba, tmp), [oo, oa], w, h| {
        let ia = input(a, oa, sa, sa1, w, h, ba);
        for i in 0..h {
            let x = ia.row(ba, i, w);
            write_row(out, oo + i * so1, so, w, tmp, |o| match x {
                Src::Run(x) => k.run(x, o),
                Src::One(x) => slices::fill(o, k.one(x)),
            });
        }
    });
    Ok(())
}

/// `out[i] = f(a[i], b[i])`; layouts as in [`map`].
#[allow(clippy::too_many_arguments)]
pub fn zip<T, U, F>(
    out: &mut [U],
    lo: &Layout,
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    grain: usize,
    f: &F,
) -> Result<()>
where
    T: Copy + Default + Send + Sync,
    U: Copy + Default + Send + Sync,
    F: Fn(T, T) -> U + Sync,
{
    zip_with(out, lo, (a, la), (b, lb), grain, &Each2(f))
}

/// [`zip`] with a kernel.
pub fn zip_with<T, U, K>(
    out: &mut [U],
    lo: &Layout,
    (a, la): (&[T], &Layout),
    (b, lb): (&[T], &Layout),
    grain: usize,
    k: &K,
) -> Result<()>
where
    T: Copy + Default + Send + Sync,
    U: Copy + Default + Send + Sync,
    K: RowZip<T, U>,
{
    let (plan, [so, sa, sb], [so1, sa1, sb1]) =
        checked_plan([lo, la, lb], [out.len(), a.len(), b.len()])?;
    let mem = [mem(out), mem(a), mem(b)];
    let out = SharedOut::new(out);
    let run = |x: Src<T>, y: Src<T>, o: &mut [U]| match (x, y) {
        (Src::Run(x), Src::Run(y)) => k.run(x, y, o),
        (Src::Run(x), Src::One(y)) => k.left(x, y, o),
        (Src::One(x), Src::Run(y)) => k.right(x, y, o),
        (Src::One(x), Src::One(y)) => slices::fill(o, k.one(x, y)),
    };
    let init = || (Scratch::new(), Scratch::new(), Scratch::new());
    each_block(
        &plan,
        grain,
        mem,
        init,
        |(ba, bb, tmp), [oo, oa, ob], w, h| {
            let ia = input(a, oa, sa, sa1, w, h, ba);
            let ib = input(b, ob, sb, sb1, w, h, bb);
            for i in 0..h {
                let (x, y) = (ia.row(ba, i, w), ib.row(bb, i, w));
                write_row(out, oo + i * so1, so, w, tmp, |o| run(x, y, o));
            }
        },
    );
    Ok(())
}

/// `out[i] = f(a[i], b[i], c[i])`, each input of its own element type;
/// layouts as in [`map`].
pub fn zip3<A, B, C, U, F>(
    out: &mut [U],
    lo: &Layout,
    (a, la): (&[A], &Layout),
    (b, lb): (&[B], &Layout),
    (c, lc): (&[C], &Layout),
    grain: usize,
    f: &F,
) -> Result<()>
where
    A: Copy + Default + Send + Sync,
    B: Copy + Default + Send + Sync,
    C: Copy + Default + Send + Sync,
    U: Copy + Default + Send + Sync,
    F: Fn(A, B, C) -> U + Sync,
{
    let (plan, [so, sa, sb, sc], [so1, sa1, sb1, sc1]) =
        checked_plan([lo, la, lb, lc], [out.len(), a.len(), b.len(), c.len()])?;
    let mem = [mem(out), mem(a), mem(b), mem(c)];
    let out = SharedOut::new(out);
    /// A plain run: the data itself, or `fill` holding one value `w` times.
    fn run<'a, T: Copy>(s: Src<'a, T>, w: usize, fill: &'a mut Scratch<T>) -> &'a [T] {
        match s {
            Src::Run(r) => r,
            Src::One(v) => {
                fill.clear();
                fill.resize(w, v);
                fill
            }
        }
    }
    let init = || {
        let inputs = (Scratch::new(), Scratch::new(), Scratch::new());
        let fills = (Scratch::new(), Scratch::new(), Scratch::new());
        (inputs, fills, Scratch::new())
    };
    each_block(&plan, grain, mem, init, |state, [oo, oa, ob, oc], w, h| {
        let ((ba, bb, bc), (fa, fb, fc), tmp) = state;
        let ia = input(a, oa, sa, sa1, w, h, ba);
        let ib = input(b, ob, sb, sb1, w, h, bb);
        let ic = input(c, oc, sc, sc1, w, h, bc);
        for i in 0..h {
            let x = run(ia.row(ba, i, w), w, fa);
            let y = run(ib.row(bb, i, w), w, fb);
            let z = run(ic.row(bc, i, w), w, fc);
            write_row(out, oo + i * so1, so, w, tmp, |o| {
                slices::zip3(x, y, z, o, f)
            });
        }
    });
    Ok(())
}

/// `buf[i] = f(buf[i])` over the elements of `l`, in place.
pub fn apply<T, F>(buf: &mut [T], l: &Layout, grain: usize, f: &F) -> Result<()>
where
    T: Copy + Default + Send + Sync,
    F: Fn(T) -> T + Sync,
{
    apply_with(buf, l, grain, &Each(f))
}

/// [`apply`] with a kernel.
pub fn apply_with<T, K>(buf: &mut [T], l: &Layout, grain: usize, k: &K) -> Result<()>
where
    T: Copy + Default + Send + Sync,
    K: RowApply<T>,
{
    check_out(l, buf.len())?;
    let plan = Plan::new(&l.shape, [(&l.strides, l.offset)]);
    let s = plan.inner(0);
    let out = SharedOut::new(buf);
    plan.for_each_run(grain, |[o], len| {
        if s == 1 {
            // SAFETY: this run owns `o..o + len` (check_out).
            k.run(unsafe { out.run(o, len) });
        } else {
            for i in 0..len {
                // SAFETY: as above, element by element.
                let v = unsafe { out.at(o + i * s) };
                *v = k.one(*v);
            }
        }
    });
    Ok(())
}

/// `dst[i] = f(dst[i], src[i])` in place; `ls` is `src`'s layout broadcast
/// to `ld`'s shape, and `src` is not `dst`'s buffer (it may have another
/// element type, e.g. a bool mask).
pub fn update<T, S, F>(
    dst: &mut [T],
    ld: &Layout,
    src_data: &[S],
    ls: &Layout,
    grain: usize,
    f: &F,
) -> Result<()>
where
    T: Copy + Default + Send + Sync,
    S: Copy + Default + Send + Sync,
    F: Fn(T, S) -> T + Sync,
{
    update_with(dst, ld, src_data, ls, grain, &Each2(f))
}

/// [`update`] with a kernel.
pub fn update_with<T, S, K>(
    dst: &mut [T],
    ld: &Layout,
    src_data: &[S],
    ls: &Layout,
    grain: usize,
    k: &K,
) -> Result<()>
where
    T: Copy + Default + Send + Sync,
    S: Copy + Default + Send + Sync,
    K: RowUpdate<T, S>,
{
    let (plan, [sd, ss], [sd1, ss1]) = checked_plan([ld, ls], [dst.len(), src_data.len()])?;
    let mem = [mem(dst), mem(src_data)];
    let out = SharedOut::new(dst);
    each_block(&plan, grain, mem, Scratch::new, |bs, [od, os], w, h| {
        let is = input(src_data, os, ss, ss1, w, h, bs);
        for i in 0..h {
            let y = is.row(bs, i, w);
            let row = od + i * sd1;
            if sd == 1 {
                // SAFETY: this block owns its elements of dst (check_out).
                let d = unsafe { out.run(row, w) };
                match y {
                    Src::Run(y) => k.run(d, y),
                    Src::One(y) => k.fill(d, y),
                }
            } else {
                for j in 0..w {
                    let yv = match &y {
                        Src::Run(y) => y[j],
                        Src::One(y) => *y,
                    };
                    // SAFETY: as above, element by element.
                    let v = unsafe { out.at(row + j * sd) };
                    *v = k.one(*v, yv);
                }
            }
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_operands_split_over_the_threads_from_fewer_elements() {
        let f32s = [(0, 4), (0, 4)];
        // contiguous and broadcast operands keep the grain
        assert_eq!(strided_grain(1 << 17, [1, 1], f32s), 1 << 17);
        assert_eq!(strided_grain(1 << 17, [1, 0], f32s), 1 << 17);
        // every other element: 4 + 8 bytes touched per 8
        assert_eq!(strided_grain(1 << 17, [1, 2], f32s), (1 << 17) * 8 / 12);
        assert_eq!(strided_grain(1 << 17, [1, 4], f32s), (1 << 17) * 8 / 20);
        // a column of a wide matrix: a cache line per element read
        assert_eq!(strided_grain(1 << 19, [1, 16], f32s), (1 << 19) * 8 / 68);
        assert_eq!(strided_grain(1 << 17, [1, 1000], f32s), MIN_STRIDED_GRAIN);
        // never above the grain asked for
        assert_eq!(strided_grain(100, [1, 1000], f32s), 100);
    }

    fn layout(shape: &[usize], strides: &[usize], offset: usize) -> Layout {
        Layout::strided(shape, strides, offset)
    }

    /// Row-major values of `l` in `d`.
    fn read(d: &[f32], l: &Layout) -> Vec<f32> {
        let mut v = Vec::new();
        crate::buffer::layout::for_each_offset(&l.shape, &l.strides, l.offset, |o| v.push(d[o]));
        v
    }

    #[test]
    #[cfg_attr(miri, ignore)] // 1.2M elements per layout pair: hours under Miri (tests/properties/ covers these layouts, small)
    fn map_and_zip_match_a_plain_loop_on_every_layout() {
        let base: Vec<f32> = (0..40_000).map(|i| (i as f32 * 0.37).sin()).collect();
        let layouts = [
            layout(&[150, 200], &[200, 1], 0),
            layout(&[150, 200], &[1, 150], 3),
            layout(&[150, 100], &[200, 2], 1),
            layout(&[150, 200], &[0, 1], 5),
            layout(&[150, 200], &[1, 0], 5),
            layout(&[10, 15, 200], &[3000, 200, 1], 0),
            // long strided runs: pieces of RUN_PIECE, gathered in pairs
            layout(&[3, 1100], &[3300, 3], 2),
            layout(&[3, 1100], &[2300, 2], 1),
            layout(&[3, 1100], &[1100, 1], 0),
        ];
        for (i, la) in layouts.iter().enumerate() {
            for lb in &layouts {
                if la.shape != lb.shape {
                    continue;
                }
                let shape = &la.shape;
                for lo in [
                    Layout::contiguous(shape),
                    super::super::iter::output_layout(shape, &[la, lb]),
                ] {
                    let mut out = vec![0f32; lo.storage_extent()];
                    zip(&mut out, &lo, &base, la, &base, lb, 64, &|x, y| x * 2.0 - y).unwrap();
                    let want: Vec<f32> = read(&base, la)
                        .iter()
                        .zip(read(&base, lb))
                        .map(|(x, y)| x * 2.0 - y)
                        .collect();
                    assert_eq!(read(&out, &lo), want, "layouts {la:?} {lb:?} -> {lo:?}");
                    let mut out1 = vec![0f32; lo.storage_extent()];
                    map(&mut out1, &lo, &base, la, 64, &|x| x + 1.0).unwrap();
                    let want1: Vec<f32> = read(&base, la).iter().map(|x| x + 1.0).collect();
                    assert_eq!(read(&out1, &lo), want1, "layout {i}");
                }
            }
        }
    }

    #[test]
    fn in_place_loops_and_overlap_errors() {
        let src: Vec<f32> = (0..600).map(|i| i as f32).collect();
        let mut d = vec![1f32; 600];
        let ld = layout(&[20, 30], &[1, 20], 0);
        let ls = Layout::contiguous(&[20, 30]);
        update(&mut d, &ld, &src, &ls, 16, &|x, y| x + y).unwrap();
        assert_eq!(
            read(&d, &ld),
            read(&src, &ls).iter().map(|v| v + 1.0).collect::<Vec<_>>()
        );
        apply(&mut d, &ld, 16, &|x| x * 2.0).unwrap();
        assert_eq!(d[20], 2.0 * (1.0 + 1.0));
        let expanded = layout(&[20, 30], &[1, 0], 0);
        let err = apply(&mut d, &expanded, 16, &|x| x).unwrap_err();
        assert!(err.to_string().contains("single memory location"), "{err}");
        let err = map(&mut d, &expanded, &src, &ls, 16, &|x| x).unwrap_err();
        assert!(err.to_string().contains("single memory location"), "{err}");
        // Out of bounds is refused before writing.
        let before = d.clone();
        let big = layout(&[30, 30], &[30, 1], 0);
        assert!(map(&mut d, &big, &src, &big, 16, &|x| x).is_err());
        assert_eq!(d, before);
    }

    #[test]
    fn zip3_broadcasts_and_gathers() {
        let a: Vec<bool> = (0..12).map(|i| i % 3 == 0).collect();
        let b: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let c = vec![-1f32];
        let lo = Layout::contiguous(&[4, 3]);
        let la = layout(&[4, 3], &[1, 4], 0);
        let lb = layout(&[4, 3], &[3, 1], 0);
        let lc = layout(&[4, 3], &[0, 0], 0);
        let mut out = vec![0f32; 12];
        zip3(
            &mut out,
            &lo,
            (&a, &la),
            (&b, &lb),
            (&c, &lc),
            4,
            &|p, x, y| {
                if p {
                    x
                } else {
                    y
                }
            },
        )
        .unwrap();
        let want: Vec<f32> = (0..12)
            .map(|k| {
                let (i, j) = (k / 3, k % 3);
                if a[i + 4 * j] {
                    b[k]
                } else {
                    -1.0
                }
            })
            .collect();
        assert_eq!(out, want);
    }
}
