"""The Python front end (continued from test_front.py): NumPy interop, repr,
Size/device, conversions, the internal-error path, the legacy Tensor(...)
constructor and subclasses.

Tests that compare with torch skip cleanly when torch is not installed.
"""

import gc
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import ferrograd as fg


# ---------------------------------------------------------------------------
# NumPy interop
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "np_dtype,fg_dtype",
    [(np.float32, "float32"), (np.float64, "float64"), (np.int64, "int64"), (np.bool_, "bool")],
)
def test_from_numpy_shares_memory(np_dtype, fg_dtype):
    a = np.zeros((2, 3), dtype=np_dtype)
    t = fg.from_numpy(a)
    assert t.dtype == getattr(fg, fg_dtype)
    assert t.shape == (2, 3)
    assert t.data_ptr() == a.ctypes.data
    a[1, 2] = 1
    assert t.tolist()[1][2] == 1
    t.fill_(1)
    assert (a == 1).all()


def test_from_numpy_inplace_ops_visible_in_numpy():
    a = np.arange(6.0).reshape(2, 3)
    t = fg.from_numpy(a)
    t.mul_(2)
    np.testing.assert_array_equal(a, np.arange(6.0).reshape(2, 3) * 2)
    assert t._version == 1


def test_from_numpy_strides():
    base = np.arange(24.0).reshape(4, 6)
    for view in [
        base.T,
        base[::2, 1::3],
        base[1:, 2],
        np.broadcast_to(base[0], (3, 6)).copy(),
        np.asfortranarray(base),
        base[:, :0],
    ]:
        t = fg.from_numpy(view)
        assert t.shape == view.shape
        assert t.stride() == tuple(s // view.itemsize for s in view.strides)
        assert t.tolist() == view.tolist()
    v = base[::2, 1::3]
    t = fg.from_numpy(v)
    v[1, 1] = -1.0
    assert t.tolist()[1][1] == -1.0
    assert base[2, 4] == -1.0


def test_from_numpy_errors():
    with pytest.raises(
        ValueError, match="At least one stride in the given numpy array is negative"
    ):
        fg.from_numpy(np.arange(4.0)[::-1])
    with pytest.raises(ValueError, match="byte order"):
        fg.from_numpy(np.array([1.0, 2.0], dtype=">f8"))
    with pytest.raises(TypeError, match=r"can't convert np.ndarray of type numpy.uint16"):
        fg.from_numpy(np.array([1, 2], dtype=np.uint16))
    with pytest.raises(TypeError, match=r"numpy.str_"):
        fg.from_numpy(np.array(["a"]))
    with pytest.raises(TypeError, match=r"numpy.complex128"):
        fg.from_numpy(np.array([1j]))
    with pytest.raises(TypeError, match="expected np.ndarray"):
        fg.from_numpy([1.0, 2.0])
    raw = np.zeros(17, dtype=np.uint8)
    unaligned = raw[1:].view(np.float64)
    with pytest.raises(ValueError):
        fg.from_numpy(unaligned)
    bad_bool = np.array([0, 2], dtype=np.uint8).view(np.bool_)
    with pytest.raises(ValueError):
        fg.from_numpy(bad_bool)


def test_from_numpy_errors_match_torch_types(torch):
    arrays = [np.arange(4.0)[::-1], np.array([1.0], dtype=">f8"), np.array(["a"]), [1.0]]
    for a in arrays:
        with pytest.raises(Exception) as ref:
            torch.from_numpy(a)
        with pytest.raises(Exception) as got:
            fg.from_numpy(a)
        assert type(got.value) is type(ref.value)


def test_tensor_from_numpy_copies_and_maps_dtypes():
    a = np.array([1.0, 2.0])
    t = fg.tensor(a)
    a[0] = 5.0
    assert t.tolist() == [1.0, 2.0]
    for np_dtype, dtype in [
        (np.int8, fg.int8),
        (np.int16, fg.int16),
        (np.int32, fg.int32),
        (np.uint8, fg.uint8),
        (np.uint16, fg.int64),
        (np.uint32, fg.int64),
        (np.uint64, fg.int64),
    ]:
        t = fg.tensor(np.array([1, 2], dtype=np_dtype))
        assert t.dtype == dtype and t.tolist() == [1, 2]
    t = fg.tensor(np.array([1.5, 2.0], dtype=np.float16))
    assert t.dtype == fg.float16 and t.tolist() == [1.5, 2.0]
    t = fg.tensor(np.arange(12.0).reshape(3, 4).T)
    assert t.is_contiguous() and t.tolist() == np.arange(12.0).reshape(3, 4).T.tolist()
    assert fg.tensor(np.array([1, 2]), dtype=fg.float32).dtype == fg.float32
    raw = np.zeros(17, dtype=np.uint8)
    unaligned = raw[1:].view(np.float64)
    unaligned[0] = 3.0
    assert fg.tensor(unaligned).tolist()[0] == 3.0
    with pytest.raises(ValueError, match="negative"):
        fg.tensor(np.arange(3.0)[::-1])  # torch's behaviour, kept
    with pytest.raises(TypeError):
        fg.tensor(np.array([1j]))


def test_from_numpy_keeps_array_alive():
    a = np.arange(1000.0)
    t = fg.from_numpy(a)
    del a
    gc.collect()
    _ = [np.ones(1000) for _ in range(10)]
    assert t.tolist() == list(np.arange(1000.0))
    v = t.view(10, 100)  # a view keeps the storage (and the array) alive too
    del t
    gc.collect()
    assert v.sum().item() == sum(range(1000))


def test_from_numpy_readonly_copies_with_warning():
    a = np.arange(3.0)
    a.setflags(write=False)
    with pytest.warns(UserWarning, match="not writable"):
        t = fg.from_numpy(a)
    t.add_(1)
    assert a.tolist() == [0.0, 1.0, 2.0]
    assert t.tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_numpy_shares_memory(dtype):
    t = fg.zeros(2, 3, dtype=getattr(fg, dtype))
    a = t.numpy()
    assert a.dtype == np.dtype(dtype)
    assert a.shape == (2, 3)
    assert a.ctypes.data == t.data_ptr()
    a[0, 1] = 1
    assert t.tolist()[0][1] == 1
    t.fill_(1)
    assert (a == 1).all()


def test_numpy_of_views_uses_strides():
    t = fg.arange(12.0).reshape(3, 4)
    tt = t.t()
    a = tt.numpy()
    assert a.shape == (4, 3)
    assert a.strides == (4, 16)
    assert a.tolist() == tt.tolist()
    a[0, 1] = 100.0
    assert t.tolist()[1][0] == 100.0
    s = t.select(1, 2).numpy()
    assert s.tolist() == [2.0, 6.0, 10.0]
    s[:] = 0
    assert [row[2] for row in t.tolist()] == [0.0, 0.0, 0.0]
    e = fg.tensor([1.0, 2.0]).expand(3, 2).numpy()
    assert e.strides == (0, 4) and e.tolist() == [[1.0, 2.0]] * 3
    assert fg.tensor(5.0).numpy().shape == ()
    assert fg.zeros(0, 3).numpy().shape == (0, 3)


def test_numpy_keeps_storage_alive():
    t = fg.arange(100.0)
    a = t.numpy()
    del t
    gc.collect()
    assert a.sum() == sum(range(100))
    assert a.base is not None


def test_numpy_requires_grad():
    t = fg.ones(2, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match=r"Can't call numpy\(\) on Tensor that requires grad. "
        r"Use tensor.detach\(\).numpy\(\) instead.",
    ):
        t.numpy()
    assert t.detach().numpy().tolist() == [1.0, 1.0]
    assert t.numpy(force=True).tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError):
        (t * 2).numpy()


def test_numpy_round_trip_and_array_protocol():
    a = np.random.default_rng(0).standard_normal((3, 4))
    t = fg.from_numpy(a)
    assert t.numpy().ctypes.data == a.ctypes.data
    b = np.asarray(t)
    b[0, 0] = 42.0
    assert a[0, 0] == 42.0
    assert np.array(t, dtype=np.float32).dtype == np.float32
    assert np.array(t).ctypes.data != a.ctypes.data  # np.array copies
    s = np.sin(fg.tensor([0.0, 1.0], dtype=fg.float64))
    assert isinstance(s, fg.Tensor)
    np.testing.assert_allclose(s.tolist(), np.sin([0.0, 1.0]))
    assert fg.Tensor.__array_priority__ == 1000  # ndarray <op> tensor defers to the tensor


def test_tolist():
    assert fg.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert fg.tensor(3.5).tolist() == 3.5
    assert fg.tensor([True]).tolist() == [True]
    assert type(fg.tensor([True]).tolist()[0]) is bool
    assert type(fg.tensor([1]).tolist()[0]) is int
    assert type(fg.tensor([1.0]).tolist()[0]) is float
    assert fg.zeros(2, 0).tolist() == [[], []]
    assert fg.arange(6).reshape(2, 3).t().tolist() == [[0, 3], [1, 4], [2, 5]]


# ---------------------------------------------------------------------------
# repr
# ---------------------------------------------------------------------------

REPR_CASES = [
    "T.tensor([[1., 2.], [3., 4.]], requires_grad=True)",
    "T.tensor(3.5)",
    "T.tensor([1, 2, 3])",
    "T.tensor([True, False])",
    "T.tensor([1.5, 2.25], dtype=T.float64)",
    "T.tensor([1e10, 1.])",
    "T.tensor([1e-5, 1.])",
    "T.tensor([123456789.0])",
    "T.tensor([float('nan'), float('inf'), -float('inf'), 1.])",
    "T.tensor([float('nan'), 1.5])",
    "T.tensor([-0.0, 0.0])",
    "T.tensor([0.])",
    "T.arange(2000.)",
    "T.arange(2000)",
    "T.ones(40, 40)",
    "T.ones(3, 1000)",
    "T.zeros(2, 3, 4)",
    "T.arange(30.).reshape(5, 6) / 7",
    "T.zeros(0, 3)",
    "T.zeros(0, dtype=T.int64)",
    "T.zeros(0, dtype=T.float64)",
    "T.tensor(5)",
    "T.tensor(True)",
    "T.tensor(-7.25, dtype=T.float64)",
    "T.arange(100.) * 1.1",
    "T.tensor([1e-10])",
    "T.tensor([1e200, 1e-200], dtype=T.float64)",
    "T.tensor([2.5, 0.125, 1/3])",
    "T.tensor([0.00015, 0.5])",
    "T.tensor([10**12, -3])",
    "T.tensor([[1., 2.], [3., 4.]], requires_grad=True) * 2",
    "T.zeros(50, requires_grad=True)",
    "T.arange(1, 31, dtype=T.float64).reshape(5, 6) * 1e5",
    "T.tensor([[[1.]]])",
    "T.zeros(1001)",
    "T.zeros(2, 600)",
    "T.zeros(1100, 2)",
    "T.tensor(1e-5)",
    "T.tensor(float('nan'))",
    "T.tensor(1e8)",
    "T.tensor(1.5e8)",
    "T.tensor([1000., 1.])",
    "T.tensor([1001., 1.])",
    "T.tensor([0.1, 0.25, 0.35])",
    "T.tensor(0.000125)",
    "T.zeros(2, 0, 3)",
    "T.zeros(0, dtype=T.bool)",
    "T.arange(24).reshape(2, 3, 4).transpose(0, 2)",
    "T.arange(12.).reshape(3, 4).select(1, 1)",
    "T.arange(5000.).reshape(50, 100)",
    "T.arange(10**4).reshape(10, 10, 100)",
    "T.tensor([0.125, 0.375, 2.5, 3.5])",
    "T.tensor([1.0e8, 2.0])",
    "T.tensor([-1.5, 2.0, -3.25])",
    "T.linspace(-1, 1, 7, dtype=T.float64)",
    "T.tensor([[True, False, True]] * 3)",
    "T.tensor([[-1, 20], [300, -4000]])",
    "T.arange(8.).reshape(2, 2, 2).requires_grad_()",
    "T.tensor([3.0], dtype=T.float64, requires_grad=True)",
    "T.tensor([1, 2]).expand(3, 2)",
    "T.arange(3.).to(T.float64)",
]


@pytest.mark.parametrize("expr", REPR_CASES)
def test_repr_matches_torch(expr, torch):
    ref = repr(eval(expr, {"T": torch})).replace("torch.", "ferrograd.")
    got = repr(eval(expr, {"T": fg}))
    assert got == ref


def test_repr_known_strings():
    x = fg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert repr(x) == "tensor([[1., 2.],\n        [3., 4.]], requires_grad=True)"
    assert str(x) == repr(x)
    assert repr(fg.tensor(3.5)) == "tensor(3.5000)"
    assert repr(fg.tensor([1, 2, 3])) == "tensor([1, 2, 3])"
    assert repr(fg.tensor([True, False])) == "tensor([ True, False])"
    assert repr(fg.tensor([1.5], dtype=fg.float64)) == "tensor([1.5000], dtype=ferrograd.float64)"
    assert repr(x * 2) == "tensor([[2., 4.],\n        [6., 8.]], grad_fn=<MulBackward0>)"
    assert repr(fg.tensor([1e10, 1.0])) == "tensor([1.0000e+10, 1.0000e+00])"
    assert repr(fg.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(fg.arange(2000)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"


def test_format_of_zero_dim_tensors():
    assert f"{fg.tensor(3.14159):.2f}" == "3.14"
    assert f"{fg.tensor(7):03d}" == "007"
    assert format(fg.tensor([1, 2])) == repr(fg.tensor([1, 2]))
    with pytest.raises(TypeError):
        format(fg.tensor([1.0, 2.0]), ".2f")


def test_printoptions():
    old = fg.get_printoptions()
    try:
        fg.set_printoptions(precision=2)
        assert repr(fg.tensor([1.12345])) == "tensor([1.12])"
        fg.set_printoptions(threshold=5)
        assert repr(fg.arange(10)) == "tensor([0, 1, 2,  ..., 7, 8, 9])"
        fg.set_printoptions(profile="default")
        assert repr(fg.tensor([1.12345])) == "tensor([1.1235])"
        assert repr(fg.arange(10)) == "tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])"
        fg.set_printoptions(sci_mode=True)
        assert repr(fg.tensor([1.5])) == "tensor([1.5000e+00])"
        fg.set_printoptions(sci_mode=False)
        assert repr(fg.tensor([1e10, 1.0])) == "tensor([10000000000.,           1.])"
    finally:
        fg.set_printoptions(**old)
    assert fg.get_printoptions() == old


# ---------------------------------------------------------------------------
# Size, device, dtype helpers, conversions
# ---------------------------------------------------------------------------


def test_size():
    s = fg.zeros(2, 3).size()
    assert isinstance(s, fg.Size) and isinstance(s, tuple)
    assert s == (2, 3) and s == fg.Size([2, 3])
    assert repr(s) == "ferrograd.Size([2, 3])" and str(s) == repr(s)
    assert s.numel() == 6 and fg.Size([]).numel() == 1
    assert isinstance(s[1:], fg.Size) and s[1:] == (3,)
    assert s[0] == 2 and type(s[0]) is int
    assert isinstance(s + (4,), fg.Size) and s + (4,) == (2, 3, 4)
    assert isinstance((1,) + s, fg.Size) and (1,) + s == (1, 2, 3)
    assert isinstance(s * 2, fg.Size) and s * 2 == (2, 3, 2, 3)
    assert fg.zeros(2, 3).size(1) == 3 and fg.zeros(2, 3).size(-2) == 2
    assert fg.zeros(2, 3).shape == s
    assert pickle.loads(pickle.dumps(s)) == s
    assert isinstance(pickle.loads(pickle.dumps(s)), fg.Size)
    assert fg.Size([fg.tensor(2), np.int64(3)]) == (2, 3)
    assert hash(s) == hash((2, 3))
    with pytest.raises(TypeError):
        fg.Size(["a"])
    with pytest.raises(TypeError):
        fg.Size([2.5])


def test_size_repr_matches_torch(torch):
    for shape in [(), (0,), (2, 3), (1, 2, 3, 4)]:
        assert repr(fg.zeros(shape).shape) == repr(torch.zeros(shape).shape).replace(
            "torch.", "ferrograd."
        )


def test_device():
    d = fg.device("cpu")
    assert repr(d) == "device(type='cpu')" and str(d) == "cpu"
    assert d.type == "cpu" and d.index is None
    assert (
        fg.device("cpu:0").index == 0 and repr(fg.device("cpu", 0)) == "device(type='cpu', index=0)"
    )
    assert fg.device("cpu") == fg.device("cpu") and fg.device("cpu") != fg.device("cpu:0")
    assert fg.device("cpu") != "cpu"
    assert fg.device(d) == d
    assert fg.device("cuda").type == "cuda"  # describing a device is fine
    assert fg.zeros(1).device == fg.device("cpu")
    assert fg.zeros(1).device.type == "cpu"
    assert hash(fg.device("cpu")) == hash(fg.device("cpu"))
    assert pickle.loads(pickle.dumps(fg.device("cpu", 0))) == fg.device("cpu", 0)
    with pytest.raises(RuntimeError):
        fg.device("foo")
    with pytest.raises(RuntimeError):
        fg.device("cpu:0", 1)
    with pytest.raises(RuntimeError):
        fg.zeros(1, device=fg.device("cuda"))
    with pytest.raises(RuntimeError):
        fg.zeros(1).cuda()


def test_module_helpers():
    assert fg.get_default_dtype() == fg.float32
    assert fg.is_tensor(fg.zeros(1)) and not fg.is_tensor(3) and not fg.is_tensor(np.zeros(1))
    assert fg.numel(fg.zeros(2, 3)) == 6
    assert fg.is_floating_point(fg.zeros(1)) and not fg.is_floating_point(
        fg.zeros(1, dtype=fg.int64)
    )


def test_to_type_cpu():
    x = fg.tensor([1.5, 2.5])
    assert x.to(fg.float32) is x
    assert x.to("cpu") is x
    assert x.to(fg.device("cpu")) is x
    assert x.cpu() is x
    assert x.to(dtype=fg.float32) is x
    assert x.to(fg.float32, copy=True) is not x
    assert x.to(fg.float64).dtype == fg.float64
    assert x.to("cpu", fg.int64).tolist() == [1, 2]
    assert x.to(device="cpu", dtype=fg.float64).dtype == fg.float64
    assert x.to(fg.tensor([1])).dtype == fg.int64
    assert x.to(fg.float64, non_blocking=True).dtype == fg.float64
    assert x.type() == "ferrograd.FloatTensor"
    assert fg.tensor([True]).type() == "ferrograd.BoolTensor"
    assert fg.tensor([1]).type() == "ferrograd.LongTensor"
    assert x.type(fg.float64).dtype == fg.float64
    assert x.type("ferrograd.DoubleTensor").dtype == fg.float64
    assert x.type("torch.LongTensor").dtype == fg.int64
    assert x.type(fg.float32) is x
    assert x.is_cpu
    with pytest.raises(RuntimeError):
        x.to("cuda")
    with pytest.raises(RuntimeError):
        x.to(0)
    with pytest.raises(TypeError):
        x.to([1])
    assert x.type("ferrograd.HalfTensor").dtype == fg.float16
    assert x.type("ferrograd.BFloat16Tensor").dtype == fg.bfloat16
    with pytest.raises(ValueError):
        x.type("ferrograd.ComplexFloatTensor")
    # to(dtype) is differentiable
    y = fg.tensor([1.0, 2.0], requires_grad=True)
    z = y.to(fg.float64)
    assert z.grad_fn is not None and z.grad_fn.name() == "ToCopyBackward0"
    z.sum().backward()
    assert y.grad.dtype == fg.float32 and y.grad.tolist() == [1.0, 1.0]


def test_shape_and_conversion_match_torch(torch):
    for expr in [
        "T.zeros(2, 3).to(T.float64)",
        "T.zeros(2).to(T.zeros(1, dtype=T.int64))",
        "T.zeros(2).type(T.float64)",
        "T.tensor([[1, 2], [3, 4]])",
    ]:
        a, b = eval(expr, {"T": torch}), eval(expr, {"T": fg})
        assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
        assert a.tolist() == b.tolist()
    assert torch.zeros(2).type() == fg.zeros(2).type().replace("ferrograd.", "torch.")


# ---------------------------------------------------------------------------
# internal errors
# ---------------------------------------------------------------------------


def test_rust_panic_becomes_python_exception():
    with pytest.raises(BaseException) as info:
        fg._C._test_panic()
    assert type(info.value).__name__ == "PanicException"
    assert "deliberate panic" in str(info.value)
    # The interpreter and the library keep working.
    assert (fg.tensor([1.0, 2.0]) * 2).tolist() == [2.0, 4.0]
    with pytest.raises(BaseException):
        fg._C._test_panic()
    assert fg.ones(2).sum().item() == 2.0


def test_panic_does_not_kill_the_process():
    code = (
        "import ferrograd as fg\n"
        "try:\n    fg._C._test_panic()\nexcept BaseException as e:\n"
        "    print(type(e).__name__)\n"
        "print(fg.ones(3).sum().item())\n"
    )
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(fg.__file__)))
    env = dict(os.environ, RUST_BACKTRACE="0")
    env["PYTHONPATH"] = os.pathsep.join([pkg_root, env.get("PYTHONPATH", "")])
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["PanicException", "3.0"]


# ---------------------------------------------------------------------------
# the legacy Tensor(...) constructor and subclasses
# ---------------------------------------------------------------------------


def test_legacy_tensor_constructor():
    assert fg.Tensor().shape == (0,) and fg.Tensor().dtype == fg.float32
    assert fg.Tensor(2, 3).shape == (2, 3)
    assert fg.Tensor(fg.Size([2, 3])).shape == (2, 3)
    assert fg.Tensor((2, 3)).tolist() == [2.0, 3.0]  # a tuple is data
    assert fg.Tensor([1, 2]).dtype == fg.float32
    assert fg.Tensor(np.array([1, 2])).tolist() == [1.0, 2.0]
    a = fg.tensor([1.0, 2.0], requires_grad=True)
    b = fg.Tensor(a)
    assert b.data_ptr() == a.data_ptr() and b.requires_grad
    with pytest.raises(TypeError, match="data must be a sequence"):
        fg.Tensor(2.5)
    with pytest.raises(TypeError):
        fg.Tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        fg.Tensor([1.0], device="cuda")


def test_subclass_construction_and_repr():
    class MyTensor(fg.Tensor):
        pass

    t = MyTensor([1.0, 2.0])
    assert isinstance(t, fg.Tensor) and type(t) is MyTensor
    assert repr(t) == "MyTensor([1., 2.])"
    torch = pytest.importorskip("torch")

    class MyTensor(torch.Tensor):  # noqa: F811
        pass

    assert repr(MyTensor([1.0, 2.0])) == repr(t)


def test_set_default_dtype(lib):
    """The default float dtype drives Python floats, creation functions and
    float results of integer inputs; only float types are accepted."""
    assert lib.get_default_dtype() == lib.float32
    lib.set_default_dtype(lib.float64)
    try:
        assert lib.get_default_dtype() == lib.float64
        for t in (lib.tensor([1.5]), lib.tensor(2.0), lib.zeros(2), lib.randn(2), lib.rand(2)):
            assert t.dtype == lib.float64
        assert lib.arange(3).exp().dtype == lib.float64
        assert (lib.arange(3) * 1.5).dtype == lib.float64
        assert (lib.ones(2, dtype=lib.float32) * 1.5).dtype == lib.float32
        assert lib.linspace(0, 1, 3).dtype == lib.float64
        assert repr(lib.tensor([1.5])) == "tensor([1.5000])"
        with pytest.raises(TypeError, match="only floating-point types"):
            lib.set_default_dtype(lib.int64)
        assert lib.get_default_dtype() == lib.float64
    finally:
        lib.set_default_dtype(lib.float32)
    assert lib.tensor([1.5]).dtype == lib.float32


def test_inplace_add_sub_alpha(lib):
    """torch's SGD form: p.add_(grad, alpha=-lr); sub_ likewise."""
    p = lib.tensor([1.0, 2.0], dtype=lib.float64)
    g = lib.tensor([0.5, -1.0], dtype=lib.float64)
    assert p.add_(g, alpha=-2.0) is p
    np.testing.assert_allclose(p.numpy(), [0.0, 4.0])
    p.sub_(g, alpha=3)
    np.testing.assert_allclose(p.numpy(), [-1.5, 7.0])
    p.add_(g)
    np.testing.assert_allclose(p.numpy(), [-1.0, 6.0])
    with lib.no_grad():
        w = lib.ones(2, requires_grad=True)
        w.add_(lib.ones(2), alpha=-0.5)
    np.testing.assert_allclose(w.detach().numpy(), [0.5, 0.5])
