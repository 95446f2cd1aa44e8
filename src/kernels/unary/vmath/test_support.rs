//! Test helpers shared by the float32 and float64 function tests.

/// xorshift64*: a reproducible stream of bit patterns.
pub(super) struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * u
    }

    /// A float32 of random bits (every magnitude and sign, NaNs too).
    pub fn bits32(&mut self) -> f32 {
        f32::from_bits((self.next() >> 32) as u32)
    }
}

/// Zeros, ±1, NaN and the infinities: the inputs every special-value and
/// path check starts from.
pub(super) const SPECIALS: [f64; 7] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    f64::NAN,
    f64::INFINITY,
    -f64::INFINITY,
];

/// Whether `got` or `want` is NaN, asserting that then both are (`what`
/// names the call in the message); the caller skips the ulp comparison.
pub(super) fn either_nan<T: Into<f64>>(got: T, want: T, what: impl FnOnce() -> String) -> bool {
    let (g, w) = (got.into(), want.into());
    if g.is_nan() || w.is_nan() {
        assert!(g.is_nan() && w.is_nan(), "{} = {g:e}, want {w:e}", what());
        return true;
    }
    false
}

/// `atan2_is_accurate` and `hypot_is_accurate`, the same at both widths:
/// `atan2_f32`/`_f64` against std's atan2 (the special cases exact, signed
/// zeros included) and `hypot_*` against libm's (`$hypot`) over a grid of
/// pairs; the calling test module brings `ulps` and `either_nan`.
macro_rules! atan2_hypot_tests {
    ($t:ident, $hypot:path) => {
        paste::paste! {
            #[test]
            fn atan2_is_accurate() {
                let (inf, nan) = ($t::INFINITY, $t::NAN);
                let mut vals: Vec<$t> = vec![0.0, -0.0, inf, -inf, nan, 1.0, -1.0, 1e-30, -3.5, 7e20];
                vals.extend((0..400).map(|i| ((i as $t) * 0.731).sin() * (1.0 + (i % 7) as $t).powi(i % 9)));
                let mut worst = (0u64, 0.0, 0.0);
                for &y in &vals {
                    for &x in &vals {
                        let (got, want) = ([<atan2_ $t>](y, x), y.atan2(x));
                        if either_nan(got, want, || format!("atan2({y}, {x})")) {
                            continue;
                        }
                        if y == 0.0 || y.is_infinite() || x == 0.0 || x.is_infinite() {
                            assert_eq!(got.to_bits(), want.to_bits(), "atan2({y}, {x})");
                        }
                        let u = u64::from(ulps(got, want));
                        if u > worst.0 {
                            worst = (u, f64::from(y), f64::from(x));
                        }
                    }
                }
                eprintln!("atan2: max {} ulps (at {:e}, {:e})", worst.0, worst.1, worst.2);
                assert!(worst.0 <= 3, "atan2: {} ulps at ({:e}, {:e})", worst.0, worst.1, worst.2);
            }

            #[test]
            fn hypot_is_accurate() {
                let (inf, nan) = ($t::INFINITY, $t::NAN);
                let mut vals: Vec<$t> =
                    vec![0.0, -0.0, inf, -inf, nan, 1.0, -3.0, $t::MAX, $t::MIN_POSITIVE, 1e-30];
                vals.extend((0..300).map(|i| ((i as $t) * 0.917).cos() * (2.0 as $t).powi(i % 61 - 30)));
                let mut worst = 0;
                for &a in &vals {
                    for &b in &vals {
                        let (got, want) = ([<hypot_ $t>](a, b), $hypot(a, b));
                        if either_nan(got, want, || format!("hypot({a}, {b})")) {
                            continue;
                        }
                        worst = worst.max(u64::from(ulps(got, want)));
                    }
                }
                eprintln!("hypot: max {worst} ulps against libm");
                assert!(worst <= 2, "hypot: {worst} ulps");
            }
        }
    };
}
pub(super) use atan2_hypot_tests;

/// `softplus_is_accurate` at both widths: softplus and its gradient for
/// three (beta, threshold) pairs against the float64 formulas, through the
/// calling module's accuracy check (`$check(name, fast, exact)`).
macro_rules! softplus_test {
    ($t:ident, $check:expr) => {
        paste::paste! {
            #[test]
            fn softplus_is_accurate() {
                let check = $check;
                let params: [($t, $t); 3] = [(1.0, 20.0), (2.0, 20.0), (0.5, 5.0)];
                for (beta, threshold) in params {
                    let (b, t) = (f64::from(beta), f64::from(threshold));
                    let fast = |x| [<softplus_ $t>](x, beta, threshold);
                    check("softplus", &fast, &|x: f64| if x * b > t { x } else { (x * b).exp().ln_1p() / b });
                    let fast = |x| [<softplus_grad_ $t>](x, beta, threshold);
                    let exact = |x: f64| if x * b > t { 1.0 } else { (x * b).exp() / ((x * b).exp() + 1.0) };
                    check("softplus_grad", &fast, &exact);
                }
            }
        }
    };
}
pub(super) use softplus_test;

/// pow over every pair of `base` and its negations: NaN where libm's is
/// (`libm`), exactly libm's zeros (signed), infinities and ±1, else
/// `close(x, y, got, want)`.
pub(super) fn pow_grid<T: Copy + Into<f64> + std::ops::Neg<Output = T>>(
    base: &[T],
    pow: impl Fn(T, T) -> T,
    libm: impl Fn(T, T) -> T,
    close: impl Fn(T, T, T, T) -> bool,
) {
    let vals: Vec<T> = base.iter().flat_map(|&v| [v, -v]).collect();
    for &x in &vals {
        for &y in &vals {
            let (got, want) = (pow(x, y), libm(x, y));
            let (xf, yf): (f64, f64) = (x.into(), y.into());
            if either_nan(got, want, || format!("pow({xf:e}, {yf:e})")) {
                continue;
            }
            // widening to f64 is exact: the same zeros, infinities and ones
            let (g, w): (f64, f64) = (got.into(), want.into());
            if w == 0.0 || w.is_infinite() || w.abs() == 1.0 {
                assert_eq!(g.to_bits(), w.to_bits(), "pow({xf:e}, {yf:e}) = {g:e}");
            } else {
                assert!(
                    close(x, y, got, want),
                    "pow({xf:e}, {yf:e}) = {g:e}, want {w:e}"
                );
            }
        }
    }
}

/// The first bases of both widths' pow special-value grids.
pub(super) const POW_BASES: [f64; 9] = [0.0, f64::INFINITY, f64::NAN, 1.0, 0.5, 2.0, 3.0, 2.5, 0.1];

/// The SIMD paths of `vmath::Pow` give `pow`'s bits on `a`, `b` and every
/// pair of `specials` (appended to them).
pub(super) fn pow_paths_agree<T>(
    mut a: Vec<T>,
    mut b: Vec<T>,
    specials: &[T],
    pow: impl Fn(T, T) -> T,
) where
    T: super::testing::Bits + Copy + Default,
    super::Pow: super::Binary<T>,
{
    use crate::kernels::simd::{force_simd_path, simd_paths};
    for &x in specials {
        for &y in specials {
            a.push(x);
            b.push(y);
        }
    }
    let want: Vec<u64> = a.iter().zip(&b).map(|(&x, &y)| pow(x, y).bits()).collect();
    for p in simd_paths() {
        force_simd_path(Some(p));
        let mut dst = vec![T::default(); a.len()];
        <super::Pow as super::Binary<T>>::zip(&a, &b, &mut dst);
        force_simd_path(None);
        let got: Vec<u64> = dst.iter().map(|&v| v.bits()).collect();
        assert!(got == want, "pow: {p:?} differs from scalar");
    }
}
