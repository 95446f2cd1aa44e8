"""Graph inspection and hooks: Node.metadata / register_hook / register_prehook,
``_saved_*`` / ``_raw_saved_*``, Tensor.register_hook and
register_post_accumulate_grad_hook, their handles and errors.

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
from helpers import close, leaf, square_function, to_numpy, two_output_function

X = [0.5, -1.25, 2.0]
XA = np.array(X)


def values(obj):
    """A comparable picture of hook arguments: tensors become value lists."""
    if obj is None:
        return None
    if isinstance(obj, (tuple, list)):
        return tuple(values(o) for o in obj)
    if hasattr(obj, "detach"):
        return ("T", tuple(np.round(to_numpy(obj).reshape(-1), 12).tolist()))
    return obj


def raises(exc, fn, match=None):
    with pytest.raises(exc, match=match) as info:
        fn()
    return info.value


# ---------------------------------------------------------------------------
# Node.metadata
# ---------------------------------------------------------------------------


def test_metadata_is_a_persistent_dict(lib):
    y = leaf(lib, X).exp()
    m = y.grad_fn.metadata
    assert isinstance(m, dict) and m == {}
    m["tag"] = 1
    assert y.grad_fn.metadata is m
    assert y.grad_fn.metadata == {"tag": 1}
    z = y * 2
    assert z.grad_fn.next_functions[0][0].metadata is m


def test_metadata_on_accumulate_grad(lib):
    x = leaf(lib, X)
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    acc.metadata["k"] = 2
    assert (x * 3).grad_fn.next_functions[0][0].metadata == {"k": 2}


def test_metadata_distinct_per_node(lib):
    x = leaf(lib, X)
    a, b = x.exp(), x.sin()
    a.grad_fn.metadata["a"] = 1
    assert b.grad_fn.metadata == {}


def test_metadata_on_custom_function_node(lib):
    y = square_function(lib).apply(leaf(lib, X))
    m = y.grad_fn.metadata
    m["x"] = 3
    assert y.grad_fn.metadata is m


# ---------------------------------------------------------------------------
# Node.register_hook / register_prehook
# ---------------------------------------------------------------------------


def test_node_post_hook_arguments(lib):
    x = leaf(lib, X)
    c = leaf(lib, [1.0, 2.0, 3.0], requires_grad=False)
    y = x * c
    seen = []
    y.grad_fn.register_hook(lambda gi, go: seen.append((gi, go)))
    y.sum().backward()
    ((gi, go),) = seen
    assert isinstance(gi, tuple) and isinstance(go, tuple)
    assert len(gi) == 2 and gi[1] is None  # c does not require grad
    close(gi[0], [1.0, 2.0, 3.0])
    assert len(go) == 1
    close(go[0], [1.0, 1.0, 1.0])


def test_node_prehook_arguments(lib):
    x = leaf(lib, X)
    y = x.exp()
    seen = []
    y.grad_fn.register_prehook(lambda go: seen.append(go))
    (y * 3).sum().backward()
    ((go,),) = seen
    close(go, [3.0, 3.0, 3.0])


def test_node_hooks_see_none_for_undefined_grads(lib):
    x = leaf(lib, X)
    a, b, c = (x * 1).unbind()
    seen = []
    a.grad_fn.register_prehook(lambda go: seen.append(("pre", values(go))))
    a.grad_fn.register_hook(lambda gi, go: seen.append(("post", values(gi), values(go))))
    (a * 2).backward()
    assert seen == [
        ("pre", (("T", (2.0,)), None, None)),
        ("post", (("T", (2.0, 0.0, 0.0)),), (("T", (2.0,)), None, None)),
    ]


def test_hook_order(lib):
    calls = []
    x = leaf(lib, X)
    z = x.exp()
    z.register_hook(lambda g: calls.append("t1"))
    z.grad_fn.register_prehook(lambda g: calls.append("p1"))
    z.grad_fn.register_hook(lambda gi, go: calls.append("h1"))
    z.register_hook(lambda g: calls.append("t2"))
    z.grad_fn.register_prehook(lambda g: calls.append("p2"))
    z.grad_fn.register_hook(lambda gi, go: calls.append("h2"))
    z.sum().backward()
    assert calls == ["t1", "t2", "p1", "p2", "h1", "h2"]


def test_prehook_replaces_grad_outputs_chained(lib):
    x = leaf(lib, X)
    z = x.exp()
    z.grad_fn.register_prehook(lambda g: (g[0] * 2,))
    z.grad_fn.register_prehook(lambda g: (g[0] * 3,))
    z.register_hook(lambda g: g * 5)
    z.sum().backward()
    close(x.grad, 30 * np.exp(XA))


def test_post_hook_replaces_grad_inputs(lib):
    x = leaf(lib, X)
    z = x.exp()
    z.grad_fn.register_hook(lambda gi, go: (gi[0] + 1,))
    z.grad_fn.register_hook(lambda gi, go: (gi[0] * 2,))
    z.sum().backward()
    close(x.grad, 2 * (np.exp(XA) + 1))


def test_prehook_returning_none_gradient(lib):
    x = leaf(lib, X)
    z = x.exp()
    z.grad_fn.register_prehook(lambda g: (None,))
    z.sum().backward()
    assert x.grad is None


def test_post_hook_returning_none_gradient(lib):
    x = leaf(lib, X)
    z = x.exp()
    z.grad_fn.register_hook(lambda gi, go: (None,))
    z.sum().backward()
    assert x.grad is None


def test_hook_returning_none_keeps_grads(lib):
    x = leaf(lib, X)
    z = x.exp()
    z.grad_fn.register_prehook(lambda g: None)
    z.grad_fn.register_hook(lambda gi, go: None)
    z.register_hook(lambda g: None)
    z.sum().backward()
    close(x.grad, np.exp(XA))


@pytest.mark.parametrize("kind", ["pre", "post"])
def test_node_hook_wrong_number_of_values(lib, kind):
    x = leaf(lib, X)
    z = x.exp()

    def my_hook(*args):
        g = args[-1][0]
        return (g, g)

    getattr(z.grad_fn, "register_prehook" if kind == "pre" else "register_hook")(my_hook)
    e = raises(RuntimeError, lambda: z.sum().backward())
    assert (
        str(e)
        == "hook 'my_hook' has returned an incorrect number of values (got 2, but expected 1)"
    )


@pytest.mark.parametrize("kind", ["pre", "post"])
def test_node_hook_not_a_tuple(lib, kind):
    x = leaf(lib, X)
    z = x.exp()
    hook = (lambda g: [g[0]]) if kind == "pre" else (lambda gi, go: gi[0])
    getattr(z.grad_fn, "register_prehook" if kind == "pre" else "register_hook")(hook)
    e = raises(TypeError, lambda: z.sum().backward())
    expected = "list" if kind == "pre" else "Tensor"
    assert str(e) == f"expected tuple, but hook returned '{expected}'"


def test_node_hook_non_tensor_value(lib):
    x = leaf(lib, X)
    z = x.exp()
    z.grad_fn.register_prehook(lambda g: (5,))
    e = raises(TypeError, lambda: z.sum().backward())
    assert str(e) == "expected Variable, but hook returned 'int'"


def test_node_hook_changed_size(lib):
    x = leaf(lib, X)
    z = x.exp()

    def grow(gi, go):
        return (lib.ones(4, dtype=lib.float64),)

    z.grad_fn.register_hook(grow)
    e = raises(RuntimeError, lambda: z.sum().backward())
    assert str(e) == "hook 'grow' has changed the size of value"


def test_node_hook_changed_type(lib):
    x = leaf(lib, X)
    z = x.exp()

    def cast(go):
        return (go[0].float(),)

    z.grad_fn.register_prehook(cast)
    e = raises(RuntimeError, lambda: z.sum().backward())
    assert (
        str(e)
        == "hook 'cast' has changed the type of value (was torch.DoubleTensor got torch.FloatTensor)"
    )


def test_node_hook_cannot_replace_none(lib):
    x = leaf(lib, X)
    c = leaf(lib, X, requires_grad=False)
    z = x * c
    z.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0]))
    e = raises(RuntimeError, lambda: z.sum().backward())
    assert str(e) == "can't replace a None gradient with a non-None value"


def test_node_hook_handle_remove(lib):
    x = leaf(lib, X)
    z = x.exp()
    calls = []
    h1 = z.grad_fn.register_hook(lambda gi, go: calls.append("post"))
    h2 = z.grad_fn.register_prehook(lambda go: calls.append("pre"))
    assert isinstance(h1.id, int) and h1.id != h2.id
    h1.remove()
    h2.remove()
    h2.remove()  # a second remove does nothing
    z.sum().backward()
    assert calls == []
    close(x.grad, np.exp(XA))


def test_handle_as_context_manager(lib):
    x = leaf(lib, X)
    calls = []
    z = x.exp()
    with z.grad_fn.register_prehook(lambda g: calls.append("in")) as h:
        assert h is not None
    z.sum().backward(retain_graph=True)
    assert calls == []
    with z.register_hook(lambda g: calls.append("t")):
        z.sum().backward(retain_graph=True)
    z.sum().backward()
    assert calls == ["t"]


def test_hooks_on_accumulate_grad(lib):
    calls = []
    x = leaf(lib, X)
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    assert acc.name() == "torch::autograd::AccumulateGrad"
    assert x.grad_fn is None
    acc.register_prehook(lambda go: calls.append(("accpre", values(go))))
    acc.register_hook(lambda gi, go: calls.append(("accpost", values(gi), values(go))))
    x.register_hook(lambda g: calls.append(("tensor", values(g))))
    x.register_post_accumulate_grad_hook(lambda t: calls.append(("postacc", values(t.grad))))
    y.sum().backward()
    g = ("T", (2.0, 2.0, 2.0))
    assert calls == [("tensor", g), ("accpre", (g,)), ("postacc", g), ("accpost", (), (g,))]


def test_accumulate_grad_prehook_replaces_grad(lib):
    x = leaf(lib, X)
    y = x * 2
    y.grad_fn.next_functions[0][0].register_prehook(lambda go: (go[0] * 10,))
    y.sum().backward()
    close(x.grad, [20.0, 20.0, 20.0])


def test_accumulate_grad_variable(lib):
    x = leaf(lib, X)
    acc = (x * 2).grad_fn.next_functions[0][0]
    close(acc.variable, X)
    assert acc.variable.requires_grad and acc.variable.is_leaf
    raises(AttributeError, lambda: (x * 2).grad_fn.variable)


def test_hooks_on_custom_function_node(lib):
    x = leaf(lib, X)
    y = square_function(lib).apply(x)
    calls = []
    y.grad_fn.register_prehook(lambda go: calls.append(("pre", values(go))))
    h = y.grad_fn.register_hook(lambda gi, go: (gi[0] * 10,))
    (y * 3).sum().backward()
    assert calls == [("pre", (("T", (3.0, 3.0, 3.0)),))]
    close(x.grad, 60 * XA)
    h.remove()
    x.grad = None
    (square_function(lib).apply(x) * 3).sum().backward()
    close(x.grad, 6 * XA)


def test_custom_function_node_hook_error(lib):
    y = square_function(lib).apply(leaf(lib, X))

    def bad(gi, go):
        return (gi[0], gi[0])

    y.grad_fn.register_hook(bad)
    e = raises(RuntimeError, lambda: y.sum().backward())
    assert str(e) == "hook 'bad' has returned an incorrect number of values (got 2, but expected 1)"


# ---------------------------------------------------------------------------
# _saved_* / _raw_saved_*
# ---------------------------------------------------------------------------


def test_saved_self_other(lib):
    x = leaf(lib, X)
    w = leaf(lib, [1.0, 2.0, 3.0])
    y = x * w
    close(y.grad_fn._saved_self, X)
    close(y.grad_fn._saved_other, [1.0, 2.0, 3.0])
    assert y.grad_fn._saved_self.requires_grad


@pytest.mark.parametrize("op", ["exp", "tanh", "sigmoid"])
def test_saved_result(lib, op):
    x = leaf(lib, X)
    y = getattr(x, op)()
    r = y.grad_fn._saved_result
    close(r, y)
    assert r.requires_grad
    assert r.grad_fn.name() == y.grad_fn.name()


def test_saved_pow_tensor_exponent(lib):
    x = leaf(lib, [0.5, 1.5, 2.0])
    e = leaf(lib, [2.0, 3.0, 0.5])
    y = x**e
    fn = y.grad_fn
    assert fn.name() == "PowBackward1"
    close(fn._saved_self, x)
    close(fn._saved_exponent, e)
    close(fn._saved_result, y)


def test_saved_pow_scalar_exponent_self(lib):
    x = leaf(lib, X)
    y = x**3
    assert y.grad_fn.name() == "PowBackward0"
    close(y.grad_fn._saved_self, X)


def test_saved_mm(lib):
    a = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = lib.tensor([[0.5, 0.0], [1.0, -1.0]], requires_grad=True)
    fn = (a @ b).grad_fn
    close(fn._saved_self, a)
    close(fn._saved_mat2, b)


FREED = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed)"


def test_saved_freed_after_backward(lib):
    x = leaf(lib, X)
    y = x.exp()
    z = x * x
    (y.sum() + z.sum()).backward()
    with pytest.raises(
        RuntimeError, match=r"^Trying to backward through the graph a second time \(or directly"
    ):
        y.grad_fn._saved_result
    e = raises(RuntimeError, lambda: z.grad_fn._saved_self)
    assert str(e).startswith(FREED) and "retain_graph=True" in str(e)


def test_saved_kept_with_retain_graph(lib):
    x = leaf(lib, X)
    y = x.exp()
    y.sum().backward(retain_graph=True)
    close(y.grad_fn._saved_result, np.exp(XA))


def test_raw_saved(lib):
    x = leaf(lib, X)
    y = x * x
    raw = y.grad_fn._raw_saved_self
    assert raw is not None and not hasattr(raw, "detach")
    close(raw.unpack(), X)
    y.sum().backward()
    raw_after = y.grad_fn._raw_saved_other  # still accessible once freed
    assert raw_after is not None


def test_raw_saved_unpack_after_free_raises(lib):
    x = leaf(lib, X)
    y = x * x
    raw = y.grad_fn._raw_saved_self
    y.sum().backward()
    e = raises(RuntimeError, lambda: raw.unpack())
    assert str(e).startswith(FREED)


def test_unknown_saved_attribute(lib):
    y = leaf(lib, X).exp()
    e = raises(AttributeError, lambda: y.grad_fn._saved_self)
    assert str(e) == "'ExpBackward0' object has no attribute '_saved_self'"
    raises(AttributeError, lambda: y.grad_fn._raw_saved_other)
    e = raises(AttributeError, lambda: y.grad_fn.foo)
    assert str(e) == "'ExpBackward0' object has no attribute 'foo'"
    assert not hasattr((leaf(lib, X) * 2).grad_fn.next_functions[0][0], "_saved_self")


def test_saved_in_dir(lib):
    fn = (leaf(lib, X) * leaf(lib, X)).grad_fn
    names = dir(fn)
    for n in (
        "_saved_self",
        "_saved_other",
        "_raw_saved_self",
        "_raw_saved_other",
        "metadata",
        "register_hook",
        "register_prehook",
        "name",
        "next_functions",
    ):
        assert n in names


SAVED_CASES = {
    "mul": lambda lib, x, y, m: x * y,
    "div": lambda lib, x, y, m: x / y,
    "pow_scalar": lambda lib, x, y, m: x**2.5,
    "pow_tensor": lambda lib, x, y, m: x**y,
    "rpow": lambda lib, x, y, m: 2.0**x,
    "exp": lambda lib, x, y, m: x.exp(),
    "log": lambda lib, x, y, m: x.log(),
    "sqrt": lambda lib, x, y, m: x.sqrt(),
    "rsqrt": lambda lib, x, y, m: x.rsqrt(),
    "reciprocal": lambda lib, x, y, m: x.reciprocal(),
    "sin": lambda lib, x, y, m: x.sin(),
    "cos": lambda lib, x, y, m: x.cos(),
    "tan": lambda lib, x, y, m: x.tan(),
    "tanh": lambda lib, x, y, m: x.tanh(),
    "sigmoid": lambda lib, x, y, m: x.sigmoid(),
    "relu": lambda lib, x, y, m: x.relu(),
    "abs": lambda lib, x, y, m: x.abs(),
    "maximum": lambda lib, x, y, m: lib.maximum(x, y),
    "clamp_tensor": lambda lib, x, y, m: x.clamp(y * 0.5, y),
    "where": lambda lib, x, y, m: lib.where(x > 0.5, x, y),
    "mm": lambda lib, x, y, m: m @ m,
    "mv": lambda lib, x, y, m: lib.mv(m, x),
    "dot": lambda lib, x, y, m: lib.dot(x, y),
    "prod": lambda lib, x, y, m: x.prod(),
    "amax": lambda lib, x, y, m: m.amax(0),
    "logsumexp": lambda lib, x, y, m: m.logsumexp(0),
    "softmax": lambda lib, x, y, m: m.softmax(0),
    "log_softmax": lambda lib, x, y, m: m.log_softmax(0),
    "std": lambda lib, x, y, m: m.std(0),
    "index_select": lambda lib, x, y, m: x.index_select(0, lib.tensor([0, 2])),
    "gather": lambda lib, x, y, m: m.gather(0, lib.tensor([[0, 1, 2]])),
    "masked_fill": lambda lib, x, y, m: x.masked_fill(lib.tensor([True, False, True]), 1.0),
}


@pytest.mark.parametrize("case", sorted(SAVED_CASES))
def test_saved_names_and_values_match_torch(torch, case):
    """Every tensor ferrograd exposes as ``_saved_<name>`` is one torch
    exposes under that name, with the same value."""

    def run(lib):
        x = lib.tensor([0.3, 0.7, 1.2], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([1.5, 0.2, 0.9], dtype=lib.float64, requires_grad=True)
        m = lib.tensor(
            [[0.1, 0.5, 0.9], [1.3, 0.2, 0.4], [0.8, 0.6, 1.1]],
            dtype=lib.float64,
            requires_grad=True,
        )
        fn = SAVED_CASES[case](lib, x, y, m).grad_fn
        out = {}
        for a in dir(fn):
            if a.startswith("_saved_"):
                v = getattr(fn, a)
                if hasattr(v, "detach"):
                    out[a] = to_numpy(v)
        return fn.name(), out

    fname, fsaved = run(ferrograd)
    tname, tsaved = run(torch)
    assert fname == tname
    assert fsaved, "ferrograd exposes no saved tensor"
    for k, v in fsaved.items():
        if (fname, k) == ("StdBackward0", "_saved_result") and k not in tsaved:
            continue
        assert k in tsaved, f"{fname}.{k} is not a torch attribute"
        np.testing.assert_allclose(v, tsaved[k], rtol=1e-12, err_msg=f"{fname}.{k}")


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

    old = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    t = threading.Thread(target=ticker)
    t.start()
    started.wait()
    try:
        x = leaf(ferrograd, np.linspace(0, 1, 20000).tolist())
        y = x
        seen = []
        for _ in range(100):
            y = y.sin() * 1.0001
            y.register_hook(lambda g: seen.append(len(ticks)))
        y.sum().backward()
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old)
    assert len(seen) == 100
    assert seen[-1] > seen[0]


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
