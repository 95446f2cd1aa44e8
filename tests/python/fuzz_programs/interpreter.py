# ruff: noqa: S102, BLE001 - the interpreter execs generated programs and records every exception
"""The interpreter: custom Functions written once for both libraries, a
tensor's recorded state, and ``run_program`` (one record per step).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from .model import FLOATS, numel

# ---------------------------------------------------------------------------
# custom Functions, written once for both libraries


def make_functions(lib):
    Function = lib.autograd.Function

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    class Scale(Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    class TwoOut(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2, x.sin()

        @staticmethod
        def backward(ctx, ga, gb):
            (x,) = ctx.saved_tensors
            return ga * 2 + gb * x.cos()

    class Dirty(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(3)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    class ViewOut(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.shape = x.shape
            return x.view(-1)

        @staticmethod
        def backward(ctx, g):
            return g.reshape(ctx.shape)

    class NonDiff(Function):
        @staticmethod
        def forward(ctx, x):
            out = x.floor()
            ctx.mark_non_differentiable(out)
            return out

        @staticmethod
        def backward(ctx, g):
            return None

    class TooMany(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    class SaveOut(Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    return {
        "Square": Square, "Scale": Scale, "TwoOut": TwoOut, "Dirty": Dirty, "ViewOut": ViewOut,
        "NonDiff": NonDiff, "TooMany": TooMany, "SaveOut": SaveOut,
    }  # fmt: skip


# ---------------------------------------------------------------------------
# the interpreter

_CODE = {}


def _compile(src):
    c = _CODE.get(src)
    if c is None:
        c = compile(src, "<fuzz>", "exec")
        if len(_CODE) > 20000:
            _CODE.clear()
        _CODE[src] = c
    return c


_FUNCS = {}


def _functions(lib):
    f = _FUNCS.get(lib.__name__)
    if f is None:
        f = _FUNCS[lib.__name__] = make_functions(lib)
    return f


def _dtype(t):
    return str(t.dtype).rsplit(".", 1)[-1]


def _is_leaf(t):
    """``t.is_leaf``; like ``grad_fn`` it raises (on both libraries) for a
    multi-output view whose base was modified in place."""
    try:
        return t.is_leaf
    except Exception as e:
        return f"<raises {type(e).__name__}>"


def tensor_state(lib, t, with_grad=False, grad=False, v0=0, stride=True):
    """What is compared of a value a step made. ``_version`` is counted from
    ``v0``, the version the tensor had when the program bound it: the count
    an op's fresh output starts at is torch's business (a 1-d matmul squeezes
    its result in place), the bumps after it are not. ``grad``: a gradient,
    whose version and graph (create_graph) depend on how the backward
    formulas are written, so only its values, dtype, shape and flags count."""
    if t is None:
        return None
    if isinstance(t, (tuple, list)):
        return tuple(tensor_state(lib, x, with_grad, grad) for x in t)
    if not isinstance(t, lib.Tensor):
        return ("py", type(t).__name__, t if isinstance(t, (int, float, bool, str)) else repr(t))
    dtype = _dtype(t)
    shape = tuple(t.shape)
    vals = np.asarray(t.detach().tolist(), dtype=np.float64 if dtype in FLOATS else None)
    if numel(shape) > 0 and stride:
        stride = tuple(st if sz > 1 else None for st, sz in zip(t.stride(), shape))
    else:
        stride = None
    try:
        gf = t.grad_fn
    except Exception as e:  # a restricted view (multi-output, no_grad) whose base was modified
        gf = None
        gf_err = f"<raises {type(e).__name__}>"
    else:
        gf_err = None
    st = {
        "dtype": dtype,
        "shape": shape,
        "values": vals,
        "requires_grad": t.requires_grad,
        "is_leaf": _is_leaf(t),
        "grad_fn": gf_err or (None if gf is None else "<graph>" if grad else type(gf).__name__),
        "_version": None if grad else t._version - v0,
        "stride": stride,
    }
    if with_grad:
        st["grad"] = tensor_state(lib, t.grad, grad=True)
    return st


@dataclass
class Record:
    status: str  # ok / raise / skip (a name it needs was never bound)
    error: str = ""  # exception type name
    message: str = ""
    states: dict = field(default_factory=dict)
    atomic: str = ""  # after a raise: what the failed step changed, if anything


def _tensors(lib, ns):
    return {k: v for k, v in ns.items() if k[:1] == "t" and isinstance(v, lib.Tensor)}


def _snapshot(lib, ns):
    return {
        k: (_dtype(v), tuple(v.shape), np.asarray(v.detach().tolist()), v._version)
        for k, v in _tensors(lib, ns).items()
    }


def _changed(before, after):
    for k, (dt, sh, vals, ver) in before.items():
        if k not in after:
            continue
        dt2, sh2, vals2, ver2 = after[k]
        if sh != sh2 or dt != dt2 or ver != ver2 or not np.array_equal(vals, vals2, equal_nan=True):
            return f"{k} changed (version {ver} -> {ver2})"
    return ""


def run_program(lib, program, check_atomic=False):
    """Runs ``program`` with ``torch`` bound to ``lib``; returns one Record per step."""
    ns = {"torch": lib, **_functions(lib)}
    records = []
    grads = set()  # names bound to gradients
    returned = (
        set()
    )  # names bound by autograd.grad: torch returns what the backward formulas made, any layout
    v0 = {}  # name -> _version when bound
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in program.steps:
            before = _snapshot(lib, ns) if check_atomic and step.kind != "custom" else None
            try:
                exec(_compile(step.text()), ns)
            except NameError as e:
                records.append(Record("skip", "NameError", str(e)))
                continue
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:
                rec = Record("raise", type(e).__name__, str(e).split("\n")[0][:300])
                if before is not None and step.kind != "backward":
                    rec.atomic = _changed(before, _snapshot(lib, ns))
                records.append(rec)
                continue
            rec = Record("ok")
            if step.op in ("grad", "grad_read"):
                grads.update(step.outs)
            if step.op == "grad":
                returned.update(step.outs)
            try:
                for name in step.outs:
                    t = ns.get(name)
                    if name not in v0 and isinstance(t, lib.Tensor):
                        v0[name] = t._version
                    rec.states[name] = tensor_state(
                        lib, t, False, name in grads, v0.get(name, 0), name not in returned
                    )
                if step.full:
                    for name, t in _tensors(lib, ns).items():
                        rec.states[name] = tensor_state(
                            lib, t, True, name in grads, v0.get(name, 0), name not in returned
                        )
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:
                rec = Record("raise", "state:" + type(e).__name__, str(e).split("\n")[0][:300])
            records.append(rec)
    return records
