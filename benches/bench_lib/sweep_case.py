"""sweep.py's operator case model: ``Arg`` (one input: shape, dtype, layout,
values), ``OpCase`` (an op, its inputs, mode and numpy reference, turned into
a compare.py ``Workload``) and the numpy references the tables use.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .workloads import Case, Workload, _np

F32, F64, I64, I32, U8 = "f32", "f64", "i64", "i32", "u8"
F16, BF16 = "f16", "bf16"
# 2-byte floats are drawn in float32 and cast by the library (numpy has no
# bfloat16); their cases have no numpy reference
LOW = {F16: "float16", BF16: "bfloat16"}
NP_DTYPE = {
    F32: np.float32,
    F64: np.float64,
    I64: np.int64,
    I32: np.int32,
    U8: np.uint8,
    F16: np.float32,
    BF16: np.float32,
}
# The integer dtypes: no gradients; values from a small integer range.
INTS = (I64, I32, U8)
FWD, BWD = "fwd", "fwd+bwd"
# Families whose cases are elementwise (the stride penalty's target applies).
ELEMENTWISE = ("unary", "binary", "compare", "broadcast", "copy")
STRIDE_TARGET = 1.5

# ----------------------------------------------------------------------------
# Operator cases
# ----------------------------------------------------------------------------


def _prod(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _shape_str(shape):
    return "x".join(str(s) for s in shape) if len(shape) else "scalar"


@dataclass
class Arg:
    """One input of an op case: its logical shape, dtype, layout and value
    domain, or ``gen(rng) -> ndarray`` for fixed data (indices, masks)."""

    shape: tuple
    dtype: str = F32
    layout: str = "contig"  # contig, t, perm, step, expand
    dom: str = "normal"  # normal, pos, unit, int
    grad: bool = True
    gen: Callable | None = None
    perm: tuple | None = None  # for layout perm/nhwc: base.permute(*perm)

    def _perm(self):
        if self.perm is not None:
            return self.perm
        nd = len(self.shape)
        return tuple(range(1, nd)) + (0,)

    def base_shape(self):
        s = tuple(self.shape)
        if self.layout == "t":
            return s[:-2] + (s[-1], s[-2])
        if self.layout in ("perm", "nhwc"):
            perm = self._perm()
            base = [0] * len(s)
            for i, p in enumerate(perm):
                base[p] = s[i]
            return tuple(base)
        if self.layout == "step":
            return s[:-1] + (2 * s[-1],)
        if self.layout == "expand":
            return s[:-1] + (1,)
        return s

    def make_base(self, rng):
        if self.gen is not None:
            return np.ascontiguousarray(self.gen(rng))
        shape = self.base_shape()
        if self.dtype in INTS:
            hi = 4 if self.dom == "small" else (100 if self.dtype == U8 else 1000)
            lo = 0 if self.dtype == U8 else -hi
            return rng.integers(lo, hi, size=shape).astype(NP_DTYPE[self.dtype])
        dt = NP_DTYPE[self.dtype]
        if self.dom == "pos":
            a = rng.random(size=shape, dtype=dt) * dt(1.9) + dt(0.1)
        elif self.dom == "unit":
            a = rng.random(size=shape, dtype=dt) * dt(2.0) - dt(1.0)
        else:
            a = rng.standard_normal(size=shape, dtype=dt)
        return np.ascontiguousarray(a, dtype=dt)

    def view(self, x, is_np=False):
        """The logical input from its contiguous base (tensor or ndarray)."""
        if self.gen is not None or self.layout == "contig":
            return x
        if self.layout == "t":
            return np.swapaxes(x, -1, -2) if is_np else x.transpose(-1, -2)
        if self.layout in ("perm", "nhwc"):
            perm = self._perm()
            return x.transpose(perm) if is_np else x.permute(*perm)
        if self.layout == "step":
            return x[..., ::2]
        if self.layout == "expand":
            return np.broadcast_to(x, self.shape) if is_np else x.expand(*self.shape)
        raise ValueError(self.layout)

    def read_bytes(self, base):
        """Bytes an op reads of this input (logical, but stored for expand)."""
        logical = _prod(self.shape) * base.itemsize if self.gen is None else base.nbytes
        return min(logical, base.nbytes)


def _np_f(t):
    """`t` as a numpy array; 2-byte floats widened to float32 first."""
    t = t.detach()
    if t.is_floating_point() and t.element_size() == 2:
        t = t.float()
    return _np(t)


def _out_bytes(y):
    if isinstance(y, (tuple, list)):
        return sum(_out_bytes(t) for t in y)
    return y.numel() * y.element_size()


@dataclass
class OpCase:
    family: str
    op: str
    layout: str
    dtype: str
    size: str  # size label used in the name, e.g. "1000x1000"
    numel: int  # elements of the main input
    mode: str  # FWD or BWD
    args: list
    fn: Callable  # fn(L, *inputs) -> tensor
    ref: Callable | None = None  # ref(*numpy inputs) -> forward output
    kind: str = "mem"  # mem (GB/s) or flop (GFLOP/s)
    fwd_flops: float = 0.0
    quick: bool = False
    meta: dict = field(default_factory=dict)

    @property
    def name(self):
        return f"{self.family}/{self.op}/{self.layout}/{self.dtype}/{self.size}/{self.mode}"

    @property
    def seed(self):
        # fwd and fwd+bwd share their inputs
        return zlib.crc32(self.name.rsplit("/", 1)[0].encode())

    def inputs_numpy(self):
        rng = np.random.default_rng(self.seed)
        return [a.make_base(rng) for a in self.args]

    def differentiable(self, arg):
        return self.mode == BWD and arg.grad and arg.gen is None and arg.dtype not in INTS

    def make(self, L, quick=False, bases=None):
        """A compare.Case for library L (inputs from ``bases``, the numpy
        arrays of ``inputs_numpy()``, when given)."""
        if bases is None:
            bases = self.inputs_numpy()
        tensors, leaves = [], []
        for a, b in zip(self.args, bases):
            t = L.from_numpy(b.copy())
            if a.dtype in LOW:
                t = t.to(getattr(L, LOW[a.dtype]))
            t = a.view(t)
            if self.differentiable(a):
                t = t.detach().requires_grad_(True)
                leaves.append(t)
            tensors.append(t)
        y0 = self.fn(L, *tensors)
        self.meta["out_bytes"] = _out_bytes(y0)
        self.meta["in_bytes"] = sum(a.read_bytes(b) for a, b in zip(self.args, bases))
        self.meta["grad_bytes"] = sum(
            a.read_bytes(b) for a, b in zip(self.args, bases) if self.differentiable(a)
        )
        out = {}
        if self.mode == FWD:

            def run():
                out["y"] = self.fn(L, *tensors)

            return Case(run, lambda: [_np_f(out["y"])])
        if not leaves:
            raise ValueError("fwd+bwd case without a differentiable input")
        g = np.random.default_rng(self.seed + 1).standard_normal(tuple(y0.shape))
        gout = L.from_numpy(np.array(g, dtype=_np_f(y0).dtype)).to(y0.dtype)
        del y0

        def run():
            for t in leaves:
                t.grad = None
            y = self.fn(L, *tensors)
            y.backward(gout)
            out["y"] = y

        return Case(run, lambda: [_np_f(out["y"])] + [_np_f(t.grad) for t in leaves])

    def nbytes(self, quick=False):
        m = self.meta
        if "out_bytes" not in m:
            return None
        if self.mode == FWD:
            return m["in_bytes"] + m["out_bytes"]
        return m["in_bytes"] + 2 * m["grad_bytes"] + 2 * m["out_bytes"]

    def flops(self, quick=False):
        # fwd+bwd: the forward product and one for each operand's gradient
        return self.fwd_flops * (3 if self.mode == BWD else 1)

    def workload(self):
        rtol = 2e-2 if any(a.dtype in LOW for a in self.args) else 1e-3
        if self.kind == "flop":
            return Workload(self.name, self.name, self.make, flops=self.flops, rtol=rtol)
        return Workload(self.name, self.name, self.make, nbytes=self.nbytes, rtol=rtol)

    def numpy_reference(self, bases=None):
        """The forward output computed by numpy from the same inputs, or
        None where the case has no cheap reference."""
        if self.ref is None:
            return None
        if bases is None:
            bases = self.inputs_numpy()
        xs = [a.view(b, is_np=True) for a, b in zip(self.args, bases)]
        return np.asarray(self.ref(*xs))


# numpy references ---------------------------------------------------------------


def _np_erf(x):
    """erf by Abramowitz and Stegun 7.1.26 (absolute error < 1.5e-7)."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return s * (1.0 - poly * np.exp(-a * a))


def _np_gelu(x):
    x64 = x.astype(np.float64)
    return (0.5 * x64 * (1.0 + _np_erf(x64 / math.sqrt(2.0)))).astype(x.dtype)


def _np_sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _np_softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _np_log_softmax(x, dim):
    m = x.max(axis=dim, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True))


def _np_layer_norm(x, w, b):
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=-1, keepdims=True)
    var = x64.var(axis=-1, keepdims=True)
    return ((x64 - mu) / np.sqrt(var + 1e-5) * w + b).astype(x.dtype)


def _np_logsumexp(x, dim):
    m = x.max(axis=dim, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=dim, keepdims=True))).squeeze(dim)


def _np_conv2d(x, w, b, stride, pad):
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho = (h + 2 * pad - kh) // stride + 1
    wo = (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, ho, wo), dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i : i + stride * ho : stride, j : j + stride * wo : stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return (out + b[None, :, None, None]).astype(x.dtype)


def _np_pool(x, k, s, p, kind):
    h, w = x.shape[-2:]
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=fill)
    ho = (h + 2 * p - k) // s + 1
    wo = (w + 2 * p - k) // s + 1
    wins = [xp[:, :, i : i + s * ho : s, j : j + s * wo : s] for i in range(k) for j in range(k)]
    st = np.stack(wins)
    return (st.max(axis=0) if kind == "max" else st.mean(axis=0)).astype(x.dtype)
