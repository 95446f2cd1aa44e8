//! Adam and AdamW (torch's `_single_tensor_adam`; AdamW is Adam with the
//! weight decay decoupled from the gradient):
//!
//! ```text
//! g = -grad if maximize else grad
//! step += 1
//! param *= 1 - lr * weight_decay               (decoupled)
//! g = g + weight_decay * param                 (coupled, weight_decay != 0)
//! exp_avg = lerp(exp_avg, g, 1 - beta1)
//! exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g * g
//! max_exp_avg_sq = max(max_exp_avg_sq, exp_avg_sq)         (amsgrad)
//! denom = sqrt(exp_avg_sq or max_exp_avg_sq) / sqrt(1 - beta2^step) + eps
//! param -= lr / (1 - beta1^step) * exp_avg / denom
//! ```

use crate::autograd::no_grad;
use crate::ops::ternary::Weight;
use crate::{bail, Result, Tensor};

#[derive(Clone, Debug, PartialEq)]
pub struct AdamOptions {
    pub lr: f64,
    pub betas: (f64, f64),
    pub eps: f64,
    pub weight_decay: f64,
    pub amsgrad: bool,
    pub maximize: bool,
    /// AdamW: decay the parameter, not the gradient.
    pub decoupled_weight_decay: bool,
}

impl Default for AdamOptions {
    /// torch's Adam defaults.
    fn default() -> Self {
        AdamOptions {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false,
            maximize: false,
            decoupled_weight_decay: false,
        }
    }
}

impl AdamOptions {
    /// torch's AdamW defaults (weight decay 1e-2, decoupled).
    pub fn adamw() -> Self {
        AdamOptions {
            weight_decay: 1e-2,
            decoupled_weight_decay: true,
            ..Default::default()
        }
    }
    /// torch's argument checks (ValueError).
    pub fn check(&self) -> Result<()> {
        super::check_non_negative(&[("learning rate", self.lr), ("epsilon value", self.eps)])?;
        for (i, b) in [self.betas.0, self.betas.1].into_iter().enumerate() {
            if !(0.0..1.0).contains(&b) {
                bail!(value, "Invalid beta parameter at index {i}: {b:?}");
            }
        }
        super::check_non_negative(&[("weight_decay value", self.weight_decay)])
    }
}

/// A parameter's Adam state, as torch keeps it: `step` is a 0-d float32
/// tensor, the averages are shaped like the parameter.
pub struct AdamState {
    pub step: Tensor,
    pub exp_avg: Tensor,
    pub exp_avg_sq: Tensor,
    pub max_exp_avg_sq: Option<Tensor>,
}

impl AdamState {
    /// The state before the first step.
    pub fn new(param: &Tensor, amsgrad: bool) -> AdamState {
        AdamState {
            step: Tensor::scalar(0.0.into(), crate::DType::F32),
            exp_avg: param.zeros_like(),
            exp_avg_sq: param.zeros_like(),
            max_exp_avg_sq: amsgrad.then(|| param.zeros_like()),
        }
    }
}

/// One update of `param` and its state in place from `grad`.
pub fn adam_update(param: &Tensor, grad: &Tensor, s: &AdamState, o: &AdamOptions) -> Result<()> {
    let _no_grad = no_grad();
    let (beta1, beta2) = o.betas;
    let step = super::count_step(&s.step)?;
    let coupled_decay = if o.decoupled_weight_decay {
        if o.weight_decay != 0.0 {
            param.mul_(&param.wrap_scalar((1.0 - o.lr * o.weight_decay).into()))?;
        }
        0.0
    } else {
        o.weight_decay
    };
    let g = super::descent_grad(param, grad, o.maximize, coupled_decay)?;
    s.exp_avg.lerp_(&g, &Weight::Scalar(1.0 - beta1))?;
    s.exp_avg_sq.mul_(&s.exp_avg_sq.wrap_scalar(beta2.into()))?;
    s.exp_avg_sq.addcmul_(&g, &g, (1.0 - beta2).into())?;
    let bias_correction1 = 1.0 - beta1.powf(step);
    let bias_correction2_sqrt = (1.0 - beta2.powf(step)).sqrt();
    let second = match &s.max_exp_avg_sq {
        Some(m) => {
            m.copy_(&m.maximum(&s.exp_avg_sq)?)?;
            m
        }
        None => &s.exp_avg_sq,
    };
    let denom = second.sqrt()?.div_scalar(bias_correction2_sqrt)?;
    denom.add_(&denom.wrap_scalar(o.eps.into()))?;
    param.addcdiv_(&s.exp_avg, &denom, (-o.lr / bias_correction1).into())
}

/// Adam (or AdamW) over a fixed list of parameters, for Rust programs.
pub struct Adam {
    pub params: Vec<Tensor>,
    pub options: AdamOptions,
    state: Vec<Option<AdamState>>,
}

impl Adam {
    pub fn new(params: Vec<Tensor>, options: AdamOptions) -> Result<Adam> {
        options.check()?;
        let state = params.iter().map(|_| None).collect();
        Ok(Adam {
            params,
            options,
            state,
        })
    }
    /// Updates every parameter that has a gradient.
    pub fn step(&mut self) -> Result<()> {
        for (p, s) in self.params.iter().zip(&mut self.state) {
            if let Some(g) = p.grad() {
                let s = s.get_or_insert_with(|| AdamState::new(p, self.options.amsgrad));
                adam_update(p, &g, s, &self.options)?;
            }
        }
        Ok(())
    }
    pub fn zero_grad(&self) -> Result<()> {
        super::zero_grad(&self.params, true)
    }
}
