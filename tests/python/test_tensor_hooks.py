"""Tensor.register_hook and register_post_accumulate_grad_hook, exceptions
raised inside hooks, reentrancy and threads, and hook call records compared
with torch (node hooks and saved tensors: test_hooks.py).

Tests taking ``lib`` run on ferrograd and, when installed, on torch (torch
passing is what makes the expectation right); tests taking ``torch`` run the
same snippet on both libraries and compare what they recorded.
"""

import sys
import threading
import traceback

import numpy as np
import pytest

import ferrograd
from helpers import close, leaf, two_output_function
from hook_helpers import XA, X, raises, values


# ---------------------------------------------------------------------------
# Tensor.register_hook
# ---------------------------------------------------------------------------


def test_tensor_hook_non_leaf(lib):
    x = leaf(lib, X)
    y = x * x
    seen = []

    def hook(g):
        seen.append(values(g))
        return g * 2

    y.register_hook(hook)
    y.sum().backward()
    assert seen == [("T", (1.0, 1.0, 1.0))]
    close(x.grad, 4 * XA)


def test_tensor_hook_leaf(lib):
    x = leaf(lib, X)
    x.register_hook(lambda g: g + 1)
    (x * 3).sum().backward()
    close(x.grad, [4.0, 4.0, 4.0])


def test_tensor_hooks_run_in_registration_order(lib):
    x = leaf(lib, X)
    y = x.exp()
    order = []
    y.register_hook(lambda g: (order.append(1), g * 2)[1])
    y.register_hook(lambda g: (order.append(2), g + 1)[1])
    y.sum().backward()
    assert order == [1, 2]
    close(x.grad, (1 * 2 + 1) * np.exp(XA))


def test_tensor_hook_requires_grad(lib):
    t = lib.tensor([1.0, 2.0])
    e = raises(RuntimeError, lambda: t.register_hook(lambda g: g))
    assert str(e) == "cannot register a hook on a tensor that doesn't require gradient"


def test_tensor_hook_bad_return_type(lib):
    x = leaf(lib, X)
    y = x.exp()
    y.register_hook(lambda g: (g,))
    e = raises(TypeError, lambda: y.sum().backward())
    assert str(e) == "expected Variable, but hook returned 'tuple'"


def test_tensor_hook_changed_size(lib):
    x = leaf(lib, X)

    def shrink(g):
        return g[:2]

    x.register_hook(shrink)
    e = raises(RuntimeError, lambda: (x * 2).sum().backward())
    assert str(e) == "hook 'shrink' has changed the size of value"


def test_tensor_hook_changed_type(lib):
    x = leaf(lib, X)
    y = x * 2

    def to_long(g):
        return g.long()

    y.register_hook(to_long)
    e = raises(RuntimeError, lambda: y.sum().backward())
    assert (
        str(e)
        == "hook 'to_long' has changed the type of value (was torch.DoubleTensor got torch.LongTensor)"
    )


def test_tensor_hook_remove(lib):
    x = leaf(lib, X)
    y = x * 2
    h1 = y.register_hook(lambda g: g * 100)
    h2 = x.register_hook(lambda g: g * 100)
    h1.remove()
    h2.remove()
    y.sum().backward()
    close(x.grad, [2.0, 2.0, 2.0])


def test_tensor_hook_stays_on_old_node_after_inplace(lib):
    x = leaf(lib, X)
    y = x * 1
    seen = []
    h = y.register_hook(lambda g: seen.append(values(g)))
    y.mul_(3)
    y.sum().backward(retain_graph=True)
    assert seen == [("T", (3.0, 3.0, 3.0))]
    h.remove()
    y.sum().backward()
    assert len(seen) == 1


def test_retain_grad_sees_all_tensor_hooks(lib):
    x = leaf(lib, X)
    z = x.exp()
    z.register_hook(lambda g: g * 2)
    z.retain_grad()
    z.register_hook(lambda g: g * 3)
    z.sum().backward()
    close(z.grad, [6.0, 6.0, 6.0])
    close(x.grad, 6 * np.exp(XA))


def test_tensor_hook_applies_to_autograd_grad_of_leaf(lib):
    x = leaf(lib, X)
    x.register_hook(lambda g: g * 10)
    (gx,) = lib.autograd.grad((x * 2).sum(), x)
    close(gx, [20.0, 20.0, 20.0])
    assert x.grad is None


def test_tensor_hook_and_autograd_grad_capture(lib):
    x = leaf(lib, X)
    z = x * 2
    z.register_hook(lambda g: g * 10)
    (gz,) = lib.autograd.grad(z.sum(), z, retain_graph=True)
    close(gz, [10.0, 10.0, 10.0])
    # As in torch: when z's node also runs, its gradient is captured before
    # its tensor hooks run, which still act on what flows on.
    gz, gx = lib.autograd.grad(z.sum(), [z, x])
    close(gz, [1.0, 1.0, 1.0])
    close(gx, [20.0, 20.0, 20.0])


# ---------------------------------------------------------------------------
# Tensor.register_post_accumulate_grad_hook
# ---------------------------------------------------------------------------


def test_post_accumulate_grad_hook(lib):
    x = leaf(lib, X)
    seen = []

    def hook(t):
        assert t is x
        seen.append(values(t.grad))

    h = x.register_post_accumulate_grad_hook(hook)
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    assert seen == [("T", (2.0, 2.0, 2.0)), ("T", (5.0, 5.0, 5.0))]
    h.remove()
    (x * 3).sum().backward()
    assert len(seen) == 2


def test_post_accumulate_grad_hook_can_update_param(lib):
    x = leaf(lib, X)

    def sgd(p):
        with lib.no_grad():
            p.sub_(p.grad * 0.5)
        p.grad = None

    x.register_post_accumulate_grad_hook(sgd)
    (x * x).sum().backward()
    close(x, XA - XA)
    assert x.grad is None


def test_post_accumulate_grad_hook_non_leaf(lib):
    y = leaf(lib, X) * 2
    e = raises(RuntimeError, lambda: y.register_post_accumulate_grad_hook(lambda t: None))
    assert str(e) == "post accumulate grad hooks cannot be registered on non-leaf tensors"


def test_post_accumulate_grad_hook_requires_grad(lib):
    t = lib.tensor([1.0])
    e = raises(RuntimeError, lambda: t.register_post_accumulate_grad_hook(lambda t: None))
    assert str(e) == "cannot register a hook on a tensor that doesn't require gradient"


def test_post_accumulate_grad_hook_must_return_none(lib):
    x = leaf(lib, X)
    h = x.register_post_accumulate_grad_hook(lambda t: t)  # its argument back: allowed
    (x * 2).sum().backward()
    close(x.grad, [2.0, 2.0, 2.0])
    h.remove()
    x.register_post_accumulate_grad_hook(lambda t: t * 5)
    e = raises(RuntimeError, lambda: (x * 2).sum().backward())
    assert "Tensor post accumulate grad hooks should return None." in str(e)


# ---------------------------------------------------------------------------
# Errors raised inside hooks, reentrancy, threads
# ---------------------------------------------------------------------------


class HookError(Exception):
    pass


@pytest.mark.parametrize("kind", ["tensor", "leaf", "pre", "post", "acc_pre", "post_accumulate"])
def test_exception_in_hook_propagates_unchanged(lib, kind):
    err = HookError("boom")

    def raising_hook(*args):
        raise err

    x = leaf(lib, X)
    y = x.exp()
    if kind == "tensor":
        y.register_hook(raising_hook)
    elif kind == "leaf":
        x.register_hook(raising_hook)
    elif kind == "pre":
        y.grad_fn.register_prehook(raising_hook)
    elif kind == "post":
        y.grad_fn.register_hook(raising_hook)
    elif kind == "acc_pre":
        y.grad_fn.next_functions[0][0].register_prehook(raising_hook)
    else:
        x.register_post_accumulate_grad_hook(raising_hook)
    with pytest.raises(HookError) as info:
        y.sum().backward()
    assert info.value is err
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "raising_hook" in frames


def test_graph_usable_after_hook_error(lib):
    x = leaf(lib, X)
    y = x.exp()
    h = y.register_hook(lambda g: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        y.sum().backward(retain_graph=True)
    h.remove()
    x.grad = None
    y.sum().backward()
    close(x.grad, np.exp(XA))


def test_hook_calls_backward_reentrant(lib):
    x = leaf(lib, X)
    w = leaf(lib, [3.0])
    inner = {}

    def hook(g):
        with lib.enable_grad():
            (w * w).sum().backward()  # a whole backward inside this one
            inner["gw"] = w.grad.clone()
        return g

    y = x * x
    y.register_hook(hook)
    y.sum().backward()
    close(inner["gw"], [6.0])
    close(x.grad, 2 * XA)


def test_reentrant_hooks_on_many_threads(restore_threads):
    for n in (1, 4):
        ferrograd.set_num_threads(n)
        x = leaf(ferrograd, X)
        seen = []
        lock = threading.Lock()

        def hook(g, k):
            with ferrograd.enable_grad():
                w = ferrograd.tensor([float(k)], dtype=ferrograd.float64, requires_grad=True)
                (gw,) = ferrograd.autograd.grad((w * w * w).sum(), w)
            with lock:
                seen.append((k, gw.item(), threading.get_ident()))
            return g * 2

        total = None
        for k in range(1, 9):
            b = x * float(k)
            b.register_hook(lambda g, k=k: hook(g, k))
            s = b.sum()
            total = s if total is None else total + s
        total.backward()
        assert sorted((k, v) for k, v, _ in seen) == [(k, 3.0 * k * k) for k in range(1, 9)]
        close(x.grad, [2 * 36.0] * 3)

        # The same through autograd.grad, with node hooks as well.
        seen.clear()
        total = None
        for k in range(1, 9):
            b = (x * float(k)).exp()
            b.register_hook(lambda g, k=k: hook(g, k))
            b.grad_fn.register_prehook(lambda go: (go[0] * 0.5,))
            s = b.sum()
            total = s if total is None else total + s
        (gx,) = ferrograd.autograd.grad(total, x)
        assert len(seen) == 8
        expected = sum(k * np.exp(k * XA) for k in range(1, 9))
        close(gx, expected)


def test_hooks_release_gil_between_calls(restore_threads):
    """While backward runs, other Python threads make progress: the GIL is
    taken only while a hook runs. With a long switch interval the
    interpreter never forces a switch, so the ticker only runs when the
    engine gives the GIL back."""
    ferrograd.set_num_threads(2)
    ticks = []
    stop = threading.Event()
    started = threading.Event()

    def ticker():
        started.set()
        while not stop.is_set():
            ticks.append(1)
            stop.wait(0.0002)

    def one_backward():
        x = leaf(ferrograd, np.linspace(0, 1, 200000).tolist())
        y = x
        seen = []
        for _ in range(100):
            y = y.sin() * 1.0001
            y.register_hook(lambda g: seen.append(len(ticks)))
        y.sum().backward()
        return seen

    # A loaded machine may not schedule the ticker's OS thread inside one
    # backward; a few tries keep the test about the GIL, not the scheduler.
    # An engine that held the GIL throughout would never show progress: each
    # backward takes far less than the 5 s switch interval.
    old = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    t = threading.Thread(target=ticker)
    t.start()
    started.wait()
    try:
        runs = []
        for _ in range(5):
            runs.append(one_backward())
            if runs[-1][-1] > runs[-1][0]:
                break
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old)
    assert all(len(seen) == 100 for seen in runs)
    assert runs[-1][-1] > runs[-1][0]


# ---------------------------------------------------------------------------
# Oracle: hook call records compared with torch
# ---------------------------------------------------------------------------


def hook_script(lib):
    rec = []
    x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([1.5, 0.25, -3.0], dtype=lib.float64, requires_grad=True)
    a = x * w
    b = a.tanh()
    c = (b * a).sum()
    a.register_hook(lambda g: (rec.append(("a", values(g))), g * 2)[1])
    a.retain_grad()
    b.grad_fn.register_prehook(lambda go: rec.append(("b.pre", values(go))))
    b.grad_fn.register_hook(
        lambda gi, go: (rec.append(("b.post", values(gi), values(go))), (gi[0] + 1,))[1]
    )
    a.grad_fn.register_hook(lambda gi, go: rec.append(("a.post", values(gi), values(go))))
    acc_x = a.grad_fn.next_functions[0][0]
    acc_x.register_prehook(lambda go: rec.append(("acc_x.pre", values(go))))
    w.register_hook(lambda g: rec.append(("w", values(g))))
    x.register_post_accumulate_grad_hook(lambda t: rec.append(("x.postacc", values(t.grad))))
    c.backward()
    rec.append(("a.grad", values(a.grad)))
    rec.append(("x.grad", values(x.grad)))
    rec.append(("w.grad", values(w.grad)))
    rec.append(("saved", values(b.grad_fn.metadata), b.grad_fn.name()))
    return rec


def test_hook_records_match_torch(torch):
    got = hook_script(ferrograd)
    want = hook_script(torch)
    # Sibling branches may run in either order: compare each hook's calls.
    assert sorted(got, key=repr) == sorted(want, key=repr)
    # Along one path the order is fixed.
    path = [
        r[0] for r in got if r[0] in ("b.pre", "b.post", "a", "a.post", "acc_x.pre", "x.postacc")
    ]
    assert path == [
        r[0] for r in want if r[0] in ("b.pre", "b.post", "a", "a.post", "acc_x.pre", "x.postacc")
    ]


def test_double_backward_through_hooked_grad(lib):
    x = leaf(lib, X)
    y = x**3
    y.register_hook(lambda g: g * 2)
    (gx,) = lib.autograd.grad(y.sum(), x, create_graph=True)
    close(gx, 6 * XA**2)
    (ggx,) = lib.autograd.grad(gx.sum(), x)
    close(ggx, 12 * XA)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


def test_tensor_hook_sees_none_for_an_undefined_grad(lib):
    # b is not used: its gradient is undefined when TwoOut's node runs, and
    # b's hook is called with None, as torch does.
    x = lib.ones(2, requires_grad=True)
    a, b = two_output_function(lib).apply(x)
    seen = []
    a.register_hook(lambda g: seen.append(("a", None if g is None else g.tolist())))
    b.register_hook(lambda g: seen.append(("b", None if g is None else g.tolist())))
    a.sum().backward()
    assert sorted(seen) == [("a", [1.0, 1.0]), ("b", None)]
    assert x.grad.tolist() == [2.0, 2.0]


def test_leaf_hook_sees_none_when_its_grad_is_undefined(lib):
    class FirstOnly(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g, None

    x = lib.ones(2, requires_grad=True)
    y = lib.ones(2, requires_grad=True)
    seen = []
    y.register_hook(lambda g: seen.append(g))
    FirstOnly.apply(x, y).sum().backward()
    assert seen == [None]
    assert y.grad is None


def test_hook_may_not_replace_an_undefined_grad(lib):
    x = lib.ones(2, requires_grad=True)
    a, b = two_output_function(lib).apply(x)
    b.register_hook(lambda g: lib.full((2,), 10.0) if g is None else None)
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None value"):
        a.sum().backward()
    assert x.grad is None


def test_built_in_nodes_have_one_class_per_op(lib):
    # Graph printers read type(fn).__name__; torch gives each op its class.
    x = lib.ones(2, requires_grad=True)
    y = (x * 2).sum()
    z = (x * 3).exp()
    assert type(y.grad_fn).__name__ == "SumBackward0" == y.grad_fn.name()
    mul = y.grad_fn.next_functions[0][0]
    assert type(mul).__name__ == "MulBackward0"
    assert type(mul) is type(z.grad_fn.next_functions[0][0])
    assert type(z.grad_fn).__name__ == "ExpBackward0"
    acc = mul.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad"
    assert acc.name() == "torch::autograd::AccumulateGrad"
    for fn in (y.grad_fn, mul, acc):
        assert isinstance(fn, lib.autograd.graph.Node)
        assert type(fn).__module__ == "builtins"


def test_grad_fn_is_one_object_per_node(lib):
    # torch hands out one Python object per node; graph walkers rely on it
    # (torchviz keys nodes by id()).
    x = lib.ones(2, requires_grad=True)
    h = x * 2
    y = h.exp() + h.sin()
    assert y.grad_fn is y.grad_fn
    assert h.grad_fn is h.grad_fn
    (exp_fn, _), (sin_fn, _) = y.grad_fn.next_functions
    assert exp_fn.next_functions[0][0] is h.grad_fn
    assert sin_fn.next_functions[0][0] is h.grad_fn
    acc = h.grad_fn.next_functions[0][0]
    assert acc is h.grad_fn.next_functions[0][0]
    # A walk that keeps what it has seen (as torchviz does) names each node
    # once by id().
    seen = {}
    stack = [y.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen[id(fn)] = fn
        stack.extend(f for f, _ in fn.next_functions)
    names = sorted(type(fn).__name__ for fn in seen.values())
    assert names == [
        "AccumulateGrad",
        "AddBackward0",
        "ExpBackward0",
        "MulBackward0",
        "SinBackward0",
    ]
