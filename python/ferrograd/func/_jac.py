"""jacrev, jacfwd and hessian: rows of vjps / columns of jvps, laid out as
torch.func does (output pytree of input pytrees, each block of shape
``output.shape + input.shape``). The products themselves run in the engine."""

import functools

from .. import _C
from ._pytree import tree_flatten, tree_unflatten

__all__ = ["hessian", "jacfwd", "jacrev"]


def _chosen_fn(func, args, nums):
    def f(*chosen):
        a = list(args)
        for i, c in zip(nums, chosen):
            a[i] = c
        return func(*a)

    return f


def _layout(blocks, o_leaves, o_spec, arg_specs, argnums):
    """``blocks[j][a]``: the block of output leaf j and flat input leaf a."""
    per_out = []
    for j, _ in enumerate(o_leaves):
        trees, k = [], 0
        for spec in arg_specs:
            n = spec.num_leaves
            trees.append(tree_unflatten(blocks[j][k : k + n], spec))
            k += n
        per_out.append(tuple(trees) if isinstance(argnums, tuple) else trees[0])
    return tree_unflatten(per_out, o_spec)


def _chunks(n, chunk_size):
    if chunk_size is None:
        return [(0, n)]
    if not isinstance(chunk_size, int) or chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return [(s, min(s + chunk_size, n)) for s in range(0, n, chunk_size)]


def _rows_batched(func, args, nums, cts, has_aux):
    """Rows of the Jacobian for a chunk of one-hot cotangents ``cts`` (one
    per output leaf, leading dim the rows) as torch.func computes them, by
    vmap: the gradient of ``sum(out * ct)`` for every row at once, one
    batched forward and backward. None when the function cannot run
    batched (an op without a batching rule): the caller then runs the rows
    through the engine one by one."""
    from ._eager import grad
    from ._vmap import NoBatchedRun, vmap_batched_only

    chosen = [args[i] for i in nums]
    f = _chosen_fn(func, args, nums)

    def weighted(ct, *ch):
        out = f(*ch)
        if has_aux:
            out = out[0]
        total = None
        for o, c in zip(tree_flatten(out)[0], ct):
            s = (o * c).sum()
            total = s if total is None else total + s
        return total

    rows_of = grad(weighted, argnums=tuple(range(1, 1 + len(nums))))
    try:
        grads = vmap_batched_only(lambda ct: rows_of(ct, *chosen))(tuple(cts))
    except NoBatchedRun:
        return None
    return [g for gt in grads for g in tree_flatten(gt)[0]]


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to ``args[argnums]`` by
    reverse mode: the vjps of all output elements (``chunk_size`` at a time)
    at once, by vmap over one-hot cotangents (one batched forward and
    backward); when an op has no batching rule, the rows of one forward run
    through the engine (``is_grads_batched``)."""
    from ._eager import _check_argnums, vjp

    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        nums = _check_argnums(argnums, len(args), "jacrev")
        res = vjp(_chosen_fn(func, args, nums), *[args[i] for i in nums], has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        o_leaves, o_spec = tree_flatten(out)
        arg_specs = [tree_flatten(args[i])[1] for i in nums]
        in_leaves = [x for i in nums for x in tree_flatten(args[i])[0]]
        sizes = [o.numel() for o in o_leaves]
        total = sum(sizes)
        ref = o_leaves[0]
        eye = _C.eye(total, dtype=ref.dtype)
        # One engine call per chunk of rows (is_grads_batched: the rows run
        # in Rust), each giving (rows, *input.shape) per input.
        parts = []
        for start, stop in _chunks(total, chunk_size) if total else ():
            cts, off = [], 0
            for o, n in zip(o_leaves, sizes):
                cts.append(eye[start:stop, off : off + n].reshape((stop - start,) + tuple(o.shape)))
                off += n
            if stop - start == 1:
                # one row (a scalar output; hessian's inner jacrev): one vjp,
                # which also runs on batched outputs inside an outer vmap
                grads = vjp_fn(tree_unflatten([c[0] for c in cts], o_spec))
                parts.append([g.unsqueeze(0) for gt in grads for g in tree_flatten(gt)[0]])
                continue
            rows = _rows_batched(func, args, nums, cts, has_aux)
            if rows is None:
                grads = vjp_fn(tree_unflatten(cts, o_spec), _batch=stop - start)
                rows = [g for gt in grads for g in tree_flatten(gt)[0]]
            parts.append(rows)
        if total == 0:  # no output elements: empty Jacobians
            cols = [x.new_zeros((0,) + tuple(x.shape)) for x in in_leaves]
        else:
            cols = [
                parts[0][a] if len(parts) == 1 else _C.cat([p[a] for p in parts])
                for a in range(len(in_leaves))
            ]
        blocks, off = [], 0
        for o, n in zip(o_leaves, sizes):
            blocks.append(
                [
                    c[off : off + n].reshape(tuple(o.shape) + tuple(x.shape))
                    for c, x in zip(cols, in_leaves)
                ]
            )
            off += n
        jac = _layout(blocks, o_leaves, o_spec, arg_specs, argnums)
        if has_aux:
            return jac, res[2]
        return jac

    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` with respect to ``args[argnums]`` by forward
    mode: the jvps of all input elements at once, by vmap over one-hot
    tangents; when an op has no batching rule, one jvp per input element,
    each on a Rust forward-AD level."""
    from ._eager import _check_argnums, jvp

    del randomness  # no random ops are batched: each column is its own call

    @functools.wraps(func)
    def wrapper(*args):
        nums = _check_argnums(argnums, len(args), "jacfwd")
        primals = tuple(args[i] for i in nums)
        p_leaves, p_spec = tree_flatten(primals)
        arg_specs = [tree_flatten(args[i])[1] for i in nums]
        for p in p_leaves:
            if not isinstance(p, _C.Tensor):
                raise RuntimeError(
                    f"jacfwd: Expected all inputs to be Tensors, got {type(p).__name__}"
                )
        f = _chosen_fn(func, args, nums)
        total = sum(p.numel() for p in p_leaves)
        ref = p_leaves[0]
        eye = _C.eye(total, dtype=ref.dtype)
        batched = _columns_batched(f, primals, p_leaves, p_spec, eye, has_aux) if total else None
        if batched is not None:
            out, aux, tangents = batched
            o_leaves, o_spec = tree_flatten(out)
            blocks = []
            for o, t in zip(o_leaves, tree_flatten(tangents)[0]):
                blk, off = [], 0
                for p in p_leaves:
                    n = p.numel()
                    blk.append(t.narrow(-1, off, n).reshape(tuple(o.shape) + tuple(p.shape)))
                    off += n
                blocks.append(blk)
            jac = _layout(blocks, o_leaves, o_spec, arg_specs, argnums)
            return (jac, aux) if has_aux else jac
        cols, out, aux = [], None, None
        for k in range(total):
            tans, off = [], 0
            for p in p_leaves:
                tans.append(eye[k, off : off + p.numel()].view(p.shape))
                off += p.numel()
            res = jvp(f, primals, tree_unflatten(tans, p_spec), has_aux=has_aux)
            out = res[0]
            if has_aux:
                aux = res[2]
            cols.append(tree_flatten(res[1])[0])
        if total == 0:
            res = jvp(f, primals, primals, has_aux=has_aux)
            out = res[0]
            aux = res[2] if has_aux else None
        o_leaves, o_spec = tree_flatten(out)
        blocks = []
        for j, o in enumerate(o_leaves):
            blk, off = [], 0
            for p in p_leaves:
                n = p.numel()
                shape = tuple(o.shape) + tuple(p.shape)
                if n == 0:
                    blk.append(o.new_zeros(shape))
                else:
                    blk.append(
                        _C.stack([cols[c][j] for c in range(off, off + n)], -1).reshape(shape)
                    )
                off += n
            blocks.append(blk)
        jac = _layout(blocks, o_leaves, o_spec, arg_specs, argnums)
        if has_aux:
            return jac, aux
        return jac

    return wrapper


def _columns_batched(f, primals, p_leaves, p_spec, eye, has_aux):
    """All columns of the Jacobian as torch.func computes them: vmap of jvp
    over the one-hot tangents, one batched forward-mode pass. Returns
    ``(output, aux, tangents)`` with each tangent leaf ``(*out.shape,
    columns)``, or None when the function cannot run batched (the caller
    then runs one jvp per column)."""
    from ._eager import jvp
    from ._vmap import NoBatchedRun, vmap_batched_only

    tans, off = [], 0
    for p in p_leaves:
        n = p.numel()
        tans.append(eye[:, off : off + n].reshape((eye.shape[0],) + tuple(p.shape)))
        off += n

    def column(*t):
        return jvp(f, primals, tree_unflatten(list(t), p_spec), has_aux=has_aux)[1]

    try:
        tangents = vmap_batched_only(column, out_dims=-1)(*tans)
    except NoBatchedRun:
        return None
    res = f(*primals)
    out, aux = (res[0], res[1]) if has_aux else (res, None)
    return out, aux, tangents


def hessian(func, argnums=0):
    """The Hessian of ``func`` with respect to ``args[argnums]``.

    torch.func computes ``jacfwd(jacrev(func))``; here it is
    ``jacrev(jacrev(func))``: the same matrix (every ferrograd op has a
    differentiable backward). The inner jacrev of a scalar function is one
    vjp, and the outer one runs all rows at once by vmap (a batched
    double backward)."""
    return jacrev(jacrev(func, argnums), argnums)
