"""Graph inspection and node hooks: Node.metadata / register_hook /
register_prehook, ``_saved_*`` / ``_raw_saved_*``, their handles and errors.
Tensor hooks, errors inside hooks, reentrancy and the oracle:
test_tensor_hooks.py.

Tests taking ``lib`` run on ferrograd and, when installed, on torch (torch
passing is what makes the expectation right); tests taking ``torch`` run the
same snippet on both libraries and compare what they recorded.
"""

import numpy as np
import pytest

import ferrograd
from helpers import close, leaf, square_function, to_numpy
from hook_helpers import XA, X, raises, values


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
