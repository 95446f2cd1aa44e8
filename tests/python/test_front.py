"""The Python front end: creation, dtype inference, factories and seeding.
NumPy interop, repr, Size/device, conversions, the internal-error path and
the legacy constructor: test_front_interop.py.

Tests that compare with torch skip cleanly when torch is not installed.
"""

import warnings

import numpy as np
import pytest

import ferrograd as fg


# ---------------------------------------------------------------------------
# tensor(): dtype inference, shapes, values
# ---------------------------------------------------------------------------

# (expression over a module ``T``, expected ferrograd dtype name, expected shape)
INFERENCE = [
    ("T.tensor(3.5)", "float32", ()),
    ("T.tensor(3)", "int64", ()),
    ("T.tensor(True)", "bool", ()),
    ("T.tensor([1, 2, 3])", "int64", (3,)),
    ("T.tensor([1, 2.5])", "float32", (2,)),
    ("T.tensor([True, 2])", "int64", (2,)),
    ("T.tensor([True, 2.5])", "float32", (2,)),
    ("T.tensor([[1, 2], [3, 4]])", "int64", (2, 2)),
    ("T.tensor(((1, 2), (3, 4), (5, 6)))", "int64", (3, 2)),
    ("T.tensor([])", "float32", (0,)),
    ("T.tensor([[]])", "float32", (1, 0)),
    ("T.tensor([[], []])", "float32", (2, 0)),
    ("T.tensor(())", "float32", (0,)),
    ("T.tensor([1, 2], dtype=T.float64)", "float64", (2,)),
    ("T.tensor([1.7, -2.2], dtype=T.int64)", "int64", (2,)),
    ("T.tensor([0, 2], dtype=T.bool)", "bool", (2,)),
    ("T.tensor(np.float64(3.0))", "float64", ()),
    ("T.tensor(np.float32(3.0))", "float32", ()),
    ("T.tensor(np.int64(3))", "int64", ()),
    ("T.tensor(np.bool_(True))", "bool", ()),
    ("T.tensor([np.float64(1.0), 2.0])", "float64", (2,)),
    ("T.tensor([np.float32(1.0), 2])", "float32", (2,)),
    ("T.tensor([np.int32(1), 2])", "int64", (2,)),
    ("T.tensor([np.bool_(True), False])", "bool", (2,)),
    ("T.tensor(np.array([1.0, 2.0]))", "float64", (2,)),
    ("T.tensor(np.array([1.0, 2.0], dtype=np.float32))", "float32", (2,)),
    ("T.tensor(np.array([[1, 2]], dtype=np.int64))", "int64", (1, 2)),
    ("T.tensor(np.array([True, False]))", "bool", (2,)),
    ("T.tensor(np.array(2.5))", "float64", ()),
    ("T.tensor(np.zeros((2, 0, 3)))", "float64", (2, 0, 3)),
    ("T.tensor([T.tensor(1.0, dtype=T.float64), 2.0])", "float64", (2,)),
    ("T.tensor([T.tensor(1), 2])", "int64", (2,)),
    ("T.tensor([T.tensor([1.5]), 2])", "float32", (2,)),
    ("T.tensor([np.array([1, 2]), np.array([3, 4])])", "int64", (2, 2)),
]


@pytest.mark.parametrize("expr,dtype,shape", INFERENCE)
def test_tensor_dtype_inference(expr, dtype, shape):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = eval(expr, {"T": fg, "np": np})
    assert t.dtype == getattr(fg, dtype)
    assert t.shape == shape
    assert isinstance(t.shape, fg.Size)


@pytest.mark.parametrize("expr,dtype,shape", INFERENCE)
def test_tensor_dtype_inference_matches_torch(expr, dtype, shape, torch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = eval(expr, {"T": torch, "np": np})
        t = eval(expr, {"T": fg, "np": np})
    assert str(ref.dtype).replace("torch.", "") == dtype
    assert tuple(ref.shape) == tuple(t.shape)
    assert ref.tolist() == t.tolist()


def test_tensor_values_exact():
    assert fg.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert fg.tensor(2**62 + 1).item() == 2**62 + 1  # no float round trip
    assert fg.tensor([-(2**63)]).tolist() == [-(2**63)]
    assert fg.tensor([1.7, -2.7], dtype=fg.int64).tolist() == [1, -2]  # truncation
    assert fg.tensor([0.1]).tolist() == [np.float32(0.1).item()]
    assert fg.tensor([0.1], dtype=fg.float64).tolist() == [0.1]
    assert fg.tensor([True, False, True]).tolist() == [True, False, True]
    big = np.array([2**63 - 1, -(2**63)], dtype=np.int64)
    assert fg.tensor(big).tolist() == big.tolist()


def test_tensor_from_tensor_copies():
    a = fg.tensor([1.0, 2.0], requires_grad=True)
    b = fg.tensor(a)
    assert not b.requires_grad and b.is_leaf
    assert b.data_ptr() != a.data_ptr()
    b.add_(1)
    assert a.tolist() == [1.0, 2.0]
    c = fg.tensor(a, dtype=fg.int64)
    assert c.dtype == fg.int64 and c.tolist() == [1, 2]


def test_tensor_requires_grad_and_device():
    t = fg.tensor([1.0], requires_grad=True, device="cpu")
    assert t.requires_grad and t.is_leaf and t.grad_fn is None
    assert fg.tensor([1.0], device=fg.device("cpu")).device == fg.device("cpu")
    assert fg.tensor([1.0], device="cpu:0").tolist() == [1.0]
    with pytest.raises(RuntimeError, match="floating point"):
        fg.tensor([1, 2], requires_grad=True)
    for bad in ["cuda", "cuda:0", "mps", "meta"]:
        with pytest.raises(RuntimeError):
            fg.tensor([1.0], device=bad)
    with pytest.raises(RuntimeError):
        fg.tensor([1.0], device="foo")
    with pytest.raises(RuntimeError):
        fg.tensor([1.0], device=0)


@pytest.mark.parametrize(
    "data,exc",
    [
        ([[1, 2], [3]], ValueError),
        ([[1, 2], 3], TypeError),
        ([1, [2]], TypeError),
        ([1, "a"], TypeError),
        ("abc", TypeError),
        (None, RuntimeError),
        (object(), RuntimeError),
        ([None], RuntimeError),
        (2**64, ValueError),
        ([1 + 2j], TypeError),
        ({1: 2}, RuntimeError),
    ],
)
def test_tensor_bad_data(data, exc):
    with pytest.raises(exc):
        fg.tensor(data)


def test_tensor_bad_data_messages_match_torch(torch):
    for data in [[[1, 2], [3]], [[1, 2], 3], [1, "a"], None]:
        with pytest.raises(Exception) as ref:
            torch.tensor(data)
        with pytest.raises(Exception) as got:
            fg.tensor(data)
        assert type(got.value) is type(ref.value), data
    with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 1 \(got 1\)"):
        fg.tensor([[1, 2], [3]])


def test_tensor_rejects_multi_element_tensors_in_lists():
    with pytest.raises(ValueError, match="only one element tensors"):
        fg.tensor([fg.tensor([1.0, 2.0]), fg.tensor([3.0, 4.0])])


def test_as_tensor_shares_when_possible():
    a = np.array([1.0, 2.0])
    t = fg.as_tensor(a)
    a[0] = 7.0
    assert t.tolist() == [7.0, 2.0]
    t2 = fg.as_tensor(a, dtype=fg.float32)  # conversion: a copy
    a[1] = 9.0
    assert t2.tolist() == [7.0, 2.0]
    x = fg.tensor([1.0])
    assert fg.as_tensor(x) is x
    assert fg.as_tensor(x, dtype=fg.float64).dtype == fg.float64
    assert fg.as_tensor([1, 2]).dtype == fg.int64


# ---------------------------------------------------------------------------
# factories
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "rand", "randn"])
def test_factory_shapes(fn):
    f = getattr(fg, fn)
    assert f(2, 3).shape == (2, 3)
    assert f((2, 3)).shape == (2, 3)
    assert f([2, 3]).shape == (2, 3)
    assert f(fg.Size([2, 3])).shape == (2, 3)
    assert f(size=(4,)).shape == (4,)
    assert f(()).shape == ()
    assert f(0).shape == (0,)
    assert f(2, 3).dtype == fg.float32
    assert f(2, dtype=fg.float64).dtype == fg.float64
    t = f(2, requires_grad=True)
    assert t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError, match="negative dimension"):
        f(2, -1)
    with pytest.raises(TypeError):
        f(2.5)
    with pytest.raises(TypeError):
        f()
    with pytest.raises(TypeError):
        f(2, size=(2,))
    with pytest.raises(RuntimeError):
        f(2, device="cuda")


def test_factory_values():
    assert fg.zeros(2, 2).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert fg.ones(3, dtype=fg.int64).tolist() == [1, 1, 1]
    assert fg.ones(2, dtype=fg.bool).tolist() == [True, True]
    assert fg.empty(2, 3).shape == (2, 3)
    assert fg.zeros(2, dtype=float).dtype == fg.float64  # Python types as dtypes
    assert fg.zeros(2, dtype=int).dtype == fg.int64
    assert fg.zeros(2, dtype=bool).dtype == fg.bool
    with pytest.raises(TypeError):
        fg.zeros(2, dtype="float32")


def test_full_infers_dtype_from_fill_value():
    assert fg.full((2,), 3).dtype == fg.int64
    assert fg.full((2,), 3.0).dtype == fg.float32
    assert fg.full((2,), True).dtype == fg.bool
    assert fg.full((2, 2), 3, dtype=fg.float64).tolist() == [[3.0, 3.0], [3.0, 3.0]]
    assert fg.full([3], -1.5).tolist() == [-1.5] * 3
    assert fg.full((2,), fg.tensor(2.5)).tolist() == [2.5, 2.5]
    assert fg.full((), 7).shape == ()
    t = fg.full((2,), 1.0, requires_grad=True)
    assert t.requires_grad
    with pytest.raises(TypeError):
        fg.full((2,), "x")


def test_arange_dtype_and_values():
    assert fg.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert fg.arange(5).dtype == fg.int64
    assert fg.arange(5.0).dtype == fg.float32
    assert fg.arange(1, 5, 0.5).tolist() == [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5]
    assert fg.arange(10, 0, -3).tolist() == [10, 7, 4, 1]
    assert fg.arange(start=1, end=4).tolist() == [1, 2, 3]
    assert fg.arange(end=3).tolist() == [0, 1, 2]
    assert fg.arange(2, dtype=fg.float64).dtype == fg.float64
    assert fg.arange(fg.tensor(3)).tolist() == [0, 1, 2]
    assert fg.arange(0).shape == (0,)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        fg.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent"):
        fg.arange(5, 0)
    with pytest.raises(RuntimeError, match="unsupported range"):
        fg.arange(0, float("inf"))
    with pytest.raises(RuntimeError):  # NotImplementedError is a RuntimeError
        fg.arange(5, dtype=fg.bool)
    with pytest.raises(ValueError, match="step must be nonzero"):
        fg.arange(0, 5, 0.5, dtype=fg.int64)


ARANGE_CASES = [
    "5",
    "5.",
    "1,5,0.5",
    "0,1,0.1",
    "-3,7.5,0.7",
    "10,0,-3",
    "0.5, 3.5",
    "1e-3, 1.0, 1e-2",
    "-1, 1, 0.3",
    "3, 20, 4",
]


@pytest.mark.parametrize("args", ARANGE_CASES)
@pytest.mark.parametrize("dtype", [None, "float32", "float64", "int64"])
def test_arange_matches_torch(args, dtype, torch):
    kw = f", dtype=T.{dtype})" if dtype else ")"
    try:
        ref = eval(f"T.arange({args}{kw}", {"T": torch})
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            eval(f"T.arange({args}{kw}", {"T": fg})
        return
    t = eval(f"T.arange({args}{kw}", {"T": fg})
    assert str(t.dtype).split(".")[1] == str(ref.dtype).split(".")[1]
    assert t.shape == tuple(ref.shape)
    # torch's vectorised kernel may round the last bit differently.
    np.testing.assert_allclose(t.numpy(), ref.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "a,b,n",
    [
        (0, 1, 5),
        (-1, 1, 7),
        (0, 10, 11),
        (0.1, 0.7, 13),
        (-3.3, 7.9, 101),
        (0, 1, 1),
        (5, 5, 4),
        (0, 1, 2),
        (2.5, -1.25, 9),
        (0, 1, 0),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_linspace_matches_torch(a, b, n, dtype, torch):
    ref = torch.linspace(a, b, n, dtype=getattr(torch, dtype))
    t = fg.linspace(a, b, n, dtype=getattr(fg, dtype))
    assert t.dtype == getattr(fg, dtype)
    assert t.tolist() == ref.tolist()


def test_linspace_basics():
    assert fg.linspace(0, 1, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert fg.linspace(0, 1, 5).dtype == fg.float32
    assert fg.linspace(0, 10, 5, dtype=fg.int64).tolist() == [0, 2, 5, 7, 10]
    assert fg.linspace(3, 4, 1).tolist() == [3.0]
    with pytest.raises(RuntimeError, match="non-negative"):
        fg.linspace(0, 1, -1)
    with pytest.raises(TypeError):
        fg.linspace(0, 1)


def test_eye():
    assert fg.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert fg.eye(2, 3).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    assert fg.eye(3, 2).shape == (3, 2)
    assert fg.eye(2, dtype=fg.bool).tolist() == [[True, False], [False, True]]
    assert fg.eye(0).shape == (0, 0)
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0"):
        fg.eye(-1)


def test_like_and_new_families():
    x = fg.tensor([[1.0, 2.0]], dtype=fg.float64)
    for f in [fg.zeros_like, fg.ones_like, fg.empty_like, fg.rand_like, fg.randn_like]:
        y = f(x)
        assert y.shape == (1, 2) and y.dtype == fg.float64 and not y.requires_grad
        assert f(x, dtype=fg.float32).dtype == fg.float32
        assert f(x, requires_grad=True).requires_grad
    assert fg.zeros_like(x).tolist() == [[0.0, 0.0]]
    assert fg.ones_like(x, dtype=fg.int64).tolist() == [[1, 1]]
    assert fg.full_like(x, 7).tolist() == [[7.0, 7.0]]
    i = fg.tensor([1, 2])
    assert fg.full_like(i, 2.7).tolist() == [2, 2]  # the input's dtype wins
    with pytest.raises(RuntimeError):
        fg.rand_like(i)
    r = fg.randint_like(i, 5)
    assert r.dtype == fg.int64 and all(0 <= v < 5 for v in r.tolist())
    r = fg.randint_like(i, 3, 5)
    assert all(3 <= v < 5 for v in r.tolist())

    assert x.new_zeros(2, 3).shape == (2, 3)
    assert x.new_zeros((2, 3)).dtype == fg.float64
    assert x.new_ones([2]).tolist() == [1.0, 1.0]
    assert x.new_empty(4).shape == (4,)
    assert x.new_full((3,), 2).tolist() == [2.0, 2.0, 2.0]
    assert x.new_full((3,), 2).dtype == fg.float64
    assert i.new_tensor([1.5]).tolist() == [1]  # self's dtype
    assert x.new_tensor([1, 2]).dtype == fg.float64
    assert x.new_tensor([1, 2], dtype=fg.int64).dtype == fg.int64
    y = x.new_zeros(2, requires_grad=True)
    assert y.requires_grad and y.is_leaf


# ---------------------------------------------------------------------------
# random
# ---------------------------------------------------------------------------


def test_manual_seed_reproducible():
    for f in [
        lambda: fg.rand(5),
        lambda: fg.randn(2, 3, dtype=fg.float64),
        lambda: fg.randint(0, 100, (6,)),
        lambda: fg.randperm(10),
    ]:
        fg.manual_seed(0)
        a = f().tolist()
        fg.manual_seed(0)
        b = f().tolist()
        fg.manual_seed(1)
        c = f().tolist()
        assert a == b
        assert a != c
    fg.manual_seed(123)
    assert fg.initial_seed() == 123


def test_rng_state_round_trip_and_fork_rng():
    fg.manual_seed(7)
    state = fg.get_rng_state()
    a = fg.rand(4).tolist()
    fg.set_rng_state(state)
    assert fg.rand(4).tolist() == a
    with fg.random.fork_rng():
        fg.rand(10)
    b = fg.rand(4).tolist()
    fg.set_rng_state(state)
    fg.rand(4)
    assert fg.rand(4).tolist() == b


def test_random_distributions():
    fg.manual_seed(0)
    u = fg.rand(100_000).numpy()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01
    n = fg.randn(100_000, dtype=fg.float64).numpy()
    assert abs(n.mean()) < 0.02 and abs(n.std() - 1.0) < 0.02
    r = fg.randint(3, 7, (10_000,)).numpy()
    assert r.min() == 3 and r.max() == 6
    assert fg.randint(10, (3,)).dtype == fg.int64
    assert fg.randint(low=0, high=10, size=(3,)).shape == (3,)
    assert fg.randint(0, 2, (4,), dtype=fg.float32).dtype == fg.float32
    assert sorted(fg.randperm(50).tolist()) == list(range(50))
    assert fg.randperm(4, dtype=fg.float32).dtype == fg.float32
    assert fg.randperm(0).shape == (0,)
    with pytest.raises(RuntimeError, match="from=5 >= to=5"):
        fg.randint(5, 5, (2,))
    with pytest.raises(TypeError):
        fg.randint(10, 3)
    with pytest.raises(RuntimeError):
        fg.randperm(-1)
    with pytest.raises(RuntimeError):
        fg.rand(2, dtype=fg.int64)
    with pytest.raises(RuntimeError):
        fg.randn(2, dtype=fg.int64)
