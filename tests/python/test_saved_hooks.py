"""ferrograd.autograd.graph: saved-tensor hooks and friends, checked against
torch where torch has the same feature."""

import numpy as np
import pytest

import ferrograd as fg
from ferrograd.autograd import graph
from helpers import two_output_function


def leaf(vals, dtype=None):
    return fg.tensor(vals, dtype=dtype or fg.float64, requires_grad=True)


def test_node_importable():
    from ferrograd.autograd.graph import Node

    y = leaf([1.0, 2.0]).exp()
    assert isinstance(y.grad_fn, Node)


def test_pack_unpack_called_and_grad_correct():
    a = leaf([1.0, 2.0, 3.0])
    log = []

    def pack(t):
        log.append(("pack", tuple(t.shape)))
        return t.detach().numpy().copy()  # any Python object

    def unpack(x):
        log.append(("unpack", type(x).__name__))
        return fg.tensor(x)

    with graph.saved_tensors_hooks(pack, unpack):
        y = (a * a).sum()
    assert [e[0] for e in log] == ["pack", "pack"]
    y.backward()
    assert [e[0] for e in log] == ["pack", "pack", "unpack", "unpack"]
    assert all(e[1] == "ndarray" for e in log[2:])
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 4.0, 6.0])


def test_saved_output_through_hooks():
    a = leaf([0.5, 1.0])
    packed = []
    with graph.saved_tensors_hooks(
        lambda t: (packed.append(t.detach().numpy().copy()), t)[1], lambda t: t
    ):
        y = a.exp()
    np.testing.assert_allclose(packed[0], np.exp([0.5, 1.0]))
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.exp([0.5, 1.0]))


def test_hooks_used_after_exit_and_nested_innermost():
    a = leaf([1.0, 2.0])
    calls = []

    def mk(tag):
        return (
            lambda t: (calls.append("p" + tag), t)[1],
            lambda t: (calls.append("u" + tag), t)[1],
        )

    with graph.saved_tensors_hooks(*mk("outer")):
        with graph.saved_tensors_hooks(*mk("inner")):
            y = a.exp()
        z = a.sin()
    w = a.cos()  # no hooks
    assert calls == ["pinner", "pouter"]
    (y.sum() + z.sum() + w.sum()).backward()
    assert sorted(calls[2:]) == ["uinner", "uouter"]
    np.testing.assert_allclose(
        a.grad.numpy(), np.exp([1.0, 2.0]) + np.cos([1.0, 2.0]) - np.sin([1.0, 2.0])
    )


def test_unpack_order_is_save_order():
    a = leaf([1.0, 2.0])
    b = leaf([3.0, 4.0])
    order = []
    with graph.saved_tensors_hooks(lambda t: t, lambda t: (order.append(float(t.sum())), t)[1]):
        y = a * b  # saves self then other
    y.sum().backward()
    assert order == [3.0, 7.0] or order == [7.0, 3.0]
    # Documented: within one node, save order.
    assert order == sorted(order, key=lambda v: [3.0, 7.0].index(v))


def test_custom_function_save_for_backward_hooks():
    class Mul(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, g * x

    a, b = leaf([1.0, 2.0]), leaf([3.0, 5.0])
    seen = []
    with graph.saved_tensors_hooks(lambda t: ("packed", t), lambda p: (seen.append(p[0]), p[1])[1]):
        out = Mul.apply(a, b)
    out.sum().backward()
    assert seen == ["packed", "packed"]
    np.testing.assert_allclose(a.grad.numpy(), [3.0, 5.0])
    np.testing.assert_allclose(b.grad.numpy(), [1.0, 2.0])


def test_custom_function_pack_error_propagates():
    class Id(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g

    class Boom(Exception):
        pass

    def pack(t):
        raise Boom("pack")

    with pytest.raises(Boom):
        with graph.saved_tensors_hooks(pack, lambda t: t):
            Id.apply(leaf([1.0]))


def test_builtin_pack_error_propagates_unchanged():
    class Boom(Exception):
        pass

    err = Boom("pack failed")

    def pack(t):
        raise err

    a = leaf([1.0])
    reached = []
    with graph.saved_tensors_hooks(pack, lambda t: t):
        # the op itself raises, as in torch (not the context's exit)
        with pytest.raises(Boom) as ei:
            a * a
        reached.append(True)
        # ops that save nothing are unaffected
        y = a + 1
    assert reached
    assert ei.value is err
    assert y.grad_fn.name() == "AddBackward0"
    # nothing was left half-recorded: no pending error, later ops work
    y = (a * a).sum()
    y.backward()
    np.testing.assert_allclose(a.grad.numpy(), [2.0])


def _pack_error_at_op(lib):
    class Boom(Exception):
        pass

    def pack(t):
        raise Boom("no saving")

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    out = []
    for op in [lambda: x.exp(), lambda: x * x, lambda: x.sin(), lambda: x.pow(3), lambda: x @ x]:
        with lib.autograd.graph.saved_tensors_hooks(pack, lambda p: p):
            try:
                op()
                out.append("ok")
            except Boom as e:
                out.append(f"Boom: {e}")
    with lib.autograd.graph.saved_tensors_hooks(pack, lambda p: p):
        x + 1
        out.append("add ok")
    return out


def test_pack_error_raised_by_op_like_torch(torch):
    ours = _pack_error_at_op(fg)
    assert ours == ["Boom: no saving"] * 5 + ["add ok"]
    assert ours == _pack_error_at_op(torch)


def test_pack_error_no_grad_not_called():
    calls = []

    def pack(t):
        calls.append(1)
        raise ValueError("x")

    x = leaf([1.0, 2.0])
    with graph.saved_tensors_hooks(pack, lambda p: p):
        with fg.no_grad():
            x.exp()
    assert calls == []


def test_unpack_error_propagates_unchanged():
    class Boom(Exception):
        pass

    err = Boom("unpack failed")

    def unpack(x):
        raise err

    a = leaf([1.0])
    with graph.saved_tensors_hooks(lambda t: t, unpack):
        y = a.exp()
    with pytest.raises(Boom) as ei:
        y.backward()
    assert ei.value is err


def test_unpack_must_return_tensor():
    a = leaf([1.0])
    with graph.saved_tensors_hooks(lambda t: t, lambda x: 3):
        y = a * a
    with pytest.raises(
        TypeError,
        match="Output of saved tensor unpack_hook expected to be a Tensor but got result of type int",
    ):
        y.backward()


def test_version_check_runs_with_hooks():
    a = leaf([1.0, 2.0]).clone()
    with graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
        y = a * a
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_pack_modifying_input_raises():
    a = leaf([1.0, 2.0]).clone()

    def pack(t):
        t.detach().mul_(1)
        return t

    with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
        with graph.saved_tensors_hooks(pack, lambda t: t):
            a * a


def test_double_backward_through_hooks():
    a = leaf([1.0, 2.0])
    with graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
        y = (a * a * a).sum()
        (g,) = fg.autograd.grad(y, a, create_graph=True)
        (gg,) = fg.autograd.grad(g.sum(), a)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
    np.testing.assert_allclose(gg.numpy(), [6.0, 12.0])


def test_against_torch_hook_calls(torch):

    def run(lib, g):
        a = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([3.0, -1.0], dtype=lib.float64, requires_grad=True)
        n = {"p": 0, "u": 0}

        def pack(t):
            n["p"] += 1
            return t.detach().clone()

        def unpack(t):
            n["u"] += 1
            return t

        with g.saved_tensors_hooks(pack, unpack):
            y = (a * b).exp().sum() + (a / b).sum()
        y.backward()
        return n, a.grad.numpy(), b.grad.numpy()

    n1, ga1, gb1 = run(fg, graph)
    n2, ga2, gb2 = run(torch, torch.autograd.graph)
    assert n1 == n2
    np.testing.assert_allclose(ga1, ga2)
    np.testing.assert_allclose(gb1, gb2)


def test_save_on_cpu(torch):

    def run(lib):
        a = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64, requires_grad=True)
        with lib.autograd.graph.save_on_cpu(pin_memory=False):
            y = (a.exp() * a).sum()
        y.backward()
        return a.grad.numpy()

    np.testing.assert_allclose(run(fg), run(torch))


def test_save_on_cpu_keeps_version_check():
    a = leaf([1.0, 2.0]).clone()
    with graph.save_on_cpu():
        y = a * a
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_disable_saved_tensors_hooks():
    with graph.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="^no hooks here$"):
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    # enabled again after exit
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        pass
    # entering while hooks are set raises too (as torch)
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError, match="inner msg"):
            with graph.disable_saved_tensors_hooks("inner msg"):
                pass


def test_disable_saved_tensors_hooks_torch(torch):
    msgs = []
    for g in (graph, torch.autograd.graph):
        with g.disable_saved_tensors_hooks("nope"):
            try:
                with g.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
            except RuntimeError as e:
                msgs.append(str(e))
    assert msgs[0] == msgs[1] == "nope"


def test_increment_version(torch):
    for lib in (fg, torch):
        a = lib.tensor([1.0])
        v = a._version
        lib.autograd.graph.increment_version(a)
        assert a._version == v + 1


def test_increment_version_breaks_backward():
    a = leaf([1.0, 2.0]).clone()
    y = a * a
    graph.increment_version(a)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_gradient_edge():
    a = leaf([1.0, 2.0])
    e = graph.get_gradient_edge(a)
    assert isinstance(e, graph.GradientEdge)
    assert e.node.name() == "torch::autograd::AccumulateGrad"
    assert e.output_nr == 0
    y = a * 2
    e2 = graph.get_gradient_edge(y)
    assert e2.node == y.grad_fn and e2.output_nr == 0
    node, nr = e2[0], e2[1]
    assert node == y.grad_fn and nr == 0
    with pytest.raises(
        RuntimeError,
        match="It is not possible to get the gradient edge for a Tensor that does not require gradients",
    ):
        graph.get_gradient_edge(fg.tensor([1.0]))


def test_gradient_edge_torch(torch):
    names = []
    for lib in (fg, torch):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        y = a.unbind(0)[1]
        e = lib.autograd.graph.get_gradient_edge(y)
        names.append(
            (e.node.name(), e.output_nr, lib.autograd.graph.get_gradient_edge(a).node.name())
        )
        assert e._fields == ("node", "output_nr", "ownership_token")
    assert names[0] == names[1]


def test_allow_mutation_on_saved_tensors(torch):

    def run(lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            a = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64, requires_grad=True).clone()
            out = (a * a).sum()
            a.sin_()
            out.backward()
        return a.detach().numpy(), None

    r1 = run(fg)
    r2 = run(torch)
    np.testing.assert_allclose(r1[0], r2[0])


def test_allow_mutation_grad_correct():
    x = leaf([0.5, 1.0, 2.0])
    with graph.allow_mutation_on_saved_tensors():
        a = x.clone()
        out = (a * a).sum()
        a.mul_(10)
        out.backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 2.0, 4.0])
    np.testing.assert_allclose(a.detach().numpy(), [5.0, 10.0, 20.0])


def test_allow_mutation_outside_context_errors():
    x = leaf([0.5, 1.0])
    a = x.clone()
    out = (a * a).sum()
    a.mul_(10)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


AFTER_EXIT_MSG = (
    "Trying to backward outside of the 'allow_mutation_on_saved_tensors' "
    "contextin which the graph was originally recorded."
)


def test_allow_mutation_backward_after_exit():
    x = leaf([0.5, 1.0])
    with graph.allow_mutation_on_saved_tensors():
        out = (x.clone() * x).sum()
    # torch asserts (AssertionError), with its message as is
    with pytest.raises(AssertionError) as ei:
        out.backward()
    assert str(ei.value) == AFTER_EXIT_MSG


def test_allow_mutation_nested_raises():
    with graph.allow_mutation_on_saved_tensors():
        with pytest.raises(
            RuntimeError, match="^allow_mutation_on_saved_tensors contexts cannot be nested$"
        ):
            with graph.allow_mutation_on_saved_tensors():
                pass
        # the outer context still works
        x = leaf([1.0, 2.0])
        a = x.clone()
        out = (a * a).sum()
        a.mul_(3)
        out.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def _mutation_errors(lib):
    g = lib.autograd.graph
    got = []
    try:
        with g.allow_mutation_on_saved_tensors():
            with g.allow_mutation_on_saved_tensors():
                pass
    except Exception as e:
        got.append((type(e).__name__, str(e)))
    x = lib.tensor([0.5, 1.0], requires_grad=True)
    with g.allow_mutation_on_saved_tensors():
        out = (x.clone() * x).sum()
    try:
        out.backward()
    except Exception as e:
        got.append((type(e).__name__, str(e)))
    try:
        with g.disable_saved_tensors_hooks("hooks are off"):
            with g.allow_mutation_on_saved_tensors():
                pass
    except Exception as e:
        got.append((type(e).__name__, str(e)))
    return got


def test_allow_mutation_errors_like_torch(torch):
    ours = _mutation_errors(fg)
    assert len(ours) == 3
    assert ours == _mutation_errors(torch)


def test_multi_grad_hook_all_and_remove():
    a = fg.rand(2, 3, requires_grad=True)
    b = fg.rand(2, 3, requires_grad=True)
    c = a * b
    d = a * b
    res = []
    h = graph.register_multi_grad_hook(
        (a, b, c, d), lambda g: res.append([x is not None for x in g])
    )
    c.sum().backward(retain_graph=True)
    assert res == [[True, True, True, False]]
    c.sum().backward(inputs=(a,), retain_graph=True)
    assert res[1] == [True, False, True, False]
    h.remove()
    c.sum().backward(retain_graph=True)
    assert len(res) == 2


def test_multi_grad_hook_all_values():
    a = fg.tensor([1.0, 2.0], dtype=fg.float64, requires_grad=True)
    b = fg.tensor([3.0, 4.0], dtype=fg.float64, requires_grad=True)
    got = []
    graph.register_multi_grad_hook([a, b], lambda gs: got.append([g.numpy().copy() for g in gs]))
    (a * b).sum().backward()
    assert len(got) == 1
    np.testing.assert_allclose(got[0][0], [3.0, 4.0])
    np.testing.assert_allclose(got[0][1], [1.0, 2.0])


def test_multi_grad_hook_any():
    a = fg.rand(2, 3, requires_grad=True)
    b = fg.rand(2, 3, requires_grad=True)
    got = []
    graph.register_multi_grad_hook((a, b), lambda g: got.append(tuple(g.shape)), mode="any")
    (a * b).sum().backward()
    assert got == [(2, 3)]
    (a * b).sum().backward()
    assert len(got) == 2
    with pytest.raises(ValueError, match="Expects mode to be one of"):
        graph.register_multi_grad_hook((a,), print, mode="x")


def test_multi_grad_hook_vs_torch(torch):

    def run(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        c = a * b
        d = a + b
        res = []
        lib.autograd.graph.register_multi_grad_hook(
            (a, b, c, d), lambda g: res.append([x is not None for x in g])
        )
        (c.sum() * 2).backward(retain_graph=True)
        (d.sum() * 3).backward(inputs=(a,), retain_graph=True)
        (c + d).sum().backward()
        return res

    assert run(fg) == run(torch)


def test_allow_mutation_untracked_inplace_clones():
    # b does not require grad: its in-place op takes the fast path, and the
    # saved value must still be cloned first.
    x = leaf([1.0, 2.0])
    b = fg.tensor([3.0, 4.0], dtype=fg.float64)
    with graph.allow_mutation_on_saved_tensors():
        out = (x * b).sum()
        b.mul_(10)
        b.add_(1)
        out.backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])


def test_multi_grad_hook_all_gets_none_for_an_undefined_grad(lib):
    # b's gradient is undefined (its node runs, but nothing flows to it): the
    # hook still fires once, with None in b's place.
    x = lib.ones(2, requires_grad=True)
    a, b = two_output_function(lib).apply(x)
    got = []
    lib.autograd.graph.register_multi_grad_hook(
        (a, b), lambda gs: got.append([None if g is None else g.tolist() for g in gs])
    )
    a.sum().backward()
    assert got == [[[1.0, 1.0], None]]
