//! Vectorisable transcendental functions of float32 ([`float32`]) and
//! float64 ([`float64`]).
//!
//! The functions are branch-free (selects instead of branches, bit tricks
//! instead of libm calls), so a loop over a slice compiles to SIMD code. The
//! loops are `super::super::slices`', compiled twice: for the x86-64
//! baseline (SSE2) and, picked at run time, for AVX2+FMA. Both compute the
//! same formula with the same roundings:
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
//! Accuracy (max error against a higher-precision reference, measured by
//! the tests over the whole range: float32 against float64 libm on every
//! 97th float32; float64 against libm on ~10^7 random and edge inputs, plus
//! constants computed in mpmath; 0.5 ulp of the error is the reference's
//! own rounding):
//!
//! | function       | float32 (ulp) | float64 (ulp) |
//! |----------------|---------------|---------------|
//! | exp            | 2             | 1             |
//! | ln             | 2             | 1             |
//! | ln_1p          | 2             | 1             |
//! | exp_m1         | 2             | 2             |
//! | tanh           | 4             | 2             |
//! | sigmoid, silu  | 4             | 3             |
//! | sin, cos       | 2             | 1             |
//! | tan            | 3             | 2             |
//! | erf            | 2             | 1             |
//!
//! Every function returns IEEE results for NaN, ±inf, ±0 and subnormals
//! (sigmoid is 0 where e^-x overflows, as torch's). gelu (both forms) and
//! the derivative helpers are the formulas of ATen's kernels on these.

// Polynomial coefficients are quoted as fitted (shortest round-trip
// decimal).
#![allow(clippy::excessive_precision)]

pub mod float32;
pub mod float64;

pub use float32::*;
pub use float64::*;

use super::super::slices;

/// Block length of the patched loops: the fast results of a block are
/// computed in one SIMD call, then its rare slow-path elements redone.
const PATCH_BLOCK: usize = 1024;

/// `dst[i] = fast(src[i])` on the SIMD path, except where `slow(src[i])`,
/// which get `exact(src[i])` (computed after the block's fast results).
/// `fast` must be branch-free; `exact` may call libm.
pub fn map_patched<T: Copy>(
    src: &[T],
    dst: &mut [T],
    fast: impl Fn(T) -> T,
    slow: impl Fn(T) -> bool,
    exact: impl Fn(T) -> T,
) {
    let src = &src[..dst.len()];
    for (s, d) in src.chunks(PATCH_BLOCK).zip(dst.chunks_mut(PATCH_BLOCK)) {
        slices::map(s, d, &fast);
        if s.iter().fold(false, |a, &v| a | slow(v)) {
            for (d, &v) in d.iter_mut().zip(s) {
                if slow(v) {
                    *d = exact(v);
                }
            }
        }
    }
}

/// In-place [`map_patched`]: `buf[i] = fast(buf[i])`, or `exact(buf[i])`
/// where `slow(buf[i])`.
pub fn apply_patched<T: Copy>(
    buf: &mut [T],
    fast: impl Fn(T) -> T,
    slow: impl Fn(T) -> bool,
    exact: impl Fn(T) -> T,
) {
    for c in buf.chunks_mut(PATCH_BLOCK) {
        if c.iter().fold(false, |a, &v| a | slow(v)) {
            let orig = c.to_vec();
            slices::map(&orig, c, &fast);
            for (d, &v) in c.iter_mut().zip(&orig) {
                if slow(v) {
                    *d = exact(v);
                }
            }
        } else {
            slices::apply(c, &fast);
        }
    }
}

/// The functions of this module by float type, for code generic over it
/// (the derivative kernels run one closure body for both).
pub trait VFloat: Copy {
    fn v_exp(self) -> Self;
    fn v_tanh(self) -> Self;
    fn v_sigmoid(self) -> Self;
    fn v_gelu_grad(self) -> Self;
    fn v_gelu_tanh_grad(self) -> Self;
    fn v_silu_grad(self) -> Self;
}

macro_rules! impl_vfloat {
    ($t:ty, $exp:path, $tanh:path, $sigmoid:path, $gg:path, $gtg:path, $sg:path) => {
        impl VFloat for $t {
            #[inline(always)]
            fn v_exp(self) -> Self {
                $exp(self)
            }
            #[inline(always)]
            fn v_tanh(self) -> Self {
                $tanh(self)
            }
            #[inline(always)]
            fn v_sigmoid(self) -> Self {
                $sigmoid(self)
            }
            #[inline(always)]
            fn v_gelu_grad(self) -> Self {
                $gg(self)
            }
            #[inline(always)]
            fn v_gelu_tanh_grad(self) -> Self {
                $gtg(self)
            }
            #[inline(always)]
            fn v_silu_grad(self) -> Self {
                $sg(self)
            }
        }
    };
}
impl_vfloat!(
    f32,
    exp_f32,
    tanh_f32,
    sigmoid_f32,
    gelu_grad_f32,
    gelu_tanh_grad_f32,
    silu_grad_f32
);
impl_vfloat!(
    f64,
    exp_f64,
    tanh_f64,
    sigmoid_f64,
    gelu_grad_f64,
    gelu_tanh_grad_f64,
    silu_grad_f64
);

/// Test helpers shared by the float32 and float64 tests.
#[cfg(test)]
pub(crate) mod testing {
    use crate::kernels::slices::{self, force_simd_path, SimdPath};

    /// The bits of each element, for bitwise comparisons.
    pub trait Bits: Copy {
        fn bits(self) -> u64;
    }
    impl Bits for f32 {
        fn bits(self) -> u64 {
            self.to_bits() as u64
        }
    }
    impl Bits for f64 {
        fn bits(self) -> u64 {
            self.to_bits()
        }
    }

    /// Asserts that `f` over `src` gives the same bits on the baseline and
    /// the AVX2 path, out of place and in place, and as a scalar call.
    pub fn paths_agree<T: Bits + Default>(src: &[T], f: impl Fn(T) -> T, name: &str) {
        let bits = |v: &[T]| v.iter().map(|x| x.bits()).collect::<Vec<_>>();
        let scalar: Vec<u64> = src.iter().map(|&x| f(x).bits()).collect();
        for p in [SimdPath::Baseline, SimdPath::Avx2] {
            force_simd_path(Some(p));
            let mut dst = vec![T::default(); src.len()];
            slices::map(src, &mut dst, &f);
            let mut inplace = src.to_vec();
            slices::apply(&mut inplace, &f);
            force_simd_path(None);
            assert!(bits(&dst) == scalar, "{name}: {p:?} differs from scalar");
            assert!(bits(&inplace) == scalar, "{name}: {p:?} in place differs");
        }
    }
}
