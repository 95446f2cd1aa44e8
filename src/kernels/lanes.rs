//! Operations along one dim of a contiguous buffer: softmax, log-softmax,
//! cumulative sums and lane reductions such as logsumexp.
//!
//! The buffer is `[outer, n, inner]` around the dim (length `n`). With
//! `inner == 1` each lane is a contiguous slice and the op runs lane by
//! lane ([`AlongDim::lane`]). Otherwise the lanes interleave in memory and
//! the op runs on blocks of `w` neighbouring lanes at once
//! ([`AlongDim::rows`]): row `r` of a block is `w` contiguous elements, so
//! every pass over the rows is a SIMD loop across the lanes, instead of a
//! strided walk down each lane.
//!
//! Work is split over lanes only, so results do not depend on the thread
//! count.

use super::fold::FoldElem;
use super::shared_out::SharedOut;
use super::slices;
use super::unary::vmath;
use crate::buffer::{Element, Float};
use crate::parallel::{for_each_index, num_threads};

/// Lanes per block in the row loop (the accumulators stay in L1).
const BLOCK_W: usize = 256;
/// Elements from which the work is split over the threads.
const GRAIN: usize = 1 << 14;

/// Floats with vectorised exp, exp - 1 and log ([`vmath`]).
pub trait VecFloat: Float + FoldElem {
    fn vexp(self) -> Self;
    fn vln(self) -> Self;
    fn vexp_m1(self) -> Self;
}

impl VecFloat for f32 {
    #[inline(always)]
    fn vexp(self) -> Self {
        vmath::exp_f32(self)
    }
    #[inline(always)]
    fn vln(self) -> Self {
        vmath::ln_f32(self)
    }
    #[inline(always)]
    fn vexp_m1(self) -> Self {
        vmath::exp_m1_f32(self)
    }
}

impl VecFloat for f64 {
    #[inline(always)]
    fn vexp(self) -> Self {
        vmath::exp_f64(self)
    }
    #[inline(always)]
    fn vln(self) -> Self {
        vmath::ln_f64(self)
    }
    #[inline(always)]
    fn vexp_m1(self) -> Self {
        vmath::exp_m1_f64(self)
    }
}

/// A block of `w` neighbouring lanes of length `n`: input row `r` is
/// `x(r)`, output row `r` is `out(r)`; rows are `w` contiguous elements.
pub struct Rows<'a, T, U> {
    x: &'a [T],
    out: *mut U,
    out_len: usize,
    base: usize,
    stride: usize,
    out_base: usize,
    out_stride: usize,
    /// Output rows (`n` for a scan, 1 for a reduction).
    out_rows: usize,
    pub n: usize,
    pub w: usize,
}

impl<'a, T, U> Rows<'a, T, U> {
    /// Input row `r`.
    #[inline(always)]
    pub fn x(&self, r: usize) -> &'a [T] {
        let s = self.base + r * self.stride;
        &self.x[s..s + self.w]
    }
    /// Output row `r` (one output row per block at a time).
    #[inline(always)]
    pub fn out(&mut self, r: usize) -> &mut [U] {
        let s = self.out_base + r * self.out_stride;
        assert!(r < self.out_rows && s + self.w <= self.out_len);
        // SAFETY: in bounds (checked); the block's output rows belong to
        // this block alone (blocks partition the lanes) and `&mut self`
        // keeps one row borrowed at a time.
        unsafe { std::slice::from_raw_parts_mut(self.out.add(s), self.w) }
    }
}

/// An operation along a dim: one lane at a time, or a block of rows.
pub trait AlongDim<T, U>: Sync {
    /// How many outputs per lane: `n` (a scan or softmax) or 1 (a
    /// reduction).
    fn out_len(&self, n: usize) -> usize;
    /// One contiguous lane `x` into its outputs `out`.
    fn lane(&self, x: &[T], out: &mut [U]);
    /// A block of lanes (see [`Rows`]).
    fn rows(&self, b: &mut Rows<'_, T, U>);
    /// The work per element, in units of one add (a sum or a scan: 1):
    /// the threads share the work from [`GRAIN`] units.
    fn cost(&self) -> usize {
        1
    }
}

/// Runs `op` along the middle dim of `x`, a contiguous `[outer, n, inner]`
/// buffer, into `out`, a contiguous `[outer, op.out_len(n), inner]` one.
pub fn along<T, U, A>(x: &[T], [outer, n, inner]: [usize; 3], out: &mut [U], op: &A)
where
    T: Copy + Send + Sync,
    U: Copy + Send + Sync,
    A: AlongDim<T, U>,
{
    let m = op.out_len(n);
    assert_eq!(x.len(), outer * n * inner, "along: input size");
    assert_eq!(out.len(), outer * m * inner, "along: output size");
    if x.is_empty() && out.is_empty() {
        return;
    }
    let threads = num_threads();
    let grain = (GRAIN / op.cost().max(1)).max(1);
    if inner == 1 {
        // Contiguous lanes.
        let lanes = outer;
        let per = if threads < 2 || lanes * n < grain {
            lanes.max(1)
        } else {
            lanes.div_ceil(4 * threads).max(grain / n.max(1) / 4).max(1)
        };
        let ptr = SharedOut::new(out);
        let chunks = lanes.div_ceil(per);
        let run = |c: usize| {
            for k in c * per..((c + 1) * per).min(lanes) {
                // SAFETY: lane k's outputs `k*m..(k+1)*m` are inside `out`
                // (asserted sizes) and written by this lane only.
                let o = unsafe { ptr.run(k * m, m) };
                op.lane(&x[k * n..(k + 1) * n], o);
            }
        };
        if chunks < 2 {
            return (0..chunks).for_each(run);
        }
        return for_each_index(chunks, &run);
    }
    let w = inner.min(BLOCK_W);
    let blocks_per = inner.div_ceil(w);
    let units = outer * blocks_per;
    let ptr = SharedOut::new(out);
    let out_len = out.len();
    let run_unit = |u: usize| {
        let (o, b) = (u / blocks_per, u % blocks_per);
        let j0 = b * w;
        let mut rows = Rows {
            x,
            out: ptr.ptr(),
            out_len,
            base: o * n * inner + j0,
            stride: inner,
            out_base: o * m * inner + j0,
            out_stride: inner,
            out_rows: m,
            n,
            w: w.min(inner - j0),
        };
        op.rows(&mut rows);
    };
    let cost = n * w;
    if threads < 2 || units < 2 || units * cost < grain {
        return (0..units).for_each(run_unit);
    }
    let per = units.div_ceil(4 * threads).max(grain / cost / 4).max(1);
    let chunks = units.div_ceil(per);
    for_each_index(chunks, &|c| {
        (c * per..((c + 1) * per).min(units)).for_each(run_unit)
    });
}

/// The NaN-propagating maximum of a lane (-inf when empty).
#[inline]
fn lane_max<T: VecFloat>(x: &[T]) -> T {
    T::fold_extreme(x, true)
}

/// Row maxima of a block: `m[j] = max_r x(r)[j]`.
fn rows_max<T: VecFloat, U>(b: &Rows<'_, T, U>) -> Vec<T> {
    let mut m = vec![T::lowest(); b.w];
    for r in 0..b.n {
        slices::update(&mut m, b.x(r), &T::max_nan);
    }
    m
}

/// The shift subtracted before exponentiating: the maximum, or 0 when it
/// is infinite (so `-inf` lanes give `exp(-inf) = 0`, not NaN).
#[inline(always)]
fn shift<T: VecFloat>(m: T) -> T {
    if m.is_finite() {
        m
    } else {
        <T as Element>::zero()
    }
}

/// An `exp` with the maximum, sum and scaling around it, in adds
/// ([`AlongDim::cost`]): a 100 x 100 softmax is worth two threads.
const EXP_COST: usize = 4;

/// `exp(x) / sum(exp(x))` along the dim.
pub struct Softmax;

impl<T: VecFloat> AlongDim<T, T> for Softmax {
    fn cost(&self) -> usize {
        EXP_COST
    }
    fn out_len(&self, n: usize) -> usize {
        n
    }
    fn lane(&self, x: &[T], out: &mut [T]) {
        softmax_lane(x, out, false)
    }
    fn rows(&self, b: &mut Rows<'_, T, T>) {
        let m = rows_max(b);
        let mut s = vec![<T as Element>::zero(); b.w];
        for r in 0..b.n {
            let x = b.x(r);
            let o = b.out(r);
            slices::zip(x, &m, o, &|v, m| (v - m).vexp());
            slices::update(&mut s, o, &<T as FoldElem>::add);
        }
        slices::apply(&mut s, &|v| <T as Element>::one() / v);
        for r in 0..b.n {
            slices::update(b.out(r), &s, &<T as FoldElem>::mul);
        }
    }
}

/// [`slices::fold_lanes_short`] of one lane (16 float32 or 8 float64
/// partials), inline.
#[inline(always)]
fn short_fold<T: Copy, F: Fn(T, T) -> T>(x: &[T], init: T, f: &F) -> T {
    let mut r = [init];
    let rows = if std::mem::size_of::<T>() == 4 { 2 } else { 1 };
    slices::fold_lanes_short_plain(x, x.len(), x.len(), rows, init, &|v| v, f, &mut r);
    r[0]
}

/// Lanes shorter than this take [`slices::fold_lanes_short`]'s folds in
/// [`softmax_lane`] (faster up to 32 elements, slower from 64: float32
/// lanes of 1000 x n, one thread, AVX-512 Zen 4).
const SHORT_SOFTMAX: usize = 48;

crate::kernels::simd::dispatched! {
    /// Softmax (or, with `log`, log-softmax) of one contiguous lane into
    /// `out`: the lane's maximum, `exp(x - max)` and its sum, then the
    /// scaling (or `x - max - log(sum)`), all in one SIMD build, so a
    /// short lane pays one dispatch instead of four.
    pub fn softmax_lane / softmax_lane_plain / softmax_lane_avx2<T: VecFloat>(x: &[T], out: &mut [T], log: bool) {
        let zero = <T as Element>::zero();
        let short = x.len() < SHORT_SOFTMAX;
        // A short lane's folds in registers (partials combined inline);
        // a long lane's maximum skips the NaN test per element.
        let m = if short {
            short_fold(x, T::lowest(), &T::max_acc)
        } else {
            lane_max(x)
        };
        slices::map_plain(x, out, &|v| (v - m).vexp());
        let s = if short {
            short_fold(out, zero, &<T as FoldElem>::add)
        } else {
            slices::fold_wide_plain(out, zero, &<T as FoldElem>::add)
        };
        if log {
            let ls = s.vln();
            slices::map_plain(x, out, &|v| (v - m) - ls);
        } else {
            let inv = <T as Element>::one() / s;
            slices::apply_plain(out, &|o| o * inv);
        }
    }
}

/// `x - log(sum(exp(x)))` along the dim.
pub struct LogSoftmax;

impl<T: VecFloat> AlongDim<T, T> for LogSoftmax {
    fn cost(&self) -> usize {
        EXP_COST
    }
    fn out_len(&self, n: usize) -> usize {
        n
    }
    fn lane(&self, x: &[T], out: &mut [T]) {
        softmax_lane(x, out, true)
    }
    fn rows(&self, b: &mut Rows<'_, T, T>) {
        let m = rows_max(b);
        let mut s = vec![<T as Element>::zero(); b.w];
        let mut e = vec![<T as Element>::zero(); b.w];
        for r in 0..b.n {
            slices::zip(b.x(r), &m, &mut e, &|v, m| (v - m).vexp());
            slices::update(&mut s, &e, &<T as FoldElem>::add);
        }
        slices::apply(&mut s, &|s| s.vln());
        for r in 0..b.n {
            let x = b.x(r);
            slices::zip3(x, &m, &s, b.out(r), &|v, m, ls| (v - m) - ls);
        }
    }
}

/// `log(sum(exp(x)))` of each lane (-inf for an empty lane), stable.
pub struct LogSumExp;

impl<T: VecFloat> AlongDim<T, T> for LogSumExp {
    fn cost(&self) -> usize {
        EXP_COST
    }
    fn out_len(&self, _n: usize) -> usize {
        1
    }
    fn lane(&self, x: &[T], out: &mut [T]) {
        let m = shift(lane_max(x));
        // exp(x - m) in pieces on the stack, each piece summed.
        let mut buf = [<T as Element>::zero(); 256];
        let mut s = <T as Element>::zero();
        for piece in x.chunks(256) {
            let e = &mut buf[..piece.len()];
            slices::map(piece, e, &|v| (v - m).vexp());
            s = s + slices::fold_wide(e, <T as Element>::zero(), &<T as FoldElem>::add);
        }
        out[0] = s.vln() + m;
    }
    fn rows(&self, b: &mut Rows<'_, T, T>) {
        let mut m = rows_max(b);
        slices::apply(&mut m, &shift);
        let mut s = vec![<T as Element>::zero(); b.w];
        for r in 0..b.n {
            slices::update2(&mut s, b.x(r), &m, &|acc, v, m| acc + (v - m).vexp());
        }
        slices::zip(&s, &m, b.out(0), &|s, m| s.vln() + m);
    }
}

/// Inclusive prefix sums along the dim, forwards or backwards.
pub struct CumSum {
    pub reverse: bool,
}

impl<T: FoldElem> AlongDim<T, T> for CumSum {
    fn out_len(&self, n: usize) -> usize {
        n
    }
    fn lane(&self, x: &[T], out: &mut [T]) {
        let mut acc = <T as FoldElem>::zero();
        if self.reverse {
            for (o, &v) in out.iter_mut().zip(x).rev() {
                acc = <T as FoldElem>::add(acc, v);
                *o = acc;
            }
        } else {
            for (o, &v) in out.iter_mut().zip(x) {
                acc = <T as FoldElem>::add(acc, v);
                *o = acc;
            }
        }
    }
    fn rows(&self, b: &mut Rows<'_, T, T>) {
        let mut acc = vec![<T as FoldElem>::zero(); b.w];
        let order: Box<dyn Iterator<Item = usize>> = if self.reverse {
            Box::new((0..b.n).rev())
        } else {
            Box::new(0..b.n)
        };
        for r in order {
            slices::update(&mut acc, b.x(r), &<T as FoldElem>::add);
            b.out(r).copy_from_slice(&acc);
        }
    }
}

/// The backward of softmax (`y * (g - sum(g * y))`) or, with `log`, of
/// log_softmax (`g - exp(y) * sum(g)`) along the last dim: `g` and `y`
/// (the op's result) are contiguous rows of `cols`, written into `dx`.
/// Rows are split over the threads; each row is summed by one thread, so
/// the bits do not depend on the thread count.
pub fn softmax_backward_rows<T: VecFloat>(g: &[T], y: &[T], cols: usize, log: bool, dx: &mut [T]) {
    assert!(g.len() == y.len() && dx.len() == y.len());
    let c1 = cols.max(1);
    crate::parallel::for_each_chunk_mut_aligned(dx, GRAIN, c1, |at, chunk| {
        for (i, dxr) in chunk.chunks_mut(c1).enumerate() {
            let r = at / c1 + i;
            let (gr, yr) = (&g[r * c1..r * c1 + cols], &y[r * c1..r * c1 + cols]);
            softmax_backward_lane(gr, yr, dxr, log);
        }
    });
}

crate::kernels::simd::dispatched! {
    /// [`softmax_backward_rows`] of one row, in one SIMD build (a short
    /// row pays one dispatch instead of three, and sums in registers).
    pub fn softmax_backward_lane / softmax_backward_lane_plain / softmax_backward_lane_avx2<T: VecFloat>(
        g: &[T], y: &[T], dx: &mut [T], log: bool
    ) {
        let zero = <T as Element>::zero();
        let add = <T as FoldElem>::add;
        let short = g.len() < SHORT_SOFTMAX;
        let sum = |v: &[T]| {
            if short {
                short_fold(v, zero, &add)
            } else {
                slices::fold_wide_plain(v, zero, &add)
            }
        };
        if log {
            let s = sum(g);
            slices::zip_plain(g, y, dx, &|g, y| g - y.vexp() * s);
        } else {
            slices::zip_plain(g, y, dx, &|g, y| g * y);
            let s = sum(dx);
            slices::zip_plain(g, y, dx, &|g, y| y * (g - s));
        }
    }
}

/// [`softmax_backward_rows`] along a dim that is not the last: `g`, `y`
/// and `dx` contiguous `[outer, size, inner]`, the sums running over
/// `size`. A unit takes one leading position and a block of columns: it
/// sums its columns over the dim row by row, in order (so the bits do not
/// depend on the thread count), then writes its part of each row.
pub fn softmax_backward_dim<T: VecFloat>(
    g: &[T],
    y: &[T],
    [outer, size, inner]: [usize; 3],
    log: bool,
    dx: &mut [T],
) {
    assert!(g.len() == outer * size * inner && y.len() == g.len() && dx.len() == g.len());
    let zero = <T as Element>::zero();
    let threads = num_threads();
    let cols = if threads < 2 || g.len() < GRAIN || outer >= 4 * threads {
        inner
    } else {
        inner
            .div_ceil(4 * threads / outer.max(1))
            .max(BLOCK_W)
            .min(inner)
    };
    let blocks = inner.div_ceil(cols.max(1)).max(1);
    let out = SharedOut::new(dx);
    let unit = |u: usize| {
        let (o, b) = (u / blocks, u % blocks);
        let (c0, c1) = (b * cols, ((b + 1) * cols).min(inner));
        let row = |p: usize| o * size * inner + p * inner + c0..o * size * inner + p * inner + c1;
        let mut s = vec![zero; c1 - c0];
        if log {
            let first = o * size * inner + c0;
            slices::update_rows(&mut s, &g[first..], inner, size, &<T as FoldElem>::add);
        } else {
            for p in 0..size {
                slices::update2(&mut s, &g[row(p)], &y[row(p)], &|s, g, y| s + g * y);
            }
        }
        for p in 0..size {
            // SAFETY: unit u alone writes columns c0..c1 of leading
            // position o (inside dx: o < outer, p < size, c1 <= inner).
            let d = unsafe { out.run(row(p).start, c1 - c0) };
            if log {
                slices::zip3(&g[row(p)], &y[row(p)], &s, d, &|g, y, s| g - y.vexp() * s);
            } else {
                slices::zip3(&g[row(p)], &y[row(p)], &s, d, &|g, y, s| y * (g - s));
            }
        }
    };
    let units = outer * blocks;
    if units > 1 && g.len() >= GRAIN {
        for_each_index(units, &unit);
    } else {
        (0..units).for_each(unit);
    }
}

mod layer_norm;
pub use layer_norm::{layer_norm_backward_rows, layer_norm_rows};

/// For each element, the product of the other elements of its lane, as
/// torch's `prod_safe_zeros_backward` computes it (safe with zeros, no
/// division): the product of the elements before it times that of the
/// elements after it, each a cumprod accumulated in f64 (torch's CPU
/// accumulation type for float32 and float64) from 1 and rounded to `T`,
/// multiplied in `T`.
pub struct ProdOthers;

impl<T: Float> AlongDim<T, T> for ProdOthers {
    fn out_len(&self, n: usize) -> usize {
        n
    }
    fn lane(&self, x: &[T], out: &mut [T]) {
        let mut acc = 1.0f64;
        for (o, &v) in out.iter_mut().zip(x).rev() {
            *o = T::from_f64(acc);
            acc *= v.to_f64();
        }
        let mut acc = 1.0f64;
        for (o, &v) in out.iter_mut().zip(x) {
            *o = T::from_f64(acc) * *o;
            acc *= v.to_f64();
        }
    }
    fn rows(&self, b: &mut Rows<'_, T, T>) {
        let mut acc = vec![1.0f64; b.w];
        for r in (0..b.n).rev() {
            let x = b.x(r);
            for ((o, a), &v) in b.out(r).iter_mut().zip(acc.iter_mut()).zip(x) {
                *o = T::from_f64(*a);
                *a *= v.to_f64();
            }
        }
        acc.iter_mut().for_each(|a| *a = 1.0);
        for r in 0..b.n {
            let x = b.x(r);
            for ((o, a), &v) in b.out(r).iter_mut().zip(acc.iter_mut()).zip(x) {
                *o = T::from_f64(*a) * *o;
                *a *= v.to_f64();
            }
        }
    }
}

/// The vector-Jacobian product of [`ProdOthers`] with `g` along the middle
/// dim of the contiguous `[outer, n, inner]` buffers `x` and `g`, into
/// `out`: `out_i = sum_{j != i} g_j prod_{k != i, j} x_k`. The Jacobian is
/// symmetric, so this is also its Jacobian-vector product. Computed
/// without division (safe with zeros) as the dual part of the products of
/// the other elements of `x + eps g`: prefix and suffix products of dual
/// numbers, in f64.
pub fn prod_others_vjp<T: Float>(
    x: &[T],
    g: &[T],
    [outer, n, inner]: [usize; 3],
    out: &mut [T],
) -> crate::Result<()> {
    assert!(x.len() == outer * n * inner && g.len() == x.len() && out.len() == x.len());
    // the suffix products of one lane (value, dual part)
    let mut suffix = crate::buffer::pool::try_buffer::<f64>(2 * n)?;
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| (o * n + k) * inner + i;
            let (mut s0, mut s1) = (1.0f64, 0.0f64);
            for k in (0..n).rev() {
                suffix[2 * k] = s0;
                suffix[2 * k + 1] = s1;
                let (xv, gv) = (x[at(k)].to_f64(), g[at(k)].to_f64());
                s1 = s1 * xv + s0 * gv;
                s0 *= xv;
            }
            let (mut p0, mut p1) = (1.0f64, 0.0f64);
            for k in 0..n {
                let (q0, q1) = (suffix[2 * k], suffix[2 * k + 1]);
                out[at(k)] = T::from_f64(p1 * q0 + p0 * q1);
                let (xv, gv) = (x[at(k)].to_f64(), g[at(k)].to_f64());
                p1 = p1 * xv + p0 * gv;
                p0 *= xv;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `op` along the middle dim both ways (as lanes of a transposed
    /// copy, and as rows) and returns the row-mode output.
    fn both<A: AlongDim<f64, f64>>(x: &[f64], shape: [usize; 3], op: &A) -> (Vec<f64>, Vec<f64>) {
        let [o, n, i] = shape;
        let m = op.out_len(n);
        let mut rows = vec![0.0; o * m * i];
        along(x, shape, &mut rows, op);
        // Lanes: [o, i, n] layout.
        let mut t = vec![0.0; x.len()];
        for a in 0..o {
            for r in 0..n {
                for j in 0..i {
                    t[(a * i + j) * n + r] = x[(a * n + r) * i + j];
                }
            }
        }
        let mut lanes_t = vec![0.0; o * m * i];
        along(&t, [o * i, n, 1], &mut lanes_t, op);
        let mut lanes = vec![0.0; o * m * i];
        for a in 0..o {
            for r in 0..m {
                for j in 0..i {
                    lanes[(a * m + r) * i + j] = lanes_t[(a * i + j) * m + r];
                }
            }
        }
        (rows, lanes)
    }

    #[test]
    fn prod_others_and_its_vjp_match_brute_force_with_zeros() {
        // lanes of 6 along the middle dim, with no, one, two and three zeros
        let (o, n, i) = (2, 6, 300);
        let x: Vec<f64> = (0..o * n * i)
            .map(|k| match k % 7 {
                0 if k % 3 == 0 => 0.0,
                _ => ((k * 37) % 101) as f64 / 37.0 - 1.3,
            })
            .collect();
        let g: Vec<f64> = (0..x.len())
            .map(|k| ((k * 13) % 29) as f64 / 7.0 - 2.0)
            .collect();
        let at = |a: usize, r: usize, j: usize| (a * n + r) * i + j;
        let (rows, lanes) = both(&x, [o, n, i], &ProdOthers);
        assert_eq!(rows, lanes);
        let mut vjp = vec![0.0; x.len()];
        prod_others_vjp(&x, &g, [o, n, i], &mut vjp).unwrap();
        for a in 0..o {
            for j in 0..i {
                for r in 0..n {
                    let others = |skip: &[usize]| -> f64 {
                        (0..n)
                            .filter(|k| !skip.contains(k))
                            .map(|k| x[at(a, k, j)])
                            .product()
                    };
                    let p = others(&[r]);
                    assert!((rows[at(a, r, j)] - p).abs() <= 1e-12 * (1.0 + p.abs()));
                    let v: f64 = (0..n)
                        .filter(|&q| q != r)
                        .map(|q| g[at(a, q, j)] * others(&[r, q]))
                        .sum();
                    assert!((vjp[at(a, r, j)] - v).abs() <= 1e-12 * (1.0 + v.abs()));
                }
            }
        }
        // a zero gives its neighbours 0 and itself the product of the rest
        let mut one = [0.0; 3];
        ProdOthers.lane(&[2.0, 0.0, 3.0], &mut one);
        assert_eq!(one, [0.0, 6.0, 0.0]);
    }

    #[test]
    fn row_and_lane_modes_agree_with_the_definitions() {
        let shape = [3, 7, 300];
        let x: Vec<f64> = (0..3 * 7 * 300)
            .map(|k| ((k * 37) % 101) as f64 / 17.0 - 3.0)
            .collect();
        let close = |a: &[f64], b: &[f64]| {
            a.iter()
                .zip(b)
                .all(|(p, q)| (p - q).abs() <= 1e-12 * (1.0 + q.abs()))
        };
        let (r, l) = both(&x, shape, &Softmax);
        assert!(close(&r, &l));
        // Each lane sums to one.
        let s: f64 = (0..7).map(|k| r[k * 300 + 5]).sum();
        assert!((s - 1.0).abs() < 1e-12);
        let (r2, l2) = both(&x, shape, &LogSoftmax);
        assert!(close(&r2, &l2));
        assert!(close(&r2, &r.iter().map(|v| v.ln()).collect::<Vec<_>>()));
        let (r3, l3) = both(&x, shape, &LogSumExp);
        assert!(close(&r3, &l3));
        let want: f64 = (0..7).map(|k| x[k * 300 + 5].exp()).sum::<f64>().ln();
        assert!((r3[5] - want).abs() < 1e-12);
        for reverse in [false, true] {
            let (r4, l4) = both(&x, shape, &CumSum { reverse });
            assert!(close(&r4, &l4));
        }
        let (r4, _) = both(&x, shape, &CumSum { reverse: false });
        let want: f64 = (0..7).map(|k| x[k * 300 + 9]).sum();
        assert!((r4[6 * 300 + 9] - want).abs() < 1e-12);
    }

    #[test]
    fn layer_norm_rows_normalise_each_row() {
        let (rows, cols) = (5, 300);
        let x: Vec<f64> = (0..rows * cols)
            .map(|k| ((k * 31) % 97) as f64 * 0.1)
            .collect();
        let w: Vec<f64> = (0..cols).map(|j| 1.0 + j as f64 * 0.01).collect();
        let b: Vec<f64> = (0..cols).map(|j| j as f64 * -0.02).collect();
        let (mut y, mut m, mut rs) = (vec![0.0; rows * cols], vec![0.0; rows], vec![0.0; rows]);
        layer_norm_rows(&x, Some(&w), Some(&b), cols, 1e-5, &mut y, &mut m, &mut rs);
        for r in 0..rows {
            let xr = &x[r * cols..(r + 1) * cols];
            let mean = xr.iter().sum::<f64>() / cols as f64;
            let var = xr.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / cols as f64;
            let rstd = 1.0 / (var + 1e-5).sqrt();
            assert!((m[r] - mean).abs() < 1e-12 && (rs[r] - rstd).abs() < 1e-12);
            for j in 0..cols {
                let want = (xr[j] - mean) * rstd * w[j] + b[j];
                assert!((y[r * cols + j] - want).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn infinite_lanes_give_torchs_values() {
        let x = [f64::NEG_INFINITY; 4];
        let mut out = [0.0];
        LogSumExp.lane(&x, &mut out);
        assert_eq!(out[0], f64::NEG_INFINITY);
        let mut sm = [0.0; 4];
        Softmax.lane(&[1.0, f64::NAN, 0.0, 2.0], &mut sm);
        assert!(sm.iter().all(|v| v.is_nan()));
    }
}
