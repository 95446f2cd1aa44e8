"""grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian.

Reverse mode is ``autograd.grad`` on the Rust engine; forward mode is the
Rust forward-AD levels (``autograd.forward_ad``), which nest. Each transform
gives its inputs a fresh identity (a view of an input that an enclosing
transform differentiates, else a detached leaf), so nested transforms
differentiate through one another. This module only plumbs arguments and
pytrees: every derivative is computed by the engine.
"""

import functools
import threading

from .. import _C
from ..autograd import forward_ad as fwAD
from ..autograd.grad_mode import enable_grad
from ._pytree import tree_flatten, tree_unflatten

__all__ = [
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "vjp",
]

# How many transforms are running on this thread's stack. Inside one, results
# keep their graph so that the enclosing transform can differentiate them.
_state = threading.local()


def _depth():
    return getattr(_state, "depth", 0)


class _Level:
    def __enter__(self):
        _state.depth = _depth() + 1

    def __exit__(self, *exc):
        _state.depth -= 1


def _is_tensor(x):
    return isinstance(x, _C.Tensor)


def _check_argnums(argnums, nargs, name):
    if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple)):
        raise RuntimeError(
            f"{name}: Expected argnums to be int or tuple of ints, got: {type(argnums)}."
        )
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if len(nums) == 0:
        raise RuntimeError(f"{name}: argnums must be non-empty")
    out = []
    for a in nums:
        if isinstance(a, bool) or not isinstance(a, int):
            raise RuntimeError(f"{name}: argnums must be int or Tuple[int, ...], got: {argnums}")
        if not -nargs <= a < nargs:
            raise RuntimeError(
                f"Got argnum={a}, but only {nargs} positional inputs were passed to {name}"
            )
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return out


def _wrap_input(x):
    """A fresh differentiable identity for ``x``: a view of it when an
    enclosing transform (or the user) differentiates ``x``, so gradients
    flow on outward; else a detached leaf that requires grad."""
    if _C._vmap_levels():
        # Inside vmap: per-sample copies (expanded) of an input that is not
        # batched over every level, so that its gradient is per sample.
        x = _C._vmap_expand(x)
    v = x.view_as(x)  # keeps the forward-AD tangents of enclosing jvps
    if not x.requires_grad:
        v.requires_grad_(True)
    return v


def _wrap_args(args, argnums, name):
    """``(args with argnums wrapped, flat wrapped leaves, spec of the chosen
    arguments, whether any chosen input already required grad)``."""
    args = list(args)
    chosen = []
    outer = False
    for i in argnums:
        leaves, spec = tree_flatten(args[i])
        for x in leaves:
            if not _is_tensor(x):
                raise RuntimeError(
                    f"{name}: Expected inputs to be Tensors, got {type(x).__name__} at argnum {i}"
                )
            if not x.is_floating_point():
                raise RuntimeError(
                    f"{name}: only Tensors of floating point dtype can require gradients, "
                    f"got {x.dtype} at argnum {i}"
                )
            outer = outer or x.requires_grad
        wrapped = [_wrap_input(x) for x in leaves]
        args[i] = tree_unflatten(wrapped, spec)
        chosen.append((wrapped, spec))
    return args, chosen, outer


def _keep_graph(outer, inside=True):
    """Whether results keep their graph: inside an enclosing transform (the
    current one counts itself when ``inside``), or when the user
    differentiates an input with grad mode on."""
    return _depth() > int(inside) or (outer and _C.is_grad_enabled())


def _split_aux(out, has_aux, name):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(
            f"{name}(f, ...)(*args): output of function f should be a tuple: (output, aux) "
            "if has_aux is True"
        )
    return out


def _detach_tree(tree, keep):
    if keep:
        return tree
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([x.detach() if _is_tensor(x) else x for x in leaves], spec)


def _engine_grad(outputs, inputs, grad_outputs, keep, batch=None):
    """The engine's vjps; with ``batch``, every grad_output has a leading
    batch dim of that size and so does every result (the engine runs the
    rows: ``is_grads_batched``)."""
    batched = batch is None and any(_C._vmap_is_batched(t) for t in (*outputs, *inputs))
    like = inputs
    if batched:
        # Batched values: the engine runs on the physical tensors (every
        # sample's graph is its own slice), the gradients are rewrapped.
        if grad_outputs is None:
            grad_outputs = [None] * len(outputs)
        grad_outputs = [
            _C.ones_like(_C._vmap_physical(o)) if g is None else _C._vmap_physical_like(g, o)
            for g, o in zip(grad_outputs, outputs)
        ]
        outputs = [_C._vmap_physical(o) for o in outputs]
        inputs = [_C._vmap_physical(x) for x in inputs]
    grads = _C.grad(
        outputs,
        inputs,
        grad_outputs=grad_outputs,
        retain_graph=True,
        create_graph=keep,
        allow_unused=True,
        is_grads_batched=batch is not None,
    )
    lead = () if batch is None else (batch,)
    if batched:
        return [
            _C._vmap_like(g if g is not None else _C.zeros_like(x), w)
            for g, x, w in zip(grads, inputs, like)
        ]
    return [
        g if g is not None else x.new_zeros(lead + tuple(x.shape)) for g, x in zip(grads, inputs)
    ]


def _pack(per_arg, argnums_given):
    """One pytree per chosen argument; a tuple of them when argnums is a
    tuple."""
    trees = [tree_unflatten(leaves, spec) for leaves, spec in per_arg]
    return tuple(trees) if isinstance(argnums_given, tuple) else trees[0]


def grad_and_value(func, argnums=0, has_aux=False):
    """Like :func:`grad`, but returns ``(grad, value)`` (``(grad, (value,
    aux))`` with ``has_aux``)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args), "grad_and_value")
        with _Level(), enable_grad():
            wargs, chosen, outer = _wrap_args(args, nums, "grad_and_value")
            keep = _keep_graph(outer)
            out = func(*wargs, **kwargs)
            out, aux = _split_aux(out, has_aux, "grad_and_value")
            if not _is_tensor(out):
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, "
                    f"got {type(out)}"
                )
            if out.dim() != 0:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, "
                    f"got tensor with {out.dim()} dims. Maybe you wanted to use the vjp or "
                    "jacrev APIs instead?"
                )
            flat = [x for leaves, _ in chosen for x in leaves]
            if out.requires_grad:
                grads = _engine_grad([out], flat, None, keep)
            else:
                grads = [x.new_zeros(x.shape) for x in flat]
            per_arg, k = [], 0
            for leaves, spec in chosen:
                per_arg.append((grads[k : k + len(leaves)], spec))
                k += len(leaves)
            g = _pack(per_arg, argnums)
            value = out if keep else out.detach()
            if has_aux:
                return g, (value, _detach_tree(aux, keep))
            return g, value

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """``grad(f)(*args)`` is the gradient of the scalar ``f(*args)`` with
    respect to ``args[argnums]`` (pytrees allowed); ``(grad, aux)`` with
    ``has_aux=True``."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return wrapper


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` returns a tuple
    with one gradient pytree per primal. With ``has_aux``, ``(output,
    vjp_fn, aux)``."""
    nums = list(range(len(primals)))
    with _Level(), enable_grad():
        wargs, chosen, outer = _wrap_args(primals, nums, "vjp")
        keep = _keep_graph(outer)
        out = func(*wargs)
        out, aux = _split_aux(out, has_aux, "vjp")
        out_leaves, out_spec = tree_flatten(out)
        for o in out_leaves:
            if not _is_tensor(o):
                raise RuntimeError(
                    "vjp(f, *primals): expected f(*primals) to return only tensors, got "
                    f"unsupported type {type(o)}"
                )
    flat = [x for leaves, _ in chosen for x in leaves]

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None, _batch=None):
        # ``_batch`` (jacrev's): cotangents carry a leading dim of that size.
        ct_leaves, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree "
                f"structure of outputs to the function. cotangents: {ct_spec}, "
                f"primal output: {out_spec}"
            )
        lead = () if _batch is None else (_batch,)
        for o, c in zip(out_leaves, ct_leaves):
            if lead + tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output has a shape of {tuple(c.shape)} and "
                    f"output has a shape of {tuple(o.shape)}"
                )
        inner_keep = (
            _keep_graph(outer, inside=False) or keep or any(c.requires_grad for c in ct_leaves)
        )
        with _Level(), enable_grad():
            pairs = [(o, c) for o, c in zip(out_leaves, ct_leaves) if o.requires_grad]
            if pairs:
                grads = _engine_grad(
                    [o for o, _ in pairs], flat, [c for _, c in pairs], inner_keep, _batch
                )
            else:
                grads = [x.new_zeros(lead + tuple(x.shape)) for x in flat]
        res, k = [], 0
        for leaves, spec in chosen:
            res.append(tree_unflatten(grads[k : k + len(leaves)], spec))
            k += len(leaves)
        return tuple(res)

    out = _detach_tree(out, keep)
    if has_aux:
        return out, vjp_fn, _detach_tree(aux, keep)
    return out, vjp_fn


def _check_primals(primals, tangents, name):
    if not isinstance(primals, (tuple, list)):
        raise RuntimeError(f"{name}(f, primals, tangents): Expected primals to be a tuple.")
    if not isinstance(tangents, (tuple, list)):
        raise RuntimeError(f"{name}(f, primals, tangents): Expected tangents to be a tuple.")
    p_leaves, p_spec = tree_flatten(tuple(primals))
    t_leaves, t_spec = tree_flatten(tuple(tangents))
    if p_spec != t_spec:
        raise RuntimeError(
            f"{name}(f, primals, tangents): Expected primals and tangents to have the same "
            f"python structure. For example, if primals is a tuple of 3 tensors, tangents "
            f"also must be. Got primals with structure {p_spec} and tangents with "
            f"structure {t_spec}"
        )
    for p, t in zip(p_leaves, t_leaves):
        if not (_is_tensor(p) and _is_tensor(t)):
            raise RuntimeError(f"{name}: Expected primals and tangents to be Tensors")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(
                f"{name}(f, primals, tangents): Expected primals and tangents to have the "
                f"same shape, got {tuple(p.shape)} and {tuple(t.shape)}"
            )
    return p_leaves, t_leaves, p_spec


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)`` by forward-mode AD (a new Rust
    forward-AD level per call, so calls nest)."""
    p_leaves, t_leaves, p_spec = _check_primals(primals, tangents, "jvp")
    with _Level():
        keep = _keep_graph(any(p.requires_grad for p in p_leaves))
        level = fwAD.enter_dual_level()
        try:
            duals = [fwAD.make_dual(p, t, level=level) for p, t in zip(p_leaves, t_leaves)]
            out = func(*tree_unflatten(duals, p_spec))
            out, aux = _split_aux(out, has_aux, "jvp")
            o_leaves, o_spec = tree_flatten(out)
            primal_out, tangent_out = [], []
            for o in o_leaves:
                if not _is_tensor(o):
                    raise RuntimeError(
                        "jvp(f, primals, tangents): Expected f(*primals) to return only "
                        f"tensors, got unsupported type {type(o)}"
                    )
                p, t = fwAD.unpack_dual(o, level=level)
                t = t if t is not None else p.new_zeros(p.shape)
                primal_out.append(p if keep else p.detach())
                tangent_out.append(t if keep else t.detach())
        finally:
            fwAD.exit_dual_level(level=level)
    res = (tree_unflatten(primal_out, o_spec), tree_unflatten(tangent_out, o_spec))
    if has_aux:
        return res + (_detach_tree(aux, keep),)
    return res


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the jvp at
    ``primals`` (each call reruns ``func`` under forward AD)."""
    out = func(*primals)
    p_leaves, p_spec = tree_flatten(primals)

    def jvp_fn(*tangents):
        t_leaves, t_spec = tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(
                "linearize: expected tangents to have the same structure as primals, "
                f"got {t_spec} and {p_spec}"
            )
        return jvp(func, primals, tangents)[1]

    return out, jvp_fn


from ._jac import hessian, jacfwd, jacrev
