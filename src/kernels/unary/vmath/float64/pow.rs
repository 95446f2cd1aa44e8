//! float64 pow (and float32's through it): glibc's table method, ln|x| as a
//! double-double from `pow_data`, then exp of the double-double product.

use super::pow_data;
use super::*;

/// `ln(x)` as a double-double `hi + lo` (relative error about 2^-68) for a
/// positive finite normal x, or a subnormal scaled by 2^52 with `kadj` =
/// 52: glibc's method (`pow_data` says how the table is built). `x = 2^k
/// z`, `r = z / c - 1` exact, `ln x = k ln2 + ln c + r - r^2/2 + r^3 P(r)`,
/// with the roundings of the leading sums and of `r^2/2` kept in `lo`.
#[inline(always)]
fn ln_dd(x: f64, kadj: f64) -> (f64, f64) {
    use pow_data::{LN2_HI as L2H, LN2_LO as L2L, LOG1P_P, OFF, TABLE};
    let ix = x.to_bits();
    let tmp = ix.wrapping_sub(OFF);
    let i = ((tmp >> 45) & 127) as usize;
    // the exponent k with 1023 added: positive for every normal x
    let kb = tmp.wrapping_add(0x3ff0_0000_0000_0000) >> 52;
    let k = f64::from_bits(0x4330_0000_0000_0000 | kb) - (4_503_599_627_370_496.0 + 1023.0 + kadj);
    let z = f64::from_bits(ix.wrapping_sub(tmp & (0xfff << 52)));
    let [invc, logc, logctail, _] = TABLE[i];
    // exact: 1/c has at most 9 significant bits and |r| < 2^-7
    let r = z.mul_add(invc, -1.0);
    // k ln2hi + logc is exact
    let t1 = k.mul_add(L2H, logc);
    let t2 = t1 + r;
    let lo1 = k.mul_add(L2L, logctail);
    let lo2 = (t1 - t2) + r;
    let ar = -0.5 * r;
    let ar2 = r * ar;
    let hi = t2 + ar2;
    let lo3 = ar.mul_add(r, -ar2);
    let lo4 = (t2 - hi) + ar2;
    let p = (r * r * r) * poly(r, &LOG1P_P);
    let lo = lo1 + lo2 + lo3 + lo4 + p;
    let y = hi + lo;
    (y, (hi - y) + lo)
}

/// `e^(hi + lo)` for a small correction `lo` (|lo| below about ulp(hi)),
/// as [`exp_f64`] with `lo` added to the reduced argument.
#[inline(always)]
fn exp_dd(hi: f64, lo: f64) -> f64 {
    // NaN fails both tests and stays NaN; beyond the clamp lo is dropped
    // (it may be NaN there: inf - inf)
    let xc = select(hi < -746.0, -746.0, select(hi > 710.0, 710.0, hi));
    let lo = select(xc == hi, lo, 0.0);
    let t = xc.mul_add(LOG2_E, MAGIC);
    let n = t - MAGIC;
    let ni = (t.to_bits() as i64).wrapping_sub(MAGIC.to_bits() as i64);
    // exact (see exp_reduce)
    let r1 = (-n).mul_add(LN2_HI, xc);
    let c = (-n).mul_add(LN2_LO, lo);
    let r = r1 + c;
    let rlo = (r1 - r) + c;
    let h = r.mul_add(poly(r, &EXPM1_Q), 0.5);
    let p = r + (r * r).mul_add(h, rlo);
    let hn = ((ni.wrapping_add(2048) as u64) >> 1) as i64 - 1024;
    let s1 = pow2(hn);
    let s2 = pow2(ni.wrapping_sub(hn));
    p.mul_add(s1, s1) * s2
}

/// `ln|x|` (`lh`, plus `ll` where given) with its special values: -inf at
/// ±0, inf at ±inf, NaN for NaN.
#[inline(always)]
fn ln_abs_specials(ax: f64, lh: f64, ll: f64) -> (f64, f64) {
    let normal = ax > 0.0 && ax < f64::INFINITY;
    (
        select(normal, lh, select(ax == 0.0, f64::NEG_INFINITY, ax)),
        select(normal, ll, 0.0),
    )
}

/// pow's result from `r = |x|^y` (computed as `e^(y ln|x|)`, which gets the
/// zeros and infinities of ±0, ±inf and y = ±inf right): negated for a
/// negative x and an odd integer y; NaN for a finite x < 0 and a finite
/// non-integer y; 1 where y = ±0 or x = 1 (even beside a NaN) and for x =
/// -1, y = ±inf.
#[inline(always)]
fn pow_signs(x: f64, y: f64, r: f64) -> f64 {
    const TWO52: f64 = 4_503_599_627_370_496.0;
    // y's integer-ness and parity: below 2^52, y + 2^52 rounds |y| to an
    // integer in the low bits; from 2^52 every float64 is an integer, odd
    // ones only below 2^53
    let ay = y.abs();
    let small = ay < TWO52;
    let q = select(small, ay + TWO52, ay);
    let is_int = !small || q - TWO52 == ay;
    let odd = is_int && ay < 2.0 * TWO52 && q.to_bits() & 1 == 1;
    let r = select(x.is_sign_negative() && odd, -r, r);
    let r = select(x < 0.0 && x > f64::NEG_INFINITY && !is_int, f64::NAN, r);
    select(
        y == 0.0 || x == 1.0 || (x.abs() == 1.0 && ay == f64::INFINITY),
        1.0,
        r,
    )
}

/// pow's first stage: `ln|x|` as a double-double, with its special values.
#[inline(always)]
pub fn pow_ln_f64(x: f64) -> (f64, f64) {
    let ax = x.abs();
    let sub = ax < f64::MIN_POSITIVE;
    let xs = select(sub, ax * 4_503_599_627_370_496.0, ax); // 2^52
    let (lh, ll) = ln_dd(xs, select(sub, 52.0, 0.0));
    ln_abs_specials(ax, lh, ll)
}

/// pow's second stage, from `(lh, ll)` = [`pow_ln_f64`]`(x)`: `e^(y ln|x|)`
/// with `y ln|x|` a double-double (the product's rounding error recovered
/// by an FMA), then [`pow_signs`].
#[inline(always)]
pub fn pow_exp_f64(x: f64, y: f64, (lh, ll): (f64, f64)) -> f64 {
    let eh = y * lh;
    let el = y.mul_add(lh, -eh) + y * ll;
    pow_signs(x, y, exp_dd(eh, el))
}

/// `x^y` with C99's special cases (as libm's `pow`): [`pow_exp_f64`] of
/// [`pow_ln_f64`]. Branch-free.
#[inline(always)]
pub fn pow_f64(x: f64, y: f64) -> f64 {
    pow_exp_f64(x, y, pow_ln_f64(x))
}

/// float32 pow's first stage: `ln|x|` in float64 by [`ln_core`]
/// (table-free: here the table's gathers cost more than they save), with
/// its special values. Every float32, subnormals included, is a normal
/// float64.
#[inline(always)]
pub fn pow_ln_for_f32(x: f32) -> f64 {
    let ax = (x as f64).abs();
    ln_abs_specials(ax, ln_core(ax, 0.0, 0.0), 0.0).0
}

/// float32 pow's second stage, from `l` = [`pow_ln_for_f32`]`(x)`:
/// `e^(y l)` with a short polynomial (relative error about 2^-37, float32's
/// results lying far inside float64's range), [`pow_signs`], rounded once.
#[inline(always)]
pub fn pow_exp_for_f32(x: f32, y: f32, l: f64) -> f32 {
    use pow_data::EXPM1_Q32;
    let (x, y) = (x as f64, y as f64);
    // float32's results: 0 below e^-104, inf above e^89 (NaN stays)
    let e = y * l;
    let ec = select(e < -110.0, -110.0, select(e > 100.0, 100.0, e));
    // the product's rounding error goes into the reduced argument (so a
    // power of two to an integer, -k ln2 times y here, reduces to exactly 0)
    let elo = select(ec == e, y.mul_add(l, -e), 0.0);
    let t = ec.mul_add(LOG2_E, MAGIC);
    let n = t - MAGIC;
    let rr = (-n).mul_add(LN2_HI, ec) + elo;
    let h = rr.mul_add(poly(rr, &EXPM1_Q32), 0.5);
    let pe = (rr * rr).mul_add(h, rr);
    let s = pow2((t.to_bits() as i64).wrapping_sub(MAGIC.to_bits() as i64));
    pow_signs(x, y, pe.mul_add(s, s)) as f32
}

/// `x^y` for float32 in float64 arithmetic: [`pow_exp_for_f32`] of
/// [`pow_ln_for_f32`].
#[inline(always)]
pub fn pow_f32_in_f64(x: f32, y: f32) -> f32 {
    pow_exp_for_f32(x, y, pow_ln_for_f32(x))
}
