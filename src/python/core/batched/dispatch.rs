//! A batched tensor's method run through its op's rule (`ops::batching`):
//! the table-driven rules (dims, repeat, diag, index, ...) and the in-place
//! writes into a batched tensor.

use super::*;

/// Runs method `name` of the batched `slf` through its rule.
pub(super) fn dispatch<'py>(
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
pub(super) fn dispatch_to<'py>(
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
pub(super) fn negative_dims<'py>(
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
pub(super) fn dims_rule<'py>(
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
pub(super) fn inplace_error() -> PyErr {
    PyRuntimeError::new_err(
        "vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a Tensor `other` in extra_args that has more elements than `self`. This happened due to `other` being vmapped over but `self` not being vmapped over in a vmap. Please try to use out-of-place operators instead of inplace arithmetic. If said operator is being called inside the PyTorch framework, please file a bug report instead.",
    )
}

/// Whether an in-place rule may write into `p`'s physical tensor: it is
/// batched over the innermost active level (made inside the running
/// call) and views no input of a vmap call, so that a fallback later in
/// the function, which reruns it from its inputs, sees them unchanged.
pub(super) fn may_write(p: &Parts<'_>) -> PyResult<bool> {
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
pub(super) fn pointwise_inplace<'py>(
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
