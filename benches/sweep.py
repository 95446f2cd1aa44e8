"""Broad benchmark sweep of ferrograd against torch (issue 22: speed on every
layout, dtype and core count).

Two sweeps, each case written once against the torch-compatible API so the
same code runs on both libraries, in one process, interleaved (ferrograd,
torch, ferrograd, torch, ...), ``--repeats`` samples per library, medians:

* the OPERATOR sweep: op families (unary and binary elementwise, comparisons,
  broadcasting, reductions, softmax/layer_norm, indexing, cat/stack, copies,
  matmul/bmm/einsum, conv2d, pooling) crossed with layouts (contig, t:
  transposed, perm: permuted, step: ``[..., ::2]``, expand: stride 0, mixed:
  one operand transposed, nhwc: channels-last), dtypes (f32, f64, i64 where
  the op takes integers) and sizes from 1e2 to 1e7 elements, each forward
  only (fwd) and, where the op has a backward, forward and backward
  (fwd+bwd: ``y.backward(g)`` with a fixed random g);
* the MODEL sweep: end-to-end training steps (forward, backward, optimizer
  step) of small models.

Reported: the ratio ferrograd_time / torch_time (lower is better) per case;
per family the geometric mean and the worst case; for memory-bound cases the
achieved GB/s and its fraction of a bandwidth probe, for matmul/conv GFLOP/s
and the fraction of a GEMM probe; for every case on a non-contiguous layout
its "stride penalty" (its time over the time of the same op, size, dtype and
mode on contiguous inputs; target <= 1.5 for elementwise ops). Never asserts
a timing.

    python benches/sweep.py --threads 2 --json sweep.json
    python benches/sweep.py --quick                   # smoke test
    python benches/sweep.py --only unary/exp,matmul --repeats 5
    python benches/sweep.py --models-only             # or --ops-only
    python benches/sweep.py --list                    # case names

Case names read family/op/layout/dtype/size/mode, e.g.
``reduce/sum(dim=1)/contig/f32/100x100x100/fwd+bwd``; ``--only`` takes
comma-separated substrings of them (or of model names).

On a non-contiguous layout the op's input is a detached view made a leaf
(``x.t().detach().requires_grad_()``), so fwd+bwd times the op's forward and
backward on that layout and no copy of the view's own backward.

Byte counts for GB/s are a model of the minimal traffic of an unfused eager
op: fwd reads every input once and writes the output (I + O bytes); fwd+bwd
adds reading the output gradient and one saved tensor per differentiable
input and writing the input gradients (I + 2 I_grad + 2 O). Inputs count
their logical elements, except an expanded (stride-0) input, which counts its
stored ones. GFLOP/s of matmul/conv count 2 flops (a multiply and an add)
per product term, and three products for fwd+bwd; float64 matmul/conv rates
are given as a fraction of half the float32 GEMM probe.

The stride penalty compares a case with its contiguous twin: for elementwise
families the same op, dtype, mode and element count, for the others the same
op, dtype, mode and size label.

The load column is the number of CPUs that other processes kept busy while
the case ran (from /proc/stat). On a machine shared with other work, torch's
OpenMP team waits for a descheduled thread at every parallel region and slows
by up to orders of magnitude (ferrograd's pool less so): ratios taken under
load are not comparable with a quiet run.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import math
import os
import sys
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable


def _early_threads(argv) -> int:
    """Reads --threads from argv before numpy/torch are imported, so BLAS
    and OpenMP pools are sized from the start (as compare.py does)."""
    for i, arg in enumerate(argv):
        if arg == "--threads" and i + 1 < len(argv):
            return int(argv[i + 1])
        if arg.startswith("--threads="):
            return int(arg.split("=", 1)[1])
    return 2


if __name__ == "__main__":
    _n = str(_early_threads(sys.argv))
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _n

import numpy as np  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))


def load_compare():
    """benches/compare.py as a module (the harness: timing, probes, machine)."""
    name = "ferrograd_bench_compare"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, "compare.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


compare = load_compare()
Case = compare.Case
Workload = compare.Workload
_np = compare._np

F32, F64, I64 = "f32", "f64", "i64"
NP_DTYPE = {F32: np.float32, F64: np.float64, I64: np.int64}
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
        if self.dtype == I64:
            hi = 4 if self.dom == "small" else 1000
            return rng.integers(-hi, hi, size=shape, dtype=np.int64)
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
        return self.mode == BWD and arg.grad and arg.gen is None and arg.dtype != I64

    def make(self, L, quick=False, bases=None):
        """A compare.Case for library L (inputs from ``bases``, the numpy
        arrays of ``inputs_numpy()``, when given)."""
        if bases is None:
            bases = self.inputs_numpy()
        tensors, leaves = [], []
        for a, b in zip(self.args, bases):
            t = a.view(L.from_numpy(b.copy()))
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

            return Case(run, lambda: [_np(out["y"])])
        if not leaves:
            raise ValueError("fwd+bwd case without a differentiable input")
        g = np.random.default_rng(self.seed + 1).standard_normal(tuple(y0.shape))
        gout = L.from_numpy(np.array(g, dtype=y0.detach().numpy().dtype))
        del y0

        def run():
            for t in leaves:
                t.grad = None
            y = self.fn(L, *tensors)
            y.backward(gout)
            out["y"] = y

        return Case(run, lambda: [_np(out["y"])] + [_np(t.grad) for t in leaves])

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
        if self.kind == "flop":
            return Workload(self.name, self.name, self.make, flops=self.flops)
        return Workload(self.name, self.name, self.make, nbytes=self.nbytes)

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


# Case tables -----------------------------------------------------------------------

# Element counts and the 2-D / 3-D shapes used for them.
SHAPES2 = {
    100: (10, 10),
    10_000: (100, 100),
    1_000_000: (1000, 1000),
    10_000_000: (2500, 4000),
}
SHAPE3 = (100, 100, 100)

UNARY = {
    # name: (fn, numpy reference, value domain)
    "exp": (lambda L, x: x.exp(), np.exp, "unit"),
    "tanh": (lambda L, x: x.tanh(), np.tanh, "normal"),
    "sigmoid": (lambda L, x: x.sigmoid(), _np_sigmoid, "normal"),
    "relu": (lambda L, x: x.relu(), lambda x: np.maximum(x, 0), "normal"),
    "gelu": (lambda L, x: L.nn.functional.gelu(x), _np_gelu, "normal"),
    "sin": (lambda L, x: x.sin(), np.sin, "normal"),
    "log": (lambda L, x: x.log(), np.log, "pos"),
    "sqrt": (lambda L, x: x.sqrt(), np.sqrt, "pos"),
}

BINARY = {
    # name: (fn, numpy reference, domain of a, domain of b)
    "add": (lambda L, a, b: a + b, np.add, "normal", "normal"),
    "mul": (lambda L, a, b: a * b, np.multiply, "normal", "normal"),
    "div": (lambda L, a, b: a / b, np.divide, "normal", "pos"),
    "pow": (lambda L, a, b: a.pow(b), np.power, "pos", "unit"),
    "maximum": (lambda L, a, b: L.maximum(a, b), np.maximum, "normal", "normal"),
}

COMPARE = {
    "gt": (lambda L, a, b: a > b, np.greater),
    "eq": (lambda L, a, b: a == b, np.equal),
}


class _Builder:
    def __init__(self):
        self.cases: list[OpCase] = []

    def add(
        self,
        family,
        op,
        args,
        fn,
        ref=None,
        *,
        layout=None,
        dtype=None,
        size=None,
        numel=None,
        modes=(FWD, BWD),
        kind="mem",
        fwd_flops=0.0,
        quick=False,
    ):
        """Adds the case in each mode; layout, dtype, size label and element
        count default to the first input's."""
        a0 = args[0]
        layout = layout or a0.layout
        dtype = dtype or a0.dtype
        size = size or _shape_str(a0.shape)
        numel = numel or _prod(a0.shape)
        for mode in modes:
            self.cases.append(
                OpCase(
                    family,
                    op,
                    layout,
                    dtype,
                    size,
                    numel,
                    mode,
                    list(args),
                    fn,
                    ref,
                    kind,
                    fwd_flops,
                    quick,
                )
            )


def _lay_shape(n, layout):
    return SHAPE3 if layout == "perm" else SHAPES2[n]


def _unary_cases(b):
    def add(op, n, layout, dtype, quick=False):
        fn, ref, dom = UNARY[op]
        b.add("unary", op, [Arg(_lay_shape(n, layout), dtype, layout, dom)], fn, ref, quick=quick)

    for op in UNARY:
        add(op, 1_000_000, "contig", F32)
    for op in ("exp", "tanh", "relu"):
        for n in (100, 10_000, 10_000_000):
            add(op, n, "contig", F32, quick=(op == "exp" and n == 10_000))
        for layout in ("t", "perm", "step", "expand"):
            add(op, 1_000_000, layout, F32)
    add("exp", 10_000, "t", F32, quick=True)
    add("tanh", 10_000_000, "t", F32)
    add("tanh", 10_000_000, "step", F32)
    for op in ("exp", "tanh", "sigmoid", "sqrt"):
        add(op, 1_000_000, "contig", F64)
    for layout in ("t", "step"):
        add("tanh", 1_000_000, layout, F64)


def _binary_cases(b):
    def add(op, n, layout, dtype, quick=False):
        fn, ref, da, db = BINARY[op]
        shape = _lay_shape(n, layout)
        la, lb = ("contig", "t") if layout == "mixed" else (layout, layout)
        if dtype == I64:
            da = db = "int"
        args = [Arg(shape, dtype, la, da), Arg(shape, dtype, lb, db)]
        modes = (FWD,) if dtype == I64 else (FWD, BWD)
        b.add("binary", op, args, fn, ref, layout=layout, modes=modes, quick=quick)

    for op in BINARY:
        add(op, 1_000_000, "contig", F32)
    for op in ("add", "mul"):
        for n in (100, 10_000, 10_000_000):
            add(op, n, "contig", F32, quick=(op == "add" and n == 10_000))
        for layout in ("t", "mixed", "step", "perm"):
            add(op, 1_000_000, layout, F32)
    add("add", 10_000, "mixed", F32, quick=True)
    add("mul", 10_000_000, "mixed", F32)
    for op in ("add", "mul", "div", "pow"):
        add(op, 1_000_000, "contig", F64)
    for op in ("add", "mul"):
        add(op, 1_000_000, "contig", I64)
    for n in (10_000, 10_000_000):
        add("add", n, "contig", I64)
    add("add", 1_000_000, "t", I64)

    # where(cond, a, b) with a precomputed bool mask
    shape = SHAPES2[1_000_000]
    for layout, dtype in (("contig", F32), ("t", F32), ("contig", F64)):
        cond = Arg(shape, gen=lambda r: r.random(shape) > 0.5, grad=False)
        args = [cond, Arg(shape, dtype, layout), Arg(shape, dtype, layout)]
        b.add(
            "binary",
            "where",
            args,
            lambda L, c, x, y: L.where(c, x, y),
            np.where,
            layout=layout,
            dtype=dtype,
        )


def _compare_cases(b):
    def add(op, shape, dtype, layout="contig", quick=False):
        dom = "small" if dtype == I64 else "normal"
        args = [Arg(shape, dtype, layout, dom, grad=False) for _ in range(2)]
        b.add("compare", op, args, *COMPARE[op], modes=(FWD,), quick=quick)

    s6 = SHAPES2[1_000_000]
    for op in COMPARE:
        for dtype in (F32, I64):
            add(op, s6, dtype)
    for layout in ("t", "step"):
        add("gt", s6, F32, layout)
    add("gt", SHAPES2[10_000], I64, quick=True)


def _broadcast_cases(b):
    add_fn, mul_fn = BINARY["add"][0], BINARY["mul"][0]

    def row_bias(n, dtype=F32, layout="contig", quick=False):
        r, c = SHAPES2[n]
        dom = "int" if dtype == I64 else "normal"
        args = [Arg((r, c), dtype, layout, dom), Arg((c,), dtype, dom=dom)]
        modes = (FWD,) if dtype == I64 else (FWD, BWD)
        b.add(
            "broadcast",
            "row_bias_add",
            args,
            add_fn,
            np.add,
            size=f"{r}x{c}+{c}",
            modes=modes,
            quick=quick,
        )

    for n in (10_000, 1_000_000, 10_000_000):
        row_bias(n, quick=(n == 10_000))
    row_bias(1_000_000, layout="t")
    row_bias(1_000_000, F64)
    row_bias(1_000_000, I64)
    r, c = SHAPES2[1_000_000]
    b.add(
        "broadcast",
        "col_bias_add",
        [Arg((r, c)), Arg((r, 1))],
        add_fn,
        np.add,
        size=f"{r}x{c}+{r}x1",
    )
    b.add(
        "broadcast",
        "row_scale_mul",
        [Arg((r, c)), Arg((c,))],
        mul_fn,
        np.multiply,
        size=f"{r}x{c}*{c}",
    )
    for r, c in (SHAPES2[1_000_000], SHAPES2[10_000_000]):
        b.add(
            "broadcast",
            "outer_mul",
            [Arg((r, 1)), Arg((1, c))],
            mul_fn,
            np.multiply,
            size=f"{r}x1*1x{c}",
            numel=r * c,
        )


def _dim_label(dim):
    if dim is None:
        return "all"
    if isinstance(dim, tuple):
        return "(" + ",".join(str(d) for d in dim) + ")"
    return str(dim)


def _reduce_op(op, dim):
    """(label, fn, numpy reference, differentiable) of a reduction."""
    lab = f"{op}(dim={_dim_label(dim)})"
    kw = {} if dim is None else {"dim": dim}
    ax = dim
    if op == "sum":
        return lab, lambda L, x: x.sum(**kw), lambda x: x.sum(axis=ax), True
    if op == "mean":
        return lab, lambda L, x: x.mean(**kw), lambda x: x.mean(axis=ax), True
    if op == "amax":
        return lab, lambda L, x: x.amax(dim=dim), lambda x: x.max(axis=ax), True
    if op == "max":
        lab = f"max(dim={_dim_label(dim)}).values"
        return lab, lambda L, x: L.max(x, dim=dim)[0], lambda x: x.max(axis=ax), True
    if op == "var":
        return lab, lambda L, x: x.var(**kw), lambda x: x.var(axis=ax, ddof=1), True
    if op == "norm":

        def ref(x):
            return np.sqrt((x.astype(np.float64) ** 2).sum(axis=ax))

        return lab, lambda L, x: x.norm(**kw), ref, True
    if op == "logsumexp":
        return lab, lambda L, x: L.logsumexp(x, dim=dim), lambda x: _np_logsumexp(x, ax), True
    if op == "argmax":
        return lab, lambda L, x: x.argmax(dim=dim), lambda x: x.argmax(axis=ax), False
    raise ValueError(op)


def _reduce_cases(b):
    def add(op, dim, shape, layout="contig", dtype=F32, quick=False):
        lab, fn, ref, diff = _reduce_op(op, dim)
        modes = (FWD, BWD) if diff and dtype != I64 else (FWD,)
        arg = Arg(shape, dtype, layout, "int" if dtype == I64 else "normal")
        b.add("reduce", lab, [arg], fn, ref, modes=modes, quick=quick)

    for dim in (None, 0, 1, -1, (0, 2)):
        add("sum", dim, SHAPE3)
    for n in (100, 10_000, 10_000_000):
        add("sum", None, SHAPES2[n], quick=(n == 10_000))
    for dim in (-1, (0, 2)):
        add("mean", dim, SHAPE3)
    for op in ("amax", "max", "logsumexp", "argmax"):
        for dim in (0, -1):
            add(op, dim, SHAPE3)
    for dim in (None, 0, -1):
        add("var", dim, SHAPE3)
    for dim in (None, -1):
        add("norm", dim, SHAPE3)
    add("sum", -1, SHAPES2[10_000], quick=True)
    add("sum", -1, SHAPES2[10_000], "t", quick=True)
    # layouts, 2-D 1000x1000 (each with its contiguous twin)
    s6 = SHAPES2[1_000_000]
    for op, dim, layouts in (
        ("sum", -1, ("contig", "t", "step")),
        ("sum", 0, ("contig", "t")),
        ("sum", None, ("contig", "t")),
        ("amax", -1, ("contig", "t")),
        ("var", -1, ("contig", "t")),
        ("logsumexp", -1, ("contig", "t")),
    ):
        for layout in layouts:
            add(op, dim, s6, layout)
    add("mean", 1, SHAPE3, "perm")
    add("mean", 1, SHAPE3)
    add("sum", -1, SHAPES2[10_000_000])
    add("sum", -1, SHAPES2[10_000_000], "t")
    for op, dim in (("sum", None), ("sum", -1), ("var", -1), ("norm", None)):
        add(op, dim, SHAPE3, dtype=F64)
    for dim in (None, -1):
        add("sum", dim, SHAPE3, dtype=I64)


def _softmax_cases(b):
    def sm(op, dim, shape, layout="contig", dtype=F32, quick=False):
        if op == "softmax":
            fn, ref = (lambda L, x: x.softmax(dim=dim)), (lambda x: _np_softmax(x, dim))
        else:
            fn, ref = (lambda L, x: x.log_softmax(dim=dim)), (lambda x: _np_log_softmax(x, dim))
        b.add("softmax", f"{op}(dim={dim})", [Arg(shape, dtype, layout)], fn, ref, quick=quick)

    def ln(shape, layout="contig", dtype=F32, quick=False):
        c = shape[-1]
        args = [Arg(shape, dtype, layout), Arg((c,), dtype, dom="pos"), Arg((c,), dtype)]

        def fn(L, x, w, bb):
            return L.nn.functional.layer_norm(x, (c,), w, bb)

        b.add("softmax", "layer_norm(last)", args, fn, _np_layer_norm, quick=quick)

    s6 = SHAPES2[1_000_000]
    for op in ("softmax", "log_softmax"):
        for dim in (-1, 0):
            sm(op, dim, s6)
    sm("softmax", -1, s6, "t")
    sm("softmax", -1, (100, 100), quick=True)
    sm("softmax", -1, (64, 64, 64))
    sm("softmax", -1, (10_000, 1000))
    sm("softmax", -1, s6, dtype=F64)
    sm("log_softmax", -1, (4096, 256))
    ln(s6)
    ln(s6, "t")  # the normalized dim is not the last in memory
    ln((100, 100), quick=True)
    ln((4096, 256))
    ln(s6, dtype=F64)


def _index_cases(b):
    def idx(shape, hi):
        return Arg(shape, gen=lambda r: r.integers(0, hi, size=shape, dtype=np.int64))

    def data(shape, dtype=F32, layout="contig"):
        return Arg(shape, dtype, layout, "int" if dtype == I64 else "normal")

    def add(op, args, fn, ref, size, quick=False):
        modes = (FWD,) if args[0].dtype == I64 else (FWD, BWD)
        b.add("index", op, args, fn, ref, size=size, modes=modes, quick=quick)

    def rows(n_rows, cols, k, dtype=F32, layout="contig", quick=False):
        add(
            "index_select(0)",
            [data((n_rows, cols), dtype, layout), idx((k,), n_rows)],
            lambda L, x, i: x.index_select(0, i),
            lambda x, i: x[i],
            f"{n_rows}x{cols}[{k}]",
            quick,
        )

    rows(10_000, 100, 5000)
    rows(100, 100, 50, quick=True)
    rows(1000, 1000, 500, layout="t")
    rows(1000, 1000, 500)
    rows(10_000, 100, 5000, F64)
    rows(10_000, 100, 5000, I64)
    s6 = SHAPES2[1_000_000]
    add(
        "index_select(1)",
        [data(s6), idx((500,), 1000)],
        lambda L, x, i: x.index_select(1, i),
        lambda x, i: x[:, i],
        "1000x1000[:,500]",
    )
    for dtype in (F32, I64):
        add(
            "gather(1)",
            [data(s6, dtype), idx((1000, 100), 1000)],
            lambda L, x, i: x.gather(1, i),
            lambda x, i: np.take_along_axis(x, i, 1),
            "1000x1000<-1000x100",
        )

    def np_scatter_add(x, i, s):
        out = x.copy()
        np.add.at(out, (i, np.arange(x.shape[1])[None, :]), s)
        return out

    add(
        "scatter_add(0)",
        [data(s6), idx(s6, 1000), data(s6)],
        lambda L, x, i, s: x.scatter_add(0, i, s),
        np_scatter_add,
        "1000x1000<-1000x1000",
    )
    for dtype in (F32, I64):
        add(
            "x[idx]",
            [data((10_000, 100), dtype), idx((5000,), 10_000)],
            lambda L, x, i: x[i],
            lambda x, i: x[i],
            "10000x100[5000]",
        )
    add(
        "x[:,idx]",
        [data(s6), idx((500,), 1000)],
        lambda L, x, i: x[:, i],
        lambda x, i: x[:, i],
        "1000x1000[:,500]",
    )
    add(
        "x[ri,ci]",
        [data(s6), idx((100_000,), 1000), idx((100_000,), 1000)],
        lambda L, x, i, j: x[i, j],
        lambda x, i, j: x[i, j],
        "1000x1000[100000 pts]",
    )
    mask = Arg(s6, gen=lambda r: r.random(s6) > 0.5, grad=False)
    add("x[mask]", [data(s6), mask], lambda L, x, m: x[m], lambda x, m: x[m], "1000x1000[mask]")


def _cat_cases(b):
    def cat(k, shape, dim, dtype=F32, layout="contig", big=False, quick=False):
        args = [Arg(shape, dtype, layout, "int" if dtype == I64 else "normal")] * k
        modes = (FWD,) if dtype == I64 or big else (FWD, BWD)
        b.add(
            "cat",
            f"cat(dim={dim})",
            args,
            lambda L, *xs: L.cat(xs, dim=dim),
            lambda *xs: np.concatenate(xs, axis=dim),
            size=f"{k}x{_shape_str(shape)}",
            numel=k * _prod(shape),
            modes=modes,
            quick=quick,
        )

    def stack(k, shape, dim, quick=False):
        b.add(
            "cat",
            f"stack(dim={dim})",
            [Arg(shape)] * k,
            lambda L, *xs: L.stack(xs, dim=dim),
            lambda *xs: np.stack(xs, axis=dim),
            size=f"{k}x{_shape_str(shape)}",
            numel=k * _prod(shape),
            quick=quick,
        )

    cat(4, (10, 25), 0, quick=True)
    cat(4, (250, 1000), 0)
    cat(4, (1000, 250), -1)
    cat(4, (250, 1000), 0, layout="t")
    cat(4, (1000, 250), -1, layout="t")
    cat(4, (250, 1000), 0, F64)
    cat(4, (250, 1000), 0, I64)
    cat(4, (2500, 1000), 0, big=True)
    cat(4, (2500, 1000), -1, big=True)
    stack(16, (625,), 0, quick=True)
    stack(16, (62_500,), 0)
    stack(16, (62_500,), -1)


def _copy_cases(b):
    def to_contig(L, x):
        return x.clone() if x.is_contiguous() else x.contiguous()

    def add(n, layout, dtype=F32, quick=False):
        arg = Arg(_lay_shape(n, layout), dtype, layout)
        b.add(
            "copy", "contiguous", [arg], to_contig, np.ascontiguousarray, modes=(FWD,), quick=quick
        )

    for layout in ("contig", "t", "perm", "step", "expand"):
        add(1_000_000, layout)
    add(10_000, "contig", quick=True)
    add(10_000, "t", quick=True)
    add(10_000_000, "contig")
    add(10_000_000, "t")
    add(1_000_000, "contig", F64)
    add(1_000_000, "t", F64)


def _matmul_cases(b):
    def mm(
        m,
        k,
        n,
        dtype=F32,
        la="contig",
        lb="contig",
        batch=(),
        fwd_only=False,
        quick=False,
        op="matmul",
        fn=None,
    ):
        a = Arg(batch + (m, k), dtype, la, dom="unit")
        bb = Arg(batch + (k, n), dtype, lb, dom="unit")
        # layout tag: contig, or c/t per operand (tc: a transposed)
        layout = "contig" if la == lb == "contig" else la[0] + lb[0]
        b.add(
            "matmul",
            op,
            [a, bb],
            fn or (lambda L, x, y: x @ y),
            np.matmul,
            layout=layout,
            size=f"{_shape_str(batch + (m, k))}@{_shape_str(batch + (k, n))}",
            numel=_prod(batch) * m * n,
            modes=(FWD,) if fwd_only else (FWD, BWD),
            kind="flop",
            fwd_flops=2.0 * _prod(batch) * m * k * n,
            quick=quick,
        )

    mm(16, 16, 16, batch=(1024,), quick=True)
    mm(16, 16, 16)
    mm(64, 64, 64, batch=(32,))
    mm(64, 64, 64, batch=(32,), lb="t")
    mm(256, 256, 256)
    mm(256, 256, 256, la="t")
    mm(256, 256, 256, lb="t")
    mm(256, 784, 512)
    mm(1024, 1024, 1024)
    mm(1024, 1024, 1024, la="t")
    mm(1024, 1024, 1024, lb="t")
    mm(256, 256, 256, F64)
    mm(1024, 1024, 1024, F64, fwd_only=True)
    mm(128, 128, 128, batch=(16,), op="bmm", fn=lambda L, x, y: L.bmm(x, y))
    mm(
        128,
        128,
        128,
        batch=(16,),
        op="einsum(bij,bjk->bik)",
        fn=lambda L, x, y: L.einsum("bij,bjk->bik", x, y),
    )
    # matrix-vector
    b.add(
        "matmul",
        "mv",
        [Arg((1024, 1024), dom="unit"), Arg((1024,), dom="unit")],
        lambda L, x, y: x @ y,
        np.matmul,
        size="1024x1024@1024",
        kind="flop",
        fwd_flops=2.0 * 1024 * 1024,
    )
    # a @ b.T as einsum, and attention scores q k^T
    b.add(
        "matmul",
        "einsum(ij,kj->ik)",
        [Arg((256, 256), dom="unit")] * 2,
        lambda L, p, q: L.einsum("ij,kj->ik", p, q),
        lambda p, q: p @ q.T,
        size="256x256,256x256",
        kind="flop",
        fwd_flops=2.0 * 256**3,
    )
    q = Arg((8, 4, 64, 32), dom="unit")
    b.add(
        "matmul",
        "einsum(bhqd,bhkd->bhqk)",
        [q, q],
        lambda L, p, r: L.einsum("bhqd,bhkd->bhqk", p, r),
        lambda p, r: np.einsum("bhqd,bhkd->bhqk", p, r),
        size="8x4x64x32,8x4x64x32",
        numel=8 * 4 * 64 * 64,
        kind="flop",
        fwd_flops=2.0 * 8 * 4 * 64 * 64 * 32,
    )


def _conv_cases(b):
    def conv(n, c, h, o, k, stride=1, pad=1, dtype=F32, layout="contig", quick=False):
        x = Arg((n, c, h, h), dtype, layout, dom="unit", perm=(0, 3, 1, 2))
        w = Arg((o, c, k, k), dtype, dom="unit")
        bias = Arg((o,), dtype, dom="unit")
        ho = (h + 2 * pad - k) // stride + 1
        b.add(
            "conv",
            "conv2d",
            [x, w, bias],
            lambda L, x, w, bb: L.nn.functional.conv2d(x, w, bb, stride=stride, padding=pad),
            lambda x, w, bb: _np_conv2d(x, w, bb, stride, pad),
            size=f"{_shape_str((n, c, h, h))}*{_shape_str((o, c, k, k))}/s{stride}p{pad}",
            kind="flop",
            fwd_flops=2.0 * n * o * ho * ho * c * k * k,
            quick=quick,
        )

    conv(1, 3, 32, 16, 3, quick=True)
    conv(8, 16, 32, 32, 3)
    conv(8, 16, 32, 32, 3, layout="nhwc")
    conv(16, 32, 16, 64, 3)
    conv(8, 16, 32, 32, 3, stride=2)
    conv(8, 64, 16, 64, 1, pad=0)
    conv(32, 3, 32, 16, 5, pad=2)
    conv(4, 8, 16, 16, 3, dtype=F64)


def _pool_cases(b):
    def pool(kind, shape, k, s, p=0, dtype=F32, layout="contig", quick=False):
        name = "max_pool2d" if kind == "max" else "avg_pool2d"
        b.add(
            "pool",
            f"{name}(k{k},s{s},p{p})",
            [Arg(shape, dtype, layout, perm=(0, 3, 1, 2))],
            lambda L, x: getattr(L.nn.functional, name)(x, k, s, p),
            lambda x: _np_pool(x, k, s, p, kind),
            quick=quick,
        )

    small, big = (8, 16, 32, 32), (8, 32, 64, 64)
    pool("max", (2, 4, 16, 16), 2, 2, quick=True)
    for kind in ("max", "avg"):
        for shape in (small, big):
            pool(kind, shape, 2, 2)
    pool("max", small, 3, 1, 1)
    pool("avg", small, 3, 1, 1)
    pool("max", big, 2, 2, layout="nhwc")
    pool("max", small, 2, 2, dtype=F64)


def op_cases():
    b = _Builder()
    for fn in (
        _unary_cases,
        _binary_cases,
        _compare_cases,
        _broadcast_cases,
        _reduce_cases,
        _softmax_cases,
        _index_cases,
        _cat_cases,
        _copy_cases,
        _matmul_cases,
        _conv_cases,
        _pool_cases,
    ):
        fn(b)
    # Drop exact duplicates (same name), keeping the first.
    seen, out = set(), []
    for c in b.cases:
        if c.name not in seen:
            seen.add(c.name)
            out.append(c)
    return out


# ----------------------------------------------------------------------------
# Model cases: training steps written once against the torch API
# ----------------------------------------------------------------------------


def _init_params(L, module, seed, dtype=np.float32):
    """Sets every parameter from a seeded numpy generator, so both libraries
    start from the same weights."""
    rng = np.random.default_rng(seed)
    with L.no_grad():
        for name, p in module.named_parameters():
            shape = tuple(p.shape)
            if len(shape) >= 2:
                bound = 1.0 / math.sqrt(_prod(shape[1:]))
                arr = rng.uniform(-bound, bound, shape)
            elif name.endswith("weight"):
                arr = 1.0 + 0.1 * rng.standard_normal(shape)
            else:
                arr = 0.1 * rng.uniform(-1.0, 1.0, shape)
            p.copy_(L.from_numpy(np.ascontiguousarray(arr, dtype=dtype)))


def _tensor(L, arr):
    return L.from_numpy(np.ascontiguousarray(arr))


def _train_case(L, model, opt, loss_fn, probe, per_example=False):
    """One training step: zero_grad, loss_fn() (which calls backward itself
    when per_example), backward, optimizer step."""
    out = {}

    def run():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn()
        if not per_example:
            loss.backward()
        opt.step()
        out["loss"] = loss.detach()

    return Case(run, lambda: [_np(out["loss"]), _np(probe.grad)])


def make_transformer(L, quick):
    nn, F = L.nn, L.nn.functional
    B, S, D, H, FF = (2, 16, 32, 2, 64) if quick else (8, 64, 64, 4, 256)
    dh = D // H

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(D)
            self.qkv = nn.Linear(D, 3 * D)
            self.proj = nn.Linear(D, D)
            self.ln2 = nn.LayerNorm(D)
            self.ff1 = nn.Linear(D, FF)
            self.ff2 = nn.Linear(FF, D)

        def forward(self, x):
            h = self.ln1(x)
            qkv = self.qkv(h).reshape(B, S, 3, H, dh).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
            o = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, S, D)
            x = x + self.proj(o)
            return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))

    model = Block()
    _init_params(L, model, 1)
    r = np.random.default_rng(11)
    x = _tensor(L, r.standard_normal((B, S, D), dtype=np.float32))
    y = _tensor(L, r.standard_normal((B, S, D), dtype=np.float32))
    opt = L.optim.Adam(model.parameters(), lr=1e-3)
    return _train_case(L, model, opt, lambda: F.mse_loss(model(x), y), model.qkv.weight)


def make_cnn(L, quick):
    nn, F = L.nn, L.nn.functional
    B = 4 if quick else 32

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 16, 3, padding=1)
            self.c2 = nn.Conv2d(16, 32, 3, padding=1)
            self.fc = nn.Linear(32 * 8 * 8, 10)

        def forward(self, x):
            x = F.max_pool2d(self.c1(x).relu(), 2)
            x = F.avg_pool2d(self.c2(x).relu(), 2)
            return self.fc(x.flatten(1))

    model = Net()
    _init_params(L, model, 2)
    r = np.random.default_rng(12)
    x = _tensor(L, r.standard_normal((B, 3, 32, 32), dtype=np.float32))
    y = _tensor(L, r.integers(0, 10, size=B, dtype=np.int64))
    opt = L.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return _train_case(L, model, opt, lambda: F.cross_entropy(model(x), y), model.c1.weight)


def make_lstm(L, quick):
    nn, F = L.nn, L.nn.functional
    B, In, Hd, T = (4, 8, 16, 5) if quick else (16, 32, 128, 20)

    class LSTM(nn.Module):
        """An LSTM cell from Linear layers, unrolled over T steps."""

        def __init__(self):
            super().__init__()
            self.wx = nn.Linear(In, 4 * Hd)
            self.wh = nn.Linear(Hd, 4 * Hd, bias=False)
            self.head = nn.Linear(Hd, 1)

        def forward(self, xs):
            h = c = None
            for t in range(T):
                gates = self.wx(xs[t]) if h is None else self.wx(xs[t]) + self.wh(h)
                i, f, g, o = gates.chunk(4, dim=1)
                i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
                c = i * g if c is None else f * c + i * g
                h = o * c.tanh()
            return self.head(h)

    model = LSTM()
    _init_params(L, model, 3)
    r = np.random.default_rng(13)
    xs = _tensor(L, r.standard_normal((T, B, In), dtype=np.float32))
    y = _tensor(L, r.standard_normal((B, 1), dtype=np.float32))
    opt = L.optim.Adam(model.parameters(), lr=1e-3)
    return _train_case(L, model, opt, lambda: F.mse_loss(model(xs), y), model.wx.weight)


def make_mlp_ln(L, quick):
    nn, F = L.nn, L.nn.functional
    B, dims = (16, [64, 64, 64, 10]) if quick else (128, [256, 512, 512, 10])
    layers = []
    for i, (a, o) in enumerate(zip(dims[:-1], dims[1:])):
        layers.append(nn.Linear(a, o))
        if i < len(dims) - 2:
            layers += [nn.LayerNorm(o), nn.GELU()]
    model = nn.Sequential(*layers)
    _init_params(L, model, 4)
    r = np.random.default_rng(14)
    x = _tensor(L, r.standard_normal((B, dims[0]), dtype=np.float32))
    y = _tensor(L, r.integers(0, dims[-1], size=B, dtype=np.int64))
    opt = L.optim.Adam(model.parameters(), lr=1e-3)
    return _train_case(L, model, opt, lambda: F.cross_entropy(model(x), y), model[0].weight)


def make_per_example(L, quick):
    nn, F = L.nn, L.nn.functional
    N = 4 if quick else 32
    model = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 10))
    _init_params(L, model, 5)
    r = np.random.default_rng(15)
    x = _tensor(L, r.standard_normal((N, 64), dtype=np.float32))
    y = _tensor(L, r.integers(0, 10, size=N, dtype=np.int64))
    opt = L.optim.SGD(model.parameters(), lr=0.01)

    def loss_fn():
        total = 0.0
        for i in range(N):
            loss = F.cross_entropy(model(x[i : i + 1]), y[i : i + 1])
            loss.backward()
            total = total + loss.detach()
        return total

    return _train_case(L, model, opt, loss_fn, model[0].weight, per_example=True)


def make_pinn_f64(L, quick):
    """A physics-informed MLP in float64: u(x, t) with the heat equation's
    residual u_t - 0.1 u_xx from second derivatives by double backward."""
    nn = L.nn
    N, W = (16, 8) if quick else (256, 32)
    model = nn.Sequential(
        nn.Linear(2, W), nn.Tanh(), nn.Linear(W, W), nn.Tanh(), nn.Linear(W, 1)
    ).double()
    _init_params(L, model, 6, np.float64)
    r = np.random.default_rng(16)
    pts = _tensor(L, r.uniform(-1.0, 1.0, (N, 2)))
    bc = _tensor(L, np.stack([r.uniform(-1, 1, N // 4), np.zeros(N // 4)], axis=1))
    bc_val = _tensor(L, np.sin(np.pi * bc.numpy()[:, :1]))
    opt = L.optim.Adam(model.parameters(), lr=1e-3)

    def loss_fn():
        xt = pts.detach().requires_grad_(True)
        u = model(xt)
        (du,) = L.autograd.grad(u.sum(), xt, create_graph=True)
        u_x, u_t = du[:, 0:1], du[:, 1:2]
        (d2,) = L.autograd.grad(u_x.sum(), xt, create_graph=True)
        res = u_t - 0.1 * d2[:, 0:1]
        return (res * res).mean() + ((model(bc) - bc_val) ** 2).mean()

    return _train_case(L, model, opt, loss_fn, model[0].weight)


def make_ode_f64(L, quick):
    """A neural ODE dy/dt = f(y) in float64, integrated by RK4 unrolled over
    20 steps, trained to hit a target state."""
    nn, F = L.nn, L.nn.functional
    B, D, W, steps = (4, 4, 8, 4) if quick else (64, 16, 64, 20)
    f = nn.Sequential(nn.Linear(D, W), nn.Tanh(), nn.Linear(W, D)).double()
    _init_params(L, f, 7, np.float64)
    r = np.random.default_rng(17)
    y0 = _tensor(L, r.standard_normal((B, D)))
    target = _tensor(L, r.standard_normal((B, D)))
    dt = 0.05
    opt = L.optim.SGD(f.parameters(), lr=0.01)

    def loss_fn():
        y = y0
        for _ in range(steps):
            k1 = f(y)
            k2 = f(y + (0.5 * dt) * k1)
            k3 = f(y + (0.5 * dt) * k2)
            k4 = f(y + dt * k3)
            y = y + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        return F.mse_loss(y, target)

    return _train_case(L, f, opt, loss_fn, f[0].weight)


MODELS = {
    w.name: w
    for w in [
        Workload(
            "transformer", "transformer encoder block, 8x64x64, 4 heads, Adam", make_transformer
        ),
        Workload("cnn", "CNN conv-relu-pool x2 + linear, 32x3x32x32, CE, SGD", make_cnn),
        Workload("lstm", "LSTM cell from Linear, 20 steps, 16x32->128, Adam", make_lstm),
        Workload("mlp_ln", "MLP 256-512-512-10 + LayerNorm + GELU, batch 128, Adam", make_mlp_ln),
        Workload(
            "per_example", "per-example loop: 32 x (1-row MLP, backward), SGD", make_per_example
        ),
        Workload(
            "pinn_f64", "f64 PINN 2-32-32-1 tanh, u_t - 0.1 u_xx, 256 pts, Adam", make_pinn_f64
        ),
        Workload("ode_rk4_f64", "f64 neural ODE, RK4 x 20 steps, 64x16, SGD", make_ode_f64),
    ]
}


# ----------------------------------------------------------------------------
# Running
# ----------------------------------------------------------------------------


def _classify(res, check):
    """Status of a case from bench_workload's result: ok, mismatch, missing
    (AttributeError/NotImplementedError on ferrograd), error, torch-error."""
    fg = res["results"].get("ferrograd", {})
    th = res["results"].get("torch")
    if "error" in fg:
        err = fg["error"]
        if err.startswith(("AttributeError", "NotImplementedError")):
            return "missing", err
        return "error", err
    if th is not None and "error" in th:
        return "torch-error", th["error"]
    if check and not check.get("ok", True):
        return "mismatch", f"max rel err {check.get('max_rel_err'):.3g}"
    return "ok", ""


def record_of(res, case=None):
    """A flat record of one bench_workload result (for tables and JSON)."""
    r = res["results"]
    fg, th = r.get("ferrograd", {}), r.get("torch", {})
    status, detail = _classify(res, res.get("check"))
    rec = {
        "name": res["title"],
        "status": status,
        "detail": detail,
        "fg_s": fg.get("median_s"),
        "torch_s": th.get("median_s"),
        "ratio": res["ratio"],
        "pairs": [res["pair_ratios"][0], res["pair_ratios"][-1]] if res["pair_ratios"] else None,
        "check": res.get("check"),
        "samples": {
            lib: {"samples": v.get("samples"), "number": v.get("number")}
            for lib, v in r.items()
            if "samples" in v
        },
    }
    for lib, key in (("ferrograd", "fg"), ("torch", "torch")):
        v = r.get(lib, {})
        for unit in ("gbps", "gflops"):
            if unit in v:
                rec[f"{key}_{unit}"] = v[unit]
    if case is not None:
        rec.update(
            family=case.family,
            op=case.op,
            layout=case.layout,
            dtype=case.dtype,
            size=case.size,
            numel=case.numel,
            mode=case.mode,
            kind=case.kind,
        )
        if case.kind == "flop":
            rec["flops"] = case.flops()
        else:
            rec["bytes"] = case.nbytes()
    return rec


def _cpu_snapshot():
    """(wall s, busy CPU s of the whole machine, CPU s of this process), to
    measure how much CPU other processes took while a case ran."""
    busy = None
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        busy = (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")  # minus idle, iowait
    except (OSError, ValueError, IndexError):
        pass
    t = os.times()
    return time.perf_counter(), busy, t.user + t.system


def foreign_load(before, after):
    """Average number of CPUs other processes kept busy between two
    snapshots (None where /proc/stat is unavailable)."""
    wall = after[0] - before[0]
    if before[1] is None or after[1] is None or wall <= 0:
        return None
    return max(0.0, ((after[1] - before[1]) - (after[2] - before[2])) / wall)


def run_cases(workloads, libs, repeats, target, pause=0.01, log=print, cases=None, quick=False):
    """Benches each workload on libs (interleaved) and returns the records.

    The objects alive at the start (torch's modules hold about a million)
    are frozen out of the garbage collector meanwhile: the harness collects
    before every sample, which otherwise takes 0.1-0.3 s with torch loaded.
    """
    gc.collect()
    gc.freeze()
    try:
        return _run_cases(workloads, libs, repeats, target, pause, log, cases, quick)
    finally:
        gc.unfreeze()


def _run_cases(workloads, libs, repeats, target, pause, log, cases, quick):
    records = []
    for i, wl in enumerate(workloads):
        snap = _cpu_snapshot()
        res = compare.bench_workload(wl, libs, quick, repeats, target, check=True, pause=pause)
        rec = record_of(res, cases[i] if cases else None)
        rec["name"] = wl.name
        rec["foreign_load"] = foreign_load(snap, _cpu_snapshot())
        records.append(rec)
        if log:
            log(_progress_line(rec, i + 1, len(workloads)))
        gc.collect()
    return records


def _progress_line(rec, i, n):
    ratio = f"{rec['ratio']:.2f}" if rec["ratio"] is not None else "-"
    s = (
        f"  [{i}/{n}] {rec['name']}: fg {compare._fmt_time(rec['fg_s'])}, "
        f"torch {compare._fmt_time(rec['torch_s'])}, ratio {ratio}"
    )
    if rec.get("foreign_load") is not None:
        s += f", other load {rec['foreign_load']:.1f} CPUs"
    if rec["status"] != "ok":
        s += f"  {rec['status'].upper()}: {rec['detail']}"
    return s


# ----------------------------------------------------------------------------
# Summary math
# ----------------------------------------------------------------------------


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def summarize(records, key="family"):
    """Per-group (and overall) geomean and worst of the ratios.

    Returns {"groups": {group: {...}}, "overall": {...}}; each entry has n
    (cases), timed (cases with a ratio), geomean, worst (ratio) and
    worst_case (its name), best/best_case, and counts of each non-ok status.
    """

    def stats(recs):
        timed = [r for r in recs if r.get("ratio") is not None]
        out = {"n": len(recs), "timed": len(timed), "geomean": geomean([r["ratio"] for r in timed])}
        if timed:
            w = max(timed, key=lambda r: r["ratio"])
            b = min(timed, key=lambda r: r["ratio"])
            out.update(worst=w["ratio"], worst_case=w["name"], best=b["ratio"], best_case=b["name"])
        else:
            out.update(worst=None, worst_case=None, best=None, best_case=None)
        for st in ("mismatch", "missing", "error", "torch-error"):
            out[st] = sum(1 for r in recs if r.get("status") == st)
        return out

    groups = {}
    for r in records:
        groups.setdefault(r.get(key, "?"), []).append(r)
    return {"groups": {g: stats(rs) for g, rs in groups.items()}, "overall": stats(records)}


def _twin_key(rec, layout="contig"):
    size = rec["numel"] if rec["family"] in ELEMENTWISE else rec["size"]
    return (rec["family"], rec["op"], rec["dtype"], rec["mode"], size, layout)


def stride_penalties(records):
    """For every case on a non-contiguous layout with a contiguous twin (same
    family, op, dtype, mode and size): its time over the twin's, for
    ferrograd and for torch. Elementwise families carry the target."""
    by_key = {_twin_key(r, r["layout"]): r for r in records if "family" in r}
    out = []
    for r in records:
        if "family" not in r or r["layout"] == "contig":
            continue
        twin = by_key.get(_twin_key(r))
        if twin is None:
            continue

        def pen(a, b):
            return a / b if a is not None and b else None

        fg_pen = pen(r.get("fg_s"), twin.get("fg_s"))
        th_pen = pen(r.get("torch_s"), twin.get("torch_s"))
        elementwise = r["family"] in ELEMENTWISE
        out.append(
            {
                "name": r["name"],
                "twin": twin["name"],
                "family": r["family"],
                "layout": r["layout"],
                "elementwise": elementwise,
                "fg_s": r.get("fg_s"),
                "fg_contig_s": twin.get("fg_s"),
                "fg_penalty": fg_pen,
                "torch_penalty": th_pen,
                "target": STRIDE_TARGET if elementwise else None,
                "ok": (fg_pen <= STRIDE_TARGET) if (elementwise and fg_pen is not None) else None,
            }
        )
    return out


def worst_cases(records, n=15):
    timed = [r for r in records if r.get("ratio") is not None]
    return sorted(timed, key=lambda r: r["ratio"], reverse=True)[:n]


def build_summary(op_records, model_records):
    return {
        "ops": summarize(op_records),
        "ops_by_layout": summarize([r for r in op_records if "layout" in r], key="layout"),
        "ops_by_dtype": summarize([r for r in op_records if "dtype" in r], key="dtype"),
        "models": summarize(model_records, key="name"),
        "stride_penalties": stride_penalties(op_records),
        "worst15": [
            {"name": r["name"], "ratio": r["ratio"]}
            for r in worst_cases(op_records + model_records)
        ],
        "not_ok": [
            {"name": r["name"], "status": r["status"], "detail": r["detail"]}
            for r in op_records + model_records
            if r["status"] != "ok"
        ],
    }


# ----------------------------------------------------------------------------
# Tables
# ----------------------------------------------------------------------------


def _table(header, rows, left=1):
    rows = [tuple(header)] + [tuple(r) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for i, r in enumerate(rows):
        cells = [c.ljust(w) if j < left else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths))]
        lines.append("| " + " | ".join(cells) + " |")
        if i == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _f(x, fmt="{:.2f}"):
    return "-" if x is None else fmt.format(x)


def machine_header(report):
    """The lines printed at the top of every table."""
    m = report["machine"]
    avx512 = "AVX-512: yes" if m.get("avx512") else "AVX-512: no"
    simd = "+".join(s.upper() for s in m.get("simd", []) if s != "avx512f") or "no AVX2"
    usable = f", {m['usable_cpus']} usable" if "usable_cpus" in m else ""
    threads = (
        f"threads: {m['threads']} (ferrograd {m.get('ferrograd_threads', '-')}, "
        f"torch {m.get('torch_threads', '-')})"
    )
    libs = (
        f"# python {m['python']}, numpy {m['numpy']}, torch {m.get('torch', '-')}, "
        f"ferrograd {m.get('ferrograd', '-')} ({m.get('ferrograd_build', '-')}: "
        f"{m.get('ferrograd_ext', '-')})"
    )
    cpu = f"# CPU: {m['cpu']} ({simd}; {avx512}), {m['logical_cpus']} logical CPUs{usable}"
    lines = [f"{cpu}; {threads}", libs]
    la = m.get("loadavg_start")
    lines.append(
        f"# load average at start {la[0]:.2f}"
        + (f", at end {m['loadavg_end'][0]:.2f}" if m.get("loadavg_end") else "")
        + "; load column: CPUs other processes kept busy during the case"
    )
    cfg = report["config"]
    lines.append(
        f"# repeats {cfg['repeats']} per library, interleaved, medians; "
        f"sample ~{cfg['target_s']} s; quick={cfg['quick']}; "
        "ratio = ferrograd / torch (lower is better)"
    )
    return "\n".join(lines)


def _rate(rec, lib, probes):
    key = "fg" if lib == "ferrograd" else "torch"
    if f"{key}_gbps" in rec:
        v = rec[f"{key}_gbps"]
        lim = probes.get("bandwidth", {}).get("limit_gbps")
        return f"{v:.1f} GB/s" + (f" ({100 * v / lim:.0f}%)" if lim else "")
    if f"{key}_gflops" in rec:
        v = rec[f"{key}_gflops"]
        lim = probes.get("gemm", {}).get("limit_gflops")
        if lim and rec.get("dtype") == F64:
            lim = lim / 2  # float64 peak: half the float32 probe (same FMA width)
        return f"{v:.1f} GFLOP/s" + (f" ({100 * v / lim:.0f}%)" if lim else "")
    return ""


def format_op_table(report):
    probes = report.get("probes", {})
    rows = []
    for r in report["ops"]:
        status = r["status"] if r["status"] == "ok" else r["status"].upper()
        rows.append(
            (
                r["name"],
                compare._fmt_time(r["fg_s"]),
                compare._fmt_time(r["torch_s"]),
                _f(r["ratio"]),
                f"{r['pairs'][0]:.2f}-{r['pairs'][1]:.2f}" if r["pairs"] else "",
                _rate(r, "ferrograd", probes),
                _rate(r, "torch", probes),
                _f(r.get("foreign_load"), "{:.1f}"),
                status,
            )
        )
    hdr = (
        "case",
        "ferrograd",
        "torch",
        "fg/torch",
        "pairs",
        "fg rate",
        "torch rate",
        "load",
        "status",
    )
    return machine_header(report) + "\n" + _table(hdr, rows)


def format_summary_table(summary, report, key_name="family"):
    rows = []
    for g, s in list(summary["groups"].items()) + [("OVERALL", summary["overall"])]:
        bad = ", ".join(
            f"{s[k]} {k}" for k in ("mismatch", "missing", "error", "torch-error") if s[k]
        )
        rows.append(
            (
                g,
                str(s["n"]),
                str(s["timed"]),
                _f(s["geomean"]),
                _f(s["worst"]),
                s["worst_case"] or "-",
                _f(s["best"]),
                bad,
            )
        )
    hdr = (key_name, "cases", "timed", "geomean", "worst", "worst case", "best", "not ok")
    return machine_header(report) + "\n" + _table(hdr, rows)


def format_stride_table(summary, report):
    pens = summary["stride_penalties"]
    if not pens:
        return ""
    rows = []
    for p in sorted(pens, key=lambda p: (not p["elementwise"], p["name"])):
        tgt = ""
        if p["elementwise"] and p["fg_penalty"] is not None:
            tgt = f"<= {STRIDE_TARGET:g} " + ("ok" if p["ok"] else "MISS")
        rows.append(
            (
                p["name"],
                compare._fmt_time(p["fg_s"]),
                compare._fmt_time(p["fg_contig_s"]),
                _f(p["fg_penalty"]),
                _f(p["torch_penalty"]),
                tgt,
            )
        )
    hdr = ("case (non-contiguous)", "fg", "fg contig", "fg penalty", "torch penalty", "target")
    ew = [p for p in pens if p["elementwise"] and p["fg_penalty"] is not None]
    miss = [p for p in ew if not p["ok"]]
    tail = (
        f"\nelementwise stride penalties: {len(ew)}, over {STRIDE_TARGET:g}: {len(miss)}; "
        f"geomean ferrograd {_f(geomean([p['fg_penalty'] for p in ew]))}, "
        f"torch {_f(geomean([p['torch_penalty'] for p in ew]))}"
    )
    return machine_header(report) + "\n" + _table(hdr, rows) + tail


def format_model_table(report):
    rows = []
    for r in report["models"]:
        status = r["status"] if r["status"] == "ok" else r["status"].upper()
        rows.append(
            (
                r["name"],
                r.get("title", ""),
                compare._fmt_time(r["fg_s"]),
                compare._fmt_time(r["torch_s"]),
                _f(r["ratio"]),
                f"{r['pairs'][0]:.2f}-{r['pairs'][1]:.2f}" if r["pairs"] else "",
                _f(r.get("foreign_load"), "{:.1f}"),
                status + (f" ({r['detail']})" if r["detail"] else ""),
            )
        )
    hdr = ("model", "step", "ferrograd", "torch", "fg/torch", "pairs", "load", "status")
    return machine_header(report) + "\n" + _table(hdr, rows, left=2)


def format_worst(summary, report):
    rows = [(str(i + 1), w["name"], _f(w["ratio"])) for i, w in enumerate(summary["worst15"])]
    return machine_header(report) + "\n" + _table(("#", "worst cases", "fg/torch"), rows, left=2)


def format_not_ok(summary):
    lines = [f"  {x['status'].upper()}: {x['name']}: {x['detail']}" for x in summary["not_ok"]]
    return "\n".join(lines)


def format_report(report):
    s = report["summary"]
    parts = []
    if report["ops"]:
        parts += ["OPERATOR SWEEP", format_op_table(report), ""]
        parts += ["PER FAMILY (ratio ferrograd/torch)", format_summary_table(s["ops"], report), ""]
        parts += ["PER LAYOUT", format_summary_table(s["ops_by_layout"], report, "layout"), ""]
        parts += ["PER DTYPE", format_summary_table(s["ops_by_dtype"], report, "dtype"), ""]
        st = format_stride_table(s, report)
        if st:
            parts += [
                "STRIDE PENALTY (time on the layout / time contiguous, same op, size, dtype, mode)",
                st,
                "",
            ]
    if report["models"]:
        parts += ["MODEL SWEEP (one training step)", format_model_table(report), ""]
        m = s["models"]["overall"]
        parts.append(
            f"models: geomean {_f(m['geomean'])}, worst {_f(m['worst'])} ({m['worst_case']})"
        )
        parts.append("")
    parts += ["WORST CASES", format_worst(s, report)]
    if s["not_ok"]:
        parts += ["", "NOT OK (mismatch / missing / error):", format_not_ok(s)]
    return "\n".join(parts)


# ----------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------


def select(names, only):
    if not only:
        return list(names)
    subs = [s.strip() for s in only.split(",") if s.strip()]
    return [n for n in names if any(s in n for s in subs)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="a handful of small cases, 1 repeat")
    ap.add_argument("--only", default=None, help="comma-separated substrings of case names")
    ap.add_argument("--models-only", action="store_true")
    ap.add_argument("--ops-only", action="store_true")
    ap.add_argument("--json", default=None, metavar="PATH")
    ap.add_argument("--repeats", type=int, default=None, help="samples per library (default 3)")
    ap.add_argument("--sample-time", type=float, default=None, help="seconds per sample")
    ap.add_argument("--no-torch", action="store_true", help="ferrograd alone (no ratios)")
    ap.add_argument("--no-probes", action="store_true")
    ap.add_argument("--list", action="store_true", help="list the case names")
    args = ap.parse_args(argv)
    if args.models_only and args.ops_only:
        ap.error("--models-only and --ops-only exclude each other")

    cases = [] if args.models_only else op_cases()
    models = [] if args.ops_only else list(MODELS.values())
    if args.quick:
        cases = [c for c in cases if c.quick]
    keep = set(select([c.name for c in cases], args.only))
    cases = [c for c in cases if c.name in keep]
    keep_m = set(select([m.name for m in models], args.only))
    models = [m for m in models if m.name in keep_m]
    if args.list:
        for c in cases:
            print(c.name)
        for m in models:
            print(f"model/{m.name}  {m.title}")
        return 0

    libs = compare._import_libs(args.no_torch)
    fg, torch = libs["ferrograd"], libs.get("torch")
    fg.set_num_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    repeats = args.repeats or (1 if args.quick else 3)
    target = args.sample_time or (0.01 if args.quick else 0.05)

    machine = compare.machine_info(args.threads, fg, torch)
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    machine["avx512"] = any(f.startswith("avx512") for f in flags)
    machine["avx512_flags"] = sorted(f for f in flags if f.startswith("avx512"))
    report: dict[str, Any] = {
        "machine": machine,
        "config": {
            "quick": args.quick,
            "repeats": repeats,
            "target_s": target,
            "only": args.only,
            "argv": sys.argv[1:] if argv is None else list(argv),
        },
        "probes": {},
        "ops": [],
        "models": [],
    }
    if machine.get("ferrograd_build") == "debug":
        print("WARNING: ferrograd is a debug build; numbers are meaningless.", file=sys.stderr)
    print(machine_header(report), flush=True)
    print(f"# {len(cases)} operator cases, {len(models)} models", flush=True)

    if not args.no_probes:
        report["probes"]["bandwidth"] = compare.probe_bandwidth(args.quick, torch, fg)
        report["probes"]["gemm"] = compare.probe_gemm(args.quick, torch, fg)
        bw, gm = report["probes"]["bandwidth"], report["probes"]["gemm"]
        print(
            f"# probes: memory bandwidth {bw['limit_gbps']:.1f} GB/s (best of numpy/torch/"
            f"ferrograd copy/triad), GEMM {gm['n']}^3 f32 {gm['limit_gflops']:.1f} GFLOP/s",
            flush=True,
        )

    t0 = time.perf_counter()

    def log(line):
        print(line, flush=True)

    if cases:
        report["ops"] = run_cases(
            [c.workload() for c in cases],
            libs,
            repeats,
            target,
            log=log,
            cases=cases,
            quick=args.quick,
        )
    if models:
        recs = run_cases(models, libs, repeats, target, log=log, quick=args.quick)
        for rec, m in zip(recs, models):
            rec["title"] = m.title + (" [quick sizes]" if args.quick else "")
        report["models"] = recs
    report["elapsed_s"] = time.perf_counter() - t0
    report["machine"]["loadavg_end"] = list(os.getloadavg())
    report["summary"] = build_summary(report["ops"], report["models"])

    print()
    print(format_report(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
        print(f"\nJSON written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
