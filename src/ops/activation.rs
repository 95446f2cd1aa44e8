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

use super::unary::Saves;
use crate::autograd::{no_grad, record};
use crate::kernels::unary::{map1, vmath};
use crate::kernels::vmap;
use crate::tensor::{DType, Element, Tensor};
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
        let dgrad = if c.needs(0) {
            Some(piecewise_backward(c.grad(), &x, name, slope.clone())?)
        } else {
            None
        };
        let dx = if c.needs(1) {
            Some(x.zeros_like())
        } else {
            None
        };
        Ok(vec![dgrad, dx])
    })
}

/// selu's alpha and scale (torch's constants).
pub const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
pub const SELU_SCALE: f64 = 1.050_700_987_355_480_5;

/// `f(v, p)` over a floating tensor in its own dtype, with the parameters
/// `p` converted to it; other dtypes are torch's "not implemented" error.
fn float_params<const N: usize>(
    x: &Tensor,
    kernel: &str,
    p: [f64; N],
    f32f: fn(f32, [f32; N]) -> f32,
    f64f: fn(f64, [f64; N]) -> f64,
) -> Result<Tensor> {
    Ok(match x.dtype() {
        DType::F32 => {
            let p = p.map(|v| v as f32);
            Tensor::from(map1::<f32, f32>(x, move |v| f32f(v, p)))
        }
        DType::F64 => Tensor::from(map1::<f64, f64>(x, move |v| f64f(v, p))),
        dt => bail!(
            runtime,
            "\"{kernel}\" not implemented for '{}'",
            dt.scalar_type_name()
        ),
    })
}

fn leaky<T: Element + std::ops::Mul<Output = T>>(v: T, [s]: [T; 1]) -> T {
    if v > T::from_f64(0.0) {
        v
    } else {
        v * s
    }
}

fn leaky_slope<T: Element>(v: T, [s]: [T; 1]) -> T {
    if v > T::from_f64(0.0) {
        T::from_f64(1.0)
    } else {
        s
    }
}

fn clamp_to<T: Element>(v: T, [lo, hi]: [T; 2]) -> T {
    if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    }
}

fn inside<T: Element>(v: T, [lo, hi]: [T; 2]) -> T {
    T::from_f64(if v > lo && v < hi { 1.0 } else { 0.0 })
}

impl Tensor {
    /// `x` where positive, `negative_slope * x` elsewhere.
    pub fn leaky_relu(&self, negative_slope: f64) -> Result<Tensor> {
        let rec = record("LeakyReluBackward0", &[self]);
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
        fn f<T: crate::tensor::Float>(v: T, [a, s, i]: [T; 3]) -> T {
            if v > T::from_f64(0.0) {
                s * v
            } else {
                s * a * (i * v).exp_m1()
            }
        }
        let out = float_params(self, "elu_cpu", p, f, f)?;
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
        let out = match self.dtype() {
            DType::F32 => Tensor::from(vmap::map1::<f32, vmath::LogSigmoid>(self)),
            DType::F64 => Tensor::from(vmap::map1::<f64, vmath::LogSigmoid>(self)),
            dt => bail!(
                runtime,
                "\"log_sigmoid_forward\" not implemented for '{}'",
                dt.scalar_type_name()
            ),
        };
        self.unary_record(rec, out, Saves::Input, |g, x| {
            g.mul(&x.unwrap().neg()?.sigmoid()?)
        })
    }
}

impl Tensor {
    pub fn leaky_relu_(&self, negative_slope: f64) -> Result<()> {
        self.apply_inplace(&[], |t| t.leaky_relu(negative_slope))
    }
    pub fn hardtanh_(&self, min_val: f64, max_val: f64) -> Result<()> {
        self.apply_inplace(&[], |t| t.hardtanh(min_val, max_val))
    }
    pub fn elu_(&self, alpha: f64, scale: f64, input_scale: f64) -> Result<()> {
        self.apply_inplace(&[], |t| t.elu(alpha, scale, input_scale))
    }
}
