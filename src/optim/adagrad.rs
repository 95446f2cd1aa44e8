//! Adagrad (torch's `_single_tensor_adagrad`):
//!
//! ```text
//! g = -grad if maximize else grad
//! step += 1
//! g = g + weight_decay * param                   (weight_decay != 0)
//! clr = lr / (1 + (step - 1) * lr_decay)
//! sum = sum + g * g
//! param -= clr * g / (sqrt(sum) + eps)
//! ```

use crate::autograd::no_grad;
use crate::{DType, Result, Tensor};

#[derive(Clone, Debug, PartialEq)]
pub struct AdagradOptions {
    pub lr: f64,
    pub lr_decay: f64,
    pub weight_decay: f64,
    pub initial_accumulator_value: f64,
    pub eps: f64,
    pub maximize: bool,
}

impl Default for AdagradOptions {
    /// torch's defaults.
    fn default() -> Self {
        AdagradOptions {
            lr: 1e-2,
            lr_decay: 0.0,
            weight_decay: 0.0,
            initial_accumulator_value: 0.0,
            eps: 1e-10,
            maximize: false,
        }
    }
}

impl AdagradOptions {
    /// torch's argument checks (ValueError).
    pub fn check(&self) -> Result<()> {
        super::check_non_negative(&[
            ("learning rate", self.lr),
            ("lr_decay value", self.lr_decay),
            ("weight_decay value", self.weight_decay),
            (
                "initial_accumulator_value value",
                self.initial_accumulator_value,
            ),
            ("epsilon value", self.eps),
        ])
    }
}

/// A parameter's Adagrad state, as torch keeps it.
pub struct AdagradState {
    pub step: Tensor,
    pub sum: Tensor,
}

impl AdagradState {
    pub fn new(param: &Tensor, o: &AdagradOptions) -> Result<AdagradState> {
        let sum = param.zeros_like();
        sum.fill_(o.initial_accumulator_value.into())?;
        Ok(AdagradState {
            step: Tensor::scalar(0.0.into(), DType::F32),
            sum,
        })
    }
}

pub fn adagrad_update(
    param: &Tensor,
    grad: &Tensor,
    s: &AdagradState,
    o: &AdagradOptions,
) -> Result<()> {
    let _no_grad = no_grad();
    let step = super::count_step(&s.step)?;
    let g = super::descent_grad(param, grad, o.maximize, o.weight_decay)?;
    let clr = o.lr / (1.0 + (step - 1.0) * o.lr_decay);
    s.sum.addcmul_(&g, &g, 1.0.into())?;
    let std = s.sum.sqrt()?;
    std.add_(&std.wrap_scalar(o.eps.into()))?;
    param.addcdiv_(&g, &std, (-clr).into())
}
