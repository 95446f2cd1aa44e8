"""addmm, addmv, baddbmm, addbmm, inner and vdot: coefficients, beta=0
ignoring the input (NaN included), in-place forms and shapes, on ferrograd
and (through the `lib` fixture) torch. Gradients are checked in the op
registry."""

import math

import pytest


def test_coefficients_and_shapes(lib):
    x = lib.ones(2, 2)
    a, b = lib.ones(2, 3), lib.full((3, 2), 2.0)
    assert lib.addmm(x, a, b).tolist() == [[7.0, 7.0], [7.0, 7.0]]
    assert x.addmm(a, b, beta=0.5, alpha=2).tolist() == [[12.5, 12.5], [12.5, 12.5]]
    assert lib.addmv(lib.zeros(2), a, lib.ones(3), alpha=-1).tolist() == [-3.0, -3.0]
    bb1, bb2 = lib.ones(4, 2, 3), lib.ones(4, 3, 2)
    assert list(lib.baddbmm(lib.zeros(4, 2, 2), bb1, bb2).shape) == [4, 2, 2]
    assert lib.addbmm(x, bb1, bb2, beta=2).tolist() == [[14.0, 14.0], [14.0, 14.0]]
    assert lib.inner(lib.ones(2, 3), lib.ones(4, 3)).tolist() == [[3.0] * 4] * 2
    assert lib.vdot(lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0])).item() == 11.0


def test_beta_zero_ignores_input(lib):
    nan = lib.full((2, 2), math.nan)
    r = lib.addmm(nan, lib.ones(2, 3), lib.ones(3, 2), beta=0)
    assert r.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_in_place(lib):
    x = lib.zeros(2, 2)
    v = x._version
    assert x.addmm_(lib.ones(2, 3), lib.ones(3, 2), alpha=2) is x
    assert x.tolist() == [[6.0, 6.0], [6.0, 6.0]] and x._version == v + 1


def test_shape_errors(lib):
    with pytest.raises(RuntimeError):
        lib.addmm(lib.ones(2, 2), lib.ones(2, 3), lib.ones(2, 2))
    with pytest.raises(RuntimeError, match="last dimension must match"):
        lib.inner(lib.ones(2, 3), lib.ones(2))


@pytest.mark.parametrize("which", ["a", "b", "both"])
def test_mm_gradient_follows_a_column_major_operand(lib, which):
    # torch gives a column-major operand (a transposed contiguous matrix) a
    # column-major gradient: a weight used as w.t() gets a contiguous grad.
    a0 = lib.arange(12, dtype=lib.float64).reshape(3, 4) / 7
    b0 = lib.arange(20, dtype=lib.float64).reshape(4, 5) / 11
    a = a0.t().contiguous().requires_grad_() if which in ("a", "both") else a0.requires_grad_()
    b = b0.t().contiguous().requires_grad_() if which in ("b", "both") else b0.requires_grad_()
    ua = a.t() if which in ("a", "both") else a
    ub = b.t() if which in ("b", "both") else b
    g = lib.arange(15, dtype=lib.float64).reshape(3, 5) - 7
    ua.mm(ub).backward(g)
    assert a.grad.is_contiguous() and b.grad.is_contiguous()
    da = g.mm(b0.t())
    db = a0.t().mm(g)
    want_a = da.t() if which in ("a", "both") else da
    want_b = db.t() if which in ("b", "both") else db
    assert lib.allclose(a.grad, want_a) and lib.allclose(b.grad, want_b)
