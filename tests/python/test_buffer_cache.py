"""Big buffers are cached when freed and reused by later ops: results must
not depend on what a reused buffer held before."""

import numpy as np
import pytest

import ferrograd as fg
from ferrograd import _C

N = 1 << 19  # 2 MiB of float32: above the cache's 64 KiB floor


def _fill_cache():
    # Freed big tensors of assorted sizes and values land in the cache.
    for k in range(4):
        t = fg.full((N,), 7.0 + k)
        del t
    for k in range(2):
        t = fg.full((512, 1024), -3.0)
        del t


@pytest.fixture(autouse=True)
def fresh_cache():
    _C._empty_buffer_cache()
    yield
    _C._empty_buffer_cache()


def test_freed_big_buffers_are_cached_and_released():
    assert _C._buffer_cache_bytes() == 0
    t = fg.ones(N)
    del t
    assert _C._buffer_cache_bytes() == 4 * N
    small = fg.ones(1000)
    del small
    assert _C._buffer_cache_bytes() == 4 * N  # small buffers are not kept
    u = fg.ones(N)  # takes the cached buffer
    assert _C._buffer_cache_bytes() == 0
    del u
    _C._empty_buffer_cache()
    assert _C._buffer_cache_bytes() == 0


@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
def test_ops_on_reused_buffers_match_numpy(dtype):
    rng = np.random.default_rng(0)
    npdt = np.float32 if dtype == fg.float32 else np.float64
    a_np = rng.standard_normal(N).astype(npdt)
    b_np = rng.standard_normal(N).astype(npdt)
    for _ in range(3):
        _fill_cache()
        a, b = fg.tensor(a_np), fg.tensor(b_np)
        np.testing.assert_allclose((a * b).numpy(), a_np * b_np, rtol=1e-6)
        np.testing.assert_allclose((a + 2.5).numpy(), a_np + npdt(2.5), rtol=1e-6)
        np.testing.assert_allclose((2.5 - a).numpy(), npdt(2.5) - a_np, rtol=1e-6)
        np.testing.assert_allclose(a.tanh().numpy(), np.tanh(a_np), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a.relu().numpy(), np.maximum(a_np, 0), rtol=0)
        assert (fg.zeros(N, dtype=dtype).numpy() == 0).all()
        assert (fg.ones(N, dtype=dtype).numpy() == 1).all()
        np.testing.assert_array_equal(a.clone().numpy(), a_np)
        c = fg.empty(N, dtype=dtype)
        c.copy_(b)
        np.testing.assert_array_equal(c.numpy(), b_np)


def test_matmul_and_backward_on_reused_buffers():
    rng = np.random.default_rng(1)
    a_np = rng.standard_normal((512, 600)).astype(np.float32)
    b_np = rng.standard_normal((600, 512)).astype(np.float32)
    for _ in range(2):
        _fill_cache()
        a = fg.tensor(a_np, requires_grad=True)
        b = fg.tensor(b_np, requires_grad=True)
        out = a @ b
        np.testing.assert_allclose(out.detach().numpy(), a_np @ b_np, rtol=1e-4, atol=1e-3)
        out.tanh().sum().backward()
        g = 1 - np.tanh(a_np @ b_np) ** 2
        np.testing.assert_allclose(a.grad.numpy(), g @ b_np.T, rtol=1e-3, atol=1e-2)
        np.testing.assert_allclose(b.grad.numpy(), a_np.T @ g, rtol=1e-3, atol=1e-2)


def test_inplace_fast_paths_on_big_tensors():
    rng = np.random.default_rng(2)
    x_np = rng.standard_normal(N).astype(np.float32)
    y_np = rng.standard_normal(N).astype(np.float32)
    x, y = fg.tensor(x_np), fg.tensor(y_np)
    v = x._version
    x.mul_(y)
    x.add_(y, alpha=2.0)
    x.sub_(0.5)
    x.div_(y)
    x -= y
    assert x._version == v + 5
    want = (x_np * y_np + 2.0 * y_np - np.float32(0.5)) / y_np - y_np
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-5, atol=1e-5)
    # Aliased operands: x.add_(x) reads x before writing it.
    z = fg.tensor(x_np)
    z.add_(z)
    np.testing.assert_array_equal(z.numpy(), 2 * x_np)
    # A strided source (a transposed view) and a broadcast one.
    m_np = rng.standard_normal((1024, 1024)).astype(np.float32)
    m = fg.empty(1024, 1024)
    m.copy_(fg.tensor(m_np).t())
    np.testing.assert_array_equal(m.numpy(), m_np.T)
    m.copy_(fg.tensor(m_np[0]))
    np.testing.assert_array_equal(m.numpy(), np.broadcast_to(m_np[0], (1024, 1024)))
    z.zero_()
    assert (z.numpy() == 0).all()
    z.fill_(3)
    assert (z.numpy() == 3).all()


def test_inplace_fast_paths_keep_errors_and_saved_tensor_checks():
    a = fg.ones(N, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        a.mul_(2.0)
    i = fg.ones(N, dtype=fg.int64)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.div_(fg.full((N,), 2, dtype=fg.int64))
    with pytest.raises(RuntimeError):
        fg.ones(3).add_(fg.ones(4))
    # A tensor saved for backward, then modified by a fast in-place op.
    w = fg.ones(N, requires_grad=True)
    x = fg.full((N,), 2.0)
    out = (w * x).sum()
    x.mul_(3.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()
