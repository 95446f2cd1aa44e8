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

/// Runs method `name` of the batched `slf` through its rule.
fn dispatch<'py>(
    slf: &Bound<'py, PyAny>,
    name: &str,
    args: Vec<Bound<'py, PyAny>>,
    kwargs: Option<Bound<'py, PyDict>>,
) -> PyResult<Py<PyAny>> {
    dispatch_to(slf, name, args, kwargs, None)
}

/// Runs op `name` through its rule with `slf` (a tensor, batched or not)
/// first: the rule calls `func(phys, ...)` when given (a module function
/// that has no method), else the method `phys.name(...)`.
fn dispatch_to<'py>(
    slf: &Bound<'py, PyAny>,
    name: &str,
    args: Vec<Bound<'py, PyAny>>,
    kwargs: Option<Bound<'py, PyDict>>,
    func: Option<&Bound<'py, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    let r = rule(name).ok_or_else(|| fallback(name))?;
    let p = parts(slf)?.ok_or_else(|| fallback(name))?;
    let (nb, rank) = (p.nb(), p.rank());
    let mut args = args;
    let mut kwargs = kwargs;
    let call = |phys: &Bound<'py, PyAny>,
                method: &str,
                args: Vec<Bound<'py, PyAny>>,
                kwargs: Option<Bound<'py, PyDict>>|
     -> PyResult<Bound<'py, PyAny>> {
        match func {
            Some(f) => {
                let all: Vec<Bound<'py, PyAny>> =
                    std::iter::once(phys.clone()).chain(args).collect();
                f.call(PyTuple::new(py, all)?, kwargs.as_ref())
            }
            None => phys.call_method(method, PyTuple::new(py, args)?, kwargs.as_ref()),
        }
    };
    match r {
        Rule::Dims(spec) => {
            let target = match func {
                Some(f) => f.clone(),
                None => py.get_type::<PyTensor>().getattr(name)?,
            };
            dims_rule(&target, name, p, args, kwargs, spec)
        }
        Rule::Repeat { tile } => {
            let (_, sizes) = find_arg(&args, &kwargs, 0, if tile { "dims" } else { "sizes" })?;
            let sizes = match sizes {
                Some(s) if args.len() <= 1 => int_list(&[s])?,
                _ => int_list(&args)?,
            };
            let mut sizes = sizes;
            if tile && sizes.len() < rank {
                let pad = rank - sizes.len();
                sizes.splice(0..0, std::iter::repeat_n(1, pad));
            }
            if sizes.len() < rank {
                return Err(fallback(name));
            }
            let mut phys = p.phys.clone();
            for _ in rank..sizes.len() {
                phys = phys.call_method1("unsqueeze", (nb,))?;
            }
            let mut full = vec![1i64; nb];
            full.extend(sizes);
            wrap_result(phys.call_method1("repeat", (full,))?, &p.levels)
        }
        Rule::Diag => {
            no_other_batched(name, &args, &kwargs)?;
            let (_, k) = find_arg(&args, &kwargs, 0, "diagonal")?;
            let k = k.map(|k| k.extract::<i64>()).transpose()?.unwrap_or(0);
            let out = match rank {
                1 => {
                    let t = p.phys.cast::<PyTensor>()?.borrow().inner.diag_embed(k)?;
                    Bound::new(py, crate::python::core::tensor::wrap(t))?.into_any()
                }
                2 => p
                    .phys
                    .call_method1("diagonal", (k, nb, nb + 1))?
                    .call_method0("clone")?,
                _ => return Err(fallback(name)),
            };
            wrap_result(out, &p.levels)
        }
        Rule::Inner | Rule::Kron => {
            let (_, other) = find_arg(&args, &kwargs, 0, "other")?;
            let q = match &other {
                Some(o) => parts(o)?.ok_or_else(|| fallback(name))?,
                None => return Err(fallback(name)),
            };
            if r == Rule::Kron {
                if !q.levels.is_empty() {
                    return Err(fallback(name));
                }
                let x = align(&p, &p.levels, rank.max(q.rank()))?;
                return wrap_result(x.call_method1("kron", (&q.phys,))?, &p.levels);
            }
            let (Some(&k1), Some(&k2)) = (p.logical.last(), q.logical.last()) else {
                return Err(fallback(name));
            };
            if k1 != k2 {
                return Err(fallback(name));
            }
            let mut shape = p.logical[..rank - 1].to_vec();
            shape.extend(&q.logical[..q.rank() - 1]);
            let a = slf.call_method1("reshape", ((-1, k1),))?;
            let b = other
                .expect("found")
                .call_method1("reshape", ((-1, k2),))?
                .call_method1("transpose", (0, 1))?;
            let m = matmul(&a, &b, MatmulRanks::Mm)?.into_bound(py);
            Ok(m.call_method1("reshape", (shape,))?.unbind())
        }
        Rule::PointwiseInplace => pointwise_inplace(slf, name, &p, args, kwargs),
        Rule::IndexUpdate { scatter } => {
            let inplace = name.ends_with('_');
            let third = match name.trim_end_matches('_') {
                "index_fill" => "value",
                "scatter_add" => "src",
                _ => "source",
            };
            let (sd, d) = find_arg(&args, &kwargs, 0, "dim")?;
            let (si, index) = find_arg(&args, &kwargs, 1, "index")?;
            let (ss, src) = find_arg(&args, &kwargs, 2, third)?;
            let (Some(d), Some(index), Some(src)) = (d, index, src) else {
                return Err(fallback(name));
            };
            let qi = parts(&index)?.ok_or_else(|| fallback(name))?;
            let qs = parts(&src)?;
            let mut levels = vec![p.levels.as_slice()];
            if rank == 0 || (!scatter && !qi.levels.is_empty()) {
                return Err(fallback(name));
            }
            if scatter {
                if qi.rank() != rank {
                    return Err(fallback(name));
                }
                levels.push(qi.levels.as_slice());
            }
            match (&qs, third) {
                // a number, or an unbatched tensor value
                (None, "value") => {}
                (Some(q), "value") if q.levels.is_empty() => {}
                (Some(q), "src" | "source") if q.rank() == rank => levels.push(q.levels.as_slice()),
                _ => return Err(fallback(name)),
            }
            let all = union_levels(levels.into_iter());
            if inplace && all.len() != nb {
                return Err(inplace_error());
            }
            if inplace && !may_write(&p)? {
                return Err(fallback(name));
            }
            let x = if inplace {
                p.phys.clone()
            } else {
                expand_to(&p, &all)?
            };
            let d = wrap_logical(d.extract::<i64>()?, rank, all.len())?;
            set_arg(
                py,
                &mut args,
                &mut kwargs,
                sd,
                "dim",
                d.into_pyobject(py)?.into_any(),
            )?;
            if scatter {
                set_arg(
                    py,
                    &mut args,
                    &mut kwargs,
                    si,
                    "index",
                    expand_to(&qi, &all)?,
                )?;
            }
            if let (Some(q), false) = (&qs, third == "value") {
                set_arg(py, &mut args, &mut kwargs, ss, third, expand_to(q, &all)?)?;
            }
            no_other_batched(name, &args, &kwargs)?;
            let out = call(&x, name, args, kwargs)?;
            if inplace {
                return Ok(slf.clone().unbind());
            }
            wrap_result(out, &all)
        }
        Rule::Msort => {
            if rank == 0 || !args.is_empty() || kwargs.is_some() {
                return Err(fallback(name));
            }
            let sorted = p.phys.call_method1("sort", (nb,))?.get_item(0)?;
            wrap_result(sorted, &p.levels)
        }
        Rule::AddProduct(_) => {
            let (_, a) = find_arg(&args, &kwargs, 0, "a")?;
            let (_, b) = find_arg(&args, &kwargs, 1, "b")?;
            let (Some(a), Some(b)) = (a, b) else {
                return Err(fallback(name));
            };
            let coef = |k: &str| -> PyResult<Option<Bound<'py, PyAny>>> {
                Ok(match &kwargs {
                    Some(d) => d.get_item(k)?,
                    None => None,
                })
            };
            add_product(
                name,
                slf,
                &a,
                &b,
                coef("beta")?.as_ref(),
                coef("alpha")?.as_ref(),
            )
        }
        Rule::Refuse(msg) => Err(PyRuntimeError::new_err(msg)),
        Rule::Plain => {
            no_other_batched(name, &args, &kwargs)?;
            Ok(call(&p.phys, name, args, kwargs)?.unbind())
        }
        Rule::SelfInplace => {
            call(&p.phys, name, args, kwargs)?;
            Ok(slf.clone().unbind())
        }
        Rule::Pointwise => pointwise(slf, name, args, kwargs),
        Rule::Diagonal if rank >= 2 => {
            no_other_batched(name, &args, &kwargs)?;
            for (pos, kw, default) in [(1, "dim1", 0i64), (2, "dim2", 1)] {
                let (slot, v) = find_arg(&args, &kwargs, pos, kw)?;
                let d = match v {
                    Some(v) => v.extract::<i64>()?,
                    None => default,
                };
                let s = wrap_logical(d, rank, nb)?.into_pyobject(py)?.into_any();
                set_arg(py, &mut args, &mut kwargs, slot, kw, s)?;
            }
            wrap_result(call(&p.phys, name, args, kwargs)?, &p.levels)
        }
        Rule::Trace if rank == 2 && args.is_empty() && kwargs.is_none() => {
            let d = p.phys.call_method1("diagonal", (0, nb, nb + 1))?;
            wrap_result(d.call_method1("sum", (-1,))?, &p.levels)
        }
        Rule::Diagonal | Rule::Trace => Err(fallback(name)),
        Rule::Gather => {
            let (_, d) = find_arg(&args, &kwargs, 0, "dim")?;
            let (_, index) = find_arg(&args, &kwargs, 1, "index")?;
            let (Some(d), Some(index)) = (d, index) else {
                return Err(fallback(name));
            };
            let Some(pi) = parts(&index)? else {
                return Err(fallback(name));
            };
            if pi.rank() != rank {
                return Err(fallback(name));
            }
            let all = union_levels([p.levels.as_slice(), pi.levels.as_slice()].into_iter());
            let d = wrap_logical(d.extract::<i64>()?, rank, all.len())?;
            let x = expand_to(&p, &all)?;
            // the index's batch dims at the batch sizes, its own dims as given
            let i = align(&pi, &all, rank)?;
            let mut shape: Vec<i64> = all.iter().map(|(_, s)| *s as i64).collect();
            shape.extend(pi.logical.iter().map(|&s| s as i64));
            let i = i.call_method1("expand", (shape,))?;
            make(py, x.call_method1("gather", (d, i))?, all)
        }
        Rule::Trailing(k) => {
            no_other_batched(name, &args, &kwargs)?;
            if rank < k {
                return Err(fallback(name));
            }
            wrap_result(call(&p.phys, name, args, kwargs)?, &p.levels)
        }
        Rule::Matmul(ranks) => {
            let (_, other) = find_arg(&args, &kwargs, 0, "other")?;
            let other = other.ok_or_else(|| fallback(name))?;
            if name == "__rmatmul__" {
                matmul(&other, slf, ranks)
            } else {
                matmul(slf, &other, ranks)
            }
        }
        _ if rank == 0
            && !matches!(
                r,
                Rule::AlongDim { extra: 1, .. }
                    | Rule::Shape
                    | Rule::Expand
                    | Rule::AsOther
                    | Rule::Index
                    | Rule::Flatten
                    | Rule::Squeeze
                    | Rule::T
                    | Rule::Reduce { .. }
            ) =>
        {
            // A dim of a 0-d value wraps as in a 1-d one: no physical dim
            // stands for it.
            Err(fallback(name))
        }
        Rule::Reduce {
            all: AllDims::Amax, ..
        } if find_arg(&args, &kwargs, 0, "dim")?
            .1
            .is_some_and(|a| a.cast::<PyTensor>().is_ok() || is_batched(&a)) =>
        {
            // `max(other)` / `min(other)`: the elementwise maximum / minimum
            let (_, other) = find_arg(&args, &kwargs, 0, "dim")?;
            let binary = if name == "max" { "maximum" } else { "minimum" };
            pointwise(slf, binary, other.into_iter().collect(), None)
        }
        Rule::Reduce { pos, all } => {
            no_other_batched(name, &args, &kwargs)?;
            let (slot, dim) = find_arg(&args, &kwargs, pos, "dim")?;
            let dim = dim.filter(|d| !d.is_none() && !d.is_instance_of::<PyBool>());
            match dim {
                Some(d) => {
                    if rank == 0 {
                        return Err(fallback(name));
                    }
                    let s = shift_dims(py, &d, rank, nb)?;
                    set_arg(py, &mut args, &mut kwargs, slot, "dim", s)?;
                    wrap_result(call(&p.phys, name, args, kwargs)?, &p.levels)
                }
                None => {
                    // A 0-d value reduces as a 1-d one of one element.
                    let (p, rank) = if rank == 0 {
                        let phys = p.phys.call_method1("unsqueeze", (nb,))?;
                        let one = Parts {
                            phys,
                            levels: p.levels.clone(),
                            logical: vec![1],
                        };
                        (one, 1)
                    } else {
                        (p, rank)
                    };
                    let all_dims = PyTuple::new(py, nb..nb + rank)?.into_any();
                    match all {
                        AllDims::Tuple => {
                            if matches!(slot, Slot::Pos(_) | Slot::Kw(_))
                                && !matches!(find_arg(&args, &kwargs, pos, "dim")?.1, Some(ref v) if v.is_none())
                            {
                                // A bool in the dim position (`std(True)`).
                                return Err(fallback(name));
                            }
                            set_arg(py, &mut args, &mut kwargs, slot, "dim", all_dims)?;
                            wrap_result(call(&p.phys, name, args, kwargs)?, &p.levels)
                        }
                        AllDims::Amax => {
                            if !args.is_empty() || kwargs.as_ref().is_some_and(|k| !k.is_empty()) {
                                return Err(fallback(name));
                            }
                            let m = if name == "max" { "amax" } else { "amin" };
                            wrap_result(p.phys.call_method1(m, (all_dims,))?, &p.levels)
                        }
                        AllDims::Flat => {
                            let keep = kwargs
                                .as_ref()
                                .map(|k| k.get_item("keepdim"))
                                .transpose()?
                                .flatten()
                                .map(|v| v.is_truthy())
                                .transpose()?
                                .unwrap_or(false);
                            if keep || args.len() > 1 {
                                return Err(fallback(name));
                            }
                            let flat = p.phys.call_method1("flatten", (nb,))?;
                            wrap_result(flat.call_method1(name, (nb,))?, &p.levels)
                        }
                    }
                }
            }
        }
        Rule::AlongDim {
            pos,
            default,
            extra,
        } => {
            no_other_batched(name, &args, &kwargs)?;
            let (slot, dim) = find_arg(&args, &kwargs, pos, "dim")?;
            let d = match dim.filter(|d| !d.is_none()) {
                Some(d) => d.extract::<i64>().map_err(|_| fallback(name))?,
                None => default.ok_or_else(|| fallback(name))?,
            };
            let s = wrap_logical(d, rank + extra, nb)?
                .into_pyobject(py)?
                .into_any();
            set_arg(py, &mut args, &mut kwargs, slot, "dim", s)?;
            wrap_result(call(&p.phys, name, args, kwargs)?, &p.levels)
        }
        Rule::TwoDims => {
            no_other_batched(name, &args, &kwargs)?;
            let keys: [&'static str; 2] = if name.starts_with("move") {
                ["source", "destination"]
            } else if name == "swapaxes" {
                ["axis0", "axis1"]
            } else {
                ["dim0", "dim1"]
            };
            for (i, kw) in keys.into_iter().enumerate() {
                let (slot, v) = find_arg(&args, &kwargs, i, kw)?;
                let v = v.ok_or_else(|| fallback(name))?;
                let s = shift_dims(py, &v, rank, nb)?;
                set_arg(py, &mut args, &mut kwargs, slot, kw, s)?;
            }
            wrap_result(call(&p.phys, name, args, kwargs)?, &p.levels)
        }
        Rule::Permute | Rule::DimList => {
            if kwargs.is_some() {
                return Err(fallback(name));
            }
            let ds = int_list(&args)?;
            let mut new: Vec<usize> = if r == Rule::Permute {
                (0..nb).collect()
            } else {
                Vec::new()
            };
            for d in ds {
                new.push(wrap_logical(d, rank, nb)?);
            }
            wrap_result(
                p.phys.call_method1(name, (PyTuple::new(py, new)?,))?,
                &p.levels,
            )
        }
        Rule::Flatten => {
            no_other_batched(name, &args, &kwargs)?;
            let (s0, start) = find_arg(&args, &kwargs, 0, "start_dim")?;
            let (s1, end) = find_arg(&args, &kwargs, 1, "end_dim")?;
            if rank == 0 {
                let mut shape = p.batch_sizes();
                shape.push(1);
                return wrap_result(p.phys.call_method1("reshape", (shape,))?, &p.levels);
            }
            let a = start.map(|v| v.extract::<i64>()).transpose()?.unwrap_or(0);
            let b = end.map(|v| v.extract::<i64>()).transpose()?.unwrap_or(-1);
            let a = wrap_logical(a, rank, nb)?.into_pyobject(py)?.into_any();
            let b = wrap_logical(b, rank, nb)?.into_pyobject(py)?.into_any();
            set_arg(py, &mut args, &mut kwargs, s0, "start_dim", a)?;
            set_arg(py, &mut args, &mut kwargs, s1, "end_dim", b)?;
            wrap_result(call(&p.phys, name, args, kwargs)?, &p.levels)
        }
        Rule::Shape => {
            if args.len() == 1
                && args[0].extract::<Vec<i64>>().is_err()
                && args[0].extract::<i64>().is_err()
            {
                // view(dtype)
                return Err(fallback(name));
            }
            if kwargs.is_some() {
                return Err(fallback(name));
            }
            let shape = int_list(&args)?;
            let mut new: Vec<i64> = p.batch_sizes().iter().map(|&s| s as i64).collect();
            new.extend(shape);
            wrap_result(p.phys.call_method1(name, (new,))?, &p.levels)
        }
        Rule::Expand => {
            if kwargs.is_some() {
                return Err(fallback(name));
            }
            expand(&p, int_list(&args)?)
        }
        Rule::AsOther => {
            let other = args.first().ok_or_else(|| fallback(name))?;
            let o = parts(other)?.ok_or_else(|| fallback(name))?;
            let shape: Vec<i64> = o.logical.iter().map(|&s| s as i64).collect();
            if name == "expand_as" {
                return expand(&p, shape);
            }
            let method = if name == "view_as" { "view" } else { "reshape" };
            let mut new: Vec<i64> = p.batch_sizes().iter().map(|&s| s as i64).collect();
            new.extend(shape);
            wrap_result(p.phys.call_method1(method, (new,))?, &p.levels)
        }
        Rule::Squeeze => {
            no_other_batched(name, &args, &kwargs)?;
            let (slot, dim) = find_arg(&args, &kwargs, 0, "dim")?;
            match dim.filter(|d| !d.is_none()) {
                None => {
                    let mut new = p.batch_sizes();
                    new.extend(p.logical.iter().copied().filter(|&s| s != 1));
                    wrap_result(p.phys.call_method1("reshape", (new,))?, &p.levels)
                }
                Some(d) => {
                    if rank == 0 {
                        return Err(fallback(name));
                    }
                    let s = shift_dims(py, &d, rank, nb)?;
                    set_arg(py, &mut args, &mut kwargs, slot, "dim", s)?;
                    wrap_result(call(&p.phys, name, args, kwargs)?, &p.levels)
                }
            }
        }
        Rule::T => {
            if rank > 2 {
                return Err(PyRuntimeError::new_err(format!(
                    "t() expects a tensor with <= 2 dimensions, but self is {rank}D"
                )));
            }
            let (a, b) = if rank == 2 { (nb, nb + 1) } else { (0, 0) };
            wrap_result(p.phys.call_method1("transpose", (a, b))?, &p.levels)
        }
        Rule::Index => {
            let key = args.first().ok_or_else(|| fallback(name))?;
            index(&p, key)
        }
    }
}

/// Dims (an int, or a sequence of them) wrapped against `rank` and made
/// negative, so that they name the same dims of a tensor with more leading
/// dims; a bool (a flag in a dim's place) takes the fallback.
fn negative_dims<'py>(
    py: Python<'py>,
    name: &str,
    d: &Bound<'py, PyAny>,
    rank: usize,
) -> PyResult<Bound<'py, PyAny>> {
    if d.is_instance_of::<PyBool>() || rank == 0 {
        return Err(fallback(name));
    }
    let neg = |i: i64| -> PyResult<i64> { Ok(wrap_dim(i, rank)? as i64 - rank as i64) };
    if let Ok(i) = d.extract::<i64>() {
        return Ok(neg(i)?.into_pyobject(py)?.into_any());
    }
    let ds: Vec<i64> = d.extract().map_err(|_| fallback(name))?;
    if ds.is_empty() {
        // no dims: some ops reduce them all (the batch dims too)
        return Err(fallback(name));
    }
    let ds = ds.into_iter().map(neg).collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new(py, ds)?.into_any())
}

/// [`Rule::Dims`]: `target(self, *args, **kwargs)` (an unbound method or
/// a module function) once on the physical tensors, see [`DimsRule`].
fn dims_rule<'py>(
    target: &Bound<'py, PyAny>,
    name: &str,
    p: Parts<'py>,
    mut args: Vec<Bound<'py, PyAny>>,
    mut kwargs: Option<Bound<'py, PyDict>>,
    spec: &DimsRule,
) -> PyResult<Py<PyAny>> {
    let py = target.py();
    if p.rank() < spec.min_rank {
        return Err(fallback(name));
    }
    let mut operands = Vec::new();
    for &(pos, kw) in spec.operands {
        let (slot, v) = find_arg(&args, &kwargs, pos, kw)?;
        if let Some(v) = v.filter(|v| !v.is_none()) {
            let q = parts(&v)?.ok_or_else(|| fallback(name))?;
            if spec.align == Align::Broadcast && q.rank() < spec.min_rank {
                return Err(fallback(name));
            }
            operands.push((slot, kw, q));
        }
    }
    if let (true, Some((_, _, b))) = (spec.rhs_vectors, operands.first()) {
        let r = p.rank();
        if b.rank() == 1 || (b.rank() + 1 == r && b.logical[..] == p.logical[..r - 1]) {
            return Err(fallback(name));
        }
    }
    let rank = match spec.align {
        Align::Broadcast => operands
            .iter()
            .map(|(_, _, q)| q.rank())
            .fold(p.rank(), usize::max),
        _ => p.rank(),
    };
    let mut flatten = None;
    for d in spec.dims {
        let (slot, v) = find_arg(&args, &kwargs, d.pos, d.kw)?;
        let given = match v.filter(|v| !v.is_none()) {
            Some(v) => v,
            None => {
                let logical: Vec<i64> = match d.absent {
                    Absent::Dims(ds) => ds.to_vec(),
                    Absent::All if rank > 0 => (0..rank as i64).collect(),
                    Absent::VectorOrMatrix if rank == 1 || rank == 2 => (0..rank as i64).collect(),
                    Absent::Flatten { keep_shape } => {
                        flatten = Some(keep_shape);
                        vec![-1]
                    }
                    _ => return Err(fallback(name)),
                };
                match logical.as_slice() {
                    [one] if matches!(d.absent, Absent::Dims(_) | Absent::Flatten { .. }) => {
                        one.into_pyobject(py)?.into_any()
                    }
                    _ => PyTuple::new(py, logical)?.into_any(),
                }
            }
        };
        let rank_of_dims = if flatten.is_some() { 1 } else { rank };
        let neg = negative_dims(py, name, &given, rank_of_dims)?;
        set_arg(py, &mut args, &mut kwargs, slot, d.kw, neg)?;
    }
    let ranks_agree = match spec.align {
        Align::Broadcast => true,
        Align::Same => flatten.is_some() || operands.iter().all(|(_, _, q)| q.rank() == rank),
        Align::Ranks(offsets) => {
            operands.len() == offsets.len()
                && operands
                    .iter()
                    .zip(offsets)
                    .all(|((_, _, q), &o)| q.rank() as i64 == rank as i64 + o)
        }
    };
    if !ranks_agree {
        return Err(fallback(name));
    }
    let all = union_levels(
        std::iter::once(p.levels.as_slice())
            .chain(operands.iter().map(|(_, _, q)| q.levels.as_slice())),
    );
    let physical = |q: &Parts<'py>| -> PyResult<Bound<'py, PyAny>> {
        // every batch dim at its size (an output that keeps an operand's
        // shape, `triangular_solve`'s coefficient, has the batch too)
        let x = match spec.align {
            Align::Broadcast => {
                let mut shape: Vec<i64> = all.iter().map(|(_, s)| *s as i64).collect();
                shape.extend(std::iter::repeat_n(-1, rank));
                align(q, &all, rank)?.call_method1("expand", (shape,))?
            }
            _ => expand_to(q, &all)?,
        };
        match flatten {
            Some(_) if q.rank() == 0 => Err(fallback(name)),
            Some(_) => x.call_method1("flatten", (all.len(),)),
            None => Ok(x),
        }
    };
    let x = physical(&p)?;
    for (slot, kw, q) in &operands {
        let v = physical(q)?;
        set_arg(py, &mut args, &mut kwargs, *slot, kw, v)?;
    }
    no_other_batched(name, &args, &kwargs)?;
    let all_args: Vec<Bound<'py, PyAny>> = std::iter::once(x).chain(args).collect();
    let mut out = target.call(PyTuple::new(py, all_args)?, kwargs.as_ref())?;
    if flatten == Some(true) {
        let mut shape: Vec<usize> = all.iter().map(|(_, s)| *s).collect();
        shape.extend(&p.logical);
        out = out.call_method1("reshape", (shape,))?;
    }
    wrap_result(batch_led(out, &all, name)?, &all)
}

/// `op` once on the physical tensors of `tensors` (batched or not), each
/// aligned to the union of their levels and to the highest logical rank
/// (size-1 dims where a level or a leading dim is missing): the batching
/// rule of an op that broadcasts its operands, written in Rust.
pub(crate) fn on_aligned<'py>(
    tensors: &[&Bound<'py, PyAny>],
    op: impl FnOnce(&[crate::Tensor]) -> crate::Result<crate::Tensor>,
) -> PyResult<Py<PyAny>> {
    let py = tensors[0].py();
    let ps = tensors
        .iter()
        .map(|t| parts(t)?.ok_or_else(|| PyTypeError::new_err("expected Tensors")))
        .collect::<PyResult<Vec<_>>>()?;
    let all = union_levels(ps.iter().map(|q| q.levels.as_slice()));
    let rank = ps.iter().map(|q| q.rank()).max().unwrap_or(0);
    let phys = ps
        .iter()
        .map(|q| {
            Ok(align(q, &all, rank)?
                .cast::<PyTensor>()?
                .borrow()
                .inner
                .clone())
        })
        .collect::<PyResult<Vec<_>>>()?;
    let out = Bound::new(py, crate::python::core::tensor::wrap(op(&phys)?))?;
    make(py, out.into_any(), all)
}

/// [`Rule::AddProduct`]: `beta * input + alpha * product` of the batched
/// product of `a` and `b` (`addbmm`: summed over its first logical dim),
/// `input` aligned with it; one `combine` on the physical tensors.
pub(crate) fn add_product<'py>(
    name: &str,
    input: &Bound<'py, PyAny>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    beta: Option<&Bound<'py, PyAny>>,
    alpha: Option<&Bound<'py, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let Some(Rule::AddProduct(ranks)) = rule(name) else {
        return Err(fallback(name));
    };
    let coef = |v: Option<&Bound<'py, PyAny>>| match v.filter(|v| !v.is_none()) {
        None => Ok(crate::tensor::Scalar::Int(1)),
        Some(v) => crate::python::core::args::as_scalar(v).ok_or_else(|| fallback(name)),
    };
    let (beta, alpha) = (coef(beta)?, coef(alpha)?);
    let mut prod = matmul(a, b, ranks)?.into_bound(input.py());
    if name == "addbmm" {
        prod = prod.call_method1("sum", (0,))?;
    }
    on_aligned(&[input, &prod], |t| {
        crate::ops::addmm::combine(&t[0], t[1].clone(), beta, alpha)
    })
}

/// Inside vmap, a module function `$f` whose tensor parameters `$t`
/// (`&Bound<PyAny>`, first and positional) include a batched tensor
/// returns [`function_rule`] of the rule `$key`: `$f` called again on the
/// physical tensors, its other parameters `$a` by keyword.
macro_rules! vmap_rule {
    ($f:ident as $key:literal, [$($t:ident),+], [$($a:ident),*]) => {
        if $crate::python::core::batched::any_batched(&[$($t),+]) {
            let py = [$($t),+][0].py();
            let kw = pyo3::types::PyDict::new(py);
            $($crate::python::core::batched::VmapArg::put(&$a, py, stringify!($a), &kw)?;)*
            let func = pyo3::wrap_pyfunction!($f, py)?;
            let tensors = vec![$($t.clone()),+];
            return $crate::python::core::batched::function_rule(func.as_any(), $key, tensors, kw);
        }
    };
    // A pointwise function: every argument by keyword, the batched
    // tensors aligned (`pointwise_call`).
    (pointwise $f:ident, [$($t:ident),+], [$($a:ident),*]) => {
        if $crate::python::core::batched::any_batched(&[$($t),+]) {
            let py = [$($t),+][0].py();
            let kw = pyo3::types::PyDict::new(py);
            $($crate::python::core::batched::VmapArg::put(&$t, py, stringify!($t), &kw)?;)+
            $($crate::python::core::batched::VmapArg::put(&$a, py, stringify!($a), &kw)?;)*
            let func = pyo3::wrap_pyfunction!($f, py)?;
            return $crate::python::core::batched::pointwise_rule(func.as_any(), kw);
        }
    };
}
pub(crate) use vmap_rule;

/// `func(**kwargs)` for a pointwise module function: see [`pointwise_call`].
pub(crate) fn pointwise_rule<'py>(
    func: &Bound<'py, PyAny>,
    kwargs: Bound<'py, PyDict>,
) -> PyResult<Py<PyAny>> {
    pointwise_call(func, Vec::new(), Some(kwargs))
}

/// `vstack`/`hstack`/`dstack`/`column_stack` of a list with batched
/// tensors: each element reshaped as its logical shape asks
/// (`combine::stack_kind_plan`) by the reshape rule, then joined ([`join`]);
/// None when none is batched.
pub(crate) fn stack_kind(
    tensors: &Bound<'_, PyAny>,
    kind: crate::ops::combine::StackKind,
) -> PyResult<Option<Py<PyAny>>> {
    let py = tensors.py();
    let Some(items) = batched_items(tensors)? else {
        return Ok(None);
    };
    let ps = items
        .iter()
        .map(|x| parts(x)?.ok_or_else(|| fallback("stack")))
        .collect::<PyResult<Vec<_>>>()?;
    let shapes: Vec<&[usize]> = ps.iter().map(|q| q.logical.as_slice()).collect();
    let (reshapes, dim) = crate::ops::combine::stack_kind_plan(&shapes, kind)?;
    let joined = items
        .iter()
        .zip(reshapes)
        .map(|(x, r)| match r {
            Some(shape) => x.call_method1("reshape", (shape,)),
            None => Ok(x.clone()),
        })
        .collect::<PyResult<Vec<_>>>()?;
    join(&PyList::new(py, joined)?.into_any(), dim, false)
}

/// `meshgrid` of vectors some of which are batched: each one reshaped and
/// expanded by the view and expand rules (`combine::meshgrid_plan`), so
/// each grid is batched over its own vector's levels; None when none is
/// batched.
pub(crate) fn meshgrid<'py>(
    items: &[Bound<'py, PyAny>],
    xy: bool,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    if !items.iter().any(is_batched) {
        return Ok(None);
    }
    let py = items[0].py();
    let mut numels = Vec::new();
    for x in items {
        let q = parts(x)?.ok_or_else(|| fallback("meshgrid"))?;
        if q.rank() > 1 {
            return Err(fallback("meshgrid"));
        }
        numels.push(q.logical.iter().product());
    }
    let (views, sizes) = crate::ops::combine::meshgrid_plan(&numels, xy);
    let grids = items
        .iter()
        .zip(views)
        .map(|(x, v)| {
            x.call_method1("reshape", (v,))?
                .call_method1("expand", (sizes.clone(),))
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Some(PyTuple::new(py, grids)?))
}

/// `linalg.multi_dot(tensors)` with batched tensors: the products of the
/// matmul rule, left to right as the op multiplies (a first or last
/// vector as a row or a column, as it takes them).
pub(crate) fn multi_dot(tensors: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
    let items: Vec<Bound<'_, PyAny>> = match tensors.try_iter() {
        Ok(it) => it.collect::<PyResult<_>>()?,
        Err(_) => return Ok(None),
    };
    if !items.iter().any(is_batched) {
        return Ok(None);
    }
    let n = items.len();
    for (i, x) in items.iter().enumerate() {
        let r = parts(x)?.ok_or_else(|| fallback("multi_dot"))?.rank();
        if n < 2 || !(r == 2 || (r == 1 && (i == 0 || i == n - 1))) {
            return Err(fallback("multi_dot"));
        }
    }
    let mut acc = items[0].clone().unbind();
    for x in &items[1..] {
        acc = matmul(acc.bind(tensors.py()), x, MatmulRanks::Any)?;
    }
    Ok(Some(acc))
}

/// `torch.tensordot(a, b, dims)` (`func`) with one of `a`, `b` batched:
/// the contracted dims of the batched one shifted past its batch dims,
/// which then lead the result (moved there from after `a`'s free dims
/// when `b` is the batched one). Both batched: the fallback.
pub(crate) fn tensordot<'py>(
    func: &Bound<'py, PyAny>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    dims: Option<&Bound<'py, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let py = a.py();
    let (Some(pa), Some(pb)) = (parts(a)?, parts(b)?) else {
        return Err(fallback("tensordot"));
    };
    if !pa.levels.is_empty() && !pb.levels.is_empty() {
        return Err(fallback("tensordot"));
    }
    let ra = pa.rank() as i64;
    let list = |o: &Bound<'py, PyAny>| match o.extract::<i64>() {
        Ok(i) => Ok(vec![i]),
        Err(_) => o.extract::<Vec<i64>>(),
    };
    let (da, db): (Vec<i64>, Vec<i64>) = match dims.filter(|d| !d.is_none()) {
        None => ((ra - 2..ra).collect(), (0..2).collect()),
        Some(d) => match d.extract::<i64>() {
            Ok(n) => ((ra - n..ra).collect(), (0..n).collect()),
            Err(_) => {
                let (x, y): (Bound<'py, PyAny>, Bound<'py, PyAny>) = d.extract()?;
                (list(&x)?, list(&y)?)
            }
        },
    };
    if da.len() != db.len() || da.len() > pa.rank() || db.len() > pb.rank() {
        return Err(fallback("tensordot"));
    }
    let shift = |ds: &[i64], q: &Parts<'py>| {
        ds.iter()
            .map(|&d| wrap_logical(d, q.rank(), q.nb()))
            .collect::<PyResult<Vec<_>>>()
    };
    let (sa, sb) = (shift(&da, &pa)?, shift(&db, &pb)?);
    let kw = PyDict::new(py);
    kw.set_item("dims", (sa, sb))?;
    let mut out = func.call((&pa.phys, &pb.phys), Some(&kw))?;
    let levels = if pa.levels.is_empty() {
        let free_a = pa.rank() - da.len();
        let from: Vec<usize> = (free_a..free_a + pb.nb()).collect();
        out = out.call_method1("movedim", (from, (0..pb.nb()).collect::<Vec<_>>()))?;
        pb.levels
    } else {
        pa.levels
    };
    wrap_result(out, &levels)
}

/// `torch.einsum(equation, *operands)` (`func`) with batched operands: a
/// fresh subscript for each vmap level, put before each batched operand's
/// subscripts and leading the output's (an implicit output made explicit
/// first: the ellipsis, then the subscripts used once, sorted).
pub(crate) fn einsum<'py>(
    func: &Bound<'py, PyAny>,
    equation: &str,
    operands: Vec<Bound<'py, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let py = func.py();
    let ps = operands
        .iter()
        .map(|o| parts(o)?.ok_or_else(|| fallback("einsum")))
        .collect::<PyResult<Vec<_>>>()?;
    let all = union_levels(ps.iter().map(|q| q.levels.as_slice()));
    let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (eq.clone(), None),
    };
    let inputs: Vec<&str> = lhs.split(',').collect();
    if inputs.len() != ps.len() {
        return Err(fallback("einsum"));
    }
    let fresh: Vec<char> = ('a'..='z')
        .chain('A'..='Z')
        .filter(|c| !eq.contains(*c))
        .take(all.len())
        .collect();
    if fresh.len() < all.len() {
        return Err(fallback("einsum"));
    }
    let rhs = match rhs {
        Some(r) => r,
        None => {
            let mut once: Vec<char> = lhs
                .chars()
                .filter(|c| c.is_ascii_alphabetic() && lhs.matches(*c).count() == 1)
                .collect();
            once.sort_unstable();
            let dots = if lhs.contains("...") { "..." } else { "" };
            format!("{dots}{}", once.into_iter().collect::<String>())
        }
    };
    let letter = |lvl: &u32| {
        fresh[all
            .iter()
            .position(|(l, _)| l == lvl)
            .expect("in the union")]
    };
    let mut new_inputs = Vec::new();
    for (q, sub) in ps.iter().zip(&inputs) {
        let lead: String = q.levels.iter().map(|(l, _)| letter(l)).collect();
        new_inputs.push(format!("{lead}{sub}"));
    }
    let lead: String = fresh.iter().collect();
    let new_eq = format!("{}->{lead}{rhs}", new_inputs.join(","));
    let mut args = vec![new_eq.into_pyobject(py)?.into_any()];
    args.extend(ps.into_iter().map(|q| q.phys));
    wrap_result(func.call1(PyTuple::new(py, args)?)?, &all)
}

/// A module function's batching rule: `func` (the function itself) called
/// with `tensors` (its leading tensor parameters, some batched) and
/// `kwargs` runs the rule of `name` (`linalg.` names for the `linalg`
/// functions), which calls `func` once on the physical tensors.
pub(crate) fn function_rule<'py>(
    func: &Bound<'py, PyAny>,
    name: &str,
    tensors: Vec<Bound<'py, PyAny>>,
    kwargs: Bound<'py, PyDict>,
) -> PyResult<Py<PyAny>> {
    let mut it = tensors.into_iter();
    let first = it.next().ok_or_else(|| fallback(name))?;
    let kwargs = if kwargs.is_empty() {
        None
    } else {
        Some(kwargs)
    };
    dispatch_to(&first, name, it.collect(), kwargs, Some(func))
}

fn expand(p: &Parts<'_>, sizes: Vec<i64>) -> PyResult<Py<PyAny>> {
    let nb = p.nb();
    let mut phys = p.phys.clone();
    for _ in p.rank()..sizes.len() {
        phys = phys.call_method1("unsqueeze", (nb,))?;
    }
    let mut new: Vec<i64> = p.batch_sizes().iter().map(|&s| s as i64).collect();
    new.extend(sizes);
    wrap_result(phys.call_method1("expand", (new,))?, &p.levels)
}

fn index(p: &Parts<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let py = key.py();
    let items: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
        Ok(t) => t.iter().collect(),
        Err(_) => vec![key.clone()],
    };
    let mut advanced = 0;
    for it in &items {
        if it.is_none() || it.is_instance_of::<PySlice>() || it.is(py.Ellipsis()) {
            continue;
        }
        if it.is_instance_of::<PyBool>() || is_batched(it) {
            return Err(fallback("__getitem__"));
        }
        if it.extract::<i64>().is_ok() && it.cast::<PyTensor>().is_err() {
            continue;
        }
        advanced += 1;
    }
    if advanced > 1 {
        return Err(fallback("__getitem__"));
    }
    let full = PySlice::full(py).into_any();
    let new: Vec<Bound<'_, PyAny>> = std::iter::repeat_n(full, p.nb()).chain(items).collect();
    wrap_result(
        p.phys
            .call_method1("__getitem__", (PyTuple::new(py, new)?,))?,
        &p.levels,
    )
}

fn pointwise<'py>(
    slf: &Bound<'py, PyAny>,
    name: &str,
    args: Vec<Bound<'py, PyAny>>,
    kwargs: Option<Bound<'py, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let method = slf.py().get_type::<PyTensor>().getattr(name)?;
    let mut all = vec![slf.clone()];
    all.extend(args);
    pointwise_call(&method, all, kwargs)
}

/// `func(*args, **kwargs)` for a pointwise `func` (a module function, or a
/// Tensor method called unbound): every batched tensor argument aligned to
/// the union of levels and to the highest logical rank, so that batch dims
/// lead and logical dims broadcast from the right; plain tensors and
/// numbers passed as they are. One call; the result batched.
fn pointwise_call<'py>(
    func: &Bound<'py, PyAny>,
    args: Vec<Bound<'py, PyAny>>,
    kwargs: Option<Bound<'py, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let py = func.py();
    let mut ps: Vec<Parts<'py>> = Vec::new();
    for a in &args {
        if let Some(q) = parts(a)? {
            ps.push(q);
        }
    }
    if let Some(k) = &kwargs {
        for v in k.values().iter() {
            if let Some(q) = parts(&v)? {
                ps.push(q);
            }
        }
    }
    let all = union_levels(ps.iter().map(|q| q.levels.as_slice()));
    let rank = ps.iter().map(|q| q.rank()).max().unwrap_or(0);
    let conv = |a: &Bound<'py, PyAny>| -> PyResult<Bound<'py, PyAny>> {
        if is_batched(a) {
            let q = parts(a)?.expect("batched");
            align(&q, &all, rank)
        } else {
            Ok(a.clone())
        }
    };
    let (new_args, new_kwargs) = map_call_args(py, &args, kwargs.as_ref(), conv)?;
    let res = func.call(PyTuple::new(py, new_args)?, new_kwargs.as_ref())?;
    if res.is(py.NotImplemented()) {
        return Ok(res.unbind());
    }
    wrap_result(res, &all)
}

/// A module function's argument, handed back by name to the batching rule
/// of the method of the same name (see [`method_call`]). `None` is left
/// out, so the method's default applies.
pub(crate) trait VmapArg {
    fn put<'py>(&self, py: Python<'py>, name: &str, kw: &Bound<'py, PyDict>) -> PyResult<()>;
}

macro_rules! vmap_arg_by_value {
    ($($t:ty),*) => {$(
        impl VmapArg for $t {
            fn put<'py>(&self, _py: Python<'py>, name: &str, kw: &Bound<'py, PyDict>) -> PyResult<()> {
                kw.set_item(name, self)
            }
        }
    )*};
}
vmap_arg_by_value!(i64, usize, bool, f64, &str, String, Vec<i64>);

impl VmapArg for Bound<'_, PyAny> {
    fn put<'py>(&self, _py: Python<'py>, name: &str, kw: &Bound<'py, PyDict>) -> PyResult<()> {
        kw.set_item(name, self)
    }
}
impl<T: VmapArg + ?Sized> VmapArg for &T {
    fn put<'py>(&self, py: Python<'py>, name: &str, kw: &Bound<'py, PyDict>) -> PyResult<()> {
        (**self).put(py, name, kw)
    }
}
impl<T: VmapArg> VmapArg for Option<T> {
    fn put<'py>(&self, py: Python<'py>, name: &str, kw: &Bound<'py, PyDict>) -> PyResult<()> {
        match self {
            Some(v) => v.put(py, name, kw),
            None => Ok(()),
        }
    }
}
impl VmapArg for PyRef<'_, PyTensor> {
    fn put<'py>(&self, _py: Python<'py>, name: &str, kw: &Bound<'py, PyDict>) -> PyResult<()> {
        let obj = self.into_pyobject(self.py())?.to_owned().unbind();
        kw.set_item(name, obj)
    }
}
impl VmapArg for crate::python::core::dtype::PyDType {
    fn put<'py>(&self, py: Python<'py>, name: &str, kw: &Bound<'py, PyDict>) -> PyResult<()> {
        kw.set_item(name, Bound::new(py, *self)?)
    }
}
impl VmapArg for Python<'_> {
    fn put<'py>(&self, _py: Python<'py>, _name: &str, _kw: &Bound<'py, PyDict>) -> PyResult<()> {
        Ok(())
    }
}

/// `ferrograd.name(input, **kw)` with a batched `input`: the batching rule
/// of `Tensor.name`, its arguments by keyword.
pub(crate) fn method_call(
    input: &Bound<'_, PyAny>,
    name: &str,
    kw: Bound<'_, PyDict>,
) -> PyResult<Py<PyAny>> {
    let kw = if kw.is_empty() { None } else { Some(kw) };
    dispatch(input, name, Vec::new(), kw)
}

/// A pointwise module function `_C.name` (or `_C.<module>.name`) called
/// with batched tensors among `args` / `kwargs`.
pub(crate) fn pointwise_function<'py>(
    module: &str,
    name: &str,
    args: Vec<Bound<'py, PyAny>>,
    kwargs: Option<Bound<'py, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let py = args.first().map(|a| a.py()).ok_or_else(|| fallback(name))?;
    // `ferrograd._C` and its attribute submodules (`ferrograd._C._nn`)
    let mut path = module.split('.');
    let root = format!(
        "{}.{}",
        path.next().unwrap_or_default(),
        path.next().unwrap_or_default()
    );
    let mut holder = py.import(root.as_str())?.into_any();
    for part in path {
        holder = holder.getattr(part)?;
    }
    let func = holder.getattr(name)?;
    pointwise_call(&func, args, kwargs)
}

/// How a module function marked `@vmap(...)` in `bind_functions!` maps
/// over the batch dims of its batched tensor argument.
#[derive(Clone, Copy)]
pub(crate) enum PhysicalRule {
    /// Every element on its own: any logical rank.
    Elementwise,
    /// An op on the last `k` dims that takes leading dims as a batch: the
    /// logical rank must be at least `k` (else the per-slice fallback,
    /// which raises the op's own error).
    Trailing(usize),
    /// An op on inputs of `k` core dims, or of a samples dim and those
    /// (pooling, `unfold`, `fold`): the batch folded into the samples dim
    /// ([`fold_samples`]).
    Samples(usize),
    /// An op whose input always leads with a samples dim (`interpolate`):
    /// the batch folded into it.
    SamplesFirst,
}

/// Runs `op` once on the physical tensor of the batched `x`; its result
/// (a tensor, or a tuple of them) is batched over `x`'s levels.
pub(crate) fn on_physical<'py>(
    rule: PhysicalRule,
    name: &str,
    x: &Bound<'py, PyAny>,
    op: impl FnOnce(&Bound<'py, PyTensor>) -> PyResult<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    let p = parts(x)?.expect("a batched tensor");
    match rule {
        PhysicalRule::Trailing(k) if p.rank() < k => return Err(fallback(name)),
        PhysicalRule::Samples(k) => return fold_samples(name, k, x, op),
        PhysicalRule::SamplesFirst if p.rank() == 0 => return Err(fallback(name)),
        PhysicalRule::SamplesFirst => return fold_samples(name, p.rank() - 1, x, op),
        _ => {}
    }
    let phys = p.phys.cast::<PyTensor>()?.clone();
    let res = op(&phys)?.into_bound(x.py());
    wrap_result(res, &p.levels)
}

/// torch's error for an in-place op that writes a batched value into a
/// tensor that is not batched (`y.add_(x)`, `y.copy_(x)`, `y[0] = x` with
/// `y` from outside the mapped function): raised when `value` is batched.
pub(crate) fn refuse_write_into_plain(value: &Bound<'_, PyAny>) -> PyResult<()> {
    if !is_batched(value) {
        return Ok(());
    }
    Err(inplace_error())
}

/// torch's error for an in-place op whose self lacks a vmap level of one
/// of its other operands.
fn inplace_error() -> PyErr {
    PyRuntimeError::new_err(
        "vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a Tensor `other` in extra_args that has more elements than `self`. This happened due to `other` being vmapped over but `self` not being vmapped over in a vmap. Please try to use out-of-place operators instead of inplace arithmetic. If said operator is being called inside the PyTorch framework, please file a bug report instead.",
    )
}

/// Whether an in-place rule may write into `p`'s physical tensor: it is
/// batched over the innermost active level (made inside the running
/// call) and views no input of a vmap call, so that a fallback later in
/// the function, which reruns it from its inputs, sees them unchanged.
fn may_write(p: &Parts<'_>) -> PyResult<bool> {
    let innermost = ACTIVE.with(|a| a.borrow().last().map(|(l, _)| *l));
    let Some(inner) = innermost else {
        return Ok(false);
    };
    if !p.levels.iter().any(|(l, _)| *l == inner) {
        return Ok(false);
    }
    let storage = p.phys.cast::<PyTensor>()?.borrow().inner.storage_ptr();
    Ok(!WRAPPED.with(|w| w.borrow().iter().any(|(_, s)| *s == storage)))
}

/// [`Rule::PointwiseInplace`]: `slf.name(*args, **kwargs)` written into
/// self's physical tensor, each batched operand aligned to self's levels
/// (torch's error when it has a level self lacks).
fn pointwise_inplace<'py>(
    slf: &Bound<'py, PyAny>,
    name: &str,
    p: &Parts<'py>,
    args: Vec<Bound<'py, PyAny>>,
    kwargs: Option<Bound<'py, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    let conv = |a: &Bound<'py, PyAny>| -> PyResult<Bound<'py, PyAny>> {
        if !is_batched(a) {
            return Ok(a.clone());
        }
        let q = parts(a)?.expect("batched");
        if q.levels.iter().any(|l| !p.levels.contains(l)) {
            return Err(inplace_error());
        }
        align(&q, &p.levels, q.rank().max(p.rank()))
    };
    let (args, kwargs) = map_call_args(py, &args, kwargs.as_ref(), conv)?;
    if !may_write(p)? {
        return Err(fallback(name));
    }
    p.phys
        .call_method(name, PyTuple::new(py, args)?, kwargs.as_ref())?;
    Ok(slf.clone().unbind())
}

/// An op on inputs of `core` dims (`C, *spatial`) or of a samples dim
/// and those (`N, C, *spatial`: pooling), with a batched input: every
/// batch dim folded into the samples dim, one call, each result tensor
/// (values, indices) unfolded again.
pub(crate) fn fold_samples<'py>(
    name: &str,
    core: usize,
    x: &Bound<'py, PyAny>,
    op: impl FnOnce(&Bound<'py, PyTensor>) -> PyResult<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    let py = x.py();
    let p = parts(x)?.expect("a batched tensor");
    let r = p.rank();
    if r != core && r != core + 1 {
        return Err(fallback(name));
    }
    let mut lead: Vec<i64> = p.batch_sizes().iter().map(|&s| s as i64).collect();
    if r == core + 1 {
        lead.push(p.logical[0] as i64);
    }
    let mut shape = vec![-1i64];
    shape.extend(p.logical[r - core..].iter().map(|&s| s as i64));
    let folded = p.phys.call_method1("reshape", (shape,))?;
    let res = op(folded.cast::<PyTensor>()?)?.into_bound(py);
    let unfold = |t: Bound<'py, PyAny>| -> PyResult<Bound<'py, PyAny>> {
        let dims: Vec<i64> = t.getattr("shape")?.extract()?;
        let mut shape = lead.clone();
        shape.extend(dims.into_iter().skip(1));
        t.call_method1("reshape", (shape,))
    };
    let out = if let Ok(t) = res.cast::<PyTuple>() {
        let items = t.iter().map(unfold).collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)?.into_any()
    } else {
        unfold(res)?
    };
    wrap_result(out, &p.levels)
}

/// An op on inputs `(N, C, *)` whose statistics are per channel over the
/// samples (`batch_norm` in training), with a batched input: the batch
/// joins the channels (`(N, B*C, *)`), `op` runs once (told `B`, to repeat
/// per-channel parameters), and the result is unfolded again.
pub(crate) fn fold_channels<'py>(
    name: &str,
    x: &Bound<'py, PyAny>,
    op: impl FnOnce(&Bound<'py, PyTensor>, usize) -> PyResult<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    let py = x.py();
    let p = parts(x)?.expect("a batched tensor");
    if p.rank() < 2 {
        return Err(fallback(name));
    }
    let b: usize = p.batch_sizes().iter().product();
    let mut shape = vec![b];
    shape.extend(&p.logical);
    let folded = p
        .phys
        .call_method1("reshape", (shape,))?
        .call_method1("movedim", (0, 1))?
        .call_method1("flatten", (1, 2))?;
    let y = op(folded.cast::<PyTensor>()?, b)?.into_bound(py);
    let (c, mut out) = (p.logical[1], p.batch_sizes());
    out.extend(&p.logical);
    let y = y
        .call_method1("unflatten", (1, (b, c)))?
        .call_method1("movedim", (1, 0))?
        .call_method1("reshape", (out,))?;
    wrap_result(y, &p.levels)
}

/// `F.embedding(input, weight)` with a batched weight (functorch's rule):
/// every sample's table stacked into one of `B * V` rows, each sample's
/// indices offset by its `b * V`; one lookup.
pub(crate) fn embedding_weight<'py>(
    input: &Bound<'py, PyAny>,
    weight: &Bound<'py, PyAny>,
    op: impl FnOnce(&Bound<'py, PyAny>, &Bound<'py, PyAny>) -> PyResult<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    let py = input.py();
    let (Some(pi), Some(pw)) = (parts(input)?, parts(weight)?) else {
        return Err(fallback("embedding"));
    };
    if pw.rank() != 2 {
        return Err(fallback("embedding"));
    }
    let all = union_levels([pi.levels.as_slice(), pw.levels.as_slice()].into_iter());
    let sizes: Vec<usize> = all.iter().map(|(_, s)| *s).collect();
    let b: usize = sizes.iter().product();
    let v = pw.logical[0];
    let mut wshape = vec![(b * v) as i64];
    wshape.push(pw.logical[1] as i64);
    let table = expand_to(&pw, &all)?.call_method1("reshape", (wshape,))?;
    // indices (B, *) plus b * V for sample b
    let mut ishape = vec![b as i64];
    ishape.extend(pi.logical.iter().map(|&s| s as i64));
    let idx = expand_to(&pi, &all)?.call_method1("reshape", (ishape,))?;
    let mut oshape = vec![b as i64];
    oshape.extend(std::iter::repeat_n(1i64, pi.rank()));
    let c = py.import("ferrograd._C")?;
    let offsets = c
        .getattr("arange")?
        .call1((b as i64,))?
        .call_method1("mul", (v as i64,))?
        .call_method1("reshape", (oshape,))?;
    let idx = idx.call_method1("add", (offsets,))?;
    let y = op(&idx, &table)?.into_bound(py);
    let mut out = sizes.clone();
    out.extend(&pi.logical);
    out.push(pw.logical[1]);
    make(py, y.call_method1("reshape", (out,))?, all)
}

/// Inside vmap, a pointwise module function (`module.name`) called with a
/// batched tensor among `args`: its pointwise rule; None when none is
/// batched (the function runs as usual).
pub(crate) fn pointwise_if_batched<'py>(
    module: &str,
    name: &str,
    args: &[&Bound<'py, PyAny>],
    kwargs: impl FnOnce() -> PyResult<Option<Bound<'py, PyDict>>>,
) -> Option<PyResult<Py<PyAny>>> {
    if !any_batched(args) {
        return None;
    }
    let args = args.iter().map(|a| (*a).clone()).collect();
    Some(kwargs().and_then(|kw| pointwise_function(module, name, args, kw)))
}

/// A module function's tensor `input`: the tensor, or torch's TypeError.
pub(crate) fn tensor_input<'a, 'py>(
    input: &'a Bound<'py, PyAny>,
    fname: &str,
) -> PyResult<&'a Bound<'py, PyTensor>> {
    input.cast::<PyTensor>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{fname}(): argument 'input' (position 1) must be Tensor, not {}",
            input
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })
}

fn rank_error(ranks: MatmulRanks, ra: usize, rb: usize) -> Option<String> {
    match ranks {
        MatmulRanks::Any if ra == 0 || rb == 0 => Some(format!(
            "both arguments to matmul need to be at least 1D, but they are {ra}D and {rb}D"
        )),
        MatmulRanks::Mm if ra != 2 => Some("self must be a matrix".into()),
        MatmulRanks::Mm if rb != 2 => Some("mat2 must be a matrix".into()),
        MatmulRanks::Bmm if ra != 3 => Some("batch1 must be a 3D tensor".into()),
        MatmulRanks::Bmm if rb != 3 => Some("batch2 must be a 3D tensor".into()),
        MatmulRanks::Mv if ra != 2 || rb != 1 => Some(format!(
            "vector + matrix @ vector expected, got 1, {ra}, {rb}"
        )),
        MatmulRanks::Dot if ra != 1 || rb != 1 => Some(format!(
            "1D tensors expected, but got {ra}D and {rb}D tensors"
        )),
        _ => None,
    }
}

/// `a @ b` for batched or plain `a`, `b`: vectors become matrices, batched
/// operands get the union of levels and the same logical rank, a plain
/// operand broadcasts as it is; one physical `matmul`.
fn matmul(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, ranks: MatmulRanks) -> PyResult<Py<PyAny>> {
    let py = a.py();
    let (Some(mut pa), Some(mut pb)) = (parts(a)?, parts(b)?) else {
        return Err(fallback("matmul"));
    };
    let (ra, rb) = (pa.rank(), pb.rank());
    if let Some(msg) = rank_error(ranks, ra, rb) {
        return Err(PyRuntimeError::new_err(msg));
    }
    if pa.levels.is_empty() && ra == 2 && !pb.levels.is_empty() && rb <= 2 {
        // A plain matrix times batched vectors or matrices: one product
        // with the batch folded into the rows, `b^T a^T` (the batch of
        // `a @ b` would be as many separate products, each reading `a`).
        let at = pa.phys.call_method1("transpose", (0, 1))?;
        let out = if rb == 1 {
            pb.phys.call_method1("matmul", (at,))?
        } else {
            let bt = pb.phys.call_method1("transpose", (-1, -2))?;
            bt.call_method1("matmul", (at,))?
                .call_method1("transpose", (-1, -2))?
        };
        return wrap_result(out, &pb.levels);
    }
    if ra == 1 {
        pa.phys = pa.phys.call_method1("unsqueeze", (pa.nb(),))?;
        pa.logical.insert(0, 1);
    }
    if rb == 1 {
        pb.phys = pb.phys.call_method1("unsqueeze", (-1,))?;
        pb.logical.push(1);
    }
    let rank = pa.rank().max(pb.rank());
    let all = union_levels([pa.levels.as_slice(), pb.levels.as_slice()].into_iter());
    let xa = if pa.levels.is_empty() {
        pa.phys.clone()
    } else {
        align(&pa, &all, rank)?
    };
    let xb = if pb.levels.is_empty() {
        pb.phys.clone()
    } else {
        align(&pb, &all, rank)?
    };
    let mut out = xa.call_method1("matmul", (xb,))?;
    if rb == 1 {
        out = out.call_method1("squeeze", (-1,))?;
    }
    if ra == 1 {
        out = out.call_method1("squeeze", (if rb == 1 { -1 } else { -2 },))?;
    }
    let _ = py;
    wrap_result(out, &all)
}

/// `ferrograd.matmul(a, b)` (or `mm`, `bmm`, `mv`, `dot`, `outer`, `ger`)
/// with a batched operand.
pub(crate) fn matmul_function(
    name: &str,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    if matches!(name, "outer" | "ger") {
        let (Some(pa), Some(pb)) = (parts(a)?, parts(b)?) else {
            return Err(fallback(name));
        };
        if pa.rank() != 1 || pb.rank() != 1 {
            return Err(fallback(name));
        }
        // a[:, None] @ b[None, :], each batched as it is.
        let col = a.call_method1("unsqueeze", (-1,))?;
        let row = b.call_method1("unsqueeze", (0,))?;
        return matmul(&col, &row, MatmulRanks::Mm);
    }
    match rule(name) {
        Some(Rule::Matmul(ranks)) => matmul(a, b, ranks),
        _ => Err(fallback(name)),
    }
}

/// `F.conv{1,2,3}d` and `F.conv_transpose{1,2,3}d` with a batched input,
/// weight or bias (functorch's rule): the batch dims of every level are
/// folded into one dim of size
/// `B`. With a plain weight and bias the batch joins the input's samples
/// (`(B*N, C, ...)`); with a batched weight (per-sample weights, as in
/// per-sample gradients) it joins the channels and the groups
/// (`(N, B*C, ...)` against `(B*O, C/g, ...)`, `groups * B`). One
/// convolution either way.
pub(crate) fn conv<'py>(
    name: &str,
    spatial: usize,
    input: &Bound<'py, PyAny>,
    weight: &Bound<'py, PyAny>,
    bias: Option<&Bound<'py, PyAny>>,
    groups: i64,
    kw: Bound<'py, PyDict>,
) -> PyResult<Py<PyAny>> {
    let py = input.py();
    let (Some(pi), Some(pw)) = (parts(input)?, parts(weight)?) else {
        return Err(fallback(name));
    };
    let pb = bias.map(parts).transpose()?.flatten();
    if bias.is_some() && pb.is_none() {
        return Err(fallback(name));
    }
    let no_samples = pi.rank() == spatial + 1;
    if !(no_samples || pi.rank() == spatial + 2) || pw.rank() != spatial + 2 {
        return Err(fallback(name));
    }
    let all = union_levels(
        [pi.levels.as_slice(), pw.levels.as_slice()]
            .into_iter()
            .chain(pb.iter().map(|q| q.levels.as_slice())),
    );
    let sizes: Vec<i64> = all.iter().map(|(_, s)| *s as i64).collect();
    let b: i64 = sizes.iter().product();
    let func = py.import("ferrograd._C")?.getattr("_nn")?.getattr(name)?;
    // the input with one batch dim in front, and a samples dim
    let mut x = expand_to(&pi, &all)?;
    let mut shape = vec![b];
    if no_samples {
        shape.push(1);
    }
    shape.extend(pi.logical.iter().map(|&s| s as i64));
    x = x.call_method1("reshape", (shape,))?;
    let weight_batched = !pw.levels.is_empty() || pb.as_ref().is_some_and(|q| !q.levels.is_empty());
    let out = if !weight_batched {
        // (B, N, C, ...) -> (B*N, C, ...)
        let x = x.call_method1("flatten", (0, 1))?;
        kw.set_item("groups", groups)?;
        let y = func.call((x, &pw.phys, bias), Some(&kw))?;
        let mut shape = vec![b, -1];
        shape.extend(
            y.getattr("shape")?
                .extract::<Vec<i64>>()?
                .into_iter()
                .skip(1),
        );
        y.call_method1("reshape", (shape,))?
    } else {
        let w = expand_to(&pw, &all)?;
        // output channels: weight (O, C/g, ...), or (C, O/g, ...) transposed
        let o = match name.starts_with("conv_transpose") {
            true => pw.logical[1] as i64 * groups,
            false => pw.logical[0] as i64,
        };
        let mut wshape = vec![b * pw.logical[0] as i64];
        wshape.extend(pw.logical[1..].iter().map(|&s| s as i64));
        let w = w.call_method1("reshape", (wshape,))?;
        let bias = match &pb {
            Some(q) => Some(expand_to(q, &all)?.call_method1("reshape", (vec![b * o],))?),
            None => None,
        };
        // (B, N, C, ...) -> (N, B*C, ...)
        let x = x
            .call_method1("movedim", (0, 1))?
            .call_method1("flatten", (1, 2))?;
        kw.set_item("groups", groups * b)?;
        let y = func.call((x, w, bias), Some(&kw))?;
        // (N, B*O, ...) -> (B, N, O, ...)
        y.call_method1("unflatten", (1, (b, o)))?
            .call_method1("movedim", (1, 0))?
    };
    // (B, N, O, ...) -> (sizes..., [N,] O, ...)
    let mut shape = sizes.clone();
    let dims: Vec<i64> = out.getattr("shape")?.extract()?;
    shape.extend(dims.iter().skip(if no_samples { 2 } else { 1 }));
    let out = out.call_method1("reshape", (shape,))?;
    make(py, out, all)
}

/// `F.linear(input, weight, bias)` when any of them is batched.
pub(crate) fn linear(
    input: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    bias: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let py = input.py();
    let wr = parts(weight)?.ok_or_else(|| fallback("linear"))?.rank();
    let wt = if wr >= 2 {
        weight.call_method1("transpose", (-1, -2))?
    } else {
        weight.clone()
    };
    let out = matmul(input, &wt, MatmulRanks::Any)?.into_bound(py);
    match bias {
        Some(b) if !b.is_none() => Ok(out.add(b)?.unbind()),
        _ => Ok(out.unbind()),
    }
}

/// `q` aligned to the levels `all` and expanded to their sizes.
fn expand_to<'py>(q: &Parts<'py>, all: &[(u32, usize)]) -> PyResult<Bound<'py, PyAny>> {
    let x = align(q, all, q.rank())?;
    let mut shape: Vec<usize> = all.iter().map(|(_, s)| *s).collect();
    shape.extend(&q.logical);
    x.call_method1("expand", (shape,))
}

/// `F.cross_entropy` with class-index targets, no weight and no label
/// smoothing, when input or target is batched: every sample's rows are
/// flattened into one unreduced call, then reduced per sample.
pub(crate) fn cross_entropy(
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    ignore_index: i64,
    reduction: &str,
    plain: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let py = input.py();
    let (Some(pi), Some(pt)) = (parts(input)?, parts(target)?) else {
        return Err(fallback("cross_entropy"));
    };
    if pt.phys.call_method0("is_floating_point")?.is_truthy()? || pi.rank() == 0 {
        return Err(fallback("cross_entropy"));
    }
    let all = union_levels([pi.levels.as_slice(), pt.levels.as_slice()].into_iter());
    let sizes: Vec<usize> = all.iter().map(|(_, s)| *s).collect();
    let nb = all.len();
    let xi = expand_to(&pi, &all)?;
    let xt = expand_to(&pt, &all)?;
    let batch: usize = sizes.iter().product();
    // (batch * N, C, d...) and (batch * N, d...), or (batch, C) and (batch,).
    let (mut ishape, mut tshape): (Vec<i64>, Vec<i64>) = (vec![-1], vec![-1]);
    let skip = if pi.rank() == 1 { 0 } else { 1 };
    ishape.extend(pi.logical[skip..].iter().map(|&s| s as i64));
    tshape.extend(pt.logical[skip.min(pt.rank())..].iter().map(|&s| s as i64));
    let kw = PyDict::new(py);
    kw.set_item("ignore_index", ignore_index)?;
    kw.set_item("reduction", "none")?;
    let li = xi.call_method1("reshape", (ishape,))?;
    let lt = xt.call_method1("reshape", (tshape,))?;
    let loss = plain.call((li, lt), Some(&kw))?;
    let mut lshape: Vec<i64> = sizes.iter().map(|&s| s as i64).collect();
    lshape.extend(pt.logical.iter().map(|&s| s as i64));
    let loss = loss.call_method1("reshape", (lshape,))?;
    let _ = batch;
    let rank = pt.rank();
    let out = match reduction {
        "none" => loss,
        "sum" | "mean" if rank == 0 => {
            if reduction == "mean" {
                // One row: its loss, NaN when it is ignored (0 / 0).
                let kept = xt.call_method1("ne", (ignore_index,))?;
                loss.div(kept)?
            } else {
                loss
            }
        }
        "sum" => loss.call_method1("sum", (PyTuple::new(py, nb..nb + rank)?,))?,
        "mean" => {
            let dims = PyTuple::new(py, nb..nb + rank)?;
            let kept = xt
                .call_method1("ne", (ignore_index,))?
                .call_method1("sum", (dims.clone(),))?;
            loss.call_method1("sum", (dims,))?.div(kept)?
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "{other} is not a valid value for reduction"
            )))
        }
    };
    make(py, out, all)
}

/// Each of `objs` (tensors) batched over the union of their levels, a
/// level it lacks expanded: their physical shapes then agree where their
/// logical shapes do.
pub(crate) fn batched_alike<'py>(objs: &[&Bound<'py, PyAny>]) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let ps = objs
        .iter()
        .map(|o| parts(o)?.ok_or_else(|| PyTypeError::new_err("expected Tensors")))
        .collect::<PyResult<Vec<_>>>()?;
    let all = union_levels(ps.iter().map(|q| q.levels.as_slice()));
    ps.iter()
        .map(|q| Ok(make(q.phys.py(), expand_to(q, &all)?, all.clone())?.into_bound(q.phys.py())))
        .collect()
}

/// `op` once on the physical tensors of `objs` (tensors, some batched),
/// each expanded to the union of their levels (their logical dims as they
/// are), told how many batch dims lead: the rule of an op written with a
/// batch count (`tensorinv_batched`).
pub(crate) fn on_alike<'py>(
    objs: &[&Bound<'py, PyAny>],
    op: impl FnOnce(&[crate::Tensor], usize) -> crate::Result<crate::Tensor>,
) -> PyResult<Py<PyAny>> {
    let py = objs[0].py();
    let alike = batched_alike(objs)?;
    let levels = match alike[0].cast::<PyBatched>() {
        Ok(b) => b.get().levels.clone(),
        Err(_) => Vec::new(),
    };
    let phys = alike
        .iter()
        .map(|o| {
            Ok(parts(o)?
                .expect("a tensor")
                .phys
                .cast::<PyTensor>()?
                .borrow()
                .inner
                .clone())
        })
        .collect::<PyResult<Vec<_>>>()?;
    let out = Bound::new(
        py,
        crate::python::core::tensor::wrap(op(&phys, levels.len())?),
    )?;
    make(py, out.into_any(), levels)
}

/// Whether any of these is a batched tensor.
pub(crate) fn any_batched(objs: &[&Bound<'_, PyAny>]) -> bool {
    objs.iter().any(|o| is_batched(o))
}

/// A call's positional and keyword arguments, each passed through `conv`.
#[allow(clippy::type_complexity)]
fn map_call_args<'py>(
    py: Python<'py>,
    args: &[Bound<'py, PyAny>],
    kwargs: Option<&Bound<'py, PyDict>>,
    conv: impl Fn(&Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<(Vec<Bound<'py, PyAny>>, Option<Bound<'py, PyDict>>)> {
    let args = args.iter().map(&conv).collect::<PyResult<Vec<_>>>()?;
    let kwargs = match kwargs {
        Some(k) => {
            let d = PyDict::new(py);
            for (key, v) in k.iter() {
                d.set_item(key, conv(&v)?)?;
            }
            Some(d)
        }
        None => None,
    };
    Ok((args, kwargs))
}

/// The elements of a sequence argument (a list of tensors) when one of
/// them is batched; None otherwise, or when it is not iterable.
fn batched_items<'py>(tensors: &Bound<'py, PyAny>) -> PyResult<Option<Vec<Bound<'py, PyAny>>>> {
    let items: Vec<Bound<'py, PyAny>> = match tensors.try_iter() {
        Ok(it) => it.collect::<PyResult<_>>()?,
        Err(_) => return Ok(None),
    };
    Ok(items.iter().any(is_batched).then_some(items))
}

/// `cat`/`stack` of a list with batched tensors: every element aligned to
/// the union of levels (and expanded to its sizes), dim shifted.
pub(crate) fn join(
    tensors: &Bound<'_, PyAny>,
    dim: i64,
    stack: bool,
) -> PyResult<Option<Py<PyAny>>> {
    let py = tensors.py();
    let Some(items) = batched_items(tensors)? else {
        return Ok(None);
    };
    let ps = items
        .iter()
        .map(|x| parts(x)?.ok_or_else(|| PyTypeError::new_err("expected a sequence of Tensors")))
        .collect::<PyResult<Vec<_>>>()?;
    let all = union_levels(ps.iter().map(|q| q.levels.as_slice()));
    let rank = ps[0].rank();
    let phys = ps
        .iter()
        .map(|q| expand_to(q, &all))
        .collect::<PyResult<Vec<_>>>()?;
    let d = wrap_logical(dim, rank + usize::from(stack), all.len())?;
    let c = py.import("ferrograd._C")?;
    let f = c.getattr(if stack { "stack" } else { "cat" })?;
    let out = f.call1((PyList::new(py, phys)?, d))?;
    Ok(Some(make(py, out, all)?))
}

#[pymethods]
impl PyBatched {
    #[getter]
    fn shape<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let p = parts(slf.as_any())?.expect("batched");
        make_size(slf.py(), &p.logical)
    }
    #[getter]
    fn ndim(slf: &Bound<'_, Self>) -> PyResult<usize> {
        Ok(parts(slf.as_any())?.expect("batched").rank())
    }
    fn dim(slf: &Bound<'_, Self>) -> PyResult<usize> {
        Self::ndim(slf)
    }
    fn numel(slf: &Bound<'_, Self>) -> PyResult<usize> {
        Ok(parts(slf.as_any())?
            .expect("batched")
            .logical
            .iter()
            .product())
    }
    #[pyo3(signature = (dim=None))]
    fn size<'py>(slf: &Bound<'py, Self>, dim: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        let p = parts(slf.as_any())?.expect("batched");
        match dim {
            None => make_size(slf.py(), &p.logical),
            Some(d) => Ok(p.logical[wrap_dim(d, p.rank())?]
                .into_pyobject(slf.py())?
                .into_any()),
        }
    }
    /// `isinstance(x, Tensor)` holds inside the mapped function.
    #[getter]
    fn __class__<'py>(slf: &Bound<'py, Self>) -> Bound<'py, PyAny> {
        slf.py().get_type::<PyTensor>().into_any()
    }
    #[getter(T)]
    fn t_attr(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let p = parts(slf.as_any())?.expect("batched");
        let nb = p.nb();
        let mut dims: Vec<usize> = (0..nb).collect();
        dims.extend((nb..nb + p.rank()).rev());
        wrap_result(p.phys.call_method1("permute", (dims,))?, &p.levels)
    }
    #[getter(mT)]
    fn mt_attr(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        dispatch(
            slf.as_any(),
            "transpose",
            vec![
                (-2i64).into_pyobject(slf.py())?.into_any(),
                (-1i64).into_pyobject(slf.py())?.into_any(),
            ],
            None,
        )
    }
    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let b = slf.get();
        let (lvl, _) = b.levels.last().expect("batched");
        Ok(format!(
            "BatchedTensor(lvl={lvl}, bdim={}, value=\n{})",
            b.levels.len() - 1,
            b.phys.bind(slf.py()).repr()?
        ))
    }
    fn __len__(slf: &Bound<'_, Self>) -> PyResult<usize> {
        let p = parts(slf.as_any())?.expect("batched");
        p.logical
            .first()
            .copied()
            .ok_or_else(|| PyTypeError::new_err("len() of a 0-d tensor"))
    }
    fn __iter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let parts_ = dispatch(slf.as_any(), "unbind", vec![], None)?.into_bound(slf.py());
        parts_.try_iter().map(|i| i.into_any())
    }
    fn __bool__(_slf: &Bound<'_, Self>) -> PyResult<bool> {
        Err(PyRuntimeError::new_err(crate::ops::batching::CONTROL_FLOW))
    }
    fn __float__(_slf: &Bound<'_, Self>) -> PyResult<f64> {
        Err(PyRuntimeError::new_err(crate::ops::batching::ITEM))
    }
    fn __int__(_slf: &Bound<'_, Self>) -> PyResult<i64> {
        Err(PyRuntimeError::new_err(crate::ops::batching::ITEM))
    }
    fn __index__(_slf: &Bound<'_, Self>) -> PyResult<i64> {
        Err(PyRuntimeError::new_err(crate::ops::batching::ITEM))
    }
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }
    fn __getitem__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dispatch(slf.as_any(), "__getitem__", vec![key.clone()], None)
    }
    fn __setitem__(
        _slf: &Bound<'_, Self>,
        _key: &Bound<'_, PyAny>,
        _v: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        Err(fallback("__setitem__"))
    }
    fn __neg__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        dispatch(slf.as_any(), "__neg__", vec![], None)
    }
    fn __abs__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        dispatch(slf.as_any(), "__abs__", vec![], None)
    }
    fn __invert__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        dispatch(slf.as_any(), "__invert__", vec![], None)
    }
    fn __richcmp__(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        op: pyo3::basic::CompareOp,
    ) -> PyResult<Py<PyAny>> {
        use pyo3::basic::CompareOp::*;
        let name = match op {
            Lt => "__lt__",
            Le => "__le__",
            Eq => "__eq__",
            Ne => "__ne__",
            Gt => "__gt__",
            Ge => "__ge__",
        };
        dispatch(slf.as_any(), name, vec![other.clone()], None)
    }
    /// Any other method: its batching rule, or the fallback.
    fn __getattr__<'py>(slf: &Bound<'py, Self>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        // A method with a rule runs it; any other method of a tensor is
        // bound too (a call raises the fallback naming it); other
        // attributes (dtype, requires_grad, grad_fn, ...) are the physical
        // tensor's.
        let v = if rule(name).is_some() {
            None
        } else {
            Some(slf.get().phys.bind(py).getattr(name)?)
        };
        match v {
            Some(v) if !v.is_callable() => Ok(v),
            _ => Ok(Bound::new(
                py,
                BatchedMethod {
                    target: slf.clone().unbind(),
                    name: name.to_string(),
                },
            )?
            .into_any()),
        }
    }
}

macro_rules! binary_dunders {
    ($($name:ident),*) => {
        #[pymethods]
        impl PyBatched {
            $(
                fn $name(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                    dispatch(slf.as_any(), stringify!($name), vec![other.clone()], None)
                }
            )*
        }
    };
}
binary_dunders!(
    __add__,
    __radd__,
    __sub__,
    __rsub__,
    __mul__,
    __rmul__,
    __truediv__,
    __rtruediv__,
    __floordiv__,
    __rfloordiv__,
    __mod__,
    __rmod__,
    __matmul__,
    __rmatmul__,
    __and__,
    __rand__,
    __or__,
    __ror__,
    __xor__,
    __rxor__
);

/// `x op= y` on a batched `x`: the in-place method's rule (or the
/// fallback); PyO3 returns `x` itself, so the name stays bound to the same tensor
/// and a view's base sees the write (`__add__`'s result would rebind it).
macro_rules! inplace_dunders {
    ($($name:ident => $method:literal),*) => {
        #[pymethods]
        impl PyBatched {
            $(
                fn $name<'py>(
                    slf: &Bound<'py, Self>,
                    other: &Bound<'py, PyAny>,
                ) -> PyResult<()> {
                    dispatch(slf.as_any(), $method, vec![other.clone()], None).map(drop)
                }
            )*
        }
    };
}
inplace_dunders!(
    __iadd__ => "add_",
    __isub__ => "sub_",
    __imul__ => "mul_",
    __itruediv__ => "div_",
    __ifloordiv__ => "floor_divide_",
    __imod__ => "remainder_",
    __iand__ => "bitwise_and_",
    __ior__ => "bitwise_or_",
    __ixor__ => "bitwise_xor_"
);

#[pymethods]
impl PyBatched {
    fn __ipow__<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        modulo: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<()> {
        let _ = modulo;
        dispatch(slf.as_any(), "pow_", vec![other.clone()], None).map(drop)
    }
    fn __pow__(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = modulo;
        dispatch(slf.as_any(), "__pow__", vec![other.clone()], None)
    }
    fn __rpow__(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = modulo;
        dispatch(slf.as_any(), "__rpow__", vec![other.clone()], None)
    }
}

/// A bound method of a batched tensor: calls run its rule.
#[pyclass(name = "_BatchedMethod", module = "ferrograd._C", frozen)]
pub struct BatchedMethod {
    target: Py<PyBatched>,
    name: String,
}

#[pymethods]
impl BatchedMethod {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let slf = self.target.bind(py).clone().into_any();
        let kw = match kwargs {
            Some(k) if !k.is_empty() => Some(k.copy()?),
            _ => None,
        };
        dispatch(&slf, &self.name, args.iter().collect(), kw)
    }
}

fn active_size(level: u32) -> PyResult<usize> {
    ACTIVE.with(|a| {
        a.borrow()
            .iter()
            .find(|(l, _)| *l == level)
            .map(|(_, s)| *s)
            .ok_or_else(|| PyRuntimeError::new_err(format!("vmap: level {level} is not active")))
    })
}

/// Starts a vmap level of `batch_size`; returns its number.
#[pyfunction]
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
#[pyfunction]
fn _vmap_exit(level: u32) {
    ACTIVE.with(|a| a.borrow_mut().retain(|(l, _)| *l < level));
    WRAPPED.with(|w| w.borrow_mut().retain(|(l, _)| *l < level));
}

/// The active levels, outermost first: [(level, batch size)].
#[pyfunction]
fn _vmap_levels() -> Vec<(u32, usize)> {
    ACTIVE.with(|a| a.borrow().clone())
}

/// `x` batched over `level` at its logical dim `in_dim`.
#[pyfunction]
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
#[pyfunction]
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
#[pyfunction]
fn _vmap_is_batched(x: &Bound<'_, PyAny>) -> bool {
    is_batched(x)
}

/// `x` batched over every active level it lacks (expanded: each sample
/// sees the same values): how a transform inside vmap makes per-sample
/// copies of an unbatched input it differentiates.
#[pyfunction]
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
#[pyfunction]
fn _vmap_physical(x: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    match x.cast::<PyBatched>() {
        Ok(b) => Ok(b.get().phys.clone_ref(x.py())),
        Err(_) => Ok(x.clone().unbind()),
    }
}

/// The physical tensor of `g` laid out as `like`'s: aligned to its levels
/// and expanded to its physical shape.
#[pyfunction]
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
#[pyfunction]
fn _vmap_like(phys: &Bound<'_, PyAny>, like: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let levels = match like.cast::<PyBatched>() {
        Ok(b) => b.get().levels.clone(),
        Err(_) => Vec::new(),
    };
    make(phys.py(), phys.clone(), levels)
}

/// The names of the methods and functions with a batching rule that are
/// not table rows (the registry test reports the others' coverage).
#[pyfunction]
fn _vmap_rule(name: &str) -> Option<String> {
    rule(name).map(|r| format!("{r:?}"))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBatched>()?;
    m.add_class::<BatchedMethod>()?;
    m.add("_VmapFallback", m.py().get_type::<VmapFallback>())?;
    m.add_function(wrap_pyfunction!(_vmap_enter, m)?)?;
    m.add_function(wrap_pyfunction!(_vmap_exit, m)?)?;
    m.add_function(wrap_pyfunction!(_vmap_levels, m)?)?;
    m.add_function(wrap_pyfunction!(_vmap_wrap, m)?)?;
    m.add_function(wrap_pyfunction!(_vmap_unwrap, m)?)?;
    m.add_function(wrap_pyfunction!(_vmap_is_batched, m)?)?;
    m.add_function(wrap_pyfunction!(_vmap_expand, m)?)?;
    m.add_function(wrap_pyfunction!(_vmap_physical, m)?)?;
    m.add_function(wrap_pyfunction!(_vmap_physical_like, m)?)?;
    m.add_function(wrap_pyfunction!(_vmap_like, m)?)?;
    m.add_function(wrap_pyfunction!(_vmap_rule, m)?)?;
    Ok(())
}
