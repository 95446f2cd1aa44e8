"""Helpers shared by the Python tests: tensor builders, value readers and
comparisons, and the small custom Functions several test files use.

Everything here takes the library under test (``lib``: ferrograd or torch,
see the ``lib`` fixture in conftest.py) where it builds tensors, so the same
test code runs on both. Torch availability is the ``torch`` fixture (skips
when torch is absent) in conftest.py.
"""

from __future__ import annotations

import math

import numpy as np

# ---- tensors --------------------------------------------------------------


def f64(lib, values, requires_grad=False, dtype=None):
    """A float64 (or ``dtype``) tensor holding ``values`` (nested lists or a
    numpy array)."""
    return lib.tensor(values, dtype=dtype or lib.float64, requires_grad=requires_grad)


def leaf(lib, values, requires_grad=True, dtype=None):
    """``f64`` as a leaf that requires grad (unless told otherwise)."""
    return f64(lib, values, requires_grad=requires_grad, dtype=dtype)


# ---- reading and comparing values -----------------------------------------


def vals(t):
    """A tensor's values as (nested) Python lists."""
    return t.tolist()


def close(t, expected, rtol=1e-12):
    """Asserts ``t`` (a tensor or array-like) equals ``expected`` (the same)
    within ``rtol``."""
    from gradcheck_util import to_numpy

    if hasattr(expected, "detach"):
        expected = to_numpy(expected)
    if hasattr(t, "detach"):
        t = to_numpy(t)
    np.testing.assert_allclose(t, np.asarray(expected, dtype=np.float64), rtol=rtol)


def same(a, b, signed_zero=False) -> bool:
    """Whether ``a`` and ``b`` (array-likes) have the same shape and values,
    NaN equal to NaN; with ``signed_zero`` the sign of a zero counts too."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return False
    if not signed_zero:
        return bool(np.array_equal(a, b, equal_nan=True))
    return all(
        (math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(1, y))
        for x, y in zip(a.ravel(), b.ravel())
    )


# ---- custom Functions -----------------------------------------------------


def square_function(lib, grad=None, once_differentiable=False):
    """A custom Function computing ``x * x`` that saves ``x`` for a
    hand-written backward: ``2 * x * g``, or ``grad(x, g)`` where given (a
    wrong one, for the checkers to catch); ``once_differentiable`` marks the
    backward so."""

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return grad(x, g) if grad else 2 * x * g

    if once_differentiable:
        backward = lib.autograd.function.once_differentiable(backward)

    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

    Square.backward = staticmethod(backward)
    return Square
