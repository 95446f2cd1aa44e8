"""softmax/log_softmax backward: the fused kernels (a backward that records
no graph, along the last dim or another) against the same formulas run as ops
(create_graph=True), both float dtypes, contiguous and broadcast
gradients; and cat/stack, whose kernel copies contiguous pieces directly
and the rest through the iteration layer, against a slice-by-slice
reference."""

import pytest

import ferrograd as fg


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize(
    "shape,dim",
    [((7, 5, 6), -1), ((4, 333), -1), ((1,), -1), ((3, 1), -1), ((7, 5, 6), 0), ((7, 5, 6), 1)]
    + [((3, 1), 0), ((4, 60, 300), 1), ((64, 700), 0)],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_backward_matches_the_graph_backward(op, shape, dim, dtype):
    dt = getattr(fg, dtype)
    fg.manual_seed(0)
    x = (fg.randn(*shape, dtype=dt) * 3).requires_grad_()
    y = getattr(x, op)(dim)
    g = fg.randn(*shape, dtype=dt)
    (fused,) = fg.autograd.grad(y, x, g, retain_graph=True)
    (graph,) = fg.autograd.grad(y, x, g, create_graph=True)
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert fused.shape == x.shape
    assert fg.allclose(fused, graph.detach(), rtol=tol, atol=tol)
    # The same bits at every thread count (each sum runs on one thread).
    threads = fg.get_num_threads()
    try:
        for t in (1, 3):
            fg.set_num_threads(t)
            (again,) = fg.autograd.grad(y, x, g, retain_graph=True)
            assert fg.equal(again, fused)
    finally:
        fg.set_num_threads(threads)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_fused_backward_of_a_broadcast_gradient_and_gradcheck(op):
    x = fg.randn(6, 9, dtype=fg.float64, requires_grad=True)
    getattr(x, op)(1).sum().backward()  # an expanded (stride 0) gradient
    x2 = x.detach().clone().requires_grad_()
    (gx,) = fg.autograd.grad(getattr(x2, op)(1).sum(), x2, create_graph=True)
    assert fg.allclose(x.grad, gx.detach(), atol=1e-12)
    assert fg.autograd.gradcheck(lambda t: getattr(t, op)(-1), (x2.detach().requires_grad_(),))


def test_matches_torch(torch):
    import numpy as np

    rng = np.random.default_rng(2)
    xs, gs = rng.standard_normal((5, 17)), rng.standard_normal((5, 17))
    for op in ("softmax", "log_softmax"):
        grads = []
        for lib in (fg, torch):
            x = lib.tensor(xs, dtype=lib.float64, requires_grad=True)
            getattr(x, op)(-1).backward(lib.tensor(gs, dtype=lib.float64))
            grads.append(x.grad.numpy())
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)


def _reference_cat(ts, dim):
    """cat written slice by slice along dim 0 of the moved axis."""
    moved = [t.movedim(dim, 0) for t in ts]
    rows = [m[i] for m in moved for i in range(m.shape[0])]
    out = fg.zeros((len(rows),) + tuple(rows[0].shape), dtype=ts[0].dtype)
    for i, r in enumerate(rows):
        out[i] = r
    return out.movedim(0, dim)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cat_of_mixed_layouts_and_dtypes(dim):
    fg.manual_seed(1)
    base = [fg.randn(3, 4, 5) for _ in range(4)]
    sizes = [1, 3, 2, 4]
    ts = []
    for i, (b, n) in enumerate(zip(base, sizes)):
        t = b.narrow(dim, 0, min(n, b.shape[dim]))
        if i == 1:
            t = t.transpose(0, 2).contiguous().transpose(0, 2)  # strided
        if i == 2:
            t = t.double()  # another dtype: promoted
        ts.append(t)
    got = fg.cat(ts, dim)
    assert got.dtype == fg.float64
    want = _reference_cat([t.double() for t in ts], dim)
    assert fg.equal(got, want)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_stack_matches_unsqueeze_and_cat(dim):
    ts = [fg.arange(i * 1000, i * 1000 + 600, dtype=fg.float32).reshape(20, 30) for i in range(7)]
    ts[3] = ts[3].t().contiguous().t()
    got = fg.stack(ts, dim)
    want = _reference_cat([t.unsqueeze(dim) for t in ts], dim)
    assert fg.equal(got, want)
    # big enough to split over threads, one element per source and row
    big = [fg.randn(70000) for _ in range(5)]
    s = fg.stack(big, -1)
    for i, b in enumerate(big):
        assert fg.equal(s[:, i], b)


@pytest.mark.parametrize("dims", [-1, 0, 1, (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_logsumexp_one_pass_backward_matches_the_graph_backward(dims, keepdim):
    # Without a graph to record, logsumexp's backward g * exp(x - result)
    # runs as one broadcast pass; with create_graph, as ops.
    fg.manual_seed(1)
    x = (fg.randn(5, 40, 30, dtype=fg.float64) * 4).requires_grad_()
    y = x.logsumexp(dims, keepdim=keepdim)
    g = fg.randn(*y.shape, dtype=fg.float64)
    (fused,) = fg.autograd.grad(y, x, g, retain_graph=True)
    (graph,) = fg.autograd.grad(y, x, g, create_graph=True)
    assert fg.allclose(fused, graph.detach(), rtol=1e-13, atol=1e-13)
