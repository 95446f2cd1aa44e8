"""NestedIOFunction: torch's legacy Function with nested inputs and
outputs. torch 2.13 keeps the class but calling an instance raises there,
so these check ferrograd against the math (and gradcheck)."""

import gc
import warnings
import weakref

import ferrograd as fg
import pytest
from ferrograd.autograd.function import NestedIOFunction


class Pairwise(NestedIOFunction):
    def forward_extended(self, a, pair):
        self.save_for_backward(a, pair)
        return a * 2, (pair[0] * pair[1],)

    def backward_extended(self, ga, gp):
        a, (p0, p1) = self.saved_tensors
        return ga * 2, (gp[0] * p1, gp[0] * p0)


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def test_nested_values_and_gradients():
    x = fg.ones(2, requires_grad=True)
    y = fg.full((2,), 2.0, requires_grad=True)
    z = y * 3
    a, (b,) = Pairwise()(x, (y, z))
    assert a.tolist() == [2.0, 2.0] and b.tolist() == [12.0, 12.0]
    assert type(a.grad_fn).__name__ == "PairwiseBackward"
    (a.sum() + b.sum()).backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert y.grad.tolist() == [12.0, 12.0]  # z + 3 y


def test_gradcheck():
    def f(a, b, c):
        out, (prod,) = Pairwise()(a, (b, c))
        return out, prod

    args = tuple(fg.randn(3, dtype=fg.float64, requires_grad=True) for _ in range(3))
    assert fg.autograd.gradcheck(f, args)


def test_mark_non_differentiable_and_none_gradients():
    class Split(NestedIOFunction):
        def forward_extended(self, pair):
            idx = pair[0].argmax().reshape(1).float()
            self.mark_non_differentiable(idx)
            return [pair[0] + pair[1], idx]

        def backward_extended(self, g, g_idx):
            return ([g, None],)

    p, q = fg.randn(3, requires_grad=True), fg.randn(3, requires_grad=True)
    s, idx = Split()((p, q))
    assert s.requires_grad and not idx.requires_grad
    s.sum().backward()
    assert p.grad.tolist() == [1.0, 1.0, 1.0] and q.grad is None


def test_graph_freed_without_gc():
    gc.disable()
    try:
        x = fg.ones(2, requires_grad=True)
        a, (b,) = Pairwise()(x, (x * 1, x * 2))
        node = weakref.ref(a.grad_fn)
        del a, b
        assert node() is None
    finally:
        gc.enable()
