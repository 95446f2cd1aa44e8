"""`Tensor.data`: the getter (same memory, no history, a version counter of
its own) and the setter (swap in other memory, keep the object and its
autograd state), on ferrograd and (through the `lib` fixture) torch."""

import pytest


def test_getter_shares_memory_without_history(lib):
    x = lib.ones(3, requires_grad=True)
    with lib.no_grad():
        x.mul_(2)
    d = x.data
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert not d._is_view() and d._base is None
    assert d.data_ptr() == x.data_ptr() and d is not x.data
    assert (x._version, d._version) == (1, 0)
    d.add_(1)  # writes through, but x's version is untouched
    assert x.tolist() == [3.0, 3.0, 3.0] and (x._version, d._version) == (1, 1)
    y = x * 2
    assert y.data.grad_fn is None and not y.data.requires_grad
    v = lib.arange(6.0).reshape(2, 3)[1]
    assert v._is_view() and not v.data._is_view()
    assert v.data.tolist() == [3.0, 4.0, 5.0]


def test_inplace_through_data_escapes_version_checks(lib):
    a = lib.ones(3, requires_grad=True)
    s = (a * a).sum()
    a.data.mul_(3)  # a.mul_(3) under no_grad would fail the backward
    s.backward()
    assert a.grad.tolist() == [6.0, 6.0, 6.0]


def test_sgd_idioms(lib):
    p = lib.tensor([1.0, 2.0], requires_grad=True)
    q = lib.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(3):
        (p * p).sum().backward()
        p.data -= 0.1 * p.grad
        p.grad.data.zero_()
        (q * q).sum().backward()
        q.data = q.data - 0.1 * q.grad
        q.grad = None
    assert p.tolist() == pytest.approx([0.512, 1.024])
    assert q.tolist() == pytest.approx([0.512, 1.024])
    assert p._version == 0 and p.grad.tolist() == [0.0, 0.0]
    assert q.is_leaf and q.requires_grad and q.grad is None


def test_setter_changes_shape_and_dtype_keeps_state(lib):
    x = lib.ones(3, requires_grad=True)
    with lib.no_grad():
        x.mul_(2)
    obj = id(x)
    x.data = lib.zeros(2, 2)
    assert id(x) == obj and x.shape == (2, 2) and x._version == 1
    assert x.requires_grad and x.is_leaf and x.grad is None
    x.data = lib.zeros(2, dtype=lib.float64)
    assert x.dtype == lib.float64 and x.requires_grad
    src = lib.arange(4.0)
    x.data = src
    src[0] = 7.0  # x shares src's memory
    assert x.tolist() == [7.0, 1.0, 2.0, 3.0]
    i = lib.zeros(2, dtype=lib.int64)
    i.data = lib.ones(2)
    assert i.dtype == lib.float32
    i.requires_grad_()
    s = lib.ones(2)
    s.data = s.data * 2
    s.data = s
    assert s.tolist() == [2.0, 2.0]


def test_setter_keeps_hooks_and_redirects_graphs(lib):
    h = lib.ones(2, requires_grad=True)
    h.register_hook(lambda g: g * 10)
    seen = []
    h.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    h.data = lib.full((2,), 3.0)
    (h * h).sum().backward()
    assert h.grad.tolist() == [60.0, 60.0] and seen == [[60.0, 60.0]]
    # A graph built before the swap accumulates into the tensor after it.
    k = lib.ones(2, requires_grad=True)
    out = (k * 3).sum()
    k.data = lib.zeros(2)
    out.backward()
    assert k.grad.tolist() == [3.0, 3.0]
    acc = out.grad_fn.next_functions[0][0].next_functions[0][0]
    assert acc.variable.tolist() == [0.0, 0.0]
    # Non-leaves keep their history and retained gradient.
    q = lib.ones(3, requires_grad=True)
    r = q * 2
    r.retain_grad()
    r.data = lib.full((3,), 7.0)
    r.sum().backward()
    assert r.grad.tolist() == [1.0] * 3 and q.grad.tolist() == [2.0] * 3
    assert r.grad_fn is not None and not r.is_leaf


def test_setter_errors_change_nothing(lib):
    x = lib.ones(3, requires_grad=True)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        x.data = 3
    with pytest.raises(RuntimeError, match="must be floating point or complex"):
        x.data = lib.ones(3, dtype=lib.int64)
    with pytest.raises(RuntimeError, match="Deleting tensor data is not allowed"):
        del x.data
    assert x.dtype == lib.float32 and x.requires_grad and x.tolist() == [1.0] * 3
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0] * 3
