"""Autograd engine semantics. Every test taking ``lib`` runs on ferrograd and,
when installed, on torch: torch passing is what makes the expectation right.
"""

import threading

import numpy as np
import pytest

import ferrograd
from helpers import close, cube_function, leaf, require, to_numpy


X = [0.5, -1.25, 2.0]
XA = np.array(X)

# ---------------------------------------------------------------------------
# Graph shapes
# ---------------------------------------------------------------------------


def test_diamond(lib):
    x = leaf(lib, X)
    a = x * 2
    b = x * x
    y = (a * b).sum()  # 2 x^3
    y.backward()
    close(x.grad, 6 * XA**2)


def test_nested_diamonds(lib):
    x = leaf(lib, X)
    a = x * 3
    b = a * a
    c = a + b  # 3x + 9x^2
    d = c * a  # 9x^2 + 27x^3
    e = d + b  # 18x^2 + 27x^3
    e.sum().backward()
    close(x.grad, 36 * XA + 81 * XA**2)


def test_shared_subexpression(lib):
    x = leaf(lib, X)
    y = leaf(lib, [1.5, 0.25, -3.0])
    s = x * y
    out = (s * s + s * 3).sum()
    out.backward()
    ya = np.array([1.5, 0.25, -3.0])
    sa = XA * ya
    close(x.grad, (2 * sa + 3) * ya)
    close(y.grad, (2 * sa + 3) * XA)


def test_unused_branch_is_ignored(lib):
    x = leaf(lib, X)
    w = leaf(lib, [1.0, 2.0, 3.0])
    unused = x * w  # never reaches the loss
    loss = (x * x).sum()
    loss.backward()
    close(x.grad, 2 * XA)
    assert w.grad is None
    assert unused.requires_grad


def test_multiple_roots(lib):
    x = leaf(lib, X)
    y1 = x * 2
    y2 = x * x
    lib.autograd.backward(
        [y1, y2], [leaf(lib, [1.0, 1.0, 1.0], False), leaf(lib, [1.0, 2.0, 3.0], False)]
    )
    close(x.grad, 2 + 2 * XA * np.array([1.0, 2.0, 3.0]))


def test_same_tensor_used_twice_in_one_op(lib):
    x = leaf(lib, X)
    (x * x).sum().backward()
    close(x.grad, 2 * XA)


def test_deep_chain(lib):
    x = leaf(lib, [1.0])
    y = x
    for _ in range(3000):
        y = y * 1.0 + 0.5
    y.sum().backward()
    close(x.grad, [1.0])
    close(y, [1501.0])


# ---------------------------------------------------------------------------
# retain_graph, backward twice, accumulation
# ---------------------------------------------------------------------------

SECOND_TIME = "Trying to backward through the graph a second time"


def test_retain_graph_allows_second_backward(lib):
    x = leaf(lib, X)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    close(x.grad, 4 * XA)
    with pytest.raises(RuntimeError, match=SECOND_TIME):
        y.backward()
    close(x.grad, 4 * XA)  # the failed call accumulated nothing


def test_backward_twice_without_retain_graph_raises(lib):
    x = leaf(lib, X)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=SECOND_TIME):
        y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        lib.autograd.grad(y, x)


def test_backward_twice_through_graph_without_saved_tensors(lib):
    # torch only fails when a freed saved tensor is needed; add/sum save none.
    x = leaf(lib, X)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    close(x.grad, [2.0, 2.0, 2.0])


def test_grad_accumulates_over_two_backward_calls(lib):
    x = leaf(lib, X)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    close(x.grad, 3 + 2 * XA)
    x.grad = None
    (x * 5).sum().backward()
    close(x.grad, [5.0, 5.0, 5.0])


def test_grad_zero_then_accumulate(lib):
    x = leaf(lib, X)
    (x * 3).sum().backward()
    g = x.grad
    x.grad.zero_()
    (x * 2).sum().backward()
    close(x.grad, [2.0, 2.0, 2.0])
    close(g, x.grad)


# ---------------------------------------------------------------------------
# inputs=, autograd.grad
# ---------------------------------------------------------------------------


def test_backward_inputs_restricts_accumulation(lib):
    x = leaf(lib, X)
    y = leaf(lib, [1.0, 2.0, 3.0])
    z = (x * y).sum()
    z.backward(inputs=[x])
    close(x.grad, [1.0, 2.0, 3.0])
    assert y.grad is None


def test_backward_inputs_non_leaf(lib):
    x = leaf(lib, X)
    s = x * 2
    z = (s * s).sum()
    z.backward(inputs=[s])
    close(s.grad, 4 * XA)
    assert x.grad is None


def test_backward_empty_inputs_raises(lib):
    x = leaf(lib, X)
    with pytest.raises(RuntimeError, match="argument to `?backward\\(\\)`? cannot be empty"):
        (x * x).sum().backward(inputs=[])


def test_autograd_grad_does_not_touch_dot_grad(lib):
    x = leaf(lib, X)
    y = leaf(lib, [1.0, 2.0, 3.0])
    (gx, gy) = lib.autograd.grad((x * y).sum(), [x, y])
    close(gx, [1.0, 2.0, 3.0])
    close(gy, XA)
    assert x.grad is None and y.grad is None


def test_autograd_grad_allow_unused_and_materialize(lib):
    x = leaf(lib, X)
    w = leaf(lib, [1.0, 1.0, 1.0])
    z = (x * x).sum()
    with pytest.raises(RuntimeError, match="not have been used in the graph"):
        lib.autograd.grad(z, [x, w], retain_graph=True)
    gx, gw = lib.autograd.grad(z, [x, w], allow_unused=True, retain_graph=True)
    close(gx, 2 * XA)
    assert gw is None
    gx, gw = lib.autograd.grad(z, [x, w], materialize_grads=True)
    close(gx, 2 * XA)
    close(gw, [0.0, 0.0, 0.0])
    assert tuple(gw.shape) == (3,)


def test_autograd_grad_with_grad_outputs(lib):
    x = leaf(lib, X)
    y = x * x
    (g,) = lib.autograd.grad(y, x, grad_outputs=leaf(lib, [1.0, 0.0, -2.0], False))
    close(g, 2 * XA * np.array([1.0, 0.0, -2.0]))


def test_autograd_grad_of_intermediate(lib):
    x = leaf(lib, X)
    s = x * 3
    z = (s * s).sum()
    (gs,) = lib.autograd.grad(z, s)
    close(gs, 2 * 3 * XA)


# ---------------------------------------------------------------------------
# Higher order
# ---------------------------------------------------------------------------


def test_double_backward_cube_with_grad(lib):
    x = leaf(lib, [2.0, -1.0])
    y = (x * x * x).sum()
    (g,) = lib.autograd.grad(y, x, create_graph=True)
    close(g, [12.0, 3.0])
    assert g.requires_grad
    (gg,) = lib.autograd.grad(g.sum(), x, create_graph=True)
    close(gg, [12.0, -6.0])
    (ggg,) = lib.autograd.grad(gg.sum(), x)
    close(ggg, [6.0, 6.0])


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_double_backward_cube_with_backward(lib):
    x = leaf(lib, [2.0, -1.0])
    (x * x * x).sum().backward(create_graph=True)
    g = x.grad
    close(g, [12.0, 3.0])
    assert g.requires_grad
    x.grad = None
    g.sum().backward()
    close(x.grad, [12.0, -6.0])


def test_create_graph_false_gives_constant_grad(lib):
    x = leaf(lib, [2.0])
    (g,) = lib.autograd.grad((x * x).sum(), x)
    assert not g.requires_grad
    assert g.grad_fn is None


# ---------------------------------------------------------------------------
# Errors of backward
# ---------------------------------------------------------------------------


def test_non_scalar_backward_needs_gradient(lib):
    x = leaf(lib, X)
    y = x * 2
    with pytest.raises(
        RuntimeError, match="grad can be implicitly created only for scalar outputs"
    ):
        y.backward()
    assert x.grad is None
    y.backward(leaf(lib, [1.0, 2.0, 3.0], False))
    close(x.grad, [2.0, 4.0, 6.0])


def test_backward_gradient_shape_mismatch(lib):
    x = leaf(lib, X)
    y = x * 2
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        y.backward(leaf(lib, [1.0, 2.0], False))
    assert x.grad is None


def test_backward_on_tensor_without_grad(lib):
    x = leaf(lib, X, requires_grad=False)
    with pytest.raises(RuntimeError, match="does not require grad"):
        (x * 2).sum().backward()


# ---------------------------------------------------------------------------
# Threads
# ---------------------------------------------------------------------------


def _wide_graph_grads(n_branches=96, width=513):
    rng = np.random.default_rng(7)
    x = leaf(ferrograd, rng.standard_normal(width).tolist())
    w = leaf(ferrograd, rng.standard_normal(width).tolist())
    coeffs = rng.standard_normal(n_branches).tolist()
    total = None
    for c in coeffs:
        branch = ((x * c) * w + x * x * (c * 0.37)).sum()
        total = branch if total is None else total + branch
    total.backward()
    return to_numpy(x.grad), to_numpy(w.grad), to_numpy(x), to_numpy(w), coeffs


def test_grads_bitwise_identical_across_thread_counts(restore_threads):
    ferrograd.set_num_threads(1)
    assert ferrograd.get_num_threads() == 1
    gx1, gw1, xa, wa, coeffs = _wide_graph_grads()
    c = np.array(coeffs)
    np.testing.assert_allclose(gx1, c.sum() * wa + 2 * 0.37 * c.sum() * xa, rtol=1e-9)
    np.testing.assert_allclose(gw1, c.sum() * xa, rtol=1e-9)
    for n in (2, 4, 2):
        ferrograd.set_num_threads(n)
        assert ferrograd.get_num_threads() == n
        for _ in range(3):
            gx, gw, *_ = _wide_graph_grads()
            assert gx.tobytes() == gx1.tobytes(), f"x.grad differs with {n} threads"
            assert gw.tobytes() == gw1.tobytes(), f"w.grad differs with {n} threads"


def test_concurrent_backward_from_python_threads(lib):
    errors, results = [], {}

    def work(k):
        try:
            x = leaf(lib, [float(k), 1.0])
            y = x
            for _ in range(50):
                y = y * 1.0 + x
            y.sum().backward()
            results[k] = to_numpy(x.grad)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(6):
        close(results[k], [51.0, 51.0])


# ---------------------------------------------------------------------------
# Reentrant backward
# ---------------------------------------------------------------------------


def test_reentrant_backward_in_tensor_hook(lib):
    x = leaf(lib, X)
    inner = {}

    def hook(g):
        with lib.enable_grad():  # backward runs with grad mode off
            w = leaf(lib, [3.0])
            (gw,) = lib.autograd.grad((w * w * w).sum(), w)  # backward inside backward
        inner["gw"] = gw
        return g * 2

    y = x * x
    y.register_hook(hook)
    y.sum().backward()
    close(inner["gw"], [27.0])
    close(x.grad, 4 * XA)


def test_reentrant_backward_in_custom_function(lib, restore_threads):
    require(lib, "autograd.Function")

    def recompute(x, g):
        with lib.enable_grad():
            xd = x.detach().requires_grad_(True)
            (gx,) = lib.autograd.grad((xd * xd * xd).sum(), xd)
        return g * gx

    Cube = cube_function(lib, recompute)

    for n in (1, 4):
        if lib is ferrograd:
            ferrograd.set_num_threads(n)
        x = leaf(lib, X)
        branches = [Cube.apply(x * float(k + 1)) for k in range(4)]
        total = branches[0]
        for b in branches[1:]:
            total = total + b
        total.sum().backward()
        close(x.grad, 3 * XA**2 * sum((k + 1) ** 3 for k in range(4)))


# ---------------------------------------------------------------------------
# retain_grad, version counter, in-place rules
# ---------------------------------------------------------------------------


def test_retain_grad_on_non_leaf(lib):
    x = leaf(lib, X)
    y = x * 2
    y.retain_grad()
    assert y.retains_grad
    z = x * 3
    (y * y + z).sum().backward()
    close(y.grad, 2 * 2 * XA)
    close(x.grad, 8 * XA + 3)
    assert not z.retains_grad
    assert not x.retains_grad  # leaves always keep .grad, retains_grad is False


def test_retain_grad_accumulates(lib):
    x = leaf(lib, X)
    y = x * 2
    y.retain_grad()
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    close(y.grad, [2.0, 2.0, 2.0])


def test_modified_saved_tensor_raises_version_error(lib):
    x = leaf(lib, X)
    y = x * 2
    z = (y * y).sum()  # saves y at version 0
    y.add_(1.0)
    assert y._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as e:
        z.backward()
    assert "is at version 1; expected version 0 instead" in str(e.value)
    assert x.grad is None


def test_modified_saved_view_base_raises(lib):
    x = leaf(lib, [1.0, 2.0, 3.0, 4.0])
    y = x * 1.0
    v = y.narrow(0, 0, 2)
    z = (v * v).sum()
    y.mul_(2.0)  # bumps the shared version counter of base and view
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_inplace_on_unsaved_tensor_is_fine(lib):
    x = leaf(lib, X)
    y = x * 2
    z = y + 1  # add saves nothing
    y.mul_(10.0)
    z.sum().backward()
    close(x.grad, [2.0, 2.0, 2.0])


def test_inplace_on_leaf_requiring_grad_raises(lib):
    x = leaf(lib, X)
    v0 = x._version
    with pytest.raises(
        RuntimeError,
        match="a leaf Variable that requires grad is being used in an in-place operation",
    ):
        x.add_(1.0)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.mul_(leaf(lib, [2.0, 2.0, 2.0], False))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.narrow(0, 0, 1).zero_()
    close(x, X)
    assert x._version == v0


def test_inplace_on_leaf_under_no_grad_is_allowed(lib):
    w = leaf(lib, X)
    (w * w).sum().backward()
    v0 = w._version
    with lib.no_grad():
        w.sub_(w.grad * 0.5)
    close(w, XA - XA)  # w - 0.5 * 2w
    assert w._version == v0 + 1
    assert w.is_leaf and w.requires_grad and w.grad_fn is None


def test_inplace_operator_keeps_object(lib):
    x = leaf(lib, X, requires_grad=False)
    ident = id(x)
    x += 1.0
    x *= 2.0
    x -= 1.0
    x /= 2.0
    assert id(x) == ident
    close(x, ((XA + 1) * 2 - 1) / 2)


def test_inplace_records_history_on_non_leaf(lib):
    x = leaf(lib, X)
    y = x * 1.0
    y.mul_(x)  # y = x^2
    y.add_(x)  # y = x^2 + x
    y.sum().backward()
    close(x.grad, 2 * XA + 1)
    assert y._version == 2


def test_inplace_on_view_propagates_to_base(lib):
    x = leaf(lib, [1.0, 2.0, 3.0, 4.0])
    y = x * 1.0
    y.narrow(0, 1, 2).mul_(3.0)
    close(y, [1.0, 6.0, 9.0, 4.0])
    y.sum().backward()
    close(x.grad, [1.0, 3.0, 3.0, 1.0])


def test_detach_shares_storage_and_version(lib):
    x = leaf(lib, X)
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    d.zero_()
    close(x, [0.0, 0.0, 0.0])
    assert x._version == d._version == 1


# ---------------------------------------------------------------------------
# Grad mode
# ---------------------------------------------------------------------------


def test_no_grad_blocks_recording(lib):
    x = leaf(lib, X)
    with lib.no_grad():
        y = x * 2
        assert not lib.is_grad_enabled()
        with lib.enable_grad():
            z = x * 2
    assert lib.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn is not None
    close(y, 2 * XA)


def test_no_grad_decorator_and_set_grad_enabled(lib):
    x = leaf(lib, X)

    @lib.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad
    with lib.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert lib.is_grad_enabled()
    lib.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        lib.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_inference_mode(lib):
    x = leaf(lib, X)
    with lib.inference_mode():
        y = x * 2
        assert lib.is_inference_mode_enabled()
    assert not lib.is_inference_mode_enabled()
    assert not y.requires_grad


def test_grad_mode_is_thread_local(lib):
    seen = {}

    def other():
        seen["enabled"] = lib.is_grad_enabled()

    with lib.no_grad():
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen["enabled"] is True


# ---------------------------------------------------------------------------
# Graph metadata
# ---------------------------------------------------------------------------


def test_requires_grad_propagation_and_leaves(lib):
    a = leaf(lib, X)
    b = leaf(lib, X, requires_grad=False)
    c = a * b
    d = b * 2
    assert c.requires_grad and not c.is_leaf
    assert not d.requires_grad and d.is_leaf
    assert a.is_leaf and b.is_leaf


def test_grad_fn_graph_structure(lib):
    x = leaf(lib, X)
    y = leaf(lib, X)
    z = x * y + x
    assert z.grad_fn.name() == "AddBackward0"
    (mul, _), (acc, _) = z.grad_fn.next_functions
    assert mul.name() == "MulBackward0"
    # torch names it "torch::autograd::AccumulateGrad"
    assert acc.name().endswith("AccumulateGrad")
    assert all(n.name().endswith("AccumulateGrad") for n, _ in mul.next_functions)
    assert acc == mul.next_functions[0][0]  # x's accumulator, reached twice
    assert not (acc == mul.next_functions[1][0])  # y's


def test_requires_grad_only_on_leaves(lib):
    x = leaf(lib, X)
    y = x * 2
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf variables"):
        y.requires_grad = False
    y.detach().requires_grad = True  # a detached tensor is a leaf again
