"""compare.py's workloads: each a function of the library module ``L`` that
uses only the torch-compatible tensor + autograd API, so the same code runs
on ferrograd and on torch (and some on numpy). ``WORKLOADS`` by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

FLOAT32 = np.float32


# ----------------------------------------------------------------------------
# Workload definitions
# ----------------------------------------------------------------------------


@dataclass
class Case:
    """One prepared workload for one library: ``run()`` does one iteration;
    ``result()`` returns numpy arrays to cross-check libraries (after one
    ``run()`` on fresh data)."""

    run: Callable[[], Any]
    result: Optional[Callable[[], list]] = None


@dataclass
class Workload:
    name: str
    title: str
    make: Callable  # make(L, quick) -> Case
    make_numpy: Optional[Callable] = None  # make_numpy(np, quick) -> Case
    ops: Optional[Callable[[bool], int]] = None  # ops per iteration (per-op time)
    nbytes: Optional[Callable[[bool], float]] = None  # bytes per iteration (GB/s)
    flops: Optional[Callable[[bool], float]] = None  # flops per iteration (GFLOP/s)
    note: str = ""
    # largest relative error against the reference counted as agreement
    # (2-byte float results differ by a rounding or two: 2e-2)
    rtol: float = 1e-3


def _rng(seed=0):
    return np.random.default_rng(seed)


def _t(L, arr, requires_grad=False):
    """A float32 (or int64) tensor of library L from a numpy array, so every
    library starts from the same data."""
    t = L.from_numpy(np.ascontiguousarray(arr))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _np(t):
    return t.detach().numpy().copy()


# 1. per-op overhead without grad -------------------------------------------


def make_add(L, quick):
    r = _rng()
    a = _t(L, r.standard_normal(16, dtype=FLOAT32))
    b = _t(L, r.standard_normal(16, dtype=FLOAT32))
    out = {}

    def run():
        out["y"] = a + b

    return Case(run, lambda: [_np(out["y"])])


def make_add_numpy(np_, quick):
    r = _rng()
    a = r.standard_normal(16, dtype=FLOAT32)
    b = r.standard_normal(16, dtype=FLOAT32)
    out = {}

    def run():
        out["y"] = a + b

    return Case(run, lambda: [out["y"]])


# 2. per-op overhead with grad ------------------------------------------------


def make_add_grad(L, quick):
    r = _rng()
    a = _t(L, r.standard_normal(16, dtype=FLOAT32), True)
    b = _t(L, r.standard_normal(16, dtype=FLOAT32), True)

    def run():
        a.grad = None
        b.grad = None
        (a * b + a).sum().backward()

    return Case(run, lambda: [_np(a.grad), _np(b.grad)])


# 3. deep chain -----------------------------------------------------------------


def _chain_len(quick):
    return 300 if quick else 1000


def make_chain(L, quick):
    r = _rng()
    n = _chain_len(quick)
    x = _t(L, r.standard_normal(16, dtype=FLOAT32), True)
    w = _t(L, 1.0 + 0.01 * r.standard_normal(16, dtype=FLOAT32), True)
    b = _t(L, 0.01 * r.standard_normal(16, dtype=FLOAT32), True)

    def run():
        for p in (x, w, b):
            p.grad = None
        h = x
        for i in range(n):
            k = i % 3
            if k == 0:
                h = h * w
            elif k == 1:
                h = h + b
            else:
                h = h.tanh()
        h.sum().backward()

    return Case(run, lambda: [_np(x.grad), _np(w.grad), _np(b.grad)])


# 4. wide graph -----------------------------------------------------------------


def _wide_shape(quick):
    # (branches, depth, size)
    return (8, 10, 64) if quick else (32, 10, 256)


def make_wide(L, quick):
    r = _rng()
    nb, depth, n = _wide_shape(quick)
    scale = 1.0 / math.sqrt(n)
    xs = [_t(L, r.standard_normal((n, n), dtype=FLOAT32)) for _ in range(nb)]
    ws = [
        [_t(L, scale * r.standard_normal((n, n), dtype=FLOAT32), True) for _ in range(depth)]
        for _ in range(nb)
    ]

    def run():
        for branch in ws:
            for w in branch:
                w.grad = None
        sums = []
        for x, branch in zip(xs, ws):
            h = x
            for w in branch:
                h = (h @ w).tanh()
            sums.append(h.sum())
        L.stack(sums).sum().backward()

    return Case(run, lambda: [_np(ws[0][0].grad), _np(ws[-1][-1].grad)])


def _wide_flops(quick):
    nb, depth, n = _wide_shape(quick)
    return nb * depth * 3 * 2.0 * n**3  # forward + two backward matmuls


# 5. big elementwise -------------------------------------------------------------


def _big_n(quick):
    return 1_000_000 if quick else 10_000_000


def make_elementwise(L, quick):
    r = _rng()
    n = _big_n(quick)
    x = _t(L, r.standard_normal(n, dtype=FLOAT32))
    w = _t(L, r.standard_normal(n, dtype=FLOAT32), True)
    b = _t(L, r.standard_normal(n, dtype=FLOAT32), True)

    def run():
        w.grad = None
        b.grad = None
        ((x * w + b).tanh()).sum().backward()

    return Case(run, lambda: [_np(w.grad), _np(b.grad)])


def make_elementwise_numpy(np_, quick):
    """The same computation with a hand-written gradient (the floor an eager
    library can reach without fusing)."""
    r = _rng()
    n = _big_n(quick)
    x = r.standard_normal(n, dtype=FLOAT32)
    w = r.standard_normal(n, dtype=FLOAT32)
    b = r.standard_normal(n, dtype=FLOAT32)
    out = {}

    def run():
        y = np.tanh(x * w + b)
        out["s"] = y.sum()
        gb = 1.0 - y * y
        out["gw"] = gb * x
        out["gb"] = gb

    return Case(run, lambda: [out["gw"], out["gb"]])


def _elementwise_bytes(quick):
    # Traffic of the unfused eager ops, 4 bytes per element: forward mul (3N),
    # add (3N), tanh (2N), sum (N); backward tanh' (3N) and grad_w = g * x (3N).
    return 15 * 4.0 * _big_n(quick)


# 6. matmul ----------------------------------------------------------------------


def _mm_n(quick):
    return 256 if quick else 1024


def make_matmul(L, quick):
    r = _rng()
    n = _mm_n(quick)
    a = _t(L, r.standard_normal((n, n), dtype=FLOAT32), True)
    b = _t(L, r.standard_normal((n, n), dtype=FLOAT32), True)

    def run():
        a.grad = None
        b.grad = None
        (a @ b).sum().backward()

    return Case(run, lambda: [_np(a.grad), _np(b.grad)])


def make_matmul_numpy(np_, quick):
    r = _rng()
    n = _mm_n(quick)
    a = r.standard_normal((n, n), dtype=FLOAT32)
    b = r.standard_normal((n, n), dtype=FLOAT32)
    g = np.ones((n, n), dtype=FLOAT32)
    out = {}

    def run():
        out["c"] = a @ b
        out["ga"] = g @ b.T
        out["gb"] = a.T @ g

    return Case(run, lambda: [out["ga"], out["gb"]])


def _mm_flops(quick):
    return 3 * 2.0 * _mm_n(quick) ** 3


# 7. MLP training step --------------------------------------------------------------


def _mlp_dims(quick):
    return (64, [784, 512, 512, 10]) if quick else (256, [784, 512, 512, 10])


def make_mlp(L, quick):
    r = _rng()
    batch, dims = _mlp_dims(quick)
    x = _t(L, r.standard_normal((batch, dims[0]), dtype=FLOAT32))
    y = _t(L, r.integers(0, dims[-1], size=batch, dtype=np.int64))
    params = []
    for fan_in, fan_out in zip(dims[:-1], dims[1:]):
        bound = 1.0 / math.sqrt(fan_in)
        params.append(_t(L, r.uniform(-bound, bound, (fan_in, fan_out)).astype(FLOAT32), True))
        params.append(_t(L, r.uniform(-bound, bound, fan_out).astype(FLOAT32), True))
    lr = 0.01
    out = {}

    def run():
        h = x
        nlayers = len(params) // 2
        for i in range(nlayers):
            h = h @ params[2 * i] + params[2 * i + 1]
            if i < nlayers - 1:
                h = h.relu()
        logp = h.log_softmax(dim=1)
        loss = -logp.gather(1, y.unsqueeze(1)).mean()
        loss.backward()
        with L.no_grad():
            for p in params:
                p -= lr * p.grad
                p.grad = None
        out["loss"] = loss

    return Case(run, lambda: [_np(out["loss"])] + [_np(p) for p in params])


def _mlp_flops(quick):
    batch, dims = _mlp_dims(quick)
    return sum(3 * 2.0 * batch * i * o for i, o in zip(dims[:-1], dims[1:]))


# 8. custom Python Function -----------------------------------------------------------


def _scale_fn(L):
    class Scale(L.autograd.Function):
        """y = c * x, saving x (the typical ctx traffic of a custom Function)."""

        @staticmethod
        def forward(ctx, x, c):
            ctx.save_for_backward(x)
            ctx.c = c
            return x * c

        @staticmethod
        def backward(ctx, grad):
            (_x,) = ctx.saved_tensors
            return grad * ctx.c, None

    return Scale


def make_custom_fn(L, quick):
    Scale = _scale_fn(L)
    x = _t(L, _rng().standard_normal(16, dtype=FLOAT32), True)

    def run():
        x.grad = None
        Scale.apply(x, 2.0).sum().backward()

    return Case(run, lambda: [_np(x.grad)])


def make_custom_chain(L, quick):
    Scale = _scale_fn(L)
    n = _chain_len(quick)
    x = _t(L, _rng().standard_normal(16, dtype=FLOAT32), True)

    def run():
        x.grad = None
        h = x
        for i in range(n):
            h = Scale.apply(h, 1.001 if i % 2 else 0.999)
        h.sum().backward()

    return Case(run, lambda: [_np(x.grad)])


# 9. Hessian-vector product -------------------------------------------------------------


def make_hvp(L, quick):
    r = _rng()
    batch, d, hdim = 64, 64, 64
    x = _t(L, r.standard_normal((batch, d), dtype=FLOAT32))
    target = _t(L, r.standard_normal((batch, 1), dtype=FLOAT32))
    shapes = [(d, hdim), (hdim,), (hdim, 1), (1,)]
    params = [_t(L, (0.2 * r.standard_normal(s)).astype(FLOAT32), True) for s in shapes]
    vs = [_t(L, r.standard_normal(s, dtype=FLOAT32)) for s in shapes]
    out = {}

    def run():
        w1, b1, w2, b2 = params
        pred = (x @ w1 + b1).tanh() @ w2 + b2
        loss = (pred - target).pow(2).mean()
        grads = L.autograd.grad(loss, params, create_graph=True)
        dot = sum((g * v).sum() for g, v in zip(grads, vs))
        out["hv"] = L.autograd.grad(dot, params)

    return Case(run, lambda: [_np(h) for h in out["hv"]])


def make_jacobian(L, quick):
    """Issue 4: autograd.functional.jacobian of a 64 -> 64 function
    (reverse mode, one vjp per output row)."""
    r = _rng()
    n = 64
    x = _t(L, r.standard_normal(n, dtype=FLOAT32))
    w = _t(L, (r.standard_normal((n, n)) / 8).astype(FLOAT32))
    out = {}

    def f(v):
        return (w @ v).tanh() * v

    def run():
        out["j"] = L.autograd.functional.jacobian(f, x)

    return Case(run, lambda: [_np(out["j"])])


WORKLOADS = {
    w.name: w
    for w in [
        Workload("add", "1. a + b, 16 elem, no grad", make_add, make_add_numpy),
        Workload("add_grad", "2. (a*b+a).sum().backward(), 16 elem", make_add_grad),
        Workload(
            "chain",
            "3. chain of mul/add/tanh, 16 elem, fwd+bwd",
            make_chain,
            ops=_chain_len,
            note="time per op",
        ),
        Workload(
            "wide",
            "4. 32 branches x 10 (256x256 matmul+tanh), bwd",
            make_wide,
            flops=_wide_flops,
        ),
        Workload(
            "elementwise",
            "5. tanh(x*w+b).sum().backward(), 10M f32",
            make_elementwise,
            make_elementwise_numpy,
            nbytes=_elementwise_bytes,
        ),
        Workload(
            "matmul",
            "6. matmul 1024x1024 f32 fwd+bwd",
            make_matmul,
            make_matmul_numpy,
            flops=_mm_flops,
        ),
        Workload("mlp", "7. MLP 784-512-512-10 SGD step, batch 256", make_mlp, flops=_mlp_flops),
        Workload("custom_fn", "8a. custom Function apply+backward, 16 elem", make_custom_fn),
        Workload(
            "custom_chain",
            "8b. chain of custom Functions, fwd+bwd",
            make_custom_chain,
            ops=_chain_len,
            note="time per op",
        ),
        Workload("hvp", "9. HVP by double backward, 64-64-1 tanh MLP", make_hvp),
        Workload("jacobian", "jacobian of a 64->64 function (issue 4)", make_jacobian),
    ]
}
