//! Thread-local grad mode (no_grad / enable_grad / inference_mode).

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

pub fn set_grad_enabled(enabled: bool) {
    GRAD_ENABLED.with(|g| g.set(enabled));
}

/// Whether this thread is in inference mode (the flag lives in the tensor
/// layer, which makes inference tensors).
pub fn is_inference_mode_enabled() -> bool {
    crate::tensor::is_inference_mode_enabled()
}

pub fn set_inference_mode(enabled: bool) {
    crate::tensor::set_inference_mode(enabled)
}

/// Sets grad mode for its lifetime, then restores the previous mode.
pub struct GradModeGuard {
    prev: bool,
}

impl GradModeGuard {
    pub fn new(enabled: bool) -> Self {
        let prev = is_grad_enabled();
        set_grad_enabled(enabled);
        GradModeGuard { prev }
    }
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        set_grad_enabled(self.prev);
    }
}

/// `let _g = no_grad();` disables graph recording until the guard drops.
pub fn no_grad() -> GradModeGuard {
    GradModeGuard::new(false)
}

pub fn enable_grad() -> GradModeGuard {
    GradModeGuard::new(true)
}

/// Inference mode for its lifetime (grad mode off, and tensors made are
/// inference tensors, see `Tensor::is_inference`), then the previous modes.
pub struct InferenceModeGuard {
    grad: GradModeGuard,
    prev: bool,
}

impl Drop for InferenceModeGuard {
    fn drop(&mut self) {
        set_inference_mode(self.prev);
        let _ = &self.grad; // restored by its own drop, after this one
    }
}

/// `let _g = inference_mode();`: torch's `InferenceMode` guard.
pub fn inference_mode() -> InferenceModeGuard {
    let prev = is_inference_mode_enabled();
    let grad = GradModeGuard::new(false);
    set_inference_mode(true);
    InferenceModeGuard { grad, prev }
}
