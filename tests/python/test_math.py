"""Inverse trigonometric and hyperbolic functions, other bases, the error
functions, atan2/hypot/xlogy/logaddexp and lerp/addcmul/addcdiv: special
values, dtypes, errors and in-place forms, run on ferrograd and (through
the `lib` fixture) on torch; a seeded float32 comparison with torch bounds
the error in ulps. Gradients are checked in the op registry."""

import math

import numpy as np
import pytest

import ferrograd as fg
from helpers import same, vals

NAN, INF = math.nan, math.inf
UNARY = [
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    "deg2rad", "rad2deg", "log2", "log10", "exp2", "erf", "erfc", "erfinv",
]  # fmt: skip


def test_special_values(lib):
    x = lib.tensor([-2.0, -1.0, 0.0, 1.0, 2.0, INF, NAN], dtype=lib.float64)
    assert same(vals(lib.asin(x))[1:4], [-math.pi / 2, 0.0, math.pi / 2])
    assert math.isnan(vals(lib.asin(x))[0]) and math.isnan(vals(lib.acos(x))[4])
    assert same(vals(lib.atanh(x))[1:4], [-INF, 0.0, INF])
    assert same(vals(lib.erfinv(x)), [NAN, -INF, 0.0, INF, NAN, NAN, NAN])
    assert same(vals(lib.erf(x))[5:], [1.0, NAN]) and vals(lib.erfc(x))[5] == 0.0
    assert same(vals(lib.log2(x))[2:6], [-INF, 0.0, 1.0, INF])
    assert vals(lib.exp2(lib.tensor([3.0, -INF])))[:2] == [8.0, 0.0]
    assert vals(lib.acosh(lib.tensor([1.0])))[0] == 0.0
    assert vals(lib.cosh(lib.tensor([0.0])))[0] == 1.0


def test_integer_inputs_compute_in_float(lib):
    i = lib.tensor([0, 1])
    for name in UNARY:
        assert getattr(lib, name)(i).dtype == lib.float32, name
        assert getattr(i, name)().dtype == lib.float32, name
    assert lib.atan2(i, i).dtype == lib.float32
    assert lib.xlogy(i, i).dtype == lib.float32
    for f in (lambda: lib.hypot(i, i), lambda: lib.logaddexp(i, i), lambda: i.logaddexp2(i)):
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            f()


def test_aliases(lib):
    x = lib.tensor([0.25, -0.5])
    for alias, name in [("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan")]:
        assert vals(getattr(lib, alias)(x)) == vals(getattr(lib, name)(x))
        assert vals(getattr(x, alias)()) == vals(getattr(x, name)())
    y = lib.tensor([1.5, 2.0])
    assert vals(lib.arccosh(y)) == vals(y.acosh()) and vals(x.arctanh()) == vals(lib.atanh(x))
    assert vals(lib.arctan2(x, y)) == vals(x.arctan2(y))


def test_in_place(lib):
    x = lib.tensor([0.25, -0.5])
    want = vals(lib.asin(x))
    v = x._version
    assert x.asin_() is x and vals(x) == want and x._version == v + 1
    y = lib.tensor([1.0, 2.0])
    y.atan2_(lib.tensor([1.0, 1.0]))
    assert vals(y) == vals(lib.atan2(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 1.0])))
    with pytest.raises(RuntimeError, match="can't be cast"):
        lib.tensor([1, 2]).erf_()
    leaf = lib.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.sinh_()


def test_atan2_hypot(lib):
    y = lib.tensor([1.0, 1.0, -1.0, 0.0, 0.0, -0.0])
    x = lib.tensor([1.0, -1.0, -1.0, -1.0, 1.0, -1.0])
    a = [math.pi / 4, 3 * math.pi / 4, -3 * math.pi / 4, math.pi, 0.0, -math.pi]
    np.testing.assert_allclose(vals(lib.atan2(y, x)), a, rtol=1e-6)
    assert vals(lib.hypot(lib.tensor([3.0, 1e30]), lib.tensor([4.0, 1e30])))[0] == 5.0
    assert vals(lib.hypot(lib.tensor([1e30]), lib.tensor([1e30])))[0] < INF  # no overflow


def test_xlogy(lib):
    x = lib.tensor([0.0, 0.0, 0.0, 2.0, 1.0], dtype=lib.float64)
    y = lib.tensor([0.0, INF, NAN, math.e, -1.0], dtype=lib.float64)
    assert same(vals(lib.xlogy(x, y)), [0.0, 0.0, NAN, 2.0, NAN])
    assert vals(lib.xlogy(2, lib.tensor([1.0])))[0] == 0.0
    assert vals(lib.tensor([3.0]).xlogy(1.0))[0] == 0.0
    # d/dx is log(y), and 0 where x = 0 and y <= 0 (pytorch#80770).
    xs = lib.tensor([0.0, 0.0, 0.0, 1.0, 0.0], dtype=lib.float64, requires_grad=True)
    ys = lib.tensor([2.0, 0.0, -1.0, 0.0, NAN], dtype=lib.float64)
    (g,) = lib.autograd.grad(lib.xlogy(xs, ys).sum(), xs)
    assert same(vals(g), [math.log(2), 0.0, 0.0, -INF, NAN])


def test_logaddexp(lib):
    a = lib.tensor([INF, -INF, 1000.0, -1000.0, 0.0], dtype=lib.float64)
    b = lib.tensor([INF, -INF, 1000.0, -1000.0, 0.0], dtype=lib.float64)
    r = vals(lib.logaddexp(a, b))
    assert r[:2] == [INF, -INF]
    assert r[2] == pytest.approx(1000 + math.log(2)) and r[4] == pytest.approx(math.log(2))
    assert vals(lib.logaddexp2(a, b))[2] == pytest.approx(1001.0)
    assert vals(a.logaddexp(lib.zeros(5, dtype=lib.float64)))[1] == 0.0


def test_lerp(lib):
    a, b = lib.tensor([1.0, -2.0, 3.0]), lib.tensor([5.0, 4.0, -1.0])
    assert vals(lib.lerp(a, b, 0.0)) == vals(a) and vals(a.lerp(b, 1.0)) == vals(b)
    assert vals(lib.lerp(a, b, 0.25)) == [2.0, -0.5, 2.0]
    w = lib.tensor([0.0, 0.5, 1.0])
    assert vals(lib.lerp(a, b, w)) == [1.0, 1.0, -1.0]
    assert vals(lib.lerp(a, lib.tensor(2.0), 2.0)) == [3.0, 6.0, 1.0]  # broadcast, extrapolate
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        lib.lerp(a, b.double(), 0.5)
    with pytest.raises(RuntimeError, match="lerp_kernel_scalar"):
        lib.lerp(lib.tensor([1, 2]), lib.tensor([3, 4]), 0.5)
    c = a.clone()
    assert c.lerp_(b, 0.5) is c and vals(c) == [3.0, 1.0, 1.0]


def test_addcmul_addcdiv(lib):
    s, t1, t2 = lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0]), lib.tensor([2.0, 8.0])
    assert vals(lib.addcmul(s, t1, t2)) == [7.0, 34.0]
    assert vals(s.addcmul(t1, t2, value=0.5)) == [4.0, 18.0]
    assert vals(lib.addcdiv(s, t1, t2, value=2)) == [4.0, 3.0]
    i = lib.tensor([1, 2])
    r = lib.addcmul(i, i, i, value=2)
    assert vals(r) == [3, 10] and r.dtype == lib.int64
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        lib.addcdiv(i, i, i)
    # Adam's second-moment update, in place.
    v = lib.zeros(2)
    v.mul_(0.999).addcmul_(t1, t1, value=1 - 0.999)
    np.testing.assert_allclose(vals(v), [0.009, 0.016], rtol=1e-5)
    s.addcdiv_(t1, t2, value=-1)
    assert vals(s) == [-0.5, 1.5]


def test_grad_fn_names(lib):
    x = lib.tensor([0.3], requires_grad=True)
    y = lib.tensor([0.7], requires_grad=True)
    assert x.erfinv().grad_fn.name() == "ErfinvBackward0"
    assert lib.atan2(x, y).grad_fn.name() == "Atan2Backward0"
    assert lib.lerp(x, y, 0.5).grad_fn.name() == "LerpBackward0"
    assert lib.lerp(x, y, y).grad_fn.name() == "LerpBackward1"
    assert lib.addcdiv(x, x, y).grad_fn.name() == "AddcdivBackward0"


def test_float32_against_torch(torch):
    rng = np.random.default_rng(3)
    u = rng.uniform(-0.99, 0.99, 20000).astype(np.float32)
    inputs = {"acosh": np.abs(u) * 30 + 1, "asinh": u * 30, "sinh": u * 8, "cosh": u * 8}
    inputs.update({n: np.abs(u) * 10 + 1e-3 for n in ("log2", "log10")})
    inputs.update({n: u * 10 for n in ("atan", "exp2", "erf", "erfc", "deg2rad", "rad2deg")})
    for name in UNARY:
        x = inputs.get(name, u)
        got = getattr(fg, name)(fg.from_numpy(x)).numpy()
        want = getattr(torch, name)(torch.from_numpy(x)).numpy()
        ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
        assert ulps.max() <= 4, f"{name}: {ulps.max()} ulp"
    a, b = (rng.standard_normal(1000).astype(np.float32) * 5 for _ in range(2))
    for name in ("atan2", "hypot", "logaddexp", "logaddexp2"):
        got = getattr(fg, name)(fg.from_numpy(a), fg.from_numpy(b)).numpy()
        want = getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(b)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_ternary_ops_match_their_formulas_bitwise(dtype):
    # lerp/addcmul/addcdiv run in one pass; the values must be those of
    # ATen's formulas computed op by op (same roundings), with broadcasting
    import ferrograd as fg

    fg.manual_seed(3)
    dt = getattr(fg, dtype)
    a = fg.randn(64, 33, dtype=dt)
    b = fg.randn(33, dtype=dt)
    w = fg.randn(64, 1, dtype=dt)

    def bits(t):
        return t.numpy().tobytes()

    for ws in (0.3, 0.7, -0.2, 1.5):
        want = a + (b - a) * ws if abs(ws) < 0.5 else b - (b - a) * (1 - ws)
        assert bits(fg.lerp(a, b, ws)) == bits(want)
    small = w.abs() < 0.5
    want = fg.where(small, a + (b - a) * w, b - (b - a) * (-w + 1))
    assert bits(fg.lerp(a, b.expand(64, 33), w.expand(64, 33))) == bits(want)
    assert bits(fg.addcmul(a, b, w, value=0.25)) == bits(a + b * 0.25 * w)
    assert bits(fg.addcdiv(a, b, w, value=-2.0)) == bits(a + b * -2.0 / w)
    # mixed dtypes take the op-by-op path
    i = fg.arange(33)
    assert bits(fg.addcmul(a, i, b, value=2)) == bits(a + i * 2 * b)


def test_atanh_is_accurate_near_minus_one(lib):
    # (x as f64).atanh() of Rust's std rounds 1 - x for x near -1: atanh of
    # the largest float64 above -1 came out -18.37 instead of -18.71
    x = lib.tensor([-0.9999999999999999, 0.9999999999999999, -0.75, 1e-300], dtype=lib.float64)
    got = lib.atanh(x).tolist()
    want = [-18.714973875118524, 18.714973875118524, -0.9729550745276566, 1e-300]
    for g, w in zip(got, want):
        assert abs(g - w) <= 4e-16 * abs(w)


def test_asinh_acosh_are_accurate_at_the_ends(lib):
    # Rust std's formulas overflowed (asinh(1e308), acosh(1e308) were inf)
    # and acosh lost ~800 ulp near 1
    x = lib.tensor([1e308, 1e300, 1.0000001, 3.0], dtype=lib.float64)
    want = [709.889355822726, 691.4686750787736, 0.0004472135919037347, 1.762747174039086]
    for g, w in zip(lib.acosh(x).tolist(), want):
        assert abs(g - w) <= 4e-16 * w
    assert lib.asinh(-x).tolist()[:2] == [-709.889355822726, -691.4686750787736]
