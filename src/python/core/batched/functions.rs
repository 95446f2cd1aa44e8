//! Batching rules of module functions (`torch.einsum`, `tensordot`,
//! `meshgrid`, pointwise functions, ...) and the helpers the `vmap_rule!`
//! macro of the binding files calls.

use super::*;

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
    ($f:ident as $key:expr, [$($t:ident),+], [$($a:ident),*]) => {
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

pub(super) fn expand(p: &Parts<'_>, sizes: Vec<i64>) -> PyResult<Py<PyAny>> {
    let nb = p.nb();
    let mut phys = p.phys.clone();
    for _ in p.rank()..sizes.len() {
        phys = phys.call_method1("unsqueeze", (nb,))?;
    }
    let mut new: Vec<i64> = p.batch_sizes().iter().map(|&s| s as i64).collect();
    new.extend(sizes);
    wrap_result(phys.call_method1("expand", (new,))?, &p.levels)
}

pub(super) fn index(p: &Parts<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
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

pub(super) fn pointwise<'py>(
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
pub(super) fn pointwise_call<'py>(
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
