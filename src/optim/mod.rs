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

use crate::Tensor;

/// torch's `zero_grad(set_to_none=True)`.
fn clear_grads(params: &[Tensor]) -> crate::Result<()> {
    params.iter().try_for_each(|p| p.set_grad(None))
}
