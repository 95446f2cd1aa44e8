//! One Python object per Rust tensor where torch code relies on identity.
//! Op results are always fresh tensors (a new object each), but a tensor
//! that lives in the graph, like a gradient, is handed out again and again:
//! `x.grad` returns the same object on every access, and the very object it
//! was set to, so `x.grad is x.grad` holds and attributes set on a gradient
//! stay on it, as in torch.
//!
//! Objects are found by the Rust tensor's identity through weak references:
//! the table never keeps an object alive. While an object lives it holds its
//! tensor, so a key cannot be reused by another tensor until the object is
//! gone (and then its weak reference is dead).

use super::tensor::{wrap, PyTensor};
use crate::Tensor;
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyWeakrefReference;
use std::collections::HashMap;
use std::sync::LazyLock;

struct Table {
    objects: HashMap<usize, Py<PyWeakrefReference>>,
    /// Entries from which dead ones are swept before the next insert.
    sweep_at: usize,
}

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(|| {
    Mutex::new(Table {
        objects: HashMap::new(),
        sweep_at: 64,
    })
});

/// The live Python object of `t`, if one was handed out or remembered.
fn find<'py>(py: Python<'py>, t: &Tensor) -> Option<Bound<'py, PyAny>> {
    // The lock is never held while Python code could run.
    let weak = TABLE.lock().objects.get(&t.id())?.clone_ref(py);
    let obj = weak.bind(py).upgrade()?;
    let same = obj
        .cast::<PyTensor>()
        .is_ok_and(|o| o.borrow().inner.same(t));
    same.then_some(obj)
}

/// Records `obj` as the object of its tensor.
pub fn remember(obj: &Bound<'_, PyTensor>) -> PyResult<()> {
    let py = obj.py();
    let key = obj.borrow().inner.id();
    let weak = PyWeakrefReference::new(obj)?.unbind();
    let mut table = TABLE.lock();
    if table.objects.len() >= table.sweep_at {
        // upgrade() only takes a reference to a live object (no Python code
        // runs), and dropping it leaves the object alive.
        table.objects.retain(|_, w| w.bind(py).upgrade().is_some());
        table.sweep_at = (2 * table.objects.len()).max(64);
    }
    let old = table.objects.insert(key, weak);
    drop(table);
    drop(old); // outside the lock: dropping a weak reference is a decref
    Ok(())
}

/// `t`'s Python object: the one handed out before while it is alive, else
/// a new one (remembered).
pub fn object<'py>(py: Python<'py>, t: Tensor) -> PyResult<Bound<'py, PyAny>> {
    if let Some(obj) = find(py, &t) {
        return Ok(obj);
    }
    let obj = Bound::new(py, wrap(t))?;
    remember(&obj)?;
    Ok(obj.into_any())
}
