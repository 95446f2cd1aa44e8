//! Profiler bindings: session start/stop (events come from
//! `crate::autograd::profiler`) and `record_function` ranges.

use crate::autograd::profiler::{self, EventKind, RangeGuard};
use parking_lot::Mutex;
use pyo3::prelude::*;

/// One event as Python gets it:
/// (name, kind, start_ns, dur_ns, self_ns, tid, input_shapes).
type PyEvent = (String, &'static str, u64, u64, u64, u64, Vec<Vec<usize>>);

#[pyfunction]
#[pyo3(signature = (record_shapes = false))]
fn _profiler_start(record_shapes: bool) -> PyResult<()> {
    Ok(profiler::start(record_shapes)?)
}

/// Ends the session; forward ops are named as torch names them (`aten::mul`).
#[pyfunction]
fn _profiler_stop() -> Vec<PyEvent> {
    profiler::stop()
        .into_iter()
        .map(|e| {
            let name = match e.kind {
                EventKind::Op => profiler::forward_op_name(&e.name),
                _ => e.name.into_owned(),
            };
            (
                name,
                e.kind.as_str(),
                e.start_ns,
                e.dur_ns,
                e.self_ns,
                e.tid,
                e.shapes,
            )
        })
        .collect()
}

#[pyfunction]
fn _profiler_enabled() -> bool {
    profiler::is_enabled()
}

/// A user range: opened by `_enter`, reported by `_exit`.
#[pyclass(name = "_RecordFunction", module = "ferrograd._C")]
struct PyRecordFunction {
    name: String,
    guard: Mutex<Option<RangeGuard>>,
}

#[pymethods]
impl PyRecordFunction {
    #[new]
    fn new(name: String) -> Self {
        PyRecordFunction {
            name,
            guard: Mutex::new(None),
        }
    }
    fn _enter(&self) {
        *self.guard.lock() = profiler::user_range(self.name.clone());
    }
    fn _exit(&self) {
        drop(self.guard.lock().take());
    }
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_profiler_start, m)?)?;
    m.add_function(wrap_pyfunction!(_profiler_stop, m)?)?;
    m.add_function(wrap_pyfunction!(_profiler_enabled, m)?)?;
    m.add_class::<PyRecordFunction>()?;
    Ok(())
}
