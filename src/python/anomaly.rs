//! Anomaly mode bindings: the flag, the forward-traceback capture run at
//! node creation, and the error callback that attaches that traceback to a
//! failing backward's exception (as a PEP 678 note) and warns as torch does.

use super::function::PyErrPayload;
use crate::autograd::anomaly::{self, AnomalyPayload};
use crate::Error;
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::sync::Arc;

/// The forward traceback of a node (`traceback.format_stack()`, joined).
struct ForwardTraceback(String);

fn capture() -> Option<AnomalyPayload> {
    Python::attach(|py| {
        let tb = py.import("traceback").ok()?;
        let frames = tb.call_method0("format_stack").ok()?;
        let frames: Vec<String> = frames.extract().ok()?;
        Some(Arc::new(ForwardTraceback(frames.concat())) as AnomalyPayload)
    })
}

fn message(name: &str, payload: Option<&AnomalyPayload>) -> String {
    match payload.and_then(|p| p.downcast_ref::<ForwardTraceback>()) {
        Some(tb) => format!(
            "Error detected in {}. Traceback of forward call that caused the error:\n{}",
            name, tb.0
        ),
        None => format!(
            "Error detected in {}. No forward pass information available. Enable detect anomaly during forward pass for more information.",
            name
        ),
    }
}

/// Adds `note` to the exception: `add_note` (Python >= 3.11), else appends
/// to its `__notes__` list by hand (PEP 678's attribute; older interpreters
/// keep it but do not print it).
fn add_note(py: Python<'_>, err: &PyErr, note: &str) -> PyResult<()> {
    let value = err.value(py);
    if value.hasattr("add_note")? {
        value.call_method1("add_note", (note,))?;
        return Ok(());
    }
    let notes = match value.getattr("__notes__") {
        Ok(n) => n,
        Err(_) => {
            let n = PyList::empty(py).into_any();
            value.setattr("__notes__", &n)?;
            n
        }
    };
    notes.call_method1("append", (note,))?;
    Ok(())
}

fn on_error(name: &str, payload: Option<&AnomalyPayload>, e: Error) -> Error {
    let kind = e.kind;
    let msg = e.msg.clone();
    Python::attach(|py| {
        let note = message(name, payload);
        let err: PyErr = e.into();
        // A warning turned into an error (-W error) must not replace the
        // backward's own exception.
        let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
        if let Err(w) = PyErr::warn(py, &category, &std::ffi::CString::new(note.clone()).unwrap_or_default(), 1) {
            drop(w);
        }
        let _ = add_note(py, &err, &note);
        Error::with_payload(kind, msg, Arc::new(PyErrPayload(err)))
    })
}

#[pyfunction]
#[pyo3(signature = (enabled, check_nan = true))]
fn _set_anomaly_enabled(enabled: bool, check_nan: bool) {
    anomaly::set_enabled(enabled, check_nan);
}

#[pyfunction]
fn _is_anomaly_enabled() -> bool {
    anomaly::is_enabled()
}

#[pyfunction]
fn _is_anomaly_check_nan_enabled() -> bool {
    anomaly::check_nan_enabled()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    anomaly::set_callbacks(capture, on_error);
    m.add_function(wrap_pyfunction!(_set_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_is_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_is_anomaly_check_nan_enabled, m)?)?;
    Ok(())
}
