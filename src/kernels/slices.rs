//! The loops that elementwise kernels run their per-element closures in.
//!
//! Each loop is a function taking its slices as arguments, so the compiler
//! knows that the output aliases neither the inputs nor anything the closure
//! reads, and vectorises it: the same loop written in the body of a closure
//! passed to the thread pool compiled to scalar code (a broadcast scalar
//! reloaded for every element). Each loop is also compiled three times, for
//! the target's baseline, for AVX2+FMA and for AVX-512 (512-bit vectors),
//! and the path is picked at run time ([`simd_path`]; tests force one with
//! [`force_simd_path`]). All builds perform the same operations in the same
//! order (Rust never fuses `a * b + c` on its own, nor reorders float
//! additions), so results are bitwise identical; only the vector width
//! differs.

use super::simd::dispatched;

dispatched! {
    /// `dst[i] = f(src[i])` for `i < dst.len()` (`src` at least as long).
    pub fn map / map_plain / map_avx2<T: Copy, U, F>(src: &[T], dst: &mut [U], f: &F)
    where F: Fn(T) -> U
    {
        let src = &src[..dst.len()];
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = f(s);
        }
    }
}

dispatched! {
    /// `dst[i] = src[i * stride]` for `i < dst.len()` (`stride >= 1`, `src`
    /// holding element `(dst.len() - 1) * stride`). Stride 2 and 3 (every
    /// other element, one channel of three) as whole chunks, which compile to
    /// shuffles; others element by element.
    pub fn gather / gather_plain / gather_avx2<T: Copy>(src: &[T], stride: usize, dst: &mut [T])
    {
        let n = dst.len();
        if n == 0 {
            return;
        }
        let src = &src[..(n - 1) * stride + 1];
        match stride {
            1 => dst.copy_from_slice(src),
            2 => {
                let (last, body) = dst.split_last_mut().unwrap();
                for (d, c) in body.iter_mut().zip(src.chunks_exact(2)) {
                    *d = c[0];
                }
                *last = src[(n - 1) * 2];
            }
            3 => {
                let (last, body) = dst.split_last_mut().unwrap();
                for (d, c) in body.iter_mut().zip(src.chunks_exact(3)) {
                    *d = c[0];
                }
                *last = src[(n - 1) * 3];
            }
            _ => {
                for (i, d) in dst.iter_mut().enumerate() {
                    *d = src[i * stride];
                }
            }
        }
    }
}

dispatched! {
    /// `dst[i] = v` for every element: with the CPU's widest stores (a
    /// broadcast row of an elementwise op, `contiguous()` of an expand).
    pub fn fill / fill_plain / fill_avx2<T: Copy>(dst: &mut [T], v: T)
    {
        dst.fill(v);
    }
}

/// Entries `dst..dst + len` of a table read `src + i * step` of a source
/// (`src < 0`: padding, filled). A convolution's window table is a list of
/// them (see `window.rs`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GatherRun {
    pub dst: usize,
    pub src: i64,
    pub len: usize,
    pub step: usize,
}

dispatched! {
    /// Every run of `runs` from `src` into `dst` (`fill` for padding): one
    /// dispatch for a whole table of short runs (a strided convolution's
    /// rows are a few elements long; dispatched one by one, the dispatch
    /// cost more than the copy).
    pub fn gather_runs / gather_runs_plain / gather_runs_avx2<T: Copy>(
        src: &[T], runs: &[GatherRun], fill: T, dst: &mut [T]
    )
    {
        for r in runs {
            let d = &mut dst[r.dst..r.dst + r.len];
            if r.src < 0 {
                d.fill(fill);
            } else {
                gather_plain(&src[r.src as usize..], r.step, d);
            }
        }
    }
}

/// What [`max_taps`] needs of an element.
pub trait MaxStep: Copy + PartialOrd {}
impl<T: Copy + PartialOrd> MaxStep for T {}

dispatched! {
    /// One row's step of a running maximum (`want_max`) or minimum with
    /// the row index: where `row[i]` beats `best[i]`, or is the first NaN,
    /// `(row[i], r)` replaces `(best[i], at[i])` (the first index wins
    /// among ties and NaNs, as [`super::reduce::arg_extreme`]).
    pub fn extreme_step / extreme_step_plain / extreme_step_avx2<T>(
        best: &mut [T], at: &mut [i64], row: &[T], r: i64, want_max: bool
    )
    where T: MaxStep
    {
        let n = best.len();
        let (at, row) = (&mut at[..n], &row[..n]);
        for i in 0..n {
            let (b, v) = (best[i], row[i]);
            let better = if want_max { v > b } else { v < b };
            #[allow(clippy::eq_op)]
            let take = better | ((v != v) & (b == b));
            best[i] = if take { v } else { b };
            at[i] = if take { r } else { at[i] };
        }
    }
}

dispatched! {
    /// One kernel position's step of a running maximum: for `i <
    /// best.len()`, where `src[first + i * step]` beats `best[i]` (or is
    /// NaN, or nothing was taken yet: `at[i] < 0`), it and its offset
    /// replace `(best[i], at[i])`.
    pub fn max_run / max_run_plain / max_run_avx2<T>(
        best: &mut [T], at: &mut [i64], src: &[T], first: usize, step: usize
    )
    where T: MaxStep
    {
        let n = best.len();
        let at = &mut at[..n];
        if step == 1 {
            let src = &src[first..first + n];
            for i in 0..n {
                let (b, a, v) = (best[i], at[i], src[i]);
                #[allow(clippy::eq_op)]
                let take = (a < 0) | (v > b) | (v != v);
                best[i] = if take { v } else { b };
                at[i] = if take { (first + i) as i64 } else { a };
            }
        } else {
            for i in 0..n {
                let off = first + i * step;
                let (b, a, v) = (best[i], at[i], src[off]);
                #[allow(clippy::eq_op)]
                let take = (a < 0) | (v > b) | (v != v);
                best[i] = if take { v } else { b };
                at[i] = if take { off as i64 } else { a };
            }
        }
    }
}

dispatched! {
    /// The running maximum over window taps of a channels-last plane: for
    /// each channel `ch < vals.len()`, the largest `plane[p * c + ch]` over
    /// `p` in `taps` (in order; the first on ties, a NaN wins) into
    /// `vals[ch]` and its `p` into `at[ch]` (skipped when `at` is empty).
    /// `taps` is not empty. Blocks of 16 channels stay in registers over
    /// all taps.
    pub fn max_taps / max_taps_plain / max_taps_avx2<T>(
        plane: &[T], c: usize, taps: &[usize], vals: &mut [T], at: &mut [i64]
    )
    where T: MaxStep
    {
        const B: usize = 16;
        let n = vals.len();
        let first = taps[0];
        let mut c0 = 0;
        // Full blocks: a loop of constant length over locals, vectorised.
        while c0 + B <= n {
            let mut b: [T; B] = plane[first * c + c0..first * c + c0 + B]
                .try_into()
                .expect("a block of B");
            let mut a = [first as i64; B];
            for &p in &taps[1..] {
                let src: &[T; B] =
                    plane[p * c + c0..p * c + c0 + B].try_into().expect("a block of B");
                for i in 0..B {
                    let v = src[i];
                    #[allow(clippy::eq_op)]
                    let take = (v > b[i]) | (v != v);
                    b[i] = if take { v } else { b[i] };
                    a[i] = if take { p as i64 } else { a[i] };
                }
            }
            vals[c0..c0 + B].copy_from_slice(&b);
            if !at.is_empty() {
                at[c0..c0 + B].copy_from_slice(&a);
            }
            c0 += B;
        }
        // The rest, element by element.
        for ch in c0..n {
            let (mut b, mut a) = (plane[first * c + ch], first as i64);
            for &p in &taps[1..] {
                let v = plane[p * c + ch];
                #[allow(clippy::eq_op)]
                if (v > b) | (v != v) {
                    (b, a) = (v, p as i64);
                }
            }
            vals[ch] = b;
            if !at.is_empty() {
                at[ch] = a;
            }
        }
    }
}

dispatched! {
    /// `dst[i] = f(a[i], b[i])` for `i < dst.len()` (`a`, `b` at least as long).
    pub fn zip / zip_plain / zip_avx2<T: Copy, U, F>(a: &[T], b: &[T], dst: &mut [U], f: &F)
    where F: Fn(T, T) -> U
    {
        let (a, b) = (&a[..dst.len()], &b[..dst.len()]);
        for ((d, &x), &y) in dst.iter_mut().zip(a).zip(b) {
            *d = f(x, y);
        }
    }
}

dispatched! {
    /// `dst[i] = f(dst[i])`.
    pub fn apply / apply_plain / apply_avx2<T: Copy, F>(dst: &mut [T], f: &F)
    where F: Fn(T) -> T
    {
        for d in dst.iter_mut() {
            *d = f(*d);
        }
    }
}

dispatched! {
    /// `sum(a[i] * b[i])` over the shorter length, as `mul_add(acc, x, y)`
    /// into 32 interleaved partial sums from `zero` (four SIMD accumulators,
    /// as [`map_fold_wide`]), combined with `add`, then the last elements in
    /// order. Same order for any caller, so same bits.
    pub fn dot / dot_plain / dot_avx2<T: Copy, M, A>(a: &[T], b: &[T], zero: T, mul_add: &M, add: &A) -> T
    where M: Fn(T, T, T) -> T, A: Fn(T, T) -> T
    {
        let n = a.len().min(b.len());
        let (ac, bc) = (a[..n].chunks_exact(32), b[..n].chunks_exact(32));
        let (ar, br) = (ac.remainder(), bc.remainder());
        let mut acc = [[zero; 8]; 4];
        for (x, y) in ac.zip(bc) {
            for r in 0..4 {
                for i in 0..8 {
                    acc[r][i] = mul_add(acc[r][i], x[r * 8 + i], y[r * 8 + i]);
                }
            }
        }
        let mut lanes = [zero; 8];
        for i in 0..8 {
            lanes[i] = add(add(acc[0][i], acc[1][i]), add(acc[2][i], acc[3][i]));
        }
        let mut s = combine8_with(lanes, add);
        for (&x, &y) in ar.iter().zip(br) {
            s = mul_add(s, x, y);
        }
        s
    }
}

dispatched! {
    /// `dst[i] = f(dst[i], src[i])` for `i < dst.len()` (`src` at least as long).
    pub fn update / update_plain / update_avx2<T: Copy, S: Copy, F>(dst: &mut [T], src: &[S], f: &F)
    where F: Fn(T, S) -> T
    {
        let src = &src[..dst.len()];
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = f(*d, s);
        }
    }
}

dispatched! {
    /// `acc[i] = f(acc[i], x[r * stride + i])` for each row `r < n`, in
    /// order (`x` holds the `n` rows).
    pub fn update_rows / update_rows_plain / update_rows_avx2<T: Copy, F>(
        acc: &mut [T], x: &[T], stride: usize, n: usize, f: &F
    )
    where F: Fn(T, T) -> T
    {
        // Groups of R rows; within a group, blocks of C columns held in
        // registers over its rows, then the rest. Each accumulator still
        // folds its rows in order; the group reads R rows side by side, so
        // far-apart rows stay R sequential streams (all rows at once defeat
        // the prefetcher, one at a time costs a load and store per element).
        const C: usize = 32;
        const R: usize = 8;
        let w = acc.len();
        let blocked = w - w % C;
        for r0 in (0..n).step_by(R) {
            let rows = r0..(r0 + R).min(n);
            for (c0, block) in acc[..blocked].chunks_exact_mut(C).enumerate() {
                let c0 = c0 * C;
                let mut a: [T; C] = (&*block).try_into().expect("a block of C");
                for r in rows.clone() {
                    let row: &[T; C] = x[r * stride + c0..r * stride + c0 + C]
                        .try_into()
                        .expect("a block of C");
                    for i in 0..C {
                        a[i] = f(a[i], row[i]);
                    }
                }
                block.copy_from_slice(&a);
            }
            for r in rows {
                let row = &x[r * stride + blocked..r * stride + w];
                for (a, &v) in acc[blocked..].iter_mut().zip(row) {
                    *a = f(*a, v);
                }
            }
        }
    }
}

dispatched! {
    /// `dst[i] = f(dst[i], a[i], b[i])` for `i < dst.len()`.
    pub fn update2 / update2_plain / update2_avx2<D: Copy, A: Copy, B: Copy, F>(
        dst: &mut [D], a: &[A], b: &[B], f: &F
    )
    where F: Fn(D, A, B) -> D
    {
        let n = dst.len();
        let (a, b) = (&a[..n], &b[..n]);
        for ((d, &x), &y) in dst.iter_mut().zip(a).zip(b) {
            *d = f(*d, x, y);
        }
    }
}

dispatched! {
    /// `dst[i] = f(a[i], b[i], c[i])` for `i < dst.len()`.
    pub fn zip3 / zip3_plain / zip3_avx2<A: Copy, B: Copy, C: Copy, U, F>(
        a: &[A], b: &[B], c: &[C], dst: &mut [U], f: &F
    )
    where F: Fn(A, B, C) -> U
    {
        let n = dst.len();
        let (a, b, c) = (&a[..n], &b[..n], &c[..n]);
        for (((d, &x), &y), &z) in dst.iter_mut().zip(a).zip(b).zip(c) {
            *d = f(x, y, z);
        }
    }
}

mod folds;
use folds::combine8_with;
pub use folds::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::simd::{force_simd_path, simd_paths, SimdPath};

    /// Runs `f` on the baseline path and on each SIMD path the CPU has and
    /// returns the baseline's result and the others'.
    fn all<R>(f: impl Fn() -> R) -> (R, Vec<R>) {
        force_simd_path(Some(SimdPath::Baseline));
        let plain = f();
        let simd = simd_paths()
            .into_iter()
            .skip(1)
            .map(|p| {
                force_simd_path(Some(p));
                f()
            })
            .collect();
        force_simd_path(None);
        (plain, simd)
    }

    #[test]
    fn gather_takes_every_stride_th_element() {
        let src: Vec<f32> = (0..1000).map(|i| i as f32).collect();
        for stride in 0..6 {
            for n in [0, 1, 2, 7, 64, 199] {
                if n > 0 && (n - 1) * stride >= src.len() {
                    continue;
                }
                let want: Vec<f32> = (0..n).map(|i| src[i * stride]).collect();
                let (p, simd) = all(|| {
                    let mut d = vec![-1f32; n];
                    gather(&src[..], stride, &mut d);
                    d
                });
                assert_eq!(p, want, "stride {stride}, n {n}");
                for s in simd {
                    assert_eq!(s, want, "stride {stride}, n {n}");
                }
            }
        }
    }

    #[test]
    fn loops_compute_each_element_and_paths_agree_bitwise() {
        let n = 1003;
        let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos() + 0.5).collect();
        let c: Vec<f32> = (0..n).map(|i| i as f32 / 7.0).collect();
        let k = 1.5f32;
        let (p, simd) = all(|| {
            let mut m = vec![0f32; n];
            map(&a, &mut m, &|x| k * (1.0 - x * x));
            let mut z = vec![0f32; n];
            zip(&a, &b, &mut z, &|x, y| x * y + k);
            let mut u = c.clone();
            update(&mut u, &a, &|d, x| d + x * k);
            let mut v = c.clone();
            apply(&mut v, &|d| d * k - 1.0);
            let mut t = vec![0f32; n];
            zip3(&a, &b, &c, &mut t, &|x, y, w| x * y - w);
            (m, z, u, t, sum(&a), v)
        });
        for i in 0..n {
            assert_eq!(p.0[i], k * (1.0 - a[i] * a[i]));
            assert_eq!(p.1[i], a[i] * b[i] + k);
            assert_eq!(p.2[i], c[i] + a[i] * k);
            assert_eq!(p.3[i], a[i] * b[i] - c[i]);
            assert_eq!(p.5[i], c[i] * k - 1.0);
        }
        let exact: f64 = a.iter().map(|&v| v as f64).sum();
        assert!((p.4 as f64 - exact).abs() < 1e-3, "{} vs {exact}", p.4);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for s in simd {
            assert_eq!(bits(&p.0), bits(&s.0));
            assert_eq!(bits(&p.1), bits(&s.1));
            assert_eq!(bits(&p.2), bits(&s.2));
            assert_eq!(bits(&p.3), bits(&s.3));
            assert_eq!(p.4.to_bits(), s.4.to_bits());
            assert_eq!(bits(&p.5), bits(&s.5));
        }
    }

    #[test]
    fn sum_adds_eight_interleaved_partials_then_the_rest() {
        // 2^24 in partial 0 swallows the 1 added to it (float32 has no
        // 2^24 + 1); the other partials keep theirs; the 3 remainder
        // elements come last, one by one.
        let mut x = vec![1.0f32; 19];
        x[0] = 16_777_216.0;
        let p0 = x[0] + 1.0;
        let want = (((p0 + 2.0) + (2.0 + 2.0)) + ((2.0 + 2.0) + (2.0 + 2.0)) + 1.0 + 1.0) + 1.0;
        assert_eq!(p0, 16_777_216.0);
        assert_eq!(sum(&x), want);
        let sequential: f32 = x.iter().sum();
        assert_ne!(sum(&x), sequential, "the order differs from a running sum");
    }

    #[test]
    fn exact_folds_match_a_running_fold_on_every_path() {
        // Integer sums wrap, max/min take the extremes, bools or/and: the
        // same values as a plain running fold for every length and path.
        for n in [0, 1, 7, 31, 32, 33, 257, 1003] {
            let x: Vec<i64> = (0..n as i64)
                .map(|i| (i * 7919 % 1013 - 500) * (1 << 52))
                .collect();
            let b: Vec<bool> = (0..n).map(|i| i % 5 == 3).collect();
            let want = (
                x.iter().fold(0i64, |a, &v| a.wrapping_add(v)),
                x.iter().copied().max().unwrap_or(i64::MIN),
                x.iter().copied().min().unwrap_or(i64::MAX),
                b.iter().any(|&v| v),
                b.iter().all(|&v| v),
            );
            let (p, simd) = all(|| {
                (
                    fold_exact(&x, 0, &|a: i64, v| a.wrapping_add(v)),
                    fold_exact(&x, i64::MIN, &|a: i64, v| a.max(v)),
                    fold_exact(&x, i64::MAX, &|a: i64, v| a.min(v)),
                    fold_exact(&b, false, &|a, v| a | v),
                    fold_exact(&b, true, &|a, v| a & v),
                )
            });
            assert_eq!(p, want, "n {n}");
            for s in simd {
                assert_eq!(s, want, "n {n}");
            }
            // Three lanes of n / 3, side by side.
            let len = n / 3;
            if len > 0 {
                let (p, simd) = all(|| {
                    let mut out = [0i64; 3];
                    fold_lanes_exact(&x, len, len, 0, &|a: i64, v| a.wrapping_add(v), &mut out);
                    out
                });
                for k in 0..3 {
                    let lane = &x[k * len..(k + 1) * len];
                    assert_eq!(p[k], lane.iter().fold(0i64, |a, &v| a.wrapping_add(v)));
                }
                for s in simd {
                    assert_eq!(s, p);
                }
            }
        }
    }

    #[test]
    fn probed_folds_find_the_extreme_and_flag_nan_and_inf() {
        let max = |a: f32, v: f32| if a > v { a } else { v };
        for n in [1, 5, 31, 32, 33, 100, 1000] {
            let x: Vec<f32> = (0..n)
                .map(|i| ((i * 7919 % 1013) as f32 - 500.0) * 0.37)
                .collect();
            let want = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let (p, simd) = all(|| fold_probed(&x, f32::NEG_INFINITY, 0.0, &max));
            assert_eq!(p, (want, 0.0), "n {n}");
            for s in simd {
                assert_eq!(s, p, "n {n}");
            }
            for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                let mut y = x.clone();
                y[n / 2] = bad;
                let (_, probe) = fold_probed(&y, f32::NEG_INFINITY, 0.0, &max);
                assert!(probe.is_nan(), "n {n}, {bad} not flagged");
            }
            // Lanes: three side by side.
            let len = n / 3;
            if len > 0 {
                let mut out = [(0f32, 1f32); 3];
                fold_probed_lanes(&x, len, len, f32::NEG_INFINITY, 0.0, &max, &mut out);
                for k in 0..3 {
                    let lane = &x[k * len..(k + 1) * len];
                    let want = lane.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    assert_eq!(out[k], (want, 0.0));
                }
            }
        }
    }
}
