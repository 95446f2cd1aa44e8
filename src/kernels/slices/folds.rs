//! The folds (sums, extremes, any fold of a lane) that reductions run, with
//! the same three builds per loop as the rest of [`super`].

use super::super::simd::dispatched;
use crate::buffer::Element;

dispatched! {
    /// The sum of `x` in 8 interleaved partial sums (element `i` goes to
    /// partial `i % 8`), combined pairwise, then the remainder in order.
    pub fn sum / sum_plain / sum_avx2<T: Element>(x: &[T]) -> T
    where T: std::ops::Add<Output = T>
    {
        let mut acc = [T::zero(); 8];
        let chunks = x.chunks_exact(8);
        let rest = chunks.remainder();
        for c in chunks {
            for i in 0..8 {
                acc[i] = acc[i] + c[i];
            }
        }
        let mut s = combine8(acc);
        for &v in rest {
            s = s + v;
        }
        s
    }
}

dispatched! {
    /// The sum of `f(v)` in f64 over `x`, as [`map_fold_wide`] adds (32
    /// interleaved partials): the lane sums of norms and variances.
    pub fn sum_f64_of / sum_f64_of_plain / sum_f64_of_avx2<T: Element, F>(x: &[T], f: &F) -> f64
    where F: Fn(f64) -> f64
    {
        map_fold_wide_plain(x, 0.0, &|v: T| f(v.to_f64()), &|a, b| a + b)
    }
}

dispatched! {
    /// `f` folded over `x` in 32 interleaved partials (element `i` of each
    /// block of 32 goes to partial `i`, each starting from `init`: four
    /// independent SIMD accumulators, so the loop is not bound by one
    /// add's latency); the partials are combined pairwise (the four rows
    /// elementwise, then the 8 lanes), then blocks of 8 and the last
    /// elements follow in order. For associative `f` with identity `init`.
    pub fn fold_wide / fold_wide_plain / fold_wide_avx2<T: Copy, F>(x: &[T], init: T, f: &F) -> T
    where F: Fn(T, T) -> T
    {
        map_fold_wide_plain(x, init, &|v| v, f)
    }
}

dispatched! {
    /// `f` folded over `x` in order, for exact associative folds (integer
    /// sums, max/min, bool and/or): one plain loop, which the compiler
    /// vectorises as a reduction. [`fold_wide`]'s 32 partials, written for
    /// floats, made it turn integer folds inside out (gather loads across
    /// blocks, 4x slower than the float fold).
    pub fn fold_exact / fold_exact_plain / fold_exact_avx2<T: Copy, F>(x: &[T], init: T, f: &F) -> T
    where F: Fn(T, T) -> T
    {
        let mut s = init;
        for &v in x {
            s = f(s, v);
        }
        s
    }
}

dispatched! {
    /// `out[k] = fold_exact(lane k, init, f)` for lanes of `len` elements
    /// at `x[k * stride..]`.
    pub fn fold_lanes_exact / fold_lanes_exact_plain / fold_lanes_exact_avx2<T: Copy, F>(
        x: &[T], len: usize, stride: usize, init: T, f: &F, out: &mut [T]
    )
    where F: Fn(T, T) -> T
    {
        for (k, o) in out.iter_mut().enumerate() {
            let mut s = init;
            for &v in &x[k * stride..k * stride + len] {
                s = f(s, v);
            }
            *o = s;
        }
    }
}

/// What [`fold_probed`] needs of an element: `v - v` and a sum.
pub trait Probed: Copy + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> {}
impl<T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T>> Probed for T {}

/// [`fold_probed`] of a lane: `(pick folded over x, probe)`.
#[inline(always)]
#[allow(clippy::eq_op)] // `v - v` is the probe: 0, or NaN for NaN and inf
fn fold_probed_lane<T: Probed, F: Fn(T, T) -> T>(x: &[T], init: T, zero: T, pick: &F) -> (T, T) {
    let mut acc = [init; 32];
    let mut probe = [zero; 32];
    let blocks = x.chunks_exact(32);
    let rest = blocks.remainder();
    for c in blocks {
        for i in 0..32 {
            acc[i] = pick(acc[i], c[i]);
            probe[i] = probe[i] + (c[i] - c[i]);
        }
    }
    for (i, &v) in rest.iter().enumerate() {
        acc[i] = pick(acc[i], v);
        probe[i] = probe[i] + (v - v);
    }
    // Halves folded into halves (a few vector operations, where a running
    // fold of the 32 partials was a 31-step chain per lane: short lanes
    // ran at half of torch's rate).
    let mut w = 16;
    while w > 0 {
        for i in 0..w {
            acc[i] = pick(acc[i], acc[i + w]);
            probe[i] = probe[i] + probe[i + w];
        }
        w /= 2;
    }
    (acc[0], probe[0])
}

dispatched! {
    /// A max or min (`pick(acc, v)`, one compare and select, no NaN test)
    /// folded over `x` from `init` in 32 partials, with a probe: the sum of
    /// `v - v` from `zero`, NaN when some element is NaN or infinite (then
    /// the caller folds again with a NaN-propagating fold). Returns (the
    /// fold, the probe). A NaN-propagating select per element put a
    /// compare, a mask merge and a select on each partial's dependency
    /// chain: max over rows of 1000 float32 ran at half of torch's rate.
    /// The fold is exact, so its order changes nothing (but the sign of a
    /// zero max of +0 and -0).
    pub fn fold_probed / fold_probed_plain / fold_probed_avx2<T: Probed, F>(
        x: &[T], init: T, zero: T, pick: &F
    ) -> (T, T)
    where F: Fn(T, T) -> T
    {
        fold_probed_lane(x, init, zero, pick)
    }
}

dispatched! {
    /// [`fold_probed`] of each lane of `len` at `x[k * stride..]` into
    /// `out[k]` (the fold and the probe).
    pub fn fold_probed_lanes / fold_probed_lanes_plain / fold_probed_lanes_avx2<T: Probed, F>(
        x: &[T], len: usize, stride: usize, init: T, zero: T, pick: &F, out: &mut [(T, T)]
    )
    where F: Fn(T, T) -> T
    {
        for (k, o) in out.iter_mut().enumerate() {
            *o = fold_probed_lane(&x[k * stride..k * stride + len], init, zero, pick);
        }
    }
}

dispatched! {
    /// `out[k] = fold_wide(lane k, init, f)` for lanes of `len` elements at
    /// `x[k * stride..]`.
    pub fn fold_lanes / fold_lanes_plain / fold_lanes_avx2<T: Copy, F>(
        x: &[T], len: usize, stride: usize, init: T, f: &F, out: &mut [T]
    )
    where F: Fn(T, T) -> T
    {
        for (k, o) in out.iter_mut().enumerate() {
            *o = map_fold_wide_plain(&x[k * stride..k * stride + len], init, &|v| v, f);
        }
    }
}

dispatched! {
    /// `out[k] = map_fold_wide(lane k, init, map, fold)` for lanes of `len`
    /// elements at `x[k * stride..]`.
    pub fn map_fold_lanes / map_fold_lanes_plain / map_fold_lanes_avx2<T: Copy, A: Copy, M, F>(
        x: &[T], len: usize, stride: usize, init: A, map: &M, fold: &F, out: &mut [A]
    )
    where M: Fn(T) -> A, F: Fn(A, A) -> A
    {
        for (k, o) in out.iter_mut().enumerate() {
            *o = map_fold_wide_plain(&x[k * stride..k * stride + len], init, map, fold);
        }
    }
}

/// Whether float lanes of `len` elements of `bytes` bytes each are summed
/// by [`fold_lanes_short`] (8 partials, combined inline) rather than
/// [`fold_lanes`] (32 partials, whose set-up and out-of-line combination
/// cost more than a short lane's adds). Measured on AMD Zen 5 (AVX-512),
/// sums over rows of 16-1000: float64 rows below 128 ran 1.1-4x faster
/// short; float32 rows of 64-100 ran 1.4x slower short (8 partials fill
/// half a register), rows of 16 1.6x faster.
pub fn short_lane(len: usize, bytes: usize) -> bool {
    len < if bytes <= 4 { 48 } else { 128 }
}

dispatched! {
    /// `out[k]` = `map` of each element of lane `k` (`len` elements at
    /// `x[k * stride..]`) folded by `fold` as [`map_fold_wide`] folds with
    /// `8 * R` partials (R rows of 8; `R` 1, 2 or 4), but with the
    /// combination inline and by halves: for short lanes, the whole fold
    /// in registers.
    pub fn fold_lanes_short / fold_lanes_short_plain / fold_lanes_short_avx2<T: Copy, A: Copy, M, F>(
        x: &[T], len: usize, stride: usize, rows: usize, init: A, map: &M, fold: &F, out: &mut [A]
    )
    where M: Fn(T) -> A, F: Fn(A, A) -> A
    {
        match rows {
            1 => lanes_short::<T, A, M, F, 1>(x, len, stride, init, map, fold, out),
            2 => lanes_short::<T, A, M, F, 2>(x, len, stride, init, map, fold, out),
            _ => lanes_short::<T, A, M, F, 4>(x, len, stride, init, map, fold, out),
        }
    }
}

/// The body of [`fold_lanes_short`] with `R` rows of 8 partials.
#[inline(always)]
fn lanes_short<T: Copy, A: Copy, M: Fn(T) -> A, F: Fn(A, A) -> A, const R: usize>(
    x: &[T],
    len: usize,
    stride: usize,
    init: A,
    map: &M,
    fold: &F,
    out: &mut [A],
) {
    for (k, o) in out.iter_mut().enumerate() {
        let lane = &x[k * stride..k * stride + len];
        let mut acc = [[init; 8]; R];
        let blocks = lane.chunks_exact(8 * R);
        let rest = blocks.remainder();
        for c in blocks {
            for r in 0..R {
                for i in 0..8 {
                    acc[r][i] = fold(acc[r][i], map(c[r * 8 + i]));
                }
            }
        }
        let mut lanes = acc[0];
        if R == 2 {
            for i in 0..8 {
                lanes[i] = fold(acc[0][i], acc[1][i]);
            }
        } else if R == 4 {
            for i in 0..8 {
                lanes[i] = fold(fold(acc[0][i], acc[1][i]), fold(acc[2][i], acc[3][i]));
            }
        }
        let eights = rest.chunks_exact(8);
        let tail = eights.remainder();
        for c in eights {
            for i in 0..8 {
                lanes[i] = fold(lanes[i], map(c[i]));
            }
        }
        // By halves (partial i with i + 4, ...): the order a vector
        // reduction takes; adjacent pairs made the compiler shuffle.
        let l = lanes;
        let mut s = fold(
            fold(fold(l[0], l[4]), fold(l[2], l[6])),
            fold(fold(l[1], l[5]), fold(l[3], l[7])),
        );
        for &v in tail {
            s = fold(s, map(v));
        }
        *o = s;
    }
}

dispatched! {
    /// `fold` over `map(x[i])` as [`fold_wide`] (e.g. a sum of squared
    /// deviations).
    pub fn map_fold_wide / map_fold_wide_plain / map_fold_wide_avx2<T: Copy, A: Copy, M, F>(
        x: &[T], init: A, map: &M, fold: &F
    ) -> A
    where M: Fn(T) -> A, F: Fn(A, A) -> A
    {
        load_fold_wide(x, init, &|c: &[T]| std::array::from_fn(|i| map(c[i])), map, fold)
    }
}

/// [`map_fold_wide`] with the mapped values of each block of 8 from
/// `load8` (handed exactly 8 elements; e.g. one SIMD conversion), `map`
/// for the last elements: the same operations in the same order.
#[inline(always)]
pub fn load_fold_wide<T: Copy, A: Copy, L, M, F>(
    x: &[T],
    init: A,
    load8: &L,
    map: &M,
    fold: &F,
) -> A
where
    L: Fn(&[T]) -> [A; 8],
    M: Fn(T) -> A,
    F: Fn(A, A) -> A,
{
    let mut acc = [[init; 8]; 4];
    let blocks = x.chunks_exact(32);
    let rest = blocks.remainder();
    for c in blocks {
        for r in 0..4 {
            let v = load8(&c[r * 8..r * 8 + 8]);
            for i in 0..8 {
                acc[r][i] = fold(acc[r][i], v[i]);
            }
        }
    }
    let mut lanes = [init; 8];
    for i in 0..8 {
        lanes[i] = fold(fold(acc[0][i], acc[1][i]), fold(acc[2][i], acc[3][i]));
    }
    let eights = rest.chunks_exact(8);
    let tail = eights.remainder();
    for c in eights {
        let v = load8(c);
        for i in 0..8 {
            lanes[i] = fold(lanes[i], v[i]);
        }
    }
    let mut s = combine8_with(lanes, fold);
    for &v in tail {
        s = fold(s, map(v));
    }
    s
}

/// [`combine8`] for any fold.
#[inline(never)]
pub(super) fn combine8_with<T: Copy, F: Fn(T, T) -> T>(a: [T; 8], f: &F) -> T {
    f(
        f(f(a[0], a[1]), f(a[2], a[3])),
        f(f(a[4], a[5]), f(a[6], a[7])),
    )
}

/// `((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))`. Not inlined: seen
/// together with [`sum`]'s loop, this combination led the compiler to
/// shuffle lanes inside the loop (half the loop's speed) instead of adding
/// whole registers.
#[inline(never)]
fn combine8<T: Copy + std::ops::Add<Output = T>>(a: [T; 8]) -> T {
    ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
}
