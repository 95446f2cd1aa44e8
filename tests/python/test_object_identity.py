"""One Python object per tensor where graph code relies on identity: leaves
(made by factories with requires_grad=True, requires_grad_(), the
requires_grad setter, nn.Parameter) come back as the very same object from
AccumulateGrad's `variable` and from saved-input attributes. Each case runs
on ferrograd and torch (the `lib` fixture)."""

import weakref


def leaves_of(fn, out):
    if fn is None:
        return
    if hasattr(fn, "variable"):
        out.append(fn.variable)
    for f, _ in fn.next_functions:
        leaves_of(f, out)


def test_variable_is_the_leaf(lib):
    x = lib.randn(3, requires_grad=True)
    assert x.exp().grad_fn.next_functions[0][0].variable is x
    y = lib.ones(2)
    y.requires_grad = True
    assert (y * 2).grad_fn.next_functions[0][0].variable is y
    w = lib.ones(2).requires_grad_()
    assert (w * 2).grad_fn.next_functions[0][0].variable is w
    for make in (lib.zeros, lib.ones, lib.empty, lib.rand, lib.randn):
        t = make(2, requires_grad=True)
        assert (t * 1).grad_fn.next_functions[0][0].variable is t


def test_saved_inputs_are_the_leaves(lib):
    z, w = lib.zeros(2, requires_grad=True), lib.ones(2).requires_grad_()
    m = z * w
    assert m.grad_fn._saved_self is z and m.grad_fn._saved_other is w
    # the same object on every access
    assert m.grad_fn._saved_self is m.grad_fn._saved_self


def test_parameters_found_by_walking_the_graph(lib):
    lin = lib.nn.Linear(2, 2)
    found = []
    leaves_of(lin(lib.randn(1, 2)).sum().grad_fn, found)
    params = list(lin.parameters())
    assert len(found) == 2
    assert all(any(v is p for p in params) for v in found)
    p = lib.nn.Parameter(lib.randn(2))
    assert (p * p).grad_fn._saved_self is p


def test_id_keyed_cache_hits(lib):
    x = lib.randn(3, requires_grad=True)
    cache = {id(x): "x"}
    v = (x * 2).grad_fn.next_functions[0][0].variable
    assert cache[id(v)] == "x"
    ref = weakref.ref(x)
    assert ref() is v


def test_nodes_require_grad(lib):
    x = lib.randn(2, 3, requires_grad=True)
    assert x.softmax(1).grad_fn.requires_grad
    assert isinstance(x.softmax(1).grad_fn, lib.autograd.graph.Node)
