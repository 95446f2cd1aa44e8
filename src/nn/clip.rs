//! torch.nn.utils' gradient clipping: by the norm of all gradients taken
//! together, or elementwise by value. Gradients are scaled in place,
//! without history.
//!
//! ```text
//! total = || (||g_1||_p, ..., ||g_n||_p) ||_p
//! g_i *= min(max_norm / (total + 1e-6), 1)
//! ```

use crate::autograd::no_grad;
use crate::{bail, DType, Result, Tensor};

/// The p-norm of `tensors` viewed as one vector (0 for none).
pub fn total_norm(tensors: &[Tensor], p: f64, error_if_nonfinite: bool) -> Result<Tensor> {
    let _g = no_grad();
    if tensors.is_empty() {
        return Ok(Tensor::scalar(0.0.into(), DType::F32));
    }
    let norms = tensors
        .iter()
        .map(|t| t.norm(p, &[], false, None))
        .collect::<Result<Vec<_>>>()?;
    let total = Tensor::stack(&norms, 0)?.norm(p, &[], false, None)?;
    if error_if_nonfinite && !total.item()?.to_f64().is_finite() {
        bail!(
            runtime,
            "The total norm of order {p:?} for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        );
    }
    Ok(total)
}

/// Scales the parameters' gradients so that their total p-norm is at most
/// `max_norm`; returns the total norm before clipping.
pub fn clip_grad_norm_(
    params: &[Tensor],
    max_norm: f64,
    p: f64,
    error_if_nonfinite: bool,
) -> Result<Tensor> {
    let grads: Vec<Tensor> = params.iter().filter_map(Tensor::grad).collect();
    let total = total_norm(&grads, p, error_if_nonfinite)?;
    let _g = no_grad();
    let coef = total
        .wrap_scalar(max_norm.into())
        .div(&total.add_scalar(1e-6)?)?
        .clamp(None, Some(1.0.into()))?;
    for g in &grads {
        g.mul_(&coef.to_dtype(g.dtype())?)?;
    }
    Ok(total)
}

/// Clamps every gradient into [-clip_value, clip_value].
pub fn clip_grad_value_(params: &[Tensor], clip_value: f64) -> Result<()> {
    let _g = no_grad();
    for g in params.iter().filter_map(Tensor::grad) {
        g.clamp_(Some((-clip_value).into()), Some(clip_value.into()))?;
    }
    Ok(())
}
