"""Every op declared in a family table of src/ops (``_C._op_table()``) gets
the same surface from its one entry: method, in-place method, module
function with ``out=``, in-place function, aliases, docstring, and a row
with its autograd node and batching rule; a binary op also its operator
dunders (reflected and in-place ones too). These tests walk the table, so a
new entry is checked without a new test (binary ones against torch)."""

import operator
import warnings

import numpy as np
import pytest

import ferrograd as fg

TABLE = fg._C._op_table()
ROWS = [r for r in TABLE if r["kind"] == "unary_float"]
BINARY = [r for r in TABLE if r["kind"] != "unary_float"]
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


# ---------------------------------------------------------------------------
# binary tables: arithmetic (ops/arith.rs, trig.rs, special.rs) and
# comparison/logical/bitwise (ops/pointwise.rs)

VALUES = {
    "normal": [[0.7, -1.3, 2.0], [1.5, 0.4, -0.6]],
    "away": [[0.8, -1.2, 1.9], [1.4, -0.9, 2.2]],
    "pos": [[0.7, 1.3, 2.0], [1.5, 0.4, 0.6]],
}
INTEGRAL = ("bitwise",)


def bnames(row):
    return [(row["name"], row["inplace"])] + [(a, a + "_") for a in row["aliases"]]


def operands(lib, row, dtype="float64"):
    """self (2, 3) and other (3,) (broadcast), equal in some places."""
    if row["kind"] in INTEGRAL:
        return lib.tensor([[1, 2, 3], [4, 5, 6]]), lib.tensor([3, 2, 6])
    d1, d2 = row["domain"].split()
    dt = getattr(lib, dtype)
    x = lib.tensor(VALUES[d1], dtype=dt)
    return x, x[1].clone() if d1 == d2 else lib.tensor(VALUES[d2][0], dtype=dt)


def outcome(f):
    """What `f()` gives: its value and dtype, or the exception's type."""
    try:
        r = f()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__
    return str(r.dtype).split(".")[-1], r.detach().numpy().tolist()


# Ops whose float32 kernel is a polynomial within a few ulp (torch's is
# libm's, within 1): their float32 results are compared to 4e-7.
APPROXIMATE_F32 = {"atan2", "arctan2", "hypot"}


def same(a, b, name=""):
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    assert a[0] == b[0]
    rtol = 4e-7 if a[0] == "float32" and name in APPROXIMATE_F32 else 1e-12
    np.testing.assert_allclose(np.array(a[1], dtype=float), np.array(b[1], dtype=float), rtol=rtol)


def test_binary_rows_are_complete():
    kinds = {"binary_numeric", "binary_float", "compare", "logical", "bitwise"}
    assert {r["kind"] for r in BINARY} == kinds
    seen = set()
    for row in BINARY:
        assert row["batch_rule"] == "broadcast"
        assert row["doc"], row["name"]
        assert row["form"] in ("plain", "alpha", "written", "first", "tensor")
        differentiable = row["kind"] in ("binary_numeric", "binary_float")
        assert row["node"].endswith("Backward0") if differentiable else row["node"] == ""
        assert row["inplace"] == row["name"] + "_"
        for n, _ in bnames(row):
            assert n not in seen, f"{n} declared twice"
            seen.add(n)
    assert {"add", "sub", "mul", "div", "true_divide", "atan2", "eq", "greater"} <= seen


@pytest.mark.parametrize("row", BINARY, ids=lambda r: r["name"])
def test_binary_every_name_and_form_matches_torch(row, torch):
    fx, fy = operands(fg, row)
    tx, ty = operands(torch, row)
    if row["form"] != "written":
        assert getattr(fg.Tensor, row["inplace"]).__doc__
        assert getattr(fg, row["name"]).__doc__.strip() == row["doc"]
    for name, inplace in bnames(row):
        want = outcome(lambda: getattr(torch, name)(tx, ty))
        same(outcome(lambda: getattr(fg, name)(fx, fy)), want)
        same(outcome(lambda: getattr(fx, name)(fy)), want)
        # other as a Python number
        same(outcome(lambda: getattr(fx, name)(2)), outcome(lambda: getattr(tx, name)(2)))
        # in place returns self and writes self (keeping its dtype)
        y = fx.clone()
        assert getattr(y, inplace)(fy) is y
        z = tx.clone()
        getattr(z, inplace)(ty)
        same(outcome(lambda: y), outcome(lambda: z))
        # out=
        out = fg.empty(0, dtype=fx.dtype if row["kind"] not in ("compare", "logical") else fg.bool)
        assert getattr(fg, name)(fx, fy, out=out) is out
        same(outcome(lambda: out), want)


@pytest.mark.parametrize(
    "row", [r for r in BINARY if r["form"] == "alpha"], ids=lambda r: r["name"]
)
def test_binary_alpha(row, torch):
    fx, fy = operands(fg, row)
    tx, ty = operands(torch, row)
    n, n_ = row["name"], row["inplace"]
    same(
        outcome(lambda: getattr(fg, n)(fx, fy, alpha=2.5)),
        outcome(lambda: getattr(torch, n)(tx, ty, alpha=2.5)),
    )
    same(
        outcome(lambda: getattr(fx, n)(fy, alpha=-2)), outcome(lambda: getattr(tx, n)(ty, alpha=-2))
    )
    y, z = fx.clone(), tx.clone()
    getattr(y, n_)(fy, alpha=0.5)
    getattr(z, n_)(ty, alpha=0.5)
    same(outcome(lambda: y), outcome(lambda: z))
    # a float alpha with integer operands is refused
    fi, ti = fg.tensor([1, 2]), torch.tensor([1, 2])
    same(
        outcome(lambda: getattr(fi, n)(fi, alpha=1.5)),
        outcome(lambda: getattr(ti, n)(ti, alpha=1.5)),
    )


def numbers(row):
    # (known mismatch: torch refuses `x - True` and `True - x`, ferrograd
    # wraps True as a number of x's dtype and subtracts)
    return (2, 2.5) if row["name"] == "sub" else (2, 2.5, True)


def dunder_rows():
    return [(r, d) for r in BINARY for d in r["dunders"]]


def dunder_kind(row, dunder):
    """`fwd`, `rev` or `inp`, and the `operator` function that calls it."""
    fwd = row["dunders"][0]
    base = fwd.strip("_")
    f = getattr(operator, base, None) or getattr(operator, base + "_")
    if dunder == fwd:
        return "fwd", f
    if dunder == "__r" + fwd[2:]:
        return "rev", f
    assert dunder == "__i" + fwd[2:], dunder
    return "inp", getattr(operator, "i" + base)


@pytest.mark.parametrize(
    "row,dunder", dunder_rows(), ids=lambda v: v if isinstance(v, str) else v["name"]
)
def test_binary_dunders_match_torch(row, dunder, torch):
    kind, f = dunder_kind(row, dunder)
    fx, fy = operands(fg, row)
    tx, ty = operands(torch, row)
    if kind == "inp":
        y, z = fx.clone(), tx.clone()
        r = f(y, fy)
        assert r is y
        f(z, ty)
        same(outcome(lambda: y), outcome(lambda: z))
        y, z = fx.clone(), tx.clone()
        same(outcome(lambda: f(y, 2)), outcome(lambda: f(z, 2)))
        return
    if kind == "rev":
        # the reflected form: a Python number on the left
        for number in numbers(row):
            same(outcome(lambda: f(number, fx)), outcome(lambda: f(number, tx)))
        return
    same(outcome(lambda: f(fx, fy)), outcome(lambda: f(tx, ty)))
    for number in numbers(row):
        same(outcome(lambda: f(fx, number)), outcome(lambda: f(tx, number)))
    # a foreign operand: NotImplemented, so Python raises its TypeError
    assert getattr(fx, dunder)(object()) is NotImplemented
    if dunder not in ("__eq__", "__ne__"):  # (those fall back to identity)
        with pytest.raises(TypeError):
            f(fx, "a")


PROMOTION = [
    ("int", "int"),
    ("int", 2.5),
    ("int", 3),
    ("bool", "bool"),
    ("int", "bool"),
    ("float32", "int"),
    ("float32", "float64_0d"),
    ("int_0d", "float32"),
    ("bool", True),
]


def typed(lib, kind, row):
    base = [[1, 2, 3], [4, 0, 6]] if row["kind"] != "logical" else [[1, 0, 3], [0, 0, 6]]
    if not isinstance(kind, str):
        return kind
    return {
        "int": lambda: lib.tensor(base),
        "bool": lambda: lib.tensor([[True, False, True], [False, True, True]]),
        "float32": lambda: lib.tensor(base, dtype=lib.float32) + 0.5,
        "float64_0d": lambda: lib.tensor(2.0, dtype=lib.float64),
        "int_0d": lambda: lib.tensor(3),
    }[kind]()


@pytest.mark.parametrize("row", BINARY, ids=lambda r: r["name"])
@pytest.mark.parametrize("kinds", PROMOTION, ids=str)
def test_binary_integer_and_bool_promotion(row, kinds, torch):
    name, inplace = row["name"], row["inplace"]
    fa, fb = typed(fg, kinds[0], row), typed(fg, kinds[1], row)
    ta, tb = typed(torch, kinds[0], row), typed(torch, kinds[1], row)
    same(outcome(lambda: getattr(fa, name)(fb)), outcome(lambda: getattr(ta, name)(tb)), name)
    # in place: the result must cast to self's dtype (int_tensor.add_(1.5))
    ya, za = fa.clone(), ta.clone()
    same(
        outcome(lambda: getattr(ya, inplace)(fb) and ya),
        outcome(lambda: getattr(za, inplace)(tb) and za),
        name,
    )


@pytest.mark.parametrize("row", BINARY, ids=lambda r: r["name"])
def test_binary_node_names_and_autograd(row, torch):
    if row["kind"] in INTEGRAL:
        return
    fx, fy = operands(fg, row)
    tx, ty = operands(torch, row)
    fx.requires_grad_()
    tx.requires_grad_()
    r = getattr(fx, row["name"])(fy)
    if not row["node"]:
        assert not r.requires_grad and r.grad_fn is None
        return
    assert type(r.grad_fn).__name__ == row["node"]
    assert type(getattr(tx, row["name"])(ty).grad_fn).__name__ == row["node"]
    # in place on a non-leaf records the same op (rebased history)
    z = fx * 1.0
    getattr(z, row["inplace"])(fy)
    (g,) = fg.autograd.grad(z.sum(), fx)
    (g2,) = fg.autograd.grad(getattr(fx, row["name"])(fy).sum(), fx)
    np.testing.assert_allclose(g.numpy(), g2.numpy(), rtol=1e-12)


@pytest.mark.parametrize("row", BINARY, ids=lambda r: r["name"])
def test_binary_errors_match_torch(row, torch):
    name, inplace = row["name"], row["inplace"]

    def cases(lib):
        x = operands(lib, row)[0]
        return [
            # shapes that do not broadcast
            lambda: getattr(x, name)(x[:, :2]),
            # in place cannot grow self to the broadcast shape
            lambda: getattr(x[0].clone(), inplace)(x),
            # out= under autograd
            lambda: getattr(lib, name)(
                x.clone().requires_grad_() if x.is_floating_point() else x,
                x,
                out=lib.empty(0, dtype=x.dtype),
            ),
        ]

    for f, t in zip(cases(fg), cases(torch)):
        same(outcome(f), outcome(t))
