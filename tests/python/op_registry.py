"""The op registry: every differentiable op listed once, like torch's OpInfo.

Each :class:`OpEntry` names an op, gives a function ``fn(lib, *args, **kwargs)``
that runs it through a library module (``ferrograd`` or ``torch``: the code is
the same for both) and a list of :class:`Sample` inputs. Tests in
``test_registry.py`` run every entry through a float64 central-difference
gradcheck, a second-order (gradgrad) check and a comparison with torch.

Adding an op = adding one entry here.

Inputs of a sample:

* :class:`Arg` -- a float64 tensor that is differentiated (random data from
  numpy, identical for both libraries). ``domain`` picks the value range
  (``normal``, ``pos`` for log/sqrt, ``away`` to stay clear of kinks at 0,
  ``unit`` for tan). ``noncontig=True`` makes a non-contiguous (transposed)
  leaf with the same logical shape.
* :class:`Const` -- a fixed, non-differentiated tensor (indices, masks).
* anything else -- passed through unchanged (dims, Python scalars).

``needs`` lists the attributes an entry calls (``"exp"`` is ``lib.exp``,
``"Tensor.sum"`` a method, ``"nn.functional.gelu"`` a nested name). An entry
whose needs are not all present in ferrograd is *missing*: the per-op tests
skip it ("not implemented yet") and the single coverage test fails listing it.
``api`` lists further torch names the op must also be reachable under (e.g. the
method form of a function); only the coverage test checks those.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np


# ----------------------------------------------------------------------------
# Sample specs
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Arg:
    """A differentiated float64 input."""

    shape: tuple
    domain: str = "normal"
    noncontig: bool = False


def A(*shape, domain="normal"):
    return Arg(tuple(shape), domain)


def P(*shape):
    """Positive input (for log, sqrt, pow with a real exponent...)."""
    return Arg(tuple(shape), "pos")


def W(*shape):
    """Input kept away from 0 (abs, relu, sign, division...)."""
    return Arg(tuple(shape), "away")


def NC(*shape, domain="normal"):
    """A non-contiguous (transposed) leaf of the given logical shape."""
    assert len(shape) >= 2
    return Arg(tuple(shape), domain, noncontig=True)


@dataclass(frozen=True)
class Const:
    """A non-differentiated tensor argument (indices, masks)."""

    value: Any
    dtype: str = "int64"  # "int64" | "bool" | "float64"


@dataclass
class Sample:
    args: list
    kwargs: dict = field(default_factory=dict)

    def describe(self) -> str:
        parts = []
        for a in self.args:
            if isinstance(a, Arg):
                s = "x".join(map(str, a.shape)) or "scalar"
                tags = [
                    t
                    for t in (
                        a.domain if a.domain != "normal" else "",
                        "noncontig" if a.noncontig else "",
                    )
                    if t
                ]
                parts.append(s + (f"[{','.join(tags)}]" if tags else ""))
            elif isinstance(a, Const):
                parts.append(f"const{np.asarray(a.value).shape}")
            else:
                parts.append(repr(a))
        parts += [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return "(" + ", ".join(parts) + ")"


@dataclass
class OpEntry:
    name: str
    fn: Callable
    samples: list
    needs: tuple
    api: tuple = ()
    # Tolerances for the comparison with torch (float64, different kernels).
    rtol: float = 1e-7
    atol: float = 1e-9
    # Why the tangents are not compared with torch's forward AD (None: they are).
    no_torch_forward_ad: Optional[str] = None

    def missing(self, lib) -> list:
        """The names this entry needs or promises that ``lib`` lacks."""
        return [n for n in (*self.needs, *self.api) if not has_attr_path(lib, n)]

    def runnable(self, lib) -> bool:
        return all(has_attr_path(lib, n) for n in self.needs)


def has_attr_path(lib, path: str) -> bool:
    obj = lib
    for part in path.split("."):
        try:
            obj = getattr(obj, part)
        except Exception:
            return False
    return True


# ----------------------------------------------------------------------------
# Materializing samples
# ----------------------------------------------------------------------------


def seed_for(name: str, index: int) -> int:
    return zlib.crc32(f"{name}#{index}".encode())


def random_array(rng: np.random.Generator, spec: Arg) -> np.ndarray:
    shape = spec.shape
    if spec.domain == "normal":
        a = rng.standard_normal(shape)
    elif spec.domain == "pos":
        a = rng.uniform(0.5, 2.0, shape)
    elif spec.domain == "away":
        a = rng.uniform(0.3, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    elif spec.domain == "unit":
        a = rng.uniform(-0.9, 0.9, shape)
    elif spec.domain == "gt1":
        a = rng.uniform(1.5, 3.0, shape)
    else:
        raise ValueError(f"unknown domain {spec.domain!r}")
    return np.asarray(a, dtype=np.float64)


def sample_arrays(entry: OpEntry, index: int) -> list:
    """The float64 numpy arrays for the differentiated inputs of a sample."""
    rng = np.random.default_rng(seed_for(entry.name, index))
    return [random_array(rng, a) for a in entry.samples[index].args if isinstance(a, Arg)]


def lib_dtype(lib, name: str):
    return getattr(lib, name)


def make_tensor(lib, arr: np.ndarray, dtype: str = "float64"):
    """``lib.tensor`` from a numpy array, with an explicit dtype so both
    libraries agree whatever their numpy dtype inference does."""
    dt = lib_dtype(lib, {"float64": "float64", "int64": "int64", "bool": "bool"}[dtype])
    arr = np.asarray(arr)
    try:
        return lib.tensor(arr, dtype=dt)
    except TypeError:
        # A front end without numpy input (or 0-d arrays): nested lists.
        return lib.tensor(arr.tolist(), dtype=dt)


def make_leaf(lib, spec: Arg, arr: np.ndarray, requires_grad: bool = True):
    """A leaf holding ``arr``; non-contiguous when the spec says so."""
    if spec.noncontig:
        base = make_tensor(lib, np.ascontiguousarray(np.swapaxes(arr, -1, -2)))
        t = base.transpose(-1, -2).detach()
    else:
        t = make_tensor(lib, arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def build_args(lib, sample: Sample, arrays: list, requires_grad: bool = True):
    """(positional args, differentiated leaves) for a sample."""
    it = iter(arrays)
    args, leaves = [], []
    for a in sample.args:
        if isinstance(a, Arg):
            t = make_leaf(lib, a, next(it), requires_grad)
            args.append(t)
            leaves.append(t)
        elif isinstance(a, Const):
            args.append(make_tensor(lib, np.asarray(a.value), a.dtype))
        else:
            args.append(a)
    kwargs = {
        k: make_tensor(lib, np.asarray(v.value), v.dtype) if isinstance(v, Const) else v
        for k, v in sample.kwargs.items()
    }
    return args, kwargs, leaves


def outputs_of(result) -> list:
    """An op's result as a flat list of tensors."""
    if isinstance(result, (tuple, list)):
        out = []
        for r in result:
            out.extend(outputs_of(r))
        return out
    return [result]


# ----------------------------------------------------------------------------
# The registry
# ----------------------------------------------------------------------------

REGISTRY: list = []


def op(name, fn, samples, needs=None, api=(), **kw):
    if needs is None:
        needs = (name,)
    entry = OpEntry(
        name,
        fn,
        [s if isinstance(s, Sample) else Sample(list(s)) for s in samples],
        tuple(needs),
        tuple(api),
        **kw,
    )
    assert all(e.name != name for e in REGISTRY), f"duplicate registry entry {name}"
    REGISTRY.append(entry)
    return entry


def S(*args, **kwargs):
    return Sample(list(args), kwargs)


# Shapes used by most elementwise ops: plain, 0-d, 3-d, non-contiguous.
def unary_samples(domain="normal"):
    return [
        S(Arg((3, 4), domain)),
        S(Arg((), domain)),
        S(Arg((2, 3, 2), domain)),
        S(Arg((3, 4), domain, noncontig=True)),
    ]


def binary_samples(d1="normal", d2="normal"):
    return [
        S(Arg((3, 4), d1), Arg((3, 4), d2)),
        S(Arg((3, 4), d1), Arg((4,), d2)),  # broadcast second
        S(Arg((2, 1, 4), d1), Arg((3, 1), d2)),  # broadcast both
        S(Arg((), d1), Arg((2, 3), d2)),  # 0-d with tensor
        S(Arg((3, 4), d1, noncontig=True), Arg((3, 4), d2)),
    ]


def unary(name, domain="normal", method=True, fn=None, needs=None, **kw):
    f = fn or (lambda lib, x, _n=name: getattr(lib, _n)(x))
    api = (f"Tensor.{name}",) if method else ()
    return op(name, f, unary_samples(domain), needs=needs, api=api, **kw)


# ---- binary table ops (arithmetic, atan2, hypot, xlogy) ----
# Every differentiable op of the binary tables in src/ops (arith, trig,
# special), from the op table itself: the function on broadcasting samples
# from the entry's domains (and `alpha=`), and per dunder the operator
# (`name_op`), the reflected operator with a number (`name_scalar`) and the
# in-place operator on a non-leaf (`name_inplace`).
def _binary_table_ops():
    import operator

    import ferrograd

    for row in ferrograd._C._op_table():
        if row["kind"] not in ("binary_numeric", "binary_float"):
            continue
        name, (d1, d2) = row["name"], row["domain"].split()
        aliases = row["aliases"]
        samples = binary_samples(d1, d2)
        if row["form"] == "alpha":
            samples = samples + [S(Arg((3, 4), d1), Arg((4,), d2), alpha=2.5)]
        op(
            name,
            lambda lib, x, y, _n=name, **kw: getattr(lib, _n)(x, y, **kw),
            samples,
            api=(f"Tensor.{name}", *aliases, *(f"Tensor.{a}" for a in aliases)),
        )
        if not row["dunders"]:
            continue
        fwd = row["dunders"][0]
        f = getattr(operator, fwd.strip("_"))
        op(
            f"{name}_op",
            lambda lib, x, y, _f=f: _f(x, y),
            binary_samples(d1, d2),
            needs=(f"Tensor.{fwd}",),
        )
        rev, inp = "__r" + fwd[2:], "__i" + fwd[2:]
        if rev in row["dunders"]:
            op(
                f"{name}_scalar",
                lambda lib, x, _f=f: _f(x, 1.5) + _f(2.5, x),
                [S(Arg((3, 4), d2)), S(Arg((), d2))],
                needs=(f"Tensor.{fwd}", f"Tensor.{rev}"),
            )
        if inp in row["dunders"]:
            fi = getattr(operator, inp.strip("_"))
            op(
                f"{name}_inplace",
                lambda lib, x, y, _f=fi: _f(x * 1, y),
                binary_samples(d1, d2)[:2],
                needs=(f"Tensor.{inp}",),
            )


_binary_table_ops()
op("neg_op", lambda lib, x: -x, unary_samples(), needs=("Tensor.__neg__",))
op("neg", lambda lib, x: lib.neg(x), unary_samples(), api=("Tensor.neg", "negative"))
op(
    "pow_tensor",
    lambda lib, x, y: lib.pow(x, y),
    [S(P(3, 4), A(3, 4)), S(P(3, 4), A(4)), S(NC(3, 4, domain="pos"), A(3, 4))],
    needs=("pow",),
    api=("Tensor.pow", "Tensor.__pow__"),
)
op("pow_op", lambda lib, x, y: x**y, [S(P(3, 4), A(1, 4))], needs=("Tensor.__pow__",))
op(
    "pow_scalar",
    lambda lib, x, e: lib.pow(x, e),
    [S(P(3, 4), 2.5), S(A(3, 4), 3), S(A(3, 4), 2), S(P(3, 4), -1.5), S(A(), 2), S(NC(3, 4), 2)],
    needs=("pow",),
)
op("pow_scalar_op", lambda lib, x: x**2 + x**0.5, [S(P(3, 4))], needs=("Tensor.__pow__",))
op("rpow", lambda lib, x: 2.0**x, [S(A(3, 4)), S(A())], needs=("Tensor.__rpow__",))


# ---- pointwise unary ----
# Every op of the family tables in src/ops (unary, trig, special), from the
# op table itself: name, aliases and sample domain come from its entry.
def _table_ops():
    import ferrograd

    for row in ferrograd._C._op_table():
        if row["kind"] != "unary_float":
            continue
        unary(row["name"], row["domain"])
        for alias in row["aliases"]:
            unary(alias, row["domain"])


_table_ops()
unary("abs", "away")
unary("sign", "away")
unary("relu", "away")
unary("square")
op(
    "gelu",
    lambda lib, x, **kw: lib.nn.functional.gelu(x, **kw),
    [S(A(3, 4)), S(A(2, 3, 2)), S(NC(3, 4)), S(A(3, 4), approximate="tanh")],
    needs=("nn.functional.gelu",),
)
op(
    "silu",
    lambda lib, x: lib.nn.functional.silu(x),
    [S(A(3, 4)), S(A()), S(NC(3, 4))],
    needs=("nn.functional.silu",),
)
op(
    "softplus",
    lambda lib, x, **kw: lib.nn.functional.softplus(x, **kw),
    [S(A(3, 4)), S(NC(3, 4)), S(A(3, 4), beta=2.0), S(A(3, 4), beta=0.5, threshold=1.0)],
    needs=("nn.functional.softplus",),
)
op(
    "clamp",
    lambda lib, x, **kw: lib.clamp(x, **kw),
    [
        S(A(3, 4), min=-0.5, max=0.5),
        S(A(3, 4), min=0.0),
        S(A(3, 4), max=0.25),
        S(NC(3, 4), min=-0.3, max=0.6),
        S(A(), min=-0.5, max=0.5),
    ],
    api=("Tensor.clamp",),
)
op(
    "clip",
    lambda lib, x, **kw: lib.clip(x, **kw),
    [S(A(3, 4), min=-0.5, max=0.5)],
    api=("Tensor.clip",),
)
op("maximum", lambda lib, x, y: lib.maximum(x, y), binary_samples(), api=("Tensor.maximum",))

# ---- inverse trigonometric, hyperbolic, other bases, error functions ----
unary("deg2rad")
unary("rad2deg")
op(
    "xlogy_scalar",
    lambda lib, x: lib.xlogy(x, 2.5) + lib.xlogy(1.5, x.abs() + 0.5),
    [S(A(3, 4)), S(A())],
    needs=("xlogy",),
)
op("logaddexp", lambda lib, x, y: lib.logaddexp(x, y), binary_samples(), api=("Tensor.logaddexp",))
op(
    "logaddexp2",
    lambda lib, x, y: lib.logaddexp2(x, y),
    binary_samples(),
    api=("Tensor.logaddexp2",),
)
op(
    "lerp_scalar",
    lambda lib, x, y: lib.lerp(x, y, 0.3) + x.lerp(y, 0.8),
    binary_samples()[:3],
    needs=("lerp", "Tensor.lerp"),
)
op(
    "lerp_tensor",
    lambda lib, x, y, w: lib.lerp(x, y, w),
    [S(A(3, 4), A(3, 4), A(3, 4)), S(A(3, 4), A(4), A(3, 1))],
    needs=("lerp",),
)
op(
    "addcmul",
    lambda lib, x, y, z, **kw: lib.addcmul(x, y, z, **kw),
    [S(A(3, 4), A(3, 4), A(3, 4)), S(A(3, 4), A(4), A(3, 1), value=0.5)],
    api=("Tensor.addcmul",),
)
op(
    "addcdiv",
    lambda lib, x, y, z, **kw: lib.addcdiv(x, y, z, **kw),
    [S(A(3, 4), A(3, 4), W(3, 4)), S(A(3, 4), A(4), W(3, 1), value=-2.0)],
    api=("Tensor.addcdiv",),
)

# ---- rearranging elements ----
op(
    "flip",
    lambda lib, x, *d: x.flip(*d),
    [S(A(2, 3, 4), 0), S(A(2, 3, 4), 0, 2), S(NC(3, 4), -1)],
    needs=("Tensor.flip",),
    api=("flip",),
)
op(
    "roll",
    lambda lib, x, *a: lib.roll(x, *a),
    [S(A(3, 4), 1), S(A(3, 4), -1, 1), S(A(2, 3, 4), (1, 2), (0, 2)), S(NC(3, 4), 2, 0)],
    api=("Tensor.roll",),
)
op(
    "repeat",
    lambda lib, x, *r: x.repeat(*r),
    [S(A(3, 4), 2, 1), S(A(3), 2, 2), S(NC(3, 4), 1, 3)],
    needs=("Tensor.repeat",),
)
op(
    "tile",
    lambda lib, x, r: lib.tile(x, r),
    [S(A(3, 4), (2,)), S(A(3), (2, 2))],
    api=("Tensor.tile",),
)
op(
    "tril",
    lambda lib, x, *k: lib.tril(x, *k),
    [S(A(3, 4)), S(A(2, 3, 4), -1), S(NC(4, 3), 1)],
    api=("Tensor.tril",),
)
op("triu", lambda lib, x, *k: lib.triu(x, *k), [S(A(3, 4)), S(A(2, 4, 3), 1)], api=("Tensor.triu",))
op(
    "diagonal",
    lambda lib, x, **kw: lib.diagonal(x, **kw),
    [S(A(3, 4)), S(A(3, 4), offset=1), S(A(2, 3, 4), offset=-1, dim1=2, dim2=0), S(NC(4, 3))],
    api=("Tensor.diagonal",),
)
op(
    "diag",
    lambda lib, x, *k: lib.diag(x, *k),
    [S(A(3)), S(A(3), 1), S(A(3, 4), -1)],
    api=("Tensor.diag",),
)
op("trace", lambda lib, x: lib.trace(x), [S(A(3, 4)), S(NC(3, 3))], api=("Tensor.trace",))
op(
    "movedim",
    lambda lib, x, s, d: lib.movedim(x, s, d),
    [S(A(2, 3, 4), 0, 2), S(A(2, 3, 4), (0, 1), (2, 0))],
    api=("Tensor.movedim", "moveaxis", "Tensor.moveaxis"),
)
op(
    "swapaxes",
    lambda lib, x: lib.swapaxes(x, 0, 2),
    [S(A(2, 3, 4))],
    api=("Tensor.swapaxes", "swapdims", "Tensor.swapdims"),
)

op(
    "einsum",
    lambda lib, eq, *xs: lib.einsum(eq, *xs),
    [
        S("ij,jk->ik", A(2, 3), A(3, 4)),
        S("ij,jk,kl", A(2, 3), A(3, 4), A(4, 2)),
        S("bij,bjk->bik", A(2, 3, 4), NC(2, 4, 3)),
        S("ii->i", A(3, 3)),
        S("...ij,j->...i", A(2, 3, 4), A(4)),
        S("i,j->ij", A(3), A(4)),
        S("ij,ij->", A(2, 3), A(2, 3)),
    ],
)

# ---- beta * input + alpha * product ----
op(
    "addmm",
    lambda lib, x, a, b, **kw: lib.addmm(x, a, b, **kw),
    [S(A(2, 4), A(2, 3), A(3, 4)), S(A(4), A(2, 3), A(3, 4), beta=0.5, alpha=2.0)],
    api=("Tensor.addmm",),
)
op(
    "addmv",
    lambda lib, x, a, v, **kw: lib.addmv(x, a, v, **kw),
    [S(A(2), A(2, 3), A(3)), S(A(2), A(2, 3), A(3), alpha=-1.0)],
    api=("Tensor.addmv",),
)
op(
    "baddbmm",
    lambda lib, x, a, b, **kw: lib.baddbmm(x, a, b, **kw),
    [S(A(2, 2, 4), A(2, 2, 3), A(2, 3, 4)), S(A(2, 4), A(2, 2, 3), A(2, 3, 4), beta=2.0)],
    api=("Tensor.baddbmm",),
)
op(
    "addbmm",
    lambda lib, x, a, b, **kw: lib.addbmm(x, a, b, **kw),
    [S(A(2, 4), A(3, 2, 3), A(3, 3, 4), alpha=0.5)],
    api=("Tensor.addbmm",),
)
op(
    "inner",
    lambda lib, x, y: lib.inner(x, y),
    [S(A(2, 3), A(4, 3)), S(A(3), A(3))],
    api=("Tensor.inner",),
)
op("vdot", lambda lib, x, y: lib.vdot(x, y), [S(A(3), A(3))], api=("Tensor.vdot",))

# ---- sorting (values are gathered: gradient scattered back) ----
op(
    "sort",
    lambda lib, x, **kw: x.sort(**kw).values,
    [S(A(3, 4)), S(A(3, 4), dim=0, descending=True), S(NC(3, 4))],
    needs=("Tensor.sort",),
    api=("sort",),
)
op(
    "topk",
    lambda lib, x, k, **kw: lib.topk(x, k, **kw).values,
    [S(A(3, 5), 2), S(A(3, 5), 3, dim=0, largest=False)],
    api=("Tensor.topk",),
)
op(
    "kthvalue",
    lambda lib, x, k, **kw: lib.kthvalue(x, k, **kw).values,
    [S(A(3, 5), 2), S(A(4, 3), 1, dim=0, keepdim=True)],
    api=("Tensor.kthvalue",),
)
op("msort", lambda lib, x: lib.msort(x), [S(A(4, 3))], api=("Tensor.msort",))

# ---- nn.functional: linear and losses ----
TARGET5 = Const([0, 3, 1, 1, 2])
PROBS = Const(
    [
        [0.1, 0.2, 0.3, 0.4],
        [0.25, 0.25, 0.25, 0.25],
        [0.7, 0.1, 0.1, 0.1],
        [0.0, 0.0, 1.0, 0.0],
        [0.4, 0.3, 0.2, 0.1],
    ],
    "float64",
)
BINARY = Const([[0.0, 1.0, 0.3, 1.0], [1.0, 0.0, 0.5, 0.9], [0.2, 0.8, 1.0, 0.0]], "float64")
CLASS_W = Const([0.5, 1.0, 2.0, 1.5], "float64")
op(
    "linear",
    lambda lib, *a: lib.nn.functional.linear(*a),
    [S(A(4, 3), A(2, 3), A(2)), S(A(2, 4, 3), A(2, 3)), S(A(4, 3), A(3))],
    needs=("nn.functional.linear",),
)
for _name in ("mse_loss", "l1_loss"):
    op(
        _name,
        lambda lib, x, y, _n=_name, **kw: getattr(lib.nn.functional, _n)(x, y, **kw),
        [
            S(A(3, 4), A(3, 4)),
            S(A(3, 4), A(3, 4), reduction="sum"),
            S(A(3, 4), A(3, 4), reduction="none"),
        ],
        needs=(f"nn.functional.{_name}",),
    )
op(
    "smooth_l1_loss",
    lambda lib, x, y, **kw: lib.nn.functional.smooth_l1_loss(x, y, **kw),
    [S(A(3, 4), A(3, 4)), S(A(3, 4), A(3, 4), beta=0.5, reduction="sum")],
    needs=("nn.functional.smooth_l1_loss",),
)
op(
    "huber_loss",
    lambda lib, x, y, **kw: lib.nn.functional.huber_loss(x, y, **kw),
    [S(A(3, 4), A(3, 4)), S(A(3, 4), A(3, 4), delta=0.5, reduction="none")],
    needs=("nn.functional.huber_loss",),
)
op(
    "binary_cross_entropy",
    lambda lib, x, t, **kw: lib.nn.functional.binary_cross_entropy(x.sigmoid(), t, **kw),
    [
        S(A(3, 4), BINARY),
        S(A(3, 4), BINARY, weight=Const([1.0, 2.0, 0.5, 1.0], "float64"), reduction="sum"),
    ],
    needs=("nn.functional.binary_cross_entropy",),
)
op(
    "binary_cross_entropy_with_logits",
    lambda lib, x, t, **kw: lib.nn.functional.binary_cross_entropy_with_logits(x, t, **kw),
    [S(A(3, 4), BINARY), S(A(3, 4), BINARY, pos_weight=Const([1.0, 2.0, 3.0, 0.5], "float64"))],
    needs=("nn.functional.binary_cross_entropy_with_logits",),
)
op(
    "nll_loss",
    lambda lib, x, t, **kw: lib.nn.functional.nll_loss(x, t, **kw),
    [
        S(A(5, 4), TARGET5),
        S(A(5, 4), TARGET5, weight=CLASS_W),
        S(A(5, 4), TARGET5, ignore_index=1, reduction="sum"),
        S(A(2, 4, 3), Const([[0, 1, 3], [2, 2, 0]]), reduction="none"),
    ],
    needs=("nn.functional.nll_loss",),
)
op(
    "cross_entropy",
    lambda lib, x, t, **kw: lib.nn.functional.cross_entropy(x, t, **kw),
    [
        S(A(5, 4), TARGET5),
        S(A(5, 4), TARGET5, weight=CLASS_W, label_smoothing=0.2, ignore_index=3),
        S(A(5, 4), TARGET5, label_smoothing=0.1, reduction="none"),
        S(A(5, 4), PROBS),
        S(NC(5, 4), PROBS, label_smoothing=0.3, weight=CLASS_W),
    ],
    needs=("nn.functional.cross_entropy",),
)

# ---- rounding (zero derivative, inputs clear of the jumps) and remainders ----
unary("floor")
unary("ceil")
unary("trunc")
unary("frac")
op("fix", lambda lib, x: lib.fix(x), unary_samples()[:2], api=("Tensor.fix",))
op(
    "round",
    lambda lib, x, **kw: lib.round(x, **kw),
    [S(A(3, 4)), S(A(3, 4), decimals=1), S(A(3, 4), decimals=-1), S(NC(3, 4))],
    api=("Tensor.round",),
)
op(
    "remainder",
    lambda lib, x, y: lib.remainder(x, y),
    binary_samples("normal", "away"),
    api=("Tensor.remainder",),
)
op(
    "remainder_op",
    lambda lib, x, y: x % y,
    binary_samples("normal", "away")[:3],
    needs=("Tensor.__mod__",),
)
op(
    "remainder_scalar",
    lambda lib, x: (x % 0.7) + (x % -1.3),
    [S(A(3, 4)), S(A())],
    needs=("Tensor.__mod__",),
)
op("fmod", lambda lib, x, y: lib.fmod(x, y), binary_samples("normal", "away"), api=("Tensor.fmod",))
op("fmod_scalar", lambda lib, x: lib.fmod(x, 0.7), [S(A(3, 4))], needs=("fmod",))
op(
    "div_rounding",
    lambda lib, x, y, **kw: lib.div(x, y, **kw),
    [S(A(3, 4), W(4), rounding_mode="floor"), S(A(3, 4), W(3, 4), rounding_mode="trunc")],
    needs=("div",),
    api=("Tensor.div", "divide"),
)

op("minimum", lambda lib, x, y: lib.minimum(x, y), binary_samples(), api=("Tensor.minimum",))

# ---- reductions ----
REDUCE_SAMPLES = [
    S(A(3, 4)),
    S(A(3, 4), dim=1),
    S(A(2, 3, 4), dim=(0, 2), keepdim=True),
    S(A(2, 3, 4), dim=-1, keepdim=True),
    S(NC(3, 4), dim=0),
    S(A()),
]
op(
    "sum",
    lambda lib, x, **kw: x.sum(**kw),
    REDUCE_SAMPLES + [S(A(3, 4), dim=[])],
    needs=("Tensor.sum",),
    api=("sum",),
)
op("mean", lambda lib, x, **kw: x.mean(**kw), REDUCE_SAMPLES, needs=("Tensor.mean",), api=("mean",))
op(
    "prod",
    lambda lib, x, **kw: lib.prod(x, **kw),
    [
        S(A(3, 4)),
        S(A(3, 4), dim=1),
        S(A(2, 3, 4), dim=0, keepdim=True),
        S(NC(3, 4), dim=-1),
        S(A()),
    ],
    api=("Tensor.prod",),
)
AMAX_SAMPLES = [
    S(A(3, 4)),
    S(A(3, 4), dim=1),
    S(A(2, 3, 4), dim=(0, 2), keepdim=True),
    S(NC(3, 4), dim=0),
]
op("amax", lambda lib, x, **kw: lib.amax(x, **kw), AMAX_SAMPLES, api=("Tensor.amax",))
op("amin", lambda lib, x, **kw: lib.amin(x, **kw), AMAX_SAMPLES, api=("Tensor.amin",))
op(
    "max_full",
    lambda lib, x: lib.max(x),
    [S(A(3, 4)), S(NC(3, 4))],
    needs=("max",),
    api=("Tensor.max",),
)
op(
    "max_dim",
    lambda lib, x, **kw: lib.max(x, **kw).values,
    [S(A(3, 4), dim=1), S(A(2, 3, 4), dim=0, keepdim=True), S(NC(3, 4), dim=-1)],
    needs=("max",),
)
op("max_binary", lambda lib, x, y: lib.max(x, y), binary_samples()[:2], needs=("max",))
op(
    "min_full",
    lambda lib, x: lib.min(x),
    [S(A(3, 4)), S(NC(3, 4))],
    needs=("min",),
    api=("Tensor.min",),
)
op(
    "min_dim",
    lambda lib, x, d, **kw: lib.min(x, d, **kw)[0],
    [S(A(3, 4), 1), S(A(2, 3, 4), 0, keepdim=True), S(NC(3, 4), -1)],
    needs=("min",),
)
VAR_SAMPLES = [
    S(A(3, 4)),
    S(A(3, 4), dim=1),
    S(A(3, 4), dim=1, correction=0),
    S(A(2, 3, 4), dim=(0, 2), keepdim=True, correction=2),
    S(NC(3, 4), dim=0, unbiased=False),
]
op("var", lambda lib, x, **kw: lib.var(x, **kw), VAR_SAMPLES, api=("Tensor.var",))
op("std", lambda lib, x, **kw: lib.std(x, **kw), VAR_SAMPLES, api=("Tensor.std",))
op(
    "norm",
    lambda lib, x, **kw: lib.norm(x, **kw),
    [
        S(A(3, 4)),
        S(A(3, 4), p=1, dim=1),
        S(A(3, 4), dim=0, keepdim=True),
        S(A(3, 4), p=3),
        S(NC(3, 4), p=2, dim=1),
    ],
    api=("Tensor.norm",),
)
op(
    "logsumexp",
    lambda lib, x, **kw: lib.logsumexp(x, **kw),
    [
        S(A(3, 4), dim=1),
        S(A(3, 4), dim=0, keepdim=True),
        S(A(2, 3, 4), dim=(0, 2)),
        S(NC(3, 4), dim=-1),
    ],
    api=("Tensor.logsumexp",),
)
op(
    "cumsum",
    lambda lib, x, **kw: lib.cumsum(x, **kw),
    [S(A(3, 4), dim=0), S(A(3, 4), dim=-1), S(A(5), dim=0), S(NC(3, 4), dim=1)],
    api=("Tensor.cumsum",),
)

# ---- linear algebra ----
op(
    "matmul",
    lambda lib, x, y: lib.matmul(x, y),
    [
        S(A(4), A(4)),
        S(A(3, 4), A(4)),
        S(A(4), A(4, 5)),
        S(A(3, 4), A(4, 5)),
        S(A(2, 3, 4), A(4, 5)),
        S(A(3, 4), A(2, 4, 5)),
        S(A(2, 1, 3, 4), A(5, 4, 2)),
        S(NC(3, 4), NC(4, 5)),
        S(A(4), A(2, 4, 3)),
    ],
    api=("Tensor.matmul",),
)
op(
    "matmul_op",
    lambda lib, x, y: x @ y,
    [S(A(3, 4), A(4, 5)), S(A(2, 3, 4), A(2, 4, 5))],
    needs=("Tensor.__matmul__",),
)
op(
    "mm",
    lambda lib, x, y: lib.mm(x, y),
    [S(A(3, 4), A(4, 5)), S(NC(3, 4), A(4, 5)), S(A(1, 4), NC(4, 2))],
    api=("Tensor.mm",),
)
op(
    "bmm",
    lambda lib, x, y: lib.bmm(x, y),
    [S(A(2, 3, 4), A(2, 4, 5)), S(NC(2, 3, 4), A(2, 4, 2))],
    api=("Tensor.bmm",),
)
op(
    "outer",
    lambda lib, x, y: lib.outer(x, y),
    [S(A(3), A(4)), S(A(1), A(2))],
    api=("Tensor.outer",),
)
op("dot", lambda lib, x, y: lib.dot(x, y), [S(A(5), A(5)), S(A(1), A(1))], api=("Tensor.dot",))

# ---- softmax ----
SOFTMAX_SAMPLES = [S(A(3, 4), 1), S(A(3, 4), 0), S(A(2, 3, 4), -1), S(NC(3, 4), 1), S(A(5), 0)]
op(
    "softmax",
    lambda lib, x, d: lib.softmax(x, d),
    SOFTMAX_SAMPLES,
    api=("Tensor.softmax", "nn.functional.softmax"),
)
op(
    "log_softmax",
    lambda lib, x, d: lib.log_softmax(x, dim=d),
    SOFTMAX_SAMPLES,
    api=("Tensor.log_softmax", "nn.functional.log_softmax"),
)

# ---- views and copies ----
op(
    "reshape",
    lambda lib, x, s: x.reshape(s),
    [
        S(A(3, 4), (4, 3)),
        S(A(3, 4), (-1,)),
        S(A(3, 4), (2, 2, 3)),
        S(NC(3, 4), (12,)),
        S(A(), (1, 1)),
    ],
    needs=("Tensor.reshape",),
    api=("reshape",),
)
op(
    "view",
    lambda lib, x, *s: x.view(*s),
    [S(A(3, 4), 12), S(A(2, 3, 4), 6, -1)],
    needs=("Tensor.view",),
)
op(
    "transpose",
    lambda lib, x, a, b: x.transpose(a, b),
    [S(A(3, 4), 0, 1), S(A(2, 3, 4), 0, 2), S(NC(3, 4), -1, -2)],
    needs=("Tensor.transpose",),
    api=("transpose",),
)
op("t", lambda lib, x: x.t(), [S(A(3, 4)), S(A(4))], needs=("Tensor.t",))
op(
    "permute",
    lambda lib, x, *d: x.permute(*d),
    [S(A(2, 3, 4), 2, 0, 1), S(NC(3, 4), 1, 0)],
    needs=("Tensor.permute",),
    api=("permute",),
)
op(
    "expand",
    lambda lib, x, *s: x.expand(*s),
    [S(A(3, 1), 3, 4), S(A(4), 2, 3, 4), S(A(3, 1), -1, 5), S(A(), 2, 2)],
    needs=("Tensor.expand",),
)
op(
    "squeeze",
    lambda lib, x, *d: x.squeeze(*d),
    [S(A(3, 1, 4)), S(A(3, 1, 4), 1), S(A(1, 3, 1), (0, 2)), S(A(3, 4), 0)],
    needs=("Tensor.squeeze",),
    api=("squeeze",),
)
op(
    "unsqueeze",
    lambda lib, x, d: x.unsqueeze(d),
    [S(A(3, 4), 0), S(A(3, 4), -1), S(A(), 0)],
    needs=("Tensor.unsqueeze",),
    api=("unsqueeze",),
)
op(
    "flatten",
    lambda lib, x, *a: x.flatten(*a),
    [S(A(2, 3, 4)), S(A(2, 3, 4), 1), S(A(2, 3, 4), 0, 1), S(NC(3, 4))],
    needs=("Tensor.flatten",),
    api=("flatten",),
)
op(
    "narrow",
    lambda lib, x, d, s, n: x.narrow(d, s, n),
    [S(A(3, 4), 1, 1, 2), S(A(3, 4), 0, -2, 2), S(NC(3, 4), 1, 0, 3)],
    needs=("Tensor.narrow",),
    api=("narrow",),
)
op(
    "select",
    lambda lib, x, d, i: x.select(d, i),
    [S(A(3, 4), 1, 2), S(A(3, 4), 0, -1)],
    needs=("Tensor.select",),
    api=("select",),
)
op(
    "clone",
    lambda lib, x: x.clone(),
    [S(A(3, 4)), S(NC(3, 4))],
    needs=("Tensor.clone",),
    api=("clone",),
)
op("contiguous", lambda lib, x: x.contiguous() * 1.0, [S(NC(3, 4))], needs=("Tensor.contiguous",))
op(
    "inplace_add_on_view",
    lambda lib, x, y: _inplace_on_view(x, y),
    [S(A(3, 4), A(3, 2)), S(NC(3, 4), A(2))],
    needs=("Tensor.clone", "Tensor.narrow"),
)


def _inplace_on_view(x, y):
    z = x.clone()
    v = z.narrow(1, 1, 2)
    v.mul_(y)
    v.add_(y)
    return z * 2.0


# ---- indexing ----
def _getitem_basic(lib, x, which):
    return {
        0: lambda: x[1],
        1: lambda: x[:, 1:3],
        2: lambda: x[::2, 1::2],
        3: lambda: x[..., None],
        4: lambda: x[1:, None, -1],
        5: lambda: x[-1, ...],
    }[which]()


op(
    "getitem_basic",
    _getitem_basic,
    [S(A(3, 4), i) for i in range(6)] + [S(NC(3, 4), 1)],
    needs=("Tensor.__getitem__",),
)
op(
    "getitem_advanced",
    lambda lib, x, *idx: x[idx if len(idx) > 1 else idx[0]],
    [
        S(A(3, 4), Const([0, 2, 0])),
        S(A(3, 4), Const([[0, 1], [2, 2]])),
        S(A(3, 4), slice(None), Const([1, 1, 3])),
        S(A(3, 4), Const([[True, False, True, False]] * 3, "bool")),
        S(A(3, 4), Const([0, 2]), Const([1, 3])),
        S(NC(3, 4), Const([2, 2])),
    ],
    needs=("Tensor.__getitem__",),
)
op(
    "index_select",
    lambda lib, x, d, i: lib.index_select(x, d, i),
    [S(A(3, 4), 0, Const([2, 0, 2])), S(A(3, 4), 1, Const([3, 1])), S(NC(3, 4), 1, Const([0, 0]))],
    api=("Tensor.index_select",),
)
op(
    "gather",
    lambda lib, x, d, i: lib.gather(x, d, i),
    [
        S(A(3, 4), 1, Const([[0, 2], [1, 0], [3, 3]])),
        S(A(3, 4), 0, Const([[2, 0, 1, 2], [0, 0, 0, 1]])),
        S(NC(3, 4), 1, Const([[1], [1], [0]])),
    ],
    api=("Tensor.gather",),
)
op(
    "scatter_add",
    lambda lib, x, d, i, s: lib.scatter_add(x, d, i, s),
    [
        S(A(3, 4), 1, Const([[0, 2], [1, 0], [3, 3]]), A(3, 2)),
        S(A(3, 4), 0, Const([[2, 0, 1, 2], [2, 0, 0, 1]]), A(2, 4)),
        S(NC(3, 4), 1, Const([[1], [1], [0]]), A(3, 1)),
    ],
    api=("Tensor.scatter_add",),
)
op(
    "index_add",
    lambda lib, x, d, i, s, **kw: lib.index_add(x, d, i, s, **kw),
    [
        S(A(3, 4), 0, Const([2, 0, 2]), A(3, 4)),  # a repeated index accumulates
        S(A(3, 4), 1, Const([3, 1]), A(3, 2), alpha=2.5),
        S(NC(3, 4), -1, Const([0, 0, 1]), NC(3, 3)),
        S(A(2, 3, 2), 1, Const(2), A(2, 1, 2), alpha=-1),  # a 0-d index
        S(A(), 0, Const([0]), A()),
    ],
    api=("Tensor.index_add", "Tensor.index_add_"),
)
op(
    "index_copy",
    lambda lib, x, d, i, s: lib.index_copy(x, d, i, s),
    [
        S(A(3, 4), 0, Const([2, 0]), A(2, 4)),
        S(NC(3, 4), -1, Const([3, 1, 0]), NC(3, 3)),
        S(A(2, 3, 2), 1, Const(1), A(2, 1, 2)),
        S(A(3), 0, Const([1]), A()),  # a 0-d source into a vector
        S(A(), 0, Const([0]), A()),
    ],
    api=("Tensor.index_copy", "Tensor.index_copy_"),
)
op(
    "index_fill",
    lambda lib, x, d, i, v: lib.index_fill(x, d, i, v),
    [
        S(A(3, 4), 0, Const([2, 0, 2]), 1.5),
        S(NC(3, 4), -1, Const([3, -4]), -2.0),
        S(A(3, 4), 1, Const([1, 1, 3]), A()),  # a 0-d tensor value: its gradient too
        S(A(2, 3, 2), 2, Const(1), A()),
        S(A(), -1, Const([0]), A()),
    ],
    api=("Tensor.index_fill", "Tensor.index_fill_"),
)
op(
    "index_ops_inplace",
    lambda lib, x, s, t, v: _index_ops_inplace(lib, x, s, t, v),
    [S(A(3, 4), A(2, 4), A(3, 2), A()), S(NC(3, 4), NC(2, 4), A(3, 2), A())],
    needs=("Tensor.index_add_", "Tensor.index_copy_", "Tensor.index_fill_"),
)


def _index_ops_inplace(lib, x, s, t, v):
    z = x * 1.0
    z.index_add_(0, make_tensor(lib, np.array([2, 2]), "int64"), s, alpha=0.5)
    z.index_copy_(1, make_tensor(lib, np.array([3, 0]), "int64"), t)
    z.index_fill_(0, make_tensor(lib, np.array([1]), "int64"), v)
    return z * z


op(
    "masked_fill",
    lambda lib, x, m, v: lib.masked_fill(x, m, v),
    [
        S(A(3, 4), Const([[True, False, False, True]] * 3, "bool"), 0.5),
        S(A(3, 4), Const([False, True, True, False], "bool"), -1.0),
        S(NC(3, 4), Const([[True], [False], [True]], "bool"), 2.0),
    ],
    api=("Tensor.masked_fill",),
)
op(
    "where",
    lambda lib, c, x, y: lib.where(c, x, y),
    [
        S(Const([[True, False, True, False]] * 3, "bool"), A(3, 4), A(3, 4)),
        S(Const([True, False, False, True], "bool"), A(3, 4), A(1, 4)),
        S(Const([[True], [False], [True]], "bool"), NC(3, 4), A(4)),
    ],
    api=("Tensor.where",),
)
op(
    "where_scalar",
    lambda lib, c, x: lib.where(c, x, 0.0),
    [S(Const([[True, False, True, False]] * 3, "bool"), A(3, 4))],
    needs=("where",),
)

# ---- joining and splitting ----
op(
    "cat",
    lambda lib, *xs, **kw: lib.cat(list(xs), **kw),
    [
        S(A(2, 4), A(3, 4)),
        S(A(3, 1), A(3, 4), dim=1),
        S(A(2, 3, 2), A(2, 3, 1), A(2, 3, 3), dim=-1),
        S(NC(3, 4), A(1, 4), dim=0),
    ],
    api=("concat", "concatenate"),
)
op(
    "stack",
    lambda lib, *xs, **kw: lib.stack(list(xs), **kw),
    [
        S(A(3, 4), A(3, 4)),
        S(A(3, 4), A(3, 4), A(3, 4), dim=1),
        S(A(3, 4), NC(3, 4), dim=-1),
        S(A(), A()),
    ],
)
op(
    "split",
    lambda lib, x, s, **kw: lib.split(x, s, **kw),
    [S(A(5, 4), 2), S(A(3, 4), [1, 3], dim=1), S(NC(3, 4), 2, dim=-1)],
    api=("Tensor.split",),
)
op(
    "chunk",
    lambda lib, x, n, **kw: lib.chunk(x, n, **kw),
    [S(A(5, 4), 3), S(A(3, 4), 2, dim=1), S(NC(3, 4), 4, dim=1)],
    api=("Tensor.chunk",),
)


# -- nn.functional: more activations, padding, normalize ---------------------
op(
    "leaky_relu",
    lambda lib, x, **kw: lib.nn.functional.leaky_relu(x, **kw),
    [S(A(3, 4)), S(A(2, 3), negative_slope=0.2), S(NC(3, 4), negative_slope=-0.5)],
    needs=("nn.functional.leaky_relu",),
)
op(
    "hardtanh",
    lambda lib, x, **kw: lib.nn.functional.hardtanh(x, **kw),
    [S(A(3, 4)), S(A(2, 3), min_val=-0.5, max_val=2.0), S(NC(3, 4))],
    needs=("nn.functional.hardtanh",),
)
op(
    "relu6",
    lambda lib, x: lib.nn.functional.relu6(x * 4),
    [S(A(3, 4)), S(NC(2, 3))],
    needs=("nn.functional.relu6",),
)
op(
    "elu",
    lambda lib, x, **kw: lib.nn.functional.elu(x, **kw),
    [S(A(3, 4)), S(A(2, 3), alpha=0.5), S(NC(3, 4), alpha=2.0)],
    needs=("nn.functional.elu",),
)
op(
    "selu",
    lambda lib, x: lib.nn.functional.selu(x),
    [S(A(3, 4)), S(NC(2, 3))],
    needs=("nn.functional.selu",),
)
op(
    "celu",
    lambda lib, x, **kw: lib.nn.functional.celu(x, **kw),
    [S(A(3, 4)), S(A(2, 3), alpha=0.5)],
    needs=("nn.functional.celu",),
    rtol=1e-6,  # torch rounds 1/alpha to float32 in its float64 backward
)
op(
    "logsigmoid",
    lambda lib, x: lib.nn.functional.logsigmoid(x),
    [S(A(3, 4)), S(A()), S(NC(2, 3))],
    needs=("nn.functional.logsigmoid",),
)
op(
    "pad",
    lambda lib, x, **kw: lib.nn.functional.pad(x, **kw),
    [
        S(A(2, 3, 4), pad=(1, 2)),
        S(A(2, 3, 4), pad=(2, 0, -1, 1), value=0.5),
        S(A(1, 3, 4), pad=(2, 3, 1, 2), mode="reflect"),
        S(A(1, 3, 4), pad=(2, 1, 1, 2), mode="replicate"),
        S(A(1, 3, 4), pad=(2, 1, 3, 0), mode="circular"),
        S(NC(2, 3, 4), pad=(1, 1), mode="reflect"),
    ],
    needs=("nn.functional.pad",),
)
op(
    "unfold",
    lambda lib, x, **kw: lib.nn.functional.unfold(x, **kw),
    [
        S(A(2, 2, 4, 3), kernel_size=2),
        S(A(1, 2, 4, 5), kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
        S(A(2, 3, 4), kernel_size=2, stride=2),
    ],
    needs=("nn.functional.unfold",),
)
op(
    "fold",
    lambda lib, x, **kw: lib.nn.functional.fold(x, **kw),
    [
        S(A(2, 8, 6), output_size=(3, 4), kernel_size=2),
        S(A(1, 4, 9), output_size=(4, 5), kernel_size=2, padding=1, stride=2),
        S(A(8, 4), output_size=(3, 3), kernel_size=2, dilation=1),
    ],
    needs=("nn.functional.fold",),
)
op(
    "conv2d",
    lambda lib, x, w, *b, **kw: lib.nn.functional.conv2d(x, w, *b, **kw),
    [
        S(A(2, 2, 4, 4), A(3, 2, 2, 2), A(3)),
        S(A(1, 2, 5, 4), A(2, 2, 3, 2), stride=(2, 1), padding=1, dilation=(1, 2)),
        S(A(1, 4, 3, 3), A(4, 2, 2, 2), A(4), groups=2),
        S(A(2, 4, 4), A(2, 2, 2, 3), padding="same"),
        S(NC(1, 2, 3, 4), A(2, 2, 2, 2)),
    ],
    needs=("nn.functional.conv2d",),
    api=("conv2d",),
)
op(
    "conv1d",
    lambda lib, x, w, *b, **kw: lib.nn.functional.conv1d(x, w, *b, **kw),
    [S(A(2, 2, 6), A(3, 2, 3), A(3), stride=2, padding=1), S(A(1, 2, 5), A(2, 1, 2), groups=2)],
    needs=("nn.functional.conv1d",),
    api=("conv1d",),
)
op(
    "conv3d",
    lambda lib, x, w, *b, **kw: lib.nn.functional.conv3d(x, w, *b, **kw),
    [S(A(1, 2, 3, 3, 3), A(2, 2, 2, 2, 2), A(2), padding=(1, 0, 0))],
    needs=("nn.functional.conv3d",),
    api=("conv3d",),
)
op(
    "conv_transpose2d",
    lambda lib, x, w, *b, **kw: lib.nn.functional.conv_transpose2d(x, w, *b, **kw),
    [
        S(A(2, 2, 3, 3), A(2, 3, 2, 2), A(3)),
        S(A(1, 2, 3, 2), A(2, 2, 3, 2), stride=2, padding=1, output_padding=1),
        S(A(1, 4, 2, 3), A(4, 1, 2, 2), A(2), groups=2, dilation=(2, 1)),
        S(A(2, 3, 3), A(2, 2, 2, 2), stride=(1, 2)),
    ],
    needs=("nn.functional.conv_transpose2d",),
    api=("conv_transpose2d",),
)
op(
    "conv_transpose1d",
    lambda lib, x, w, *b, **kw: lib.nn.functional.conv_transpose1d(x, w, *b, **kw),
    [S(A(2, 2, 4), A(2, 3, 3), A(3), stride=2, padding=1, output_padding=1)],
    needs=("nn.functional.conv_transpose1d",),
    api=("conv_transpose1d",),
)
op(
    "conv_transpose3d",
    lambda lib, x, w, *b, **kw: lib.nn.functional.conv_transpose3d(x, w, *b, **kw),
    [S(A(1, 2, 2, 2, 2), A(2, 2, 2, 2, 2), A(2), stride=(2, 1, 1))],
    needs=("nn.functional.conv_transpose3d",),
    api=("conv_transpose3d",),
)
op(
    "interpolate",
    lambda lib, x, **kw: lib.nn.functional.interpolate(x, **kw),
    [
        S(A(1, 2, 3, 4), size=(5, 7)),
        S(A(1, 2, 4, 3), scale_factor=(0.5, 1.7), mode="nearest-exact"),
        S(A(2, 1, 3, 4), size=(5, 6), mode="bilinear"),
        S(A(1, 2, 3, 3), scale_factor=1.5, mode="bilinear", align_corners=True),
        S(A(2, 2, 5), size=3, mode="linear"),
        S(A(1, 1, 2, 3, 2), scale_factor=2, mode="trilinear"),
        S(A(1, 2, 4, 5), size=(2, 3), mode="area"),
    ],
    needs=("nn.functional.interpolate",),
)
op(
    "max_pool2d",
    lambda lib, x, **kw: lib.nn.functional.max_pool2d(x, **kw),
    [
        S(A(2, 2, 4, 4), kernel_size=2),
        S(A(1, 2, 5, 5), kernel_size=3, stride=2, padding=1, ceil_mode=True),
        S(A(2, 4, 5), kernel_size=(2, 3), dilation=(2, 1)),
    ],
    needs=("nn.functional.max_pool2d",),
    api=("max_pool2d",),
)
op(
    "max_pool1d",
    lambda lib, x, **kw: lib.nn.functional.max_pool1d(x, **kw),
    [S(A(2, 3, 7), kernel_size=3, stride=2, padding=1)],
    needs=("nn.functional.max_pool1d",),
    api=("max_pool1d",),
)
op(
    "max_pool3d",
    lambda lib, x, **kw: lib.nn.functional.max_pool3d(x, **kw),
    [S(A(1, 2, 4, 3, 4), kernel_size=2, stride=1)],
    needs=("nn.functional.max_pool3d",),
    api=("max_pool3d",),
)
op(
    "avg_pool2d",
    lambda lib, x, **kw: lib.nn.functional.avg_pool2d(x, **kw),
    [
        S(A(2, 2, 4, 4), kernel_size=2),
        S(A(1, 2, 5, 5), kernel_size=3, stride=2, padding=1, ceil_mode=True),
        S(A(1, 2, 5, 5), kernel_size=3, stride=2, padding=1, count_include_pad=False),
        S(A(2, 4, 4), kernel_size=2, divisor_override=3),
    ],
    needs=("nn.functional.avg_pool2d",),
)
op(
    "avg_pool1d",
    lambda lib, x, **kw: lib.nn.functional.avg_pool1d(x, **kw),
    [S(A(2, 3, 7), kernel_size=3, stride=2, padding=1, ceil_mode=True)],
    needs=("nn.functional.avg_pool1d",),
    api=("avg_pool1d",),
)
op(
    "avg_pool3d",
    lambda lib, x, **kw: lib.nn.functional.avg_pool3d(x, **kw),
    [S(A(1, 2, 4, 3, 4), kernel_size=2, padding=1)],
    needs=("nn.functional.avg_pool3d",),
)
op(
    "adaptive_avg_pool2d",
    lambda lib, x, size: lib.nn.functional.adaptive_avg_pool2d(x, size),
    [S(A(2, 2, 5, 4), (3, 2)), S(A(2, 5, 4), 1), S(A(1, 2, 5, 4), (None, 3))],
    needs=("nn.functional.adaptive_avg_pool2d",),
)
op(
    "adaptive_max_pool2d",
    lambda lib, x, size: lib.nn.functional.adaptive_max_pool2d(x, size),
    [S(A(2, 2, 5, 4), (3, 2)), S(A(2, 5, 4), 1), S(A(1, 2, 3, 4), (None, 6))],
    needs=("nn.functional.adaptive_max_pool2d",),
)
op(
    "adaptive_max_pool1d",
    lambda lib, x, size: lib.nn.functional.adaptive_max_pool1d(x, size),
    [S(A(2, 3, 7), 3)],
    needs=("nn.functional.adaptive_max_pool1d",),
    api=("adaptive_max_pool1d",),
)
op(
    "adaptive_max_pool3d",
    lambda lib, x, size: lib.nn.functional.adaptive_max_pool3d(x, size),
    [S(A(1, 2, 3, 4, 5), (2, 3, 2))],
    needs=("nn.functional.adaptive_max_pool3d",),
)
op(
    "adaptive_avg_pool1d",
    lambda lib, x, size: lib.nn.functional.adaptive_avg_pool1d(x, size),
    [S(A(2, 3, 7), 3)],
    needs=("nn.functional.adaptive_avg_pool1d",),
    api=("adaptive_avg_pool1d",),
)
op(
    "adaptive_avg_pool3d",
    lambda lib, x, size: lib.nn.functional.adaptive_avg_pool3d(x, size),
    [S(A(1, 2, 3, 4, 5), (2, 3, 2))],
    needs=("nn.functional.adaptive_avg_pool3d",),
)
op(
    "normalize",
    lambda lib, x, **kw: lib.nn.functional.normalize(x, **kw),
    [S(A(3, 4)), S(A(2, 3, 4), p=1.0, dim=-1), S(NC(3, 4), dim=0)],
    needs=("nn.functional.normalize",),
)

op(
    "layer_norm",
    lambda lib, x, w, b, **kw: lib.nn.functional.layer_norm(x, tuple(w.shape), w, b, **kw),
    [S(A(3, 4), A(4), A(4)), S(A(2, 3, 4), A(3, 4), A(3, 4), eps=1e-3), S(NC(3, 4), A(4), A(4))],
    needs=("nn.functional.layer_norm",),
)
op(
    "group_norm",
    lambda lib, x, *wb, **kw: lib.nn.functional.group_norm(x, 2, *wb, **kw),
    [S(A(2, 4, 3), A(4), A(4)), S(A(3, 6, 2, 2), A(6), A(6), eps=1e-3), S(NC(3, 4))],
    needs=("nn.functional.group_norm",),
)
op(
    "layer_norm_plain",
    lambda lib, x: lib.nn.functional.layer_norm(x, x.shape[-1:]),
    [S(A(3, 4)), S(A(2, 3, 5))],
    needs=("nn.functional.layer_norm",),
)
op(
    "batch_norm_training",
    lambda lib, x, w, b: lib.nn.functional.batch_norm(x, None, None, w, b, training=True),
    [S(A(5, 3), A(3), A(3)), S(A(4, 2, 3), A(2), A(2)), S(NC(4, 3), A(3), A(3))],
    needs=("nn.functional.batch_norm",),
)
op(
    "batch_norm_eval",
    lambda lib, x, w, b, rm, rv: lib.nn.functional.batch_norm(x, rm, rv, w, b, eps=1e-3),
    [
        S(
            A(5, 3),
            A(3),
            A(3),
            Const([0.1, -0.2, 0.3], "float64"),
            Const([0.5, 1.5, 2.0], "float64"),
        )
    ],
    needs=("nn.functional.batch_norm",),
)
op(
    "embedding",
    lambda lib, idx, w, **kw: lib.nn.functional.embedding(idx, w, **kw),
    [
        # padding_idx is left out: its rows' gradient is zero by design,
        # not the derivative (tested in test_nn.py)
        S(Const([[1, 2], [0, 1]]), A(4, 3)),
        S(Const([3, 0, 3, 2]), NC(4, 3)),
    ],
    needs=("nn.functional.embedding",),
)


# -- combining and NaN-aware ops ------------------------------------------------
op(
    "tensordot",
    lambda lib, a, b, **kw: lib.tensordot(a, b, **kw),
    [
        S(A(2, 3), A(3, 4), dims=1),
        S(A(2, 3, 4), A(3, 4, 2)),
        S(A(3, 2, 4), A(4, 3), dims=([0, 2], [1, 0])),
        S(NC(3, 4), A(4, 2), dims=1),
    ],
)
op(
    "kron",
    lambda lib, a, b: lib.kron(a, b),
    # (no non-contiguous sample: torch's kron rejects one with a view error)
    [S(A(2, 3), A(2, 2)), S(A(3), A(2, 2)), S(A(2, 1, 2), A(3, 2))],
    api=("Tensor.kron",),
)
op(
    "cross",
    lambda lib, a, b, **kw: lib.linalg.cross(a, b, **kw),
    [S(A(4, 3), A(4, 3)), S(A(3, 2), A(3, 1), dim=0), S(NC(2, 3), A(1, 3))],
    needs=("linalg.cross",),
    api=("cross", "Tensor.cross"),
)
op(
    "diff",
    lambda lib, x, *rest, **kw: lib.diff(x, **kw),
    [S(A(5)), S(A(3, 4), n=2, dim=0), S(NC(3, 4), n=1)],
    api=("Tensor.diff",),
)
op(
    "diff_prepend",
    lambda lib, x, p, a: lib.diff(x, prepend=p, append=a),
    [S(A(2, 4), A(2, 1), A(2, 2))],
    needs=("diff",),
)
op(
    "take_along_dim",
    lambda lib, x, i, **kw: lib.take_along_dim(x, i, **kw),
    [
        S(A(2, 3), Const([[2, 0], [1, 1]]), dim=1),
        S(A(2, 3), Const([5, 0, 3])),
        S(A(3, 4), Const([[0, 2, 1, 0]]), dim=0),
    ],
    api=("Tensor.take_along_dim",),
)
op(
    "rot90",
    lambda lib, x, **kw: lib.rot90(x, **kw),
    [S(A(2, 3)), S(A(2, 3, 4), k=2, dims=[1, 2]), S(NC(3, 4), k=-1)],
    api=("Tensor.rot90",),
)
op(
    "meshgrid",
    lambda lib, a, b: lib.meshgrid(a, b, indexing="xy"),
    [S(A(3), A(2))],
)
op(
    "stacks",
    lambda lib, a, b: (
        lib.vstack([a, b]),
        lib.hstack([a, b]),
        lib.dstack([a, b]),
        lib.column_stack([a, b]),
    ),
    [S(A(4), A(4)), S(A(2, 3), A(2, 3))],
    needs=("vstack", "hstack", "dstack", "column_stack"),
)
op(
    "nan_to_num",
    lambda lib, x, **kw: lib.nan_to_num(x, **kw),
    [S(A(3, 4)), S(A(2, 3), nan=1.0, posinf=2.0)],
    api=("Tensor.nan_to_num",),
)
op(
    "nansum",
    lambda lib, x, **kw: lib.nansum(x, **kw),
    [S(A(3, 4)), S(A(3, 4), dim=1, keepdim=True)],
    api=("Tensor.nansum",),
)
op(
    "nanmean",
    lambda lib, x, **kw: lib.nanmean(x, **kw),
    [S(A(3, 4)), S(A(3, 4), dim=0)],
    api=("Tensor.nanmean",),
)

op(
    "repeat_interleave",
    lambda lib, x, r, **kw: lib.repeat_interleave(x, r, **kw),
    [S(A(3), 2), S(A(2, 3), Const([1, 0, 2]), dim=1), S(NC(3, 2), 2, dim=0)],
    api=("Tensor.repeat_interleave",),
)
op(
    "var_mean",
    lambda lib, x, **kw: lib.var_mean(x, **kw),
    [S(A(3, 4)), S(A(3, 4), dim=1, keepdim=True), S(A(2, 3), dim=0, correction=0)],
)
op(
    "std_mean",
    lambda lib, x, **kw: lib.std_mean(x, **kw),
    [S(A(3, 4)), S(A(3, 4), dim=1)],
)

# torch.linalg and its top-level relatives: op_registry_linalg.py.
from op_registry_linalg import add_entries as _add_linalg_entries  # noqa: E402

_add_linalg_entries(op, S)

# torch.special: op_registry_special.py.
from op_registry_special import add_entries as _add_special_entries  # noqa: E402

_add_special_entries(op, S)

REGISTRY_BY_NAME = {e.name: e for e in REGISTRY}


def by_name(name: str) -> Optional[OpEntry]:
    return REGISTRY_BY_NAME.get(name)
