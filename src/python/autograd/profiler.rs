//! Profiler bindings: session start/stop (events come from
//! `crate::autograd::profiler`) and `record_function` ranges.

use crate::autograd::profiler::{self, EventKind, RangeGuard};
use crate::python::core::bind::bind_functions;
use parking_lot::Mutex;
use pyo3::prelude::*;

/// One event as Python gets it: (name, kind, start_ns, dur_ns, self_ns,
/// tid, input_shapes, stack, memory, self_memory).
type PyEvent = (
    String,
    &'static str,
    u64,
    u64,
    u64,
    u64,
    Vec<Vec<usize>>,
    Vec<String>,
    i64,
    i64,
);

bind_functions! { register_functions:
    #[pyo3(signature = (record_shapes = false, with_stack = false, profile_memory = false))]
    fn _profiler_start(
        record_shapes: bool,
        with_stack: bool,
        profile_memory: bool,
    ) -> PyResult<()> {
        Ok(profiler::start_with(profiler::Options {
            record_shapes,
            with_stack,
            profile_memory,
        })?)
    }
    /// Ends the session; forward ops are named as torch names them (`aten::mul`).
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
                    e.stack,
                    e.memory,
                    e.self_memory,
                )
            })
            .collect()
    }
    fn _profiler_enabled() -> bool {
        profiler::is_enabled()
    }
}

/// The Python stack of the calling thread, innermost frame first, as
/// torch writes it (`file(line): function`). The core never calls it inside
/// a backward node (engine workers), only for forward ops and user ranges.
fn capture_stack() -> Vec<String> {
    Python::attach(|py| {
        let mut out = Vec::new();
        let Ok(sys) = py.import("sys") else {
            return out;
        };
        let mut frame = sys.call_method1("_getframe", (0,)).ok();
        while let Some(f) = frame.filter(|f| !f.is_none()) {
            let entry = (|| -> PyResult<String> {
                let code = f.getattr("f_code")?;
                let file: String = code.getattr("co_filename")?.extract()?;
                let name: String = code.getattr("co_name")?.extract()?;
                let line: i64 = f.getattr("f_lineno")?.extract().unwrap_or(0);
                Ok(format!("{file}({line}): {name}"))
            })();
            if let Ok(e) = entry {
                out.push(e);
            }
            frame = f.getattr("f_back").ok();
        }
        out
    })
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
    register_functions(m)?;
    profiler::set_stack_capture(capture_stack);
    m.add_class::<PyRecordFunction>()?;
    Ok(())
}
