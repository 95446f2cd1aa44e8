//! Elementwise kernels over one operand.

pub mod vmath;

use super::slices;
use crate::parallel::for_each_chunk_mut;
use crate::tensor::layout::for_each_offset;
use crate::tensor::{pool, Element, Tensor};

/// `out[i] = f(a[i])`; `a` must be of dtype `T`, `out` is of `U`.
pub fn map1<T: Element, U: Element>(a: &Tensor, f: impl Fn(T) -> U + Sync + Send) -> Tensor {
    debug_assert!(a.dtype() == T::DTYPE);
    let st = a.storage().read_recursive();
    let d = st.as_slice::<T>();
    let l = a.layout();
    let out: Vec<U> = match l.contiguous_range() {
        Some(r) => map_run(&d[r], f),
        None => {
            let mut out = pool::with_capacity(l.numel());
            for_each_offset(&l.shape, &l.strides, l.offset, |o| out.push(f(d[o])));
            out
        }
    };
    Tensor::from_data(U::wrap(out), a.shape())
}

/// `g(src[i])` for one contiguous run, split over the threads when long.
pub(crate) fn map_run<T: Element, U: Element>(src: &[T], g: impl Fn(T) -> U + Sync) -> Vec<U> {
    if src.len() < super::PAR_THRESHOLD {
        return src.iter().map(|&x| g(x)).collect();
    }
    let mut out = pool::buffer(src.len());
    for_each_chunk_mut(&mut out, super::PAR_THRESHOLD, |s, o| {
        slices::map(&src[s..], o, &g)
    });
    out
}

/// `a[i] = f(a[i])` in place. Does not bump the version.
pub fn apply1_inplace<T: Element>(a: &Tensor, f: impl Fn(T) -> T + Sync + Send) {
    let mut st = a.storage().write();
    let d = st.as_mut_slice::<T>();
    let l = a.layout();
    match l.contiguous_range() {
        Some(r) => for_each_chunk_mut(&mut d[r], super::PAR_THRESHOLD, |_, c| slices::apply(c, &f)),
        None => for_each_offset(&l.shape, &l.strides, l.offset, |o| d[o] = f(d[o])),
    }
}

/// Elements from which a SIMD transcendental kernel (about 2 ns per
/// element) is split over the threads.
const SIMD_MIN_PAR: usize = 1 << 13;

/// `out[i] = f(a[i])` for a float32 tensor, running `f` (a branch-free
/// function from [`vmath`]) over contiguous runs on the best SIMD path.
pub fn map1_f32_simd(a: &Tensor, f: impl Fn(f32) -> f32 + Sync + Send) -> Tensor {
    debug_assert!(a.dtype() == crate::DType::F32);
    let st = a.storage().read_recursive();
    let d = st.as_slice::<f32>();
    let l = a.layout();
    let gathered: Vec<f32>;
    let src: &[f32] = match l.contiguous_range() {
        Some(r) => &d[r],
        None => {
            gathered = crate::kernels::copy::gather(d, a, |v| v);
            &gathered
        }
    };
    let mut out = pool::buffer::<f32>(src.len());
    for_each_chunk_mut(&mut out, SIMD_MIN_PAR, |s, o| slices::map(&src[s..], o, &f));
    Tensor::from_data(f32::wrap(out), a.shape())
}

/// `a[i] = f(a[i])` in place for a float32 tensor, SIMD over contiguous
/// memory (strided tensors take the per-element loop; the results are the
/// same). Does not bump the version.
pub fn apply1_f32_simd_inplace(a: &Tensor, f: impl Fn(f32) -> f32 + Sync + Send) {
    let range = a.layout().contiguous_range();
    let Some(r) = range else {
        return apply1_inplace::<f32>(a, f);
    };
    let mut st = a.storage().write();
    let buf = &mut st.as_mut_slice::<f32>()[r];
    for_each_chunk_mut(buf, SIMD_MIN_PAR, |_, c| slices::apply(c, &f));
}

/// Scalar functions of the pointwise ops, generic over the float type.
/// Constants follow ATen's CPU kernels so values match torch's.
pub mod f {
    use crate::tensor::Float;

    #[inline(always)]
    fn c<T: Float>(v: f64) -> T {
        T::from_f64(v)
    }

    /// `(0 < x) - (x < 0)`: 0 for NaN and for ±0, as torch.
    #[inline(always)]
    pub fn sign<T: Float>(x: T) -> T {
        T::from_bool(T::zero() < x) - T::from_bool(x < T::zero())
    }
    #[inline(always)]
    pub fn sigmoid<T: Float>(x: T) -> T {
        T::one() / (T::one() + (-x).exp())
    }
    /// NaN-propagating `max(x, 0)`.
    #[inline(always)]
    pub fn relu<T: Float>(x: T) -> T {
        if x < T::zero() {
            T::zero()
        } else {
            x
        }
    }
    /// `x * Φ(x)` with the exact normal CDF.
    #[inline(always)]
    pub fn gelu<T: Float>(x: T) -> T {
        x * c(0.5) * (T::one() + (x * c(std::f64::consts::FRAC_1_SQRT_2)).erf())
    }
    /// d gelu / dx = Φ(x) + x φ(x).
    #[inline(always)]
    pub fn gelu_grad<T: Float>(x: T) -> T {
        let k_alpha: T =
            c(std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2 * 0.5);
        let cdf = c::<T>(0.5) * (T::one() + (x * c(std::f64::consts::FRAC_1_SQRT_2)).erf());
        let pdf = (c::<T>(-0.5) * x * x).exp() * k_alpha;
        cdf + x * pdf
    }
    const K_BETA: f64 = std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5;
    const K_KAPPA: f64 = 0.044715;
    /// `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
    #[inline(always)]
    pub fn gelu_tanh<T: Float>(x: T) -> T {
        let inner = c::<T>(K_BETA) * (x + c::<T>(K_KAPPA) * x * x * x);
        c::<T>(0.5) * x * (T::one() + inner.tanh())
    }
    #[inline(always)]
    pub fn gelu_tanh_grad<T: Float>(x: T) -> T {
        let x_sq = x * x;
        let inner = c::<T>(K_BETA) * (x + c::<T>(K_KAPPA) * x_sq * x);
        let t = inner.tanh();
        let left = c::<T>(0.5) * x;
        let right = T::one() + t;
        let left_d = c::<T>(0.5) * right;
        let right_d =
            left * (T::one() - t * t) * c::<T>(K_BETA) * (T::one() + c::<T>(3.0 * K_KAPPA) * x_sq);
        left_d + right_d
    }
    #[inline(always)]
    pub fn silu<T: Float>(x: T) -> T {
        x / (T::one() + (-x).exp())
    }
    /// d silu / dx = s (1 + x (1 - s)), s = sigmoid(x).
    #[inline(always)]
    pub fn silu_grad<T: Float>(x: T) -> T {
        let s = sigmoid(x);
        s * (T::one() + x * (T::one() - s))
    }
    /// `log1p(exp(βx)) / β`, or `x` where `βx > threshold`.
    #[inline(always)]
    pub fn softplus<T: Float>(x: T, beta: T, threshold: T) -> T {
        let bx = x * beta;
        if bx > threshold {
            x
        } else {
            bx.exp().ln_1p() / beta
        }
    }
    /// d softplus / dx = sigmoid(βx), or 1 where `βx > threshold`.
    #[inline(always)]
    pub fn softplus_grad<T: Float>(x: T, beta: T, threshold: T) -> T {
        let bx = x * beta;
        if bx > threshold {
            T::one()
        } else {
            let z = bx.exp();
            z / (z + T::one())
        }
    }
    /// NaN-propagating clamp to `[lo, hi]` (`min(max(x, lo), hi)`).
    #[inline(always)]
    pub fn clamp<T: Float>(x: T, lo: T, hi: T) -> T {
        x.max_val(lo).min_val(hi)
    }
    /// torch's `pow(x, e)` for a scalar exponent: exact shortcuts for the
    /// exponents ATen special-cases, `powf` otherwise.
    #[inline(always)]
    pub fn pow_scalar<T: Float>(x: T, e: f64) -> T {
        if e == 2.0 {
            x * x
        } else if e == 3.0 {
            x * x * x
        } else if e == 0.5 {
            x.sqrt()
        } else if e == -0.5 {
            T::one() / x.sqrt()
        } else if e == -1.0 {
            T::one() / x
        } else if e == -2.0 {
            T::one() / (x * x)
        } else {
            x.powf(c(e))
        }
    }
}

/// Integer power as torch computes it: wrapping exponentiation by squaring;
/// a negative exponent gives 0 except for bases ±1.
#[inline]
pub fn ipow(base: i64, exp: i64) -> i64 {
    if exp < 0 {
        return match base {
            1 => 1,
            -1 => {
                if exp & 1 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    let (mut b, mut e, mut r) = (base, exp, 1i64);
    while e > 0 {
        if e & 1 == 1 {
            r = r.wrapping_mul(b);
        }
        b = b.wrapping_mul(b);
        e >>= 1;
    }
    r
}
