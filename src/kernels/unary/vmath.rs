//! Vectorisable float32 transcendental functions.
//!
//! The functions are branch-free (selects instead of branches, bit tricks
//! instead of libm calls), so a loop over a slice compiles to SIMD code. The
//! loops are `super::super::slices`', compiled twice: for the x86-64
//! baseline (SSE2) and, picked at run time, for AVX2+FMA. Both compute the
//! same formula with the same roundings:
//! Rust never contracts `a * b + c` on its own, and the explicit `mul_add`s
//! are one rounding on every path (an FMA instruction on AVX2+FMA and on
//! aarch64, libm's correctly rounded `fmaf` on the x86-64 baseline), so every
//! path gives bitwise identical results; tests force each path and compare.
//!
//! The polynomials are evaluated with FMAs in Estrin's scheme (pairs first,
//! then powers of the argument) rather than Horner's: fewer instructions
//! than separate multiplies and adds, and a dependency chain about half as
//! long, which the out-of-order core overlaps across elements.
//!
//! Accuracy (checked in the tests against f64): exp and log within 2 ulp,
//! tanh and sigmoid within 4 ulp, over the whole float range, with IEEE
//! results for NaN, ±inf, ±0 and subnormals.

// Polynomial coefficients are quoted as Cephes publishes them.
#![allow(clippy::excessive_precision)]

#[inline(always)]
fn select(c: bool, a: f32, b: f32) -> f32 {
    if c {
        a
    } else {
        b
    }
}

/// e^x (Cephes' expf polynomial; the scale 2^n is applied in two halves so
/// results down to the subnormal range and up to overflow are exact).
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    // NaN fails both tests and stays NaN.
    let xc = select(x < -104.0, -104.0, select(x > 89.0, 89.0, x));
    let (r, n) = exp_reduce(xc);
    let y = exp_poly(r);
    let h = n >> 1;
    let s1 = f32::from_bits((h.wrapping_add(127) as u32) << 23);
    let s2 = f32::from_bits((n.wrapping_sub(h).wrapping_add(127) as u32) << 23);
    y * s1 * s2
}

/// `x = n ln2 + r` with n an integer and |r| <= ln2 / 2 (Cody and Waite's
/// two-part ln2, so r is exact to float precision), for |x| <= 104.
#[inline(always)]
fn exp_reduce(x: f32) -> (f32, i32) {
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23: adding it rounds to an integer
    let t = x.mul_add(std::f32::consts::LOG2_E, MAGIC);
    let n = t - MAGIC;
    let r = n.mul_add(-0.693_359_4, x);
    let r = n.mul_add(2.121_944_4e-4, r);
    (r, (t.to_bits() as i32).wrapping_sub(0x4B40_0000))
}

/// e^r for |r| <= ln2 / 2: `1 + r + r^2 p(r)` with Cephes' degree-5 p.
#[inline(always)]
fn exp_poly(r: f32) -> f32 {
    let r2 = r * r;
    let r4 = r2 * r2;
    let p01 = 1.666_666_5e-1f32.mul_add(r, 5.000_000_1e-1);
    let p23 = 8.333_452e-3f32.mul_add(r, 4.166_579_6e-2);
    let p45 = 1.987_569_1e-4f32.mul_add(r, 1.398_199_9e-3);
    let p = p45.mul_add(r4, p23.mul_add(r2, p01));
    p.mul_add(r2, r + 1.0)
}

/// Natural logarithm (Cephes' logf polynomial), subnormals included.
#[inline(always)]
pub fn ln_f32(x: f32) -> f32 {
    let sub = x < f32::MIN_POSITIVE;
    let xs = select(sub, x * 8_388_608.0, x); // 2^23
    let bits = xs.to_bits();
    // x = m * 2^e with m in [0.5, 1)
    let e = ((bits >> 23) & 0xff) as i32 - 126 - if sub { 23 } else { 0 };
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f00_0000);
    let lt = m < std::f32::consts::FRAC_1_SQRT_2;
    let e = e - lt as i32;
    let m = select(lt, m + m, m) - 1.0;
    let z = m * m;
    let p = (((((((7.037_683_6e-2 * m - 1.151_461e-1) * m + 1.167_699_9e-1) * m
        - 1.242_014_1e-1)
        * m
        + 1.424_932_3e-1)
        * m
        - 1.666_805_8e-1)
        * m
        + 2.000_071_4e-1)
        * m
        - 2.499_999_4e-1)
        * m
        + 3.333_333_1e-1;
    let fe = e as f32;
    let y = p * m * z + -2.121_944_4e-4 * fe + -0.5 * z;
    let r = m + y + 0.693_359_4 * fe;
    select(
        x.is_nan() || x < 0.0,
        f32::NAN,
        select(
            x == 0.0,
            f32::NEG_INFINITY,
            select(x == f32::INFINITY, x, r),
        ),
    )
}

/// tanh: Eigen's (and XLA's) rational approximation, an odd degree-13
/// polynomial over an even degree-6 one, on |x| clamped to 7.9988 (where
/// the approximation reaches 1; within 4 ulp of the true value there and
/// beyond); below |x| = 0.0004, x itself. One division and no exponential:
/// about twice as fast as `1 - 2 / (e^{2|x|} + 1)`.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    const CLAMP: f32 = 7.998_811_721_801_757_81;
    let ax = x.abs();
    // NaN fails the test and stays NaN.
    let y = select(ax > CLAMP, CLAMP, ax);
    let y2 = y * y;
    let p = y2.mul_add(-2.760_768_477_423_55e-16, 2.000_187_904_824_77e-13);
    let p = y2.mul_add(p, -8.604_671_522_137_35e-11);
    let p = y2.mul_add(p, 5.122_297_090_371_14e-8);
    let p = y2.mul_add(p, 1.485_722_357_179_79e-5);
    let p = y2.mul_add(p, 6.372_619_288_754_36e-4);
    let p = y2.mul_add(p, 4.893_524_558_917_86e-3);
    let q = y2.mul_add(1.198_258_394_667_02e-6, 1.185_347_056_866_54e-4);
    let q = y2.mul_add(q, 2.268_434_632_439e-3);
    let q = y2.mul_add(q, 4.893_525_185_543_85e-3);
    let r = select(ax < 0.0004, ax, y * p / q);
    // r >= 0 (or NaN): x's sign goes on (keeping -0.0)
    f32::from_bits(r.to_bits() | (x.to_bits() & 0x8000_0000))
}

/// `1 / (1 + e^-x)`.
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-x))
}

/// `x / (1 + e^-x)`.
#[inline(always)]
pub fn silu_f32(x: f32) -> f32 {
    x / (1.0 + exp_f32(-x))
}

/// gelu's tanh approximation on [`tanh_f32`].
#[inline(always)]
pub fn gelu_tanh_f32(x: f32) -> f32 {
    const K_BETA: f32 = (std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5) as f32;
    let inner = K_BETA * (x + 0.044_715 * x * x * x);
    0.5 * x * (1.0 + tanh_f32(inner))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::slices::{self, force_simd_path, SimdPath};

    /// Distance in units in the last place between two f32 (same sign).
    fn ulps(a: f32, b: f32) -> u32 {
        if a == b || (a.is_nan() && b.is_nan()) {
            return 0;
        }
        let (ia, ib) = (a.to_bits() as i32, b.to_bits() as i32);
        if (ia < 0) != (ib < 0) {
            return u32::MAX;
        }
        (ia - ib).unsigned_abs()
    }

    /// Every 97th float32 bit pattern (~44M values), plus neighbours of
    /// interesting points.
    fn sweep(mut f: impl FnMut(f32)) {
        let mut bits: u32 = 0;
        while let Some(b) = bits.checked_add(97) {
            f(f32::from_bits(bits));
            bits = b;
        }
        for v in [
            0.0f32, -0.0, 1.0, -1.0, 0.0004, -0.0004, 0.625, -0.625, 7.998_812, 88.72, 89.0, -87.3,
            -103.9, -104.0,
        ] {
            f(v);
            f(f32::from_bits(v.to_bits() + 1));
            f(f32::from_bits(v.to_bits().saturating_sub(1)));
        }
    }

    fn check(name: &str, fast: fn(f32) -> f32, exact: fn(f64) -> f64, max_ulps: u32) {
        let mut worst = (0u32, 0.0f32);
        sweep(|x| {
            let want = exact(x as f64) as f32;
            let got = fast(x);
            let u = ulps(got, want);
            // subnormal results: measure absolute error in units of the
            // smallest subnormal instead
            let u = if want.abs() < f32::MIN_POSITIVE && got.abs() < f32::MIN_POSITIVE {
                ((got - want).abs() / f32::from_bits(1)) as u32
            } else {
                u
            };
            if u > worst.0 {
                worst = (u, x);
            }
        });
        assert!(
            worst.0 <= max_ulps,
            "{name}: {} ulps at x = {:e} (got {:e}, want {:e})",
            worst.0,
            worst.1,
            fast(worst.1),
            exact(worst.1 as f64) as f32
        );
    }

    #[test]
    fn exp_is_accurate() {
        check("exp", exp_f32, f64::exp, 2);
    }
    #[test]
    fn ln_is_accurate() {
        check("ln", ln_f32, f64::ln, 2);
    }
    #[test]
    fn tanh_is_accurate() {
        check("tanh", tanh_f32, f64::tanh, 4);
    }
    #[test]
    fn sigmoid_is_accurate() {
        // where e^-x overflows float32 the result is 0, as torch's (the exact
        // value is subnormal)
        check(
            "sigmoid",
            sigmoid_f32,
            |x| {
                if -x > (f32::MAX as f64).ln() {
                    0.0
                } else {
                    1.0 / (1.0 + (-x).exp())
                }
            },
            4,
        );
    }

    #[test]
    fn special_values() {
        let inf = f32::INFINITY;
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(exp_f32(inf), inf);
        assert_eq!(exp_f32(-inf), 0.0);
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(89.0), inf);
        assert!(ln_f32(f32::NAN).is_nan());
        assert!(ln_f32(-1.0).is_nan());
        assert!(ln_f32(-inf).is_nan());
        assert_eq!(ln_f32(0.0), -inf);
        assert_eq!(ln_f32(-0.0), -inf);
        assert_eq!(ln_f32(inf), inf);
        assert_eq!(ln_f32(1.0), 0.0);
        assert!(tanh_f32(f32::NAN).is_nan());
        assert_eq!(tanh_f32(inf), 1.0);
        assert_eq!(tanh_f32(-inf), -1.0);
        assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(sigmoid_f32(-inf), 0.0);
        assert_eq!(sigmoid_f32(inf), 1.0);
        assert!(sigmoid_f32(f32::NAN).is_nan());
    }

    #[test]
    fn every_path_gives_identical_bits() {
        let src: Vec<f32> = (0..10_007)
            .map(|i| ((i as f32) * 0.618_034).sin() * 120.0)
            .collect();
        let fs: [fn(f32) -> f32; 5] = [exp_f32, ln_f32, tanh_f32, sigmoid_f32, gelu_tanh_f32];
        for f in fs {
            let mut outs = Vec::new();
            for p in [SimdPath::Baseline, SimdPath::Avx2] {
                force_simd_path(Some(p));
                let mut dst = vec![0.0f32; src.len()];
                slices::map(&src, &mut dst, &f);
                let mut inplace = src.clone();
                slices::apply(&mut inplace, &f);
                assert_eq!(
                    dst.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    inplace.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
                outs.push(dst);
            }
            force_simd_path(None);
            let scalar: Vec<u32> = src.iter().map(|&x| f(x).to_bits()).collect();
            for o in outs {
                assert_eq!(o.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), scalar);
            }
        }
    }
}
