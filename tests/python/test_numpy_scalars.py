"""NumPy scalars (`np.float32(2)`, `np.int64(3)`, `np.bool_(True)`) work
wherever a Python number does, with torch's dtypes. Runs on ferrograd and on
torch (the `lib` fixture), so torch checks each expectation."""

import numpy as np
import pytest

CASES = [
    ("t + np.float32(1)", "float32", [1.25, 2.0]),
    ("np.float32(2) * t", "float32", [0.5, 2.0]),
    ("np.int64(2) + t", "float32", [2.25, 3.0]),
    ("i * np.float32(2.5)", "float32", [2.5, 5.0]),
    ("i * np.int32(3)", "int64", [3, 6]),
    ("i + np.bool_(True)", "float32", [2.0, 3.0]),
    ("t > np.float32(0.5)", "bool", [False, True]),
    ("t.clamp(np.float32(0), np.float32(0.5))", "float32", [0.25, 0.5]),
    ("t.pow(np.int64(2))", "float32", [0.0625, 1.0]),
    ("t ** np.float32(2)", "float32", [0.0625, 1.0]),
    ("t.clone().fill_(np.float32(3))", "float32", [3.0, 3.0]),
    ("lib.full((2,), np.float32(1.5))", "float32", [1.5, 1.5]),
    ("t.add(np.float32(1), alpha=np.int64(2))", "float32", [2.25, 3.0]),
    ("t / np.float16(2)", "float32", [0.125, 0.5]),
    ("lib.where(t > 0.5, t, np.float32(0))", "float32", [0.0, 1.0]),
    ("t.masked_fill(b, np.float32(9))", "float32", [9.0, 1.0]),
    ("t - np.uint8(1)", "float32", [-0.75, 0.0]),
]


@pytest.mark.parametrize("expr,dtype,want", CASES, ids=[c[0] for c in CASES])
def test_numpy_scalar_operands(lib, expr, dtype, want):
    env = {
        "lib": lib,
        "np": np,
        "t": lib.tensor([0.25, 1.0]),
        "i": lib.tensor([1, 2]),
        "b": lib.tensor([True, False]),
    }
    r = eval(expr, env)
    assert r.dtype == getattr(lib, dtype)
    assert r.tolist() == want


def test_numpy_scalar_keeps_the_graph(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    (x * np.float32(3)).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_inplace_with_numpy_scalar_changes_values_only(lib):
    t = lib.tensor([1.0, 2.0])
    t.mul_(np.float32(2))
    t.add_(np.int64(1))
    assert t.dtype == lib.float32
    assert t.tolist() == [3.0, 5.0]
