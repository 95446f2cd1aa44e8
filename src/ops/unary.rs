//! Unary pointwise ops and activations.
//!
//! Floating functions promote integer and bool inputs to float32, as torch.
//! `result` is the op's output, `s = sigmoid`, `φ` the normal pdf.
//!
//! | op          | d/dself                                              | saves  |
//! |-------------|------------------------------------------------------|--------|
//! | exp         | grad * result                                        | result |
//! | log         | grad / self                                          | self   |
//! | log1p       | grad / (self + 1)                                    | self   |
//! | expm1       | grad * (result + 1)                                  | result |
//! | sqrt        | grad / (2 * result)                                  | result |
//! | rsqrt       | -0.5 * grad * result^3                               | result |
//! | abs         | grad * sign(self)                                    | self   |
//! | sign        | 0                                                    |        |
//! | sin         | grad * cos(self)                                     | self   |
//! | cos         | grad * -sin(self)                                    | self   |
//! | tan         | grad * (1 + result^2)                                | result |
//! | tanh        | tanh_backward(grad, result) = grad * (1 - result^2)  | result |
//! | sigmoid     | sigmoid_backward(grad, result) = grad*result*(1-result) | result |
//! | relu        | threshold_backward(grad, result) = grad * (result > 0) | result |
//! | gelu        | gelu_backward(grad, self) = grad * gelu'(self)       | self   |
//! | silu        | silu_backward(grad, self) = grad * s (1 + self (1 - s)) | self |
//! | softplus    | softplus_backward = grad * s(β self), or grad past threshold | self |
//! | reciprocal  | -grad * result^2                                     | result |
//! | square      | pow(self, 2): grad * 2 * self                        | self   |
//!
//! The `*_backward` functions are ops of their own (one fused kernel each)
//! with their own derivatives, so double backward works:
//!
//! | op                 | d/dgrad                       | d/d(second input)                  |
//! |--------------------|-------------------------------|------------------------------------|
//! | tanh_backward      | tanh_backward(gg, y)          | -2 gg grad y                       |
//! | sigmoid_backward   | sigmoid_backward(gg, y)       | gg grad (1 - 2y)                   |
//! | threshold_backward | threshold_backward(gg, y)     | 0                                  |
//! | gelu_backward      | gelu_backward(gg, x)          | gg grad gelu''(x)                  |
//! | silu_backward      | silu_backward(gg, x)          | gg grad s(1-s)(2 + x(1-2s))        |
//! | softplus_backward  | softplus_backward(gg, x)      | gg grad β s(1-s), 0 past threshold |

use crate::autograd::{is_grad_enabled, record, Record};
use crate::kernels::binary::map2;
use crate::kernels::unary::vmath;
use crate::kernels::unary::{apply1_inplace, f, map1};
use crate::kernels::vmap;
use crate::tensor::{DType, Layout, Tensor};
use crate::{bail, Result};

/// `f(v)` over every element, computed in `x`'s floating dtype (integers and
/// bools are read as float32).
macro_rules! float_map {
    ($x:expr, |$v:ident| $e:expr) => {{
        let x: &$crate::tensor::Tensor = $x;
        match x.dtype() {
            $crate::tensor::DType::F32 => {
                Tensor::from($crate::kernels::unary::map1::<f32, f32>(x, |$v: f32| $e))
            }
            $crate::tensor::DType::F64 => {
                Tensor::from($crate::kernels::unary::map1::<f64, f64>(x, |$v: f64| $e))
            }
            _ if crate::tensor::dtype::default_float() == $crate::tensor::DType::F64 => {
                Tensor::from($crate::kernels::unary::map1::<f64, f64>(
                    &x.cast_raw($crate::tensor::DType::F64),
                    |$v: f64| $e,
                ))
            }
            _ => Tensor::from($crate::kernels::unary::map1::<f32, f32>(
                &x.cast_raw($crate::tensor::DType::F32),
                |$v: f32| $e,
            )),
        }
    }};
}
pub(crate) use float_map;

/// As `float_map!`, computed by a branch-free SIMD function of
/// `kernels::unary::vmath`, given as its type (one for both float types).
macro_rules! float_map_simd {
    ($x:expr, $k:ty) => {{
        let x: &$crate::tensor::Tensor = $x;
        use $crate::kernels::vmap::map1;
        use $crate::tensor::DType;
        match x.dtype() {
            DType::F32 => Tensor::from(map1::<f32, $k>(x)),
            DType::F64 => Tensor::from(map1::<f64, $k>(x)),
            _ if $crate::tensor::dtype::default_float() == DType::F64 => {
                Tensor::from(map1::<f64, $k>(&x.cast_raw(DType::F64)))
            }
            _ => Tensor::from(map1::<f32, $k>(&x.cast_raw(DType::F32))),
        }
    }};
}
pub(crate) use float_map_simd;

/// As `float_apply!`, with a SIMD function type of `vmath`.
macro_rules! float_apply_simd {
    ($x:expr, $k:ty) => {{
        let x: &Tensor = $x;
        match x.dtype() {
            DType::F32 => vmap::apply1::<f32, $k>(x),
            _ => vmap::apply1::<f64, $k>(x),
        }
    }};
}

/// `K(a, b)` elementwise with broadcasting, in the promoted floating dtype,
/// for a two-argument SIMD function type of `vmath`.
macro_rules! float_map2_simd {
    ($a:expr, $b:expr, $k:ty) => {{
        let (a, b): (&Tensor, &Tensor) = ($a, $b);
        let dt = a.result_type(b).to_floating();
        let (a, b) = (a.cast_raw(dt), b.cast_raw(dt));
        match dt {
            DType::F32 => Tensor::from(vmap::map2_simd::<f32, $k>(&a, &b)?),
            _ => Tensor::from(vmap::map2_simd::<f64, $k>(&a, &b)?),
        }
    }};
}

/// `f(a, b)` elementwise with broadcasting, in the promoted floating dtype.
macro_rules! float_map2 {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $e:expr) => {{
        let (a, b): (&$crate::tensor::Tensor, &$crate::tensor::Tensor) = ($a, $b);
        let dt = a.result_type(b).to_floating();
        let (a, b) = (a.cast_raw(dt), b.cast_raw(dt));
        match dt {
            $crate::tensor::DType::F32 => Tensor::from($crate::kernels::binary::map2::<f32, f32>(
                &a,
                &b,
                |$x: f32, $y: f32| $e,
            )?),
            _ => Tensor::from($crate::kernels::binary::map2::<f64, f64>(
                &a,
                &b,
                |$x: f64, $y: f64| $e,
            )?),
        }
    }};
}
pub(crate) use float_map2;

/// Writes `f(v)` into a floating tensor's memory (caller checked the dtype).
macro_rules! float_apply {
    ($x:expr, |$v:ident| $e:expr) => {{
        let x: &Tensor = $x;
        match x.dtype() {
            DType::F32 => apply1_inplace::<f32>(x, |$v: f32| $e),
            _ => apply1_inplace::<f64>(x, |$v: f64| $e),
        }
    }};
}

/// Whether two elements of `l` share one memory location (a broadcast view).
fn has_internal_overlap(l: &Layout) -> bool {
    l.shape
        .iter()
        .zip(&l.strides)
        .any(|(&d, &s)| d > 1 && s == 0)
}

/// `1 - t`.
fn one_minus(t: &Tensor) -> Result<Tensor> {
    t.neg()?.add_scalar(1.0)
}

/// What a unary op's backward reads.
pub(crate) enum Saves {
    Nothing,
    Input,
    Output,
}

impl Tensor {
    /// Attaches a unary op's node: `d(grad, saved)` is its derivative.
    pub(crate) fn unary_record<F>(
        &self,
        r: Record,
        out: Tensor,
        saves: Saves,
        d: F,
    ) -> Result<Tensor>
    where
        F: Fn(&Tensor, Option<Tensor>) -> Result<Tensor> + Send + Sync + 'static,
    {
        let (r, has) = match saves {
            Saves::Nothing => (r, false),
            Saves::Input => (r.save("self", self), true),
            Saves::Output => (r.save_output("result", 0), true),
        };
        r.finish(out, move |c| {
            let s = if has { Some(c.saved(0)?) } else { None };
            Ok(vec![Some(d(c.grad(), s)?)])
        })
    }

    /// The in-place fast path: when no graph is recorded, runs `kernel` on
    /// self's memory directly (after torch's in-place checks) and bumps the
    /// version. Returns false when the caller must take the recorded path
    /// (`apply_inplace`): grad is being recorded, the dtype is not handled
    /// (`dtype_ok`), or elements of self overlap in memory.
    pub(crate) fn try_fast_inplace(
        &self,
        dtype_ok: bool,
        kernel: impl FnOnce(&Tensor),
    ) -> Result<bool> {
        if !dtype_ok
            || (is_grad_enabled() && self.requires_grad())
            || self.has_fw_grad()
            || has_internal_overlap(self.layout())
        {
            return Ok(false);
        }
        self.check_inplace()?;
        crate::autograd::saved_hooks::before_inplace(self)?;
        kernel(self);
        self.bump_version();
        Ok(true)
    }

    /// An in-place unary op: `kernel` in place when no graph or tangent
    /// is involved (and `eligible`), else `op` through `apply_inplace`.
    fn unary_inplace(
        &self,
        eligible: bool,
        kernel: impl FnOnce(&Tensor),
        op: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<()> {
        if self.try_fast_inplace(eligible, kernel)? {
            return Ok(());
        }
        self.apply_inplace(&[], op)
    }

    // ----- exponentials and logarithms -----

    /// d/dself = grad * result
    pub fn exp(&self) -> Result<Tensor> {
        let rec = record("ExpBackward0", &[self]);
        let out = float_map_simd!(self, vmath::Exp);
        self.unary_record(rec, out, Saves::Output, |g, r| g.mul(&r.unwrap()))
    }
    /// d/dself = grad / self
    pub fn log(&self) -> Result<Tensor> {
        let rec = record("LogBackward0", &[self]);
        let out = float_map_simd!(self, vmath::Ln);
        self.unary_record(rec, out, Saves::Input, |g, s| g.div(&s.unwrap()))
    }
    /// d/dself = grad / (self + 1)
    pub fn log1p(&self) -> Result<Tensor> {
        let rec = record("Log1PBackward0", &[self]);
        let out = float_map_simd!(self, vmath::Ln1p);
        self.unary_record(rec, out, Saves::Input, |g, s| {
            g.div(&s.unwrap().add_scalar(1.0)?)
        })
    }
    /// d/dself = grad * (result + 1)
    pub fn expm1(&self) -> Result<Tensor> {
        let rec = record("Expm1Backward0", &[self]);
        let out = float_map_simd!(self, vmath::ExpM1);
        self.unary_record(rec, out, Saves::Output, |g, r| {
            g.mul(&r.unwrap().add_scalar(1.0)?)
        })
    }
    /// d/dself = grad / (2 * result)
    pub fn sqrt(&self) -> Result<Tensor> {
        let rec = record("SqrtBackward0", &[self]);
        let out = float_map!(self, |v| v.sqrt());
        self.unary_record(rec, out, Saves::Output, |g, r| {
            g.div(&r.unwrap().mul_scalar(2.0)?)
        })
    }
    /// d/dself = -0.5 * grad * result^3
    pub fn rsqrt(&self) -> Result<Tensor> {
        let rec = record("RsqrtBackward0", &[self]);
        let out = float_map!(self, |v| 1.0 / v.sqrt());
        self.unary_record(rec, out, Saves::Output, |g, r| {
            g.mul(&r.unwrap().pow_scalar(3)?)?.mul_scalar(-0.5)
        })
    }
    /// d/dself = -grad * result^2
    pub fn reciprocal(&self) -> Result<Tensor> {
        let rec = record("ReciprocalBackward0", &[self]);
        let out = float_map!(self, |v| 1.0 / v);
        self.unary_record(rec, out, Saves::Output, |g, r| {
            let r = r.unwrap();
            g.neg()?.mul(&r.mul(&r)?)
        })
    }

    // ----- sign-like -----

    /// d/dself = grad * sign(self). Integers stay integers; bool is an error.
    pub fn abs(&self) -> Result<Tensor> {
        let rec = record("AbsBackward0", &[self]);
        let out = match self.dtype() {
            DType::F32 => Tensor::from(map1::<f32, f32>(self, |v| v.abs())),
            DType::F64 => Tensor::from(map1::<f64, f64>(self, |v| v.abs())),
            DType::I64 => Tensor::from(map1::<i64, i64>(self, |v| v.wrapping_abs())),
            DType::Bool => bail!(runtime, "\"abs_cpu\" not implemented for 'Bool'"),
        };
        self.unary_record(rec, out, Saves::Input, |g, s| g.mul(&s.unwrap().sign()?))
    }
    /// d/dself = 0. `(0 < x) - (x < 0)`: NaN gives 0; bool stays bool.
    pub fn sign(&self) -> Result<Tensor> {
        let rec = record("SignBackward0", &[self]);
        let out = match self.dtype() {
            DType::F32 => Tensor::from(map1::<f32, f32>(self, f::sign)),
            DType::F64 => Tensor::from(map1::<f64, f64>(self, f::sign)),
            DType::I64 => Tensor::from(map1::<i64, i64>(self, |v| v.signum())),
            DType::Bool => Tensor::from(map1::<bool, bool>(self, |v| v)),
        };
        self.unary_record(rec, out, Saves::Nothing, |g, _| Ok(g.zeros_like()))
    }
    /// `sgn` is `sign` for real tensors.
    pub fn sgn(&self) -> Result<Tensor> {
        self.sign()
    }
    /// `pow(self, 2)`: d/dself = grad * 2 * self. Bool squares to int64.
    pub fn square(&self) -> Result<Tensor> {
        self.pow_scalar(2)
    }

    // ----- trigonometric -----

    /// d/dself = grad * cos(self)
    pub fn sin(&self) -> Result<Tensor> {
        let rec = record("SinBackward0", &[self]);
        let out = float_map_simd!(self, vmath::Sin);
        self.unary_record(rec, out, Saves::Input, |g, s| g.mul(&s.unwrap().cos()?))
    }
    /// d/dself = grad * -sin(self)
    pub fn cos(&self) -> Result<Tensor> {
        let rec = record("CosBackward0", &[self]);
        let out = float_map_simd!(self, vmath::Cos);
        self.unary_record(rec, out, Saves::Input, |g, s| {
            g.mul(&s.unwrap().sin()?.neg()?)
        })
    }
    /// d/dself = grad * (1 + result^2)
    pub fn tan(&self) -> Result<Tensor> {
        let rec = record("TanBackward0", &[self]);
        let out = float_map_simd!(self, vmath::Tan);
        self.unary_record(rec, out, Saves::Output, |g, r| {
            let r = r.unwrap();
            g.mul(&r.mul(&r)?.add_scalar(1.0)?)
        })
    }
    /// d/dself = tanh_backward(grad, result)
    pub fn tanh(&self) -> Result<Tensor> {
        let rec = record("TanhBackward0", &[self]);
        let out = float_map_simd!(self, vmath::Tanh);
        self.unary_record(rec, out, Saves::Output, |g, r| g.tanh_backward(&r.unwrap()))
    }

    // ----- activations -----

    /// d/dself = sigmoid_backward(grad, result)
    pub fn sigmoid(&self) -> Result<Tensor> {
        let rec = record("SigmoidBackward0", &[self]);
        let out = float_map_simd!(self, vmath::Sigmoid);
        self.unary_record(rec, out, Saves::Output, |g, r| {
            g.sigmoid_backward(&r.unwrap())
        })
    }
    /// `max(self, 0)` (NaN stays NaN); d/dself = threshold_backward(grad,
    /// result). Integers stay integers; bool is an error.
    pub fn relu(&self) -> Result<Tensor> {
        let rec = record("ReluBackward0", &[self]);
        let out = match self.dtype() {
            DType::F32 => Tensor::from(map1::<f32, f32>(self, f::relu)),
            DType::F64 => Tensor::from(map1::<f64, f64>(self, f::relu)),
            DType::I64 => Tensor::from(map1::<i64, i64>(self, |v| v.max(0))),
            DType::Bool => bail!(runtime, "Boolean inputs not supported for relu"),
        };
        self.unary_record(rec, out, Saves::Output, |g, r| {
            g.threshold_backward(&r.unwrap())
        })
    }
    /// GELU with `approximate` = "none" (exact, erf) or "tanh".
    /// d/dself = gelu_backward(grad, self)
    pub fn gelu(&self, approximate: &str) -> Result<Tensor> {
        let tanh = gelu_mode(approximate)?;
        let rec = record("GeluBackward0", &[self]);
        let out = match (self.dtype(), tanh) {
            (DType::F32, false) => Tensor::from(vmap::map1::<f32, vmath::Gelu>(self)),
            (DType::F64, false) => Tensor::from(vmap::map1::<f64, vmath::Gelu>(self)),
            (DType::F32, true) => Tensor::from(vmap::map1::<f32, vmath::GeluTanh>(self)),
            (DType::F64, true) => Tensor::from(vmap::map1::<f64, vmath::GeluTanh>(self)),
            (dt, _) => bail!(
                runtime,
                "\"GeluKernelImpl\" not implemented for '{}'",
                dt.scalar_type_name()
            ),
        };
        self.unary_record(rec, out, Saves::Input, move |g, s| {
            g.gelu_backward(&s.unwrap(), tanh)
        })
    }
    /// `self * sigmoid(self)`; d/dself = silu_backward(grad, self)
    pub fn silu(&self) -> Result<Tensor> {
        let rec = record("SiluBackward0", &[self]);
        let out = match self.dtype() {
            DType::F32 => Tensor::from(vmap::map1::<f32, vmath::Silu>(self)),
            DType::F64 => Tensor::from(vmap::map1::<f64, vmath::Silu>(self)),
            dt => bail!(
                runtime,
                "\"silu_cpu\" not implemented for '{}'",
                dt.scalar_type_name()
            ),
        };
        self.unary_record(rec, out, Saves::Input, |g, s| g.silu_backward(&s.unwrap()))
    }
    /// `log(1 + exp(β self)) / β`, linear where `β self > threshold`.
    /// d/dself = softplus_backward(grad, self, β, threshold)
    pub fn softplus(&self, beta: f64, threshold: f64) -> Result<Tensor> {
        let rec = record("SoftplusBackward0", &[self]);
        let out = match self.dtype() {
            DType::F32 => {
                let (b, t) = (beta as f32, threshold as f32);
                Tensor::from(map1::<f32, f32>(self, move |v| f::softplus(v, b, t)))
            }
            DType::F64 => Tensor::from(map1::<f64, f64>(self, move |v| {
                f::softplus(v, beta, threshold)
            })),
            dt => bail!(
                runtime,
                "\"softplus_cpu\" not implemented for '{}'",
                dt.scalar_type_name()
            ),
        };
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
                let dg = if c.needs(0) {
                    Some(gg.tanh_backward(&y)?)
                } else {
                    None
                };
                let dy = if c.needs(1) {
                    Some(gg.mul(&g)?.mul(&y)?.mul_scalar(-2.0)?)
                } else {
                    None
                };
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
                let dg = if c.needs(0) {
                    Some(gg.sigmoid_backward(&y)?)
                } else {
                    None
                };
                let dy = if c.needs(1) {
                    Some(gg.mul(&g)?.mul(&one_minus(&y.mul_scalar(2.0)?)?)?)
                } else {
                    None
                };
                Ok(vec![dg, dy])
            })
    }
    /// `self` where `y > 0`, else 0 (relu's derivative; `y` = relu's output,
    /// so NaN outputs pass the gradient as in torch).
    pub fn threshold_backward(&self, y: &Tensor) -> Result<Tensor> {
        let dt = self.result_type(y);
        let (g, yy) = (self.cast_raw(dt), y.cast_raw(dt));
        let rec = record("ThresholdBackwardBackward0", &[self, y]);
        let out = match dt {
            DType::F32 => Tensor::from(map2::<f32, f32>(
                &g,
                &yy,
                |g, y| if y <= 0.0 { 0.0 } else { g },
            )?),
            DType::F64 => Tensor::from(map2::<f64, f64>(
                &g,
                &yy,
                |g, y| if y <= 0.0 { 0.0 } else { g },
            )?),
            _ => Tensor::from(map2::<i64, i64>(
                &g.cast_raw(DType::I64),
                &yy.cast_raw(DType::I64),
                |g, y| {
                    if y <= 0 {
                        0
                    } else {
                        g
                    }
                },
            )?)
            .cast_raw(dt),
        };
        rec.save("self", y).finish(out, |c| {
            let y = c.saved(0)?;
            let dg = if c.needs(0) {
                Some(c.grad().threshold_backward(&y)?)
            } else {
                None
            };
            Ok(vec![dg, None])
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
                let dg = if c.needs(0) {
                    Some(gg.gelu_backward(&x, tanh)?)
                } else {
                    None
                };
                let dx = if c.needs(1) {
                    Some(gg.mul(&g)?.mul(&gelu_second_derivative(&x, tanh)?)?)
                } else {
                    None
                };
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
                let dg = if c.needs(0) {
                    Some(gg.silu_backward(&x)?)
                } else {
                    None
                };
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
        let (g, xx) = (self.cast_raw(dt), x.cast_raw(dt));
        let rec = record("SoftplusBackwardBackward0", &[self, x]);
        let out = match dt {
            DType::F32 => {
                let (b, t) = (beta as f32, threshold as f32);
                Tensor::from(map2::<f32, f32>(&g, &xx, move |g, x| {
                    g * f::softplus_grad(x, b, t)
                })?)
            }
            _ => Tensor::from(map2::<f64, f64>(&g, &xx, move |g, x| {
                g * f::softplus_grad(x, beta, threshold)
            })?),
        };
        rec.save("grad_output", self)
            .save("self", x)
            .finish(out, move |c| {
                let (g, x) = (c.saved(0)?, c.saved(1)?);
                let gg = c.grad();
                let dg = if c.needs(0) {
                    Some(gg.softplus_backward(&x, beta, threshold)?)
                } else {
                    None
                };
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

    // ----- in-place variants -----

    pub fn exp_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype().is_floating(),
            |t| float_apply_simd!(t, vmath::Exp),
            |t| t.exp(),
        )
    }
    pub fn log_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype().is_floating(),
            |t| float_apply_simd!(t, vmath::Ln),
            |t| t.log(),
        )
    }
    pub fn log1p_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype().is_floating(),
            |t| float_apply_simd!(t, vmath::Ln1p),
            |t| t.log1p(),
        )
    }
    pub fn expm1_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype().is_floating(),
            |t| float_apply_simd!(t, vmath::ExpM1),
            |t| t.expm1(),
        )
    }
    pub fn sqrt_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype().is_floating(),
            |t| float_apply!(t, |v| v.sqrt()),
            |t| t.sqrt(),
        )
    }
    pub fn rsqrt_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype().is_floating(),
            |t| float_apply!(t, |v| 1.0 / v.sqrt()),
            |t| t.rsqrt(),
        )
    }
    pub fn reciprocal_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype().is_floating(),
            |t| float_apply!(t, |v| 1.0 / v),
            |t| t.reciprocal(),
        )
    }
    pub fn abs_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype() != DType::Bool,
            |t| match t.dtype() {
                DType::I64 => apply1_inplace::<i64>(t, |v| v.wrapping_abs()),
                _ => float_apply!(t, |v| v.abs()),
            },
            |t| t.abs(),
        )
    }
    pub fn neg_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype() != DType::Bool,
            |t| match t.dtype() {
                DType::I64 => apply1_inplace::<i64>(t, |v| v.wrapping_neg()),
                _ => float_apply!(t, |v| -v),
            },
            |t| t.neg(),
        )
    }
    pub fn sign_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype() != DType::Bool,
            |t| match t.dtype() {
                DType::I64 => apply1_inplace::<i64>(t, |v| v.signum()),
                _ => float_apply!(t, |v| f::sign(v)),
            },
            |t| t.sign(),
        )
    }
    pub fn sgn_(&self) -> Result<()> {
        self.sign_()
    }
    pub fn square_(&self) -> Result<()> {
        self.pow_scalar_(2)
    }
    pub fn sin_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype().is_floating(),
            |t| float_apply_simd!(t, vmath::Sin),
            |t| t.sin(),
        )
    }
    pub fn cos_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype().is_floating(),
            |t| float_apply_simd!(t, vmath::Cos),
            |t| t.cos(),
        )
    }
    pub fn tan_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype().is_floating(),
            |t| float_apply_simd!(t, vmath::Tan),
            |t| t.tan(),
        )
    }
    pub fn tanh_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype().is_floating(),
            |t| float_apply_simd!(t, vmath::Tanh),
            |t| t.tanh(),
        )
    }
    pub fn sigmoid_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype().is_floating(),
            |t| float_apply_simd!(t, vmath::Sigmoid),
            |t| t.sigmoid(),
        )
    }
    pub fn relu_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype() != DType::Bool,
            |t| match t.dtype() {
                DType::I64 => apply1_inplace::<i64>(t, |v| v.max(0)),
                _ => float_apply!(t, |v| f::relu(v)),
            },
            |t| t.relu(),
        )
    }
    pub fn gelu_(&self, approximate: &str) -> Result<()> {
        let tanh = gelu_mode(approximate)?;
        let fp = self.dtype().is_floating();
        let done = self.try_fast_inplace(fp, |t| {
            if tanh {
                float_apply_simd!(t, vmath::GeluTanh)
            } else {
                float_apply_simd!(t, vmath::Gelu)
            }
        })?;
        if done {
            return Ok(());
        }
        self.apply_inplace(&[], |t| t.gelu(approximate))
    }
    pub fn silu_(&self) -> Result<()> {
        self.unary_inplace(
            self.dtype().is_floating(),
            |t| float_apply_simd!(t, vmath::Silu),
            |t| t.silu(),
        )
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
