//! Stochastic gradient descent with momentum, dampening, Nesterov momentum,
//! weight decay and `maximize` (torch's `_single_tensor_sgd`):
//!
//! ```text
//! g = -grad if maximize else grad
//! g = g + weight_decay * param                 (weight_decay != 0)
//! buf = g (first step) | momentum * buf + (1 - dampening) * g
//! g = g + momentum * buf if nesterov else buf  (momentum != 0)
//! param -= lr * g
//! ```

use crate::autograd::no_grad;
use crate::{bail, Result, Tensor};

#[derive(Clone, Debug, PartialEq)]
pub struct SgdOptions {
    pub lr: f64,
    pub momentum: f64,
    pub dampening: f64,
    pub weight_decay: f64,
    pub nesterov: bool,
    pub maximize: bool,
}

impl Default for SgdOptions {
    /// torch's defaults.
    fn default() -> Self {
        SgdOptions {
            lr: 1e-3,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
            maximize: false,
        }
    }
}

impl SgdOptions {
    /// torch's argument checks (ValueError).
    pub fn check(&self) -> Result<()> {
        super::check_non_negative(&[
            ("learning rate", self.lr),
            ("momentum value", self.momentum),
            ("weight_decay value", self.weight_decay),
        ])?;
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            bail!(
                value,
                "Nesterov momentum requires a momentum and zero dampening"
            );
        }
        Ok(())
    }
}

/// One update of `param` in place from `grad`. `buf` is the momentum
/// buffer: set on the first step (with momentum), updated in place after.
pub fn sgd_update(
    param: &Tensor,
    grad: &Tensor,
    buf: &mut Option<Tensor>,
    o: &SgdOptions,
) -> Result<()> {
    let _no_grad = no_grad();
    let mut g = super::descent_grad(param, grad, o.maximize, o.weight_decay)?;
    if o.momentum != 0.0 {
        match buf {
            Some(b) => {
                b.mul_(&b.wrap_scalar(o.momentum.into()))?;
                b.add_(&g.mul_scalar(1.0 - o.dampening)?)?;
            }
            None => *buf = Some(g.detach().clone_tensor()?),
        }
        let b = buf.as_ref().expect("set above");
        g = if o.nesterov {
            g.add(&b.mul_scalar(o.momentum)?)?
        } else {
            b.clone()
        };
    }
    param.add_(&g.mul_scalar(-o.lr)?)
}

/// SGD over a fixed list of parameters, for Rust programs.
pub struct Sgd {
    pub params: Vec<Tensor>,
    pub options: SgdOptions,
    buffers: Vec<Option<Tensor>>,
}

impl Sgd {
    pub fn new(params: Vec<Tensor>, options: SgdOptions) -> Result<Sgd> {
        options.check()?;
        let buffers = vec![None; params.len()];
        Ok(Sgd {
            params,
            options,
            buffers,
        })
    }
    /// Updates every parameter that has a gradient.
    pub fn step(&mut self) -> Result<()> {
        for (p, buf) in self.params.iter().zip(&mut self.buffers) {
            if let Some(g) = p.grad() {
                sgd_update(p, &g, buf, &self.options)?;
            }
        }
        Ok(())
    }
    pub fn zero_grad(&self) -> Result<()> {
        super::zero_grad(&self.params, true)
    }
}
