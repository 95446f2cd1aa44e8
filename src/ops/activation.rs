//! More activations, each with its derivative stated through other ops (so
//! every order of gradient follows). The masks and slopes are computed from
//! the saved input without history: they are piecewise constant.
//!
//! | op                              | d/dself                                              |
//! |---------------------------------|------------------------------------------------------|
//! | leaky_relu(x, s)                | grad * (x > 0 ? 1 : s)                               |
//! | hardtanh(x, lo, hi)             | grad * (lo < x < hi)                                 |
//! | elu(x, alpha, scale, in_scale)  | grad * (x > 0 ? scale : scale alpha in_scale e^(in_scale x)) |
//! | logsigmoid(x)                   | grad * sigmoid(-x)                                   |
//!
//! relu6 is hardtanh(0, 6); selu and celu are elu with torch's constants.

use super::unary::{float_kernel_inplace, float_map2, float_map2_simd, Saves};
use crate::autograd::{no_grad, record};
use crate::kernels::binary::map2;
use crate::kernels::lanes::VecFloat;
use crate::kernels::unary::vmath;
use crate::kernels::vmap;
use crate::tensor::{DType, Element, Scalar, Tensor};
use crate::{bail, Result};
use std::sync::Arc;

/// A piecewise-constant slope of an activation's input.
pub(crate) type Slope = Arc<dyn Fn(&Tensor) -> Result<Tensor> + Send + Sync>;

/// `grad * slope(x)` as an op of (grad, x), like torch's
/// leaky_relu_backward and hardtanh_backward: its derivative in grad is
/// the same op, in x zero (so a second derivative exists and is zero).
pub(crate) fn piecewise_backward(
    grad: &Tensor,
    x: &Tensor,
    name: &'static str,
    slope: Slope,
) -> Result<Tensor> {
    let rec = record(name, &[grad, x]);
    let out = {
        let _g = no_grad();
        grad.mul(&slope(x)?)?
    };
    rec.save("self", x).finish(out, move |c| {
        let x = c.saved(0)?;
        let dgrad = c.grad_for(0, || piecewise_backward(c.grad(), &x, name, slope.clone()))?;
        let dx = c.grad_for(1, || Ok(x.zeros_like()))?;
        Ok(vec![dgrad, dx])
    })
}

/// selu's alpha and scale (torch's constants).
pub const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
pub const SELU_SCALE: f64 = 1.050_700_987_355_480_5;

/// `f(v, p)` over a floating tensor in its own dtype, with the parameters
/// `p` converted to it; other dtypes are torch's "not implemented" error.
/// `f` is a function item (inlined into the SIMD loop, see [`Params`]).
fn float_params<const N: usize, F32, F64>(
    x: &Tensor,
    kernel: &str,
    p: [f64; N],
    f32f: F32,
    f64f: F64,
) -> Result<Tensor>
where
    F32: Fn(f32, [f32; N]) -> f32 + Sync,
    F64: Fn(f64, [f64; N]) -> f64 + Sync,
{
    Ok(match x.dtype() {
        DType::F32 => {
            let p = p.map(|v| v as f32);
            Tensor::from(vmap::map1_with(x, Params(f32f, p))?)
        }
        DType::F64 => Tensor::from(vmap::map1_with(x, Params(f64f, p))?),
        dt if dt.is_reduced_float() => {
            let p = p.map(|v| v as f32);
            Tensor::from(vmap::map1_with(
                &*x.try_cast_raw(DType::F32)?,
                Params(f32f, p),
            )?)
            .try_cast_raw(dt)?
        }
        dt => bail!(
            not_implemented,
            "\"{kernel}\" not implemented for '{}'",
            dt.scalar_type_name()
        ),
    })
}

/// A function of an element and fixed parameters, as a SIMD kernel.
struct Params<F, P>(F, P);

impl<T: Copy + Sync, const N: usize, F: Fn(T, [T; N]) -> T + Sync> vmath::UnaryWith<T>
    for Params<F, [T; N]>
{
    #[inline(always)]
    fn eval(&self, x: T) -> T {
        (self.0)(x, self.1)
    }
}

#[inline(always)]
fn leaky<T: Element + std::ops::Mul<Output = T>>(v: T, [s]: [T; 1]) -> T {
    if v > T::from_f64(0.0) {
        v
    } else {
        v * s
    }
}

#[inline(always)]
fn leaky_slope<T: Element>(v: T, [s]: [T; 1]) -> T {
    if v > T::from_f64(0.0) {
        T::from_f64(1.0)
    } else {
        s
    }
}

#[inline(always)]
fn clamp_to<T: Element>(v: T, [lo, hi]: [T; 2]) -> T {
    if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    }
}

#[inline(always)]
fn inside<T: Element>(v: T, [lo, hi]: [T; 2]) -> T {
    T::from_f64(if v > lo && v < hi { 1.0 } else { 0.0 })
}

/// elu's value: `scale * v` where positive, `scale * alpha * (e^(in_scale
/// v) - 1)` elsewhere (both sides computed, so the loop has no branch).
#[inline(always)]
fn elu_of<T: VecFloat>(v: T, [a, s, i]: [T; 3]) -> T {
    let negative = s * a * (i * v).vexp_m1();
    if v > T::from_f64(0.0) {
        s * v
    } else {
        negative
    }
}

impl Tensor {
    /// `x` where positive, `negative_slope * x` elsewhere.
    pub fn leaky_relu(&self, negative_slope: f64) -> Result<Tensor> {
        let rec = record("LeakyReluBackward0", &[self]).attr("negative_slope", negative_slope);
        let p = [negative_slope];
        let out = float_params(self, "leaky_relu_cpu", p, leaky, leaky)?;
        let slope: Slope =
            Arc::new(move |x| float_params(x, "leaky_relu_cpu", p, leaky_slope, leaky_slope));
        self.unary_record(rec, out, Saves::Input, move |g, x| {
            piecewise_backward(g, &x.unwrap(), "LeakyReluBackwardBackward0", slope.clone())
        })
    }

    /// `x` clamped into [min_val, max_val]; the gradient is zero at the
    /// bounds themselves (torch's hardtanh_backward).
    pub fn hardtanh(&self, min_val: f64, max_val: f64) -> Result<Tensor> {
        if min_val > max_val {
            bail!(value, "min_val cannot be greater than max_val");
        }
        if self.dtype() == DType::Bool {
            bail!(runtime, "Bool inputs not supported for hardtanh");
        }
        if self.dtype().is_integral() {
            // (the check reads the limits as integers: -0.5 passes)
            if self.dtype() == DType::U8 && (min_val as i64) < 0 {
                bail!(
                    runtime,
                    "cannot do hardtanh on an unsigned type with negative limits"
                );
            }
            // Integers are clamped to the limits truncated, as torch's
            // kernel converts them to the input's type.
            let (lo, hi) = (Scalar::Int(min_val as i64), Scalar::Int(max_val as i64));
            return self.clamp(Some(lo), Some(hi));
        }
        let rec = record("HardtanhBackward0", &[self]);
        let p = [min_val, max_val];
        let out = float_params(self, "hardtanh_cpu", p, clamp_to, clamp_to)?;
        let slope: Slope = Arc::new(move |x| float_params(x, "hardtanh_cpu", p, inside, inside));
        self.unary_record(rec, out, Saves::Input, move |g, x| {
            piecewise_backward(g, &x.unwrap(), "HardtanhBackwardBackward0", slope.clone())
        })
    }

    /// hardtanh(x, 0, 6).
    pub fn relu6(&self) -> Result<Tensor> {
        self.hardtanh(0.0, 6.0)
    }

    /// `scale * x` where positive, `scale * alpha * (exp(input_scale * x) -
    /// 1)` elsewhere (elu; selu and celu are special cases).
    pub fn elu(&self, alpha: f64, scale: f64, input_scale: f64) -> Result<Tensor> {
        self.elu_named("EluBackward0", alpha, scale, input_scale)
    }

    fn elu_named(
        &self,
        name: &'static str,
        alpha: f64,
        scale: f64,
        input_scale: f64,
    ) -> Result<Tensor> {
        let rec = record(name, &[self]);
        let p = [alpha, scale, input_scale];
        let out = float_params(self, "elu_cpu", p, elu_of, elu_of)?;
        self.unary_record(rec, out, Saves::Input, move |g, x| {
            // The negative side's slope is a function of x (differentiable);
            // the choice of side is not.
            // At exactly 0 the slope is the negative side's, but (as in
            // torch's elu_double_backward) it does not vary there.
            let x = x.unwrap();
            let negative = x
                .mul_scalar(input_scale)?
                .exp()?
                .mul_scalar(scale * alpha * input_scale)?;
            let zero = x.wrap_scalar(0.0.into());
            let negative = Tensor::where_cond(&x.lt(&zero)?, &negative, &negative.detach())?;
            let positive = x.zeros_like().add_scalar(scale)?;
            g.mul(&Tensor::where_cond(&x.gt(&zero)?, &positive, &negative)?)
        })
    }

    /// elu with torch's selu constants.
    pub fn selu(&self) -> Result<Tensor> {
        self.elu(SELU_ALPHA, SELU_SCALE, 1.0)
    }

    /// elu(x, alpha, 1, 1 / alpha).
    pub fn celu(&self, alpha: f64) -> Result<Tensor> {
        if alpha == 0.0 {
            bail!(runtime, "ZeroDivisionError");
        }
        self.elu_named("CeluBackward0", alpha, 1.0, 1.0 / alpha)
    }

    /// `log(sigmoid(x))` = `min(x, 0) - log1p(exp(-|x|))` (stable for
    /// large |x|).
    pub fn logsigmoid(&self) -> Result<Tensor> {
        let rec = record("LogSigmoidBackward0", &[self]);
        let out = self.in_compute_dtype(|x| {
            Ok(match x.dtype() {
                DType::F32 => Tensor::from(vmap::map1::<f32, vmath::LogSigmoid>(x)?),
                DType::F64 => Tensor::from(vmap::map1::<f64, vmath::LogSigmoid>(x)?),
                dt => bail!(
                    not_implemented,
                    "\"log_sigmoid_cpu\" not implemented for '{}'",
                    dt.scalar_type_name()
                ),
            })
        })?;
        self.unary_record(rec, out, Saves::Input, |g, x| {
            g.mul(&x.unwrap().neg()?.sigmoid()?)
        })
    }
}

impl Tensor {
    pub fn leaky_relu_(&self, negative_slope: f64) -> Result<()> {
        self.apply_inplace("leaky_relu_", &[], |t| t.leaky_relu(negative_slope))
    }
    pub fn hardtanh_(&self, min_val: f64, max_val: f64) -> Result<()> {
        self.apply_inplace("hardtanh_", &[], |t| t.hardtanh(min_val, max_val))
    }
    pub fn elu_(&self, alpha: f64, scale: f64, input_scale: f64) -> Result<()> {
        self.apply_inplace("elu_", &[], |t| t.elu(alpha, scale, input_scale))
    }
}

/// `1 - t`.
fn one_minus(t: &Tensor) -> Result<Tensor> {
    t.neg()?.add_scalar(1.0)
}

impl Tensor {
    /// GELU with `approximate` = "none" (exact, erf) or "tanh".
    /// d/dself = gelu_backward(grad, self)
    pub fn gelu(&self, approximate: &str) -> Result<Tensor> {
        let tanh = gelu_mode(approximate)?;
        let mode = if tanh { "tanh" } else { "none" };
        let rec = record("GeluBackward0", &[self]).attr("approximate", mode);
        let out = self.in_compute_dtype(|x| {
            Ok(match (x.dtype(), tanh) {
                (DType::F32, false) => Tensor::from(vmap::map1::<f32, vmath::Gelu>(x)?),
                (DType::F64, false) => Tensor::from(vmap::map1::<f64, vmath::Gelu>(x)?),
                (DType::F32, true) => Tensor::from(vmap::map1::<f32, vmath::GeluTanh>(x)?),
                (DType::F64, true) => Tensor::from(vmap::map1::<f64, vmath::GeluTanh>(x)?),
                (dt, _) => bail!(
                    not_implemented,
                    "\"GeluKernelImpl\" not implemented for '{}'",
                    dt.scalar_type_name()
                ),
            })
        })?;
        self.unary_record(rec, out, Saves::Input, move |g, s| {
            g.gelu_backward(&s.unwrap(), tanh)
        })
    }
    /// `self * sigmoid(self)`; d/dself = silu_backward(grad, self)
    pub fn silu(&self) -> Result<Tensor> {
        let rec = record("SiluBackward0", &[self]);
        let out = self.in_compute_dtype(|x| {
            Ok(match x.dtype() {
                DType::F32 => Tensor::from(vmap::map1::<f32, vmath::Silu>(x)?),
                DType::F64 => Tensor::from(vmap::map1::<f64, vmath::Silu>(x)?),
                dt => bail!(
                    not_implemented,
                    "\"silu_cpu\" not implemented for '{}'",
                    dt.scalar_type_name()
                ),
            })
        })?;
        self.unary_record(rec, out, Saves::Input, |g, s| g.silu_backward(&s.unwrap()))
    }
    /// `log(1 + exp(β self)) / β`, linear where `β self > threshold`.
    /// d/dself = softplus_backward(grad, self, β, threshold)
    pub fn softplus(&self, beta: f64, threshold: f64) -> Result<Tensor> {
        let rec = record("SoftplusBackward0", &[self]);
        let out = self.in_compute_dtype(|x| {
            Ok(match x.dtype() {
                DType::F32 => Tensor::from(vmap::map1_with(
                    x,
                    vmath::Softplus {
                        beta: beta as f32,
                        threshold: threshold as f32,
                    },
                )?),
                DType::F64 => {
                    Tensor::from(vmap::map1_with(x, vmath::Softplus { beta, threshold })?)
                }
                dt => bail!(
                    not_implemented,
                    "\"softplus_cpu\" not implemented for '{}'",
                    dt.scalar_type_name()
                ),
            })
        })?;
        self.unary_record(rec, out, Saves::Input, move |g, s| {
            g.softplus_backward(&s.unwrap(), beta, threshold)
        })
    }
    // ----- derivative ops (self is the incoming gradient) -----

    /// `self * (1 - y^2)`: tanh's derivative, `y` = tanh's output.
    pub fn tanh_backward(&self, y: &Tensor) -> Result<Tensor> {
        let rec = record("TanhBackwardBackward0", &[self, y]);
        let out = float_map2!(self, y, |g, y| g * (1.0 - y * y));
        rec.save("grad_output", self)
            .save("output", y)
            .finish(out, |c| {
                let (g, y) = (c.saved(0)?, c.saved(1)?);
                let gg = c.grad();
                let dg = c.grad_for(0, || gg.tanh_backward(&y))?;
                let dy = c.grad_for(1, || gg.mul(&g)?.mul(&y)?.mul_scalar(-2.0))?;
                Ok(vec![dg, dy])
            })
    }
    /// `self * y * (1 - y)`: sigmoid's derivative, `y` = sigmoid's output.
    pub fn sigmoid_backward(&self, y: &Tensor) -> Result<Tensor> {
        let rec = record("SigmoidBackwardBackward0", &[self, y]);
        let out = float_map2!(self, y, |g, y| g * y * (1.0 - y));
        rec.save("grad_output", self)
            .save("output", y)
            .finish(out, |c| {
                let (g, y) = (c.saved(0)?, c.saved(1)?);
                let gg = c.grad();
                let dg = c.grad_for(0, || gg.sigmoid_backward(&y))?;
                let dy = c.grad_for(1, || gg.mul(&g)?.mul(&one_minus(&y.mul_scalar(2.0)?)?))?;
                Ok(vec![dg, dy])
            })
    }
    /// `self` where `y > 0`, else 0 (relu's derivative; `y` = relu's output,
    /// so NaN outputs pass the gradient as in torch).
    pub fn threshold_backward(&self, y: &Tensor) -> Result<Tensor> {
        let dt = self.result_type(y);
        let rec = record("ThresholdBackwardBackward0", &[self, y]);
        let out = if dt.is_floating() {
            float_map2!(self, y, |g, y| if y <= 0.0 { 0.0 } else { g })
        } else {
            let (g, yy) = (self.cast_raw(DType::I64), y.cast_raw(DType::I64));
            Tensor::from(map2::<i64, i64>(
                &g,
                &yy,
                |g, y| if y <= 0 { 0 } else { g },
            )?)
            .try_cast_raw(dt)?
        };
        rec.save("self", y).finish(out, |c| {
            let y = c.saved(0)?;
            let dg = c.grad_for(0, || c.grad().threshold_backward(&y))?;
            // torch's `self: zeros_like(grad)`: a defined zero, so relu's
            // input counts as used by a gradient taken through it
            let dy = c.grad_for(1, || Ok(c.grad().zeros_like()))?;
            Ok(vec![dg, dy])
        })
    }
    /// `self * gelu'(x)` (`tanh` selects the tanh approximation).
    pub fn gelu_backward(&self, x: &Tensor, tanh: bool) -> Result<Tensor> {
        let rec = record("GeluBackwardBackward0", &[self, x]);
        let out = if tanh {
            float_map2_simd!(self, x, vmath::GeluTanhBackward)
        } else {
            float_map2_simd!(self, x, vmath::GeluBackward)
        };
        rec.save("grad_output", self)
            .save("self", x)
            .finish(out, move |c| {
                let (g, x) = (c.saved(0)?, c.saved(1)?);
                let gg = c.grad();
                let dg = c.grad_for(0, || gg.gelu_backward(&x, tanh))?;
                let dx = c.grad_for(1, || gg.mul(&g)?.mul(&gelu_second_derivative(&x, tanh)?))?;
                Ok(vec![dg, dx])
            })
    }
    /// `self * silu'(x)`.
    pub fn silu_backward(&self, x: &Tensor) -> Result<Tensor> {
        let rec = record("SiluBackwardBackward0", &[self, x]);
        let out = float_map2_simd!(self, x, vmath::SiluBackward);
        rec.save("grad_output", self)
            .save("self", x)
            .finish(out, |c| {
                let (g, x) = (c.saved(0)?, c.saved(1)?);
                let gg = c.grad();
                let dg = c.grad_for(0, || gg.silu_backward(&x))?;
                let dx = if c.needs(1) {
                    // silu'' = s (1 - s) (2 + x (1 - 2s))
                    let s = x.sigmoid()?;
                    let d2 = s
                        .mul(&one_minus(&s)?)?
                        .mul(&x.mul(&one_minus(&s.mul_scalar(2.0)?)?)?.add_scalar(2.0)?)?;
                    Some(gg.mul(&g)?.mul(&d2)?)
                } else {
                    None
                };
                Ok(vec![dg, dx])
            })
    }
    /// `self * softplus'(x)`.
    pub fn softplus_backward(&self, x: &Tensor, beta: f64, threshold: f64) -> Result<Tensor> {
        let dt = self.result_type(x).to_floating();
        let (g, xx) = (self.cast_raw(dt.compute()), x.cast_raw(dt.compute()));
        let rec = record("SoftplusBackwardBackward0", &[self, x]);
        let out = match dt.compute() {
            DType::F32 => Tensor::from(vmap::map2_with(
                &g,
                &xx,
                vmath::SoftplusBackward {
                    beta: beta as f32,
                    threshold: threshold as f32,
                },
            )?),
            _ => Tensor::from(vmap::map2_with(
                &g,
                &xx,
                vmath::SoftplusBackward { beta, threshold },
            )?),
        }
        .try_cast_raw(dt)?;
        rec.save("grad_output", self)
            .save("self", x)
            .finish(out, move |c| {
                let (g, x) = (c.saved(0)?, c.saved(1)?);
                let gg = c.grad();
                let dg = c.grad_for(0, || gg.softplus_backward(&x, beta, threshold))?;
                let dx = if c.needs(1) {
                    // softplus'' = β s (1 - s), s = sigmoid(β x); 0 past threshold
                    let bx = x.mul_scalar(beta)?;
                    let s = bx.sigmoid()?;
                    let d2 = s.mul(&one_minus(&s)?)?.mul_scalar(beta)?;
                    let past = bx.gt_scalar(threshold)?;
                    let d2 = Tensor::where_cond(&past, &d2.zeros_like(), &d2)?;
                    Some(gg.mul(&g)?.mul(&d2)?)
                } else {
                    None
                };
                Ok(vec![dg, dx])
            })
    }
    pub fn gelu_(&self, approximate: &str) -> Result<()> {
        let tanh = gelu_mode(approximate)?;
        let fp = self.dtype().is_floating();
        let done = self.try_fast_inplace("gelu_", fp, |t| {
            if tanh {
                float_kernel_inplace!(simd, t, vmath::GeluTanh)
            } else {
                float_kernel_inplace!(simd, t, vmath::Gelu)
            }
        })?;
        if done {
            return Ok(());
        }
        self.apply_inplace("gelu_", &[], |t| t.gelu(approximate))
    }
    pub fn silu_(&self) -> Result<()> {
        let fp = self.dtype().is_floating();
        if self.try_fast_inplace("silu_", fp, |t| float_kernel_inplace!(simd, t, vmath::Silu))? {
            return Ok(());
        }
        self.apply_inplace("silu_", &[], |t| t.silu())
    }
}

/// Parses gelu's `approximate`: true for "tanh".
fn gelu_mode(approximate: &str) -> Result<bool> {
    match approximate {
        "none" => Ok(false),
        "tanh" => Ok(true),
        _ => bail!(runtime, "approximate argument must be either none or tanh."),
    }
}

/// gelu''(x) written in differentiable ops.
/// exact: φ(x) (2 - x²); tanh form, with u = β(x + κx³), t = tanh(u):
/// (1 - t²) (u' - x t u'² + x u''/2), u' = β(1 + 3κx²), u'' = 6βκx.
fn gelu_second_derivative(x: &Tensor, tanh: bool) -> Result<Tensor> {
    let x2 = x.mul(x)?;
    if !tanh {
        let inv_sqrt_2pi = 0.5 * std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2;
        let pdf = x2.mul_scalar(-0.5)?.exp()?.mul_scalar(inv_sqrt_2pi)?;
        return pdf.mul(&x2.neg()?.add_scalar(2.0)?);
    }
    let beta = std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5;
    let kappa = 0.044715;
    let u = x.add(&x2.mul(x)?.mul_scalar(kappa)?)?.mul_scalar(beta)?;
    let t = u.tanh()?;
    let up = x2
        .mul_scalar(3.0 * kappa)?
        .add_scalar(1.0)?
        .mul_scalar(beta)?;
    let half_x_upp = x.mul_scalar(3.0 * beta * kappa)?;
    let inner = up
        .sub(&x.mul(&t)?.mul(&up)?.mul(&up)?)?
        .add(&x.mul(&half_x_upp)?)?;
    one_minus(&t.mul(&t)?)?.mul(&inner)
}
