"""Helpers shared by the custom autograd Function tests (test_function*.py):
nested-list readers, a tolerant comparison, a float32 leaf builder and the
``Square`` Function."""

import ferrograd as torch
from helpers import square_function


def tolist(t):
    if t.dim() == 0:
        return t.item()
    return [tolist(t.select(0, i)) for i in range(t.shape[0])]


def flat(v):
    if isinstance(v, list):
        return [y for x in v for y in flat(x)]
    return [v]


def assert_close(a, b, tol=1e-6):
    a = flat(tolist(a) if hasattr(a, "dim") else a)
    b = flat(tolist(b) if hasattr(b, "dim") else b)
    assert len(a) == len(b), (a, b)
    for x, y in zip(a, b):
        assert abs(x - y) <= tol * (1 + abs(y)), (a, b)


def leaf(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype, requires_grad=True)


Square = square_function(torch)
