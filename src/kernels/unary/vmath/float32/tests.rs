//! Accuracy (against float64 libm, on every 97th float32), special values
//! and bitwise path agreement of the float32 functions.

use super::*;
use crate::kernels::unary::vmath::test_support::either_nan;
use crate::kernels::unary::vmath::{self, Unary};

/// Distance in ulps between two f32 (through zero if the signs differ; 0
/// for two NaNs).
fn ulps(a: f32, b: f32) -> u32 {
    if a == b || (a.is_nan() && b.is_nan()) {
        return 0;
    }
    if a.is_nan() || b.is_nan() {
        return u32::MAX;
    }
    let ord = |v: f32| {
        let m = (v.to_bits() & 0x7fff_ffff) as i64;
        if v.is_sign_negative() {
            -m
        } else {
            m
        }
    };
    (ord(a) - ord(b)).unsigned_abs() as u32
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
        0.0f32,
        1.0,
        0.0004,
        0.3466,
        0.625,
        0.875,
        4.0,
        7.998_812,
        20.0,
        88.72,
        89.0,
        87.3,
        103.9,
        104.0,
        TRIG_LIMIT_F32,
    ] {
        for v in [v, -v] {
            f(v);
            f(f32::from_bits(v.to_bits() + 1));
            f(f32::from_bits(v.to_bits().saturating_sub(1)));
        }
    }
}

/// The largest error of `fast` against `exact` (float64, rounded to
/// float32) over the sweep; where the exact value is subnormal, ulps are
/// the smallest subnormal anyway.
fn max_ulps(fast: impl Fn(f32) -> f32, exact: impl Fn(f64) -> f64) -> (u32, f32) {
    let mut worst = (0u32, 0.0f32);
    sweep(|x| {
        let u = ulps(fast(x), exact(x as f64) as f32);
        if u > worst.0 {
            worst = (u, x);
        }
    });
    worst
}

fn check(name: &str, fast: impl Fn(f32) -> f32, exact: impl Fn(f64) -> f64, max: u32) {
    let (u, x) = max_ulps(&fast, &exact);
    eprintln!("{name}: max {u} ulps against float64 (at {x:e})");
    assert!(
        u <= max,
        "{name}: {u} ulps at x = {x:e} (got {:e}, want {:e})",
        fast(x),
        exact(x as f64) as f32
    );
}

/// One `#[test]` per row: the float32 functions against float64 (`check`:
/// name, function, reference, most ulps).
macro_rules! accuracy_tests {
    ($($test:ident { $($name:literal: $fast:expr, $exact:expr, $max:literal;)+ })*) => {
        $(
            #[test]
            fn $test() {
                $(check($name, $fast, $exact, $max);)+
            }
        )*
    };
}

accuracy_tests! {
    exp_is_accurate { "exp": exp_f32, f64::exp, 2; }
    exp_m1_is_accurate { "exp_m1": exp_m1_f32, f64::exp_m1, 2; }
    ln_is_accurate { "ln": ln_f32, f64::ln, 2; }
    ln_1p_is_accurate { "ln_1p": ln_1p_f32, f64::ln_1p, 2; }
    tanh_is_accurate { "tanh": tanh_f32, f64::tanh, 4; }
    erf_is_accurate { "erf": erf_f32, libm::erf, 2; }
    trig_is_accurate {
        "sin": sin_f32, f64::sin, 2;
        "cos": cos_f32, f64::cos, 2;
        "tan": tan_f32, f64::tan, 3;
    }
    hyperbolic_is_accurate { "sinh": sinh_f32, f64::sinh, 4; "cosh": cosh_f32, f64::cosh, 4; }
    inverse_trig_is_accurate {
        "atan": atan_f32, f64::atan, 3;
        "asin": asin_f32, f64::asin, 3;
        "acos": acos_f32, f64::acos, 3;
    }
}

#[test]
fn log2_and_log10_are_accurate() {
    check("log2", log2_f32, f64::log2, 2);
    check("log10", log10_f32, f64::log10, 2);
    for k in -149..128 {
        let x = match k {
            ..-126 => f32::from_bits(1 << (k + 149)),
            _ => f32::from_bits(((k + 127) as u32) << 23),
        };
        assert_eq!(log2_f32(x), k as f32);
    }
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
fn log_sigmoid_is_accurate() {
    let exact = |x: f64| x.min(0.0) - (-x.abs()).exp().ln_1p();
    check("log_sigmoid", log_sigmoid_f32, exact, 2);
}
#[test]
fn exp2_and_logaddexp_are_accurate() {
    check("exp2", exp2_f32, f64::exp2, 1);
    for k in -149..128 {
        assert_eq!(exp2_f32(k as f32), (k as f64).exp2() as f32, "2^{k}");
    }
    let exact = |a: f64, b: f64| a.max(b) + (-(a - b).abs()).exp().ln_1p();
    let exact2 =
        |a: f64, b: f64| a.max(b) + (-(a - b).abs()).exp2().ln_1p() / std::f64::consts::LN_2;
    // b >= 0: max(a, b) >= 0, no cancellation (near a zero of the
    // function the formula's error is absolute, as ATen's)
    for b in [0.0f32, 1.5, 20.0, 80.0] {
        check(
            "logaddexp",
            |a| logaddexp_f32(a, b),
            |a| exact(a, b as f64),
            2,
        );
        // the reference divides by ln 2 (one more rounding than the kernel's
        // LOG2_E product, as ATen's)
        check(
            "logaddexp2",
            |a| logaddexp2_f32(a, b),
            |a| exact2(a, b as f64),
            4,
        );
    }
    let inf = f32::INFINITY;
    assert_eq!(logaddexp_f32(inf, inf), inf);
    assert_eq!(logaddexp_f32(-inf, -inf), -inf);
    assert!(logaddexp_f32(f32::NAN, 1.0).is_nan() && logaddexp_f32(1.0, f32::NAN).is_nan());
}
#[test]
fn gelu_is_accurate() {
    // 1 + erf(x/√2) cancels for x << 0: an absolute error of a few ulp of
    // 1, times |x|, as torch's
    sweep(|x| {
        let xd = x as f64;
        let want = xd * 0.5 * libm::erfc(-xd * std::f64::consts::FRAC_1_SQRT_2);
        let got = gelu_f32(x) as f64;
        let tol = 4.0 * f32::EPSILON as f64 * (want.abs() + xd.abs()) + 1e-44;
        if want.abs() < f32::MAX as f64 && x.is_finite() {
            assert!(
                (got - want).abs() <= tol,
                "gelu({x:e}) = {got:e}, want {want:e}"
            );
        }
    });
}

#[test]
fn gelu_grad_is_accurate() {
    // Φ(x) + x φ(x): an absolute error of a few ulp of 1 (Φ's), as torch's
    sweep(|x| {
        let xd = x as f64;
        let pdf = (-0.5 * xd * xd).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let want = 0.5 * libm::erfc(-xd * std::f64::consts::FRAC_1_SQRT_2) + xd * pdf;
        let got = gelu_grad_f32(x) as f64;
        let tol = 4.0 * f32::EPSILON as f64 * (want.abs() + 1.0);
        if x.is_finite() {
            assert!(
                (got - want).abs() <= tol,
                "gelu'({x:e}) = {got:e}, want {want:e}"
            );
        }
    });
}

/// A function's name, the function, and (x, f(x)) pairs.
type Case<'a> = (&'a str, fn(f32) -> f32, &'a [(f32, f32)]);

#[test]
fn special_values() {
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    let tiny = f32::from_bits(1);
    let cases: [Case<'_>; 15] = [
        (
            "exp",
            exp_f32,
            &[(nan, nan), (inf, inf), (-inf, 0.0), (0.0, 1.0), (89.0, inf)],
        ),
        (
            "exp_m1",
            exp_m1_f32,
            &[
                (nan, nan),
                (inf, inf),
                (-inf, -1.0),
                (0.0, 0.0),
                (-0.0, -0.0),
                (89.0, inf),
                (-30.0, -1.0),
                (tiny, tiny),
            ],
        ),
        (
            "ln",
            ln_f32,
            &[
                (nan, nan),
                (inf, inf),
                (-inf, nan),
                (0.0, -inf),
                (-0.0, -inf),
                (1.0, 0.0),
                (-1.0, nan),
            ],
        ),
        (
            "ln_1p",
            ln_1p_f32,
            &[
                (nan, nan),
                (inf, inf),
                (-inf, nan),
                (0.0, 0.0),
                (-0.0, -0.0),
                (-1.0, -inf),
                (-2.0, nan),
                (tiny, tiny),
            ],
        ),
        (
            "log2",
            log2_f32,
            &[
                (nan, nan),
                (inf, inf),
                (0.0, -inf),
                (-1.0, nan),
                (1.0, 0.0),
                (tiny, -149.0),
            ],
        ),
        (
            "log10",
            log10_f32,
            &[
                (nan, nan),
                (inf, inf),
                (0.0, -inf),
                (-1.0, nan),
                (1.0, 0.0),
                (10.0, 1.0),
                (1000.0, 3.0),
            ],
        ),
        (
            "tanh",
            tanh_f32,
            &[(nan, nan), (inf, 1.0), (-inf, -1.0), (-0.0, -0.0)],
        ),
        (
            "sigmoid",
            sigmoid_f32,
            &[(nan, nan), (inf, 1.0), (-inf, 0.0), (0.0, 0.5)],
        ),
        ("silu", silu_f32, &[(nan, nan), (inf, inf), (0.0, 0.0)]),
        (
            "erf",
            erf_f32,
            &[
                (nan, nan),
                (inf, 1.0),
                (-inf, -1.0),
                (0.0, 0.0),
                (-0.0, -0.0),
                (4.5, 1.0),
                (-tiny, -tiny),
            ],
        ),
        (
            "gelu",
            gelu_f32,
            &[(nan, nan), (inf, inf), (-inf, nan), (0.0, 0.0)],
        ),
        (
            "sin",
            sin_f32,
            &[
                (nan, nan),
                (inf, nan),
                (-inf, nan),
                (0.0, 0.0),
                (-0.0, -0.0),
                (tiny, tiny),
            ],
        ),
        (
            "cos",
            cos_f32,
            &[(nan, nan), (inf, nan), (-inf, nan), (0.0, 1.0), (-0.0, 1.0)],
        ),
        (
            "tan",
            tan_f32,
            &[
                (nan, nan),
                (inf, nan),
                (-inf, nan),
                (0.0, 0.0),
                (-0.0, -0.0),
            ],
        ),
        ("gelu_tanh", gelu_tanh_f32, &[(nan, nan), (0.0, 0.0)]),
    ];
    for (name, f, table) in cases {
        for &(x, want) in table {
            assert!(
                same(f(x), want),
                "{name}({x:e}) = {:e}, want {want:e}",
                f(x)
            );
        }
    }
    for f in [sin_f32_reduced, cos_f32_reduced, tan_f32_reduced] {
        assert!(f(nan).is_nan() && f(inf).is_nan());
    }
}

#[test]
fn every_path_gives_identical_bits() {
    let mut src: Vec<f32> = (0..10_007)
        .map(|i| ((i as f32) * 0.618_034).sin() * 120.0)
        .collect();
    src.extend((0..3001u32).map(|i| f32::from_bits(i.wrapping_mul(0x9e37_79b9))));
    src.extend([
        0.0,
        -0.0,
        f32::NAN,
        f32::INFINITY,
        -f32::INFINITY,
        1e-45,
        1e5,
        3e5,
    ]);
    crate::kernels::unary::vmath::testing::every_kernel_paths_agree!(f32, &src);
}

#[test]
fn patched_kernels_match_the_checked_functions() {
    let mut src: Vec<f32> = (0..5000).map(|i| (i as f32 * 0.37).sin() * 1e4).collect();
    for i in [3, 1500, 1501, 4999] {
        src[i] = 1e30 / (i as f32);
    }
    fn check<K: Unary<f32>>(src: &[f32], f: fn(f32) -> f32) {
        let want: Vec<_> = src.iter().map(|&x| f(x).to_bits()).collect();
        let mut dst = vec![0.0; src.len()];
        K::map(src, &mut dst);
        let mut buf = src.to_vec();
        K::apply(&mut buf);
        assert_eq!(dst.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
        assert_eq!(buf.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
    }
    check::<vmath::Sin>(&src, sin_f32);
    check::<vmath::Cos>(&src, cos_f32);
    check::<vmath::Tan>(&src, tan_f32);
}

/// ln_f32 gives the bits it gave before ln_1p shared its code.
#[test]
fn ln_keeps_its_bits() {
    // the formula as it stood, inline
    fn old(x: f32) -> f32 {
        let (m, z, p, fe) = ln_parts(x);
        let y = p * m * z + -2.121_944_4e-4 * fe + -0.5 * z;
        let r = m + y + 0.693_359_4 * fe;
        log_specials(x, r)
    }
    sweep(|x| assert_eq!(ln_f32(x).to_bits(), old(x).to_bits(), "{x:e}"));
}

mod pow;

crate::kernels::unary::vmath::test_support::atan2_hypot_tests!(f32, libm::hypotf);
crate::kernels::unary::vmath::test_support::softplus_test!(
    f32,
    |name: &str, fast: &dyn Fn(f32) -> f32, exact: &dyn Fn(f64) -> f64| check(name, fast, exact, 4)
);
