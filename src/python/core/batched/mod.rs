//! vmap's batched tensor (torch's BatchedTensorImpl): a physical tensor
//! whose leading dims are the batch dims of its vmap levels, one per level
//! in increasing level order, then the logical dims that the mapped
//! function sees. `vmap` (`python/ferrograd/func/_vmap.py`) wraps its
//! inputs with `_vmap_wrap` and unwraps the outputs with `_vmap_unwrap`;
//! in between, every method call on a batched tensor goes through its op's
//! batching rule (`ops::batching`): the rule rewrites the arguments for the
//! physical tensor and calls the ordinary op once, so the computation (and
//! the autograd graph it records) is the op's own. A method without a rule
//! raises `_VmapFallback` naming the op: `vmap` then warns once and runs
//! the function slice by slice. Nothing is written before a rule runs, so
//! that rerun starts from the inputs as they were.

use crate::buffer::layout::wrap_dim;
use crate::ops::batching::{
    rule, union_levels, Absent, Align, AllDims, DimsRule, MatmulRanks, Rule,
};
use crate::python::core::args::make_size;
use crate::python::core::bind::bind_functions;
use crate::python::core::tensor::PyTensor;
use pyo3::exceptions::{PyException, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PySlice, PyTuple};
use std::cell::{Cell, RefCell};

pyo3::create_exception!(
    ferrograd,
    VmapFallback,
    PyException,
    "Raised inside vmap by an op without a batching rule (its name is the argument): vmap then runs the per-slice fallback."
);

thread_local! {
    /// The active vmap levels of this thread, outermost first: (level, batch size).
    static ACTIVE: RefCell<Vec<(u32, usize)>> = const { RefCell::new(Vec::new()) };
    /// The next level number (levels are never reused, so a batched value
    /// that escaped its vmap is never taken for a later level's).
    static NEXT: Cell<u32> = const { Cell::new(1) };
    /// (level, storage address) of each input that `_vmap_wrap` batched:
    /// in-place rules never write into them.
    static WRAPPED: RefCell<Vec<(u32, usize)>> = const { RefCell::new(Vec::new()) };
}

/// A value batched over one or more vmap levels.
#[pyclass(name = "_BatchedTensor", module = "ferrograd._C", frozen)]
pub struct PyBatched {
    /// The physical tensor (a `Tensor` object): batch dims first.
    phys: Py<PyAny>,
    /// (level, batch size) of each leading dim, increasing levels.
    levels: Vec<(u32, usize)>,
}

/// A batched tensor's (or a plain tensor's, with no levels) parts.
struct Parts<'py> {
    phys: Bound<'py, PyAny>,
    levels: Vec<(u32, usize)>,
    logical: Vec<usize>,
}

impl Parts<'_> {
    fn nb(&self) -> usize {
        self.levels.len()
    }
    fn rank(&self) -> usize {
        self.logical.len()
    }
    fn have(&self) -> Vec<u32> {
        self.levels.iter().map(|(l, _)| *l).collect()
    }
    fn batch_sizes(&self) -> Vec<usize> {
        self.levels.iter().map(|(_, s)| *s).collect()
    }
}

fn shape_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let t = obj.cast::<PyTensor>()?;
    Ok(t.borrow().inner.shape().to_vec())
}

/// The parts of a tensor or batched tensor; None for anything else.
fn parts<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Parts<'py>>> {
    if let Ok(b) = obj.cast::<PyBatched>() {
        let b = b.get();
        let phys = b.phys.bind(obj.py()).clone();
        let shape = shape_of(&phys)?;
        let logical = shape[b.levels.len()..].to_vec();
        return Ok(Some(Parts {
            phys,
            levels: b.levels.clone(),
            logical,
        }));
    }
    if obj.cast::<PyTensor>().is_ok() {
        return Ok(Some(Parts {
            phys: obj.clone(),
            levels: Vec::new(),
            logical: shape_of(obj)?,
        }));
    }
    Ok(None)
}

pub(crate) fn is_batched(obj: &Bound<'_, PyAny>) -> bool {
    obj.cast::<PyBatched>().is_ok()
}

/// `phys` batched over `levels` (the tensor itself when there are none).
fn make(py: Python<'_>, phys: Bound<'_, PyAny>, levels: Vec<(u32, usize)>) -> PyResult<Py<PyAny>> {
    if levels.is_empty() {
        return Ok(phys.unbind());
    }
    Ok(Bound::new(
        py,
        PyBatched {
            phys: phys.unbind(),
            levels,
        },
    )?
    .into_any()
    .unbind())
}

/// An op's result batched over `levels`: each tensor in it (tuples,
/// named tuples and lists kept); other values as they are.
fn wrap_result(res: Bound<'_, PyAny>, levels: &[(u32, usize)]) -> PyResult<Py<PyAny>> {
    let py = res.py();
    Ok(map_tensors(res, &|t| Ok(make(py, t, levels.to_vec())?.into_bound(py)))?.unbind())
}

/// `res` with `f` applied to each tensor in it (tuples, named tuples and
/// lists kept); other values as they are.
fn map_tensors<'py>(
    res: Bound<'py, PyAny>,
    f: &dyn Fn(Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = res.py();
    if res.cast::<PyTensor>().is_ok() {
        return f(res);
    }
    if let Ok(t) = res.cast::<PyTuple>() {
        let items = t
            .iter()
            .map(|x| map_tensors(x, f))
            .collect::<PyResult<Vec<_>>>()?;
        let tuple = PyTuple::new(py, items)?;
        if res.is_exact_instance_of::<PyTuple>() {
            return Ok(tuple.into_any());
        }
        // A named tuple (torch.return_types): rebuilt with its class.
        let cls = res.get_type();
        if let Ok(m) = cls.getattr("_make") {
            return m.call1((tuple,));
        }
        return cls.call1((tuple,));
    }
    if let Ok(l) = res.cast::<PyList>() {
        let items = l
            .iter()
            .map(|x| map_tensors(x, f))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(PyList::new(py, items)?.into_any());
    }
    Ok(res)
}

/// The result of a rule that ran an op on physical tensors led by the
/// batch dims of `all`: each tensor in it must be led by them too; one
/// the op left empty (`lstsq`'s residuals) gets them (every sample's is
/// empty); any other takes the fallback.
fn batch_led<'py>(
    out: Bound<'py, PyAny>,
    all: &[(u32, usize)],
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let sizes: Vec<usize> = all.iter().map(|(_, s)| *s).collect();
    map_tensors(out, &|t| {
        let shape = shape_of(&t)?;
        if shape.len() >= sizes.len() && shape[..sizes.len()] == sizes[..] {
            return Ok(t);
        }
        if shape == [0] {
            let mut empty = sizes.clone();
            empty.push(0);
            return t.call_method1("new_zeros", (empty,));
        }
        Err(fallback(name))
    })
}

/// The error that sends vmap to the per-slice fallback for op `name`.
pub(crate) fn fallback(name: &str) -> PyErr {
    VmapFallback::new_err(name.to_string())
}

/// `p`'s physical tensor aligned to the levels `all` and `rank` logical
/// dims: a size-1 dim for each level it lacks, then for each missing
/// leading logical dim (views, never copies).
fn align<'py>(p: &Parts<'py>, all: &[(u32, usize)], rank: usize) -> PyResult<Bound<'py, PyAny>> {
    let mut phys = p.phys.clone();
    let have = p.have();
    for (i, (lvl, _)) in all.iter().enumerate() {
        if !have.contains(lvl) {
            phys = phys.call_method1("unsqueeze", (i,))?;
        }
    }
    for _ in p.rank()..rank {
        phys = phys.call_method1("unsqueeze", (all.len(),))?;
    }
    Ok(phys)
}

fn wrap_logical(d: i64, rank: usize, nb: usize) -> PyResult<usize> {
    Ok(wrap_dim(d, rank)? + nb)
}

/// A dim argument: its position in args or its keyword.
#[derive(Clone, Copy)]
enum Slot {
    Pos(usize),
    Kw(&'static str),
    Absent,
}

fn find_arg<'py>(
    args: &[Bound<'py, PyAny>],
    kwargs: &Option<Bound<'py, PyDict>>,
    pos: usize,
    kw: &'static str,
) -> PyResult<(Slot, Option<Bound<'py, PyAny>>)> {
    if let Some(k) = kwargs {
        if let Some(v) = k.get_item(kw)? {
            return Ok((Slot::Kw(kw), Some(v)));
        }
    }
    if args.len() > pos {
        return Ok((Slot::Pos(pos), Some(args[pos].clone())));
    }
    Ok((Slot::Absent, None))
}

fn set_arg<'py>(
    py: Python<'py>,
    args: &mut [Bound<'py, PyAny>],
    kwargs: &mut Option<Bound<'py, PyDict>>,
    slot: Slot,
    kw: &'static str,
    value: Bound<'py, PyAny>,
) -> PyResult<()> {
    match slot {
        Slot::Pos(i) => args[i] = value,
        Slot::Kw(k) => kwargs.as_ref().expect("found there").set_item(k, value)?,
        Slot::Absent => {
            let d = kwargs.get_or_insert_with(|| PyDict::new(py));
            d.set_item(kw, value)?;
        }
    }
    Ok(())
}

/// Shifted dims: an int, or a tuple/list of them, wrapped against `rank`.
fn shift_dims<'py>(
    py: Python<'py>,
    d: &Bound<'py, PyAny>,
    rank: usize,
    nb: usize,
) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(i) = d.extract::<i64>() {
        return Ok(wrap_logical(i, rank, nb)?.into_pyobject(py)?.into_any());
    }
    let ds: Vec<i64> = d.extract()?;
    let shifted = ds
        .iter()
        .map(|&i| wrap_logical(i, rank, nb))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new(py, shifted)?.into_any())
}

/// Ints from varargs or from one sequence argument (`view(2, 3)`, `view((2, 3))`).
fn int_list(args: &[Bound<'_, PyAny>]) -> PyResult<Vec<i64>> {
    if args.len() == 1 {
        if let Ok(v) = args[0].extract::<Vec<i64>>() {
            return Ok(v);
        }
    }
    args.iter().map(|a| a.extract::<i64>()).collect()
}

fn no_other_batched(
    name: &str,
    args: &[Bound<'_, PyAny>],
    kwargs: &Option<Bound<'_, PyDict>>,
) -> PyResult<()> {
    let batched_kw = match kwargs {
        Some(k) => k.values().iter().any(|v| is_batched(&v)),
        None => false,
    };
    if args.iter().any(is_batched) || batched_kw {
        return Err(fallback(name));
    }
    Ok(())
}

mod dispatch;
mod functions;
mod methods;
mod nn;
pub(crate) use dispatch::refuse_write_into_plain;
use dispatch::*;
pub(crate) use functions::vmap_rule;
pub(crate) use functions::*;
use methods::BatchedMethod;
pub(crate) use nn::*;

fn active_size(level: u32) -> PyResult<usize> {
    ACTIVE.with(|a| {
        a.borrow()
            .iter()
            .find(|(l, _)| *l == level)
            .map(|(_, s)| *s)
            .ok_or_else(|| PyRuntimeError::new_err(format!("vmap: level {level} is not active")))
    })
}

bind_functions! { register_vmap_fns:
    /// Starts a vmap level of `batch_size`; returns its number.
    fn _vmap_enter(batch_size: usize) -> u32 {
        let lvl = NEXT.with(|n| {
            let l = n.get();
            n.set(l + 1);
            l
        });
        ACTIVE.with(|a| a.borrow_mut().push((lvl, batch_size)));
        lvl
    }
    /// Ends vmap level `level` (and any level started inside it).
    fn _vmap_exit(level: u32) {
        ACTIVE.with(|a| a.borrow_mut().retain(|(l, _)| *l < level));
        WRAPPED.with(|w| w.borrow_mut().retain(|(l, _)| *l < level));
    }
    /// The active levels, outermost first: [(level, batch size)].
    fn _vmap_levels() -> Vec<(u32, usize)> {
        ACTIVE.with(|a| a.borrow().clone())
    }
    /// `x` batched over `level` at its logical dim `in_dim`.
    fn _vmap_wrap(x: &Bound<'_, PyAny>, in_dim: i64, level: u32) -> PyResult<Py<PyAny>> {
        let size = active_size(level)?;
        let p = parts(x)?.ok_or_else(|| PyTypeError::new_err("vmap: expected a Tensor"))?;
        let d = wrap_logical(in_dim, p.rank(), p.nb())?;
        if p.phys.cast::<PyTensor>()?.borrow().inner.shape()[d] != size {
            return Err(PyValueError::new_err("vmap: batch size mismatch"));
        }
        let storage = p.phys.cast::<PyTensor>()?.borrow().inner.storage_ptr();
        WRAPPED.with(|w| w.borrow_mut().push((level, storage)));
        let phys = p.phys.call_method1("movedim", (d, p.nb()))?;
        let mut levels = p.levels;
        levels.push((level, size));
        make(x.py(), phys, levels)
    }
    /// The output `x` of level `level`'s function with that level's dim at
    /// logical dim `out_dim` (expanded there when `x` is not batched over it).
    fn _vmap_unwrap(x: &Bound<'_, PyAny>, level: u32, out_dim: i64) -> PyResult<Py<PyAny>> {
        let size = active_size(level)?;
        let p = parts(x)?.ok_or_else(|| PyTypeError::new_err("vmap: expected a Tensor"))?;
        let nb = p.nb();
        match p.levels.iter().position(|(l, _)| *l == level) {
            Some(i) => {
                let d = wrap_logical(out_dim, p.rank() + 1, nb - 1)?;
                let phys = p.phys.call_method1("movedim", (i, d))?;
                let mut levels = p.levels;
                levels.remove(i);
                make(x.py(), phys, levels)
            }
            None => {
                let d = wrap_logical(out_dim, p.rank() + 1, nb)?;
                let phys = p.phys.call_method1("unsqueeze", (d,))?;
                let mut shape: Vec<i64> = vec![-1; nb + p.rank() + 1];
                shape[d] = size as i64;
                let phys = phys.call_method1("expand", (shape,))?;
                make(x.py(), phys, p.levels)
            }
        }
    }
    /// Whether `x` is a batched tensor.
    fn _vmap_is_batched(x: &Bound<'_, PyAny>) -> bool {
        is_batched(x)
    }
    /// `x` batched over every active level it lacks (expanded: each sample
    /// sees the same values): how a transform inside vmap makes per-sample
    /// copies of an unbatched input it differentiates.
    fn _vmap_expand(x: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let p = parts(x)?.ok_or_else(|| PyTypeError::new_err("vmap: expected a Tensor"))?;
        let active = _vmap_levels();
        let all = union_levels([p.levels.as_slice(), active.as_slice()].into_iter());
        if all.len() == p.nb() {
            return Ok(x.clone().unbind());
        }
        let aligned = align(&p, &all, p.rank())?;
        let mut shape: Vec<usize> = all.iter().map(|(_, s)| *s).collect();
        shape.extend(&p.logical);
        let phys = aligned.call_method1("expand", (shape,))?;
        make(x.py(), phys, all)
    }
    /// The physical tensor of `x` (`x` itself when it is not batched).
    fn _vmap_physical(x: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match x.cast::<PyBatched>() {
            Ok(b) => Ok(b.get().phys.clone_ref(x.py())),
            Err(_) => Ok(x.clone().unbind()),
        }
    }
    /// The physical tensor of `g` laid out as `like`'s: aligned to its levels
    /// and expanded to its physical shape.
    fn _vmap_physical_like(g: &Bound<'_, PyAny>, like: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let (Some(pg), Some(pl)) = (parts(g)?, parts(like)?) else {
            return Err(PyTypeError::new_err("vmap: expected Tensors"));
        };
        if pg.levels.iter().any(|l| !pl.levels.contains(l)) {
            return Err(PyRuntimeError::new_err(
                "vmap: a gradient is batched over a level its output is not",
            ));
        }
        let aligned = align(&pg, &pl.levels, pg.rank())?;
        Ok(aligned
            .call_method1("expand", (shape_of(&pl.phys)?,))?
            .unbind())
    }
    /// `phys` batched over `like`'s levels.
    fn _vmap_like(phys: &Bound<'_, PyAny>, like: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let levels = match like.cast::<PyBatched>() {
            Ok(b) => b.get().levels.clone(),
            Err(_) => Vec::new(),
        };
        make(phys.py(), phys.clone(), levels)
    }
    /// The names of the methods and functions with a batching rule that are
    /// not table rows (the registry test reports the others' coverage).
    fn _vmap_rule(name: &str) -> Option<String> {
        rule(name).map(|r| format!("{r:?}"))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_vmap_fns(m)?;
    m.add_class::<PyBatched>()?;
    m.add_class::<BatchedMethod>()?;
    m.add("_VmapFallback", m.py().get_type::<VmapFallback>())?;
    Ok(())
}
