//! Batching rules of products and layers: matmul, conv, linear,
//! cross_entropy, ops folded over samples or channels, embedding, and
//! lists of tensors (cat, stack).

use super::*;

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

pub(super) fn rank_error(ranks: MatmulRanks, ra: usize, rb: usize) -> Option<String> {
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
pub(super) fn matmul(
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    ranks: MatmulRanks,
) -> PyResult<Py<PyAny>> {
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
pub(super) fn expand_to<'py>(q: &Parts<'py>, all: &[(u32, usize)]) -> PyResult<Bound<'py, PyAny>> {
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
pub(super) fn map_call_args<'py>(
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
pub(super) fn batched_items<'py>(
    tensors: &Bound<'py, PyAny>,
) -> PyResult<Option<Vec<Bound<'py, PyAny>>>> {
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
