"""gather/scatter split over threads: results against a numpy reference
(np.add.at for scatter_add), bitwise equal at 1 and 2 threads, along every
dim, with strided operands; a bad index raises before anything is written."""

import numpy as np
import pytest

import ferrograd as fg


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_scatter_add_matches_numpy_at_every_thread_count(dim, dtype, at_threads):
    rng = np.random.default_rng(dim)
    shape = (40, 30, 50)
    idx = rng.integers(0, shape[dim], size=shape)
    src = rng.standard_normal(shape) * 10
    src = src.astype(np.int64) if dtype == "int64" else src.astype(dtype)
    want = np.zeros(shape, dtype=src.dtype)
    pos = list(np.indices(shape))
    pos[dim] = idx
    np.add.at(want, tuple(pos), src)
    outs = []
    for n in (1, 2):
        z = fg.zeros(*shape, dtype=getattr(fg, dtype))
        at_threads(n, lambda: z.scatter_add_(dim, fg.tensor(idx), fg.tensor(src)))
        outs.append(z.numpy())
    assert np.array_equal(outs[0], outs[1])  # bitwise: same order per element
    np.testing.assert_allclose(outs[0], want, rtol=1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_and_gather_on_strided_operands(dim, at_threads):
    rng = np.random.default_rng(7)
    base = rng.standard_normal((300, 400)).astype(np.float32)
    idx = rng.integers(0, 150, size=(150, 200))
    x = fg.tensor(base)[::2, ::2]  # strided source, 150 x 200
    i = fg.tensor(idx.T.copy()).t()  # transposed index
    got = at_threads(2, lambda: x.gather(dim, i)).numpy()
    want = np.take_along_axis(base[::2, ::2], idx, axis=dim)
    assert np.array_equal(got, want)
    dst = fg.zeros(300, 400)
    view = dst[::2, ::2]
    at_threads(2, lambda: view.scatter_(dim, i, x))
    ref = np.zeros((150, 200), np.float32)
    np.put_along_axis(ref, idx, base[::2, ::2], axis=dim)
    assert np.array_equal(dst.numpy()[::2, ::2], ref)
    assert not dst.numpy()[1::2].any()


def test_a_bad_index_raises_and_writes_nothing(at_threads):
    z = fg.zeros(200, 300)
    idx = fg.randint(0, 200, (200, 300))
    idx[150, 7] = 200
    for n in (1, 2):
        with pytest.raises(RuntimeError, match="out of bounds"):
            at_threads(n, lambda: z.scatter_add_(0, idx, fg.ones(200, 300)))
        assert not z.any()
        with pytest.raises(RuntimeError, match="out of bounds"):
            at_threads(n, lambda: fg.ones(200, 300).gather(0, idx))


def test_scatter_value(at_threads):
    idx = fg.randint(0, 300, (200, 300))
    y = fg.zeros(200, 300)
    at_threads(2, lambda: y.scatter_(1, idx, 2.5))
    w = np.zeros((200, 300))
    np.put_along_axis(w, idx.numpy(), 2.5, axis=1)
    assert np.array_equal(y.numpy(), w)


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("shape", [(40, 30, 50), (3, 200, 100), (2, 5, 1)])
def test_index_select_backward_kernel_matches_the_graph_backward(dim, shape, at_threads):
    fg.manual_seed(dim)
    x = fg.randn(*shape, dtype=fg.float64, requires_grad=True)
    idx = fg.randint(0, shape[dim], (2 * shape[dim] + 1,))  # repeats
    y = x.index_select(dim, idx)
    g = fg.randn(*y.shape, dtype=fg.float64)
    outs = []
    for n in (1, 2):
        (gx,) = at_threads(n, lambda: fg.autograd.grad(y, x, g, retain_graph=True))
        outs.append(gx.numpy())
    assert np.array_equal(outs[0], outs[1])
    (graph,) = fg.autograd.grad(y, x, g, create_graph=True)
    np.testing.assert_allclose(outs[0], graph.detach().numpy(), rtol=1e-12, atol=1e-12)
    want = np.zeros(shape)
    moved = np.moveaxis(want, dim, 0)
    np.add.at(moved, idx.numpy(), np.moveaxis(g.numpy(), dim, 0))
    np.testing.assert_allclose(outs[0], want, rtol=1e-12, atol=1e-12)
