//! Optimisers: torch.optim's update rules, each stated once in its own file
//! as tensor ops in the order of torch's single-tensor implementations (the
//! ones torch runs on CPU), applied in place with no history recorded.
//!
//! The `*_update` functions are what the Python optimisers call per
//! parameter, with each rule's options and per-parameter state; [`Sgd`]
//! and [`Adam`] also hold parameters and state for Rust programs.

pub mod adagrad;
pub mod adam;
pub mod lr_schedule;
pub mod rmsprop;
pub mod sgd;

pub use adagrad::{adagrad_update, AdagradOptions, AdagradState};
pub use adam::{adam_update, Adam, AdamOptions, AdamState};
pub use lr_schedule::{Plateau, Schedule, Tick};
pub use rmsprop::{rmsprop_update, RmspropOptions, RmspropState};
pub use sgd::{sgd_update, Sgd, SgdOptions};

use crate::{bail, Result, Tensor};

/// torch's `zero_grad`: drops the gradients (`set_to_none`) or detaches
/// them and fills them with zeros. Shared by the optimisers and
/// `nn.Module.zero_grad`.
pub fn zero_grad(params: &[Tensor], set_to_none: bool) -> Result<()> {
    for p in params {
        let Some(g) = p.grad() else { continue };
        if set_to_none {
            p.set_grad(None)?;
        } else {
            if g.grad_fn().is_some() {
                g.detach_()?;
            } else {
                g.set_requires_grad(false)?;
            }
            g.zero_()?;
        }
    }
    Ok(())
}

/// The ValueError for the first negative hyper-parameter ("Invalid {name}:
/// {value}"), torch's checks.
fn check_non_negative(values: &[(&str, f64)]) -> Result<()> {
    for &(name, v) in values {
        if v < 0.0 {
            bail!(value, "Invalid {name}: {v:?}");
        }
    }
    Ok(())
}

/// The gradient a rule descends: negated to maximise, plus the coupled
/// weight decay `weight_decay * param`.
fn descent_grad(
    param: &Tensor,
    grad: &Tensor,
    maximize: bool,
    weight_decay: f64,
) -> Result<Tensor> {
    let g = if maximize { grad.neg()? } else { grad.clone() };
    if weight_decay == 0.0 {
        return Ok(g);
    }
    g.add(&param.mul_scalar(weight_decay)?)
}

/// Adds one to a state's `step` tensor and returns the new count.
fn count_step(step: &Tensor) -> Result<f64> {
    step.add_(&step.wrap_scalar(1i64.into()))?;
    Ok(step.item()?.to_f64())
}
