//! Anomaly detection (`torch.autograd.detect_anomaly`).
//!
//! A process-global flag, as in torch. When it is off, node creation and the
//! engine pay one relaxed atomic load. When it is on:
//! - every node created records an opaque payload (the Python bindings
//!   register a capture callback that takes the forward traceback; the core
//!   does not know what it holds);
//! - an error raised while the engine evaluates a node goes through a
//!   registered error callback together with the node's payload (the
//!   bindings attach the forward traceback to the exception and warn);
//! - with `check_nan`, a node whose output gradient contains NaN fails with
//!   torch's "Function 'X' returned nan values in its i-th output." error.

use super::node::Node;
use crate::tensor::Tensor;
use crate::{Error, Result};
use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// What a node keeps from its creation while anomaly mode is on.
pub type AnomalyPayload = Arc<dyn Any + Send + Sync>;
/// Called at node creation while anomaly mode is on.
pub type CaptureFn = fn() -> Option<AnomalyPayload>;
/// Called with a failing node (name, payload) and its error; returns the
/// error to propagate.
pub type ErrorFn = fn(&str, Option<&AnomalyPayload>, Error) -> Error;
/// Formats a payload as a call stack (for the version-counter error).
pub type DescribeFn = fn(&AnomalyPayload) -> Option<String>;

static ENABLED: AtomicBool = AtomicBool::new(false);
static CHECK_NAN: AtomicBool = AtomicBool::new(true);
static CAPTURE: OnceLock<CaptureFn> = OnceLock::new();
static ON_ERROR: OnceLock<ErrorFn> = OnceLock::new();
static DESCRIBE: OnceLock<DescribeFn> = OnceLock::new();

/// Turns anomaly mode on or off (and whether backward checks for NaN).
pub fn set_enabled(enabled: bool, check_nan: bool) {
    CHECK_NAN.store(check_nan, Ordering::Relaxed);
    ENABLED.store(enabled, Ordering::Release);
}

#[inline]
pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

pub fn check_nan_enabled() -> bool {
    CHECK_NAN.load(Ordering::Relaxed)
}

/// Installs the callbacks (once per process; later calls are ignored).
pub fn set_callbacks(capture: CaptureFn, on_error: ErrorFn, describe: DescribeFn) {
    let _ = CAPTURE.set(capture);
    let _ = ON_ERROR.set(on_error);
    let _ = DESCRIBE.set(describe);
}

/// A payload as text (a call stack), where the bindings can format it.
pub(crate) fn describe(payload: &AnomalyPayload) -> Option<String> {
    DESCRIBE.get().and_then(|f| f(payload))
}

/// The payload for a node being created, when anomaly mode is on.
#[inline]
pub(crate) fn capture() -> Option<AnomalyPayload> {
    if !is_enabled() {
        return None;
    }
    CAPTURE.get().and_then(|f| f())
}

/// Passes an error raised while evaluating `node` through the error callback.
pub(crate) fn on_error(node: &Node, e: Error) -> Error {
    match ON_ERROR.get() {
        Some(f) => f(&node.name(), node.anomaly.as_ref(), e),
        None => e,
    }
}

/// torch's NaN check on a node's outputs (only called when anomaly mode is on).
pub(crate) fn check_outputs(node: &Node, outputs: &[Option<Tensor>]) -> Result<()> {
    if !check_nan_enabled() {
        return Ok(());
    }
    for (i, g) in outputs.iter().enumerate() {
        let Some(g) = g else { continue };
        if g.dtype().is_floating() && g.to_f64_vec().iter().any(|v| v.is_nan()) {
            return Err(Error::runtime(format!(
                "Function '{}' returned nan values in its {}th output.",
                node.name(),
                i
            )));
        }
    }
    Ok(())
}
