"""Reductions, softmax family and matrix products: values, errors, numeric
gradients (first and second order, float64 central differences) and, when
torch is installed, torch as an oracle for values and gradients."""

import math

import numpy as np
import pytest

import ferrograd as fg

RNG = np.random.default_rng(1234)


# ----------------------------------------------------------------- helpers


def to_np(t):
    """A ferrograd tensor's values as a numpy array (no other API needed)."""
    t = t.detach()
    shape = tuple(t.shape)
    flat = t.reshape(-1)
    vals = [flat.select(0, i).item() for i in range(flat.numel())]
    dt = {fg.float32: np.float32, fg.float64: np.float64, fg.int64: np.int64, fg.bool: np.bool_}[
        t.dtype
    ]
    return np.array(vals, dtype=dt).reshape(shape)


def tensor(a, dtype=fg.float64, requires_grad=False):
    a = np.asarray(a)
    return fg.tensor(a.tolist(), dtype=dtype, requires_grad=requires_grad)


def randn(*shape):
    return RNG.standard_normal(shape)


def leaves(arrays):
    return [tensor(a, requires_grad=True) for a in arrays]


def vjp(f, xs, v):
    """Analytic gradient of sum(f(*xs) * v) w.r.t. every x (None -> 0)."""
    out = f(*xs)
    s = (out * tensor(v, dtype=out.dtype)).sum()
    gs = fg.autograd.grad([s], xs, allow_unused=True)
    return [np.zeros(x.shape) if g is None else to_np(g) for g, x in zip(gs, xs)]


def numeric_grad(h, arrays, eps=1e-6):
    """Central differences of the scalar function h(list of arrays)."""
    out = []
    for k, a in enumerate(arrays):
        g = np.zeros(a.shape)
        for idx in np.ndindex(*a.shape):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            g[idx] = (h(plus) - h(minus)) / (2 * eps)
        out.append(g)
    return out


def gradcheck(f, arrays, gradgrad=True, atol=1e-5, rtol=1e-4):
    """First- (and second-) order gradients of f against central differences."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    out = f(*leaves(arrays))
    v = RNG.standard_normal(tuple(out.shape))

    def h(arrs):
        return float((to_np(f(*[tensor(a) for a in arrs])) * v).sum())

    analytic = vjp(f, leaves(arrays), v)
    numeric = numeric_grad(h, arrays)
    for a, n in zip(analytic, numeric):
        np.testing.assert_allclose(a, n, atol=atol, rtol=rtol)
    if not gradgrad:
        return
    ws = [RNG.standard_normal(a.shape) for a in arrays]

    def h2(arrs):
        return float(sum((g * w).sum() for g, w in zip(vjp(f, leaves(arrs), v), ws)))

    xs = leaves(arrays)
    out = f(*xs)
    s = (out * tensor(v)).sum()
    gs = fg.autograd.grad([s], xs, create_graph=True)
    s2 = sum(
        ((g * tensor(w)).sum() for g, w in zip(gs, ws) if g is not None and g.requires_grad),
        tensor(0.0),
    )
    if not s2.requires_grad:
        analytic2 = [np.zeros(a.shape) for a in arrays]
    else:
        gg = fg.autograd.grad([s2], xs, allow_unused=True)
        analytic2 = [np.zeros(a.shape) if g is None else to_np(g) for g in gg]
    numeric2 = numeric_grad(h2, arrays)
    for a, n in zip(analytic2, numeric2):
        np.testing.assert_allclose(a, n, atol=10 * atol, rtol=10 * rtol)


# ------------------------------------------------------- op registry (gradcheck)

# name -> (function of the module `m` and inputs, input shapes). The same
# lambda runs on ferrograd and on torch.
OPS = {
    "sum_all": (lambda m, x: x.sum(), [(3, 4)]),
    "sum_dim": (lambda m, x: x.sum(1), [(3, 4)]),
    "sum_dims_keep": (lambda m, x: x.sum((0, 2), keepdim=True), [(2, 3, 4)]),
    "sum_neg": (lambda m, x: m.sum(x, -1), [(2, 3)]),
    "mean_all": (lambda m, x: x.mean(), [(3, 4)]),
    "mean_dims": (lambda m, x: x.mean((-1, 0)), [(2, 3, 4)]),
    "mean_keep": (lambda m, x: m.mean(x, 1, keepdim=True), [(3, 4)]),
    "prod_all": (lambda m, x: x.prod(), [(2, 3)]),
    "prod_dim": (lambda m, x: x.prod(1), [(3, 4)]),
    "prod_keep_neg": (lambda m, x: m.prod(x, -2, keepdim=True), [(2, 3, 2)]),
    "amax_all": (lambda m, x: x.amax(), [(3, 4)]),
    "amax_dims": (lambda m, x: x.amax((0, 2)), [(2, 3, 4)]),
    "amin_keep": (lambda m, x: m.amin(x, -1, keepdim=True), [(3, 4)]),
    "max_all": (lambda m, x: x.max(), [(3, 4)]),
    "min_all": (lambda m, x: m.min(x), [(3, 4)]),
    "max_dim": (lambda m, x: x.max(1)[0], [(3, 4)]),
    "max_dim_keep": (lambda m, x: m.max(x, 0, keepdim=True).values, [(3, 4)]),
    "min_dim_neg": (lambda m, x: x.min(-1).values, [(2, 3, 4)]),
    "var_all": (lambda m, x: x.var(), [(3, 4)]),
    "var_dim": (lambda m, x: x.var(1), [(3, 4)]),
    "var_corr0_keep": (lambda m, x: x.var((0, 2), correction=0, keepdim=True), [(2, 3, 4)]),
    "var_unbiased_false": (lambda m, x: m.var(x, 0, False), [(3, 4)]),
    "std_all": (lambda m, x: x.std(), [(3, 4)]),
    "std_dim": (lambda m, x: m.std(x, -1, keepdim=True), [(3, 4)]),
    "std_corr2": (lambda m, x: x.std(0, correction=2), [(4, 3)]),
    "norm_default": (lambda m, x: x.norm(), [(3, 4)]),
    "norm_p1_dim": (lambda m, x: x.norm(1, dim=1), [(3, 4)]),
    "norm_inf_dim": (lambda m, x: x.norm(float("inf"), dim=0), [(3, 4)]),
    "norm_ninf": (lambda m, x: x.norm(float("-inf")), [(3, 4)]),
    "norm_p3_keep": (lambda m, x: m.norm(x, 3, dim=(0, 1), keepdim=True), [(3, 4)]),
    "norm_p1_5": (lambda m, x: x.norm(1.5, dim=-1), [(3, 4)]),
    "norm_fro_dims": (lambda m, x: x.norm("fro", dim=(0, 2)), [(2, 3, 4)]),
    "logsumexp": (lambda m, x: x.logsumexp(1), [(3, 4)]),
    "logsumexp_dims_keep": (lambda m, x: m.logsumexp(x, (0, 2), keepdim=True), [(2, 3, 4)]),
    "cumsum_0": (lambda m, x: x.cumsum(0), [(3, 4)]),
    "cumsum_neg": (lambda m, x: m.cumsum(x, -1), [(2, 3, 4)]),
    "softmax_1": (lambda m, x: x.softmax(1), [(3, 4)]),
    "softmax_0": (lambda m, x: m.softmax(x, 0), [(3, 4)]),
    "log_softmax_neg": (lambda m, x: x.log_softmax(-1), [(2, 3, 4)]),
    "log_softmax_0": (lambda m, x: m.log_softmax(x, 0), [(3, 4)]),
    "dot": (lambda m, a, b: m.dot(a, b), [(5,), (5,)]),
    "mv": (lambda m, a, b: m.mv(a, b), [(3, 4), (4,)]),
    "mm": (lambda m, a, b: m.mm(a, b), [(3, 4), (4, 2)]),
    "bmm": (lambda m, a, b: m.bmm(a, b), [(2, 3, 4), (2, 4, 2)]),
    "outer": (lambda m, a, b: m.outer(a, b), [(3,), (4,)]),
    "matmul_1d_1d": (lambda m, a, b: a @ b, [(4,), (4,)]),
    "matmul_2d_1d": (lambda m, a, b: a @ b, [(3, 4), (4,)]),
    "matmul_1d_2d": (lambda m, a, b: a @ b, [(4,), (4, 3)]),
    "matmul_3d_2d": (lambda m, a, b: a @ b, [(2, 3, 4), (4, 2)]),
    "matmul_3d_1d": (lambda m, a, b: m.matmul(a, b), [(2, 3, 4), (4,)]),
    "matmul_1d_3d": (lambda m, a, b: m.matmul(a, b), [(4,), (2, 4, 3)]),
    "matmul_2d_3d": (lambda m, a, b: a @ b, [(3, 4), (2, 4, 2)]),
    "matmul_bcast": (lambda m, a, b: a @ b, [(2, 1, 2, 3), (3, 3, 2)]),
    "matmul_transposed": (lambda m, a, b: a.transpose(-1, -2) @ b.t(), [(2, 4, 3), (2, 4)]),
    "matmul_expanded": (lambda m, a, b: a.expand(3, 2, 4) @ b, [(2, 4), (3, 4, 2)]),
}

OPS_NO_GRADGRAD = {
    "amax_all",
    "amax_dims",
    "amin_keep",
    "max_all",
    "min_all",
    "max_dim",
    "max_dim_keep",
    "min_dim_neg",
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_gradcheck(name):
    f, shapes = OPS[name]
    arrays = [randn(*s) for s in shapes]
    if name.startswith("norm_inf") or name.startswith("norm_ninf"):
        arrays = [a + np.sign(a) * 0.1 * np.arange(a.size).reshape(a.shape) for a in arrays]
    # max/min family is piecewise linear: the second derivative is zero.
    gradcheck(lambda *xs: f(fg, *xs), arrays, gradgrad=True)


def test_gradcheck_prod_with_zeros():
    one_zero = np.array([[1.5, 0.0, -2.0], [0.5, 2.0, 1.2]])
    two_zeros = np.array([[0.0, 0.0, -2.0], [0.5, 0.0, 1.2]])
    for a in (one_zero, two_zeros):
        gradcheck(lambda x: x.prod(1), [a])
        gradcheck(lambda x: x.prod(), [a])
        gradcheck(lambda x: x.prod(0, keepdim=True), [a])


# ------------------------------------------------------------ torch oracle


def torch_case(torch, name, contiguous=True, dtype="float64"):
    f, shapes = OPS[name]
    arrays = [randn(*s) for s in shapes]
    fdt = {"float64": fg.float64, "float32": fg.float32}[dtype]
    tdt = getattr(torch, dtype)
    fx = [tensor(a, dtype=fdt, requires_grad=True) for a in arrays]
    tx = [torch.tensor(a, dtype=tdt, requires_grad=True) for a in arrays]
    if not contiguous:
        # Same values, transposed memory: x.T.contiguous().T
        fin = [
            x.permute(*reversed(range(x.ndim))).contiguous().permute(*reversed(range(x.ndim)))
            for x in fx
        ]
        tin = [
            x.permute(*reversed(range(x.ndim))).contiguous().permute(*reversed(range(x.ndim)))
            for x in tx
        ]
        assert all(x.ndim < 2 or not x.is_contiguous() for x in fin)
    else:
        fin, tin = fx, tx
    fo, to = f(fg, *fin), f(torch, *tin)
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == "float64" else dict(rtol=1e-4, atol=1e-5)
    assert tuple(fo.shape) == tuple(to.shape)
    assert str(fo.dtype).split(".")[-1] == str(to.dtype).split(".")[-1]
    np.testing.assert_allclose(to_np(fo), to.detach().numpy(), **tol)
    v = randn(*to.shape)
    (fo * tensor(v, dtype=fdt)).sum().backward()
    (to * torch.tensor(v, dtype=tdt)).sum().backward()
    for a, b in zip(fx, tx):
        np.testing.assert_allclose(to_np(a.grad), b.grad.numpy(), **tol)


@pytest.mark.parametrize("name", sorted(OPS))
def test_torch_oracle(name, torch):
    torch_case(torch, name)


@pytest.mark.parametrize("name", sorted(OPS))
def test_torch_oracle_noncontiguous(name, torch):
    torch_case(torch, name, contiguous=False)


@pytest.mark.parametrize(
    "name",
    [
        "sum_dims_keep",
        "mean_all",
        "softmax_1",
        "log_softmax_neg",
        "logsumexp",
        "mm",
        "bmm",
        "matmul_bcast",
        "norm_default",
        "var_dim",
        "std_all",
        "cumsum_neg",
    ],
)
def test_torch_oracle_float32(name, torch):
    torch_case(torch, name, dtype="float32")


def test_torch_grad_fn_names(torch):
    names = {
        "sum_all": None,
        "sum_dim": None,
        "mean_all": None,
        "mean_keep": None,
        "prod_all": None,
        "prod_dim": None,
        "amax_dims": None,
        "max_all": None,
        "max_dim": None,
        "var_dim": None,
        "std_all": None,
        "norm_default": None,
        "logsumexp": None,
        "cumsum_0": None,
        "softmax_1": None,
        "log_softmax_0": None,
        "dot": None,
        "mv": None,
        "mm": None,
        "bmm": None,
    }
    for name in names:
        f, shapes = OPS[name]
        arrays = [randn(*s) for s in shapes]
        fo = f(fg, *leaves(arrays))
        to = f(torch, *[torch.tensor(a, requires_grad=True) for a in arrays])
        if name == "max_dim":  # the [0] of the namedtuple is the values tensor
            assert fo.grad_fn.name() == "MaxBackward0" == type(to.grad_fn).__name__
            continue
        assert fo.grad_fn.name() == type(to.grad_fn).__name__, name


@pytest.mark.parametrize("seed", range(6))
def test_torch_random_matmul_shapes(seed, torch):
    rng = np.random.default_rng(seed)
    for _ in range(8):
        k = int(rng.integers(1, 6))
        da, db = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        batch = [int(rng.integers(1, 4)) for _ in range(max(da, db))]

        def shape(d, last):
            if d == 1:
                return [k]
            b = (
                [s if rng.random() < 0.7 else 1 for s in batch[len(batch) - (d - 2) :]]
                if d > 2
                else []
            )
            return b + ([int(rng.integers(1, 5)), k] if last else [k, int(rng.integers(1, 5))])

        sa, sb = shape(da, True), shape(db, False)
        a, b = rng.standard_normal(sa), rng.standard_normal(sb)
        fa, fb = tensor(a, requires_grad=True), tensor(b, requires_grad=True)
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        fo, to = fa @ fb, ta @ tb
        assert tuple(fo.shape) == tuple(to.shape), (sa, sb)
        np.testing.assert_allclose(to_np(fo), to.detach().numpy(), rtol=1e-10, atol=1e-10)
        v = rng.standard_normal(tuple(to.shape))
        (fo * tensor(v)).sum().backward()
        (to * torch.tensor(v)).sum().backward()
        np.testing.assert_allclose(to_np(fa.grad), ta.grad.numpy(), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(to_np(fb.grad), tb.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.filterwarnings("ignore:std")
@pytest.mark.parametrize("seed", range(4))
def test_torch_random_reductions(seed, torch):
    rng = np.random.default_rng(100 + seed)
    for _ in range(6):
        nd = int(rng.integers(1, 4))
        shape = [int(rng.integers(1, 5)) for _ in range(nd)]
        a = rng.standard_normal(shape)
        nred = int(rng.integers(1, nd + 1))
        dims = tuple(
            int(d) - nd if rng.random() < 0.5 else int(d)
            for d in rng.choice(nd, nred, replace=False)
        )
        keep = bool(rng.random() < 0.5)
        d1 = dims[0]
        cases = [
            lambda m, x: x.sum(dims, keepdim=keep),
            lambda m, x: x.mean(dims, keepdim=keep),
            lambda m, x: x.amax(dims, keepdim=keep),
            lambda m, x: x.amin(dims, keepdim=keep),
            lambda m, x: x.var(dims, keepdim=keep, correction=0),
            lambda m, x: x.std(dims, keepdim=keep),
            lambda m, x: x.norm(dim=dims[:2], keepdim=keep),
            lambda m, x: x.logsumexp(dims, keepdim=keep),
            lambda m, x: x.prod(d1, keepdim=keep),
            lambda m, x: x.max(d1, keep)[0],
            lambda m, x: x.min(d1, keepdim=keep)[0],
            lambda m, x: x.cumsum(d1),
            lambda m, x: x.softmax(d1),
            lambda m, x: x.log_softmax(d1),
        ]
        for f in cases:
            fx, tx = tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
            fo, to = f(fg, fx), f(torch, tx)
            assert tuple(fo.shape) == tuple(to.shape)
            np.testing.assert_allclose(
                to_np(fo), to.detach().numpy(), rtol=1e-9, atol=1e-10, equal_nan=True
            )
            v = rng.standard_normal(tuple(to.shape))
            (fo * tensor(v)).sum().backward()
            (to * torch.tensor(v)).sum().backward()
            np.testing.assert_allclose(
                to_np(fx.grad), tx.grad.numpy(), rtol=1e-8, atol=1e-9, equal_nan=True
            )


def test_torch_ties_and_special_gradients(torch):
    a = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 2.0, 0.0]])
    cases = [
        lambda m, x: x.amax(1),
        lambda m, x: x.amin(),
        lambda m, x: x.max(),
        lambda m, x: x.min(1)[0],
        lambda m, x: x.max(1, keepdim=True).values,
        lambda m, x: x.norm(float("inf"), dim=1),
        lambda m, x: x.prod(1),
        lambda m, x: x.prod(),
        lambda m, x: (x * 0).norm(dim=1),
        lambda m, x: (x * 0).norm(),
        lambda m, x: (x * 0).norm(3),
        lambda m, x: x.norm(1),
        lambda m, x: x.norm(0),
    ]
    for f in cases:
        fx, tx = tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        fo, to = f(fg, fx), f(torch, tx)
        np.testing.assert_allclose(to_np(fo), to.detach().numpy())
        fo.sum().backward()
        to.sum().backward()
        if tx.grad is None:
            assert fx.grad is None
            continue
        np.testing.assert_allclose(to_np(fx.grad), tx.grad.numpy())


def test_torch_stability_large_values(torch):
    a = np.array([[1000.0, 999.0, -1000.0], [-1e4, -1e4, -1e4]])
    for name in ("softmax", "log_softmax"):
        fo = getattr(tensor(a, dtype=fg.float32), name)(1)
        to = getattr(torch.tensor(a, dtype=torch.float32), name)(1)
        np.testing.assert_allclose(to_np(fo), to.numpy(), rtol=1e-6)
        assert np.isfinite(to_np(fo)).all()
    fo = tensor(a).logsumexp(1)
    np.testing.assert_allclose(to_np(fo), torch.tensor(a).logsumexp(1).numpy())
    inf = np.array([[-np.inf, -np.inf], [np.inf, 1.0]])
    np.testing.assert_allclose(
        to_np(tensor(inf).logsumexp(1)), torch.tensor(inf).logsumexp(1).numpy()
    )


# ------------------------------------------------------------ values, dtypes


def test_values_basic():
    x = tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert x.sum().item() == 21.0
    np.testing.assert_allclose(to_np(x.sum(0)), [5, 7, 9])
    np.testing.assert_allclose(to_np(x.mean(1)), [2, 5])
    np.testing.assert_allclose(to_np(x.prod(1)), [6, 120])
    assert x.prod().item() == 720.0
    np.testing.assert_allclose(to_np(x.amax(0)), [4, 5, 6])
    assert x.max().item() == 6.0 and x.min().item() == 1.0
    np.testing.assert_allclose(to_np(x.cumsum(1)), [[1, 3, 6], [4, 9, 15]])
    np.testing.assert_allclose(to_np(x.cumsum(0)), [[1, 2, 3], [5, 7, 9]])
    np.testing.assert_allclose(to_np(x.var(1)), [1, 1])
    np.testing.assert_allclose(to_np(x.std(1, correction=0)), [math.sqrt(2 / 3)] * 2)
    assert abs(x.norm().item() - math.sqrt(91)) < 1e-12
    assert x.norm(1).item() == 21.0
    assert x.norm(float("inf")).item() == 6.0
    np.testing.assert_allclose(to_np(x.softmax(1).sum(1)), [1, 1])
    np.testing.assert_allclose(to_np(x.logsumexp(1)), np.log(np.exp([[1, 2, 3], [4, 5, 6]]).sum(1)))
    assert x.argmax().item() == 5 and x.argmin().item() == 0
    assert to_np(x.argmax(1)).tolist() == [2, 2]
    assert tuple(x.argmax(1, keepdim=True).shape) == (2, 1)
    assert tuple(x.argmax(keepdim=True).shape) == (1, 1)


def test_max_dim_namedtuple():
    x = tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]])
    r = x.max(1)
    assert isinstance(r, tuple) and len(r) == 2
    values, indices = r
    assert to_np(values).tolist() == [3.0, 2.0]
    assert to_np(r.indices).tolist() == [1, 0]  # first of the ties
    assert r.values.dtype == fg.float64 and r.indices.dtype == fg.int64
    assert type(r).__name__ == "max"
    m = fg.min(x, 1)
    assert to_np(m.values).tolist() == [1.0, 1.0] and to_np(m.indices).tolist() == [0, 2]
    assert type(m).__name__ == "min"
    k = x.max(dim=-1, keepdim=True)
    assert tuple(k.values.shape) == (2, 1) and tuple(k.indices.shape) == (2, 1)
    xg = tensor([[1.0, 3.0, 3.0]], requires_grad=True)
    v, i = xg.max(1)
    assert v.requires_grad and not i.requires_grad
    v.sum().backward()
    assert to_np(xg.grad).tolist() == [[0.0, 1.0, 0.0]]  # all to the returned index
    xg2 = tensor([[1.0, 3.0, 3.0]], requires_grad=True)
    xg2.max().backward()
    assert to_np(xg2.grad).tolist() == [[0.0, 0.5, 0.5]]  # split among ties


def test_nan_handling():
    x = tensor([1.0, float("nan"), 2.0])
    assert math.isnan(x.max().item()) and math.isnan(x.amax().item())
    assert x.argmax().item() == 1
    r = x.max(0)
    assert math.isnan(r.values.item()) and r.indices.item() == 1


def test_dtypes():
    i = fg.tensor([[1, 2], [3, 4]])
    b = fg.tensor([True, False, True])
    assert i.sum().dtype == fg.int64 and i.sum().item() == 10
    assert b.sum().dtype == fg.int64 and b.sum().item() == 2
    assert i.sum(dtype=fg.float64).dtype == fg.float64
    assert i.prod().dtype == fg.int64 and i.prod().item() == 24
    assert b.prod().dtype == fg.int64
    assert i.amax().dtype == fg.int64 and i.amax().item() == 4
    assert b.amax().dtype == fg.bool
    assert i.max().item() == 4 and i.max(1).values.dtype == fg.int64
    assert i.cumsum(0).dtype == fg.int64 and b.cumsum(0).dtype == fg.int64
    assert to_np(b.cumsum(0)).tolist() == [1, 1, 2]
    assert i.cumsum(1, dtype=fg.float32).dtype == fg.float32
    assert i.logsumexp(0).dtype == fg.float32
    assert i.mean(dtype=fg.float64).item() == 2.5
    assert i.softmax(0, dtype=fg.float64).dtype == fg.float64
    x = fg.tensor([1.0, 2.0])
    assert x.sum(dtype=fg.float64).dtype == fg.float64
    assert x.norm(dtype=fg.float64).dtype == fg.float64
    assert x.softmax(0, dtype=fg.float64).dtype == fg.float64
    assert x.log_softmax(0).dtype == fg.float32
    assert (i @ i).dtype == fg.int64
    assert to_np(i @ i).tolist() == [[7, 10], [15, 22]]


def test_zero_dim_and_empty():
    s = tensor(3.0)
    assert s.sum(0).item() == 3.0 and s.sum(-1).item() == 3.0
    assert s.softmax(0).item() == 1.0 and s.cumsum(0).item() == 3.0
    assert s.argmax(0).item() == 0
    r = s.max(0)
    assert r.values.item() == 3.0 and r.indices.item() == 0
    e = fg.zeros(0, 3)
    assert tuple(e.sum(0).shape) == (3,) and to_np(e.sum(0)).tolist() == [0, 0, 0]
    assert to_np(e.prod(0)).tolist() == [1, 1, 1]
    assert tuple(e.amax(1).shape) == (0,)
    assert tuple(e.max(1).values.shape) == (0,)
    assert to_np(e.logsumexp(0)).tolist() == [-math.inf] * 3
    assert tuple((fg.zeros(2, 0) @ fg.zeros(0, 3)).shape) == (2, 3)
    assert to_np(fg.ones(2, 0) @ fg.ones(0, 3)).tolist() == [[0] * 3] * 2


# ------------------------------------------------------------ argument forms


def test_var_std_argument_forms():
    a = randn(3, 4)
    x = tensor(a)
    np.testing.assert_allclose(x.var(False).item(), a.var())
    np.testing.assert_allclose(x.var().item(), a.var(ddof=1))
    np.testing.assert_allclose(to_np(x.var(1, True, True)), a.var(1, ddof=1, keepdims=True))
    np.testing.assert_allclose(to_np(x.std(0, unbiased=False)), a.std(0))
    np.testing.assert_allclose(to_np(fg.var(x, 1, correction=0)), a.var(1))
    np.testing.assert_allclose(to_np(fg.std(x, dim=(0, 1), correction=2)), a.std(ddof=2))
    np.testing.assert_allclose(
        x.var(correction=0.5).item(), ((a - a.mean()) ** 2).sum() / (a.size - 0.5)
    )
    with pytest.raises(TypeError):
        x.var(0, unbiased=True, correction=1)


def test_norm_argument_forms():
    a = randn(2, 3, 4)
    x = tensor(a)
    np.testing.assert_allclose(x.norm().item(), np.sqrt((a**2).sum()))
    np.testing.assert_allclose(x.norm("fro").item(), np.sqrt((a**2).sum()))
    np.testing.assert_allclose(to_np(x.norm(p="fro", dim=(0, 1))), np.sqrt((a**2).sum((0, 1))))
    np.testing.assert_allclose(to_np(fg.norm(x, 1, 2, True)), np.abs(a).sum(2, keepdims=True))
    np.testing.assert_allclose(to_np(x.norm(2.5, dim=-1)), (np.abs(a) ** 2.5).sum(-1) ** 0.4)
    assert x.norm(0).item() == a.size
    with pytest.raises(RuntimeError, match="2-tuple"):
        x.norm("fro", dim=(0, 1, 2))
    with pytest.raises(RuntimeError):
        x.norm("nuc")
    with pytest.raises(RuntimeError, match="floating point"):
        fg.tensor([1, 2]).norm()


def test_max_min_forms():
    x = tensor([[1.0, 5.0], [7.0, 2.0]])
    assert fg.max(x).item() == 7.0 and fg.min(x).item() == 1.0
    assert to_np(fg.max(x, dim=0).values).tolist() == [7.0, 5.0]
    assert to_np(fg.max(x, 1, True)[1]).tolist() == [[1], [0]]
    with pytest.raises(TypeError):
        x.max(keepdim=True)
    with pytest.raises(TypeError):
        x.max(1.5)
    if hasattr(x, "maximum"):
        y = tensor([[2.0, 1.0], [0.0, 9.0]])
        assert to_np(fg.max(x, y)).tolist() == [[2.0, 5.0], [7.0, 9.0]]


def test_module_functions_exist():
    for name in [
        "sum",
        "mean",
        "prod",
        "max",
        "min",
        "amax",
        "amin",
        "var",
        "std",
        "norm",
        "logsumexp",
        "argmax",
        "argmin",
        "cumsum",
        "softmax",
        "log_softmax",
        "matmul",
        "mm",
        "bmm",
        "outer",
        "dot",
        "mv",
    ]:
        assert callable(getattr(fg, name)), name
    x = tensor(randn(3, 4))
    np.testing.assert_allclose(
        to_np(fg.softmax(x, 1, dtype=fg.float32)), to_np(x.softmax(1)), rtol=1e-6
    )
    np.testing.assert_allclose(to_np(fg.log_softmax(x, dim=0)), to_np(x.log_softmax(0)))
    np.testing.assert_allclose(to_np(fg.argmax(x, dim=1)), to_np(x.argmax(1)))
    np.testing.assert_allclose(to_np(fg.sum(x, (0, 1), True)), to_np(x.sum((0, 1), keepdim=True)))


# ------------------------------------------------------------ errors


def test_errors():
    x = tensor(randn(2, 3))
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.sum(2)
    with pytest.raises(IndexError):
        x.softmax(-3)
    with pytest.raises(IndexError):
        x.max(5)
    with pytest.raises(IndexError):
        x.cumsum(2)
    with pytest.raises(IndexError):
        x.argmax(2)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        x.sum((0, -2))
    with pytest.raises(
        RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"
    ):
        x @ tensor(randn(4, 5))
    with pytest.raises(
        RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"
    ):
        fg.mm(x, tensor(randn(4, 5)))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        fg.bmm(x, x)
    with pytest.raises(RuntimeError, match="Expected size for first two dimensions of batch2"):
        fg.bmm(fg.zeros(2, 2, 3), fg.zeros(2, 2, 2))
    with pytest.raises(RuntimeError, match="must match the size"):
        fg.zeros(2, 3, 4) @ fg.zeros(5, 4, 5)
    with pytest.raises(RuntimeError, match="at least 1D"):
        tensor(1.0) @ tensor([1.0])
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        fg.dot(fg.zeros(3), fg.zeros(4))
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        fg.dot(fg.zeros(3, 1), fg.zeros(3))
    with pytest.raises(RuntimeError, match="same dtype"):
        fg.mm(fg.zeros(2, 2), fg.zeros(2, 2, dtype=fg.float64))
    with pytest.raises(RuntimeError, match="size mismatch"):
        fg.mv(fg.zeros(2, 3), fg.zeros(2))
    with pytest.raises(TypeError):
        x @ 2
    with pytest.raises(TypeError):
        2 @ x
    with pytest.raises(RuntimeError, match="numel\\(\\) == 0"):
        fg.zeros(0, 3).max()
    with pytest.raises(IndexError, match="non-zero size"):
        fg.zeros(0, 3).max(0)
    with pytest.raises(IndexError, match="non-zero size"):
        fg.zeros(0, 3).amax(0)
    with pytest.raises(RuntimeError, match="floating point"):
        fg.tensor([1, 2]).var()
    with pytest.raises(RuntimeError, match="could not infer output dtype"):
        fg.tensor([1, 2]).mean()
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        fg.tensor([1, 2]).softmax(0)
    with pytest.raises(RuntimeError, match="bool"):
        fg.tensor([True, False]).argmax()
    with pytest.raises(TypeError):
        x.logsumexp()


def test_bad_input_changes_nothing():
    x = tensor(randn(2, 3), requires_grad=True)
    before = to_np(x)
    with pytest.raises(RuntimeError):
        x @ tensor(randn(4, 5))
    assert x.grad is None and (to_np(x) == before).all() and x._version == 0


def test_indices_saved_version_check():
    x = tensor(randn(2, 3), requires_grad=True)
    v, i = x.max(1)
    i.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        v.sum().backward()


def test_softmax_output_saved_version_check():
    x = tensor(randn(2, 3), requires_grad=True)
    y = x.softmax(1)
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_matmul_large_parallel_matches_torch(torch):
    a, b = randn(3, 70, 90), randn(90, 65)
    fo = tensor(a, dtype=fg.float32) @ tensor(b, dtype=fg.float32)
    to = torch.tensor(a, dtype=torch.float32) @ torch.tensor(b, dtype=torch.float32)
    np.testing.assert_allclose(to_np(fo), to.numpy(), rtol=1e-4, atol=1e-4)


def test_results_do_not_depend_on_thread_count():
    a, b = tensor(randn(3, 80, 70), dtype=fg.float32), tensor(randn(70, 90), dtype=fg.float32)
    x = tensor(randn(300, 200), dtype=fg.float32)
    # Big enough to be split into row blocks across threads (197 rows: the
    # last block is short).
    c, d = randn(197, 300), randn(300, 230)
    big = [(tensor(c, dtype=dt), tensor(d, dtype=dt)) for dt in (fg.float32, fg.float64)]
    before = fg.get_num_threads()

    def run():
        out = [to_np(a @ b), to_np(x.sum(0)), to_np(x.reshape(-1).sum()), to_np(x.softmax(0))]
        return out + [to_np(p @ q) for p, q in big] + [to_np(q.t() @ p.t()) for p, q in big]

    try:
        fg.set_num_threads(1)
        one = run()
        for n in (2, 3):
            fg.set_num_threads(n)
            for p, q in zip(one, run()):
                assert np.array_equal(p, q)
    finally:
        fg.set_num_threads(before)


@pytest.mark.parametrize("shape", [(5, 7, 3), (40, 30, 600), (3, 1000)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("fn", ["max", "min"])
def test_max_min_dim_over_every_dim_with_ties_and_nans(shape, dtype, fn, at_threads):
    # A non-last dim folds whole rows; the first index wins among ties,
    # the first NaN wins over numbers (numpy's argmax/argmin rules).
    rng = np.random.default_rng(1)
    a = rng.integers(-3, 3, size=shape).astype(dtype)
    if dtype != "int64":
        a.flat[rng.integers(0, a.size, 20)] = np.nan
    arg = np.argmax if fn == "max" else np.argmin
    for d in range(len(shape)):
        want_i = arg(a, axis=d)
        want_v = np.take_along_axis(a, np.expand_dims(want_i, d), d).squeeze(d)
        for n in (1, 2):
            v, i = at_threads(n, lambda: getattr(fg.from_numpy(a), fn)(d))
            np.testing.assert_array_equal(i.numpy(), want_i)
            np.testing.assert_array_equal(v.numpy(), want_v)
