//! Anomaly mode bindings: the flag, the forward-traceback capture run at
//! node creation, and the error callback that attaches that traceback to a
//! failing backward's exception (as a PEP 678 note) and warns as torch does.

use crate::autograd::anomaly::{self, AnomalyPayload};
use crate::python::core::bind::bind_functions;
use crate::python::core::errors::PyErrPayload;
use crate::Error;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::sync::Arc;

/// The forward call stack of a node, outermost frame first:
/// (file, line, function). Source lines are looked up only when reported.
struct ForwardFrames(Vec<(String, i64, String)>);

/// Walks the Python frames of the calling thread (cheaper than
/// `traceback.format_stack()`: no source lookup, no formatting). `None`
/// where the thread runs no Python code (a backward worker).
fn capture() -> Option<AnomalyPayload> {
    Python::attach(|py| {
        let sys = py.import(intern!(py, "sys")).ok()?;
        let mut frame = sys.call_method1(intern!(py, "_getframe"), (0,)).ok()?;
        let mut frames = Vec::new();
        loop {
            let code = frame.getattr(intern!(py, "f_code")).ok()?;
            let file: String = code
                .getattr(intern!(py, "co_filename"))
                .ok()?
                .extract()
                .ok()?;
            let name: String = code.getattr(intern!(py, "co_name")).ok()?.extract().ok()?;
            let line: i64 = frame
                .getattr(intern!(py, "f_lineno"))
                .ok()
                .and_then(|l| l.extract().ok())
                .unwrap_or(0);
            frames.push((file, line, name));
            let back = frame.getattr(intern!(py, "f_back")).ok()?;
            if back.is_none() {
                break;
            }
            frame = back;
        }
        frames.reverse();
        Some(Arc::new(ForwardFrames(frames)) as AnomalyPayload)
    })
}

/// The frames as `traceback.format_stack()` prints them.
fn format_frames(py: Python<'_>, frames: &ForwardFrames) -> String {
    let linecache = py.import(intern!(py, "linecache")).ok();
    let mut out = String::new();
    for (file, line, name) in &frames.0 {
        out.push_str(&format!(
            "  File \"{}\", line {}, in {}\n",
            file, line, name
        ));
        let src: Option<String> = linecache.as_ref().and_then(|lc| {
            lc.call_method1(intern!(py, "getline"), (file, *line))
                .ok()?
                .extract()
                .ok()
        });
        if let Some(src) = src {
            let src = src.trim();
            if !src.is_empty() {
                out.push_str(&format!("    {}\n", src));
            }
        }
    }
    out
}

/// A captured call stack as `traceback.format_stack()` prints it.
fn describe(payload: &AnomalyPayload) -> Option<String> {
    let frames = payload.downcast_ref::<ForwardFrames>()?;
    Some(Python::attach(|py| format_frames(py, frames)))
}

fn message(py: Python<'_>, name: &str, payload: Option<&AnomalyPayload>) -> String {
    match payload.and_then(|p| p.downcast_ref::<ForwardFrames>()) {
        Some(frames) => format!(
            "Error detected in {}. Traceback of forward call that caused the error:\n{}",
            name,
            format_frames(py, frames)
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
        let note = message(py, name, payload);
        let err: PyErr = e.into();
        // A warning turned into an error (-W error) must not replace the
        // backward's own exception.
        let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
        let text = std::ffi::CString::new(note.replace('\0', " ")).unwrap_or_default();
        let _ = PyErr::warn(py, &category, &text, 1);
        let _ = add_note(py, &err, &note);
        Error::with_payload(kind, msg, Arc::new(PyErrPayload(err)))
    })
}

bind_functions! { register_functions:
    #[pyo3(signature = (enabled, check_nan = true))]
    fn _set_anomaly_enabled(enabled: bool, check_nan: bool) {
        anomaly::set_enabled(enabled, check_nan);
    }
    fn _is_anomaly_enabled() -> bool {
        anomaly::is_enabled()
    }
    fn _is_anomaly_check_nan_enabled() -> bool {
        anomaly::check_nan_enabled()
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    anomaly::set_callbacks(capture, on_error, describe);
    Ok(())
}
