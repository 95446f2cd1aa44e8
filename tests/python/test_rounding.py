"""Rounding (floor, ceil, trunc, round, frac), the rounding divisions
(remainder / `%`, fmod, floor_divide / `//`, div with rounding_mode) and
how operators treat operands that are neither tensors nor numbers (NumPy
arrays go to NumPy, as with torch). Each expectation runs on ferrograd and,
through the `lib` fixture, on torch when installed; a seeded comparison
against torch covers dtypes and broadcasting. Gradients are checked in the
op registry."""

import math
from functools import partial

import numpy as np
import pytest

import ferrograd as fg
import helpers
from helpers import vals

NAN, INF = math.nan, math.inf


# Lists equal elementwise, NaN equal to NaN and the sign of zero kept.
same = partial(helpers.same, signed_zero=True)


# ------------------------------------------------------------------ rounding


def test_rounding_values(lib):
    x = lib.tensor([2.5, -2.5, 0.5, 1.5, -0.0, 1234.5678, INF, NAN])
    assert same(vals(x.floor()), [2, -3, 0, 1, -0.0, 1234, INF, NAN])
    assert same(vals(lib.ceil(x)), [3, -2, 1, 2, -0.0, 1235, INF, NAN])
    assert same(vals(x.trunc()), [2, -2, 0, 1, -0.0, 1234, INF, NAN])
    assert same(vals(lib.fix(x)), vals(x.trunc()))
    # Half to even.
    assert same(vals(lib.round(x)), [2, -2, 0, 2, -0.0, 1235, INF, NAN])
    assert same(vals(x.frac())[:6], vals(x - x.trunc())[:6])
    assert x.floor().dtype == lib.float32


def test_round_decimals(lib):
    x = lib.tensor([1.2345, -1.2355, 1234.5, 0.125], dtype=lib.float64)
    np.testing.assert_allclose(vals(x.round(decimals=2)), [1.23, -1.24, 1234.5, 0.12])
    np.testing.assert_allclose(vals(lib.round(x, decimals=-2)), [0.0, -0.0, 1200.0, 0.0])
    with pytest.raises(TypeError):
        x.round(2)  # decimals is keyword-only


def test_rounding_integers_and_bool(lib):
    i = lib.tensor([3, -3])
    for f in ("floor", "ceil", "trunc", "round"):
        r = getattr(i, f)()
        assert vals(r) == [3, -3] and r.dtype == lib.int64
    with pytest.raises(RuntimeError, match="frac_cpu"):
        i.frac()
    with pytest.raises(RuntimeError, match="round_cpu"):
        i.round(decimals=1)
    with pytest.raises(RuntimeError, match="Bool"):
        lib.tensor([True]).floor()


def test_rounding_in_place(lib):
    x = lib.tensor([1.7, -1.2])
    v = x._version
    assert x.floor_() is x and vals(x) == [1.0, -2.0] and x._version == v + 1
    y = lib.tensor([1.25, -1.5], dtype=lib.float64)
    y.round_(decimals=1)
    assert vals(y) == [1.2, -1.5]
    z = lib.tensor([1.75])
    z.frac_()
    assert vals(z) == [0.75]
    leaf = lib.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.ceil_()


def test_rounding_gradients(lib):
    x = lib.tensor([1.7, -0.3], requires_grad=True)
    for f in ("floor", "ceil", "trunc", "round"):
        (g,) = lib.autograd.grad(getattr(x, f)().sum(), x)
        assert vals(g) == [0.0, 0.0]
    (g,) = lib.autograd.grad(x.frac().sum(), x)
    assert vals(g) == [1.0, 1.0]
    assert x.floor().grad_fn.name() == "FloorBackward0"
    assert x.round(decimals=1).grad_fn.name() == "RoundBackward1"


# ----------------------------------------------------------------- remainders


def test_remainder_and_fmod_values(lib):
    a = lib.tensor([5.5, -5.5, 3.0, -0.0, 1.0, -3.5])
    b = lib.tensor([2.0, 2.0, -2.0, 3.0, 0.0, INF])
    assert same(vals(lib.remainder(a, b)), [1.5, 0.5, -1.0, -0.0, NAN, INF])
    assert same(vals(a % b), vals(lib.remainder(a, b)))
    assert same(vals(lib.fmod(a, b)), [1.5, -1.5, 1.0, -0.0, NAN, -3.5])
    assert same(vals(a.fmod(2)), [1.5, -1.5, 1.0, -0.0, 1.0, -1.5])
    # A number first.
    assert vals(5 % lib.tensor([3.0, -3.0])) == [2.0, -1.0]
    assert vals(lib.remainder(5, lib.tensor([3.0]))) == [2.0]


def test_floor_divide_values(lib):
    a = lib.tensor([5.5, -5.5, 3.0, -0.0, 1.0, -1.0, 0.0])
    b = lib.tensor([2.0, 2.0, -2.0, 3.0, 0.0, 0.0, 0.0])
    expect = [2.0, -3.0, -2.0, -0.0, INF, -INF, NAN]
    assert same(vals(a // b), expect)
    assert same(vals(lib.floor_divide(a, b)), expect)
    assert same(vals(lib.div(a, b, rounding_mode="floor")), expect)
    assert same(vals(a.div(b, rounding_mode="trunc")), [2.0, -2.0, -1.0, -0.0, INF, -INF, NAN])
    assert vals(2 // lib.tensor([0.75])) == [2.0]
    assert vals(lib.divide(lib.tensor([7.0]), 2, rounding_mode=None)) == [3.5]


def test_integer_division(lib):
    i, j = lib.tensor([7, -7, 0, 7]), lib.tensor([2, 2, 3, -2])
    assert vals(i % j) == [1, 1, 0, -1]
    assert vals(i // j) == [3, -4, 0, -4]
    assert vals(lib.fmod(i, j)) == [1, -1, 0, 1]
    assert vals(i.div(j, rounding_mode="trunc")) == [3, -3, 0, -3]
    assert (i // j).dtype == lib.int64 and (i % 2).dtype == lib.int64
    # A float operand promotes.
    assert vals(i % 2.5) == [2.0, 0.5, 0.0, 2.0] and (i // 2.5).dtype == lib.float32
    for f in (lambda: i % lib.tensor([0, 1, 1, 1]), lambda: i // 0, lambda: lib.fmod(i, 0)):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            f()
    with pytest.raises(RuntimeError, match="Bool"):
        lib.tensor([True]) % lib.tensor([True])


def test_bad_rounding_mode(lib):
    x = lib.ones(2)
    msg = "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'"
    with pytest.raises(RuntimeError, match=msg):
        x.div(2, rounding_mode="round")
    with pytest.raises(RuntimeError, match="rounding_mode"):
        lib.div(x, x, rounding_mode="nearest")
    assert vals(x) == [1.0, 1.0]


def test_remainder_in_place(lib):
    x = lib.tensor([5.0, -5.0])
    v = x._version
    x %= 3
    assert vals(x) == [2.0, 1.0] and x._version == v + 1
    x //= 2
    assert vals(x) == [1.0, 0.0]
    y = lib.tensor([7.0, -7.0])
    assert y.remainder_(lib.tensor([2.0, 2.0])) is y and vals(y) == [1.0, 1.0]
    y = lib.tensor([7.0, -7.0])
    y.fmod_(2)
    assert vals(y) == [1.0, -1.0]
    y = lib.tensor([7.0, -7.0])
    y.floor_divide_(2)
    assert vals(y) == [3.0, -4.0]
    y = lib.tensor([7.0, -7.0])
    y.div_(2, rounding_mode="trunc")
    assert vals(y) == [3.0, -3.0]
    i = lib.tensor([1, 2])
    with pytest.raises(RuntimeError):
        i %= 0.5  # a float result cannot be written into int64


def test_remainder_gradients(lib):
    a = lib.tensor([5.5, -5.5, 3.0], dtype=lib.float64, requires_grad=True)
    b = lib.tensor([2.0, 2.0, -2.0], dtype=lib.float64, requires_grad=True)
    ga, gb = lib.autograd.grad((a % b).sum(), [a, b])
    assert vals(ga) == [1.0, 1.0, 1.0] and vals(gb) == [-2.0, 3.0, 2.0]
    ga, gb = lib.autograd.grad(lib.fmod(a, b).sum(), [a, b])
    assert vals(ga) == [1.0, 1.0, 1.0] and vals(gb) == [-2.0, 2.0, 1.0]
    assert (a % 2).grad_fn.name() == "RemainderBackward0"
    assert (a % b).grad_fn.name() == "RemainderBackward1"
    assert lib.fmod(a, 2).grad_fn.name() == "FmodBackward0"
    ga, gb = lib.autograd.grad(lib.div(a, b, rounding_mode="floor").sum(), [a, b])
    assert vals(ga) == [0.0] * 3 and vals(gb) == [0.0] * 3


def test_ferrograd_differentiates_what_torch_does_not():
    # torch has no derivative for floor_divide or for a number % tensor;
    # ferrograd gives floor_divide div(rounding_mode="floor")'s zero and
    # differentiates number % tensor like tensor % tensor.
    x = fg.tensor([0.7, -1.3, 2.2], dtype=fg.float64, requires_grad=True)
    (g,) = fg.autograd.grad((x // 0.5).sum(), x)
    assert vals(g) == [0.0, 0.0, 0.0]
    assert fg.autograd.gradcheck(lambda t: 2.5 % t, (x,))
    assert fg.autograd.gradcheck(lambda t: fg.remainder(2.5, t), (x,))


def test_against_torch_random(torch):
    rng = np.random.default_rng(7)
    for dt in ("float32", "float64", "int64"):
        if dt == "int64":
            a = rng.integers(-20, 20, (4, 5))
            b = rng.integers(1, 6, (5,)) * rng.choice([-1, 1], (5,))
        else:
            a = rng.standard_normal((4, 5)).astype(dt) * 10
            b = (rng.uniform(0.3, 3, (5,)) * rng.choice([-1, 1], (5,))).astype(dt)
        for name in ("remainder", "fmod", "floor_divide"):
            want = getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(b)).numpy()
            got = getattr(fg, name)(fg.from_numpy(a), fg.from_numpy(b)).numpy()
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {dt}")
        if dt != "int64":
            for f in ("floor", "ceil", "trunc", "round", "frac"):
                want = getattr(torch, f)(torch.from_numpy(a)).numpy()
                np.testing.assert_array_equal(getattr(fg, f)(fg.from_numpy(a)).numpy(), want)
            want = torch.round(torch.from_numpy(a), decimals=1).numpy()
            np.testing.assert_array_equal(fg.round(fg.from_numpy(a), decimals=1).numpy(), want)


# -------------------------------------------------- operators and NumPy arrays


def test_ndarray_operands_go_to_numpy(lib):
    t = lib.ones(2)
    nd = np.array([1.0, 2.0])
    for r, want in ((t + nd, [2.0, 3.0]), (t - nd, [0.0, -1.0]), (t / nd, [1.0, 0.5])):
        assert isinstance(r, lib.Tensor) and r.dtype == lib.float64 and vals(r) == want
    assert (t * nd.astype(np.float32)).dtype == lib.float32
    assert vals(t % nd) == [0.0, 1.0] and vals(t // nd) == [1.0, 0.0]
    assert vals(t + np.array(2.0)) == [3.0, 3.0]
    assert t.__add__(nd) is NotImplemented and t.__radd__(nd) is NotImplemented
    # The NumPy path does not differentiate: as torch, it refuses.
    with pytest.raises(RuntimeError, match="requires grad"):
        lib.ones(2, requires_grad=True) * nd


def test_eq_with_ndarray_is_elementwise(lib):
    t = lib.ones(2)
    nd = np.array([1.0, 2.0])
    assert vals(t == nd) == [True, False] and (t == nd).dtype == lib.bool
    assert vals(nd == t) == [True, False]
    # As in torch, only == converts the array: != falls back to identity.
    assert (t != nd) is True
    with pytest.raises(TypeError):
        t < nd  # noqa: B015


def test_foreign_operands_raise_type_error(lib):
    t = lib.ones(2)
    for f in (lambda: t + "a", lambda: t * None, lambda: t % "x", lambda: t // None):
        with pytest.raises(TypeError, match="unsupported operand"):
            f()
    with pytest.raises(TypeError):
        t.add(np.ones(2))  # the method form takes tensors and numbers only
    assert (t == "a") is False and (t != None) is True  # noqa: E711
