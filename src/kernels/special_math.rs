//! Scalar special functions in float64 (float32 inputs are computed in
//! float64 and rounded): the gamma family (lgamma from `libm`, digamma,
//! trigamma, polygamma through the Hurwitz zeta function, the regularized
//! incomplete gamma functions), erfcx, the normal distribution (ndtr,
//! ndtri, log_ndtr), entr, the Bessel functions (J0, J1, Y0, Y1 from
//! `libm`; I0, I1 by their power series and asymptotic expansions; K0, K1 by
//! the integral `K_nu(x) = int_0^inf exp(-x cosh t) cosh(nu t) dt`, summed by
//! the trapezoid rule, which converges exponentially for it) and the
//! classical orthogonal polynomials by their three-term recurrences.
//! Special values follow torch's (its ATen `Math.h` kernels).

// The published coefficients (Cephes, AS241) are kept digit for digit.
#![allow(clippy::excessive_precision)]

use std::f64::consts::{FRAC_1_SQRT_2, PI};

/// float32 and float64 through a float64 scalar function.
pub trait ViaF64: Copy {
    fn via(self, f: fn(f64) -> f64) -> Self;
    fn via2(self, other: Self, f: fn(f64, f64) -> f64) -> Self;
    fn via_dyn(self, f: &dyn Fn(f64) -> f64) -> Self;
}
impl ViaF64 for f32 {
    fn via(self, f: fn(f64) -> f64) -> Self {
        f(self as f64) as f32
    }
    fn via2(self, other: Self, f: fn(f64, f64) -> f64) -> Self {
        f(self as f64, other as f64) as f32
    }
    fn via_dyn(self, f: &dyn Fn(f64) -> f64) -> Self {
        f(self as f64) as f32
    }
}
impl ViaF64 for f64 {
    fn via(self, f: fn(f64) -> f64) -> Self {
        f(self)
    }
    fn via2(self, other: Self, f: fn(f64, f64) -> f64) -> Self {
        f(self, other)
    }
    fn via_dyn(self, f: &dyn Fn(f64) -> f64) -> Self {
        f(self)
    }
}

const SQRT_2PI: f64 = 2.506_628_274_631_000_5;

pub fn lgamma(x: f64) -> f64 {
    libm::lgamma(x)
}

/// The digamma function (torch's `calc_digamma`): -inf at +0, +inf at -0,
/// NaN at the negative integers.
pub fn digamma(x: f64) -> f64 {
    if x == 0.0 {
        return f64::INFINITY.copysign(-x);
    }
    if x < 0.0 {
        if x == x.floor() {
            return f64::NAN;
        }
        // reflection: psi(1 - x) - pi / tan(pi x)
        return digamma(1.0 - x) - PI / (PI * x).tan();
    }
    let (mut x, mut result) = (x, 0.0);
    while x < 10.0 {
        result -= 1.0 / x;
        x += 1.0;
    }
    if x == 10.0 {
        return result + 2.251_752_589_066_721_1;
    }
    const A: [f64; 7] = [
        8.333_333_333_333_333e-2,
        -2.109_279_609_279_609_3e-2,
        7.575_757_575_757_576e-3,
        -4.166_666_666_666_667e-3,
        3.968_253_968_253_968e-3,
        -8.333_333_333_333_333e-3,
        8.333_333_333_333_333e-2,
    ];
    let z = 1.0 / (x * x);
    let y = z * A.iter().fold(0.0, |acc, &c| acc * z + c);
    result + x.ln() - 0.5 / x - y
}

/// The trigamma function (torch's `calc_trigamma`).
pub fn trigamma(x: f64) -> f64 {
    let (mut x, mut sign, mut result) = (x, 1.0, 0.0);
    if x < 0.5 {
        sign = -1.0;
        let s = (PI * x).sin();
        result -= PI * PI / (s * s);
        x = 1.0 - x;
    }
    for _ in 0..6 {
        result += 1.0 / (x * x);
        x += 1.0;
    }
    let ixx = 1.0 / (x * x);
    result +=
        (1.0 + 1.0 / (2.0 * x) + ixx * (1.0 / 6.0 - ixx * (1.0 / 30.0 - ixx * (1.0 / 42.0)))) / x;
    sign * result
}

/// The Hurwitz zeta function `sum_k (k + q)^-x` (Cephes' `zeta`, as torch).
pub fn zeta(x: f64, q: f64) -> f64 {
    const MACHEP: f64 = 1.110_223_024_625_156_5e-16;
    const A: [f64; 12] = [
        12.0,
        -720.0,
        30240.0,
        -1209600.0,
        47900160.0,
        -1.892_437_580_318_379_2e9,
        7.472_424_96e10,
        -2.950_130_727_918_164_2e12,
        1.164_678_281_435_006_7e14,
        -4.597_978_722_407_472_6e15,
        1.815_210_540_194_354_7e17,
        -7.166_165_256_175_667e18,
    ];
    if x == 1.0 {
        return f64::INFINITY;
    }
    if x < 1.0 || x.is_nan() || q.is_nan() {
        return f64::NAN;
    }
    if q <= 0.0 {
        if q == q.floor() {
            return f64::INFINITY;
        }
        if x != x.floor() {
            return f64::NAN;
        }
    }
    let mut s = q.powf(-x);
    let mut a = q;
    let mut i = 0;
    let mut b = 0.0;
    while i < 9 || a <= 9.0 {
        i += 1;
        a += 1.0;
        b = a.powf(-x);
        s += b;
        if (b / s).abs() < MACHEP {
            return s;
        }
    }
    let w = a;
    s += b * w / (x - 1.0);
    s -= 0.5 * b;
    let mut a = 1.0;
    let mut k = 0.0;
    for c in A {
        a *= x + k;
        b /= w;
        let t = a * b / c;
        s += t;
        if (t / s).abs() < MACHEP {
            return s;
        }
        k += 1.0;
        a *= x + k;
        b /= w;
        k += 1.0;
    }
    s
}

/// The n-th derivative of digamma.
pub fn polygamma(n: i64, x: f64) -> f64 {
    match n {
        0 => digamma(x),
        1 => trigamma(x),
        _ => {
            let sign = if n % 2 == 1 { 1.0 } else { -1.0 };
            sign * lgamma(n as f64 + 1.0).exp() * zeta(n as f64 + 1.0, x)
        }
    }
}

/// `exp(x^2) erfc(x)`, without overflow for large x.
pub fn erfcx(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < 0.0 {
        if x < -26.7 {
            return f64::INFINITY;
        }
        return 2.0 * exp_square(-x) - erfcx(-x);
    }
    if x < 26.0 {
        return exp_square(x) * libm::erfc(x);
    }
    // asymptotic: 1 / (x sqrt(pi)) sum_k (-1)^k (2k-1)!! / (2x^2)^k
    let z = 1.0 / (2.0 * x * x);
    let (mut term, mut sum) = (1.0, 1.0);
    for k in 1..12 {
        term *= -((2 * k - 1) as f64) * z;
        sum += term;
    }
    sum / (x * PI.sqrt())
}

/// `exp(x^2)` with `x^2` split exactly into a rounded square and its error.
fn exp_square(x: f64) -> f64 {
    let p = x * x;
    let e = x.mul_add(x, -p);
    p.exp() * (1.0 + e)
}

/// The standard normal CDF.
pub fn ndtr(x: f64) -> f64 {
    0.5 * libm::erfc(-x * FRAC_1_SQRT_2)
}

/// log of the standard normal CDF (torch's formula).
pub fn log_ndtr(x: f64) -> f64 {
    let t = x * FRAC_1_SQRT_2;
    if x < -1.0 {
        (erfcx(-t) / 2.0).ln() - t * t
    } else {
        (-libm::erfc(t) / 2.0).ln_1p()
    }
}

fn poly(c: &[f64], x: f64) -> f64 {
    c.iter().rev().fold(0.0, |acc, &k| acc * x + k)
}

/// The inverse of the standard normal CDF: Wichura's AS241 (PPND16), then
/// Newton steps on `ndtr` for p below 1/2 (above by symmetry).
pub fn ndtri(p: f64) -> f64 {
    if p.is_nan() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    let q = p - 0.5;
    if q.abs() <= 0.425 {
        let r = 0.180625 - q * q;
        let num = poly(
            &[
                3.387_132_872_796_366_6,
                133.141_667_891_784_38,
                1_971.590_950_306_551_4,
                13_731.693_765_509_461,
                45_921.953_931_549_87,
                67_265.770_927_008_7,
                33_430.575_583_588_13,
                2_509.080_928_730_122_7,
            ],
            r,
        );
        let den = poly(
            &[
                1.0,
                42.313_330_701_600_91,
                687.187_007_492_057_9,
                5_394.196_021_424_751,
                21_213.794_301_586_597,
                39_307.895_800_092_71,
                28_729.085_735_721_943,
                5_226.495_278_852_854_5,
            ],
            r,
        );
        return q * num / den;
    }
    let tail = if q < 0.0 { p } else { 1.0 - p };
    let r = (-tail.ln()).sqrt();
    let mut x = if r <= 5.0 {
        let r = r - 1.6;
        poly(
            &[
                1.423_437_110_749_683_5,
                4.630_337_846_156_545,
                5.769_497_221_460_691,
                3.647_848_324_763_204_5,
                1.270_458_252_452_368_4,
                0.241_780_725_177_450_6,
                0.022_723_844_989_269_184,
                7.745_450_142_783_414e-4,
            ],
            r,
        ) / poly(
            &[
                1.0,
                2.053_191_626_637_759,
                1.676_384_830_183_803_8,
                0.689_767_334_985_1,
                0.148_103_976_427_480_08,
                0.015_198_666_563_616_457,
                5.475_938_084_995_345e-4,
                1.050_750_071_644_416_8e-9,
            ],
            r,
        )
    } else {
        let r = r - 5.0;
        poly(
            &[
                6.657_904_643_501_103,
                5.463_784_911_164_114,
                1.784_826_539_917_291_3,
                0.296_560_571_828_504_9,
                0.026_532_189_526_576_124,
                0.001_242_660_947_388_078_4,
                2.711_555_568_743_487_6e-5,
                2.010_334_399_292_288_1e-7,
            ],
            r,
        ) / poly(
            &[
                1.0,
                0.599_832_206_555_888,
                0.136_929_880_922_735_8,
                0.014_875_361_290_850_615,
                7.868_691_311_456_133e-4,
                1.846_318_317_510_054_8e-5,
                1.421_511_758_316_446e-7,
                2.044_263_103_389_939_8e-15,
            ],
            r,
        )
    };
    if q < 0.0 {
        x = -x;
        // Newton on ndtr where its value is accurate (the lower tail)
        for _ in 0..2 {
            let pdf = (-0.5 * x * x).exp() / SQRT_2PI;
            if pdf > 0.0 {
                x -= (ndtr(x) - p) / pdf;
            }
        }
        x
    } else {
        x
    }
}

/// `-x ln x` (0 at 0, -inf below).
pub fn entr(x: f64) -> f64 {
    if x.is_nan() {
        x
    } else if x > 0.0 {
        -x * x.ln()
    } else if x == 0.0 {
        0.0
    } else {
        f64::NEG_INFINITY
    }
}

/// `e^{-|x|} I_nu(|x|)` for nu 0 or 1 and |x| of 30 or more, by the
/// asymptotic expansion.
fn bessel_i_scaled_large(nu: f64, ax: f64) -> f64 {
    let mu = 4.0 * nu * nu;
    let (mut term, mut sum) = (1.0f64, 1.0f64);
    for k in 1..40 {
        let j = (2 * k - 1) as f64;
        let next = -term * (mu - j * j) / (k as f64 * 8.0 * ax);
        if next.abs() >= term.abs() {
            break;
        }
        term = next;
        sum += term;
        if term.abs() < 1e-17 * sum.abs() {
            break;
        }
    }
    sum / (2.0 * PI * ax).sqrt()
}

/// `I_nu(|x|)` for nu 0 or 1 by the power series (all terms positive).
fn bessel_i_series(nu: u32, ax: f64) -> f64 {
    if ax == 0.0 {
        return if nu == 0 { 1.0 } else { 0.0 };
    }
    let q = ax * ax / 4.0;
    let mut term = if nu == 0 { 1.0 } else { ax / 2.0 };
    let mut sum = term;
    let mut k = 0.0;
    loop {
        k += 1.0;
        term *= q / (k * (k + nu as f64));
        sum += term;
        if term <= sum * 1e-17 {
            return sum;
        }
    }
}

pub fn i0(x: f64) -> f64 {
    let ax = x.abs();
    if ax.is_nan() {
        return x;
    }
    if ax < 30.0 {
        bessel_i_series(0, ax)
    } else {
        bessel_i_scaled_large(0.0, ax) * ax.exp()
    }
}

pub fn i0e(x: f64) -> f64 {
    let ax = x.abs();
    if ax.is_nan() {
        return x;
    }
    if ax < 30.0 {
        bessel_i_series(0, ax) * (-ax).exp()
    } else {
        bessel_i_scaled_large(0.0, ax)
    }
}

pub fn i1(x: f64) -> f64 {
    let ax = x.abs();
    if ax.is_nan() {
        return x;
    }
    let v = if ax < 30.0 {
        bessel_i_series(1, ax)
    } else {
        bessel_i_scaled_large(1.0, ax) * ax.exp()
    };
    v.copysign(x)
}

pub fn i1e(x: f64) -> f64 {
    let ax = x.abs();
    if ax.is_nan() {
        return x;
    }
    let v = if ax < 30.0 {
        bessel_i_series(1, ax) * (-ax).exp()
    } else {
        bessel_i_scaled_large(1.0, ax)
    };
    v.copysign(x)
}

/// `e^x K_nu(x)` for nu 0 or 1 and x > 0.
fn bessel_k_scaled(nu: f64, x: f64) -> f64 {
    if x >= 30.0 {
        let mu = 4.0 * nu * nu;
        let (mut term, mut sum) = (1.0f64, 1.0f64);
        for k in 1..40 {
            let j = (2 * k - 1) as f64;
            let next = term * (mu - j * j) / (k as f64 * 8.0 * x);
            if next.abs() >= term.abs() {
                break;
            }
            term = next;
            sum += term;
            if term.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        return sum * (PI / (2.0 * x)).sqrt();
    }
    // trapezoid rule on int_0^inf exp(-x (cosh t - 1)) cosh(nu t) dt
    let h = 0.02;
    let mut sum = 0.5;
    let mut t = 0.0f64;
    loop {
        t += h;
        let v = (-x * (t.cosh() - 1.0)).exp() * (nu * t).cosh();
        // past t = 700, cosh overflows: the integrand has long vanished
        // unless x is below 1e-300
        if v.is_nan() || t > 700.0 {
            return sum * h;
        }
        sum += v;
        if v < 1e-18 * sum {
            return sum * h;
        }
    }
}

fn bessel_k_edge(x: f64) -> Option<f64> {
    if x.is_nan() || x < 0.0 {
        Some(f64::NAN)
    } else if x == 0.0 {
        Some(f64::INFINITY)
    } else {
        None
    }
}

pub fn k0(x: f64) -> f64 {
    bessel_k_edge(x).unwrap_or_else(|| bessel_k_scaled(0.0, x) * (-x).exp())
}
pub fn k1(x: f64) -> f64 {
    bessel_k_edge(x).unwrap_or_else(|| bessel_k_scaled(1.0, x) * (-x).exp())
}
pub fn k0e(x: f64) -> f64 {
    bessel_k_edge(x).unwrap_or_else(|| bessel_k_scaled(0.0, x))
}
pub fn k1e(x: f64) -> f64 {
    bessel_k_edge(x).unwrap_or_else(|| bessel_k_scaled(1.0, x))
}

pub fn j0(x: f64) -> f64 {
    libm::j0(x)
}
pub fn j1(x: f64) -> f64 {
    libm::j1(x)
}
pub fn y0(x: f64) -> f64 {
    libm::y0(x)
}
pub fn y1(x: f64) -> f64 {
    libm::y1(x)
}

/// `sin(x) / x`, 1 at 0.
pub fn spherical_j0(x: f64) -> f64 {
    if x.is_infinite() {
        return 0.0;
    }
    if x.abs() < 0.5 {
        let x2 = x * x;
        // the series to x^12
        return 1.0
            - x2 / 6.0
                * (1.0
                    - x2 / 20.0
                        * (1.0
                            - x2 / 42.0
                                * (1.0 - x2 / 72.0 * (1.0 - x2 / 110.0 * (1.0 - x2 / 156.0)))));
    }
    x.sin() / x
}

/// The regularized lower incomplete gamma function P(a, x) (series below
/// `a + 1`, else one minus the continued fraction of Q), and Q = 1 - P.
fn igamma_pq(a: f64, x: f64) -> (f64, f64) {
    if a.is_nan() || x.is_nan() || a < 0.0 || x < 0.0 {
        return (f64::NAN, f64::NAN);
    }
    if a == 0.0 {
        return if x > 0.0 {
            (1.0, 0.0)
        } else {
            (f64::NAN, f64::NAN)
        };
    }
    if x == 0.0 {
        return (0.0, 1.0);
    }
    if a.is_infinite() {
        return if x.is_infinite() {
            (f64::NAN, f64::NAN)
        } else {
            (0.0, 1.0)
        };
    }
    if x.is_infinite() {
        return (1.0, 0.0);
    }
    let log_pre = a * x.ln() - x - lgamma(a);
    if x < a + 1.0 {
        let (mut ap, mut del) = (a, 1.0 / a);
        let mut sum = del;
        for _ in 0..100_000 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-17 {
                break;
            }
        }
        let p = sum * log_pre.exp();
        (p, 1.0 - p)
    } else {
        // Lentz's continued fraction for Q
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..100_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-16 {
                break;
            }
        }
        let q = log_pre.exp() * h;
        (1.0 - q, q)
    }
}

pub fn gammainc(a: f64, x: f64) -> f64 {
    igamma_pq(a, x).0
}
pub fn gammaincc(a: f64, x: f64) -> f64 {
    igamma_pq(a, x).1
}

/// The classical orthogonal polynomials, by their three-term recurrences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poly {
    ChebyshevT,
    ChebyshevU,
    ChebyshevV,
    ChebyshevW,
    HermiteH,
    HermiteHe,
    LaguerreL,
    LegendreP,
}

/// Degrees above which the recurrence is not run (a user-given degree
/// must not stall the kernel): Chebyshev T on [-1, 1] by cos(n acos x),
/// the rest NaN.
const MAX_DEGREE: i64 = 1 << 20;

/// `P_n(x)` (0 for n < 0; n is truncated to an integer, as torch's cast).
pub fn poly_eval(kind: Poly, x: f64, n: f64) -> f64 {
    if n.is_nan() || x.is_nan() {
        return f64::NAN;
    }
    if n < 0.0 {
        return 0.0;
    }
    let n = n as i64;
    if n > MAX_DEGREE {
        return match kind {
            Poly::ChebyshevT if x.abs() <= 1.0 => (n as f64 * x.acos()).cos(),
            _ => f64::NAN,
        };
    }
    let (p0, p1) = match kind {
        Poly::ChebyshevT | Poly::HermiteHe | Poly::LegendreP => (1.0, x),
        Poly::ChebyshevU | Poly::HermiteH => (1.0, 2.0 * x),
        Poly::ChebyshevV => (1.0, 2.0 * x - 1.0),
        Poly::ChebyshevW => (1.0, 2.0 * x + 1.0),
        Poly::LaguerreL => (1.0, 1.0 - x),
    };
    if n == 0 {
        return p0;
    }
    let (mut a, mut b) = (p0, p1);
    for k in 1..n {
        let kf = k as f64;
        let next = match kind {
            Poly::ChebyshevT | Poly::ChebyshevU | Poly::ChebyshevV | Poly::ChebyshevW => {
                2.0 * x * b - a
            }
            Poly::HermiteH => 2.0 * x * b - 2.0 * kf * a,
            Poly::HermiteHe => x * b - kf * a,
            Poly::LaguerreL => ((2.0 * kf + 1.0 - x) * b - kf * a) / (kf + 1.0),
            Poly::LegendreP => ((2.0 * kf + 1.0) * x * b - kf * a) / (kf + 1.0),
        };
        a = b;
        b = next;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    /// Reference values from mpmath.
    #[test]
    fn known_values() {
        assert!(close(digamma(1.0), -0.577_215_664_901_532_9, 1e-15));
        // torch's trigamma series, followed here value for value, is off by
        // 5e-10 relative at 1
        assert!(close(trigamma(1.0), PI * PI / 6.0, 1e-9));
        assert!(close(polygamma(2, 1.0), -2.404_113_806_319_188_5, 1e-14));
        assert!(close(zeta(2.0, 1.0), PI * PI / 6.0, 1e-15));
        assert!(close(erfcx(30.0), 0.018_795_888_861_416_75, 1e-13));
        assert!(close(erfcx(1.0), 0.427_583_576_155_807, 1e-14));
        assert!(close(ndtri(0.975), 1.959_963_984_540_054, 1e-15));
        assert!(close(ndtri(1e-300), -37.047_096_299_361_2, 1e-13));
        assert!(close(ndtr(ndtri(0.3)), 0.3, 1e-15));
        assert!(close(i0(1.0), 1.266_065_877_752_008_4, 1e-15));
        assert!(close(i1(1.0), 0.565_159_103_992_485, 1e-15));
        assert!(close(i0e(50.0), 0.056_561_626_647_454_19, 1e-14));
        assert!(close(k0(1.0), 0.421_024_438_240_708_3, 1e-14));
        assert!(close(k1(2.0), 0.139_865_881_816_522_4, 1e-14));
        assert!(close(k0e(40.0), 0.197_555_584_957_298_17, 1e-14));
        assert!(close(gammainc(2.0, 1.0), 0.264_241_117_657_115_4, 1e-14));
        assert!(close(
            gammaincc(3.0, 10.0),
            0.002_769_395_715_511_576,
            1e-13
        ));
        assert!(close(log_ndtr(-10.0), -53.231_285_150_512_47, 1e-14));
        assert_eq!(poly_eval(Poly::ChebyshevT, 0.5, 3.0), 4.0 * 0.125 - 1.5);
        assert_eq!(poly_eval(Poly::HermiteH, 1.0, 2.0), 2.0);
    }
}
