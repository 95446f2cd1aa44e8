//! Learning-rate schedules (torch.optim.lr_scheduler): each schedule's next
//! rate for a parameter group, from the group's current rate and its base
//! (initial) rate, in torch's chainable form, so schedules compose and a
//! rate changed by hand carries on. `epoch` is the epoch being entered.
//!
//! | schedule                     | next lr                                                     |
//! |------------------------------|-------------------------------------------------------------|
//! | Step(step, gamma)            | lr * gamma when epoch > 0 and epoch % step == 0             |
//! | MultiStep(milestones, gamma) | lr * gamma^(times epoch is a milestone)                     |
//! | Exponential(gamma)           | lr * gamma after the first epoch                            |
//! | CosineAnnealing(T, eta_min)  | eta_min + (base - eta_min)(1 + cos(pi epoch / T)) / 2, chained |
//! | Linear(start, end, n)        | base * factor moving linearly from start to end over n      |
//! | Constant(factor, n)          | base * factor until epoch n                                 |
//! | Lambda(f)                    | base * f(epoch)                                             |
//! | Multiplicative(f)            | lr * f(epoch) after the first epoch                         |
//!
//! [`Plateau`] is ReduceLROnPlateau's rule: cut the rate by `factor` when a
//! metric has not improved for `patience` epochs.

use crate::{bail, Result};
use std::f64::consts::PI;

#[derive(Clone, Debug, PartialEq)]
pub enum Schedule {
    Step {
        step_size: i64,
        gamma: f64,
    },
    MultiStep {
        milestones: Vec<i64>,
        gamma: f64,
    },
    Exponential {
        gamma: f64,
    },
    CosineAnnealing {
        t_max: i64,
        eta_min: f64,
    },
    Linear {
        start_factor: f64,
        end_factor: f64,
        total_iters: i64,
    },
    Constant {
        factor: f64,
        total_iters: i64,
    },
    /// `factor` is the user function's value at this epoch.
    Lambda {
        factor: f64,
    },
    Multiplicative {
        factor: f64,
    },
}

/// Where a scheduler stands when it computes the next rate.
#[derive(Clone, Copy, Debug)]
pub struct Tick {
    /// The epoch being entered (0 on construction).
    pub epoch: i64,
    /// Steps taken, this one included (1 on construction).
    pub step_count: i64,
}

impl Schedule {
    /// torch's argument checks (ValueError).
    pub fn check(&self) -> Result<()> {
        match *self {
            Schedule::Linear {
                start_factor,
                end_factor,
                ..
            } => {
                if start_factor > 1.0 || start_factor <= 0.0 {
                    bail!(value, "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.");
                }
                if !(0.0..=1.0).contains(&end_factor) {
                    bail!(
                        value,
                        "Ending multiplicative factor expected to be between 0 and 1."
                    );
                }
            }
            Schedule::Constant { factor, .. } if !(0.0..=1.0).contains(&factor) => {
                bail!(
                    value,
                    "Constant multiplicative factor expected to be between 0 and 1."
                );
            }
            // torch would divide by zero at a later step; fail at once.
            Schedule::CosineAnnealing { t_max: 0, .. } => bail!(value, "T_max must not be 0"),
            Schedule::Step { step_size: 0, .. } => bail!(value, "step_size must not be 0"),
            _ => {}
        }
        Ok(())
    }

    /// The group's rate for `t.epoch`, given its current `lr` and `base_lr`.
    pub fn next_lr(&self, t: Tick, lr: f64, base_lr: f64) -> f64 {
        let e = t.epoch;
        let initial = t.step_count == 1 && e == 0;
        match self {
            Schedule::Step { step_size, gamma } => {
                if e == 0 || e % step_size != 0 {
                    lr
                } else {
                    lr * gamma
                }
            }
            Schedule::MultiStep { milestones, gamma } => {
                let times = milestones.iter().filter(|&&m| m == e).count() as i32;
                if times == 0 {
                    lr
                } else {
                    lr * gamma.powi(times)
                }
            }
            Schedule::Exponential { gamma } => {
                if initial {
                    lr
                } else {
                    lr * gamma
                }
            }
            Schedule::CosineAnnealing { t_max, eta_min } => {
                let (t_max, eta_min) = (*t_max, *eta_min);
                let tm = t_max as f64;
                if initial {
                    lr
                } else if t.step_count == 1 && e > 0 {
                    eta_min + (base_lr - eta_min) * (1.0 + (e as f64 * PI / tm).cos()) / 2.0
                } else if (e - 1 - t_max).rem_euclid(2 * t_max) == 0 {
                    lr + (base_lr - eta_min) * (1.0 - (PI / tm).cos()) / 2.0
                } else {
                    (1.0 + (PI * e as f64 / tm).cos()) / (1.0 + (PI * (e - 1) as f64 / tm).cos())
                        * (lr - eta_min)
                        + eta_min
                }
            }
            Schedule::Linear {
                start_factor,
                end_factor,
                total_iters,
            } => {
                if e == 0 {
                    lr * start_factor
                } else if initial || e > *total_iters {
                    lr
                } else {
                    let span = end_factor - start_factor;
                    lr * (1.0 + span / (*total_iters as f64 * start_factor + (e - 1) as f64 * span))
                }
            }
            Schedule::Constant {
                factor,
                total_iters,
            } => {
                if e == 0 {
                    lr * factor
                } else if e != *total_iters {
                    lr
                } else {
                    lr * (1.0 / factor)
                }
            }
            Schedule::Lambda { factor } => base_lr * factor,
            Schedule::Multiplicative { factor } => {
                if e > 0 {
                    lr * factor
                } else {
                    lr
                }
            }
        }
    }
}

/// ReduceLROnPlateau's rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Plateau {
    /// Minimise (`true`) or maximise the metric.
    pub minimize: bool,
    /// Improvement relative to the best value (`true`) or absolute.
    pub relative: bool,
    pub threshold: f64,
    pub factor: f64,
    pub eps: f64,
}

impl Plateau {
    pub fn new(
        mode: &str,
        threshold_mode: &str,
        threshold: f64,
        factor: f64,
        eps: f64,
    ) -> Result<Plateau> {
        if factor >= 1.0 {
            bail!(value, "Factor should be < 1.0.");
        }
        let minimize = match mode {
            "min" => true,
            "max" => false,
            _ => bail!(value, "mode {mode} is unknown!"),
        };
        let relative = match threshold_mode {
            "rel" => true,
            "abs" => false,
            _ => bail!(value, "threshold mode {threshold_mode} is unknown!"),
        };
        Ok(Plateau {
            minimize,
            relative,
            threshold,
            factor,
            eps,
        })
    }
    /// The worst value (where `best` starts).
    pub fn worst(&self) -> f64 {
        if self.minimize {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        }
    }
    /// Whether `current` improves on `best` by more than the threshold.
    pub fn is_better(&self, current: f64, best: f64) -> bool {
        match (self.minimize, self.relative) {
            (true, true) => current < best * (1.0 - self.threshold),
            (true, false) => current < best - self.threshold,
            (false, true) => current > best * (self.threshold + 1.0),
            (false, false) => current > best + self.threshold,
        }
    }
    /// The reduced rate, or None when the cut would be at most `eps`.
    pub fn reduced(&self, lr: f64, min_lr: f64) -> Option<f64> {
        let new = (lr * self.factor).max(min_lr);
        (lr - new > self.eps).then_some(new)
    }
}
