//! Reductions over any set of dims of a strided buffer, for folds whose
//! accumulator is one element (sum, product, max/min, all/any).
//!
//! The dims are ordered by the input's strides and coalesced, then one of
//! two loops runs:
//! - the innermost dim is reduced: each output folds its lane run by run
//!   (SIMD along the contiguous runs);
//! - the innermost dim is kept: each block of contiguous outputs keeps a
//!   row of accumulators and folds the input rows into it (SIMD across the
//!   kept dim), instead of striding through memory element by element. A
//!   short kept dim with adjacent reduced rows folds several rows side by
//!   side.
//!
//! Work is split over outputs only (and, for a few long contiguous lanes,
//! over fixed-size pieces of the lane), so every output is computed in the
//! same order for any thread count: results are bitwise reproducible.

use super::shared_out::SharedOut;
use super::slices;
use crate::buffer::layout::{contiguous_strides, Layout};
use crate::parallel::{for_each_index, num_threads};
use smallvec::SmallVec;

/// A fold with a one-element accumulator of the element type.
pub trait Fold<T: Copy>: Sync {
    /// The identity element (the result of folding nothing).
    fn init(&self) -> T;
    /// `acc` folded with every element of a contiguous run.
    fn run(&self, acc: T, x: &[T]) -> T;
    /// `acc[i] = fold(acc[i], row[i])`.
    fn rows(&self, acc: &mut [T], row: &[T]);
    /// `out[k] = run(init, lane k)` for lanes of `len` at `x[k * stride..]`
    /// (one SIMD call for all of them).
    fn run_many(&self, x: &[T], len: usize, stride: usize, out: &mut [T]) {
        for (k, o) in out.iter_mut().enumerate() {
            *o = self.run(self.init(), &x[k * stride..k * stride + len]);
        }
    }
    /// [`Fold::rows`] for `n` rows at `x[r * stride..]` (one SIMD call).
    fn rows_many(&self, acc: &mut [T], x: &[T], stride: usize, n: usize) {
        let w = acc.len();
        for r in 0..n {
            self.rows(acc, &x[r * stride..r * stride + w]);
        }
    }
    /// Applied to each result before it is stored (a mean's division).
    #[inline(always)]
    fn finish(&self, acc: T) -> T {
        acc
    }
}

/// Elements per piece when a long lane is folded in parallel. Fixed (not
/// derived from the thread count) so results are identical for any count.
pub const LANE_PIECE: usize = 1 << 14;
/// Rows folded into a partial before it joins the total (sums of many
/// rows keep a blocked error bound).
const ROW_BLOCK: usize = 256;
/// Accumulators per block of kept outputs in the row loop.
const ROW_WIDTH: usize = 256;
/// Elements from which a reduction is split over the threads.
const GRAIN: usize = 1 << 15;

#[derive(Clone, Copy, Debug)]
struct Dim {
    size: usize,
    stride: usize,
    /// Stride in the (row-major) output; unused for reduced dims.
    out: usize,
    reduced: bool,
}

/// The input's dims (size > 1) innermost first, coalesced.
fn plan(l: &Layout, dims: &[usize]) -> SmallVec<[Dim; 6]> {
    let out_shape: SmallVec<[usize; 6]> = (0..l.ndim())
        .map(|d| if dims.contains(&d) { 1 } else { l.shape[d] })
        .collect();
    let out_strides = contiguous_strides(&out_shape);
    let mut ds: SmallVec<[Dim; 6]> = (0..l.ndim())
        .filter(|&d| l.shape[d] != 1)
        .map(|d| Dim {
            size: l.shape[d],
            stride: l.strides[d],
            out: out_strides[d],
            reduced: dims.contains(&d),
        })
        .collect();
    // Innermost (smallest input stride) first; among equal strides (a
    // broadcast input) the later dim first, as in row-major order.
    ds.reverse();
    ds.sort_by_key(|d| d.stride);
    let mut out: SmallVec<[Dim; 6]> = SmallVec::new();
    for d in ds {
        if let Some(last) = out.last_mut() {
            if last.reduced == d.reduced
                && last.stride * last.size == d.stride
                && (d.reduced || last.out * last.size == d.out)
            {
                last.size *= d.size;
                continue;
            }
        }
        out.push(d);
    }
    out
}

/// An odometer over some dims: yields the input (and output) offset of
/// each index in order, the first dim fastest.
struct Odometer<'a> {
    dims: SmallVec<[&'a Dim; 6]>,
    idx: SmallVec<[usize; 6]>,
}

impl<'a> Odometer<'a> {
    fn new(dims: impl Iterator<Item = &'a Dim>) -> Self {
        let dims: SmallVec<[&Dim; 6]> = dims.collect();
        let idx = smallvec::smallvec![0; dims.len()];
        Odometer { dims, idx }
    }
    fn count(&self) -> usize {
        self.dims.iter().map(|d| d.size).product()
    }
    /// (input offset, output offset) of linear index `i`.
    fn at(&self, mut i: usize) -> (usize, usize) {
        let (mut a, mut b) = (0, 0);
        for d in &self.dims {
            let k = i % d.size;
            i /= d.size;
            a += k * d.stride;
            b += k * d.out;
        }
        (a, b)
    }
    /// Calls `f(input offset)` for every index, in order.
    fn each(&mut self, mut f: impl FnMut(usize)) {
        let n = self.count();
        let mut off = 0;
        self.idx.iter_mut().for_each(|i| *i = 0);
        for _ in 0..n {
            f(off);
            for (k, d) in self.dims.iter().enumerate() {
                self.idx[k] += 1;
                off += d.stride;
                if self.idx[k] < d.size {
                    break;
                }
                off -= d.size * d.stride;
                self.idx[k] = 0;
            }
        }
    }
}

/// Runs `f(unit)` for `units` units of about `cost` elements each, split
/// over the threads when the total is large.
fn for_units(units: usize, cost: usize, f: impl Fn(usize) + Sync) {
    for_unit_ranges(units, cost, |u0, u1| (u0..u1).for_each(&f))
}

/// [`for_units`] handing out consecutive ranges of units.
fn for_unit_ranges(units: usize, cost: usize, f: impl Fn(usize, usize) + Sync) {
    let total = units.saturating_mul(cost.max(1));
    let threads = num_threads();
    if threads < 2 || units < 2 || total < GRAIN {
        return f(0, units);
    }
    let per = units
        .div_ceil(4 * threads)
        .max(GRAIN / 4 / cost.max(1))
        .max(1);
    let chunks = units.div_ceil(per);
    for_each_index(chunks, &|c| f(c * per, ((c + 1) * per).min(units)));
}

/// Folds `x` (laid out by `l`) over `dims` (sorted, unique) into `out`,
/// which holds the kept dims in row-major order (`l`'s shape with the
/// reduced dims removed). Panics if `l` reaches past `x` or `out` is not
/// the kept size (callers allocate it).
pub fn fold<T, F>(out: &mut [T], x: &[T], l: &Layout, dims: &[usize], f: &F)
where
    T: Copy + Default + Send + Sync,
    F: Fold<T>,
{
    let kept: usize = (0..l.ndim())
        .filter(|d| !dims.contains(d))
        .map(|d| l.shape[d])
        .product();
    assert_eq!(out.len(), kept, "fold: output size");
    if l.numel() == 0 {
        out.iter_mut().for_each(|o| *o = f.finish(f.init()));
        return;
    }
    assert!(
        l.storage_extent() <= x.len(),
        "fold: layout past its buffer"
    );
    let ds = plan(l, dims);
    let base = l.offset;
    let ptr = SharedOut::new(out);
    match ds.first() {
        None => out[0] = f.finish(f.run(f.init(), &x[base..base + 1])),
        Some(d0) if d0.reduced => lanes(ptr, x, base, &ds, f),
        Some(_) => rows(ptr, x, base, &ds, f),
    }
}

/// The innermost dim is reduced: each output folds its lane.
fn lanes<T, F>(out: SharedOut<T>, x: &[T], base: usize, ds: &[Dim], f: &F)
where
    T: Copy + Default + Send + Sync,
    F: Fold<T>,
{
    let d0 = ds[0];
    let kept = Odometer::new(ds.iter().filter(|d| !d.reduced));
    let outer_red: SmallVec<[&Dim; 6]> = ds[1..].iter().filter(|d| d.reduced).collect();
    let lane: usize = d0.size * outer_red.iter().map(|d| d.size).product::<usize>();
    let count = kept.count();
    // A few long contiguous lanes: fold fixed pieces of each in parallel.
    if outer_red.is_empty() && d0.stride == 1 && count <= 8 && lane >= 2 * LANE_PIECE {
        for k in 0..count {
            let (ia, oa) = kept.at(k);
            let run = &x[base + ia..base + ia + lane];
            let pieces = lane.div_ceil(LANE_PIECE);
            let mut part = vec![f.init(); pieces];
            let pp = SharedOut::new(&mut part);
            for_units(pieces, LANE_PIECE, |p| {
                let piece = &run[p * LANE_PIECE..((p + 1) * LANE_PIECE).min(lane)];
                // SAFETY: piece p writes part[p] only; part outlives the call.
                unsafe { pp.write(p, f.run(f.init(), piece)) };
            });
            let v = f.finish(f.run(f.init(), &part));
            // SAFETY: output k is written once, here, by this thread.
            unsafe { out.write(oa, v) };
        }
        return;
    }
    let cost = lane + 8;
    let kept_dims: SmallVec<[&Dim; 6]> = ds.iter().filter(|d| !d.reduced).collect();
    if outer_red.is_empty() && d0.stride == 1 && kept_dims.len() <= 1 {
        // Evenly spaced contiguous lanes: folded many per call.
        let (ks, os) = kept_dims.first().map_or((0, 0), |d| (d.stride, d.out));
        return for_unit_ranges(count, cost, |k0, k1| {
            let mut vals = vec![f.init(); k1 - k0];
            let first = base + k0 * ks;
            let span = (k1 - k0 - 1) * ks + d0.size;
            f.run_many(&x[first..first + span], d0.size, ks, &mut vals);
            for (k, &v) in (k0..k1).zip(&vals) {
                // SAFETY: output k * os belongs to this range alone.
                unsafe { out.write(k * os, f.finish(v)) };
            }
        });
    }
    if outer_red.is_empty() && d0.stride == 1 {
        // Each lane is one contiguous run.
        return for_units(count, cost, |k| {
            let (ia, oa) = kept.at(k);
            let start = base + ia;
            let v = f.finish(f.run(f.init(), &x[start..start + d0.size]));
            // SAFETY: output element oa belongs to unit k alone.
            unsafe { out.write(oa, v) };
        });
    }
    if d0.stride == 1 && d0.size < ROW_WIDTH {
        // Short contiguous runs: fold the runs of a lane into one row of
        // accumulators (SIMD across the run), then fold that row.
        let (r1, outer) = (outer_red[0], &outer_red[1..]);
        return for_units(count, cost, |k| {
            let (ia, oa) = kept.at(k);
            let mut row = vec![f.init(); d0.size];
            let mut red = Odometer::new(outer.iter().copied());
            red.each(|ro| {
                let first = base + ia + ro;
                let span = (r1.size - 1) * r1.stride + d0.size;
                f.rows_many(&mut row, &x[first..first + span], r1.stride, r1.size);
            });
            // SAFETY: output element oa belongs to unit k alone.
            unsafe { out.write(oa, f.finish(f.run(f.init(), &row))) };
        });
    }
    for_units(count, cost, |k| {
        let (ia, oa) = kept.at(k);
        let mut acc = f.init();
        // Strided lanes are gathered GATHER elements at a time (whole SIMD
        // folds per piece, the gather as shuffles for strides 2 and 3).
        const GATHER: usize = 512;
        let mut buf = [T::default(); GATHER];
        let mut red = Odometer::new(outer_red.iter().copied());
        red.each(|ro| {
            let start = base + ia + ro;
            if d0.stride == 1 {
                acc = f.run(acc, &x[start..start + d0.size]);
            } else {
                let mut i = 0;
                while i < d0.size {
                    let n = GATHER.min(d0.size - i);
                    let at = start + i * d0.stride;
                    slices::gather(&x[at..], d0.stride, &mut buf[..n]);
                    acc = f.run(acc, &buf[..n]);
                    i += n;
                }
            }
        });
        // SAFETY: output element oa belongs to unit k alone.
        unsafe { out.write(oa, f.finish(acc)) };
    });
}

/// The innermost dim is kept: blocks of outputs fold whole rows.
fn rows<T, F>(out: SharedOut<T>, x: &[T], base: usize, ds: &[Dim], f: &F)
where
    T: Copy + Default + Send + Sync,
    F: Fold<T>,
{
    let d0 = ds[0];
    let red_dims: SmallVec<[&Dim; 6]> = ds[1..].iter().filter(|d| d.reduced).collect();
    let Some(&d1) = red_dims.first() else {
        // Nothing reduced (every reduced dim has size 1): finish each value.
        let kept = Odometer::new(ds.iter());
        return for_units(kept.count(), 1, |k| {
            let (ia, oa) = kept.at(k);
            // SAFETY: output oa belongs to unit k alone.
            unsafe { out.write(oa, f.finish(f.run(f.init(), &x[base + ia..base + ia + 1]))) };
        });
    };
    // A short contiguous kept dim whose reduced rows lie side by side: fold
    // `side` rows at once as one wide row, then the segments together.
    let side = if d0.stride == 1 && d1.stride == d0.size && 2 * d0.size <= ROW_WIDTH {
        (ROW_WIDTH / d0.size).min(d1.size)
    } else {
        1
    };
    let width = if side > 1 {
        d0.size
    } else {
        d0.size.min(ROW_WIDTH)
    };
    let blocks = d0.size.div_ceil(width);
    let outer_kept = Odometer::new(ds[1..].iter().filter(|d| !d.reduced));
    let red_count: usize = red_dims.iter().map(|d| d.size).product();
    // Sums of many rows go through partials of ROW_BLOCK rows.
    let blocked = red_count > ROW_BLOCK;
    let units = outer_kept.count() * blocks;
    for_units(units, width * red_count, |u| {
        let (ko, oo) = outer_kept.at(u / blocks);
        let j0 = (u % blocks) * width;
        let w = width.min(d0.size - j0);
        let start = base + ko + j0 * d0.stride;
        let span = w * side;
        let mut acc = vec![f.init(); span];
        let mut part = if blocked {
            vec![f.init(); span]
        } else {
            Vec::new()
        };
        let mut gathered = vec![T::default(); if d0.stride == 1 { 0 } else { w }];
        let mut in_part = 0;
        // Folds `n` rows of `len` elements at `first + r * stride`.
        let mut fold_rows = |first: usize, stride: usize, n: usize, len: usize| {
            let target = if blocked {
                &mut part[..len]
            } else {
                &mut acc[..len]
            };
            if d0.stride == 1 {
                f.rows_many(target, &x[first..first + (n - 1) * stride + len], stride, n);
            } else {
                for r in 0..n {
                    let row = first + r * stride;
                    for (j, g) in gathered.iter_mut().enumerate() {
                        *g = x[row + j * d0.stride];
                    }
                    f.rows(target, &gathered);
                }
            }
            if blocked {
                in_part += n * len / w;
                if in_part >= ROW_BLOCK {
                    f.rows(&mut acc, &part);
                    part.iter_mut().for_each(|p| *p = f.init());
                    in_part = 0;
                }
            }
        };
        let mut outer = Odometer::new(red_dims[1..].iter().copied());
        let (wide, rest) = (d1.size / side, d1.size % side);
        let per = (ROW_BLOCK / side).max(1);
        outer.each(|ro| {
            let s0 = start + ro;
            let mut g = 0;
            while g < wide {
                let n = per.min(wide - g);
                fold_rows(s0 + g * side * d1.stride, side * d1.stride, n, span);
                g += n;
            }
            if rest > 0 {
                fold_rows(s0 + wide * side * d1.stride, d1.stride, rest, w);
            }
        });
        if blocked && in_part > 0 {
            f.rows(&mut acc, &part);
        }
        // Fold the side-by-side segments into the first one, in order.
        let (first, others) = acc.split_at_mut(w);
        for seg in others.chunks(w) {
            f.rows(first, seg);
        }
        for (j, &a) in first.iter().enumerate() {
            // SAFETY: outputs (oo + (j0 + j) * out stride) belong to unit u
            // alone: units split the kept index space.
            unsafe { out.write(oo + (j0 + j) * d0.out, f.finish(a)) };
        }
    });
}

/// Element operations the standard folds need.
pub trait FoldElem: Copy + Default + Send + Sync + 'static {
    fn add(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
    /// The larger of the two; NaN wins (and stays).
    fn max_nan(a: Self, b: Self) -> Self;
    /// The smaller of the two; NaN wins (and stays).
    fn min_nan(a: Self, b: Self) -> Self;
    /// [`FoldElem::max_nan`] for an accumulator held in registers (a fold
    /// along a lane): a compare and two selects, where `max_nan`'s form
    /// (safe for accumulators in memory) left the lane folds 6x slower.
    #[inline(always)]
    fn max_acc(acc: Self, x: Self) -> Self {
        Self::max_nan(acc, x)
    }
    /// [`FoldElem::max_acc`] for the minimum.
    #[inline(always)]
    fn min_acc(acc: Self, x: Self) -> Self {
        Self::min_nan(acc, x)
    }
    fn zero() -> Self;
    fn one() -> Self;
    /// The identity of max (-inf, or the type's minimum).
    fn lowest() -> Self;
    fn highest() -> Self;
    /// Whether add, mul, max and min are exact and associative (integers,
    /// bool): any fold order gives the same result, so a lane is folded
    /// by one plain loop (see [`slices::fold_exact`]).
    const EXACT: bool = false;
    /// `f` folded over `x` from `init`: [`slices::fold_exact`] for exact
    /// types, [`slices::fold_wide`]'s fixed partials for floats.
    #[inline(always)]
    fn fold_run<F: Fn(Self, Self) -> Self>(x: &[Self], init: Self, f: &F) -> Self {
        if Self::EXACT {
            slices::fold_exact(x, init, f)
        } else {
            slices::fold_wide(x, init, f)
        }
    }
    /// The NaN-propagating maximum (`max`) or minimum of `x` (the
    /// identity for an empty `x`): [`FoldElem::fold_run`] of
    /// [`FoldElem::max_acc`] / [`FoldElem::min_acc`]; floats take
    /// [`slices::fold_probed`] and fold again only where it saw a NaN or
    /// an infinity.
    #[inline(always)]
    fn fold_extreme(x: &[Self], max: bool) -> Self {
        Self::fold_extreme_exact(x, max)
    }
    /// [`FoldElem::fold_extreme`] by the NaN-propagating fold (the floats'
    /// fallback).
    #[inline(always)]
    fn fold_extreme_exact(x: &[Self], max: bool) -> Self {
        if max {
            Self::fold_run(x, Self::lowest(), &Self::max_acc)
        } else {
            Self::fold_run(x, Self::highest(), &Self::min_acc)
        }
    }
    /// [`FoldElem::fold_extreme`] of each lane of `len` at `x[k * stride..]`.
    fn fold_extreme_lanes(x: &[Self], len: usize, stride: usize, max: bool, out: &mut [Self]) {
        Self::fold_extreme_lanes_exact(x, len, stride, max, out)
    }
    /// [`FoldElem::fold_extreme_lanes`] by the NaN-propagating fold.
    fn fold_extreme_lanes_exact(
        x: &[Self],
        len: usize,
        stride: usize,
        max: bool,
        out: &mut [Self],
    ) {
        if max {
            Self::fold_lanes(x, len, stride, Self::lowest(), &Self::max_acc, out)
        } else {
            Self::fold_lanes(x, len, stride, Self::highest(), &Self::min_acc, out)
        }
    }
    /// [`FoldElem::fold_run`] of each lane of `len` at `x[k * stride..]`.
    #[inline(always)]
    fn fold_lanes<F: Fn(Self, Self) -> Self>(
        x: &[Self],
        len: usize,
        stride: usize,
        init: Self,
        f: &F,
        out: &mut [Self],
    ) {
        if Self::EXACT {
            slices::fold_lanes_exact(x, len, stride, init, f, out)
        } else {
            slices::fold_lanes(x, len, stride, init, f, out)
        }
    }
}

/// Shortest float lane folded by [`slices::fold_probed`] for a max or min:
/// on shorter ones (rows of 64-100 float32) its set-up cost more than the
/// NaN tests it saves (softmax over rows of 64 took 1.5x as long).
const PROBED_MIN: usize = 256;

macro_rules! float_fold_elem {
    ($t:ty) => {
        impl FoldElem for $t {
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self {
                a + b
            }
            #[inline(always)]
            fn mul(a: Self, b: Self) -> Self {
                a * b
            }
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn max_nan(a: Self, b: Self) -> Self {
                // A select between two computed values (never "keep the
                // old value", which compiles to masked stores, slow on
                // Zen); a NaN operand makes `a + b` NaN.
                let m = a.max(b);
                if (a != a) | (b != b) {
                    a + b
                } else {
                    m
                }
            }
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn min_nan(a: Self, b: Self) -> Self {
                let m = a.min(b);
                if (a != a) | (b != b) {
                    a + b
                } else {
                    m
                }
            }
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn max_acc(acc: Self, x: Self) -> Self {
                // `x` when unordered: a NaN `x` is taken, a NaN `acc` kept.
                let m = if acc > x { acc } else { x };
                if acc != acc {
                    acc
                } else {
                    m
                }
            }
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn min_acc(acc: Self, x: Self) -> Self {
                let m = if acc < x { acc } else { x };
                if acc != acc {
                    acc
                } else {
                    m
                }
            }
            #[inline(always)]
            fn fold_extreme(x: &[Self], max: bool) -> Self {
                if x.len() < PROBED_MIN {
                    return Self::fold_extreme_exact(x, max);
                }
                let (r, probe) = if max {
                    slices::fold_probed(x, <$t>::NEG_INFINITY, 0.0, &|a: $t, v| {
                        if a > v {
                            a
                        } else {
                            v
                        }
                    })
                } else {
                    slices::fold_probed(x, <$t>::INFINITY, 0.0, &|a: $t, v| {
                        if a < v {
                            a
                        } else {
                            v
                        }
                    })
                };
                if probe == 0.0 {
                    r
                } else {
                    Self::fold_extreme_exact(x, max)
                }
            }
            fn fold_extreme_lanes(
                x: &[Self],
                len: usize,
                stride: usize,
                max: bool,
                out: &mut [Self],
            ) {
                if len < PROBED_MIN {
                    return Self::fold_extreme_lanes_exact(x, len, stride, max, out);
                }
                let mut folds = vec![(0.0, 0.0); out.len()];
                if max {
                    let pick = |a: $t, v| if a > v { a } else { v };
                    let init = <$t>::NEG_INFINITY;
                    slices::fold_probed_lanes(x, len, stride, init, 0.0, &pick, &mut folds);
                } else {
                    let pick = |a: $t, v| if a < v { a } else { v };
                    let init = <$t>::INFINITY;
                    slices::fold_probed_lanes(x, len, stride, init, 0.0, &pick, &mut folds);
                }
                for (k, (o, &(r, probe))) in out.iter_mut().zip(&folds).enumerate() {
                    *o = if probe == 0.0 {
                        r
                    } else {
                        Self::fold_extreme_exact(&x[k * stride..k * stride + len], max)
                    };
                }
            }
            fn zero() -> Self {
                0.0
            }
            fn one() -> Self {
                1.0
            }
            fn lowest() -> Self {
                <$t>::NEG_INFINITY
            }
            fn highest() -> Self {
                <$t>::INFINITY
            }
        }
    };
}
float_fold_elem!(f32);
float_fold_elem!(f64);

impl FoldElem for i64 {
    const EXACT: bool = true;
    #[inline(always)]
    fn add(a: Self, b: Self) -> Self {
        a.wrapping_add(b)
    }
    #[inline(always)]
    fn mul(a: Self, b: Self) -> Self {
        a.wrapping_mul(b)
    }
    #[inline(always)]
    fn max_nan(a: Self, b: Self) -> Self {
        a.max(b)
    }
    #[inline(always)]
    fn min_nan(a: Self, b: Self) -> Self {
        a.min(b)
    }
    fn zero() -> Self {
        0
    }
    fn one() -> Self {
        1
    }
    fn lowest() -> Self {
        i64::MIN
    }
    fn highest() -> Self {
        i64::MAX
    }
}

impl FoldElem for bool {
    const EXACT: bool = true;
    #[inline(always)]
    fn add(a: Self, b: Self) -> Self {
        a | b
    }
    #[inline(always)]
    fn mul(a: Self, b: Self) -> Self {
        a & b
    }
    #[inline(always)]
    fn max_nan(a: Self, b: Self) -> Self {
        a | b
    }
    #[inline(always)]
    fn min_nan(a: Self, b: Self) -> Self {
        a & b
    }
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
    fn lowest() -> Self {
        false
    }
    fn highest() -> Self {
        true
    }
}

/// Sum (any for bool), optionally scaled at the end (a mean).
pub struct Sum<T> {
    pub scale: Option<T>,
}

impl<T: FoldElem> Fold<T> for Sum<T> {
    fn init(&self) -> T {
        T::zero()
    }
    #[inline]
    fn run(&self, acc: T, x: &[T]) -> T {
        T::add(acc, T::fold_run(x, T::zero(), &T::add))
    }
    #[inline]
    fn rows(&self, acc: &mut [T], row: &[T]) {
        slices::update(acc, row, &T::add)
    }
    fn rows_many(&self, acc: &mut [T], x: &[T], stride: usize, n: usize) {
        slices::update_rows(acc, x, stride, n, &T::add)
    }
    fn run_many(&self, x: &[T], len: usize, stride: usize, out: &mut [T]) {
        T::fold_lanes(x, len, stride, T::zero(), &T::add, out)
    }
    #[inline(always)]
    fn finish(&self, acc: T) -> T {
        match self.scale {
            Some(s) => T::mul(acc, s),
            None => acc,
        }
    }
}

/// Product (all for bool).
pub struct Prod;

impl<T: FoldElem> Fold<T> for Prod {
    fn init(&self) -> T {
        T::one()
    }
    #[inline]
    fn run(&self, acc: T, x: &[T]) -> T {
        T::mul(acc, T::fold_run(x, T::one(), &T::mul))
    }
    #[inline]
    fn rows(&self, acc: &mut [T], row: &[T]) {
        slices::update(acc, row, &T::mul)
    }
    fn rows_many(&self, acc: &mut [T], x: &[T], stride: usize, n: usize) {
        slices::update_rows(acc, x, stride, n, &T::mul)
    }
    fn run_many(&self, x: &[T], len: usize, stride: usize, out: &mut [T]) {
        T::fold_lanes(x, len, stride, T::one(), &T::mul, out)
    }
}

/// NaN-propagating maximum (`max: true`) or minimum.
pub struct Extreme {
    pub max: bool,
}

impl<T: FoldElem> Fold<T> for Extreme {
    fn init(&self) -> T {
        if self.max {
            T::lowest()
        } else {
            T::highest()
        }
    }
    #[inline]
    fn run(&self, acc: T, x: &[T]) -> T {
        if self.max {
            T::max_acc(acc, T::fold_extreme(x, true))
        } else {
            T::min_acc(acc, T::fold_extreme(x, false))
        }
    }
    #[inline]
    fn rows(&self, acc: &mut [T], row: &[T]) {
        if self.max {
            slices::update(acc, row, &T::max_nan)
        } else {
            slices::update(acc, row, &T::min_nan)
        }
    }
    fn rows_many(&self, acc: &mut [T], x: &[T], stride: usize, n: usize) {
        if self.max {
            slices::update_rows(acc, x, stride, n, &T::max_nan)
        } else {
            slices::update_rows(acc, x, stride, n, &T::min_nan)
        }
    }
    fn run_many(&self, x: &[T], len: usize, stride: usize, out: &mut [T]) {
        T::fold_extreme_lanes(x, len, stride, self.max, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(shape: &[usize], strides: &[usize], offset: usize) -> Layout {
        Layout {
            shape: shape.into(),
            strides: strides.into(),
            offset,
        }
    }

    /// Plain-loop sum over `dims` in f64, kept dims row-major.
    fn reference(x: &[f64], l: &Layout, dims: &[usize]) -> Vec<f64> {
        let kept: Vec<usize> = (0..l.ndim()).filter(|d| !dims.contains(d)).collect();
        let n: usize = kept.iter().map(|&d| l.shape[d]).product();
        let mut out = vec![0.0; n];
        let total = l.numel();
        for mut i in 0..total {
            let mut idx = vec![0; l.ndim()];
            for d in (0..l.ndim()).rev() {
                idx[d] = i % l.shape[d];
                i /= l.shape[d];
            }
            let off: usize = l.offset
                + idx
                    .iter()
                    .zip(&l.strides)
                    .map(|(a, b)| a * b)
                    .sum::<usize>();
            let mut k = 0;
            for &d in &kept {
                k = k * l.shape[d] + idx[d];
            }
            out[k] += x[off];
        }
        out
    }

    #[test]
    fn sums_over_every_dim_set_and_layout_match_a_plain_loop() {
        let x: Vec<f64> = (0..200_000)
            .map(|i| ((i * 7919) % 1000) as f64 - 500.0)
            .collect();
        let cases = [
            layout(&[40, 30, 50], &[1500, 50, 1], 0),
            layout(&[40, 30, 50], &[1, 40, 1200], 3),
            layout(&[50, 30, 40], &[1, 2000, 50], 0),
            layout(&[20, 30, 25], &[1500, 50, 2], 1),
            layout(&[1000, 3], &[3, 1], 0),
            layout(&[600, 7], &[7, 1], 5),
            layout(&[40, 30], &[0, 1], 0),
            layout(&[70_000, 2], &[2, 1], 0),
        ];
        for l in &cases {
            let nd = l.ndim();
            let mut sets: Vec<Vec<usize>> = (0..nd).map(|d| vec![d]).collect();
            sets.push((0..nd).collect());
            if nd == 3 {
                sets.push(vec![0, 2]);
                sets.push(vec![1, 2]);
            }
            for dims in sets {
                let want = reference(&x, l, &dims);
                let mut out = vec![0.0; want.len()];
                fold(&mut out, &x, l, &dims, &Sum { scale: None });
                assert_eq!(out, want, "{l:?} over {dims:?}");
                let mut mx = vec![0.0; want.len()];
                fold(&mut mx, &x, l, &dims, &Extreme { max: true });
                assert!(mx.iter().all(|&m| m <= 499.0), "{l:?} {dims:?}");
            }
        }
    }

    #[test]
    fn max_propagates_nan_and_empty_folds_give_the_identity() {
        let mut x: Vec<f32> = (0..3000).map(|i| i as f32).collect();
        x[1234] = f32::NAN;
        let l = Layout::contiguous(&[30, 100]);
        let mut out = vec![0f32; 100];
        fold(&mut out, &x, &l, &[0], &Extreme { max: true });
        assert!(out[34].is_nan());
        assert_eq!(out[35], 2935.0);
        let mut out = vec![0f32; 30];
        fold(&mut out, &x, &l, &[1], &Extreme { max: false });
        assert!(out[12].is_nan());
        assert_eq!(out[0], 0.0);
        let empty = Layout::contiguous(&[0, 4]);
        let mut out = vec![7f32; 4];
        fold(&mut out, &x, &empty, &[0], &Sum { scale: None });
        assert_eq!(out, vec![0.0; 4]);
    }
}
