"""`x.grad` is one object while it lives, as in torch: repeated accesses, the
object it was set to, attributes set on it. Runs on ferrograd and on torch
(the `lib` fixture), so torch checks each expectation.

One difference is left: torch keeps a tensor's Python object alive as long
as the tensor, so an attribute set on a temporary `w.grad` survives; here a
gradient object nobody holds is freed, and the next access makes a new one."""

import gc
import weakref


def test_grad_is_the_same_object_on_every_access(lib):
    w = lib.ones(3, requires_grad=True)
    (w * 2).sum().backward()
    g = w.grad
    assert w.grad is g
    # accumulation writes into the same gradient
    (w * 3).sum().backward()
    assert w.grad is g
    assert g.tolist() == [5.0, 5.0, 5.0]


def test_retained_grad_of_a_non_leaf(lib):
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.sum().backward()
    assert y.grad is y.grad


def test_assigned_grad_is_the_assigned_object(lib):
    w = lib.zeros(3, requires_grad=True)
    g = lib.full((3,), 2.0)
    w.grad = g
    assert w.grad is g
    (w * 1).sum().backward()  # accumulates into g
    assert w.grad is g
    assert g.tolist() == [3.0, 3.0, 3.0]


def test_attributes_set_on_a_held_grad_stay(lib):
    w = lib.ones(2, requires_grad=True)
    w.sum().backward()
    g = w.grad
    g.note = "seen"
    assert w.grad.note == "seen"


def test_a_new_gradient_is_a_new_object(lib):
    w = lib.ones(2, requires_grad=True)
    w.sum().backward()
    first = w.grad
    w.grad = None
    assert w.grad is None
    w.sum().backward()
    assert w.grad is not first
    assert w.grad.tolist() == [1.0, 1.0]


def test_two_tensors_do_not_share_grad_objects(lib):
    a = lib.ones(2, requires_grad=True)
    b = lib.ones(2, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad is not b.grad
    assert a.grad is a.grad and b.grad is b.grad


def test_handed_out_grads_are_not_kept_alive(lib):
    w = lib.ones(4, requires_grad=True)
    w.sum().backward()
    g = w.grad
    ref = weakref.ref(g)
    del g
    w.grad = None
    gc.collect()
    assert ref() is None


def test_assigning_a_bad_grad_raises_as_torch_and_changes_nothing(lib):
    import pytest

    w = lib.ones(2, requires_grad=True)
    g = lib.full((2,), 3.0)
    w.grad = g
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        w.grad = 5
    with pytest.raises(
        RuntimeError, match=r"gradient of size '\[2, 2\]' to a tensor of size '\[2\]'"
    ):
        w.grad = lib.ones(2, 2)
    with pytest.raises(
        RuntimeError, match="gradient with dtype 'double' to a tensor with grad_dtype 'Float'"
    ):
        w.grad = lib.ones(2, dtype=lib.float64)
    assert w.grad is g
    w.grad = None
    assert w.grad is None
    w.grad = g
    del w.grad
    assert w.grad is None
