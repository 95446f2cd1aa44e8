//! CPU autocast (torch.autocast("cpu")): a thread-local state read by the
//! ops of torch's two CPU autocast lists.
//!
//! - lower precision (`lowered`): matmul, mm, bmm, addmm, baddbmm, addbmm,
//!   linear, conv and conv_transpose compute in the autocast dtype
//!   (bfloat16 by default);
//! - float32 (`widened`): the losses and `prod` compute in float32.
//!
//! Either way only eligible inputs are cast: floating tensors other than
//! float64, as torch's `cached_cast`. The casts are recorded ops, so the
//! gradients flow back in each leaf's own dtype. The engine turns autocast
//! off while it runs a backward pass (the backward ops take the dtypes the
//! forward chose).

use crate::tensor::{DType, Tensor};
use crate::Result;
use std::cell::Cell;

thread_local! {
    static ENABLED: Cell<bool> = const { Cell::new(false) };
    static DTYPE: Cell<DType> = const { Cell::new(DType::BF16) };
}

/// Whether CPU autocast is on in this thread.
pub fn is_enabled() -> bool {
    ENABLED.with(|e| e.get())
}

pub fn set_enabled(on: bool) {
    ENABLED.with(|e| e.set(on));
}

/// The lower-precision dtype of CPU autocast (torch's default: bfloat16).
pub fn dtype() -> DType {
    DTYPE.with(|d| d.get())
}

/// Sets the CPU autocast dtype: float16 or bfloat16, as torch accepts.
pub fn set_dtype(dt: DType) -> Result<()> {
    if !dt.is_reduced_float() {
        crate::bail!(
            runtime,
            "Currently, AutocastCPU only support Bfloat16 and Float16 as the autocast_cpu_dtype"
        );
    }
    DTYPE.with(|d| d.set(dt));
    Ok(())
}

/// Turns autocast off for its lifetime, then restores the previous state.
pub struct Suspended(bool);

impl Drop for Suspended {
    fn drop(&mut self) {
        set_enabled(self.0);
    }
}

/// `let _a = suspend();`: no autocast until the guard drops.
pub fn suspend() -> Suspended {
    let prev = is_enabled();
    set_enabled(false);
    Suspended(prev)
}

fn cast_eligible(inputs: &[&Tensor], to: DType) -> Result<Option<Vec<Tensor>>> {
    let eligible = |t: &Tensor| t.dtype().is_floating() && t.dtype() != DType::F64;
    if !inputs.iter().any(|t| eligible(t) && t.dtype() != to) {
        return Ok(None);
    }
    inputs
        .iter()
        .map(|t| match eligible(t) {
            true => t.to_dtype(to),
            false => Ok((*t).clone()),
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// Under autocast, the inputs of a lower-precision op cast to the autocast
/// dtype; None when autocast is off or nothing needs a cast.
pub(crate) fn lowered(inputs: &[&Tensor]) -> Result<Option<Vec<Tensor>>> {
    if !is_enabled() {
        return Ok(None);
    }
    cast_eligible(inputs, dtype())
}

/// Under autocast, the inputs of a float32 op cast to float32; None when
/// autocast is off or nothing needs a cast.
pub(crate) fn widened(inputs: &[&Tensor]) -> Result<Option<Vec<Tensor>>> {
    if !is_enabled() {
        return Ok(None);
    }
    cast_eligible(inputs, DType::F32)
}
