"""vmap: torch.func.vmap's argument handling (in_dims, out_dims, pytrees,
chunk_size, randomness) and errors.

The mapped function runs once on batched tensors (``_C._BatchedTensor``,
``src/python/core/batched/``): each op runs its batching rule
(``src/ops/batching.rs``) on the whole batch, in Rust. When an op has no
rule (``_C._VmapFallback``) or a function that takes no batched tensor is
called, vmap warns once naming it and runs ``func`` slice by slice (select
each batched input, call, stack); no rule writes before that happens, so
the rerun sees the inputs unchanged. ``.item()``, ``bool()`` and reading a
batched value's data raise torch's errors; a random op under
``randomness="error"`` raises, under "same"/"different" the per-slice run
gives torch's semantics. ``vmap(Fn.apply)`` of a custom Function with a
``vmap`` staticmethod calls that rule once.
"""

import functools
import warnings
from typing import NamedTuple

from .. import _C
from ._pytree import broadcast_prefix, tree_flatten, tree_unflatten

__all__ = ["vmap"]

_RANDOMNESS = ("error", "different", "same")


def _fname(func):
    return getattr(func, "__name__", repr(func))


def _check_in_dims(func, in_dims, args):
    name = _fname(func)
    if not isinstance(in_dims, (int, tuple)) and in_dims is not None:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int "
            f"or a (potentially nested) tuple matching the structure of inputs, got: "
            f"{type(in_dims)}."
        )
    if len(args) == 0:
        raise ValueError(
            f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you "
            "are trying to vmap over a function with no inputs. The latter is unsupported."
        )
    if isinstance(in_dims, tuple) and len(in_dims) != len(args):
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with "
            f"the structure of `inputs`. in_dims has structure {in_dims} but inputs has "
            f"{len(args)} elements."
        )
    leaves, spec = tree_flatten(tuple(args))
    try:
        dims = broadcast_prefix(in_dims, tuple(args))
    except ValueError:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with "
            "the structure of `inputs`."
        ) from None
    sizes = []
    norm = []
    for x, d in zip(leaves, dims):
        if d is None:
            norm.append(None)
            continue
        if isinstance(d, bool) or not isinstance(d, int):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input "
                "but in_dim must be either an integer dimension or None."
            )
        if not isinstance(x, _C.Tensor):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input "
                f"but the input is of type {type(x)}. We cannot vmap over non-Tensor "
                "arguments, please use None as the respective in_dim"
            )
        n = x.dim()
        if not -n <= d < n:
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some "
                f"input, but that input is a Tensor of dimensionality {n} so expected in_dim "
                f"to satisfy -{n} <= in_dim < {n}."
            )
        d %= n
        norm.append(d)
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): at least one input must be a "
            "Tensor with a non-None in_dim."
        )
    if any(s != sizes[0] for s in sizes):
        raise ValueError(
            f"vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    return leaves, spec, norm, sizes[0]


def _stack_outputs(func, outs, out_dims, batch):
    name = _fname(func)
    first_leaves, o_spec = tree_flatten(outs[0])
    try:
        dims = broadcast_prefix(out_dims, outs[0], "out_dims")
    except ValueError:
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible "
            "with the structure of `outputs`."
        ) from None
    per_slice = [tree_flatten(o)[0] for o in outs]
    result = []
    for j, (x, d) in enumerate(zip(first_leaves, dims)):
        if d is not None and not isinstance(x, _C.Tensor):
            raise ValueError(
                f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(x)}. "
                "Did you mean to set out_dims= to None for output?"
            )
        if d is None:
            result.append(x)
            continue
        n = x.dim() + 1
        if isinstance(d, bool) or not isinstance(d, int) or not -n <= d < n:
            raise ValueError(
                f"vmap({name}, ..., out_dims={out_dims}): out_dim={d} is out of range for an "
                f"output of dimensionality {x.dim()} (expected -{n} <= out_dim < {n})."
            )
        result.append(_C.stack([s[j] for s in per_slice], d))
    return tree_unflatten(result, o_spec)


class VmapInfo(NamedTuple):
    """What a custom Function's ``vmap`` staticmethod is told."""

    batch_size: int
    randomness: str


def _function_vmap_rule(func):
    """The ``vmap`` staticmethod of the custom Function whose ``apply`` is
    ``func``, when the Function overrides it; else None."""
    from ..autograd.function import Function

    owner = getattr(func, "__self__", None)
    if (
        isinstance(owner, type)
        and issubclass(owner, Function)
        and getattr(func, "__name__", None) == "apply"
        and owner.vmap is not Function.vmap
    ):
        if owner.generate_vmap_rule:
            raise RuntimeError(
                f"You tried to vmap over {owner.__name__}, but it has both "
                "generate_vmap_rule=True and an overridden vmap staticmethod. Please set "
                "generate_vmap_rule=False or delete the overridden vmap staticmethod to avoid "
                "ambiguity. For more details, please see "
                "https://pytorch.org/docs/main/notes/extending.func.html"
            )
        return owner.vmap
    return None


def _apply_rule(rule, args, dims, batch, randomness, out_dims, func):
    """``vmap(Fn.apply)`` for a Function with a ``vmap`` staticmethod: one
    call of the user's rule on the whole batch, as torch does; its outputs'
    batch dims are then moved to ``out_dims``."""
    res = rule(VmapInfo(batch, randomness), tuple(dims), *args)
    if not (isinstance(res, tuple) and len(res) == 2):
        raise RuntimeError(
            "Expected the vmap staticmethod to have two returns, an output and out_dims "
            f"with pytree structure compatible with the output. Got: {res!r}"
        )
    output, rule_dims = res
    o_leaves, o_spec = tree_flatten(output)
    src = broadcast_prefix(rule_dims, output, "out_dims")
    dst = broadcast_prefix(out_dims, output, "out_dims")
    moved = []
    for x, s, d in zip(o_leaves, src, dst):
        if d is None:
            if s is not None:
                raise ValueError(
                    f"vmap({_fname(func)}, ...): out_dims=None for an output that the vmap "
                    "staticmethod says is batched"
                )
            moved.append(x)
        elif s is None:
            x = x.unsqueeze(d)
            shape = list(x.shape)
            shape[d] = batch
            moved.append(x.expand(shape))
        else:
            moved.append(x.movedim(s, d))
    return tree_unflatten(moved, o_spec)


def _narrow_empty(stacked, probe, out_dims):
    leaves, spec = tree_flatten(stacked)
    dims = broadcast_prefix(out_dims, probe, "out_dims")
    return tree_unflatten(
        [x if d is None else x.narrow(d, 0, 0) for x, d in zip(leaves, dims)], spec
    )


_warned = set()


def _warn_fallback(op):
    if op in _warned:
        return
    _warned.add(op)
    warnings.warn(
        f"There is a performance drop because we have not yet implemented the batching rule "
        f"for {op}. Please file us an issue on GitHub so that we can prioritize its "
        "implementation.",
        UserWarning,
        stacklevel=4,
    )


def fallback_ops():
    """The ops that sent a vmap call to the per-slice fallback so far."""
    return sorted(_warned)


def _batched_call(func, args, kwargs, leaves, spec, dims, out_dims):
    """One call of ``func`` on batched tensors (``_C.BatchedTensor``): every
    op runs its batching rule once on the whole batch. Raises
    ``_C._VmapFallback`` (the op's name) when an op has no rule."""
    level = _C._vmap_enter(leaves_batch(leaves, dims))
    try:
        wrapped = [x if d is None else _C._vmap_wrap(x, d, level) for x, d in zip(leaves, dims)]
        out = func(*tree_unflatten(wrapped, spec), **kwargs)
        o_leaves, o_spec = tree_flatten(out)
        try:
            o_dims = broadcast_prefix(out_dims, out, "out_dims")
        except ValueError:
            raise ValueError(
                f"vmap({_fname(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                "compatible with the structure of `outputs`."
            ) from None
        result = []
        for x, d in zip(o_leaves, o_dims):
            if d is None:
                if _C._vmap_is_batched(x):
                    raise ValueError(
                        f"vmap({_fname(func)}, ...): out_dims=None for an output that is batched"
                    )
                result.append(x)
                continue
            if not isinstance(x, _C.Tensor):
                raise ValueError(
                    f"vmap({_fname(func)}, ...): `{_fname(func)}` must only return Tensors, got "
                    f"type {type(x)}. Did you mean to set out_dims= to None for output?"
                )
            n = x.dim() + 1
            if isinstance(d, bool) or not isinstance(d, int) or not -n <= d < n:
                raise ValueError(
                    f"vmap({_fname(func)}, ..., out_dims={out_dims}): out_dim={d} is out of range "
                    f"for an output of dimensionality {x.dim()} (expected -{n} <= out_dim < {n})."
                )
            result.append(_C._vmap_unwrap(x, level, d))
        return tree_unflatten(result, o_spec)
    finally:
        _C._vmap_exit(level)


def leaves_batch(leaves, dims):
    for x, d in zip(leaves, dims):
        if d is not None:
            return x.shape[d]
    raise AssertionError("no batched input")


def _fallback_reason(exc):
    """The op named by a failed batched call, or None when the error is the
    user's (then the per-slice run raises it as torch would)."""
    if isinstance(exc, _C._VmapFallback):
        return str(exc.args[0]) if exc.args else "an op"
    if isinstance(exc, TypeError) and "BatchedTensor" in str(exc):
        return "a function that takes no batched tensor"
    return None


def _is_vmap_error(exc):
    """torch's errors for what vmap cannot do (``.item()``, data-dependent
    control flow, reading a batched value's data): raised as they are. Any
    other error of the batched call reruns the function slice by slice,
    which raises the user's own errors as torch does."""
    msg = str(exc)
    return isinstance(exc, RuntimeError) and (
        msg.startswith(("vmap:", "Cannot access data pointer", "You tried to vmap over"))
    )


class NoBatchedRun(Exception):
    """Raised by :func:`vmap_batched_only` when the function cannot run
    once on the whole batch."""


def vmap_batched_only(func, in_dims=0, out_dims=0):
    """``vmap(func, in_dims, out_dims)`` run once on the whole batch (every
    op by its batching rule), with no per-slice fallback: raises
    :class:`NoBatchedRun` instead when an op has no rule, an error is
    raised or a random number is drawn, so that a caller with a loop of its
    own (jacrev, jacfwd) runs that loop, whose semantics are the same."""

    def wrapper(*args):
        leaves, spec, dims, _ = _check_in_dims(func, in_dims, args)
        start = _C.get_rng_state()
        try:
            res = _batched_call(func, args, {}, leaves, spec, dims, out_dims)
        except Exception as e:  # any failure: the caller's loop decides
            _C.set_rng_state(start)
            raise NoBatchedRun from e
        if not _C.equal(start, _C.get_rng_state()):
            _C.set_rng_state(start)
            raise NoBatchedRun
        return res

    return wrapper


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Maps ``func`` over dim ``in_dims`` of its inputs; outputs get the
    mapped dim at ``out_dims``. See the module note: ops run their batching
    rules on the whole batch (``chunk_size`` samples at a time when given),
    a function with an op that has none runs slice by slice."""
    if randomness not in _RANDOMNESS:
        raise RuntimeError(
            f"Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )
    if chunk_size is not None and (
        isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size <= 0
    ):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    def _chunked(func, leaves, spec, dims, batch, kwargs):
        """``chunk_size`` samples at a time (each chunk one vmap call), the
        chunks' outputs joined along their out_dims. Under "same" every
        chunk starts from the same generator state, so all samples see the
        same random numbers."""
        inner = vmap(func, in_dims, out_dims, randomness)
        start = _C.get_rng_state()
        outs = []
        for s in range(0, batch, chunk_size):
            if randomness == "same":
                _C.set_rng_state(start)
            n = min(chunk_size, batch - s)
            sl = [x if d is None else x.narrow(d, s, n) for x, d in zip(leaves, dims)]
            outs.append(inner(*tree_unflatten(sl, spec), **kwargs))
        first, o_spec = tree_flatten(outs[0])
        o_dims = broadcast_prefix(out_dims, outs[0], "out_dims")
        per_chunk = [tree_flatten(o)[0] for o in outs]
        joined = [
            x if d is None else _C.cat([c[j] for c in per_chunk], d)
            for j, (x, d) in enumerate(zip(first, o_dims))
        ]
        return tree_unflatten(joined, o_spec)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        leaves, spec, dims, batch = _check_in_dims(func, in_dims, args)
        if chunk_size is not None and batch > chunk_size:
            return _chunked(func, leaves, spec, dims, batch, kwargs)
        rule = _function_vmap_rule(func)
        if rule is not None and not kwargs:
            return _apply_rule(rule, leaves, dims, batch, randomness, out_dims, func)
        # randomness: the generator's state tells whether a slice drew random
        # numbers ("error" raises as torch does); "same" replays one state
        # for every slice; "different" lets each slice draw its own.
        start = _C.get_rng_state()
        if batch > 0:
            try:
                res = _batched_call(func, args, kwargs, leaves, spec, dims, out_dims)
            except Exception as e:  # sorted below: torch's vmap errors re-raised
                op = _fallback_reason(e)
                if op is None and _is_vmap_error(e):
                    raise
                _C.set_rng_state(start)
                if op is not None:
                    _warn_fallback(op)
            else:
                if _C.equal(start, _C.get_rng_state()):
                    return res
                if randomness == "error":
                    raise RuntimeError(
                        "vmap: called random operation while in randomness error mode. Please "
                        "either use the 'same' or 'different' randomness flags on vmap or "
                        "perform the randomness operation out of vmap"
                    )
                _C.set_rng_state(start)
        outs = []
        for b in range(batch):
            if randomness == "same" and b > 0:
                _C.set_rng_state(start)
            sl = [x if d is None else x.select(d, b) for x, d in zip(leaves, dims)]
            outs.append(func(*tree_unflatten(sl, spec), **kwargs))
            if randomness == "error" and not _C.equal(start, _C.get_rng_state()):
                raise RuntimeError(
                    "vmap: called random operation while in randomness error mode. Please "
                    "either use the 'same' or 'different' randomness flags on vmap or perform "
                    "the randomness operation out of vmap"
                )
        if batch == 0:
            # One call on zero-filled slices gives the output structure and
            # shapes; every mapped output is then empty along its out_dim.
            sl = [
                x if d is None else x.new_zeros(x.shape[:d] + x.shape[d + 1 :])
                for x, d in zip(leaves, dims)
            ]
            probe = func(*tree_unflatten(sl, spec), **kwargs)
            stacked = _stack_outputs(func, [probe], out_dims, 1)
            return _narrow_empty(stacked, probe, out_dims)
        return _stack_outputs(func, outs, out_dims, batch)

    return wrapper
