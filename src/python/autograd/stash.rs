//! Tensors a custom Function's ctx holds that would own its node (see
//! `function.rs`'s module docs): replaced by stand-ins when apply returns,
//! put back for each backward call.

use super::function::PyFunctionCtx;
use crate::autograd::Node;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple, PyWeakrefReference};
use pyo3::{intern, PyTraverseError, PyVisit};
use std::sync::Arc;

/// How deep `stash_own_tensors` looks into lists, tuples and dicts.
const STASH_DEPTH: usize = 8;

/// Tensors stashed away from a ctx (see the module docs).
#[derive(Default)]
pub(super) struct Stash {
    entries: Vec<StashEntry>,
    /// Backward calls running with the tensors put back.
    active: usize,
}

/// One slot of a dict (the ctx's `__dict__` included) or list that held
/// such a tensor, or a tuple holding one.
pub(super) struct StashEntry {
    container: Py<PyAny>,
    /// The dict key, or the list index.
    key: Py<PyAny>,
    /// What the slot holds outside backward.
    standin: Py<PyAny>,
    /// What it holds during backward.
    live: Option<Py<PyAny>>,
    piece: Piece,
}

impl Stash {
    /// The Python objects it holds, for the ctx's `__traverse__`.
    pub(super) fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        for e in &self.entries {
            visit.call(&e.container)?;
            visit.call(&e.key)?;
            visit.call(&e.standin)?;
            if let Some(l) = &e.live {
                visit.call(l)?;
            }
            e.piece.traverse(visit)?;
        }
        Ok(())
    }

    /// Its entries, taken out to be dropped once the lock is released
    /// (dropping them may run Python code).
    pub(super) fn take(&mut self) -> Vec<StashEntry> {
        std::mem::take(&mut self.entries)
    }
}

/// A stashed value, to rebuild for backward.
enum Piece {
    /// A value kept as it is (in a rebuilt tuple).
    Keep(Py<PyAny>),
    Tensor {
        standin: Py<PyAny>,
        /// The tensor the user stored, while its Python object lives.
        original: Py<PyWeakrefReference>,
        /// Its output number, for an output of the node (a view of one has
        /// none: its stand-in is what backward gets once it is gone).
        output_nr: Option<usize>,
    },
    Tuple(Vec<Piece>),
}

impl Piece {
    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self {
            Piece::Keep(v) => visit.call(v),
            Piece::Tensor {
                standin, original, ..
            } => {
                visit.call(standin)?;
                visit.call(original)
            }
            Piece::Tuple(pieces) => pieces.iter().try_for_each(|p| p.traverse(visit)),
        }
    }
}

/// Whether `t` owns `node`: it is an output of it, or a view of one, or was
/// rebased onto it (an input marked dirty, through its base's history).
fn leads_to(t: &Tensor, node: &Arc<Node>) -> bool {
    let hits = |t: &Tensor| {
        t.grad_fn().is_some_and(|f| {
            Arc::ptr_eq(&f, node)
                || f.next_edges()
                    .iter()
                    .flatten()
                    .any(|e| Arc::ptr_eq(&e.node, node))
        })
    };
    hits(t) || t.view_base().is_some_and(hits)
}

/// Stand-ins made while scanning one ctx, by original object, so that a
/// tensor stored twice gets one stand-in.
type Memo = std::collections::HashMap<usize, (Py<PyAny>, Py<PyWeakrefReference>)>;

struct Scan<'a, 'py> {
    py: Python<'py>,
    node: &'a Arc<Node>,
    memo: Memo,
    entries: Vec<StashEntry>,
}

impl<'py> Scan<'_, 'py> {
    /// The stand-in for `v` (and its piece) when `v` must not stay where it
    /// is; lists and dicts are changed in place.
    fn value(
        &mut self,
        v: &Bound<'py, PyAny>,
        depth: usize,
    ) -> PyResult<Option<(Bound<'py, PyAny>, Piece)>> {
        let py = self.py;
        if let Ok(t) = v.cast::<PyTensor>() {
            let t = t.borrow().inner.clone();
            if !leads_to(&t, self.node) {
                return Ok(None);
            }
            let key = v.as_ptr() as usize;
            let (standin, original) = match self.memo.get(&key) {
                Some((s, o)) => (s.clone_ref(py), o.clone_ref(py)),
                None => {
                    // Same memory and version counter, no history, not a view.
                    let s = Bound::new(py, wrap(t.with_data_of(&t)))?
                        .into_any()
                        .unbind();
                    let o = PyWeakrefReference::new(v)?.unbind();
                    self.memo.insert(key, (s.clone_ref(py), o.clone_ref(py)));
                    (s, o)
                }
            };
            let own = t.grad_fn().is_some_and(|f| Arc::ptr_eq(&f, self.node));
            let piece = Piece::Tensor {
                standin: standin.clone_ref(py),
                original,
                output_nr: own.then(|| t.output_nr()),
            };
            return Ok(Some((standin.into_bound(py), piece)));
        }
        if depth >= STASH_DEPTH {
            return Ok(None);
        }
        if v.is_exact_instance_of::<PyList>() {
            let list = v.cast::<PyList>()?;
            for i in 0..list.len() {
                let item = list.get_item(i)?;
                if let Some((standin, piece)) = self.value(&item, depth + 1)? {
                    list.set_item(i, &standin)?;
                    self.push(v, i.into_pyobject(py)?.into_any(), standin, piece);
                }
            }
        } else if v.is_exact_instance_of::<PyDict>() {
            self.dict(v.cast::<PyDict>()?, depth)?;
        } else if v.is_exact_instance_of::<PyTuple>() {
            let items: Vec<Bound<'py, PyAny>> = v.cast::<PyTuple>()?.iter().collect();
            let mut pieces = Vec::with_capacity(items.len());
            let mut changed = false;
            let mut new = Vec::with_capacity(items.len());
            for item in items {
                match self.value(&item, depth + 1)? {
                    Some((standin, piece)) => {
                        changed = true;
                        new.push(standin);
                        pieces.push(piece);
                    }
                    None => {
                        pieces.push(Piece::Keep(item.clone().unbind()));
                        new.push(item);
                    }
                }
            }
            if changed {
                return Ok(Some((
                    PyTuple::new(py, new)?.into_any(),
                    Piece::Tuple(pieces),
                )));
            }
        }
        Ok(None)
    }

    fn dict(&mut self, d: &Bound<'py, PyDict>, depth: usize) -> PyResult<()> {
        let items: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> = d.iter().collect();
        for (k, item) in items {
            if let Some((standin, piece)) = self.value(&item, depth + 1)? {
                d.set_item(&k, &standin)?;
                self.push(d.as_any(), k, standin, piece);
            }
        }
        Ok(())
    }

    fn push(
        &mut self,
        container: &Bound<'py, PyAny>,
        key: Bound<'py, PyAny>,
        standin: Bound<'py, PyAny>,
        piece: Piece,
    ) {
        self.entries.push(StashEntry {
            container: container.clone().unbind(),
            key: key.unbind(),
            standin: standin.unbind(),
            live: None,
            piece,
        });
    }
}

/// Replaces the tensors on ctx (attributes, in lists, tuples and dicts)
/// that would own `node` by stand-ins, as apply returns. Also drops the
/// history of such tensors given to `save_for_forward` (only `jvp`, run by
/// now, reads them, for their values).
pub(super) fn stash_own_tensors(ctx: &Bound<'_, PyFunctionCtx>, node: &Arc<Node>) -> PyResult<()> {
    let py = ctx.py();
    let this = ctx.get();
    if let Some(saved) = this.saved_for_forward.lock().as_mut() {
        for t in saved.iter_mut().flatten() {
            if leads_to(t, node) {
                *t = t.with_data_of(t);
            }
        }
    }
    let dict = ctx.getattr(intern!(py, "__dict__"))?;
    let Ok(dict) = dict.cast::<PyDict>() else {
        return Ok(());
    };
    if dict.is_empty() {
        return Ok(());
    }
    let mut scan = Scan {
        py,
        node,
        memo: Memo::new(),
        entries: Vec::new(),
    };
    scan.dict(dict, 0)?;
    if !scan.entries.is_empty() {
        this.stash.lock().entries.extend(scan.entries);
    }
    Ok(())
}

/// The value a stashed piece has during backward.
fn materialize<'py>(
    py: Python<'py>,
    piece: &Piece,
    node: &Arc<Node>,
    memo: &mut std::collections::HashMap<usize, Py<PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    match piece {
        Piece::Keep(v) => Ok(v.bind(py).clone()),
        Piece::Tuple(pieces) => {
            let items = pieces
                .iter()
                .map(|p| materialize(py, p, node, memo))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyTuple::new(py, items)?.into_any())
        }
        Piece::Tensor {
            standin,
            original,
            output_nr,
        } => {
            let key = standin.as_ptr() as usize;
            if let Some(v) = memo.get(&key) {
                return Ok(v.bind(py).clone());
            }
            let v = match original.bind(py).upgrade() {
                Some(o)
                    if o.cast::<PyTensor>()
                        .is_ok_and(|t| leads_to(&t.borrow().inner, node)) =>
                {
                    o
                }
                _ => match output_nr {
                    // An alias of the output with its history, as a saved
                    // output is unpacked.
                    Some(nr) => {
                        let s = standin.bind(py).cast::<PyTensor>()?.borrow().inner.clone();
                        let t = s.detach();
                        t.set_history(node.clone(), *nr);
                        Bound::new(py, wrap(t))?.into_any()
                    }
                    None => standin.bind(py).clone(),
                },
            };
            memo.insert(key, v.clone().unbind());
            Ok(v)
        }
    }
}

fn slot<'py>(container: &Bound<'py, PyAny>, key: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
    if let Ok(d) = container.cast::<PyDict>() {
        return d.get_item(key).ok().flatten();
    }
    let list = container.cast::<PyList>().ok()?;
    let i: usize = key.extract().ok()?;
    (i < list.len()).then(|| list.get_item(i).ok()).flatten()
}

impl PyFunctionCtx {
    /// Puts the stashed tensors back for a backward call (the first of
    /// those running at once).
    pub(super) fn restore_stash(&self, py: Python<'_>, node: &Arc<Node>) -> PyResult<()> {
        let mut entries = {
            let mut st = self.stash.lock();
            st.active += 1;
            if st.active > 1 || st.entries.is_empty() {
                return Ok(());
            }
            std::mem::take(&mut st.entries)
        };
        let mut memo = std::collections::HashMap::new();
        let mut result = Ok(());
        for e in &mut entries {
            let container = e.container.bind(py);
            let key = e.key.bind(py);
            if !slot(container, key).is_some_and(|v| v.is(e.standin.bind(py))) {
                continue; // the user put something else there
            }
            match materialize(py, &e.piece, node, &mut memo) {
                Ok(live) => {
                    if let Err(err) = container.set_item(key, &live) {
                        result = Err(err);
                        break;
                    }
                    e.live = Some(live.unbind());
                }
                Err(err) => {
                    result = Err(err);
                    break;
                }
            }
        }
        self.stash.lock().entries.extend(entries);
        result
    }

    /// Stashes the tensors again when the last backward call running ends.
    pub(super) fn unrestore_stash(&self, py: Python<'_>) {
        let mut entries = {
            let mut st = self.stash.lock();
            st.active = st.active.saturating_sub(1);
            if st.active > 0 {
                return;
            }
            std::mem::take(&mut st.entries)
        };
        for e in &mut entries {
            let Some(live) = e.live.take() else {
                continue;
            };
            let container = e.container.bind(py);
            let key = e.key.bind(py);
            if slot(container, key).is_some_and(|v| v.is(live.bind(py))) {
                let _ = container.set_item(key, e.standin.bind(py));
            }
            drop(live);
        }
        self.stash.lock().entries.extend(entries);
    }
}
