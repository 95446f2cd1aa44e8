"""Custom autograd Functions (ferrograd.autograd.Function), checked against
torch's behaviour: the ctx as the node, the ctx API (saved tensors, version
checks, mark_dirty, mark_non_differentiable, materialize_grads). Backward
results, errors, double backward, threads, the examples and the torch oracle:
test_function_backward.py. Shared helpers: function_helpers.py.
"""

import gc
import weakref

import pytest

import ferrograd as torch
from ferrograd.autograd import Function
from function_helpers import Square, assert_close, leaf, tolist

FREED = "Trying to backward through the graph a second time"


# ----- apply: the ctx is the node -------------------------------------------


def test_grad_fn_is_ctx_and_named_after_class():
    seen = []

    class MyFn(Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(ctx)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx)
            return g * 2

    x = leaf([1.0, 2.0])
    y = MyFn.apply(x)
    assert y.grad_fn is seen[0]
    assert type(y.grad_fn).__name__ == "MyFnBackward"
    assert y.grad_fn.name() == "MyFnBackward"
    assert isinstance(y.grad_fn, torch.autograd.function.BackwardCFunction)
    assert type(y.grad_fn)._forward_cls is MyFn
    y.sum().backward()
    assert seen[1] is seen[0]
    assert_close(x.grad, [2.0, 2.0])


def test_next_functions_edges_only_for_tensor_inputs():
    class F(Function):
        @staticmethod
        def forward(ctx, a, k, b, c):
            return a * k + b + c

        @staticmethod
        def backward(ctx, g):
            return g, None, g, g

    a = leaf([1.0])
    b = torch.tensor([2.0])  # does not require grad
    c = leaf([3.0]) * 2
    y = F.apply(a, 3.0, b, c)
    nf = y.grad_fn.next_functions
    assert len(nf) == 3
    assert nf[0][0].name() == "torch::autograd::AccumulateGrad" and nf[0][1] == 0
    assert nf[1] == (None, 0)
    assert nf[2][0].name() == "MulBackward0"
    # A built-in node's next_functions give back the ctx object too.
    z = y * 1
    assert z.grad_fn.next_functions[0][0] is y.grad_fn


def test_outputs_have_history_only_when_recording():
    x = leaf([1.0, 2.0])
    assert Square.apply(x).requires_grad
    with torch.no_grad():
        y = Square.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    z = Square.apply(torch.tensor([1.0, 2.0]))
    assert not z.requires_grad and z.grad_fn is None


def test_forward_runs_without_grad_mode():
    modes = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            modes.append(torch.is_grad_enabled())
            y = x * 2
            modes.append(y.requires_grad)
            return y

        @staticmethod
        def backward(ctx, g):
            return g

    F.apply(leaf([1.0]))
    assert modes == [False, False]
    assert torch.is_grad_enabled()


def test_setup_context_style():
    calls = []

    class F(Function):
        @staticmethod
        def forward(x, k=3.0):
            calls.append(("forward", torch.is_grad_enabled()))
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            calls.append(("setup", type(inputs), len(inputs), ctx.needs_input_grad))
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = leaf([1.0, 2.0])
    F.apply(x).sum().backward()  # the default k is bound, as in torch
    assert_close(x.grad, [3.0, 3.0])
    assert calls == [("forward", False), ("setup", tuple, 2, (True, False))]
    x.grad = None
    F.apply(x, k=2.0).sum().backward()
    assert_close(x.grad, [2.0, 2.0])


def test_kwargs_take_forward_positions():
    needs = []

    class F(Function):
        @staticmethod
        def forward(ctx, x, a=None, b=None):
            needs.append(ctx.needs_input_grad)
            return x * 2 + b

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, g

    x, t = leaf([1.0]), leaf([5.0])
    y = F.apply(x, b=t, a=3)
    assert needs == [(True, False, True)]
    y.sum().backward()
    assert_close(x.grad, [2.0])
    assert_close(t.grad, [1.0])
    with pytest.raises(
        TypeError, match=r"forward\(\) missing required argument: 'a' \(position 1\)"
    ):
        F.apply(x, b=t)
    with pytest.raises(TypeError, match="forward\\(\\) got an unexpected keyword argument 'c'"):
        F.apply(x, c=t)


def test_tuple_output_mixing_tensors_and_non_tensors():
    got = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, 5, None, x * 3

        @staticmethod
        def backward(ctx, a, b, c, d):
            got.extend([a, b, c, d])
            return a + d

    x = leaf([1.0, 2.0])
    out = F.apply(x)
    assert isinstance(out, tuple) and out[1] == 5 and out[2] is None
    assert out[0].grad_fn is out[3].grad_fn
    assert (out[0].output_nr, out[3].output_nr) == (0, 3)
    out[0].sum().backward()
    assert got[1] is None and got[2] is None  # non-tensor outputs: no zeros
    assert_close(got[3], [0.0, 0.0])  # unused tensor output: zeros
    assert_close(x.grad, [1.0, 1.0])


def test_non_tuple_non_tensor_output_passes_through():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return [x * 2]

        @staticmethod
        def backward(ctx, g):
            return g

    out = F.apply(leaf([1.0]))
    assert isinstance(out, list) and not out[0].requires_grad


def test_returned_input_is_an_alias_with_history():
    class F(Function):
        @staticmethod
        def forward(ctx, x, w):
            return x, w * 2

        @staticmethod
        def backward(ctx, g1, g2):
            return g1, g2 * 2

    w = torch.ones(2)
    x = leaf([1.0, 2.0])
    a, b = F.apply(w, x)
    assert a is not w and a.requires_grad and a.grad_fn is b.grad_fn
    assert a.data_ptr() == w.data_ptr()
    with torch.no_grad():
        a, _ = F.apply(x, x)
    assert a is not x and not a.requires_grad and a.data_ptr() == x.data_ptr()


# ----- ctx API --------------------------------------------------------------


def test_save_for_backward_allows_none():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, None)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            x, nothing = ctx.saved_tensors
            assert nothing is None
            return g * x

    x = leaf([3.0])
    F.apply(x).sum().backward()
    assert_close(x.grad, [3.0])


def test_save_for_backward_rejects_non_tensors():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(
        TypeError, match="save_for_backward can only save variables, but argument 1 is of type int"
    ):
        F.apply(leaf([1.0]))


def test_saved_tensors_version_check():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x

    a = leaf([1.0, 2.0, 3.0]) * 1
    y = F.apply(a)
    a.mul_(2)
    msg = (
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [torch.FloatTensor [3]], which is output 0 of Mul, is at version 1; "
        "expected version 0 instead."
    )
    with pytest.raises(RuntimeError) as e:
        y.sum().backward()
    assert msg in str(e.value)


def test_saved_output_version_check_and_history():
    seen = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            seen.append(y.grad_fn)
            return g * y

    x = leaf([1.0, 2.0])
    y = F.apply(x)
    y.sum().backward(retain_graph=True)
    assert seen[0] is y.grad_fn  # an unpacked output carries its node
    assert_close(x.grad, [2.0, 4.0])
    y.add_(1)
    with pytest.raises(
        RuntimeError, match=r"which is output 0 of F, is at version 1; expected version 0"
    ):
        y.sum().backward()


def test_saving_outputs_creates_no_reference_cycle():
    refs = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            refs.append(weakref.ref(ctx))
            y = x * 2
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf([1.0])
    y = F.apply(x)
    assert refs[0]() is not None
    del y
    assert refs[0]() is None  # freed by reference counting alone


def test_grad_fn_keeps_its_node_alive_and_is_collectable():
    x = leaf([1.0])
    y = Square.apply(x * 1)
    f = y.grad_fn
    del y
    gc.collect()
    assert f.next_functions[0][0].name() == "MulBackward0"
    r = weakref.ref(f)
    del f
    gc.collect()
    assert r() is None


def test_saved_tensors_freed_after_backward():
    x = leaf([1.0, 2.0])
    y = Square.apply(x)
    y.sum().backward()
    with pytest.raises(RuntimeError, match=FREED):
        y.grad_fn.saved_tensors
    with pytest.raises(RuntimeError, match=FREED):
        y.sum().backward()


def test_saved_tensors_kept_with_retain_graph():
    x = leaf([1.0, 2.0])
    y = Square.apply(x)
    y.sum().backward(retain_graph=True)
    assert len(y.grad_fn.saved_tensors) == 1
    y.sum().backward()
    assert_close(x.grad, [4.0, 8.0])


def test_saved_tensors_empty_during_forward():
    seen = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            seen.append(ctx.saved_tensors)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    F.apply(leaf([1.0]))
    assert seen == [()]


def test_needs_input_grad():
    seen = []

    class F(Function):
        @staticmethod
        def forward(ctx, a, b, k, c):
            seen.append(ctx.needs_input_grad)
            return a * b * c

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.needs_input_grad)
            return g, g, None, g

    a, b, c = leaf([1.0]), torch.tensor([2.0]), leaf([3.0])
    F.apply(a, b, 2, c).sum().backward()
    assert seen == [(True, False, False, True)] * 2
    with torch.no_grad():  # computed from the inputs, whatever the grad mode
        F.apply(a, b, 2, c)
    assert seen[-1] == (True, False, False, True)


class Double(Function):
    """Doubles its input in place (marked dirty)."""

    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_mark_dirty_rebases_input_history():
    x = leaf([1.0, -2.0])
    a = x * 1
    v0 = a._version
    r = Double.apply(a)
    assert r is a  # the returned tensor is the input object itself
    assert a._version == v0 + 2  # the op's bump, and mark_dirty's
    assert a.grad_fn.name() == "DoubleBackward"
    assert a.grad_fn.next_functions[0][0].name() == "MulBackward0"
    assert_close(a, [2.0, -4.0])
    (a * a).sum().backward()
    assert_close(x.grad, [8.0, -16.0])


def test_mark_dirty_on_view_rewrites_base_history():
    x = leaf([1.0, 2.0, 3.0, 4.0])
    base = x * 1
    view = base.narrow(0, 0, 2)
    assert Double.apply(view) is view
    assert base.grad_fn.name() == "CopySlices"
    assert_close(base, [2.0, 4.0, 3.0, 4.0])
    base.sum().backward()
    assert_close(x.grad, [2.0, 2.0, 1.0, 1.0])


def test_mark_dirty_errors():
    class Dirty(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    class NotReturned(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x + 1

        @staticmethod
        def backward(ctx, g):
            return g

    class TwoOutputs(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x, x + 1

        @staticmethod
        def backward(ctx, g, h):
            return g

    x = leaf([1.0, 2.0])
    with pytest.raises(
        RuntimeError,
        match="^a leaf Variable that requires grad has been used in an in-place operation.$",
    ):
        Dirty.apply(x)
    with pytest.raises(
        RuntimeError,
        match="a view of a leaf Variable that requires grad is being used in an in-place",
    ):
        Dirty.apply(x.narrow(0, 0, 1))
    with pytest.raises(
        RuntimeError,
        match="Some elements marked as dirty during the forward method were not returned",
    ):
        NotReturned.apply(x * 1)
    with pytest.raises(RuntimeError, match="cannot return more than one Tensor"):
        TwoOutputs.apply((x * 1).narrow(0, 0, 1))
    with pytest.raises(
        TypeError, match="mark_dirty can only accept variables, but argument 0 is of type int"
    ):
        Dirty._backward_cls().mark_dirty(1)
    with torch.no_grad():  # not recorded: a detached alias comes back
        r = Dirty.apply(x)
    assert r is not x and not r.requires_grad


def test_mark_non_differentiable():
    got = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            a, b = x * 2, x * 3
            ctx.mark_non_differentiable(b)
            return a, b

        @staticmethod
        def backward(ctx, ga, gb):
            got.append(gb)
            return ga * 2

    x = leaf([1.0, 2.0])
    a, b = F.apply(x)
    assert a.requires_grad and not b.requires_grad and b.grad_fn is None
    a.sum().backward()
    assert_close(got[0], [0.0, 0.0])  # still materialized for backward
    assert_close(x.grad, [2.0, 2.0])


def test_integer_outputs_are_not_differentiable():
    got = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, (x * 0).long()

        @staticmethod
        def backward(ctx, g, gi):
            got.append(gi)
            return g

    a, i = F.apply(leaf([1.0, 2.0]))
    assert a.requires_grad and not i.requires_grad
    a.sum().backward()
    assert got[0].dtype == torch.int64 and tolist(got[0]) == [0, 0]


def test_set_materialize_grads_false_passes_none():
    got = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            got.append((ga, gb))
            return ga * 2

    a, _ = F.apply(leaf([1.0]))
    a.sum().backward()
    assert got[0][1] is None and tolist(got[0][0]) == [1.0]


def test_materialize_grads_default_gives_zeros():
    got = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            got.append(gb)
            return ga

    a, _ = F.apply(leaf([1.0, 1.0]))
    a.sum().backward()
    assert_close(got[0], [0.0, 0.0])


def test_arbitrary_ctx_attributes():
    class F(Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            ctx.info = {"shape": tuple(x.shape)}
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = leaf([1.0, 2.0])
    y = F.apply(x, 4.0)
    assert y.grad_fn.k == 4.0 and y.grad_fn.info == {"shape": (2,)}
    y.sum().backward()
    assert_close(x.grad, [4.0, 4.0])
    assert y.grad_fn.k == 4.0  # non-tensor attributes survive backward


def test_tensor_ctx_attributes_released_after_backward():
    refs = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.out = y  # would keep the graph alive (node -> ctx -> y -> node)
            refs.append(weakref.ref(ctx))
            return y

        @staticmethod
        def backward(ctx, g):
            assert ctx.out is not None  # still usable inside backward
            return g

    x = leaf([1.0])
    y = F.apply(x)
    y.sum().backward()
    assert not hasattr(refs[0](), "out")
    del y
    assert refs[0]() is None  # no cycle left: freed by reference counting


def test_save_for_forward_and_jvp_accepted():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x, None)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return t * 2

    x = leaf([1.0])
    y = F.apply(x)
    assert len(y.grad_fn.saved_for_forward) == 2
    y.sum().backward()
    assert_close(x.grad, [2.0])

    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(1)
            return x

    with pytest.raises(
        AssertionError, match="save_for_forward expects all arguments to be tensors"
    ):
        Bad.apply(x)
