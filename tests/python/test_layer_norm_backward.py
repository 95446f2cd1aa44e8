"""layer_norm's backward: the fused kernel (a backward that records no
graph) against the same formulas in ops (create_graph=True), with and
without weight and bias, over one and two normalised dims, both float
dtypes; and against torch when it is installed."""

import pytest

import ferrograd as fg


@pytest.mark.parametrize("affine", ["both", "weight", "none"])
@pytest.mark.parametrize(
    "shape,norm",
    # (300, 40): rows over several parts of the kernel (64 rows each).
    [((7, 5, 6), (5, 6)), ((4, 33), (33,)), ((3, 1, 9), (9,)), ((300, 40), (40,))],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_backward_matches_the_graph_backward(affine, shape, norm, dtype):
    dt = getattr(fg, dtype)
    fg.manual_seed(0)
    x = (fg.randn(*shape, dtype=dt) * 3 + 1).requires_grad_()
    w = fg.randn(*norm, dtype=dt).requires_grad_() if affine != "none" else None
    b = fg.randn(*norm, dtype=dt).requires_grad_() if affine == "both" else None
    y = fg.nn.functional.layer_norm(x, norm, w, b, eps=1e-5)
    g = fg.randn(*shape, dtype=dt)
    inputs = [t for t in (x, w, b) if t is not None]
    fused = fg.autograd.grad(y, inputs, g, retain_graph=True)
    graph = fg.autograd.grad(y, inputs, g, create_graph=True)
    tol = 1e-4 if dtype == "float32" else 1e-10
    for a, c in zip(fused, graph):
        assert a.shape == c.shape
        assert fg.allclose(a, c.detach(), rtol=tol, atol=tol)


def test_fused_backward_bits_do_not_depend_on_the_thread_count(at_threads):
    fg.manual_seed(2)
    x = fg.randn(1000, 48, requires_grad=True)
    w = fg.randn(48, requires_grad=True)
    b = fg.randn(48, requires_grad=True)
    g = fg.randn(1000, 48)

    def grads():
        y = fg.nn.functional.layer_norm(x, (48,), w, b)
        return fg.autograd.grad(y, (x, w, b), g)

    one, two = at_threads(1, grads), at_threads(2, grads)
    for a, c in zip(one, two):
        assert fg.equal(a, c)


def test_fused_backward_of_x_alone_and_of_a_broadcast_gradient():
    x = fg.randn(16, 8, dtype=fg.float64, requires_grad=True)
    w = fg.randn(8, dtype=fg.float64)  # no grad wanted
    y = fg.nn.functional.layer_norm(x, (8,), w)
    y.sum().backward()  # an expanded (stride 0) gradient
    x2 = x.detach().clone().requires_grad_()
    (gx,) = fg.autograd.grad(fg.nn.functional.layer_norm(x2, (8,), w).sum(), x2, create_graph=True)
    assert fg.allclose(x.grad, gx.detach(), atol=1e-12)
    assert fg.autograd.gradcheck(
        lambda t: fg.nn.functional.layer_norm(t, (8,), w), (x2.detach().requires_grad_(),)
    )


def test_matches_torch(torch):
    import numpy as np

    rng = np.random.default_rng(1)
    xs, ws, bs, gs = (rng.standard_normal(s) for s in [(6, 10), (10,), (10,), (6, 10)])
    grads = []
    for lib in (fg, torch):
        x, w, b = (lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in (xs, ws, bs))
        y = lib.nn.functional.layer_norm(x, (10,), w, b)
        y.backward(lib.tensor(gs, dtype=lib.float64))
        grads.append([t.grad.detach().numpy() for t in (x, w, b)])
    for a, c in zip(*grads):
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)
