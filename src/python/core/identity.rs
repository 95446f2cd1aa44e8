//! One Python object per Rust object where torch code relies on identity.
//! Op results are always fresh tensors (a new object each), but what lives
//! in the graph is handed out again and again:
//! - `x.grad` returns the same object on every access, and the very object
//!   it was set to, so `x.grad is x.grad` holds and attributes set on a
//!   gradient stay on it;
//! - `y.grad_fn` and `next_functions` return one object per node, so graph
//!   walkers that key nodes by `id()` or `is` see each node once.
//!
//! Two cases need no table (`core::tensor`): an op that returned its input
//! (`t.contiguous() is t`) gives back the calling object (`same_or_new`, a
//! pointer test), and a view made by a view op's binding holds its base's
//! object (`view_result`), so `v._base is base`.
//!
//! Objects are found by the Rust object's address through weak references:
//! a table never keeps an object alive. While an object lives it holds its
//! Rust object (an `Arc`), so an address cannot be reused by another one
//! until the Python object is gone (and then its weak reference is dead).

use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyWeakrefReference;
use std::collections::HashMap;
use std::sync::LazyLock;

/// Live Python objects by the address of the Rust object they wrap.
pub struct WeakTable(LazyLock<Mutex<Table>>);

struct Table {
    objects: HashMap<usize, Py<PyWeakrefReference>>,
    /// Entries from which dead ones are swept before the next insert.
    sweep_at: usize,
}

impl WeakTable {
    pub const fn new() -> Self {
        WeakTable(LazyLock::new(|| {
            Mutex::new(Table {
                objects: HashMap::new(),
                sweep_at: 64,
            })
        }))
    }

    /// The live object recorded for `key`, if `is_same` confirms it wraps
    /// the Rust object the caller means.
    pub fn find<'py>(
        &self,
        py: Python<'py>,
        key: usize,
        is_same: impl FnOnce(&Bound<'py, PyAny>) -> bool,
    ) -> Option<Bound<'py, PyAny>> {
        // The lock is never held while Python code could run.
        let weak = self.0.lock().objects.get(&key)?.clone_ref(py);
        let obj = weak.bind(py).upgrade()?;
        is_same(&obj).then_some(obj)
    }

    /// Records `obj` as the object for `key`.
    pub fn remember(&self, key: usize, obj: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = obj.py();
        let weak = PyWeakrefReference::new(obj)?.unbind();
        let mut table = self.0.lock();
        if table.objects.len() >= table.sweep_at {
            // upgrade() only takes a reference to a live object (no Python
            // code runs), and dropping it leaves the object alive.
            table.objects.retain(|_, w| w.bind(py).upgrade().is_some());
            table.sweep_at = (2 * table.objects.len()).max(64);
        }
        let old = table.objects.insert(key, weak);
        drop(table);
        drop(old); // outside the lock: dropping a weak reference is a decref
        Ok(())
    }
}

static TENSORS: WeakTable = WeakTable::new();

/// Records `obj` as the object of its tensor.
pub fn remember(obj: &Bound<'_, PyTensor>) -> PyResult<()> {
    let key = obj.borrow().inner.id();
    TENSORS.remember(key, obj.as_any())
}

/// `t`'s Python object: the one handed out before while it is alive, else
/// a new one (remembered).
pub fn object<'py>(py: Python<'py>, t: Tensor) -> PyResult<Bound<'py, PyAny>> {
    let same = |obj: &Bound<'py, PyAny>| {
        obj.cast::<PyTensor>()
            .is_ok_and(|o| o.borrow().inner.same(&t))
    };
    if let Some(obj) = TENSORS.find(py, t.id(), same) {
        return Ok(obj);
    }
    let obj = Bound::new(py, wrap(t))?;
    remember(&obj)?;
    Ok(obj.into_any())
}

/// A new tensor object on its way to Python: remembered as its tensor's
/// object when it requires grad (leaves made by factories), so that graph
/// walkers get it back (`next_functions[0][0].variable is x`). Other
/// results are not remembered (no per-op cost).
pub struct Fresh(pub PyTensor);

impl<'py> IntoPyObject<'py> for Fresh {
    type Target = PyTensor;
    type Output = Bound<'py, PyTensor>;
    type Error = PyErr;
    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyTensor>> {
        let obj = Bound::new(py, self.0)?;
        if obj.borrow().inner.requires_grad() {
            remember(&obj)?;
        }
        Ok(obj)
    }
}
