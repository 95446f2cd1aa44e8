"""Every op declared in a family table of src/ops (``_C._op_table()``) gets
the same surface from its one entry: method, in-place method, module
function with ``out=``, in-place function, aliases, docstring, and a row
with its autograd node and batching rule. These tests walk the table, so a
new entry is checked without a new test."""

import warnings

import numpy as np
import pytest

import ferrograd as fg

ROWS = fg._C._op_table()
DOMAIN = {"normal": 0.7, "pos": 1.3, "unit": 0.4, "away": 0.8, "gt1": 1.7}


def names(row):
    return [(row["name"], row["inplace"])] + [(a, a + "_") for a in row["aliases"]]


def sample(row, dtype=fg.float64):
    v = DOMAIN[row["domain"]]
    return fg.tensor([[v, v * 0.5], [v * 0.75, v]], dtype=dtype)


def test_table_is_not_empty_and_rows_are_complete():
    assert len(ROWS) >= 27
    seen = set()
    for row in ROWS:
        assert row["kind"] == "unary_float"
        assert row["batch_rule"] == "elementwise"
        assert row["doc"], row["name"]
        assert row["node"].endswith("Backward0"), row["node"]
        assert row["inplace"] == row["name"] + "_"
        for n, _ in names(row):
            assert n not in seen, f"{n} declared twice"
            seen.add(n)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["name"])
def test_every_name_has_method_function_and_inplace_forms(row):
    x = sample(row)
    want = getattr(x, row["name"])()
    assert getattr(fg, row["name"]).__doc__.strip() == row["doc"]
    for name, inplace in names(row):
        np.testing.assert_array_equal(getattr(fg, name)(x).numpy(), want.numpy())
        np.testing.assert_array_equal(getattr(x, name)().numpy(), want.numpy())
        y = x.clone()
        assert getattr(y, inplace)() is y
        np.testing.assert_array_equal(y.numpy(), want.numpy())
        z = x.clone()
        assert getattr(fg, inplace)(z) is z
        np.testing.assert_array_equal(z.numpy(), want.numpy())


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["name"])
def test_out_argument(row):
    f = getattr(fg, row["name"])
    x = sample(row)
    want = f(x).numpy()
    out = fg.empty(2, 2, dtype=fg.float64)
    assert f(x, out=out) is out
    np.testing.assert_array_equal(out.numpy(), want)
    # a float32 out receives the float64 result cast down
    out32 = fg.empty(2, 2)
    f(x, out=out32)
    np.testing.assert_allclose(out32.numpy(), want.astype(np.float32), rtol=1e-6)
    # an empty out is resized silently, a non-empty one with torch's warning
    empty = fg.empty(0, dtype=fg.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(x, out=empty)
    assert empty.shape == (2, 2)
    small = fg.zeros(3, dtype=fg.float64)
    with pytest.warns(UserWarning, match="was resized"):
        f(x, out=small)
    np.testing.assert_array_equal(small.numpy(), want)
    # a floating result cannot go into an integer out, and nothing is written
    ints = fg.zeros(2, 2, dtype=fg.int64)
    with pytest.raises(RuntimeError, match="can't be cast"):
        f(x, out=ints)
    assert ints.sum().item() == 0
    # out= refuses to record autograd, as torch
    leaf = x.clone().requires_grad_()
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic"):
        f(leaf, out=fg.empty(2, 2, dtype=fg.float64))


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["name"])
def test_integers_compute_in_the_default_float_dtype(row):
    x = fg.tensor([[1, 2]]) if row["domain"] != "unit" else fg.tensor([[0, 0]])
    y = getattr(x, row["name"])()
    assert y.dtype == fg.float32
    # in place on an integer tensor cannot hold the float result
    with pytest.raises(RuntimeError):
        getattr(x.clone(), row["inplace"])()


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["name"])
def test_node_and_inplace_under_autograd(row):
    x = sample(row).requires_grad_()
    y = getattr(x, row["name"])()
    assert type(y.grad_fn).__name__ == row["node"]
    # in place on a non-leaf records the same op (rebased history)
    z = x * 1.0
    getattr(z, row["inplace"])()
    (g,) = fg.autograd.grad(z.sum(), x)
    (g2,) = fg.autograd.grad(getattr(x, row["name"])().sum(), x)
    np.testing.assert_allclose(g.numpy(), g2.numpy(), rtol=1e-12)


def test_sinc_matches_its_definition_and_torch_formula():
    x = fg.tensor([0.0, 0.25, -1.5, 2.0], dtype=fg.float64)
    v = x.numpy()
    want = np.where(v == 0, 1.0, np.sin(np.pi * v) / np.where(v == 0, 1, np.pi * v))
    np.testing.assert_allclose(fg.sinc(x).numpy(), want, rtol=1e-15, atol=1e-16)
    assert fg.autograd.gradcheck(
        fg.sinc, (fg.tensor([0.3, -1.2], dtype=fg.float64, requires_grad=True),)
    )
    # derivative 0 at 0, as torch defines it
    z = fg.zeros(1, dtype=fg.float64, requires_grad=True)
    (g,) = fg.autograd.grad(fg.sinc(z).sum(), z)
    assert g.item() == 0.0


def test_sinc_against_torch(torch):
    v = np.array([0.0, 0.25, -1.5, 2.0, 1e-9])
    got = fg.sinc(fg.tensor(v, dtype=fg.float32)).numpy()
    want = torch.sinc(torch.tensor(v, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-7)
