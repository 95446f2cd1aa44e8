//! grad_fn objects: a Python view of a graph node.

use crate::autograd::Node;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::Arc;

#[pyclass(name = "Node", module = "ferrograd.autograd.graph", frozen)]
pub struct PyNode {
    pub node: Arc<Node>,
}

#[pymethods]
impl PyNode {
    fn name(&self) -> String {
        self.node.name().into_owned()
    }
    /// ((node or None, input_nr), ...) for each input of the op.
    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        super::function::next_functions(py, &self.node)
    }
    fn __repr__(&self) -> String {
        format!(
            "<{} object at {:#x}>",
            self.node.name(),
            Arc::as_ptr(&self.node) as usize
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyNode>()
            .map(|o| Arc::ptr_eq(&o.get().node, &self.node))
            .unwrap_or(false)
    }
    fn __hash__(&self) -> isize {
        Arc::as_ptr(&self.node) as isize
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyNode>()
}
