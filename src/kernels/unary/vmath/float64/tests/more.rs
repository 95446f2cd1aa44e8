//! Accuracy of the hyperbolic, inverse trigonometric, two-argument and
//! parameterised float64 functions (sinh, cosh, atan, atanh, exp2,
//! logaddexp, atan2, hypot, softplus), on the parent module's helpers.

use super::*;

#[test]
fn hyperbolic_is_accurate() {
    let ranges = [(-711.0, 711.0), (-20.0, 20.0), (-1.5, 1.5)];
    check("sinh", sinh_f64, f64::sinh, &ranges, 4);
    check("cosh", cosh_f64, f64::cosh, &ranges, 4);
}
#[test]
fn atan_is_accurate() {
    let ranges = [(-1e6, 1e6), (-5.0, 5.0), (-1.0, 1.0)];
    check("atan", atan_f64, f64::atan, &ranges, 2);
    assert_eq!(atan_f64(f64::INFINITY), std::f64::consts::FRAC_PI_2);
    assert_eq!(atan_f64(-0.0).to_bits(), (-0.0f64).to_bits());
    assert!(atan_f64(f64::NAN).is_nan());
}
#[test]
fn exp2_and_logaddexp_are_accurate() {
    check(
        "exp2",
        exp2_f64,
        f64::exp2,
        &[(-1080.0, 1030.0), (-2.0, 2.0)],
        1,
    );
    for k in -1074..1024 {
        assert_eq!(exp2_f64(k as f64), (k as f64).exp2(), "2^{k}");
    }
    let ranges = [(-800.0, 800.0), (-40.0, 40.0), (-1.0, 1.0)];
    // b >= 0: max(a, b) >= 0, no cancellation (near a zero of the
    // function the formula's error is absolute, as ATen's)
    for b in [0.0, 1.5, 20.0, 700.0] {
        let exact = |a: f64| a.max(b) + (-(a - b).abs()).exp().ln_1p();
        check("logaddexp", |a| logaddexp_f64(a, b), exact, &ranges, 2);
        let exact2 = |a: f64| a.max(b) + (-(a - b).abs()).exp2().ln_1p() / std::f64::consts::LN_2;
        check("logaddexp2", |a| logaddexp2_f64(a, b), exact2, &ranges, 4);
    }
    let inf = f64::INFINITY;
    assert_eq!(logaddexp_f64(inf, inf), inf);
    assert_eq!(logaddexp_f64(-inf, -inf), -inf);
    assert!(logaddexp_f64(f64::NAN, 1.0).is_nan());
}
#[test]
fn atanh_is_accurate() {
    let ranges = [(-1.0, 1.0), (-0.6, 0.6), (0.99, 1.0), (-1e-3, 1e-3)];
    // libm's atanh (std's loses precision near -1: 1 - x rounds)
    check("atanh", atanh_f64, libm::atanh, &ranges, 2);
    assert_eq!(atanh_f64(1.0), f64::INFINITY);
    assert_eq!(atanh_f64(-1.0), f64::NEG_INFINITY);
    assert_eq!(atanh_f64(-0.0).to_bits(), (-0.0f64).to_bits());
    assert!(atanh_f64(1.5).is_nan() && atanh_f64(-2.0).is_nan() && atanh_f64(f64::NAN).is_nan());
    // float32 through float64: within half an ulp plus float64's error
    for i in 0..=100_000 {
        let x = (i as f32 / 100_000.0) * 1.999_999 - 0.999_999_5;
        let want = libm::atanh(x as f64) as f32;
        let got = atanh_f32_via_f64(x);
        assert!(
            got == want || (got - want).abs() <= f32::EPSILON * want.abs(),
            "{x}"
        );
    }
}

#[test]
fn asinh_and_acosh_are_accurate() {
    // libm's (std's acosh lost ~800 ulp near 1 and both overflowed to inf
    // above ~1e154)
    let ranges = [(-1e308, 1e308), (-1e10, 1e10), (-3.0, 3.0), (-1e-6, 1e-6)];
    check("asinh", asinh_f64, libm::asinh, &ranges, 2);
    let ranges = [(1.0, 1e308), (1.0, 1e10), (1.0, 3.0), (1.0, 1.0001)];
    // (libm's acosh gives numbers for some x below 1; torch and C: NaN)
    let exact = |x: f64| if x < 1.0 { f64::NAN } else { libm::acosh(x) };
    check("acosh", acosh_f64, exact, &ranges, 2);
    assert_eq!(acosh_f64(1.0), 0.0);
    assert!(acosh_f64(0.5).is_nan() && acosh_f64(f64::NAN).is_nan());
    assert_eq!(asinh_f64(-0.0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(asinh_f64(f64::NEG_INFINITY), f64::NEG_INFINITY);
    assert_eq!(acosh_f64(f64::INFINITY), f64::INFINITY);
}

crate::kernels::unary::vmath::test_support::atan2_hypot_tests!(f64, libm::hypot);
crate::kernels::unary::vmath::test_support::softplus_test!(
    f64,
    |name: &str, fast: &dyn Fn(f64) -> f64, exact: &dyn Fn(f64) -> f64| {
        let ranges = [(-800.0, 100.0), (-30.0, 30.0), (-1.0, 1.0)];
        check(name, fast, exact, &ranges, 4)
    }
);
