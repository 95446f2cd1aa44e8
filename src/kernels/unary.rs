//! Elementwise kernels over one operand.

pub mod vmath;

use super::elementwise;
use super::iter::output_layout;
use crate::buffer::{pool, Element, Strided};

/// `out[i] = f(a[i])`; `a` must be of dtype `T`, `out` is of `U`. The
/// result has the layout torch gives it (`a`'s memory order when `a` is
/// dense: a transposed input gives a transposed output).
pub fn map1<T: Element, U: Element>(a: &Strided, f: impl Fn(T) -> U + Sync + Send) -> Strided {
    crate::buffer::pool::or_panic(try_map1(a, f))
}

/// `f` over an integer tensor of any integer dtype, computed in int64 and
/// truncated back to that dtype (torch's wrapping integer arithmetic).
pub fn int_map1(a: &Strided, f: impl Fn(i64) -> i64 + Sync + Send) -> Strided {
    crate::dispatch_ints!(a.dtype(), T => map1::<T, T>(a, |x| T::from_i64(f(x.to_i64()))))
}

/// [`map1`], failing with torch's out-of-memory error when the system
/// refuses the output (a broadcast input can be far larger than its
/// storage).
pub fn try_map1<T: Element, U: Element>(
    a: &Strided,
    f: impl Fn(T) -> U + Sync + Send,
) -> crate::Result<Strided> {
    map1_kernel(a, super::PAR_THRESHOLD, &elementwise::Each(f))
}

/// `f` over a float16 or bfloat16 tensor, each element loaded into
/// float32 and the result rounded back (see [`super::reduced`]).
pub fn try_map1_reduced(
    a: &Strided,
    f: impl Fn(f32) -> f32 + Sync + Send,
) -> crate::Result<Strided> {
    let k = super::reduced::Fused(f);
    match a.dtype() {
        crate::buffer::DType::F16 => {
            map1_kernel::<half::f16, half::f16, _>(a, super::PAR_THRESHOLD, &k)
        }
        crate::buffer::DType::BF16 => {
            map1_kernel::<half::bf16, half::bf16, _>(a, super::PAR_THRESHOLD, &k)
        }
        other => crate::bail!(internal, "try_map1_reduced on {}", other.name()),
    }
}

/// [`map1`] with a kernel, split over the threads from `grain` elements.
pub(crate) fn map1_kernel<T: Element, U: Element, K: elementwise::RowMap<T, U>>(
    a: &Strided,
    grain: usize,
    k: &K,
) -> crate::Result<Strided> {
    debug_assert!(a.dtype() == T::DTYPE);
    let l = a.layout();
    let n = l.numel();
    if n < grain && l.is_contiguous() {
        // A small contiguous input: one slice loop, no iteration plan (its
        // setup would cost more than the work).
        let mut out = pool::try_buffer::<U>(n)?;
        let st = a.storage().read_recursive();
        k.run(&st.as_slice::<T>()[l.offset..l.offset + n], &mut out);
        return Ok(Strided::fresh(
            U::wrap(out),
            crate::buffer::Layout::contiguous(&l.shape),
        ));
    }
    let lo = output_layout(&l.shape, &[l]);
    let mut out = pool::try_buffer::<U>(lo.numel())?;
    {
        let st = a.storage().read_recursive();
        elementwise::map_with(&mut out, &lo, st.as_slice::<T>(), l, grain, k)
            .expect("a fresh dense output and an input inside its storage");
    }
    Ok(Strided::fresh(U::wrap(out), lo))
}

/// `a[i] = f(a[i])` in place. Does not bump the version. `a` must not
/// have two indices on one element (in-place ops check first).
pub fn apply1_inplace<T: Element>(a: &Strided, f: impl Fn(T) -> T + Sync + Send) {
    apply1_grain(a, super::PAR_THRESHOLD, f)
}

/// `f` applied in place to an integer tensor of any integer dtype,
/// computed in int64 and truncated back.
pub fn int_apply1_inplace(a: &Strided, f: impl Fn(i64) -> i64 + Sync + Send) {
    crate::dispatch_ints!(a.dtype(), T => apply1_inplace::<T>(a, |x| T::from_i64(f(x.to_i64()))))
}

fn apply1_grain<T: Element>(a: &Strided, grain: usize, f: impl Fn(T) -> T + Sync + Send) {
    apply1_kernel(a, grain, &elementwise::Each(f))
}

/// [`apply1_inplace`] with a kernel.
pub(crate) fn apply1_kernel<T: Element, K: elementwise::RowApply<T>>(
    a: &Strided,
    grain: usize,
    k: &K,
) {
    let mut st = a.storage().write();
    elementwise::apply_with(st.as_mut_slice::<T>(), a.layout(), grain, k)
        .expect("in-place ops check for overlapping elements first");
}

/// Scalar functions of the pointwise ops, generic over the float type.
/// Constants follow ATen's CPU kernels so values match torch's.
pub mod f {
    use crate::buffer::Float;
    use crate::kernels::math::Erf;

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
    pub fn gelu<T: Erf>(x: T) -> T {
        x * c(0.5) * (T::one() + (x * c(std::f64::consts::FRAC_1_SQRT_2)).erf())
    }
    /// d gelu / dx = Φ(x) + x φ(x).
    #[inline(always)]
    pub fn gelu_grad<T: Erf>(x: T) -> T {
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
    /// NaN-propagating clamp to `[lo, hi]` (`min(max(x, lo), hi)`).
    #[inline(always)]
    pub fn clamp<T: Float>(x: T, lo: T, hi: T) -> T {
        x.max_val(lo).min_val(hi)
    }
    /// Whether ATen computes `x^e` by a shortcut ([`pow_scalar`]) rather
    /// than pow.
    #[inline]
    pub fn pow_has_shortcut(e: f64) -> bool {
        [2.0, 3.0, 0.5, -0.5, -1.0, -2.0].contains(&e)
    }
    /// torch's `pow(x, e)` for a scalar exponent: exact shortcuts for the
    /// exponents ATen special-cases, vmath's pow otherwise (per element:
    /// slices take `vmath::PowBy`).
    #[inline(always)]
    pub fn pow_scalar<T: Float + super::vmath::BinaryMethods>(x: T, e: f64) -> T {
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
            x.vpow(c(e))
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
