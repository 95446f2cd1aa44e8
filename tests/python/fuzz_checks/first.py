# ruff: noqa: S102 - the checks exec snippets
"""Regression checks of the differential fuzzer's mismatches, first part:
the ones fixed meanwhile and the first reported (see test_fuzz_regressions.py).
"""

import fuzz_programs as fp
import pytest

from .common import name, raises, run

# ---- fixed meanwhile or being fixed (overlap checks, view + in-place rules, max with NaN, unflatten, grad's inputs)


def check_overlap(lib):
    raises(lib, "b = torch.zeros(8)\nb[1:6].add_(b[0:5])", RuntimeError)


def check_overlap_too_strict(lib):
    ns = run(
        lib,
        "x = torch.tensor([[1.0], [2.0]]).expand(2, 3)\nx.zero_()\nx.fill_(2)\ny = torch.tensor(2.0)\ny[None] = y",
    )
    assert ns["x"].tolist() == [[2.0] * 3] * 2


def check_multi_output_view_inplace(lib):
    raises(
        lib,
        "x = torch.ones(2, 2, requires_grad=True) * 1\na, b = x.unbind(0)\na.mul_(2)",
        RuntimeError,
    )


def check_no_grad_view_inplace(lib):
    raises(
        lib,
        "x = torch.ones(3, requires_grad=True) * 1\nwith torch.no_grad():\n    v = x[:2]\nv.mul_(2)",
        RuntimeError,
    )


def check_no_grad_view_requires_grad(lib):
    ns = run(
        lib,
        "x = torch.ones(3, requires_grad=True)\nwith torch.no_grad():\n    v = x[:2]\nv.retain_grad()",
    )
    assert ns["v"].requires_grad and ns["v"].is_leaf and ns["v"].grad_fn is None


def check_unflatten_missing(lib):
    assert run(lib, "y = torch.ones(6).unflatten(0, (2, 3))")["y"].shape == (2, 3)


def check_grad_empty_inputs(lib):
    raises(
        lib, "x = torch.ones(2, requires_grad=True)\ntorch.autograd.grad(x.sum(), ())", RuntimeError
    )


def check_max_nan_grad(lib):
    src = """
t0 = torch.tensor([[[[float('nan'), -1.25]]], [[[0.75, -2.0]]], [[[-0.25, -2.0]]]], requires_grad=True)
t1 = torch.cumsum(t0, dim=1)
t3 = torch.tensor([1.75, 0.25], requires_grad=True)
t5 = t1.maximum(t3).softmax(3)
g, = torch.autograd.grad(t5.sum(), t1)
"""
    g = run(lib, src)["g"].tolist()
    assert g[0][0][0][1] == 0.0


# ---- reported by the fuzzer


def check_restricted_view_base_modified(lib):
    src = """
class ViewOut(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g

t1 = torch.tensor([1.5], requires_grad=True)
t2 = ViewOut.apply(t1)
with torch.no_grad():
    t1.mul_(2)
"""
    ns = run(lib, src)
    with pytest.raises(RuntimeError, match="its base or another view of its base"):
        _ = ns["t2"].grad_fn


def check_restricted_view_error_order(lib):
    # torch raises the view's error before the op looks at its arguments
    src = "x = torch.ones(2, 3, requires_grad=True) * 1\na, b = x.unbind(0)\nwith torch.no_grad():\n    x.mul_(2)"
    ns = run(lib, src)
    with pytest.raises(RuntimeError, match="its base or another view of its base"):
        ns["a"].softmax(-4)
    with pytest.raises(RuntimeError, match="its base or another view of its base"):
        ns["a"].view(7)


def check_view_regen(lib):
    # a view of a base modified in place must see the new history (torch: AsStridedBackward0)
    src = """
x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
y = x * 1
v = y[0]
y.mul_(2)
(v * torch.tensor([1.0, 5.0])).sum().backward()
"""
    ns = run(lib, src)
    assert ns["x"].grad.tolist() == [[2.0, 10.0], [0.0, 0.0]]
    assert name(ns["v"]) == "AsStridedBackward0"
    # the modified view itself: x[0, :] = 2 through a permuted view
    src = "x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)\nt = (x * 1).permute(1, 0)\nt[0, :] = 2\n(t * torch.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()"
    assert run(lib, src)["x"].grad.tolist() == [[0.0, 3.0], [0.0, 4.0]]
    # requires_grad_() on a base: its views require grad too
    ns = run(lib, "b = torch.ones(2, 3)\nv = b.movedim(1, 0)\nb.requires_grad_()")
    assert ns["v"].requires_grad


def check_flatten_returns_self(lib):
    ns = run(lib, "x = torch.tensor([-1.0], requires_grad=True)\ny = x.flatten()")
    assert ns["y"] is ns["x"]


def check_transpose_0d_panic(lib):
    ns = run(lib, "x = torch.tensor(1.5, requires_grad=True)\na = x.t()\nb = x.transpose(0, -1)")
    assert ns["a"].shape == () and ns["b"].shape == ()


def check_nonfloat_target_requires_grad(lib):
    ns = run(
        lib, "m = torch.tensor([1.0, 2.0]) == 1\nm[::2] = torch.tensor([1.25], requires_grad=True)"
    )
    assert not ns["m"].requires_grad


def check_inplace_drops_requires_grad(lib):
    ns = run(
        lib,
        "a = torch.tensor([1.0, 2.0], requires_grad=True)\nb = a * 1\nb.copy_(torch.tensor([5.0, 6.0]))",
    )
    assert ns["b"].requires_grad and name(ns["b"]) == "CopyBackwards"
    ns = run(lib, "a = torch.tensor([1.0, 2.0], requires_grad=True)\nb = a * 1\nb.zero_()")
    assert ns["b"].requires_grad
    src = "a = torch.tensor(1.0, requires_grad=True)\nb = a * 1\nw = torch.tensor(3.0, requires_grad=True)\nb.fill_(w)\nb.backward()"
    assert run(lib, src)["w"].grad.item() == 1.0


def check_dirty_view_of_leaf(lib):
    raises(
        lib,
        "x = torch.ones(4, 1, 2)[::2].requires_grad_()\nv = x.narrow(-1, 1, 0)\nDirty.apply(v)",
        RuntimeError,
    )


def check_dirty_version(lib):
    ns = {"torch": lib, **fp.make_functions(lib)}
    exec("x = torch.ones(3, requires_grad=True)", ns)
    try:
        ns["Dirty"].apply(ns["x"])  # a leaf: raises after the forward ran
    except RuntimeError:
        pass
    assert ns["x"]._version == 2


def check_requires_grad_false_after_use(lib):
    ns = run(
        lib,
        "x = torch.tensor(0.5, requires_grad=True)\ny = x.atan()\nx.requires_grad_(False)\ny.backward()",
    )
    assert ns["x"].grad is None
    ns = run(
        lib, "x = torch.tensor(0.5, requires_grad=True)\ny = x.atan()\nx.detach_()\ny.backward()"
    )
    assert ns["x"].grad is None


def check_permute_wrong_len(lib):
    raises(lib, "x = torch.ones(4)\nx.permute(0, 1)", RuntimeError)


def check_none_argument(lib):
    raises(lib, "torch.split(None, 3, -2)", AttributeError)
    raises(
        lib,
        "x = torch.tensor(1.0, requires_grad=True)\ntorch.autograd.grad(x * 2, (None,))",
        RuntimeError,
    )
    raises(
        lib,
        "x = torch.tensor(1.0, requires_grad=True)\n(x * 2).backward(inputs=[x, 3])",
        RuntimeError,
    )
    raises(
        lib,
        "x = torch.tensor(1.0, requires_grad=True)\ntorch.autograd.grad((None,), x)",
        AssertionError,
    )
    raises(
        lib,
        "x = torch.tensor(1.0, requires_grad=True)\ntorch.autograd.grad(x * 2, x, grad_outputs=(3,))",
        TypeError,
    )


def check_contiguous_empty(lib):
    ns = run(lib, "x = torch.zeros((2, 0), requires_grad=True)\ny = x.contiguous()")
    assert ns["y"] is ns["x"]


def check_inf_grad_nan(lib):
    src = """
t1 = torch.tensor([[1.0, 0.25], [0.75, 1.75], [0.25, float('nan')]]).transpose(1, 0)
t2 = torch.tensor([[float('inf'), -1.0, 1.75]], requires_grad=True)
t1.scatter_add_(0, torch.tensor([[0, 0, 0]]), t2)
t1[[1]] = t2
t4 = torch.permute(t1, (-2, -1))
(t4 * t4).sum().backward()
"""
    assert run(lib, src)["t2"].grad.tolist()[0] == [float("inf"), -2.5, 7.5]


def check_expanded_grad(lib):
    src = "x = torch.ones(4, 3, dtype=torch.float64, requires_grad=True).t()\ny = torch.where(x > 0, x, x)\ny.retain_grad()\ntorch.autograd.grad(y.sum(), (x,), create_graph=True)"
    assert run(lib, src)["y"].grad.stride() == (4, 1)


def check_atan2_origin_grad(lib):
    ns = run(
        lib, "x = torch.tensor([0.0, 1.0], requires_grad=True)\ntorch.atan2(x, x).sum().backward()"
    )
    assert ns["x"].grad.tolist() == [0.0, 0.0]


def check_saved_output_modified(lib):
    raises(
        lib,
        "x = torch.tensor([1.5, 2.0], requires_grad=True)\np = x.prod()\np[...] = 0.5\n(p + 0.5).backward()",
        RuntimeError,
    )


def check_second_backward_lenient(lib):
    src = """
t0 = torch.tensor([[1.5, 0.25]]).expand(4, 2).requires_grad_()
t6 = t0.contiguous()
t6[:, 4::3] = torch.zeros((0, 1), dtype=torch.int64)
t9 = t6 + 1
(t6 * t6).sum().backward()
t9.sum().backward()
"""
    raises(lib, src, RuntimeError)


def check_int_float_alpha(lib):
    raises(lib, "torch.sub(torch.tensor([0]), torch.tensor(1), alpha=-0.5)", RuntimeError)


def check_spurious_view_rebase(lib):
    ns = run(
        lib,
        "a = torch.tensor([1.5], requires_grad=True)\nm = torch.ones(1, 3)\ny = torch.matmul(a, m)\ny.masked_fill_(y > 0, -1)",
    )
    assert name(ns["y"]) == "MaskedFillBackward0"
    ns = run(
        lib,
        "x = torch.ones(2, 3).t().requires_grad_()\nd = x.detach()\nd.index_put_((torch.tensor([0]),), x[torch.tensor([1])])",
    )
    assert name(ns["d"]) == "IndexPutBackward0"


def check_error_precedence(lib):
    raises(lib, "torch.zeros((0, 2)).amax((-2, -2))", IndexError)
    raises(lib, "torch.zeros((0, 2)).amin((1, 1, -2))", IndexError)
    raises(lib, "torch.zeros((0, 2)).amax((5, 0))", IndexError)
    raises(lib, "torch.zeros((0, 2)).amax((-1, -1))", RuntimeError)


def check_empty_split_panic(lib):
    ns = run(
        lib,
        "x = torch.zeros((3, 0), requires_grad=True)\na, b = torch.split(x, 2, 0)\nc = b.sqrt()",
    )
    assert ns["c"].shape == (1, 0)


def check_failed_backward_partial_grads(lib):
    # not a bug: both raise; what .grad holds afterwards is unspecified (engine order)
    src = "x = torch.tensor([1.0, 2.0], requires_grad=True)\np = (x * 1).prod(0)\np.add_(1)\np.backward()"
    raises(lib, src, RuntimeError)


def check_std_zero_grad(lib):
    ns = run(lib, "x = torch.tensor([[-1.5]]).expand(1, 3).requires_grad_()\nx.std().backward()")
    assert ns["x"].grad.tolist() == [[0.0, 0.0, 0.0]]


def check_index_output_strides(lib):
    ns = run(lib, "x = torch.ones(3, 2, 2, 2).transpose(2, 0)\ny = x[torch.tensor([1])]")
    assert ns["y"].stride()[1:] == (2, 4, 1)


def check_flatten_returns_self_more(lib):
    # flatten with start == end returns the tensor itself, a 0-d one a view;
    # its dims are checked first (a 0-d tensor takes dims -1 and 0 only)
    ns = run(
        lib,
        "x = torch.ones(2, 3).t()\ny = x.flatten(1, -1)\ns = torch.tensor(1.0)\nz = s.flatten()",
    )
    assert ns["y"] is ns["x"] and ns["z"] is not ns["s"] and ns["z"].shape == (1,)
    raises(lib, "torch.tensor(1.0).flatten(1)", IndexError)
    # the other ops torch returns their input from: a dtype conversion to
    # the dtype it has, atleast_nd of a tensor with n dims
    ns = run(lib, "x = torch.ones(2, 3)\ny = torch.ones(2, dtype=torch.int64)")
    x, y = ns["x"], ns["y"]
    assert x.float() is x and x.type_as(x) is x and y.long() is y
    assert lib.atleast_1d(x) is x and lib.atleast_2d(x) is x and x.double() is not x


def check_contiguous_empty_more(lib):
    # every empty tensor is contiguous, whatever its strides
    ns = run(lib, "x = torch.zeros(2, 0).t()\ny = x.contiguous()")
    assert ns["x"].is_contiguous() and ns["y"] is ns["x"] and ns["x"].stride() == (1, 1)


def check_empty_grad_strides(lib):
    # an empty result of an elementwise op is laid out contiguously, as
    # torch's TensorIterator (its inputs all count as contiguous)
    src = """
x = torch.zeros(2, 0, requires_grad=True)
g, = torch.autograd.grad((x * 2).sum(), x, create_graph=True)
x2 = torch.zeros(0, 3, requires_grad=True).t()
g2, = torch.autograd.grad((x2 * 2).sum(), x2)
"""
    ns = run(lib, src)
    assert ns["g"].stride() == (1, 1) and ns["g2"].stride() == (1, 1)


def check_mean_grad_dense(lib):
    # MeanBackward divides after expanding: a dense gradient (sum's stays
    # expanded)
    src = """
x = torch.ones(2, 3, requires_grad=True)
g, = torch.autograd.grad(x.mean(), x)
g1, = torch.autograd.grad(x.mean(1).sum(), x, create_graph=True)
g2, = torch.autograd.grad(x.sum(), x)
"""
    ns = run(lib, src)
    assert ns["g"].stride() == (3, 1) and ns["g1"].stride() == (3, 1)
    assert ns["g2"].stride() == (0, 0)
    assert ns["g"].tolist() == [[ns["g"][0, 0].item()] * 3] * 2


def check_cast_error_message(lib):
    # torch names the dtypes by their ScalarType names
    for src in [
        "y = torch.ones(3, dtype=torch.int64)\ny.add_(torch.tensor([1.5]))",
        "y = torch.ones(3, dtype=torch.int64)\ny.sqrt_()",
        "y = torch.ones(3, dtype=torch.int64)\ntorch.add(torch.ones(3), 1, out=y)",
    ]:
        with pytest.raises(
            RuntimeError, match="result type Float can't be cast to the desired output type Long"
        ):
            run(lib, src)
    with pytest.raises(
        RuntimeError, match="result type Long can't be cast to the desired output type Bool"
    ):
        run(lib, "y = torch.ones(3, dtype=torch.bool)\ny.add_(torch.tensor(1))")


def check_restricted_view_error_order_more(lib):
    # the view's error wins over a bad argument wherever torch's autograd
    # collects the op's edges before its kernel checks (most ops); torch's
    # composite ops (flatten, narrow, movedim, chunk, indexing by an int)
    # check their arguments first
    src = "x = torch.ones(2, 3, 4, requires_grad=True) * 1\na, b = x.unbind(0)\nwith torch.no_grad():\n    x.mul_(2)"
    for expr in [
        "a.sum(5)",
        "a.amax(5)",
        "a.std(5)",
        "a.cumsum(5)",
        "a.transpose(0, 5)",
        "a.permute(0, 0)",
        "a.expand(5, 4)",
        "a.unsqueeze(5)",
        "a.select(0, 9)",
        "a.unbind(5)",
        "a.split(0, 5)",
        "a.mm(torch.ones(5, 2))",
        "a[torch.tensor([9])]",
        "a.index_select(0, torch.tensor([9]))",
        "torch.cat([a, torch.ones(5)])",
        "a.diagonal(0, 0, 0)",
        "a.sort(5)",
    ]:
        with pytest.raises(RuntimeError, match="its base or another view of its base"):
            run(lib, f"{src}\n{expr}")
    for expr, exc in [
        ("a.flatten(5)", IndexError),
        ("a.narrow(0, 0, 9)", RuntimeError),
        ("a.movedim(0, 5)", IndexError),
        ("a.chunk(0)", RuntimeError),
        ("a[9]", IndexError),
        ("a.argmax(5)", IndexError),
    ]:
        raises(lib, f"{src}\n{expr}", exc)


def check_binary_view_error_order(lib):
    src = "x = torch.ones(2, 3, 4, requires_grad=True) * 1\na, b = x.unbind(0)\nwith torch.no_grad():\n    x.mul_(2)"
    for expr in [
        "a + torch.ones(5)",
        "torch.ones(5) + a",
        "a * torch.ones(5)",
        "a - True",
        "True - a",
        "torch.tensor(True) - a",
        "torch.atan2(a, torch.ones(5))",
        "torch.where(a > 0, a, torch.ones(5))",
        "a.maximum(torch.ones(5))",
        "a.pow(torch.ones(5))",
        "a.pow(-1)",
        "2 ** a",
        "a.clamp(torch.ones(5))",
        "a.clamp(torch.ones(5), torch.ones(4))",
        "a.clamp(None, None)",
    ]:
        with pytest.raises(RuntimeError, match="its base or another view of its base"):
            run(lib, f"{src}\n{expr}")
    # a comparison records nothing: its own error
    with pytest.raises(RuntimeError, match="must match the size"):
        run(lib, f"{src}\na > torch.ones(5)")


def check_grad_unreachable_view(lib):
    # a view made under no_grad of a leaf requires grad (through its base)
    # but has no edge: autograd.grad finds it unused, backward(inputs=)
    # leaves everything alone
    src = "x = torch.ones(3, requires_grad=True)\nwith torch.no_grad():\n    v = x[:2]\n"
    ns = run(lib, src + "g = torch.autograd.grad((x * 2).sum(), v, allow_unused=True)")
    assert ns["g"] == (None,)
    with pytest.raises(
        RuntimeError, match="The differentiated Tensor at index 0 appears to not have been used"
    ):
        run(lib, src + "torch.autograd.grad((v * 2).sum(), v)")
    ns = run(lib, src + "(v * 2).sum().backward(inputs=[v])")
    assert ns["v"].grad is None and ns["x"].grad is None
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears"):
        run(
            lib,
            "x = torch.ones(3, requires_grad=True)\ny = torch.ones(3, requires_grad=True)\ntorch.autograd.grad(x.sum(), (x, y))",
        )


def check_saved_detached_inplace(lib):
    # an op's saved input (not a leaf when saved) detach_()ed before backward
    raises(
        lib,
        "x = torch.ones(3, requires_grad=True)\ny = x * 1\nz = (y * y).sum()\ny.detach_()\nz.backward()",
        RuntimeError,
    )
    with pytest.raises(RuntimeError, match="has been detached in-place"):
        run(
            lib,
            "x = torch.ones(3, requires_grad=True)\ny = x * 1\nz = y.sin().sum()\ny.detach_()\nz.backward()",
        )
    # a view of it saved instead: its own grad_fn is still there
    ns = run(
        lib,
        "x = torch.ones(3, requires_grad=True)\ny = x * 1\nv = y[:2]\nz = (v * v).sum()\ny.detach_()\nz.backward()",
    )
    assert ns["x"].grad.tolist() == [2.0, 2.0, 0.0]


def check_mask_put_as_masked_fill(lib):
    # index_put_ of a one-element value under one bool mask is masked_fill_
    # with the value as a number: any dtype, any shape, the mask may be self
    ns = run(lib, "m = torch.tensor([True, False, True])\nm[m] = torch.tensor(0.5)")
    assert ns["m"].tolist() == [True, False, True] and ns["m"]._version == 1
    ns = run(lib, "m = torch.tensor([1, 2, 3])\nm[m > 1] = torch.tensor(2.7)")
    assert ns["m"].tolist() == [1, 2, 2]
    ns = run(
        lib, "m = torch.zeros(2, 3)\nm[:, torch.tensor([True, False, True])] = torch.ones(1, 1, 1)"
    )
    assert ns["m"].tolist() == [[1.0, 0.0, 1.0]] * 2
    ns = run(
        lib,
        "m = torch.zeros(3)\nw = torch.tensor([2.0], requires_grad=True)\ny = m.index_put((m == 0,), w)\ny.sum().backward()",
    )
    assert ns["y"].tolist() == [2.0] * 3 and ns["w"].grad.tolist() == [3.0]
    # two indices, or accumulate: index_put_'s own dtype check
    raises(
        lib,
        "m = torch.zeros(2, 2, dtype=torch.int64)\nk = torch.tensor([True, False])\nm[k, k] = torch.tensor(2.5)",
        RuntimeError,
    )
    raises(
        lib,
        "m = torch.zeros(2, dtype=torch.int64)\nm.index_put_((m == 0,), torch.tensor(2.5), accumulate=True)",
        RuntimeError,
    )
