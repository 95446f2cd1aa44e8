"""Custom autograd Functions (ferrograd.autograd.Function), checked against
torch's behaviour: ctx API, errors, graph wiring, double backward, threads,
and the examples in examples/custom_functions.py."""

import gc
import importlib.util
import math
import pathlib
import threading
import traceback
import weakref

import pytest

import ferrograd as torch
from ferrograd.autograd import Function, InplaceFunction, Variable, once_differentiable
from helpers import cube_function, square_function, two_output_function

ROOT = pathlib.Path(__file__).resolve().parents[2]
FREED = "Trying to backward through the graph a second time"


# ----- helpers -------------------------------------------------------------


def tolist(t):
    if t.dim() == 0:
        return t.item()
    return [tolist(t.select(0, i)) for i in range(t.shape[0])]


def flat(v):
    if isinstance(v, list):
        return [y for x in v for y in flat(x)]
    return [v]


def assert_close(a, b, tol=1e-6):
    a = flat(tolist(a) if hasattr(a, "dim") else a)
    b = flat(tolist(b) if hasattr(b, "dim") else b)
    assert len(a) == len(b), (a, b)
    for x, y in zip(a, b):
        assert abs(x - y) <= tol * (1 + abs(y)), (a, b)


def leaf(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype, requires_grad=True)


Square = square_function(torch)


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


# ----- backward results -----------------------------------------------------


def _scale_fn(bw, lib=torch):
    """x * k with the given backward (on ``lib``: ferrograd or torch)."""

    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        backward = staticmethod(bw)

    return MyFn


def test_backward_too_few_gradients():
    y = _scale_fn(lambda ctx, g: g * 2).apply(leaf([1.0]), 2.0)
    with pytest.raises(
        RuntimeError,
        match=r"^function MyFnBackward returned an incorrect number of gradients \(expected 2, got 1\)$",
    ):
        y.sum().backward()


def test_backward_too_many_gradients():
    y = _scale_fn(lambda ctx, g: (g, None, g)).apply(leaf([1.0]), 2.0)
    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 2, got 3\)"):
        y.sum().backward()


def test_backward_extra_trailing_nones_accepted():
    x = leaf([1.0])
    _scale_fn(lambda ctx, g: (g * 2, None, None, None)).apply(x, 2.0).sum().backward()
    assert_close(x.grad, [2.0])


def test_backward_single_tensor_for_single_input():
    x = leaf([1.0, 2.0])
    Square.apply(x).sum().backward()
    assert_close(x.grad, [2.0, 4.0])


def test_backward_gradient_for_non_tensor_input_must_be_none():
    y = _scale_fn(lambda ctx, g: (g, g)).apply(leaf([1.0]), 2.0)
    with pytest.raises(
        RuntimeError,
        match="function MyFnBackward returned a gradient different than None at position 2, but the corresponding forward input was not a Variable",
    ):
        y.sum().backward()


def test_backward_non_tensor_gradient():
    y = _scale_fn(lambda ctx, g: (1, None)).apply(leaf([1.0]), 2.0)
    with pytest.raises(RuntimeError, match=r"^expected Variable or None \(got int\)$"):
        y.sum().backward()


def test_backward_wrong_shape():
    y = _scale_fn(lambda ctx, g: (torch.ones(4), None)).apply(leaf([1.0, 2.0, 3.0]), 2.0)
    with pytest.raises(
        RuntimeError,
        match=r"Function MyFnBackward returned an invalid gradient at index 0 - got \[4\] but expected shape compatible with \[3\]",
    ):
        y.sum().backward()


def test_backward_broadcast_shape_is_summed():
    x = leaf([1.0, 2.0, 3.0])
    _scale_fn(lambda ctx, g: (torch.ones(2, 3), None)).apply(x, 2.0).sum().backward()
    assert_close(x.grad, [2.0, 2.0, 2.0])
    # ...but a gradient that does not broadcast *from* the input shape is an error
    y = _scale_fn(lambda ctx, g: (torch.ones(1), None)).apply(leaf([1.0, 2.0, 3.0]), 2.0)
    with pytest.raises(RuntimeError, match="returned an invalid gradient at index 0"):
        y.sum().backward()


def test_backward_gradient_dtype_is_cast():
    x = leaf([1.0, 2.0])
    _scale_fn(lambda ctx, g: (torch.ones(2, dtype=torch.float64), None)).apply(
        x, 2.0
    ).sum().backward()
    assert x.grad.dtype == torch.float32
    assert_close(x.grad, [1.0, 1.0])


def test_gradient_for_input_not_requiring_grad_is_ignored():
    class F(Function):
        @staticmethod
        def forward(ctx, x, w):
            return x * w

        @staticmethod
        def backward(ctx, g):
            return g, torch.ones(7)  # wrong shape, but nobody wants it

    x = leaf([1.0, 2.0])
    F.apply(x, torch.ones(2)).sum().backward()
    assert_close(x.grad, [1.0, 1.0])


def test_vjp_is_an_alias_of_backward():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 5

    x = leaf([1.0])
    F.apply(x).sum().backward()
    assert_close(x.grad, [5.0])


def test_missing_backward_and_forward():
    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    class NoForward(Function):
        pass

    y = NoBackward.apply(leaf([1.0]))
    with pytest.raises(
        NotImplementedError, match="You must implement either the backward or vjp method"
    ):
        y.sum().backward()
    with pytest.raises(NotImplementedError, match="You must implement the forward function"):
        NoForward.apply(leaf([1.0]))


def test_backward_and_vjp_both_defined():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def vjp(ctx, g):
            return g

    with pytest.raises(
        RuntimeError,
        match="Implementing both 'backward' and 'vjp' for a custom Function is not allowed",
    ):
        F.apply(leaf([1.0])).sum().backward()


# ----- exceptions -----------------------------------------------------------


class CustomError(Exception):
    pass


def test_exception_in_backward_propagates_unchanged():
    raised = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            e = CustomError("from backward")
            raised.append(e)
            raise e

    with pytest.raises(CustomError) as info:
        F.apply(leaf([1.0])).sum().backward()
    assert info.value is raised[0]
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "backward" in frames


def test_exception_in_backward_through_autograd_grad():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise KeyError("boom")

    x = leaf([1.0])
    with pytest.raises(KeyError, match="boom"):
        torch.autograd.grad(F.apply(x).sum(), x)


def test_exception_in_forward_propagates_unchanged():
    raised = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            e = ValueError("from forward")
            raised.append(e)
            raise e

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(ValueError) as info:
        F.apply(leaf([1.0]))
    assert info.value is raised[0]
    assert "forward" in [f.name for f in traceback.extract_tb(info.value.__traceback__)]


def test_graph_usable_after_failed_backward():
    fail = [True]

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            if fail[0]:
                raise CustomError("once")
            return g * 2

    x = leaf([1.0])
    y = F.apply(x)
    with pytest.raises(CustomError):
        y.sum().backward(retain_graph=True)
    fail[0] = False
    y.sum().backward()
    assert_close(x.grad, [2.0])


# ----- double backward, once_differentiable --------------------------------


def test_create_graph_double_backward():
    modes = []

    def grad(x, g):
        modes.append(torch.is_grad_enabled())
        return 3 * x * x * g

    Cube = cube_function(torch, grad)

    x = leaf([1.0, 2.0], torch.float64)
    (g,) = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    assert modes == [True] and g.requires_grad
    assert_close(g, [3.0, 12.0])
    (gg,) = torch.autograd.grad(g.sum(), x)
    assert_close(gg, [6.0, 12.0])
    (g2,) = torch.autograd.grad(Cube.apply(x).sum(), x)
    assert modes[-1] is False and not g2.requires_grad


def test_once_differentiable():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            assert not torch.is_grad_enabled()
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf([1.0, 2.0])
    (g,) = torch.autograd.grad(F.apply(x).sum(), x)
    assert_close(g, [2.0, 4.0])
    y = F.apply(x)
    (g,) = torch.autograd.grad((y * y).sum(), x, create_graph=True)
    assert g.requires_grad
    with pytest.raises(
        RuntimeError,
        match="^trying to differentiate twice a function that was marked with @once_differentiable$",
    ):
        g.sum().backward()


def test_backward_calling_autograd_grad_inside():
    def recompute(x, g):
        """Checkpoint-style: forward without a graph, backward recomputes."""
        with torch.enable_grad():
            xd = x.detach().requires_grad_()
            y = xd * xd * xd
        (gx,) = torch.autograd.grad(y, xd, g)
        return gx

    Recompute = cube_function(torch, recompute)

    x = leaf([1.0, 2.0])
    Recompute.apply(x).sum().backward()
    assert_close(x.grad, [3.0, 12.0])


# ----- numeric checks -------------------------------------------------------


class Rational(Function):
    """f(x, y) = x * y / (1 + y * y), hand-written derivative."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y / (1 + y * y)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        d = 1 + y * y
        gx = g * y / d if ctx.needs_input_grad[0] else None
        gy = g * x * (1 - y * y) / (d * d) if ctx.needs_input_grad[1] else None
        return gx, gy


def _numeric_grad(f, inputs, i, eps=1e-6):
    x = inputs[i]
    n = x.numel()
    out = []
    for j in range(n):
        e = torch.tensor([1.0 if k == j else 0.0 for k in range(n)], dtype=torch.float64).reshape(
            *x.shape
        )
        plus = list(inputs)
        minus = list(inputs)
        plus[i] = x.detach() + e * eps
        minus[i] = x.detach() - e * eps
        out.append((f(*plus).sum().item() - f(*minus).sum().item()) / (2 * eps))
    return out


def test_gradcheck_float64():
    x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([[1.2, 0.4, -0.9], [-2.0, 0.1, 0.8]], dtype=torch.float64, requires_grad=True)
    gx, gy = torch.autograd.grad(Rational.apply(x, y).sum(), (x, y))
    with torch.no_grad():
        assert_close(gx, _numeric_grad(Rational.apply, [x, y], 0), 1e-7)
        assert_close(gy, _numeric_grad(Rational.apply, [x, y], 1), 1e-7)


def test_gradgradcheck_float64():
    # The backward is written in ferrograd ops: differentiate it numerically too.
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([1.2, 0.4, -0.9], dtype=torch.float64, requires_grad=True)

    def grad_y(x, y):
        with torch.enable_grad():
            y = y.detach().requires_grad_()
            (g,) = torch.autograd.grad(Rational.apply(x, y).sum(), y, create_graph=True)
        return g

    (g,) = torch.autograd.grad(Rational.apply(x, y).sum(), y, create_graph=True)
    (ggx, ggy) = torch.autograd.grad(g.sum(), (x, y))
    assert_close(ggx, _numeric_grad(grad_y, [x, y], 0), 1e-6)
    assert_close(ggy, _numeric_grad(grad_y, [x, y], 1), 1e-6)


# ----- threads --------------------------------------------------------------


@pytest.mark.parametrize("n", [5, 1 << 16])  # the second runs kernels on the pool
def test_concurrent_backward_from_two_threads(n):
    Mul3 = cube_function(torch)

    errors, results = [], []

    def work(seed):
        try:
            for i in range(8):
                x = torch.randn(n, dtype=torch.float64, requires_grad=True)
                y = Mul3.apply(Square.apply(x) + 1.0)  # (x^2 + 1)^3
                z = Square.apply(x * 2.0)
                (y.sum() + z.sum()).backward()
                with torch.no_grad():
                    u = x * x + 1
                    expected = 6 * x * u * u + 8 * x
                    diff = x.grad - expected
                    results.append((diff * diff).sum().item())
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors, errors
    assert len(results) == 16 and max(results) < 1e-12


# ----- InplaceFunction, Variable, legacy ------------------------------------


def test_inplace_function():
    class AddOne(InplaceFunction):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf([1.0])
    a = x * 2
    assert AddOne.apply(a) is a
    assert_close(a, [3.0])
    a.sum().backward()
    assert_close(x.grad, [2.0])
    assert issubclass(InplaceFunction, Function)
    with pytest.warns(DeprecationWarning):
        f = AddOne(inplace=True)
    assert f.inplace is True


def test_variable():
    t = torch.ones(3)
    v = Variable(t)
    assert isinstance(v, torch.Tensor) and v is not t and not v.requires_grad
    assert v.data_ptr() == t.data_ptr()
    v = Variable(t, requires_grad=True)
    assert v.requires_grad and v.is_leaf and not t.requires_grad
    assert isinstance(t, Variable)
    assert Variable().shape == (0,)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        Variable(3)


def test_legacy_instance_call_raises():
    with pytest.warns(DeprecationWarning):
        f = Square()
    with pytest.raises(
        RuntimeError, match="Legacy autograd function with non-static forward method is deprecated"
    ):
        f(leaf([1.0]))


def test_next_functions_without_node():
    ctx = Square._backward_cls()
    with pytest.raises(RuntimeError, match="Attribute 'next_functions' is invalid"):
        ctx.next_functions


# ----- examples/custom_functions.py -----------------------------------------


def _load_example(module_name, backend):
    src = (ROOT / "examples" / "custom_functions.py").read_text()
    if backend != "ferrograd":
        src = src.replace("import ferrograd as torch\n", f"import {backend} as torch\n")
    spec = importlib.util.spec_from_loader(module_name, loader=None)
    mod = importlib.util.module_from_spec(spec)
    exec(compile(src, str(ROOT / "examples" / "custom_functions.py"), "exec"), mod.__dict__)
    return mod


@pytest.fixture(scope="module")
def ex():
    return _load_example("fg_examples", "ferrograd")


def test_example_scale_tracker(ex):
    stats = {}
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, requires_grad=True)
    y = ex.ScaleTracker.apply(x, "layer1", stats)
    assert y.grad_fn.name() == "ScaleTrackerBackward"
    (y * y).sum().backward()  # grad = 2x: twice the std
    s = math.sqrt(sum((v - 2.5) ** 2 for v in [1, 2, 3, 4]) / 3)
    assert abs(stats["layer1"]["forward_std"] - s) < 1e-12
    assert abs(stats["layer1"]["backward_std"] - 2 * s) < 1e-12
    assert_close(x.grad, [2.0, 4.0, 6.0, 8.0])


def test_example_grad_factor(ex):
    x = leaf([1.0, -2.0])
    y = ex.GradFactor.apply(x, -0.5)
    assert_close(y, [1.0, -2.0])
    (y * 3).sum().backward()
    assert_close(x.grad, [-1.5, -1.5])


def test_example_all_gather(ex):
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    g = ex.AllGather.apply(x)
    assert tuple(g.shape) == (1, 2, 2)
    assert_close(g, [[[1.0, 2.0], [3.0, 4.0]]])
    w = torch.tensor([[[1.0, 2.0], [3.0, 4.0]]])
    (g * w).sum().backward()
    assert_close(x.grad, [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match="single-process"):
        ex.AllGather.apply(x, 1, 2)


def test_example_main_runs(ex, capsys):
    ex.main()
    out = capsys.readouterr().out
    assert "gradient check, squared error: 0.0" in out


# ----- torch oracle ---------------------------------------------------------


def _functions(T):
    """The same custom Functions, built on module T (torch or ferrograd)."""

    class MulAdd(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k):
            ctx.save_for_backward(a, b)
            ctx.k = k
            return a * b + k * a, k

        @staticmethod
        def backward(ctx, g, _):
            a, b = ctx.saved_tensors
            return g * (b + ctx.k), g * a, None

    class SaveOut(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * x
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y * 3  # any formula: compared across backends

    class Split(T.autograd.Function):
        @staticmethod
        def forward(x, scale=2.0):
            return x * scale, x - 1, (x * 0).long()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.scale = inputs[1]
            ctx.mark_non_differentiable(output[1])

        @staticmethod
        def backward(ctx, ga, gb, gc):
            return ga * ctx.scale + gb * 100, None

    class InplaceScale(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, s):
            x.mul_(s)
            ctx.mark_dirty(x)
            ctx.s = s
            return x

        @staticmethod
        def backward(ctx, g):
            return g * ctx.s, None

    Sparse = two_output_function(T, materialize_grads=False)
    return MulAdd, SaveOut, Split, InplaceScale, Sparse


def _run_oracle_program(T, a_vals, b_vals):
    MulAdd, SaveOut, Split, InplaceScale, Sparse = _functions(T)
    a = T.tensor(a_vals, dtype=T.float64, requires_grad=True)
    b = T.tensor(b_vals, dtype=T.float64, requires_grad=True)
    y, k = MulAdd.apply(a, b, 0.5)
    z = SaveOut.apply(y)
    p, q, r = Split.apply(z)
    m = InplaceScale.apply(p * 1, 3.0)
    s1, s2 = Sparse.apply(b)
    loss = (m * m).sum() + (q * 0.1).sum() + s2.sum()
    gy, ga, gb = T.autograd.grad(loss, (y, a, b), create_graph=True)
    (gga,) = T.autograd.grad((ga * ga).sum(), a)
    return {
        "k": k,
        "flags": (q.requires_grad, r.requires_grad, r.dtype == T.int64, m.grad_fn.name()),
        "values": [tolist(t) for t in (y, z, p, q, m, s1, s2)],
        "grads": [tolist(t) for t in (gy, ga, gb, gga)],
    }


def test_oracle_against_torch():
    real = pytest.importorskip("torch")
    a_vals = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
    b_vals = [[1.25, 0.5, -1.0], [-2.0, 0.75, 1.0]]
    want = _run_oracle_program(real, a_vals, b_vals)
    got = _run_oracle_program(torch, a_vals, b_vals)
    assert got["k"] == want["k"]
    assert got["flags"] == want["flags"]
    for g, w in zip(got["values"] + got["grads"], want["values"] + want["grads"]):
        assert_close(g, w, 1e-12)


def test_oracle_examples_against_torch():
    real = pytest.importorskip("torch")
    results = {}
    for backend, T in (("torch", real), ("ferrograd", torch)):
        mod = _load_example(f"{backend}_examples", backend)
        stats = {}
        x = T.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=T.float64, requires_grad=True)
        h = mod.ScaleTracker.apply(x * x, "h", stats)
        h = mod.GradFactor.apply(h, -0.3)
        g = mod.AllGather.apply(h)
        (g * g * g).sum().backward()
        results[backend] = (stats, tolist(g), tolist(x.grad))
    (ts, tg, tx), (fs, fg, fx) = results["torch"], results["ferrograd"]
    assert abs(ts["h"]["forward_std"] - fs["h"]["forward_std"]) < 1e-12
    assert abs(ts["h"]["backward_std"] - fs["h"]["backward_std"]) < 1e-12
    assert_close(fg, tg, 1e-12)
    assert_close(fx, tx, 1e-12)


def test_oracle_errors_match_torch():
    real = pytest.importorskip("torch")

    def messages(T):
        out = []

        for bw in (
            lambda ctx, g: (),
            lambda ctx, g: (g, g),
            lambda ctx, g: ("x", None),
            lambda ctx, g: (T.ones(4), None),
        ):
            x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
            try:
                _scale_fn(bw, T).apply(x, 2.0).sum().backward()
            except Exception as e:
                out.append((type(e).__name__, str(e)))
        return out

    assert messages(torch) == messages(real)
