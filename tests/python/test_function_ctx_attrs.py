"""ctx attributes torch documents on a custom Function's ctx, checked on
ferrograd and torch (the `lib` fixture): `dirty_tensors`,
`non_differentiable` and `to_save` are tuples while forward runs (after
the mark/save call) and None otherwise; `requires_grad`; setting
`materialize_grads`."""


def test_ctx_marking_attributes(lib):
    seen = {}

    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            seen["before"] = (
                ctx.dirty_tensors,
                ctx.non_differentiable,
                ctx.to_save,
                ctx.requires_grad,
            )
            ctx.mark_dirty(x)
            ctx.mark_non_differentiable(y)
            ctx.save_for_backward(x, None, y)
            seen["during"] = (ctx.dirty_tensors, ctx.non_differentiable, ctx.to_save)
            return x.mul_(2), y

        @staticmethod
        def backward(ctx, g, g2):
            seen["backward"] = (
                ctx.dirty_tensors,
                ctx.non_differentiable,
                ctx.to_save,
                ctx.requires_grad,
            )
            return g * 2, None

    a = lib.ones(2, requires_grad=True).clone()
    b = lib.ones(2)
    out, nd = F.apply(a, b)
    assert seen["before"] == (None, None, None, True)
    dirty, nondiff, to_save = seen["during"]
    assert (
        isinstance(dirty, tuple) and len(dirty) == 1 and dirty[0].tolist() == [2.0, 2.0]
    )  # a, doubled
    assert isinstance(nondiff, tuple) and len(nondiff) == 1
    assert isinstance(to_save, tuple) and len(to_save) == 3 and to_save[1] is None
    ctx = out.grad_fn
    assert (ctx.dirty_tensors, ctx.non_differentiable, ctx.to_save) == (None, None, None)
    assert ctx.requires_grad is True
    out.sum().backward()
    assert seen["backward"] == (None, None, None, True)


def test_materialize_grads_attribute(lib):
    got = []

    class H(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.materialize_grads = False
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            got.append(g2)
            return g1

    x = lib.ones(2, requires_grad=True)
    a, _ = H.apply(x)
    a.sum().backward()
    assert got == [None]


def test_maybe_clear_saved_tensors(lib):
    """Frees the saved tensors when called in a backward without
    retain_graph; does nothing in forward or in a retaining backward."""
    seen = []

    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            ctx.maybe_clear_saved_tensors()
            return a * 2

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            ctx.maybe_clear_saved_tensors()
            try:
                ctx.saved_tensors
                seen.append("kept")
            except RuntimeError as e:
                seen.append("freed" if "second time" in str(e) else str(e))
            return g * a

    x = lib.ones(2, requires_grad=True)
    y = F.apply(x)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert seen == ["kept", "freed"]
    assert x.grad.tolist() == [2.0, 2.0]


def test_is_traceable_is_gone_as_in_torch(lib):
    # torch 2.13 no longer has Function.is_traceable
    assert not hasattr(lib.autograd.Function, "is_traceable")
