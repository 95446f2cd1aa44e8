"""DLPack both ways, with NumPy (always) and torch (when installed):
zero-copy proven by writing through one side and reading the other,
lifetimes (the producer dropped first), strides, capsule rules and errors."""

import gc

import numpy as np
import pytest

import ferrograd as fg
from ferrograd.utils import dlpack


def test_from_numpy_shares_memory_and_outlives_the_array():
    a = np.arange(6.0).reshape(2, 3)
    t = fg.from_dlpack(a)
    assert t.dtype == fg.float64 and t.shape == (2, 3) and t.stride() == (3, 1)
    t[0, 0] = 42.0
    assert a[0, 0] == 42.0
    a[1, 2] = -7.0
    assert t[1, 2].item() == -7.0
    del a
    gc.collect()
    assert t.tolist() == [[42.0, 1.0, 2.0], [3.0, 4.0, -7.0]]


@pytest.mark.parametrize(
    "dtype,fdtype",
    [("float32", "float32"), ("float64", "float64"), ("int64", "int64"), ("bool", "bool")],
)
def test_dtypes_round_trip_with_numpy(dtype, fdtype):
    a = (np.arange(8) % 2).astype(dtype)
    t = fg.from_dlpack(a)
    assert t.dtype == getattr(fg, fdtype)
    assert t.tolist() == a.tolist()
    back = np.from_dlpack(t)
    assert back.dtype == a.dtype and back.tolist() == a.tolist()
    assert back.ctypes.data == a.ctypes.data


def test_non_contiguous_numpy_keeps_strides():
    a = np.arange(24.0).reshape(4, 6)[1:, ::2]
    t = fg.from_dlpack(a)
    assert t.stride() == (6, 2) and t.tolist() == a.tolist()
    t[2, 1] = 1000.0
    assert a[2, 1] == 1000.0
    assert (t * 2).tolist() == (a * 2).tolist()


def test_negative_strides_are_refused_and_change_nothing():
    a = np.arange(5.0)[::-1]
    with pytest.raises(BufferError):
        fg.from_dlpack(a)
    assert a.tolist() == [4.0, 3.0, 2.0, 1.0, 0.0]


def test_read_only_numpy_array_is_shared_as_torch_does():
    # NumPy exports a read-only array only through DLPack 1.0 (with the
    # read-only flag); torch shares it anyway, and so does ferrograd.
    a = np.arange(4.0)
    a.flags.writeable = False
    t = fg.from_dlpack(a)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert t.data_ptr() == a.ctypes.data


def test_export_to_numpy_shares_and_outlives_the_tensor():
    x = fg.arange(12.0).reshape(3, 4)
    v = x.t()[1:]
    n = np.from_dlpack(v)
    assert n.shape == (3, 3) and n.strides == (4, 16)
    n[0, 1] = -1.0
    assert v[0, 1].item() == -1.0 and x[1, 1].item() == -1.0
    del x, v
    gc.collect()
    assert n[0, 1] == -1.0 and n[2, 2] == 11.0


def test_expanded_and_empty_tensors():
    e = np.from_dlpack(fg.ones(2, 1).expand(2, 3))
    assert e.strides[1] == 0 and e.tolist() == [[1.0] * 3] * 2
    z = fg.from_dlpack(np.zeros((0, 3)))
    assert z.shape == (0, 3)
    assert np.from_dlpack(fg.zeros(0)).shape == (0,)
    s = fg.from_dlpack(np.array(2.5))
    assert s.shape == () and s.item() == 2.5


def test_capsules_are_consumed_once():
    cap = dlpack.to_dlpack(fg.arange(3.0))
    assert "dltensor" in repr(cap)
    assert fg.from_dlpack(cap).tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="consumed only once"):
        fg.from_dlpack(cap)
    with pytest.raises(RuntimeError, match="invalid capsule"):
        fg.utils.dlpack.from_dlpack(5)
    # unconsumed capsules free their tensor when collected
    for _ in range(3):
        fg.ones(1000).__dlpack__(max_version=(1, 0))
    gc.collect()


def test_versioned_capsule_and_keywords():
    x = fg.arange(4.0)
    cap = x.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(cap)
    y = fg.from_dlpack(cap)
    y[0] = 9.0
    assert x[0].item() == 9.0
    assert x.__dlpack_device__() == (1, 0)
    c = fg.from_dlpack(x, copy=True)
    c[1] = 100.0
    assert x[1].item() == 1.0
    assert fg.from_dlpack(x, device="cpu").data_ptr() == x.data_ptr()
    assert "dltensor" in repr(x.__dlpack__(stream=None, dl_device=(1, 0), copy=False))
    assert "dltensor" in repr(x.__dlpack__(stream=-1))


def test_errors_like_torch():
    x = fg.ones(3, requires_grad=True)
    with pytest.raises(BufferError, match="require gradient"):
        x.__dlpack__()
    assert np.from_dlpack(x.detach()).tolist() == [1.0] * 3
    y = fg.ones(2)
    with pytest.raises(TypeError, match="stream must be"):
        y.__dlpack__(stream="s")
    with pytest.raises(AssertionError, match="stream should be None on cpu"):
        y.__dlpack__(stream=3)
    with pytest.raises(BufferError):
        y.__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError, match="no dtype"):
        fg.from_dlpack(np.zeros(3, dtype=np.uint16))
    with pytest.raises(ValueError):
        fg.from_dlpack(np.zeros(3), device="cuda")


def test_autograd_on_a_shared_tensor():
    a = np.array([1.0, 2.0, 3.0])
    t = fg.from_dlpack(a).requires_grad_()
    (t * t).sum().backward()
    assert t.grad.tolist() == [2.0, 4.0, 6.0]


# ----- torch -----


def test_torch_to_ferrograd(torch):
    src = torch.arange(10.0).reshape(2, 5)[:, 1:4]
    t = fg.from_dlpack(src)
    assert t.stride() == src.stride() and t.tolist() == src.tolist()
    t[1, 1] = -3.0
    assert src[1, 1].item() == -3.0
    del src
    gc.collect()
    assert t[1, 1].item() == -3.0
    for dt in ("float32", "float64", "int64", "bool"):
        s = (torch.arange(6) % 2).to(getattr(torch, dt))
        f = fg.from_dlpack(s)
        assert f.dtype == getattr(fg, dt) and f.tolist() == s.tolist()
        assert f.data_ptr() == s.data_ptr()


def test_ferrograd_to_torch(torch):
    x = fg.arange(12.0).reshape(3, 4).t()
    tt = torch.from_dlpack(x)
    assert tt.stride() == x.stride() and tt.tolist() == x.tolist()
    tt[1, 1] = 100.0
    assert x[1, 1].item() == 100.0
    del x
    gc.collect()
    assert tt[1, 1].item() == 100.0
    assert tt.sum().item() == sum(range(12)) - 5 + 100
    # torch's own capsules and torch's from_dlpack on ferrograd capsules
    assert torch.from_dlpack(fg.ones(2).__dlpack__(max_version=(1, 0))).tolist() == [1.0, 1.0]
    assert fg.from_dlpack(torch.ones(2).__dlpack__()).tolist() == [1.0, 1.0]


def test_torch_and_ferrograd_agree_on_errors(torch):
    for lib in (torch, fg):
        with pytest.raises(BufferError):
            lib.ones(2, requires_grad=True).__dlpack__()
        with pytest.raises(AssertionError):
            lib.ones(2).__dlpack__(stream=3)
        cap = lib.ones(2).__dlpack__()
        lib.from_dlpack(cap)
        with pytest.raises(RuntimeError):
            lib.from_dlpack(cap)
