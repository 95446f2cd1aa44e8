//! float64 functions (see the parent module for the accuracy table).
//!
//! exp, exp_m1 and tanh share one reduction `x = n ln2 + r` and one
//! polynomial for `e^r - 1`; ln and ln_1p share fdlibm's scheme
//! (`log(1+f) = f - f^2/2 + s (f^2/2 + R(s^2))`, `s = f / (2 + f)`) with a
//! polynomial R fitted here; erf is `x P(x^2)` below 0.875 and
//! `1 - e^-x^2 E(x)` above; pow is glibc's table method (see `pow_data`).

use std::f64::consts::{FRAC_1_SQRT_2, FRAC_2_PI, LOG10_E, LOG2_E};

width_common! { f64, u64,
magic = 6_755_399_441_055_744.0, sinh_big = 709.0, erf_clamp = 6.0, erfc_mid = 3.4375 }

/// 2^n for an integer n in [-1022, 1023] (bits).
#[inline(always)]
fn pow2(n: i64) -> f64 {
    f64::from_bits((n.wrapping_add(1023) as u64) << 52)
}

// ----- exp, exp_m1 -----

/// ln 2 in two parts: `n * LN2_HI` is exact in an FMA and `x - n LN2_HI` is
/// exact too (a multiple of 2^-53 below 1), so r carries one rounding.
const LN2_HI: f64 = std::f64::consts::LN_2;
const LN2_LO: f64 = 2.3190468138462996e-17;

/// (e^r - 1 - r - r^2/2) / r^3 on |r| <= 0.3466, relative error 2^-54.2.
const EXPM1_Q: [f64; 10] = [
    0.16666666666666669,
    0.04166666666666666,
    0.00833333333333007,
    0.0013888888888900562,
    0.00019841269863018538,
    2.4801587275137837e-05,
    2.755726850744933e-06,
    2.7557329610933376e-07,
    2.5100365447861326e-08,
    2.0893975757788244e-09,
];

/// `x = n ln2 + r` with `|r| <= 0.3466` and n an integer, for |x| < 2^50
/// (n as an integer in the second value).
#[inline(always)]
fn exp_reduce(x: f64) -> (f64, i64) {
    let t = x.mul_add(LOG2_E, MAGIC);
    let n = t - MAGIC;
    let r = (-n).mul_add(LN2_HI, x);
    let r = (-n).mul_add(LN2_LO, r);
    (r, (t.to_bits() as i64).wrapping_sub(MAGIC.to_bits() as i64))
}

/// e^x. The scale 2^n goes on in two halves, so results down to the
/// subnormal range and up to overflow come out right.
#[inline(always)]
pub fn exp_f64(x: f64) -> f64 {
    // NaN fails both tests and stays NaN.
    let xc = select(x < -746.0, -746.0, select(x > 710.0, 710.0, x));
    let (r, n) = exp_reduce(xc);
    scale_exp(expm1_poly(r), n)
}

/// `2^n (p + 1)` with the scale in two halves, so results down to the
/// subnormal range and up to overflow come out right (n >= -1076).
#[inline(always)]
fn scale_exp(p: f64, n: i64) -> f64 {
    // floor(n / 2) by a logical shift of n + 2048
    let h = ((n.wrapping_add(2048) as u64) >> 1) as i64 - 1024;
    let s1 = pow2(h);
    let s2 = pow2(n.wrapping_sub(h));
    p.mul_add(s1, s1) * s2
}

/// e^x - 1 for x already clamped to [-40, 710]: `2^n (e^r - 1) + (2^n - 1)`
/// in one FMA (the scale in two steps above 2^1000).
#[inline(always)]
fn expm1_core(x: f64) -> f64 {
    let (r, n) = exp_reduce(x);
    let p = expm1_poly(r);
    let big = n > 1000;
    let s = pow2(n.wrapping_sub(if big { 100 } else { 0 }));
    let y = p.mul_add(s, s - 1.0);
    y * select(big, 1.267_650_600_228_229_4e30, 1.0) // 2^100
}

/// e^x - 1, accurate near 0.
#[inline(always)]
pub fn exp_m1_f64(x: f64) -> f64 {
    // below -40 the result rounds to -1; NaN stays NaN
    let xc = select(x < -40.0, -40.0, select(x > 710.0, 710.0, x));
    // keeps -0.0
    select(x == 0.0, x, expm1_core(xc))
}

// ----- ln, ln_1p -----

/// ln 2 with a 32-bit high part, so `k * LOG_LN2_HI` is exact for any
/// exponent k.
const LOG_LN2_HI: f64 = 0.6931471806019545;
const LOG_LN2_LO: f64 = -4.2009150726810846e-11;

/// (2 atanh(s) / s - 2) / s^2 in z = s^2 <= 0.02944, relative error 2^-51.0
/// (an error of 2^-57.7 in the log).
const LOG_R: [f64; 7] = [
    0.666666666666667,
    0.39999999999899116,
    0.28571428626132106,
    0.22222211111592052,
    0.18182890677893374,
    0.15331673745263524,
    0.14617002504766258,
];

/// The pieces of ln(u) for a positive normal `u` (or a subnormal scaled by
/// 2^54, `kadj` = 54): `u = 2^k (1 + f)` with `1 + f` in [sqrt(2)/2,
/// sqrt(2)), and `ln(1 + f) = f - (hfsq - s hr)` (fdlibm's formula:
/// `hfsq = f^2/2`, `s = f / (2 + f)`, `hr = hfsq + R(s^2)`). Returns
/// (k, f, hfsq, s, hr).
#[inline(always)]
fn ln_parts(u: f64, kadj: f64) -> (f64, f64, f64, f64, f64) {
    // adding 1 - sqrt(2)/2 to the significand carries into the exponent
    // from sqrt(2) on
    const SQRT_HALF: u64 = 0x3fe6_a09e_0000_0000;
    let ix = u.to_bits().wrapping_add(0x3ff0_0000_0000_0000 - SQRT_HALF);
    // the biased exponent as a float64: 2^52 + e, less 2^52 + 1023
    let k = f64::from_bits(0x4330_0000_0000_0000 | (ix >> 52))
        - (4_503_599_627_370_496.0 + 1023.0 + kadj);
    let m = f64::from_bits((ix & 0x000f_ffff_ffff_ffff).wrapping_add(SQRT_HALF));
    let f = m - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let hr = hfsq + z * poly(z, &LOG_R);
    (k, f, hfsq, s, hr)
}

/// `ln(u) + c` for a small correction `c` (|c| < ulp(u) / u).
#[inline(always)]
fn ln_core(u: f64, kadj: f64, c: f64) -> f64 {
    let (k, f, hfsq, s, hr) = ln_parts(u, kadj);
    let t = s.mul_add(hr, k.mul_add(LOG_LN2_LO, c));
    k * LOG_LN2_HI - ((hfsq - t) - f)
}

/// A positive x with subnormals scaled into the normal range: (the scaled
/// x, the power of two taken out).
#[inline(always)]
fn unsubnormal(x: f64) -> (f64, f64) {
    let sub = x < f64::MIN_POSITIVE;
    (
        select(sub, x * 18_014_398_509_481_984.0, x), // 2^54
        select(sub, 54.0, 0.0),
    )
}

/// Natural logarithm, subnormals included.
#[inline(always)]
pub fn ln_f64(x: f64) -> f64 {
    let (xs, kadj) = unsubnormal(x);
    log_specials(x, ln_core(xs, kadj, 0.0))
}

/// ln(1 + x), accurate near 0: `u = 1 + x` rounded, its rounding error
/// recovered exactly (Knuth's two-sum) and added as `err / u`.
#[inline(always)]
pub fn ln_1p_f64(x: f64) -> f64 {
    let u = 1.0 + x;
    let b = u - 1.0;
    let err = (1.0 - (u - b)) + (x - b);
    let r = ln_core(u, 0.0, err / u);
    select(
        x.is_nan() || x < -1.0,
        f64::NAN,
        select(
            x == -1.0,
            f64::NEG_INFINITY,
            select(x == f64::INFINITY, x, select(x == 0.0, x, r)),
        ),
    )
}

/// `ln(1 + f)` as a double-double `hi + lo` (hi = f - hfsq rounded; its
/// rounding error recovered exactly: `f - hi` is exact by Sterbenz).
#[inline(always)]
fn ln1pf_dd(f: f64, hfsq: f64, s: f64, hr: f64) -> (f64, f64) {
    let hi = f - hfsq;
    let lo = s.mul_add(hr, (f - hi) - hfsq);
    (hi, lo)
}

/// `a + hi (c_hi + c_lo) + lo c_hi + extra` for `|a| >= |hi c_hi|` or
/// `a = 0` and a small `extra`, with the product's rounding error and the
/// sum's recovered (FMA and Fast2Sum): about half an ulp.
#[inline(always)]
fn add_scaled(a: f64, hi: f64, lo: f64, c_hi: f64, c_lo: f64, extra: f64) -> f64 {
    let p = hi * c_hi;
    let p_err = hi.mul_add(c_hi, -p);
    let rest = lo.mul_add(c_hi, hi.mul_add(c_lo, p_err + extra));
    let w = a + p;
    let sum_err = (a - w) + p;
    w + (sum_err + rest)
}

/// log2(e) in two parts.
const LOG2_E_LO: f64 = 2.0355273740931033e-17;
/// log10(e) in two parts.
const LOG10_E_LO: f64 = 1.098319650216765e-17;

/// log2(x) = `k + ln(1 + f) log2(e)` (exact for powers of two).
#[inline(always)]
pub fn log2_f64(x: f64) -> f64 {
    let (xs, kadj) = unsubnormal(x);
    let (k, f, hfsq, s, hr) = ln_parts(xs, kadj);
    let (hi, lo) = ln1pf_dd(f, hfsq, s, hr);
    log_specials(x, add_scaled(k, hi, lo, LOG2_E, LOG2_E_LO, 0.0))
}

/// log10(2) with a 32-bit high part (`k * LOG10_2_HI` exact).
const LOG10_2_HI: f64 = 0.3010299956658855;
const LOG10_2_LO: f64 = -1.9043128467164274e-12;

/// log10(x) = `k log10(2) + ln(1 + f) log10(e)`.
#[inline(always)]
pub fn log10_f64(x: f64) -> f64 {
    let (xs, kadj) = unsubnormal(x);
    let (k, f, hfsq, s, hr) = ln_parts(xs, kadj);
    let (hi, lo) = ln1pf_dd(f, hfsq, s, hr);
    let r = add_scaled(k * LOG10_2_HI, hi, lo, LOG10_E, LOG10_E_LO, k * LOG10_2_LO);
    log_specials(x, r)
}

// ----- tanh, sigmoid, silu, gelu -----

/// tanh: `u / (u + 2)` with `u = e^{2|x|} - 1`, |x| clamped to 20 (where
/// tanh rounds to 1), x's sign put back.
#[inline(always)]
pub fn tanh_f64(x: f64) -> f64 {
    let ax = x.abs();
    // NaN fails the test and stays NaN.
    let y = select(ax > 20.0, 20.0, ax);
    let u = expm1_core(2.0 * y);
    with_sign_of(u / (u + 2.0), x)
}

// ----- erf -----

/// erf as gelu uses it: [`erf_f64`] itself (float32 has a cheaper one).
#[inline(always)]
fn gelu_erf_f64(x: f64) -> f64 {
    erf_f64(x)
}

/// erf(x) / x = 2/sqrt(pi) + z Q(z) in z = x^2 <= 0.875^2 (the fit's constant
/// term is 2/sqrt(pi) itself; `tools/vmath_fit.py` prints the fit as ERF_P, that
/// term first), relative error 2^-55.3.
const ERF_Q: [f64; 10] = [
    -0.3761263890318299,
    0.11283791670915581,
    -0.026866170637142677,
    0.0052239775424373115,
    -0.0008548321977249857,
    0.0001205514107599115,
    -1.492094196871919e-05,
    1.6387374160155895e-06,
    -1.5619254968659094e-07,
    1.0456781493583089e-08,
];

/// e^(x^2) erfc(x) in powers of x - 3.4375 on [0.875, 6], error 2^-56.7
/// in erf (weighted by e^-x^2 / erf(x)).
const ERFC_E: [f64; 22] = [
    0.15791868699155434,
    -0.04268819402017522,
    0.011178020024108589,
    -0.002842500454097525,
    0.0007034616053307823,
    -0.00016973989216178905,
    3.9998361643867555e-05,
    -9.206607300830892e-06,
    2.086126115741013e-06,
    -4.6518483128424085e-07,
    8.47225135792437e-08,
    -3.194833166710873e-08,
    5.14787682099025e-09,
    5.639128333189256e-09,
    4.950091018162509e-09,
    1.1069675702563853e-09,
    -5.006102252348317e-10,
    -5.305987839025128e-10,
    -2.109140512049758e-10,
    -4.778622831410446e-11,
    -6.06710822640174e-12,
    -3.4906080804969837e-13,
];

// ----- sin, cos, tan -----

/// Beyond this |x| the reduction below loses accuracy (and sin, cos, tan
/// take libm): the patched kernels recompute such elements.
pub const TRIG_LIMIT_F64: f64 = 1_073_741_824.0; // 2^30

/// pi/2 in three parts: `x - n P1` is exact (in an FMA, for |x| < 2^50),
/// and the parts together hold pi/2 to ~2^-160, enough for every float64
/// below [`TRIG_LIMIT_F64`] (none lies closer than ~2^-61 to a multiple of
/// pi/2).
const PIO2_1: f64 = std::f64::consts::FRAC_PI_2;
const PIO2_2: f64 = 6.123233995736766e-17;
const PIO2_3: f64 = -1.4973849048591698e-33;

/// (sin r - r) / r^3 in z = r^2 <= 0.617, relative error 2^-52.8 (2^-56
/// in sin).
const SIN_S: [f64; 6] = [
    -0.16666666666666666,
    0.008333333333330922,
    -0.00019841269836723443,
    2.7557316086334693e-06,
    -2.5051128789778647e-08,
    1.5917927883434984e-10,
];

/// (cos r - 1 + r^2/2) / r^4 in z = r^2 <= 0.617, relative error 2^-54.8
/// (2^-60 in cos).
const COS_C: [f64; 6] = [
    0.041666666666666664,
    -0.0013888888888887387,
    2.4801587298750487e-05,
    -2.755731726465738e-07,
    2.087614492592304e-09,
    -1.1382543281305645e-11,
];

#[cfg(test)]
mod tests;

// ----- sinh, cosh, softplus -----

// ----- atan (Cephes' rational function) -----

/// atan(t) / t - 1 = z P(z) / Q(z), z = t^2, |t| <= 0.66 (Cephes' atan).
const ATAN_P: [f64; 5] = [
    -6.485_021_904_942_025e1,
    -1.228_866_684_490_136_2e2,
    -7.500_855_792_314_705e1,
    -1.615_753_718_733_365e1,
    -8.750_608_600_031_904e-1,
];
const ATAN_Q: [f64; 6] = [
    1.945_506_571_482_614e2,
    4.853_903_996_359_137e2,
    4.328_810_604_912_903e2,
    1.650_270_098_316_988_5e2,
    2.485_846_490_142_306_3e1,
    1.0,
];

/// atan x: the argument reduced around 0, pi/4 (above 0.66) or pi/2
/// (above tan(3 pi / 8)) with pi/2's low bits added back (Cephes' atan),
/// x's sign put back.
#[inline(always)]
pub fn atan_f64(x: f64) -> f64 {
    const T3P8: f64 = 2.414_213_562_373_095; // tan(3 pi / 8)
    const PIO2_LO: f64 = 6.123_233_995_736_766e-17;
    let ax = x.abs();
    let big = ax > T3P8;
    let mid = ax > 0.66;
    let t = select(big, -1.0 / ax, select(mid, (ax - 1.0) / (ax + 1.0), ax));
    let y0 = select(
        big,
        std::f64::consts::FRAC_PI_2,
        select(mid, std::f64::consts::FRAC_PI_4, 0.0),
    );
    let lo = select(big, PIO2_LO, select(mid, 0.5 * PIO2_LO, 0.0));
    let z = t * t;
    let r = z * poly(z, &ATAN_P) / poly(z, &ATAN_Q);
    with_sign_of(y0 + (r.mul_add(t, t) + lo), x)
}

// ----- exp2, logaddexp -----

/// 2^x: `x = n + r` with |r| <= 1/2 (exact), `2^r = e^(r ln2)` with
/// `r ln2` in two parts, the scale 2^n in two halves (as [`exp_f64`]).
#[inline(always)]
pub fn exp2_f64(x: f64) -> f64 {
    // NaN fails both tests and stays NaN.
    let xc = select(x < -1076.0, -1076.0, select(x > 1025.0, 1025.0, x));
    let t = xc + MAGIC;
    let nf = t - MAGIC;
    let n = (t.to_bits() as i64).wrapping_sub(MAGIC.to_bits() as i64);
    let r = xc - nf;
    let rl = r.mul_add(LN2_HI, r * LN2_LO);
    scale_exp(expm1_poly(rl), n)
}

/// atanh x = `log1p(2|x| / (1 - |x|)) / 2` (fdlibm's form above 1/2; 1 - |x|
/// is exact there), `log1p(2|x| + 2x^2 / (1 - |x|)) / 2` below (no
/// rounding of a quotient near 0 swamps the result); x's sign put back.
/// ±1 give ±inf, beyond them NaN.
#[inline(always)]
pub fn atanh_f64(x: f64) -> f64 {
    let ax = x.abs();
    let t = 2.0 * ax;
    // one log1p, of the selected form's argument
    let arg = select(ax < 0.5, t.mul_add(ax / (1.0 - ax), t), t / (1.0 - ax));
    let r = 0.5 * ln_1p_f64(arg);
    // beyond 1: 1 - |x| < 0 gives a negative quotient below -1, NaN
    with_sign_of(select(ax > 1.0, f64::NAN, r), x)
}

/// atanh of a float32, computed in float64 (then rounded once).
#[inline(always)]
pub fn atanh_f32_via_f64(x: f32) -> f32 {
    atanh_f64(x as f64) as f32
}

/// asinh x (fdlibm's three forms on the vmath logs, all computed and one
/// selected): `ln|x| + ln2` above 2^28, `ln(2|x| + 1/(sqrt(x^2+1) + |x|))`
/// above 2, `log1p(|x| + x^2/(1 + sqrt(1 + x^2)))` below; x's sign put
/// back (so ±0 and tiny x give themselves).
#[inline(always)]
pub fn asinh_f64(x: f64) -> f64 {
    let ax = x.abs();
    let t = ax * ax;
    let huge = ln_f64(ax) + LN2_HI;
    let big = ln_f64(2.0 * ax + 1.0 / ((t + 1.0).sqrt() + ax));
    let small = ln_1p_f64(ax + t / (1.0 + (1.0 + t).sqrt()));
    let r = select(ax > 268_435_456.0, huge, select(ax > 2.0, big, small));
    with_sign_of(select(ax < 3.725_290_298_461_914e-9, ax, r), x)
}

/// acosh x (fdlibm's forms): `ln x + ln2` above 2^28, `ln(2x - 1/(x +
/// sqrt(x^2 - 1)))` above 2, `log1p(t + sqrt(2t + t^2))` with t = x - 1
/// (exact) below; NaN below 1.
#[inline(always)]
pub fn acosh_f64(x: f64) -> f64 {
    let huge = ln_f64(x) + LN2_HI;
    let big = ln_f64(2.0 * x - 1.0 / (x + x.mul_add(x, -1.0).sqrt()));
    let t = x - 1.0;
    let small = ln_1p_f64(t + t.mul_add(t, 2.0 * t).sqrt());
    let r = select(x > 268_435_456.0, huge, select(x > 2.0, big, small));
    select(x < 1.0, f64::NAN, r)
}

/// asinh of a float32, computed in float64 (then rounded once).
#[inline(always)]
pub fn asinh_f32_via_f64(x: f32) -> f32 {
    asinh_f64(x as f64) as f32
}

/// acosh of a float32, computed in float64 (then rounded once).
#[inline(always)]
pub fn acosh_f32_via_f64(x: f32) -> f32 {
    acosh_f64(x as f64) as f32
}

// ----- pow -----

mod pow;
mod pow_data;
pub use pow::*;
