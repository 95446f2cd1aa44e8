"""The op registry: every differentiable op listed once, like torch's OpInfo.

Each :class:`OpEntry` names an op, gives a function ``fn(lib, *args, **kwargs)``
that runs it through a library module (``ferrograd`` or ``torch``: the code is
the same for both) and a list of :class:`Sample` inputs. Tests in
``test_registry.py`` run every entry through a float64 central-difference
gradcheck, a second-order (gradgrad) check and a comparison with torch.

Adding an op = adding one entry to its family's module: ``op_registry_pointwise``,
``op_registry_reduce_views``, ``op_registry_join``, ``op_registry_linalg`` or
``op_registry_special`` (this module holds the machinery and loads them in
order). Ops of the unary and binary op tables need no entry: they come from
``_C._op_table()``.

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


# The entries, in registry order: each module appends its ops when loaded
# (they import this module's helpers, defined above).
import op_registry_pointwise  # noqa: E402, F401
import op_registry_reduce_views  # noqa: E402, F401
import op_registry_join  # noqa: E402, F401

# torch.linalg and its top-level relatives: op_registry_linalg.py.
from op_registry_linalg import add_entries as _add_linalg_entries  # noqa: E402

_add_linalg_entries(op, S)

# torch.special: op_registry_special.py.
from op_registry_special import add_entries as _add_special_entries  # noqa: E402

_add_special_entries(op, S)

REGISTRY_BY_NAME = {e.name: e for e in REGISTRY}


def by_name(name: str) -> Optional[OpEntry]:
    return REGISTRY_BY_NAME.get(name)
