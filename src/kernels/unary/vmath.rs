//! Vectorisable transcendental functions of float32 ([`float32`]) and
//! float64 ([`float64`]).
//!
//! The functions are branch-free (selects instead of branches, bit tricks
//! instead of libm calls), so a loop over a slice compiles to SIMD code. The
//! loops ([`map`], [`apply`], [`zip`] over the functions as types, see
//! [`Unary`]) are compiled three times, as `slices`' are: for the x86-64
//! baseline (SSE2) and, picked at run time, for AVX2+FMA and for AVX-512.
//! All compute the same formula with the same roundings:
//! Rust never contracts `a * b + c` on its own, and the explicit `mul_add`s
//! are one rounding on every path (an FMA instruction on AVX2+FMA and on
//! aarch64, libm's correctly rounded `fma` on the x86-64 baseline), so every
//! path gives bitwise identical results; tests force each path and compare.
//! Integers are handled as bit patterns of the same width (no float/int
//! conversions of 64-bit lanes, which AVX2 lacks).
//!
//! Polynomials are minimax fits (Remez exchange in mpmath:
//! `tools/vmath_fit.py` prints every constant), evaluated as pairs
//! `c[2i] + c[2i+1] x` combined by Horner's rule in `x^2`: a dependency
//! chain half as long as Horner's, which the out-of-order core overlaps
//! across elements.
//!
//! sin, cos and tan reduce their argument by Cody and Waite's method (pi/2
//! in three parts, exact products in FMAs), accurate while |x| stays below
//! [`TRIG_LIMIT_F64`] (2^30) or [`TRIG_LIMIT_F32`] (2^17); the
//! slice kernels ([`map_patched`], [`apply_patched`]) compute every element
//! on the fast path and then recompute the rare larger elements with libm.
//!
//! Accuracy, as measured by the tests (each asserts its bound) and by
//! `tools/vmath_check.py`:
//! - float32: distance in ulps from float64 libm's value rounded to
//!   float32, on every 97th float32 bit pattern (~44M inputs);
//! - float64 vs libm: distance in ulps from glibc's libm (itself within
//!   about 1 ulp; sigmoid and silu against a double-double formula), on
//!   ~7M inputs per function: random bit patterns, uniform draws in the
//!   interesting ranges, edge values and their neighbours; plus values
//!   computed in mpmath;
//! - float64 vs mpmath: error in ulps of the exact value on 30000 uniform
//!   draws (`dump_for_mpmath`: exp on [-745, 709], expm1 and tanh on
//!   [-3, 3], logs on (0, 3], sigmoid and silu on [-40, 40], erf on
//!   [-6, 6], sin, cos and tan on [-10, 10] and sin, cos on [-1e9, 1e9]).
//!
//! | function    | float32 | float64 vs libm | float64 vs mpmath |
//! |-------------|---------|-----------------|-------------------|
//! | exp         | 1       | 1               | 0.94              |
//! | exp_m1      | 1       | 2               | 1.74              |
//! | ln          | 1       | 1               | 0.74              |
//! | ln_1p       | 1       | 1               | 0.79              |
//! | log2        | 2       | 1               | 0.70              |
//! | log10       | 2       | 2               | 0.62              |
//! | tanh        | 4       | 4               | 2.16              |
//! | sigmoid     | 3       | 3               | 2.09              |
//! | silu        | -       | 4               | 2.04              |
//! | log_sigmoid | 2       | 2               | -                 |
//! | erf         | 2       | 1               | 1.01              |
//! | sin         | 1       | 1               | 1.22 (1.34 large) |
//! | cos         | 1       | 1               | 1.39 (1.34 large) |
//! | tan         | 3       | 3               | 2.53              |
//! | sinh        | 2       | 3               | -                 |
//! | cosh        | 4       | 3               | -                 |
//! | atan        | 3       | 1               | -                 |
//! | asin        | 2       | libm            | -                 |
//! | acos        | 1       | libm            | -                 |
//! | softplus    | 2       | 2               | -                 |
//! | exp2        | 1       | 1               | -                 |
//! | logaddexp   | 2       | 2               | -                 |
//! | atan2       | 3       | 2               | -                 |
//! | atanh       | 0.5     | 2               | -                 |
//! | asinh       | 0.5     | 2               | -                 |
//! | acosh       | 0.5     | 2               | -                 |
//! | hypot       | 2       | 2               | -                 |
//! | pow         | 1       | 1               | -                 |
//!
//! pow's rows are over pairs (x, y): random bit patterns, x in (0, 4) with
//! |y| < 40, x over every binade with |y ln x| up to 760 (results from
//! overflow through the subnormals), x within 2^-20 and 2^-7 of 1 with
//! |y ln x| up to 745, subnormal x, negative x with integer y (~12M pairs
//! in float64, ~9M in float32), plus C99's special-value grid. float64 pow
//! is glibc's method without branches: `ln|x|` as a double-double from a
//! 128-entry table (`tools/vmath_pow_table.py`; its loads are gathers on
//! the SIMD paths), then `e^(y ln|x|)` of the double-double product;
//! float32's is computed in float64 with [`ln_f64`]'s table-free log and a
//! shorter exp polynomial. Slice loops run pow in two stages (see
//! [`PowStages`]).
//!
//! Every function returns IEEE results for NaN, ±inf, ±0 and subnormals
//! (sigmoid is 0 where e^-x overflows, as torch's). gelu (both forms) and
//! the derivative helpers are the formulas of ATen's kernels on these.

// Polynomial coefficients are quoted as fitted (shortest round-trip
// decimal).
#![allow(clippy::excessive_precision)]

#[macro_use]
mod common;
pub mod float32;
pub mod float64;
#[cfg(test)]
mod test_support;

pub use float32::*;
pub use float64::*;

use super::super::simd::dispatched;

/// A function of this module as a type, for both float types: loops call
/// `eval` inlined. (Through an `Fn` value the compiler may keep a call to
/// a large function, and the called copy is the baseline build, FMAs as
/// libm calls: ~100x slower.)
pub trait Unary<T: Copy>: Sized {
    /// The branch-free function (for sin, cos and tan: valid below the
    /// reduction's limit).
    fn eval(x: T) -> T;
    /// The function for every input, per element (`eval` unless overridden).
    #[inline(always)]
    fn exact(x: T) -> T {
        Self::eval(x)
    }
    /// `dst[i] = f(src[i])` for `i < dst.len()`, on the best SIMD path.
    fn map(src: &[T], dst: &mut [T]) {
        map::<T, Self>(src, dst)
    }
    /// `buf[i] = f(buf[i])`, on the best SIMD path.
    fn apply(buf: &mut [T]) {
        apply::<T, Self>(buf)
    }
}

/// A function of two arguments as a type (the derivative kernels
/// `grad * f'(x)`), as [`Unary`].
pub trait Binary<T: Copy>: Sized {
    fn eval(a: T, b: T) -> T;
    /// `dst[i] = f(a[i], b[i])` for `i < dst.len()`, on the best SIMD path.
    fn zip(a: &[T], b: &[T], dst: &mut [T]) {
        zip::<T, Self>(a, b, dst)
    }
}

dispatched! {
    /// `dst[i] = K::eval(src[i])` for `i < dst.len()` (`src` at least as
    /// long).
    pub fn map / map_plain / map_avx2<T: Copy, K: Unary<T>>(src: &[T], dst: &mut [T]) {
        let src = &src[..dst.len()];
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = K::eval(s);
        }
    }
}

dispatched! {
    /// `buf[i] = K::eval(buf[i])`.
    pub fn apply / apply_plain / apply_avx2<T: Copy, K: Unary<T>>(buf: &mut [T]) {
        for d in buf.iter_mut() {
            *d = K::eval(*d);
        }
    }
}

dispatched! {
    /// `dst[i] = K::eval(a[i], b[i])` for `i < dst.len()`.
    pub fn zip / zip_plain / zip_avx2<T: Copy, K: Binary<T>>(a: &[T], b: &[T], dst: &mut [T]) {
        let (a, b) = (&a[..dst.len()], &b[..dst.len()]);
        for ((d, &x), &y) in dst.iter_mut().zip(a).zip(b) {
            *d = K::eval(x, y);
        }
    }
}

/// A function with parameters (softplus's beta and threshold) as a value:
/// the loops [`map_with`] and [`zip_with`] call `eval` inlined, as
/// [`Unary`]'s.
pub trait UnaryWith<T: Copy>: Sync {
    fn eval(&self, x: T) -> T;
    /// `dst[i] = eval(src[i])` for `i < dst.len()`, on the best SIMD path.
    fn map(&self, src: &[T], dst: &mut [T])
    where
        Self: Sized,
    {
        map_with(self, src, dst)
    }
    /// `buf[i] = eval(buf[i])`, on the best SIMD path.
    fn apply(&self, buf: &mut [T])
    where
        Self: Sized,
    {
        apply_with(self, buf)
    }
}

/// A two-argument [`UnaryWith`] (its derivative kernels).
pub trait BinaryWith<T: Copy>: Sync {
    fn eval(&self, a: T, b: T) -> T;
}

dispatched! {
    /// `dst[i] = k.eval(src[i])` for `i < dst.len()`.
    pub fn map_with / map_with_plain / map_with_avx2<T: Copy, K: UnaryWith<T>>(k: &K, src: &[T], dst: &mut [T]) {
        let src = &src[..dst.len()];
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = k.eval(s);
        }
    }
}

dispatched! {
    /// `dst[i] = k.eval(a[i], b[i])` for `i < dst.len()`.
    pub fn zip_with / zip_with_plain / zip_with_avx2<T: Copy, K: BinaryWith<T>>(k: &K, a: &[T], b: &[T], dst: &mut [T]) {
        let (a, b) = (&a[..dst.len()], &b[..dst.len()]);
        for ((d, &x), &y) in dst.iter_mut().zip(a).zip(b) {
            *d = k.eval(x, y);
        }
    }
}

dispatched! {
    /// `buf[i] = k.eval(buf[i])`.
    pub fn apply_with / apply_with_plain / apply_with_avx2<T: Copy, K: UnaryWith<T>>(k: &K, buf: &mut [T]) {
        for d in buf.iter_mut() {
            *d = k.eval(*d);
        }
    }
}

/// pow in two stages, so that a loop runs `ln|x|` over a block of
/// elements and then the rest: two dependency chains of half the length
/// per element, which the core overlaps across elements (as one chain,
/// pow ran at about a third of the throughput its instructions allow).
/// `finish(x, y, ln(x))` is the function, bit for bit.
pub trait PowStages<T: Copy> {
    /// `ln|x|` (as a double-double for float64), with its special values.
    fn ln(x: T) -> (f64, f64);
    /// `x^y` from `ln(x)`.
    fn finish(x: T, y: T, l: (f64, f64)) -> T;
}

/// x^y (C99's pow), as [`Binary`], [`PowStages`] and in
/// [`BinaryMethods::vpow`].
pub struct Pow;

impl PowStages<f32> for Pow {
    #[inline(always)]
    fn ln(x: f32) -> (f64, f64) {
        (pow_ln_for_f32(x), 0.0)
    }
    #[inline(always)]
    fn finish(x: f32, y: f32, l: (f64, f64)) -> f32 {
        pow_exp_for_f32(x, y, l.0)
    }
}
impl PowStages<f64> for Pow {
    #[inline(always)]
    fn ln(x: f64) -> (f64, f64) {
        pow_ln_f64(x)
    }
    #[inline(always)]
    fn finish(x: f64, y: f64, l: (f64, f64)) -> f64 {
        pow_exp_f64(x, y, l)
    }
}

impl Binary<f32> for Pow {
    #[inline(always)]
    fn eval(a: f32, b: f32) -> f32 {
        pow_f32(a, b)
    }
    fn zip(a: &[f32], b: &[f32], dst: &mut [f32]) {
        pow_zip::<f32, Pow>(a, b, dst)
    }
}
impl Binary<f64> for Pow {
    #[inline(always)]
    fn eval(a: f64, b: f64) -> f64 {
        pow_f64(a, b)
    }
    fn zip(a: &[f64], b: &[f64], dst: &mut [f64]) {
        pow_zip::<f64, Pow>(a, b, dst)
    }
}

/// Elements per block of the staged pow loops.
const POW_BLOCK: usize = 64;

dispatched! {
    /// `dst[i] = a[i]^b[i]` for `i < dst.len()`, a block at a time:
    /// [`PowStages`].
    pub fn pow_zip / pow_zip_plain / pow_zip_avx2<T: Copy, K: PowStages<T>>(a: &[T], b: &[T], dst: &mut [T]) {
        let (a, b) = (&a[..dst.len()], &b[..dst.len()]);
        let (mut lh, mut ll) = ([0.0; POW_BLOCK], [0.0; POW_BLOCK]);
        for ((a, b), d) in a.chunks(POW_BLOCK).zip(b.chunks(POW_BLOCK)).zip(dst.chunks_mut(POW_BLOCK)) {
            for ((h, l), &x) in lh.iter_mut().zip(ll.iter_mut()).zip(a) {
                (*h, *l) = K::ln(x);
            }
            for ((((d, &x), &y), &h), &l) in d.iter_mut().zip(a).zip(b).zip(&lh).zip(&ll) {
                *d = K::finish(x, y, (h, l));
            }
        }
    }
}

dispatched! {
    /// `dst[i] = src[i]^e` for `i < dst.len()`, a block at a time.
    pub fn pow_by / pow_by_plain / pow_by_avx2<T: Copy, K: PowStages<T>>(e: T, src: &[T], dst: &mut [T]) {
        let src = &src[..dst.len()];
        let (mut lh, mut ll) = ([0.0; POW_BLOCK], [0.0; POW_BLOCK]);
        for (a, d) in src.chunks(POW_BLOCK).zip(dst.chunks_mut(POW_BLOCK)) {
            for ((h, l), &x) in lh.iter_mut().zip(ll.iter_mut()).zip(a) {
                (*h, *l) = K::ln(x);
            }
            for (((d, &x), &h), &l) in d.iter_mut().zip(a).zip(&lh).zip(&ll) {
                *d = K::finish(x, e, (h, l));
            }
        }
    }
}

dispatched! {
    /// `buf[i] = buf[i]^e`, a block at a time.
    pub fn pow_by_inplace / pow_by_inplace_plain / pow_by_inplace_avx2<T: Copy, K: PowStages<T>>(e: T, buf: &mut [T]) {
        let (mut lh, mut ll) = ([0.0; POW_BLOCK], [0.0; POW_BLOCK]);
        for d in buf.chunks_mut(POW_BLOCK) {
            for ((h, l), &x) in lh.iter_mut().zip(ll.iter_mut()).zip(d.iter()) {
                (*h, *l) = K::ln(x);
            }
            for ((d, &h), &l) in d.iter_mut().zip(&lh).zip(&ll) {
                *d = K::finish(*d, e, (h, l));
            }
        }
    }
}

/// `x^e` for a fixed exponent `e` (C99's pow).
pub struct PowBy<T>(pub T);
/// `b^x` for a fixed base `b` (C99's pow; `ln|b|` is loop-invariant, so one
/// stage per element).
pub struct PowOf<T>(pub T);

macro_rules! pow_with {
    ($($t:ty),*) => {$(
        impl UnaryWith<$t> for PowBy<$t> {
            #[inline(always)]
            fn eval(&self, x: $t) -> $t {
                <Pow as Binary<$t>>::eval(x, self.0)
            }
            fn map(&self, src: &[$t], dst: &mut [$t]) {
                pow_by::<$t, Pow>(self.0, src, dst)
            }
            fn apply(&self, buf: &mut [$t]) {
                pow_by_inplace::<$t, Pow>(self.0, buf)
            }
        }
        impl UnaryWith<$t> for PowOf<$t> {
            #[inline(always)]
            fn eval(&self, x: $t) -> $t {
                <Pow as Binary<$t>>::eval(self.0, x)
            }
        }
    )*};
}
pow_with!(f32, f64);

/// softplus with its beta and threshold.
pub struct Softplus<T> {
    pub beta: T,
    pub threshold: T,
}

/// `grad * softplus'(x)` with softplus's beta and threshold.
pub struct SoftplusBackward<T> {
    pub beta: T,
    pub threshold: T,
}

impl UnaryWith<f32> for Softplus<f32> {
    #[inline(always)]
    fn eval(&self, x: f32) -> f32 {
        softplus_f32(x, self.beta, self.threshold)
    }
}
impl UnaryWith<f64> for Softplus<f64> {
    #[inline(always)]
    fn eval(&self, x: f64) -> f64 {
        softplus_f64(x, self.beta, self.threshold)
    }
}
impl BinaryWith<f32> for SoftplusBackward<f32> {
    #[inline(always)]
    fn eval(&self, g: f32, x: f32) -> f32 {
        g * softplus_grad_f32(x, self.beta, self.threshold)
    }
}
impl BinaryWith<f64> for SoftplusBackward<f64> {
    #[inline(always)]
    fn eval(&self, g: f64, x: f64) -> f64 {
        g * softplus_grad_f64(x, self.beta, self.threshold)
    }
}

/// Block length of the patched loops: the fast results of a block are
/// computed in one SIMD call, then its rare slow-path elements redone.
const PATCH_BLOCK: usize = 1024;

/// `dst[i] = K::eval(src[i])` on the SIMD path, except where
/// `slow(src[i])`, which get `K::exact(src[i])` (computed after the
/// block's fast results).
pub fn map_patched<T: Copy, K: Unary<T>>(src: &[T], dst: &mut [T], slow: impl Fn(T) -> bool) {
    let src = &src[..dst.len()];
    for (s, d) in src.chunks(PATCH_BLOCK).zip(dst.chunks_mut(PATCH_BLOCK)) {
        map::<T, K>(s, d);
        if s.iter().fold(false, |a, &v| a | slow(v)) {
            for (d, &v) in d.iter_mut().zip(s) {
                if slow(v) {
                    *d = K::exact(v);
                }
            }
        }
    }
}

/// In-place [`map_patched`].
pub fn apply_patched<T: Copy, K: Unary<T>>(buf: &mut [T], slow: impl Fn(T) -> bool) {
    for c in buf.chunks_mut(PATCH_BLOCK) {
        if c.iter().fold(false, |a, &v| a | slow(v)) {
            let orig = c.to_vec();
            map_patched::<T, K>(&orig, c, &slow);
        } else {
            apply::<T, K>(c);
        }
    }
}

/// Declares unit types implementing [`Unary`] for f32 and f64 with the
/// given functions.
macro_rules! unary_types {
    ($($(#[$doc:meta])* $name:ident: $f32:path, $f64:path;)*) => {$(
        $(#[$doc])*
        pub struct $name;
        impl Unary<f32> for $name {
            #[inline(always)]
            fn eval(x: f32) -> f32 {
                $f32(x)
            }
        }
        impl Unary<f64> for $name {
            #[inline(always)]
            fn eval(x: f64) -> f64 {
                $f64(x)
            }
        }
    )*};
}

unary_types! {
    /// e^x.
    Exp: exp_f32, exp_f64;
    /// e^x - 1.
    ExpM1: exp_m1_f32, exp_m1_f64;
    /// ln x.
    Ln: ln_f32, ln_f64;
    /// ln(1 + x).
    Ln1p: ln_1p_f32, ln_1p_f64;
    /// log2 x.
    Log2: log2_f32, log2_f64;
    /// log10 x.
    Log10: log10_f32, log10_f64;
    /// tanh x.
    Tanh: tanh_f32, tanh_f64;
    /// 1 / (1 + e^-x).
    Sigmoid: sigmoid_f32, sigmoid_f64;
    /// x / (1 + e^-x).
    Silu: silu_f32, silu_f64;
    /// erf x.
    Erf: erf_f32, erf_f64;
    /// gelu (erf form).
    Gelu: gelu_f32, gelu_f64;
    /// gelu (tanh approximation).
    GeluTanh: gelu_tanh_f32, gelu_tanh_f64;
    /// log(sigmoid(x)).
    LogSigmoid: log_sigmoid_f32, log_sigmoid_f64;
    /// sinh x.
    Sinh: sinh_f32, sinh_f64;
    /// cosh x.
    Cosh: cosh_f32, cosh_f64;
    /// atan x.
    Atan: atan_f32, atan_f64;
    /// asin x (float64: libm's, per element).
    Asin: asin_f32, f64::asin;
    /// acos x (float64: libm's, per element).
    Acos: acos_f32, f64::acos;
    /// 2^x.
    Exp2: exp2_f32, exp2_f64;
    /// atanh x (float32 through float64).
    Atanh: atanh_f32_via_f64, atanh_f64;
    /// asinh x (float32 through float64).
    Asinh: asinh_f32_via_f64, asinh_f64;
    /// acosh x (float32 through float64).
    Acosh: acosh_f32_via_f64, acosh_f64;
}

/// Declares unit types implementing [`Binary`] with the given functions.
macro_rules! binary_types {
    ($($(#[$doc:meta])* $name:ident: $f32:path, $f64:path;)*) => {$(
        $(#[$doc])*
        pub struct $name;
        impl Binary<f32> for $name {
            #[inline(always)]
            fn eval(a: f32, b: f32) -> f32 {
                $f32(a, b)
            }
        }
        impl Binary<f64> for $name {
            #[inline(always)]
            fn eval(a: f64, b: f64) -> f64 {
                $f64(a, b)
            }
        }
    )*};
}

binary_types! {
    /// log(e^a + e^b).
    LogAddExp: logaddexp_f32, logaddexp_f64;
    /// log2(2^a + 2^b).
    LogAddExp2: logaddexp2_f32, logaddexp2_f64;
    /// atan2(a, b).
    Atan2: atan2_f32, atan2_f64;
    /// hypot(a, b).
    Hypot: hypot_f32, hypot_f64;
}

/// atan2, hypot and pow as methods of either float type (for the binary
/// op tables, whose kernels are closures over a method).
pub trait BinaryMethods {
    fn vatan2(self, x: Self) -> Self;
    fn vhypot(self, x: Self) -> Self;
    fn vpow(self, e: Self) -> Self;
}
impl BinaryMethods for f32 {
    #[inline(always)]
    fn vatan2(self, x: f32) -> f32 {
        atan2_f32(self, x)
    }
    #[inline(always)]
    fn vhypot(self, x: f32) -> f32 {
        hypot_f32(self, x)
    }
    #[inline(always)]
    fn vpow(self, e: f32) -> f32 {
        pow_f32(self, e)
    }
}
impl BinaryMethods for f64 {
    #[inline(always)]
    fn vatan2(self, x: f64) -> f64 {
        atan2_f64(self, x)
    }
    #[inline(always)]
    fn vhypot(self, x: f64) -> f64 {
        hypot_f64(self, x)
    }
    #[inline(always)]
    fn vpow(self, e: f64) -> f64 {
        pow_f64(self, e)
    }
}

/// Declares unit types implementing [`Unary`] for sin, cos and tan: the
/// reduced function, patched with the checked one beyond the limit.
macro_rules! trig_types {
    ($($(#[$doc:meta])* $name:ident: $r32:path, $c32:path, $r64:path, $c64:path;)*) => {$(
        $(#[$doc])*
        pub struct $name;
        impl Unary<f32> for $name {
            #[inline(always)]
            fn eval(x: f32) -> f32 {
                $r32(x)
            }
            fn exact(x: f32) -> f32 {
                $c32(x)
            }
            fn map(src: &[f32], dst: &mut [f32]) {
                map_patched::<f32, Self>(src, dst, trig_slow_f32)
            }
            fn apply(buf: &mut [f32]) {
                apply_patched::<f32, Self>(buf, trig_slow_f32)
            }
        }
        impl Unary<f64> for $name {
            #[inline(always)]
            fn eval(x: f64) -> f64 {
                $r64(x)
            }
            fn exact(x: f64) -> f64 {
                $c64(x)
            }
            fn map(src: &[f64], dst: &mut [f64]) {
                map_patched::<f64, Self>(src, dst, trig_slow_f64)
            }
            fn apply(buf: &mut [f64]) {
                apply_patched::<f64, Self>(buf, trig_slow_f64)
            }
        }
    )*};
}

trig_types! {
    /// sin x.
    Sin: sin_f32_reduced, sin_f32, sin_f64_reduced, sin_f64;
    /// cos x.
    Cos: cos_f32_reduced, cos_f32, cos_f64_reduced, cos_f64;
    /// tan x.
    Tan: tan_f32_reduced, tan_f32, tan_f64_reduced, tan_f64;
}

/// Declares unit types implementing [`Binary`] as `grad * f(x)`.
macro_rules! grad_types {
    ($($(#[$doc:meta])* $name:ident: $f32:path, $f64:path;)*) => {$(
        $(#[$doc])*
        pub struct $name;
        impl Binary<f32> for $name {
            #[inline(always)]
            fn eval(g: f32, x: f32) -> f32 {
                g * $f32(x)
            }
        }
        impl Binary<f64> for $name {
            #[inline(always)]
            fn eval(g: f64, x: f64) -> f64 {
                g * $f64(x)
            }
        }
    )*};
}

grad_types! {
    /// `grad * gelu'(x)` (erf form).
    GeluBackward: gelu_grad_f32, gelu_grad_f64;
    /// `grad * gelu'(x)` (tanh approximation).
    GeluTanhBackward: gelu_tanh_grad_f32, gelu_tanh_grad_f64;
    /// `grad * silu'(x)`.
    SiluBackward: silu_grad_f32, silu_grad_f64;
}

/// Test helpers shared by the float32 and float64 tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Binary, Unary};
    use crate::kernels::simd::{force_simd_path, simd_paths};

    /// The bits of each element, for bitwise comparisons.
    pub trait Bits: Copy + Default {
        fn bits(self) -> u64;
    }
    impl Bits for f32 {
        fn bits(self) -> u64 {
            if self.is_nan() {
                u64::MAX
            } else {
                self.to_bits() as u64
            }
        }
    }
    impl Bits for f64 {
        fn bits(self) -> u64 {
            if self.is_nan() {
                u64::MAX
            } else {
                self.to_bits()
            }
        }
    }

    /// The values' bits, every NaN as one: which operand's NaN payload a
    /// two-NaN operation keeps depends on the compiler's operand order,
    /// and neither torch nor IEEE promises one.
    fn bits<T: Bits>(v: &[T]) -> Vec<u64> {
        v.iter().map(|&x| x.bits()).collect()
    }

    /// Asserts that `K` over `src` gives the same bits on every path this
    /// CPU runs (baseline, AVX2, AVX-512), out of place and in place, as
    /// per-element `exact`.
    pub fn paths_agree<T: Bits, K: Unary<T>>(src: &[T], name: &str) {
        let scalar: Vec<u64> = src.iter().map(|&x| K::exact(x).bits()).collect();
        for p in simd_paths() {
            force_simd_path(Some(p));
            let mut dst = vec![T::default(); src.len()];
            K::map(src, &mut dst);
            let mut inplace = src.to_vec();
            K::apply(&mut inplace);
            force_simd_path(None);
            assert!(bits(&dst) == scalar, "{name}: {p:?} differs from scalar");
            assert!(bits(&inplace) == scalar, "{name}: {p:?} in place differs");
        }
    }

    /// [`paths_agree`] for a [`Binary`] kernel (`a` against itself reversed).
    pub fn paths_agree2<T: Bits, K: Binary<T>>(a: &[T], name: &str) {
        let b: Vec<T> = a.iter().rev().copied().collect();
        let scalar: Vec<u64> = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| K::eval(x, y).bits())
            .collect();
        for p in simd_paths() {
            force_simd_path(Some(p));
            let mut dst = vec![T::default(); a.len()];
            K::zip(a, &b, &mut dst);
            force_simd_path(None);
            assert!(bits(&dst) == scalar, "{name}: {p:?} differs from scalar");
        }
    }

    /// `$check::<$t, K>($src, "K")` for each kernel `K` listed.
    macro_rules! check_each {
        ($check:ident, $t:ty, $src:expr; $($k:ident),*) => {$(
            crate::kernels::unary::vmath::testing::$check::<$t, crate::kernels::unary::vmath::$k>(
                $src,
                stringify!($k),
            );
        )*};
    }
    pub(crate) use check_each;

    /// [`paths_agree`] and [`paths_agree2`] for every kernel of this
    /// module, in float type `$t`, over `$src`.
    macro_rules! every_kernel_paths_agree {
        ($t:ty, $src:expr) => {{
            let src: &[$t] = $src;
            crate::kernels::unary::vmath::testing::check_each!(paths_agree, $t, src;
                Exp, ExpM1, Ln, Ln1p, Log2, Log10, Tanh, Sigmoid, Silu, Erf, Gelu, GeluTanh,
                LogSigmoid, Sin, Cos, Tan, Sinh, Cosh, Atan, Asin, Acos, Exp2, Atanh, Asinh, Acosh
            );
            crate::kernels::unary::vmath::testing::check_each!(paths_agree2, $t, src;
                GeluBackward, GeluTanhBackward, SiluBackward, LogAddExp, LogAddExp2, Atan2, Hypot
            );
        }};
    }
    pub(crate) use every_kernel_paths_agree;
}
