//! RMSprop (torch's `_single_tensor_rmsprop`):
//!
//! ```text
//! g = -grad if maximize else grad
//! step += 1
//! g = g + weight_decay * param                   (weight_decay != 0)
//! square_avg = alpha * square_avg + (1 - alpha) * g * g
//! grad_avg = lerp(grad_avg, g, 1 - alpha)          (centered)
//! avg = sqrt(square_avg - grad_avg^2 if centered else square_avg) + eps
//! buf = momentum * buf + g / avg; param -= lr * buf (momentum > 0)
//! param -= lr * g / avg                            (otherwise)
//! ```

use crate::autograd::no_grad;
use crate::ops::ternary::Weight;
use crate::{DType, Result, Tensor};

#[derive(Clone, Debug, PartialEq)]
pub struct RmspropOptions {
    pub lr: f64,
    pub alpha: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub momentum: f64,
    pub centered: bool,
    pub maximize: bool,
}

impl Default for RmspropOptions {
    /// torch's defaults.
    fn default() -> Self {
        RmspropOptions {
            lr: 1e-2,
            alpha: 0.99,
            eps: 1e-8,
            weight_decay: 0.0,
            momentum: 0.0,
            centered: false,
            maximize: false,
        }
    }
}

impl RmspropOptions {
    /// torch's argument checks (ValueError).
    pub fn check(&self) -> Result<()> {
        super::check_non_negative(&[
            ("learning rate", self.lr),
            ("epsilon value", self.eps),
            ("momentum value", self.momentum),
            ("weight_decay value", self.weight_decay),
            ("alpha value", self.alpha),
        ])
    }
}

/// A parameter's RMSprop state, as torch keeps it.
pub struct RmspropState {
    pub step: Tensor,
    pub square_avg: Tensor,
    pub momentum_buffer: Option<Tensor>,
    pub grad_avg: Option<Tensor>,
}

impl RmspropState {
    pub fn new(param: &Tensor, o: &RmspropOptions) -> RmspropState {
        RmspropState {
            step: Tensor::scalar(0.0.into(), DType::F32),
            square_avg: param.zeros_like(),
            momentum_buffer: (o.momentum > 0.0).then(|| param.zeros_like()),
            grad_avg: o.centered.then(|| param.zeros_like()),
        }
    }
}

pub fn rmsprop_update(
    param: &Tensor,
    grad: &Tensor,
    s: &RmspropState,
    o: &RmspropOptions,
) -> Result<()> {
    let _no_grad = no_grad();
    super::count_step(&s.step)?;
    let g = super::descent_grad(param, grad, o.maximize, o.weight_decay)?;
    s.square_avg
        .mul_(&s.square_avg.wrap_scalar(o.alpha.into()))?;
    s.square_avg.addcmul_(&g, &g, (1.0 - o.alpha).into())?;
    let avg = match &s.grad_avg {
        Some(ga) => {
            ga.lerp_(&g, &Weight::Scalar(1.0 - o.alpha))?;
            s.square_avg.addcmul(ga, ga, (-1.0).into())?.sqrt()?
        }
        None => s.square_avg.sqrt()?,
    };
    avg.add_(&avg.wrap_scalar(o.eps.into()))?;
    match &s.momentum_buffer {
        Some(buf) if o.momentum > 0.0 => {
            buf.mul_(&buf.wrap_scalar(o.momentum.into()))?;
            buf.addcdiv_(&g, &avg, 1.0.into())?;
            param.add_(&buf.mul_scalar(-o.lr)?)
        }
        _ => param.addcdiv_(&g, &avg, (-o.lr).into()),
    }
}
