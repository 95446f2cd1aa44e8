//! grad_fn objects: a Python view of a graph node.

use crate::autograd::Node;
use crate::python::autograd::hooks::{self, PyRemovableHandle};
use crate::python::core::identity::WeakTable;
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

#[pyclass(
    name = "Node",
    module = "ferrograd.autograd.graph",
    frozen,
    subclass,
    weakref
)]
pub struct PyNode {
    pub node: Arc<Node>,
}

/// One Python class per op name, as torch has (`type(y.grad_fn).__name__`
/// is "MulBackward0", which graph printers read): empty subclasses of
/// `Node`, made on first use.
static NODE_CLASSES: LazyLock<Mutex<HashMap<String, Py<PyType>>>> = LazyLock::new(Mutex::default);

/// The class for nodes named `name` ("torch::autograd::AccumulateGrad" gives
/// "AccumulateGrad", as in torch).
fn node_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let short = name.rsplit("::").next().unwrap_or(name);
    // The lock is never held while Python code runs.
    if let Some(cls) = NODE_CLASSES.lock().get(short) {
        return Ok(cls.bind(py).clone());
    }
    let attrs = PyDict::new(py);
    attrs.set_item("__slots__", PyTuple::empty(py))?;
    attrs.set_item("__module__", "builtins")?;
    let base = py.get_type::<PyNode>();
    let cls = py
        .get_type::<PyType>()
        .call1((short, (base,), attrs))?
        .cast_into::<PyType>()?;
    let mut classes = NODE_CLASSES.lock();
    let cls = classes
        .entry(short.to_string())
        .or_insert_with(|| cls.unbind());
    Ok(cls.bind(py).clone())
}

static NODE_OBJECTS: WeakTable = WeakTable::new();

/// A built-in node as a Python object of its op's class: the same object
/// while it lives (see `identity`).
pub(crate) fn node_object(py: Python<'_>, node: Arc<Node>) -> PyResult<Bound<'_, PyAny>> {
    let key = Arc::as_ptr(&node) as usize;
    let same = |obj: &Bound<'_, PyAny>| {
        obj.cast::<PyNode>()
            .is_ok_and(|o| Arc::ptr_eq(&o.get().node, &node))
    };
    if let Some(obj) = NODE_OBJECTS.find(py, key, same) {
        return Ok(obj);
    }
    let cls = node_class(py, &node.name())?;
    let obj = Bound::new(py, PyNode { node })?.into_any();
    // The class adds no slots, so its instances have Node's layout.
    obj.setattr(pyo3::intern!(py, "__class__"), cls)?;
    NODE_OBJECTS.remember(key, &obj)?;
    Ok(obj)
}

#[pymethods]
impl PyNode {
    fn name(&self) -> String {
        self.node.name().into_owned()
    }
    /// ((node or None, input_nr), ...) for each input of the op.
    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        crate::python::autograd::function::next_functions(py, &self.node)
    }
    /// A dict for user data, one per node (the same dict on every access).
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> Bound<'py, PyDict> {
        hooks::node_metadata(py, &self.node)
    }
    /// `hook(grad_inputs, grad_outputs)`, run after the node computed its
    /// gradients; may return replacement `grad_inputs` (a tuple).
    fn register_hook(&self, hook: &Bound<'_, PyAny>) -> PyRemovableHandle {
        hooks::register_node_hook(&self.node, hook)
    }
    /// `hook(grad_outputs)`, run before the node; may return replacement
    /// `grad_outputs` (a tuple).
    fn register_prehook(&self, hook: &Bound<'_, PyAny>) -> PyRemovableHandle {
        hooks::register_node_prehook(&self.node, hook)
    }
    fn _sequence_nr(&self) -> u64 {
        self.node.sequence_nr()
    }
    /// Always True for a built-in node, as torch's (a node exists only
    /// where some input required grad).
    #[getter]
    fn requires_grad(&self) -> bool {
        true
    }
    /// `_saved_<name>`, `_raw_saved_<name>`, AccumulateGrad's `variable`.
    fn __getattr__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        hooks::node_getattr(py, &self.node, name)
    }
    fn __dir__(slf: &Bound<'_, Self>) -> PyResult<Vec<String>> {
        let mut names: Vec<String> = slf
            .get_type()
            .dir()?
            .iter()
            .map(|n| n.extract())
            .collect::<PyResult<_>>()?;
        let node = &slf.get().node;
        for n in node.backward().saved_names() {
            names.push(format!("_raw_saved_{n}"));
            names.push(format!("_saved_{n}"));
        }
        for (n, _) in node.backward().saved_attrs() {
            names.push(format!("_saved_{n}"));
        }
        if node.as_any().is::<crate::autograd::AccumulateGrad>() {
            names.push("variable".to_string());
        }
        names.sort();
        Ok(names)
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
