"""Helpers shared by the indexing and joining tests (test_index_join*.py):
value readers that avoid __getitem__, a tolerant comparison, deterministic
leaves, the torch oracle runner and a float64 central-difference gradcheck
(first and second order)."""

import random

import ferrograd as fg
import pytest


def vals(t):
    """Row-major values of a ferrograd tensor, read without __getitem__."""
    f = t.detach().reshape(-1)
    return [f.select(0, i).item() for i in range(f.numel())]


def tvals(t):
    return t.detach().reshape(-1).tolist()


def values_of(M, t):
    return tvals(t) if M is not fg else vals(t)


def assert_close(a, b, tol=1e-9):
    assert len(a) == len(b), (a, b)
    for x, y in zip(a, b):
        if isinstance(y, bool) or isinstance(x, bool):
            assert bool(x) == bool(y), (a, b)
        else:
            assert abs(x - y) <= tol * (1 + abs(y)), (a, b)


def seq(n, seed):
    rng = random.Random(seed)
    return [round(rng.uniform(-2, 2), 3) for _ in range(n)]


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def nest(flat, shape):
    if not shape:
        return flat[0]
    step = numel(shape[1:])
    return [nest(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def mk(M, shape, seed=0, requires_grad=True):
    """A float64 leaf (not a view) of `shape` with deterministic values."""
    if 0 in shape:
        t = M.zeros(*shape, dtype=M.float64)
    else:
        t = M.tensor(nest(seq(numel(shape), seed), tuple(shape)), dtype=M.float64)
    if requires_grad:
        t.requires_grad_(True)
    return t


def weights(M, shape, k):
    if 0 in shape:
        return M.zeros(*shape, dtype=M.float64)
    return M.tensor(nest(seq(numel(shape), 1000 + k), tuple(shape)), dtype=M.float64)


def as_list(y):
    return list(y) if isinstance(y, (tuple, list)) else [y]


def loss_of(M, ys):
    total = 0
    for k, y in enumerate(ys):
        if y.dtype == M.float64:
            total = total + (y * weights(M, tuple(y.shape), k)).sum()
    return total


def run(M, fn, make):
    """Outputs (shape, values, is_view) and input grads of fn on make(M)."""
    ins = make(M)
    ys = as_list(fn(M, *ins))
    leaves = [t for t in ins if isinstance(t, M.Tensor) and t.requires_grad]
    outs = [(tuple(y.shape), values_of(M, y), y._base is not None) for y in ys]
    grads = []
    if leaves and any(y.requires_grad for y in ys):
        gs = M.autograd.grad([loss_of(M, ys)], leaves, allow_unused=True)
        grads = [None if g is None else values_of(M, g) for g in gs]
    return outs, grads


def check_oracle(fn, make, views=True):
    torch = pytest.importorskip("torch")
    t_outs, t_grads = run(torch, fn, make)
    f_outs, f_grads = run(fg, fn, make)
    assert len(t_outs) == len(f_outs)
    for (ts, tv, tview), (fs, fv, fview) in zip(t_outs, f_outs):
        assert ts == fs
        assert_close(fv, tv)
        if views:
            assert tview == fview
    assert len(t_grads) == len(f_grads)
    for tg, fgr in zip(t_grads, f_grads):
        if tg is None:
            assert fgr is None or all(v == 0 for v in fgr)
        else:
            assert_close(fgr, tg)


def gradcheck(fn, make, eps=1e-6, tol=1e-6):
    """fn(fg, *make(fg)) vs central differences, for the gradient (VJP) and
    for the double backward (the JVP obtained by differentiating the VJP
    with respect to the output gradient)."""
    ins = make(fg)
    leaves = [i for i, t in enumerate(ins) if isinstance(t, fg.Tensor) and t.requires_grad]
    assert leaves

    def f_at(vals_by_leaf):
        new = list(make(fg))
        for i, v in zip(leaves, vals_by_leaf):
            new[i] = fg.tensor(v, dtype=fg.float64).reshape(*ins[i].shape)
        with fg.no_grad():
            return as_list(fn(fg, *new))

    base = [vals(ins[i]) for i in leaves]

    def loss_at(vs):
        ys = f_at(vs)
        return sum(
            sum(a * b for a, b in zip(vals(y), vals(weights(fg, tuple(y.shape), k))))
            for k, y in enumerate(ys)
            if y.dtype == fg.float64
        )

    # first order
    ys = as_list(fn(fg, *ins))
    grads = fg.autograd.grad([loss_of(fg, ys)], [ins[i] for i in leaves], allow_unused=True)
    for j, g in enumerate(grads):
        num = []
        for e in range(len(base[j])):
            plus = [list(b) for b in base]
            minus = [list(b) for b in base]
            plus[j][e] += eps
            minus[j][e] -= eps
            num.append((loss_at(plus) - loss_at(minus)) / (2 * eps))
        got = [0.0] * len(num) if g is None else vals(g)
        assert_close(got, num, tol)

    # second order: d/dgo <vjp(go), v> == J v
    ys = as_list(fn(fg, *ins))
    ys = [y for y in ys if y.dtype == fg.float64]
    gos = [weights(fg, tuple(y.shape), 7 + k).requires_grad_(True) for k, y in enumerate(ys)]
    gs = fg.autograd.grad(
        ys, [ins[i] for i in leaves], grad_outputs=gos, create_graph=True, allow_unused=True
    )
    dirs = [seq(len(b), 77 + j) for j, b in enumerate(base)]
    s2 = 0
    for j, g in enumerate(gs):
        if g is not None:
            s2 = s2 + (g * fg.tensor(dirs[j], dtype=fg.float64).reshape(*g.shape)).sum()
    jv = fg.autograd.grad([s2], gos, allow_unused=True)
    plus = f_at([[b + eps * d for b, d in zip(bs, ds)] for bs, ds in zip(base, dirs)])
    minus = f_at([[b - eps * d for b, d in zip(bs, ds)] for bs, ds in zip(base, dirs)])
    plus = [y for y in plus if y.dtype == fg.float64]
    minus = [y for y in minus if y.dtype == fg.float64]
    for k, g in enumerate(jv):
        num = [(a - b) / (2 * eps) for a, b in zip(vals(plus[k]), vals(minus[k]))]
        got = [0.0] * len(num) if g is None else vals(g)
        assert_close(got, num, tol)


def long(M, v):
    return M.tensor(v, dtype=M.int64)


def boolt(M, v):
    return M.tensor(v, dtype=M.bool)
