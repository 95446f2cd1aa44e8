"""Truth-value reductions (all, any) and closeness checks (isclose,
allclose, equal). Each expectation runs on ferrograd and, through the `lib`
fixture, on torch when installed, so torch validates the tests; a seeded
random comparison against torch covers dtypes, broadcasting and
tolerances."""

import math

import numpy as np
import pytest

import ferrograd as fg
from helpers import vals

NAN, INF = math.nan, math.inf


# ----------------------------------------------------------------- all / any


def test_all_any_whole_tensor(lib):
    x = lib.tensor([[1.0, 0.0], [NAN, 2.0]])
    assert vals(x.all()) is False and x.all().dtype == lib.bool
    assert vals(x.any()) is True and x.any().shape == ()
    assert vals(lib.all(lib.tensor([NAN, -1.0]))) is True  # NaN counts as true
    assert vals(lib.any(lib.tensor([0, 0]))) is False
    assert vals(lib.tensor([3, 4]).all()) is True
    # Empty: all is vacuously true, any false.
    assert vals(lib.zeros(0).all()) is True
    assert vals(lib.zeros(0, 3).any()) is False


def test_all_any_dims(lib):
    x = lib.tensor([[1.0, 0.0], [NAN, 2.0]])
    assert vals(x.all(dim=1)) == [False, True]
    assert vals(x.all(0)) == [True, False]
    assert vals(x.any(0, keepdim=True)) == [[True, True]]
    assert vals(lib.all(x, dim=(0, 1))) is False
    assert vals(lib.any(x, dim=-1, keepdim=True)) == [[True], [True]]
    # dim=() reduces nothing: each element's truth value.
    assert vals(x.all(dim=())) == [[True, False], [True, True]]
    assert vals(lib.tensor(3).all(dim=0)) is True
    assert lib.tensor([1, 0]).all(dim=0).dtype == lib.bool


def test_all_any_bad_dims(lib):
    x = lib.ones(2, 2)
    with pytest.raises(IndexError):
        x.all(dim=2)
    with pytest.raises(IndexError):
        lib.any(x, dim=-3)
    with pytest.raises(RuntimeError):
        x.all(dim=(0, 0))


def test_all_any_not_differentiable(lib):
    x = lib.ones(3, requires_grad=True)
    r = (x > 0).all()
    assert not r.requires_grad and r.grad_fn is None
    assert not x.any().requires_grad


# ----------------------------------------------------------------- isclose / allclose


def test_isclose_values(lib):
    a = lib.tensor([1.0, 2.0, NAN, INF, INF, 1e10])
    b = lib.tensor([1.0, 2.00001, NAN, INF, -INF, 1.00001e10])
    assert vals(lib.isclose(a, b)) == [True, True, False, True, False, False]
    assert vals(a.isclose(b, equal_nan=True)) == [True, True, True, True, False, False]
    assert vals(lib.isclose(a, b, rtol=0, atol=0)) == [True, False, False, True, False, False]
    assert vals(lib.isclose(a, b, rtol=1e-4)) == [True, True, False, True, False, True]


def test_isclose_integer_and_bool(lib):
    i = lib.tensor([1, 2, 100, 10**18])
    j = lib.tensor([1, 3, 101, 10**18 + 1])
    assert vals(lib.isclose(i, j)) == [True, False, False, True]
    assert vals(lib.isclose(i, j, atol=1.5)) == [True, True, True, True]
    assert vals(lib.isclose(i, j, rtol=0.01, atol=0)) == [True, False, True, True]
    t, f = lib.tensor([True, False]), lib.tensor([True, True])
    assert vals(lib.isclose(t, f)) == [True, False]
    assert vals(lib.isclose(t, f, atol=1.0)) == [True, True]


def test_isclose_broadcasts_and_allclose(lib):
    a = lib.ones(2, 1)
    b = lib.ones(3) + 1e-9
    assert lib.isclose(a, b).shape == (2, 3)
    assert lib.allclose(a, b) is True
    assert a.allclose(b + 1e-3) is False
    x = lib.tensor([1.0, NAN])
    assert lib.allclose(x, x) is False
    assert lib.allclose(x, x, equal_nan=True) is True
    assert x.allclose(x, rtol=0, atol=0, equal_nan=True) is True


def test_isclose_errors(lib):
    f32, f64 = lib.ones(2), lib.ones(2, dtype=lib.float64)
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        lib.isclose(f32, f64)
    with pytest.raises(RuntimeError, match="Long did not match Float"):
        lib.allclose(lib.tensor([1]), lib.tensor([1.0]))
    with pytest.raises(
        RuntimeError, match="rtol must be greater than or equal to zero, but got -1"
    ):
        lib.isclose(f32, f32, rtol=-1)
    with pytest.raises(
        RuntimeError, match="atol must be greater than or equal to zero, but got -1e-10"
    ):
        f32.isclose(f32, atol=-1e-10)
    with pytest.raises(RuntimeError, match="must match the size"):
        lib.allclose(lib.ones(2), lib.ones(3))
    with pytest.raises(TypeError):
        lib.isclose(f32, 1.0)
    with pytest.raises(TypeError):
        f32.allclose([1.0, 1.0])


# ----------------------------------------------------------------- equal


def test_equal(lib):
    assert lib.equal(lib.ones(2), lib.ones(2)) is True
    assert lib.ones(2).equal(lib.ones(2, dtype=lib.float64)) is True  # promoted
    assert lib.equal(lib.tensor([1, 2]), lib.tensor([1.0, 2.0])) is True
    assert lib.equal(lib.ones(2), lib.ones(3)) is False
    assert lib.equal(lib.ones(1, 2), lib.ones(2)) is False  # no broadcasting
    assert lib.equal(lib.tensor([NAN]), lib.tensor([NAN])) is False
    assert lib.equal(lib.zeros(0), lib.zeros(0)) is True
    a = lib.arange(6.0).reshape(2, 3)
    assert lib.equal(a.t(), a.t().contiguous()) is True  # strided operand
    assert lib.equal(a, a + 1) is False


# ----------------------------------------------------------------- torch oracle


@pytest.mark.parametrize("seed", range(6))
def test_against_torch(torch, seed):
    rng = np.random.default_rng(seed)
    for np_dt, fg_dt, th_dt in [
        (np.float32, fg.float32, torch.float32),
        (np.float64, fg.float64, torch.float64),
        (np.int64, fg.int64, torch.int64),
    ]:
        base = rng.integers(-3, 4, size=(4, 5)).astype(np_dt)
        if np_dt != np.int64:
            base = base * rng.choice([1.0, 1.0 + 1e-6, 1.0 + 1e-3], size=base.shape).astype(np_dt)
            base[0, 0], base[1, 1] = np.nan, np.inf
        other = base.copy()
        other[rng.random(base.shape) < 0.3] += np_dt(1)
        if np_dt != np.int64:
            other[0, 0] = np.nan
            other = (other * (1 + rng.choice([0.0, 1e-7, 1e-5], size=other.shape))).astype(np_dt)
        for a, b in [(base, other), (base, other[:1]), (base[:, :1], other)]:
            fa, fb = fg.tensor(a.tolist(), dtype=fg_dt), fg.tensor(b.tolist(), dtype=fg_dt)
            ta, tb = torch.tensor(a, dtype=th_dt), torch.tensor(b, dtype=th_dt)
            for rtol, atol, equal_nan in [(1e-5, 1e-8, False), (0.0, 0.0, True), (1e-3, 0.5, True)]:
                got = fg.isclose(fa, fb, rtol=rtol, atol=atol, equal_nan=equal_nan).tolist()
                want = torch.isclose(ta, tb, rtol=rtol, atol=atol, equal_nan=equal_nan).tolist()
                assert got == want
                assert fg.allclose(fa, fb, rtol, atol, equal_nan) == torch.allclose(
                    ta, tb, rtol, atol, equal_nan
                )
            t = fa != fb
            tt = ta != tb
            for dim in [None, 0, 1, (0, 1), ()]:
                for keepdim in [False, True]:
                    kw = {} if dim is None else {"dim": dim}
                    assert (
                        t.all(**kw, keepdim=keepdim).tolist()
                        == tt.all(**kw, keepdim=keepdim).tolist()
                    )
                    assert (
                        fa.any(**kw, keepdim=keepdim).tolist()
                        == ta.any(**kw, keepdim=keepdim).tolist()
                    )
            assert fg.equal(fa, fb) == torch.equal(ta, tb)
            assert fg.equal(fa, fa.clone()) == torch.equal(ta, ta.clone())
