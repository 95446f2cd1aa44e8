//! float32 functions (see the parent module for the accuracy table).
//!
//! exp, ln, tanh and sigmoid are as before this module grew float64
//! (Cephes' expf and logf polynomials, Eigen's tanh); exp_m1, ln_1p, the
//! trigonometric functions and erf follow the float64 schemes with
//! polynomials fitted for float32.

use std::f32::consts::{FRAC_1_SQRT_2, FRAC_2_PI, LOG10_E, LOG2_E};

width_common! { f32, u32,
magic = 12_582_912.0, sinh_big = 88.0, erf_clamp = 4.0, erfc_mid = 2.4375 }

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

/// The pieces of Cephes' logf for x > 0 (subnormals included):
/// `x = 2^e (1 + m)` with `1 + m` in [sqrt(2)/2, sqrt(2)), `z = m^2`, and
/// the polynomial `p` with `ln(1 + m) ~ m - z/2 + p m z`. Returns
/// (m, z, p, e as a float).
#[inline(always)]
fn ln_parts(x: f32) -> (f32, f32, f32, f32) {
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
    (m, z, p, e as f32)
}

/// Natural logarithm (Cephes' logf polynomial), subnormals included.
#[inline(always)]
pub fn ln_f32(x: f32) -> f32 {
    ln_core(x, 0.0)
}

/// `ln(x) + c` for a small correction `c` (`c` = 0 is [`ln_f32`]).
#[inline(always)]
fn ln_core(x: f32, c: f32) -> f32 {
    let (m, z, p, fe) = ln_parts(x);
    let y = p * m * z + -2.121_944_4e-4 * fe + -0.5 * z;
    let r = m + (y + c) + 0.693_359_4 * fe;
    log_specials(x, r)
}

/// ln(1 + x), accurate near 0: `u = 1 + x` rounded, its rounding error
/// recovered exactly (Knuth's two-sum) and added as `err / u`.
#[inline(always)]
pub fn ln_1p_f32(x: f32) -> f32 {
    let u = 1.0 + x;
    let b = u - 1.0;
    let err = (1.0 - (u - b)) + (x - b);
    let r = ln_core(u, err / u);
    // x < -1 gives NaN through u < 0, x = -1 gives -inf through u = 0
    select(x == f32::INFINITY || x == 0.0, x, r)
}

/// log2(x) = `e + ln(1 + m) log2(e)` (exact for powers of two).
#[inline(always)]
pub fn log2_f32(x: f32) -> f32 {
    let (m, z, p, fe) = ln_parts(x);
    let y = m + (p * m * z + -0.5 * z);
    log_specials(x, y.mul_add(LOG2_E, fe))
}

/// log10(x) = `e log10(2) + ln(1 + m) log10(e)`, log10(2) in two parts
/// (`e * LOG10_2_HI` exact).
#[inline(always)]
pub fn log10_f32(x: f32) -> f32 {
    const LOG10_2_HI: f32 = 0.301025390625;
    const LOG10_2_LO: f32 = 4.605039e-6;
    let (m, z, p, fe) = ln_parts(x);
    let y = m + (p * m * z + -0.5 * z);
    let r = fe.mul_add(LOG10_2_HI, y.mul_add(LOG10_E, fe * LOG10_2_LO));
    log_specials(x, r)
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

/// 2^n for an integer n in [-126, 127] (bits).
#[inline(always)]
fn pow2(n: i32) -> f32 {
    f32::from_bits((n.wrapping_add(127) as u32) << 23)
}

// ----- exp_m1 -----

/// (e^r - 1 - r - r^2/2) / r^3 on |r| <= 0.3466, relative error 2^-24.4.
const EXPM1_Q: [f32; 5] = [
    0.16666667,
    0.041666556,
    0.008333346,
    0.001392616,
    0.00019861953,
];

/// e^x - 1, accurate near 0: `2^n (e^r - 1) + (2^n - 1)` in one FMA (the
/// scale in two steps above 2^64).
#[inline(always)]
pub fn exp_m1_f32(x: f32) -> f32 {
    // below -20 the result rounds to -1; NaN stays NaN
    let xc = select(x < -20.0, -20.0, select(x > 89.0, 89.0, x));
    let (r, n) = exp_reduce(xc);
    let p = expm1_poly(r);
    let big = n > 64;
    let s = pow2(n.wrapping_sub(if big { 32 } else { 0 }));
    let y = p.mul_add(s, s - 1.0) * select(big, 4_294_967_296.0, 1.0); // 2^32
                                                                       // keeps -0.0
    select(x == 0.0, x, y)
}

// ----- erf, gelu -----

/// erf(x) / x = 2/sqrt(pi) + z Q(z) in z = x^2 <= 0.875^2 (the fit's constant
/// term is 2/sqrt(pi) itself; `tools/vmath_fit.py` prints the fit as ERF_P, that
/// term first), relative error 2^-32.2.
const ERF_Q: [f32; 6] = [
    -0.37612635,
    0.11283733,
    -0.026861584,
    0.0052067474,
    -0.00082111044,
    8.675393e-05,
];

/// e^(x^2) erfc(x) in powers of x - 2.4375 on [0.875, 4], error 2^-29.6
/// in erf (weighted by e^-x^2 / erf(x)).
const ERFC_E: [f32; 10] = [
    0.21555233,
    -0.077565074,
    0.026484098,
    -0.0086361,
    0.0028129162,
    -0.00068426685,
    0.00023339732,
    -0.00020768412,
    -9.7101714e-05,
    -3.8792718e-05,
];

/// erf as gelu uses it, where only the absolute error counts (gelu adds erf
/// to 1): Eigen's float rational `x P(x^2) / Q(x^2)` (P of degree 6 and Q
/// of degree 4 in x^2) below |x| = 4, ±1 from there (NaN stays NaN).
/// Absolute error under 5e-7, the class of torch's float gelu (A&S 7.1.26,
/// 1.5e-7), at under half the cost of [`erf_f32`] (2 ulp, relative): no
/// exponential and one branch instead of two.
#[inline(always)]
fn gelu_erf_f32(x: f32) -> f32 {
    const P: [f32; 7] = [
        -1.609_603_3e-2,
        -2.954_599_8e-3,
        -7.349_906_3e-4,
        -5.692_506_4e-5,
        -2.101_024e-6,
        2.770_681_4e-8,
        -2.726_142_3e-10,
    ];
    const Q: [f32; 5] = [
        -1.426_473_9e-2,
        -7.373_329e-3,
        -1.682_827e-3,
        -2.133_740_6e-4,
        -1.456_607_2e-5,
    ];
    let z = x * x;
    let r = x * poly(z, &P) / poly(z, &Q);
    select(x.abs() >= 4.0, with_sign_of(1.0, x), r)
}

// ----- sin, cos, tan -----

/// Beyond this |x| the reduction below loses accuracy (and sin, cos, tan
/// take libm in float64): the patched kernels recompute such elements.
pub const TRIG_LIMIT_F32: f32 = 131_072.0; // 2^17

/// pi/2 in three parts: `x - n P1` is exact in an FMA, and the parts
/// together hold pi/2 to ~2^-75.
const PIO2_1: f32 = 1.5707964;
const PIO2_2: f32 = -4.371139e-08;
const PIO2_3: f32 = -1.7151245e-15;

/// (sin r - r) / r^3 in z = r^2 <= 0.617, relative error 2^-23.0.
const SIN_S: [f32; 3] = [-0.16666664, 0.008332745, -0.00019587298];

/// (cos r - 1 + r^2/2) / r^4 in z = r^2 <= 0.617, relative error 2^-24.3.
const COS_C: [f32; 3] = [0.041666664, -0.00138883, 2.4547546e-05];

#[cfg(test)]
mod tests;

// ----- sinh, cosh, softplus -----

// ----- atan, asin, acos (Cephes' float32 polynomials) -----

/// atan x: the argument reduced to |t| <= tan(pi/8) around 0, pi/4 or pi/2
/// (Cephes' atanf), x's sign put back.
#[inline(always)]
pub fn atan_f32(x: f32) -> f32 {
    const T3P8: f32 = 2.414_213_6; // tan(3 pi / 8)
    const TP8: f32 = 0.414_213_57; // tan(pi / 8)
    let ax = x.abs();
    let big = ax > T3P8;
    let mid = ax > TP8;
    let t = select(big, -1.0 / ax, select(mid, (ax - 1.0) / (ax + 1.0), ax));
    let y0 = select(
        big,
        std::f32::consts::FRAC_PI_2,
        select(mid, std::f32::consts::FRAC_PI_4, 0.0),
    );
    let z = t * t;
    let p = 8.053_744_5e-2f32.mul_add(z, -1.387_768_6e-1);
    let p = p.mul_add(z, 1.997_771_1e-1);
    let p = p.mul_add(z, -3.333_295e-1);
    // NaN: both tests fail, t is NaN and so is the result.
    with_sign_of(y0 + (p * z).mul_add(t, t), x)
}

/// asin v for |v| <= 0.5 (Cephes' asinf polynomial).
#[inline(always)]
fn asin_core(v: f32) -> f32 {
    let z = v * v;
    let p = 4.216_32e-2f32.mul_add(z, 2.418_131_1e-2);
    let p = p.mul_add(z, 4.547_002_6e-2);
    let p = p.mul_add(z, 7.495_300_3e-2);
    let p = p.mul_add(z, 1.666_675_2e-1);
    (p * z).mul_add(v, v)
}

/// asin x: `pi/2 - 2 asin(sqrt((1 - |x|) / 2))` above |x| = 0.5 (NaN
/// beyond 1, from the square root).
#[inline(always)]
pub fn asin_f32(x: f32) -> f32 {
    let ax = x.abs();
    let big = ax > 0.5;
    let p = asin_core(select(big, (0.5 * (1.0 - ax)).sqrt(), ax));
    let r = select(big, (-2.0f32).mul_add(p, std::f32::consts::FRAC_PI_2), p);
    // NaN stays NaN (with_sign_of keeps it), as beyond 1 (the root's)
    with_sign_of(r, x)
}

/// acos x: `2 asin(sqrt((1 - |x|) / 2))` (subtracted from pi for
/// negative x) above |x| = 0.5, `pi/2 - asin x` below.
#[inline(always)]
pub fn acos_f32(x: f32) -> f32 {
    let ax = x.abs();
    let big = ax > 0.5;
    let p = asin_core(select(big, (0.5 * (1.0 - ax)).sqrt(), x));
    let outer = select(x < 0.0, (-2.0f32).mul_add(p, std::f32::consts::PI), 2.0 * p);
    select(big, outer, std::f32::consts::FRAC_PI_2 - p)
}

// ----- exp2, logaddexp -----

/// 2^x: `x = n + r` with |r| <= 1/2 (exact), `2^r = e^(r ln2)`, the scale
/// 2^n in two halves (as [`exp_f32`]).
#[inline(always)]
pub fn exp2_f32(x: f32) -> f32 {
    // NaN fails both tests and stays NaN.
    let xc = select(x < -151.0, -151.0, select(x > 129.0, 129.0, x));
    let t = xc + MAGIC;
    let nf = t - MAGIC;
    let n = (t.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let y = exp_poly((xc - nf) * std::f32::consts::LN_2);
    let h = n >> 1;
    y * pow2(h) * pow2(n.wrapping_sub(h))
}

/// `x^y` (C99's pow), computed in float64 arithmetic
/// ([`super::float64::pow_f32_in_f64`]) and rounded once.
#[inline(always)]
pub fn pow_f32(x: f32, y: f32) -> f32 {
    super::float64::pow_f32_in_f64(x, y)
}
