"""Autograd rules checked against torch (continued from test_reliability.py,
issue 24): the version-counter error names the in-place op, and the rules
the fuzzer found: mark_dirty, requires_grad_(False), .grad layouts,
restricted views after their base changed, matmul results, integer targets.

Each case runs on ferrograd and on torch (the ``lib`` fixture; the torch
half skips without torch).
"""

import pytest

from helpers import raises, view_out


# ---- the version-counter error names the in-place op (beyond torch) -------

VERSION_ERROR = (
    "one of the variables needed for gradient computation has been modified by an inplace operation"
)


def test_version_error_names_the_in_place_op():
    import ferrograd as fg

    x = fg.ones(3, requires_grad=True)
    y = x.exp()
    y.mul_(2)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    msg = str(info.value)
    assert msg.startswith(VERSION_ERROR)
    assert "which is output 0 of Exp, is at version 1; expected version 0 instead." in msg
    assert "It was modified in place by mul_." in msg
    assert x.grad is None


def test_version_error_names_the_last_of_several_in_place_ops():
    import ferrograd as fg

    x = fg.ones(3, requires_grad=True)
    y = x.sigmoid()
    with fg.no_grad():
        y.add_(1)
        y[0:2].clamp_(0, 1)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    msg = str(info.value)
    assert "is at version 2; expected version 0 instead." in msg
    assert (
        "It was modified in place by clamp_ (the last of 2 in-place modifications since it was saved)."
        in msg
    )


def test_version_error_names_a_custom_function_that_marked_dirty():
    import ferrograd as fg

    class Double(fg.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.mark_dirty(t)
            return t.mul_(2)

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = fg.ones(3, requires_grad=True)
    y = x.tanh()
    Double.apply(y)
    with pytest.raises(RuntimeError, match="It was modified in place by Double."):
        y.sum().backward()


def test_version_error_under_anomaly_mode_says_where_the_op_was_called():
    import ferrograd as fg

    x = fg.ones(3, requires_grad=True)
    with fg.autograd.set_detect_anomaly(True):
        y = x.exp()
        y.add_(1)  # the culprit line
        with pytest.warns(UserWarning), pytest.raises(RuntimeError) as info:
            y.sum().backward()
    msg = str(info.value)
    assert "It was modified in place by add_." in msg
    assert "add_ was called at:" in msg
    assert "y.add_(1)  # the culprit line" in msg
    assert "test_version_error_under_anomaly_mode_says_where_the_op_was_called" in msg


# ---- autograd rules the fuzzer found: mark_dirty, requires_grad_(False), .grad layouts,
# ---- restricted views after their base changed, matmul results, integer targets


def dirty_function(lib, returns_extra=False):
    class Dirty(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(3)
            ctx.mark_dirty(x)
            return (x, x * 1) if returns_extra else x

        @staticmethod
        def backward(ctx, g, *rest):
            return g * 3

    return Dirty


def test_mark_dirty_bumps_the_version_before_its_checks(lib):
    dirty = dirty_function(lib)
    # the forward's mul_ and mark_dirty's own bump, also when apply then raises
    x = lib.ones(3, requires_grad=True)
    raises(lambda: dirty.apply(x), RuntimeError, "a leaf Variable that requires grad has been")
    assert x._version == 2 and x.grad_fn is None
    y = lib.ones(3, requires_grad=True) * 1
    assert dirty.apply(y) is y and y._version == 2 and type(y.grad_fn).__name__ == "DirtyBackward"
    z = lib.ones(3)
    assert dirty.apply(z) is z and z._version == 2
    w = lib.ones(3, requires_grad=True)
    with lib.no_grad():
        out = dirty.apply(w)
    assert w._version == 2 and out is not w and not out.requires_grad


def test_mark_dirty_on_a_view_of_a_leaf_raises(lib):
    dirty = dirty_function(lib)
    view_of_leaf = "a view of a leaf Variable that requires grad is being used in an in-place"
    x = lib.ones(4, requires_grad=True)
    v = x[:2]
    raises(lambda: dirty.apply(v), RuntimeError, view_of_leaf)
    assert x._version == 2 and x.grad_fn is None
    # the base is a leaf that does not require grad: the view (a leaf made to
    # require grad) is the leaf torch refuses, its own view is a view of a leaf
    x = lib.ones(4, 1, 2)[::2].requires_grad_()
    raises(lambda: dirty.apply(x), RuntimeError, "a leaf Variable that requires grad has been")
    raises(lambda: dirty.apply(x.narrow(-1, 1, 1)), RuntimeError, view_of_leaf)
    # a view of a tensor with history is fine; two outputs and a view input are not
    b = lib.ones(4, requires_grad=True) * 1
    v = dirty.apply(b[:2])
    assert type(v.grad_fn).__name__ == "AsStridedBackward0"
    assert type(b.grad_fn).__name__ == "CopySlices"
    two = dirty_function(lib, returns_extra=True)
    raises(lambda: two.apply(b[2:]), RuntimeError, "If your Function modifies inplace an input")


def test_no_accumulation_into_a_leaf_that_stopped_requiring_grad(lib):
    seen = []
    x = lib.tensor([0.5, 1.0], requires_grad=True)
    x.register_hook(lambda g: seen.append(g.tolist()))
    y = x.atan().sum()
    x.requires_grad_(False)
    y.backward(retain_graph=True)
    assert x.grad is None and len(seen) == 1  # its hooks still run, as torch's
    x.requires_grad_(True)
    y.backward()
    assert x.grad is not None
    x = lib.tensor(0.5, requires_grad=True)
    y = x * x
    x.detach_()
    y.backward()
    assert x.grad is None


LEAVES = {
    "contiguous": (lambda t: t.ones(3, 4), (4, 1), (4, 1)),
    "transposed": (lambda t: t.ones(4, 3).t(), (1, 3), (4, 1)),
    "expanded_sliced": (lambda t: t.ones(3, 1).expand(3, 4)[:, ::2], (2, 1), (2, 1)),
    "expanded": (lambda t: t.ones(3, 1).expand(3, 4), (4, 1), (4, 1)),
    "sliced": (lambda t: t.ones(3, 8)[:, ::2], (4, 1), (4, 1)),
    # a size-1 dim's stride is free: the computed gradient (strides (1, 1)) is kept
    "size_one_dim": (lambda t: t.ones(1, 3).t(), (1, 1), (1, 1)),
    "empty": (lambda t: t.ones(0, 3).t(), (1, 3), (1, 1)),
}


@pytest.mark.parametrize("leaf", list(LEAVES))
def test_grad_strides_follow_the_layout_contract(lib, leaf):
    make, leaf_strides, retained_strides = LEAVES[leaf]
    x = make(lib).requires_grad_()
    y = x * 1
    y.retain_grad()
    y.sum().backward()
    assert x.grad.stride() == leaf_strides
    assert y.grad.stride() == retained_strides  # retain_grad: always a contiguous clone
    # autograd.grad's expanded gradients stored by retain_grad
    x = make(lib).requires_grad_()
    y = lib.where(x > 0, x, x)
    y.retain_grad()
    lib.autograd.grad(y.sum(), (x,), retain_graph=True)
    assert y.grad.stride() == retained_strides and 0 not in y.grad.stride()
    # backward(inputs=[non-leaf]) retains its grad
    y.grad = None
    (y * 2).sum().backward(inputs=[y])
    assert y.grad.stride() == retained_strides and y.retains_grad


def test_slices_of_a_gradient_are_kept_as_grads_as_torch_keeps_them(lib):
    # cat's backward hands each leaf a slice of grad_output; a slice that
    # obeys the layout contract becomes .grad as it is (torch steals it: the
    # handle is the engine's alone), sharing grad_output's buffer
    a = lib.zeros(2, 3, requires_grad=True)
    b = lib.zeros(1, 3, requires_grad=True)
    g = lib.arange(9.0).reshape(3, 3)
    lib.cat([a, b]).backward(g)
    assert a.grad.tolist() == g[:2].tolist() and b.grad.tolist() == g[2:].tolist()
    assert a.grad.data_ptr() == g.data_ptr() and a.grad._base is None
    assert a.grad.is_contiguous() and a.grad._version == g._version
    g.add_(1)  # torch's aliasing, kept
    assert a.grad[0, 0].item() == 1.0 and b.grad[0, 0].item() == 7.0
    # a second backward adds into the kept slice in place
    lib.cat([a, b]).backward(lib.ones(3, 3))
    assert a.grad[0, 0].item() == 2.0 and g[0, 0].item() == 2.0
    # slices along dim 1 are not contiguous: copied (no sharing)
    a = lib.zeros(3, 2, requires_grad=True)
    b = lib.zeros(3, 1, requires_grad=True)
    g = lib.arange(9.0).reshape(3, 3)
    lib.cat([a, b], 1).backward(g)
    assert a.grad.stride() == (2, 1) and a.grad.data_ptr() != g.data_ptr()
    assert a.grad.tolist() == g[:, :2].tolist() and b.grad.tolist() == g[:, 2:].tolist()
    # the user's own gradient tensor (not a slice) is never kept: a copy
    x = lib.zeros(3, requires_grad=True)
    g = lib.ones(3)
    x.backward(g)
    assert x.grad.data_ptr() != g.data_ptr()


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
def test_grad_layout_when_building_a_graph(lib):
    x = lib.ones(1, 3).t().requires_grad_()  # (3, 1), strides (1, 3)
    (x * x).sum().backward(create_graph=True)
    # never stolen under create_graph: a copy with the leaf's strides, recorded
    assert x.grad.stride() == (1, 3) and x.grad._version == 1
    assert type(x.grad.grad_fn).__name__ == "CopyBackwards"
    x = lib.ones(4, 3).t().requires_grad_()
    x.sum().backward()  # an expanded gradient copied into the leaf's strides
    assert x.grad.stride() == (1, 3) and x.grad._version == 1
    x = lib.ones(3, 4).requires_grad_()
    (x * 2).sum().backward()  # stolen
    assert x.grad._version == 0


def test_retained_grad_accumulates_out_of_place_and_follows_in_place_ops(lib):
    x = lib.ones(3, requires_grad=True)
    y = x * 2
    y.retain_grad()
    (y * 2).sum().backward(retain_graph=True)
    first = y.grad
    (y * 2).sum().backward(retain_graph=True)
    assert y.grad is not first and first.tolist() == [2.0] * 3 and first._version == 0
    assert y.grad.tolist() == [4.0] * 3
    # after an in-place op the retained grad is the new value's
    x = lib.tensor([-1.0, 2.0], requires_grad=True)
    y = x * 1
    y.retain_grad()
    y.masked_fill_(y > 0, 0)
    y.sum().backward()
    assert y.grad.tolist() == [1.0, 1.0] and x.grad.tolist() == [1.0, 0.0]
    x = lib.ones(2, 3, requires_grad=True)
    y = x * 1
    y.retain_grad()
    y.mul_(2)
    (g,) = lib.autograd.grad(y.sum(), (y,))
    assert y.grad.tolist() == g.tolist()


RESTRICTED_VIEWS = {
    "multi_output": "x = torch.ones(2, 3, requires_grad=True) * 1\nv, _ = x.unbind(0)",
    "no_grad": "x = torch.ones(2, 3, requires_grad=True) * 1\nwith torch.no_grad():\n    v = x[0]",
    "custom_function": "x = torch.ones(2, 3, requires_grad=True) * 1\nv = ViewOut.apply(x)",
}


@pytest.mark.parametrize("case", list(RESTRICTED_VIEWS))
def test_restricted_view_whose_base_changed_raises_where_torch_reads_its_grad_fn(lib, case):
    ns = {"torch": lib, "ViewOut": view_out(lib)}
    exec(RESTRICTED_VIEWS[case], ns)  # noqa: S102
    x, v = ns["x"], ns["v"]
    with lib.no_grad():
        x.mul_(2)
    msg = "its base or another view of its base has been modified inplace"
    for read in [
        lambda: v.grad_fn,
        lambda: v.is_leaf,
        lambda: v * 2,
        lambda: v.sum().backward(),
        lambda: v.register_hook(lambda g: g),
        lambda: lib.autograd.grad(v.sum(), (x,)),
    ]:
        with pytest.raises(RuntimeError, match=msg):
            read()
    if case == "no_grad":
        v.retain_grad()  # a leaf (no grad_fn yet): torch does not read it
    else:
        with pytest.raises(RuntimeError, match=msg):
            v.retain_grad()
    assert v.requires_grad and v.output_nr == 0  # not read through grad_fn
    with lib.no_grad():
        assert (v * 2).requires_grad is False
    # the in-place op on the view itself: the direct form of the message
    with pytest.raises(RuntimeError, match="is being modified inplace"):
        v.add_(1)


def test_restricted_view_of_a_base_without_grad(lib):
    x = lib.ones(2, 2)
    with lib.no_grad():
        v = x[0]
    x.mul_(2)
    assert v.grad_fn is None  # nothing to rebuild while the base requires no grad
    x.requires_grad_()
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base"):
        _ = v.grad_fn
    # modified through the view itself under no_grad
    x = lib.ones(2, 2, requires_grad=True) * 1
    with lib.no_grad():
        v = x[0]
        v.mul_(2)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base"):
        _ = v.grad_fn


@pytest.mark.parametrize(
    "shapes, node",
    [
        (((3,), (3, 2)), "SqueezeBackward4"),
        (((3,), (2, 3, 2)), "UnsafeViewBackward0"),
        (((2, 2, 3), (3,)), "UnsafeViewBackward0"),
        (((2, 2, 3), (3, 2)), "UnsafeViewBackward0"),
    ],
)
def test_matmul_results_are_not_views(lib, shapes, node):
    a = lib.ones(shapes[0], requires_grad=True)
    b = lib.ones(shapes[1])
    y = lib.matmul(a, b)
    assert not y._is_view() and type(y.grad_fn).__name__ == node
    assert y._version == (1 if node == "SqueezeBackward4" else 0)  # torch squeezes in place
    y.masked_fill_(y > 0, -1)
    assert type(y.grad_fn).__name__ == "MaskedFillBackward0"
    y.sum().backward()
    assert a.grad.abs().sum().item() == 0.0


@pytest.mark.parametrize("dtype", ["bool", "int64"])
def test_writes_into_integer_tensors_record_what_torch_records(lib, dtype):
    def target():
        return lib.tensor([1, 0, 1, 1]).to(getattr(lib, dtype))

    value = lib.tensor([1.25, 0.5], requires_grad=True)
    scalar = lib.tensor(1.25, requires_grad=True)
    m = target()
    m[::2] = value  # a copy_: never differentiable into an integer tensor
    assert not m.requires_grad and m.grad_fn is None and m._version == 1
    m = target()
    m[0] = scalar  # same shapes: copy_
    assert not m.requires_grad
    m = target()
    m.copy_(lib.ones(4, requires_grad=True))
    assert not m.requires_grad and m._version == 1
    # torch's quirk: fill_ / masked_fill_ with a tensor value record even here
    m = target()
    m.fill_(scalar)
    assert m.requires_grad and type(m.grad_fn).__name__ == "FillBackward3"
    m = target()
    m[::2] = scalar  # a 0-dim value of another shape is a fill_
    assert m.requires_grad and type(m.grad_fn).__name__ == "CopySlices"
    m = target()
    m.masked_fill_(m > 0, scalar)
    assert m.requires_grad and type(m.grad_fn).__name__ == "MaskedFillBackward1"


def test_a_reshape_that_copies_is_not_a_view(lib):
    x = lib.ones(1, 3, 2).expand(2, 3, 2).requires_grad_()
    y = x.reshape(3, 4)  # torch: _unsafe_view(clone())
    assert not y._is_view() and type(y.grad_fn).__name__ == "UnsafeViewBackward0"
    y.index_put_((lib.tensor([0]),), lib.ones(4), accumulate=True)
    assert type(y.grad_fn).__name__ == "IndexPutBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [[[1.0, 1.0]] * 3] * 2
