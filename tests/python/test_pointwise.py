"""Pointwise ops: values, gradients (numeric float64 gradcheck, first and
second order), torch oracle comparisons, grad_fn names and edge cases (kinks,
ties, zeros). Dtypes, in-place variants, errors, random broadcasting and the
SIMD kernels: test_pointwise_dtypes.py.

Tests that compare with torch skip when torch is not installed; everything
else runs on ferrograd alone.
"""

import math

import numpy as np
import pytest

import ferrograd as fg
from helpers import dtype_name, same, to_numpy
from pointwise_helpers import mk, one, rand


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------


def leaves_and_args(lib, arrays, noncontig):
    """Leaves requiring grad, and the op's arguments (transposed views of
    transposed leaves when `noncontig`, so the op sees strided inputs)."""
    leaves, args = [], []
    for a in arrays:
        if noncontig and a.ndim >= 2:
            leaf = mk(lib, np.ascontiguousarray(np.swapaxes(a, -1, -2)), requires_grad=True)
            arg = leaf.transpose(-1, -2)
        else:
            leaf = mk(lib, a, requires_grad=True)
            arg = leaf
        leaves.append(leaf)
        args.append(arg)
    return leaves, args


def analytic(lib, fn, arrays, v, noncontig=False):
    leaves, args = leaves_and_args(lib, arrays, noncontig)
    out = fn(lib, *args)
    (out * mk(lib, v)).sum().backward()
    grads = [
        to_numpy(lf.grad) if lf.grad is not None else np.zeros(a.shape)
        for lf, a in zip(leaves, arrays)
    ]
    if noncontig:
        grads = [np.swapaxes(g, -1, -2) if a.ndim >= 2 else g for g, a in zip(grads, arrays)]
    return to_numpy(out), grads


def numeric(fn, arrays, v, eps=1e-6):
    """Central differences of sum(fn(x) * v), computed with ferrograd's
    forward in float64."""
    grads = []
    with fg.no_grad():
        for i, a in enumerate(arrays):
            g = np.zeros(a.shape)
            for j in range(a.size):
                hi = [b.copy() for b in arrays]
                lo = [b.copy() for b in arrays]
                hi[i].flat[j] += eps
                lo[i].flat[j] -= eps
                f_hi = (to_numpy(fn(fg, *[mk(fg, b) for b in hi])) * v).sum()
                f_lo = (to_numpy(fn(fg, *[mk(fg, b) for b in lo])) * v).sum()
                g.flat[j] = (f_hi - f_lo) / (2 * eps)
            grads.append(g)
    return grads


def out_shape(fn, arrays):
    with fg.no_grad():
        return tuple(fn(fg, *[mk(fg, a) for a in arrays]).shape)


def gradcheck(fn, arrays, seed=0, noncontig=False, atol=1e-6, rtol=1e-5):
    v = np.random.default_rng(seed + 100).standard_normal(out_shape(fn, arrays))
    _, ana = analytic(fg, fn, arrays, v, noncontig)
    num = numeric(fn, arrays, v)
    for i, (a, n) in enumerate(zip(ana, num)):
        np.testing.assert_allclose(a, n, atol=atol, rtol=rtol, err_msg=f"input {i}")


def gradgradcheck(fn, arrays, seed=0, atol=1e-5, rtol=1e-4):
    """Numeric check of second derivatives: the scalar
    h(x) = sum_i <d(sum f(x) v)/dx_i, w_i>, whose gradient is built with
    create_graph=True, is itself gradchecked."""
    rng = np.random.default_rng(seed + 200)
    v = rng.standard_normal(out_shape(fn, arrays))
    ws = [rng.standard_normal(a.shape) for a in arrays]

    def h(lib, *xs):
        with lib.enable_grad():
            xs = [x if x.requires_grad else x.detach().requires_grad_(True) for x in xs]
            out = fn(lib, *xs)
            gs = lib.autograd.grad(
                [(out * mk(lib, v)).sum()], xs, create_graph=True, allow_unused=True
            )
            total = mk(lib, 0.0)
            for g, w in zip(gs, ws):
                if g is not None:
                    total = total + (g * mk(lib, w)).sum()
            return total

    leaves = [mk(fg, a, requires_grad=True) for a in arrays]
    hv = h(fg, *leaves)
    if hv.requires_grad:
        hv.backward()
    ana = [
        to_numpy(lf.grad) if lf.grad is not None else np.zeros(a.shape)
        for lf, a in zip(leaves, arrays)
    ]
    num = numeric(h, arrays, np.float64(1.0))
    for i, (a, n) in enumerate(zip(ana, num)):
        np.testing.assert_allclose(a, n, atol=atol, rtol=rtol, err_msg=f"input {i}")


# ----------------------------------------------------------------------------
# the ops under test: (name, fn(lib, *tensors), [(shape, domain), ...])
# ----------------------------------------------------------------------------


OPS = [
    ("exp", lambda L, x: L.exp(x), one()),
    ("log", lambda L, x: L.log(x), one("pos")),
    ("log1p", lambda L, x: x.log1p(), one("pos")),
    ("expm1", lambda L, x: L.expm1(x), one()),
    ("sqrt", lambda L, x: L.sqrt(x), one("pos")),
    ("rsqrt", lambda L, x: x.rsqrt(), one("pos")),
    ("abs", lambda L, x: L.abs(x), one("away")),
    ("abs_op", lambda L, x: abs(x), one("away")),
    ("sign", lambda L, x: L.sign(x) * x, one("away")),
    ("sin", lambda L, x: L.sin(x), one()),
    ("cos", lambda L, x: x.cos(), one()),
    ("tan", lambda L, x: L.tan(x), one("unit")),
    ("tanh", lambda L, x: L.tanh(x), one()),
    ("sigmoid", lambda L, x: L.sigmoid(x), one()),
    ("relu", lambda L, x: L.relu(x), one("away")),
    ("gelu", lambda L, x: L._C._nn.gelu(x), one()),
    ("gelu_tanh", lambda L, x: L._C._nn.gelu(x, approximate="tanh"), one()),
    ("silu", lambda L, x: L._C._nn.silu(x), one()),
    ("softplus", lambda L, x: L._C._nn.softplus(x), one()),
    ("softplus_beta", lambda L, x: L._C._nn.softplus(x * 3, 2.0, 1.0), one("away")),
    ("reciprocal", lambda L, x: L.reciprocal(x), one("away")),
    ("square", lambda L, x: L.square(x), one()),
    ("neg", lambda L, x: L.neg(x), one()),
    ("pow_tt", lambda L, x, e: L.pow(x, e), [((3, 4), "pos"), ((3, 4), "normal")]),
    ("pow_bcast", lambda L, x, e: x**e, [((3, 1), "pos"), ((4,), "normal")]),
    ("pow_2", lambda L, x: x**2, one()),
    ("pow_3", lambda L, x: x.pow(3), one()),
    ("pow_half", lambda L, x: x**0.5, one("pos")),
    ("pow_neg", lambda L, x: x**-1.5, one("pos")),
    ("pow_m1", lambda L, x: x ** (-1), one("away")),
    ("pow_0", lambda L, x: x**0 + x, one()),
    ("rpow", lambda L, x: 2**x, one()),
    ("rpow_frac", lambda L, x: L.pow(0.5, x), one()),
    ("maximum", lambda L, a, b: L.maximum(a, b), [((3, 4), "normal"), ((3, 4), "normal")]),
    ("minimum_bcast", lambda L, a, b: L.minimum(a, b), [((3, 4), "normal"), ((4,), "normal")]),
    ("clamp", lambda L, x: L.clamp(x * 3, -1, 1), one("away")),
    ("clamp_min", lambda L, x: x.clamp(min=0.5), one("away")),
    ("clamp_max", lambda L, x: L.clamp(x, max=-0.5), one("away")),
    ("clip", lambda L, x: L.clip(x, -0.1, 0.1), one("away")),
    ("clamp_min_m", lambda L, x: x.clamp_min(0.05), one("away")),
    ("clamp_max_m", lambda L, x: x.clamp_max(0.05), one("away")),
    (
        "clamp_t",
        lambda L, x, lo, hi: L.clamp(x, lo - 0.5, hi + 0.5),
        [((3, 4), "normal"), ((4,), "away"), ((3, 1), "away")],
    ),
    ("clamp_t_min", lambda L, x, lo: L.clamp(x, min=lo), [((3, 4), "normal"), ((3, 4), "normal")]),
    ("clamp_t_max", lambda L, x, hi: x.clamp(max=hi), [((3, 4), "normal"), ((1, 4), "normal")]),
    ("where", lambda L, a, b: L.where(a > b, a, b * 2), [((3, 4), "normal"), ((4,), "normal")]),
    ("where_scalar", lambda L, a: L.where(a > 0, a, 0.5), one("away")),
    ("where_scalar_first", lambda L, a: L.where(a > 0, -1.0, a * a), one("away")),
    ("where_method", lambda L, a, b: a.where(a < 0, b), [((3, 4), "normal"), ((3, 4), "normal")]),
    ("chain", lambda L, x: L.sigmoid(L.tanh(x).exp() * x).clamp(0.1, 0.9) ** 2, one()),
]

# ops whose second derivative is checked (smooth everywhere on their domain)
SMOOTH = {
    "exp",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "gelu",
    "gelu_tanh",
    "silu",
    "softplus",
    "reciprocal",
    "square",
    "pow_tt",
    "pow_bcast",
    "pow_2",
    "pow_3",
    "pow_half",
    "pow_neg",
    "rpow",
    "rpow_frac",
    "relu",
    "abs",
    "maximum",
    "clamp",
    "where",
    "softplus_beta",
}


def arrays_for(spec, seed):
    return [rand(shape, dom, seed + i) for i, (shape, dom) in enumerate(spec)]


@pytest.mark.parametrize("name,fn,spec", OPS, ids=[o[0] for o in OPS])
def test_gradcheck(name, fn, spec):
    gradcheck(fn, arrays_for(spec, 1))


@pytest.mark.parametrize("name,fn,spec", OPS, ids=[o[0] for o in OPS])
def test_gradcheck_noncontiguous(name, fn, spec):
    gradcheck(fn, arrays_for(spec, 2), noncontig=True)


@pytest.mark.parametrize(
    "name,fn,spec",
    [o for o in OPS if o[0] in SMOOTH],
    ids=sorted(SMOOTH, key=[o[0] for o in OPS].index),
)
def test_gradgradcheck(name, fn, spec):
    arrays = [a[:2, :3] if a.ndim == 2 else a[:3] for a in arrays_for(spec, 3)]
    if name == "pow_bcast":
        arrays = [a[:2, :1] if a.ndim == 2 else a[:3] for a in arrays_for(spec, 3)]
    gradgradcheck(fn, arrays)


@pytest.mark.parametrize("name,fn,spec", OPS, ids=[o[0] for o in OPS])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("noncontig", [False, True])
def test_matches_torch(name, fn, spec, dtype, noncontig, torch):
    arrays = arrays_for(spec, 4)
    v = np.random.default_rng(7).standard_normal(out_shape(fn, arrays))
    results = []
    for lib in (fg, torch):
        leaves, args = leaves_and_args(lib, arrays, noncontig)
        if dtype == "float32":
            leaves = [lf.detach().float().requires_grad_(True) for lf in leaves]
            args = [lf.transpose(-1, -2) if noncontig and lf.dim() >= 2 else lf for lf in leaves]
        out = fn(lib, *args)
        assert dtype_name(out) == dtype
        (out * mk(lib, v, dtype)).sum().backward()
        grads = [to_numpy(lf.grad) if lf.grad is not None else None for lf in leaves]
        results.append((to_numpy(out), grads))
    (fo, fgr), (to, tgr) = results
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(fo, to, **tol)
    for a, b in zip(fgr, tgr):
        if b is None:
            assert a is None or not np.any(a)
        else:
            np.testing.assert_allclose(
                a, b, **(tol if dtype == "float32" else dict(rtol=1e-10, atol=1e-12))
            )


@pytest.mark.parametrize(
    "name",
    [
        "exp",
        "log",
        "sqrt",
        "tanh",
        "sigmoid",
        "gelu",
        "gelu_tanh",
        "silu",
        "softplus",
        "relu",
        "pow_tt",
        "maximum",
        "clamp",
        "where",
        "tan",
        "abs",
    ],
)
def test_double_backward_matches_torch(name, torch):
    fn, spec = next((f, s) for n, f, s in OPS if n == name)
    arrays = arrays_for(spec, 5)
    v = np.random.default_rng(8).standard_normal(out_shape(fn, arrays))
    res = []
    for lib in (fg, torch):
        xs = [mk(lib, a, requires_grad=True) for a in arrays]
        out = fn(lib, *xs)
        gs = lib.autograd.grad([(out * mk(lib, v)).sum()], xs, create_graph=True)
        s = sum(((g * g).sum() for g in gs), mk(lib, 0.0))
        if s.requires_grad:
            s.backward()
        res.append(
            [
                to_numpy(x.grad) if x.grad is not None else np.zeros(a.shape)
                for x, a in zip(xs, arrays)
            ]
        )
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize(
    "name,expected",
    [
        ("exp", "ExpBackward0"),
        ("log", "LogBackward0"),
        ("log1p", "Log1PBackward0"),
        ("expm1", "Expm1Backward0"),
        ("sqrt", "SqrtBackward0"),
        ("rsqrt", "RsqrtBackward0"),
        ("abs", "AbsBackward0"),
        ("sin", "SinBackward0"),
        ("cos", "CosBackward0"),
        ("tan", "TanBackward0"),
        ("tanh", "TanhBackward0"),
        ("sigmoid", "SigmoidBackward0"),
        ("relu", "ReluBackward0"),
        ("gelu", "GeluBackward0"),
        ("silu", "SiluBackward0"),
        ("softplus", "SoftplusBackward0"),
        ("reciprocal", "ReciprocalBackward0"),
        ("square", "PowBackward0"),
        ("pow_tt", "PowBackward1"),
        ("pow_2", "PowBackward0"),
        ("rpow", "PowBackward2"),
        ("maximum", "MaximumBackward0"),
        ("minimum_bcast", "MinimumBackward0"),
        ("clamp", "ClampBackward1"),
        ("clamp_min_m", "ClampMinBackward0"),
        ("clamp_max_m", "ClampMaxBackward0"),
        ("clamp_t", "ClampBackward0"),
        ("where", "WhereBackward0"),
    ],
)
def test_grad_fn_names(name, expected):
    fn, spec = next((f, s) for n, f, s in OPS if n == name)
    xs = [mk(fg, a, requires_grad=True) for a in arrays_for(spec, 0)]
    out = fn(fg, *xs)
    assert out.grad_fn.name() == expected


def test_sign_has_zero_grad():
    x = mk(fg, [1.5, -2.0, 0.0], requires_grad=True)
    fg.sign(x).sum().backward()
    assert list(to_numpy(x.grad)) == [0.0, 0.0, 0.0]
    assert list(to_numpy(fg.sign(mk(fg, [1.5, -2.0, 0.0, float("nan")])))) == [1.0, -1.0, 0.0, 0.0]


# ----------------------------------------------------------------------------
# edge cases, with torch's values written out (so they run without torch)
# ----------------------------------------------------------------------------


def grads_of(fn, *arrays):
    xs = [mk(fg, a, requires_grad=True) for a in arrays]
    fn(*xs).sum().backward()
    return [to_numpy(x.grad) for x in xs]


def test_pow_grads_at_zero():
    x = [0.0, 0.0, 2.0, -1.0, 0.0]
    e = [0.0, 2.0, 0.0, 0.5, -1.0]
    gx, ge = grads_of(fg.pow, x, e)
    assert same(gx, [0.0, 0.0, 0.0, math.nan, -math.inf])
    assert same(ge, [0.0, 0.0, math.log(2.0), math.nan, -math.inf])
    assert same(grads_of(lambda a: a**0, x)[0], [0.0] * 5)
    assert same(
        grads_of(lambda a: a**0.5, x)[0],
        [math.inf, math.inf, 0.5 / math.sqrt(2), math.nan, math.inf],
    )
    assert same(grads_of(lambda a: a**-1, x)[0], [-math.inf, -math.inf, -0.25, -1.0, -math.inf])
    assert same(grads_of(lambda b: 0**b, e)[0], [0.0, 0.0, 0.0, 0.0, -math.inf])


def test_maximum_minimum_split_ties_and_nan():
    a = [1.0, 2.0, 3.0, math.nan]
    b = [1.0, 3.0, 2.0, 1.0]
    ga, gb = grads_of(fg.maximum, a, b)
    assert same(ga, [0.5, 0.0, 1.0, 1.0])
    assert same(gb, [0.5, 1.0, 0.0, 1.0])
    ga, gb = grads_of(fg.minimum, a, b)
    assert same(ga, [0.5, 1.0, 0.0, 1.0])
    assert same(gb, [0.5, 0.0, 1.0, 1.0])
    out = to_numpy(fg.maximum(mk(fg, a), mk(fg, b)))
    assert out[0] == 1.0 and out[1] == 3.0 and math.isnan(out[3])


@pytest.mark.parametrize("create_graph", [False, True], ids=["one_pass", "create_graph"])
def test_maximum_minimum_gradient_paths_agree(lib, create_graph):
    # The backward runs as one kernel without create_graph and as
    # differentiable ops with it: the same values, an inf gradient does not
    # leak into the losing side as NaN, broadcast operands get summed grads.
    a = lib.tensor([[1.0, 2.0, 3.0], [5.0, 0.0, 3.0]], dtype=lib.float64, requires_grad=True)
    b = lib.tensor([3.0, 2.0, float("nan")], dtype=lib.float64, requires_grad=True)
    inf = math.inf
    want = {
        "maximum": ([[0.0, 0.5, 2.0], [4.0, 0.0, 16.0]], [inf, 8.5, 18.0]),
        "minimum": ([[inf, 0.5, 2.0], [0.0, 8.0, 16.0]], [4.0, 0.5, 18.0]),
    }
    for name, (want_a, want_b) in want.items():
        g = lib.tensor([[inf, 1.0, 2.0], [4.0, 8.0, 16.0]], dtype=lib.float64)
        out = getattr(lib, name)(a, b)
        ga, gb = lib.autograd.grad(out, (a, b), g, create_graph=create_graph)
        assert same(ga.tolist()[0], want_a[0]) and same(ga.tolist()[1], want_a[1]), name
        assert same(gb.tolist(), want_b), name
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    y = lib.tensor([2.5, 1.5, 1.0], dtype=lib.float64, requires_grad=True)  # no ties
    assert lib.autograd.gradgradcheck(lib.maximum, (x, y))
    assert lib.autograd.gradgradcheck(lib.minimum, (x, y))


def test_clamp_boundaries():
    x = [0.0, 1.0, 1.5, 2.0, 3.0, math.nan]
    assert same(grads_of(lambda t: t.clamp(1, 2), x)[0], [0.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    out = to_numpy(mk(fg, x).clamp(1, 2))
    assert same(out[:5], [1.0, 1.0, 1.5, 2.0, 2.0])
    assert math.isnan(out[5])
    gx, glo, ghi = grads_of(
        lambda t, lo, hi: t.clamp(lo, hi),
        [0.0, 1.0, 1.5, 2.0, 3.0],
        [1.0, 1.0, 1.0, 1.0, 3.5],
        [2.0, 2.0, 2.0, 2.0, 3.0],
    )
    assert same(gx, [0.0, 1.0, 1.0, 1.0, 0.0])
    assert same(glo, [1.0, 0.0, 0.0, 0.0, 0.0])
    assert same(ghi, [0.0, 0.0, 0.0, 0.0, 1.0])
    assert all(math.isnan(v) for v in to_numpy(mk(fg, [1.0, 2.0]).clamp(math.nan, 3)))


def test_kinks_match_torch_subgradients():
    assert same(grads_of(fg.relu, [0.0, -1.0, 1.0, math.nan])[0], [0.0, 0.0, 1.0, 1.0])
    assert same(grads_of(fg.abs, [0.0, -1.0, 1.0, math.nan])[0], [0.0, -1.0, 1.0, 0.0])
    assert same(grads_of(fg.sqrt, [0.0, 4.0])[0], [math.inf, 0.25])
    out = to_numpy(fg.relu(mk(fg, [math.nan, -1.0])))
    assert math.isnan(out[0]) and out[1] == 0.0


def test_softplus_threshold():
    x = [0.0, 0.5, 0.6, 3.0]
    sp = lambda t: fg._C._nn.softplus(t, 2.0, 1.0)  # noqa: E731
    np.testing.assert_allclose(
        to_numpy(sp(mk(fg, x))), [math.log(2) / 2, math.log1p(math.e) / 2, 0.6, 3.0], rtol=1e-12
    )
    np.testing.assert_allclose(
        grads_of(sp, x)[0], [0.5, 1 / (1 + math.exp(-1)), 1.0, 1.0], rtol=1e-12
    )
    # defaults: beta=1, threshold=20
    np.testing.assert_allclose(
        to_numpy(fg._C._nn.softplus(mk(fg, [0.0, 25.0]))), [math.log(2), 25.0]
    )


def test_gelu_values():
    x = mk(fg, [-1.0, 0.0, 1.0, 2.0])
    exact = [v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in [-1.0, 0.0, 1.0, 2.0]]
    np.testing.assert_allclose(to_numpy(fg._C._nn.gelu(x)), exact, rtol=1e-14, atol=1e-16)
    k = math.sqrt(2 / math.pi)
    approx = [0.5 * v * (1 + math.tanh(k * (v + 0.044715 * v**3))) for v in [-1.0, 0.0, 1.0, 2.0]]
    np.testing.assert_allclose(
        to_numpy(fg._C._nn.gelu(x, approximate="tanh")), approx, rtol=1e-14, atol=1e-16
    )
