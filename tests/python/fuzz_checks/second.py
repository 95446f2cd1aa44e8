"""Regression checks of the differential fuzzer's mismatches, second part
(see test_fuzz_regressions.py).
"""

import math
import struct

import ferrograd
import pytest

from .common import name, raises, run


def check_base_identity(lib):
    # a view's _base is the very object it was made from (of a view: that
    # view's base)
    ns = run(
        lib,
        "t1 = torch.ones(2, 3)\nv = t1[0]\nw = v[1:]\na, b = t1.unbind(0)\nu = t1.t().unsqueeze(0).view(3, 2)",
    )
    t1 = ns["t1"]
    assert all(ns[k]._base is t1 for k in ("v", "w", "a", "b", "u"))
    assert t1._base is None and t1.expand(2, 2, 3)._base is t1 and t1.narrow(1, 0, 2)._base is t1
    assert lib.transpose(t1, 0, 1)._base is t1 and t1.movedim(0, 1)._base is t1


def check_setitem_0d_onto_itself(lib):
    # x[None] = x of a 0-dim x is fill_(x): torch copies a clone of a value
    # that aliases self (long-run seeds 700279, 700522)
    src = "t1 = torch.tensor(1.25, dtype=torch.float64, requires_grad=True)\nt12 = t1 ** 2\nt12[None] = t12\nt12.backward()"
    ns = run(lib, src)
    assert ns["t12"].item() == 1.5625 and ns["t12"]._version == 1 and ns["t1"].grad.item() == 2.5


def check_full_extreme_nan_grad(lib):
    # max()/min() write their gradient into zeros (evenly_distribute_backward):
    # a NaN or inf gradient reaches the extreme elements only (seeds 704564,
    # 701564); amax multiplies by the mask, NaN everywhere
    src = "t1 = torch.tensor([[-1.0, -0.75], [-0.5, 2.0]], requires_grad=True)\nt12 = t1.min().std()\n(t12 * t12).backward()"
    g = run(lib, src)["t1"].grad.tolist()
    assert repr(g) == repr([[float("nan"), 0.0], [0.0, 0.0]])
    src = "t1 = torch.tensor([1.0, 3.0, 3.0], requires_grad=True)\n(t1.max() * float('inf')).backward()"
    assert run(lib, src)["t1"].grad.tolist() == [0.0, float("inf"), float("inf")]
    src = "t1 = torch.tensor([1.0, 3.0], requires_grad=True)\nt1.amax(0).std().backward()"
    assert repr(run(lib, src)["t1"].grad.tolist()) == repr([float("nan")] * 2)


def check_reduction_dims_order(lib):
    # var/std/nansum check their dims one by one (a repeat before a later dim
    # out of range, seed 700268); sum/mean wrap them all first; a 0-dim
    # tensor takes dim 0 once
    raises(lib, "torch.zeros(2, 3).var((1, -1, 5))", RuntimeError)
    raises(lib, "torch.zeros(2, 3).std((1, -1, 5))", RuntimeError)
    raises(lib, "torch.zeros(2, 3).sum((1, -1, 5))", IndexError)
    raises(lib, "torch.tensor(1.0).sum((0, -1))", RuntimeError)
    raises(lib, "torch.tensor(1.0).amax((0, 0))", RuntimeError)
    assert run(lib, "y = torch.tensor(2.0).sum((-1,))")["y"].item() == 2.0


def check_binary_output_strides(lib):
    # the dims TensorIterator prepends to an operand have stride 0 and do not
    # order the output (seed 702729)
    src = """
t2 = torch.tensor([[-2.0], [0.75], [-1.0], [1.0]]) + torch.tensor([[0.0, 1.5, -2.0, 0.0]]).transpose(1, 0)
t5 = t2.transpose(-2, 1).unsqueeze(-3)
t9 = torch.maximum(t5, t2)
t10 = t5 * t2
"""
    ns = run(lib, src)
    assert ns["t9"].stride() == (1, 1, 4) and ns["t10"].stride() == (1, 1, 4)


def check_cumsum_trivial_grad(lib):
    # cumsum's backward returns the gradient itself when there is nothing to
    # sum: here an expanded (view) gradient, which detach_() refuses (seed
    # 701794)
    src = """
t1 = torch.zeros((0, 0), dtype=torch.float64, requires_grad=True)
t3 = t1.mean((-1,))
t8 = t3.cumsum(0)
t9, t10 = torch.autograd.grad(t8.sum(), (t3, t8), allow_unused=True)
t9.detach_()
"""
    raises(lib, src, RuntimeError)


def check_var_no_dof_grad(lib):
    # var/std over everything without degrees of freedom: torch's backward is
    # grad * where(self == mean, NaN, inf), a constant in self (seed 703678)
    src = "t11 = torch.tensor(-2.0, requires_grad=True)\nt17 = t11.flatten().var()\nt20, = torch.autograd.grad(t17, (t11,), create_graph=True)"
    t20 = run(lib, src)["t20"]
    assert not t20.requires_grad and repr(t20.item()) == "nan"
    src = "x = torch.tensor([3.0], requires_grad=True)\ng, = torch.autograd.grad(x.std(), x, create_graph=True)"
    g = run(lib, src)["g"]
    assert repr(g.tolist()) == "[nan]"


def check_setitem_same_shape_onto_itself(lib):
    # torch's copy_to copies a value of the target's very shape as it is,
    # before dropping its leading size-1 dims: onto its very same data that
    # is allowed (long-run seeds 705044, 705575)
    ns = run(
        lib,
        "t0 = torch.tensor(0.5)\nt1 = t0.unsqueeze(-1)\nt1[:] = t1\nt2 = torch.ones(1, 3)\nt2[0::1] = t2",
    )
    assert ns["t1"].tolist() == [0.5] and ns["t1"]._version == 1 and ns["t2"]._version == 1
    src = "t7 = torch.tensor([1.25], requires_grad=True) * 1\nwith torch.no_grad():\n    t7[0::1] = t7"
    assert run(lib, src)["t7"].tolist() == [1.25]


def check_index_put_expanded_recorded(lib):
    # index_put_ may write an expanded self (torch warns it is deprecated),
    # recorded or not (seeds 706914, 709464)
    src = """
t2 = torch.tensor([0.25]).expand(4)
t9 = torch.tensor(-1.5, requires_grad=True)
t2.index_put_((torch.tensor([1, 2]),), t9, accumulate=True)
"""
    ns = run(lib, src)
    assert ns["t2"].requires_grad and ns["t2"]._version == 1
    # the indexed elements are one element: it gets both additions
    assert ns["t2"].tolist() == [-2.75] * 4
    assert name(ns["t2"]) == "AsStridedBackward0"
    ns = run(
        lib,
        src.replace("t9, accumulate", "t9 * 1, accumulate")
        + "(t2 * torch.arange(4.0)).sum().backward()",
    )
    # the view's gradient is summed into the one element, which the
    # IndexPutBackward0 then reads at both indices (torch's CopySlices)
    assert ns["t9"].grad.item() == 12.0
    # the expanded target of a recorded index_put_ / masked_fill_ / index_fill_
    pre = "b = torch.tensor([1.0, 2.0], requires_grad=True)\nt = (b * 1)[:, None].expand(2, 3)\n"
    for op, want in [
        ("t.index_put_((torch.tensor([0]),), torch.tensor(3.0))", [[3.0] * 3, [2.0] * 3]),
        ("t.index_put_((torch.tensor([True, False]),), torch.tensor(3.0))", [[3.0] * 3, [2.0] * 3]),
        ("t.masked_fill_(torch.tensor([True, False, False]), 3.0)", [[3.0] * 3] * 2),
        ("t.masked_fill_(torch.tensor([True, False, False]), torch.tensor(3.0))", [[3.0] * 3] * 2),
        ("t.index_fill_(1, torch.tensor([0]), 5.0)", [[5.0] * 3] * 2),
        (
            "t.index_fill_(1, torch.tensor([2]), torch.tensor(5.0, requires_grad=True))",
            [[5.0] * 3] * 2,
        ),
    ]:
        ns = run(lib, pre + op)
        assert ns["t"].tolist() == want and name(ns["t"]) == "AsStridedBackward0", op
        # backward: the old value's gradient cannot be written into the
        # expanded slice of the base's gradient (torch's CopySlices copy_)
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            run(lib, pre + op + "\nt.sum().backward()")
    # other in-place ops still refuse an expanded target
    for op in ["t.mul_(2)", "t.index_add_(1, torch.tensor([0]), torch.ones(2, 1))"]:
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            run(lib, pre + op)


def check_expanded_view_backward(lib):
    # backward through an expanded view whose base was modified in place
    # (its history rebuilt as AsStridedBackward0): the gradients of the
    # elements that share memory add up (torch's as_strided_backward)
    w = "(t * torch.tensor([1.0, 2.0, 3.0])).sum().backward()"
    for body in [
        "t = b[:, None].expand(2, 3)\nwith torch.no_grad():\n    t.index_fill_(1, torch.tensor([0]), 5.0)",
        "h = b * 1\nt = h[:, None].expand(2, 3)\nwith torch.no_grad():\n    t.index_fill_(1, torch.tensor([0]), 5.0)",
        "t = b[:, None].expand(2, 3)\nwith torch.no_grad():\n    b.mul_(2)",
    ]:
        ns = run(lib, f"b = torch.tensor([1.0, 2.0], requires_grad=True)\n{body}\n{w}")
        assert name(ns["t"]) == "AsStridedBackward0"
        assert ns["b"].grad.tolist() == [6.0, 6.0], body


def check_sub_bool_scalar(lib):
    # a Python bool in a subtraction is a bool operand, as in torch
    msg = "Subtraction, the `-` operator, with a bool tensor is not supported"
    for src in [
        "torch.tensor([1.0, 2.0]) - True",
        "True - torch.tensor([1.0])",
        "torch.tensor([1, 2]).sub(False)",
        "x = torch.tensor([1, 2])\nwith torch.no_grad():\n    x.sub_(True)",
    ]:
        with pytest.raises(RuntimeError, match=msg):
            run(lib, src)
    with pytest.raises(RuntimeError, match="with two bool tensors"):
        run(lib, "torch.tensor([True]) - True")
    # a bool number is the lowest category: the tensor's dtype stays
    ns = run(
        lib,
        "a = torch.tensor([1, 2]) + True\nb = torch.tensor([1.5]) * True\nc = torch.tensor([True]) + True\n"
        "d = torch.tensor(3) / True\ne = torch.tensor([1.0]) == True",
    )
    assert ns["a"].dtype == lib.int64 and ns["a"].tolist() == [2, 3]
    assert ns["b"].dtype == lib.float32 and ns["b"].tolist() == [1.5]
    assert ns["c"].dtype == lib.bool and ns["c"].tolist() == [True]
    assert ns["d"].dtype == lib.float32 and ns["d"].item() == 3.0
    assert ns["e"].tolist() == [True]


def check_alpha_ops(lib):
    # add/sub with alpha are one node that saves nothing (seed 901501: a
    # second backward through it is fine), checked as torch: the bool
    # subtraction (seeds 900590, 901265), then alpha against the result type
    ns = run(
        lib,
        """
t0 = torch.tensor(-0.25, dtype=torch.float64, requires_grad=True)
t1 = t0 + 2
t1.sub_(t0, alpha=2)
t1.backward(torch.ones_like(t1))
g, = torch.autograd.grad(t1.sum(), t0)
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = torch.tensor([3.0], requires_grad=True)
z = torch.sub(x, y, alpha=3)
z.sum().backward()
""",
    )
    assert ns["g"].item() == -1.0 and ns["t0"].grad.item() == -1.0
    assert name(ns["t1"]) == "SubBackward0" and name(ns["z"]) == "SubBackward0"
    assert ns["z"].tolist() == [-8.0, -7.0] and ns["y"].grad.tolist() == [-6.0]
    for src, msg in [
        ("torch.sub(torch.tensor([5]), torch.tensor([True]), alpha=2)", "with a bool tensor"),
        ("torch.tensor([5]).sub(torch.tensor([True]), alpha=2)", "with a bool tensor"),
        ("x = torch.tensor([5])\nx.sub_(torch.tensor([True]), alpha=2)", "with a bool tensor"),
        ("torch.add(torch.tensor([5]), torch.tensor([True]), alpha=True)", "Boolean alpha"),
        ("torch.add(torch.tensor([5]), torch.tensor([1]), alpha=1.5)", "alpha must not be"),
        ("b = torch.zeros(8)\nb[1:6].add_(b[0:5], alpha=2)", "some elements of the input"),
    ]:
        with pytest.raises(RuntimeError, match=msg):
            run(lib, src)
    # alpha in the result type: a bool result takes an int alpha (seed 904894)
    ns = run(
        lib,
        "a = torch.tensor([True, False])\na.add_(a, alpha=2)\n"
        "b = torch.add(torch.tensor([5]), torch.tensor([True]), alpha=2)\n"
        "c = torch.tensor([True]).add(torch.tensor([False]), alpha=True)\n"
        "d = torch.add(torch.tensor([1.0]), torch.tensor([1]), alpha=0.5)",
    )
    assert ns["a"].tolist() == [True, False] and ns["b"].tolist() == [7]
    assert ns["c"].tolist() == [True] and ns["d"].tolist() == [1.5]


def check_cast_keeps_size1_strides(lib):
    # a dense tensor's copy (a cast, clone) keeps the strides of its size-1
    # dims, which order a later output's dims as in torch (seed 901113)
    ns = run(
        lib,
        """
t5 = torch.tensor([[2.0], [1.0], [2.0]], requires_grad=True)
t7 = torch.tensor([[[2, -3]]]).transpose(2, 0)
t8 = t5 + t7
c = t7.float()
""",
    )
    assert ns["t7"].stride() == (1, 2, 2) and ns["c"].stride() == (1, 2, 2)
    assert ns["t8"].shape == (2, 3, 1) and ns["t8"].stride() == (1, 2, 6)


def check_softmax_dim_before_dtype(lib):
    # the dim is checked before the dtype's kernel (seed 905039)
    with pytest.raises(IndexError, match="Dimension out of range"):
        run(lib, "torch.tensor([[True]]).log_softmax(4)")
    for src, kernel in [
        ("torch.tensor([[1, 5]]).softmax(0)", '"softmax_kernel_impl"'),
        ("torch.tensor([[1, 5]]).softmax(-1)", '"softmax_lastdim_kernel_impl"'),
        ("torch.tensor([[1, 5]]).log_softmax(0)", '"log_softmax_kernel_impl"'),
    ]:
        with pytest.raises(NotImplementedError, match=kernel):
            run(lib, src)


def check_grads_views_as_torch(lib):
    # a gradient reduced to its input's shape is a tensor of its own (seed
    # 922976: an in-place op with grad on a view of it is allowed) ...
    ns = run(
        lib,
        """
t2 = torch.ones(3, 3)
t4 = torch.tensor(0.25, requires_grad=True)
t2.index_put_((torch.tensor([0]),), t4)
g, = torch.autograd.grad(t2.sum(), t4)
v = g.view(-1)
v.add_(torch.tensor([1.0], requires_grad=True), alpha=2)
""",
    )
    assert ns["g"]._base is None and ns["g"].item() == 5.0
    # ... one through a view rebuilt after an in-place op (AsStridedBackward0)
    # is a view, which detach_() refuses (seed 927216)
    src = """
t0 = torch.tensor([[[-0.75], [1.0], [1.5]]]).expand(2, 3, 3).requires_grad_()
t2 = t0.reshape((3, -1, 2))
t3 = torch.movedim(t2, 0, 2)
t2[0::1, :, 1] = -1
t5, = torch.autograd.grad(t3.sum(), t2)
"""
    ns = run(lib, src)
    assert ns["t5"]._base is not None and ns["t5"].tolist() == [[[1.0] * 2] * 3] * 3
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        run(lib, src + "t5.detach_()")


def check_long_run_930000(lib):
    # long-run seeds 930000-959999
    # a custom Function's saved input detached in place unpacks (seed
    # 959275); a built-in op's still refuses
    ns = run(
        lib,
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\nh = x * 2\ny, z = TwoOut.apply(h)\n"
        "h.detach_()\ny.sum().backward()",
    )
    assert ns["x"].grad.tolist() == [4.0, 4.0]
    with pytest.raises(RuntimeError, match="detached in-place"):
        run(
            lib,
            "x = torch.tensor([1.0], requires_grad=True)\nh = x * 2\ny = h.sin()\nh.detach_()\n"
            "y.sum().backward()",
        )
    # copy_ of the very same data while recording writes nothing, so an
    # expanded target is fine (seeds 940423, 942139)
    ns = run(
        lib,
        "t0 = torch.tensor([[-1.75]]).expand(2, 2).requires_grad_()\nt1 = t0.data\nt1.copy_(t0)\n"
        "t2 = t0.data\nt2[None, :] = t0",
    )
    assert ns["t1"].tolist() == [[-1.75] * 2] * 2 and name(ns["t1"]) == "CopyBackwards"
    # atan2's gradient at the origin is 0, but a NaN incoming gradient stays
    # NaN there (seed 950812)
    ns = run(
        lib,
        "x = torch.tensor([0.0, 1.0], requires_grad=True)\n"
        "(torch.atan2(x, x) * torch.tensor([float('nan'), 1.0])).sum().backward()",
    )
    g = ns["x"].grad.tolist()
    assert g[0] != g[0] and g[1] == 0.0
    # x / x: the two gradients cancel exactly (torch's -grad * ((x / y) / y),
    # seed 933920)
    ns = run(
        lib,
        "x = torch.tensor([0.3, -1.7, 2.9], dtype=torch.float64, requires_grad=True)\n(x / x).sum().backward()",
    )
    assert ns["x"].grad.tolist() == [0.0, 0.0, 0.0]


def check_torch_internal_assert(lib):
    # Not a ferrograd bug (KNOWN "torch_internal_assert", seed 937959):
    # torch fails an internal assert here; ferrograd runs it
    src = """
t1 = torch.tensor([[1.0, 2.0]], requires_grad=True)
t6, t7 = TwoOut.apply(t1 * 3)
t7.retain_grad()
t7.add_(0.5)
"""
    if lib is ferrograd:
        ns = run(lib, src)
        assert ns["t7"]._version == 1 and ns["t7"].requires_grad
    else:
        with pytest.raises(RuntimeError, match="INTERNAL ASSERT FAILED"):
            run(lib, src)


def check_torch_bool_backward(lib):
    # Not a ferrograd bug (KNOWN "torch_bool_backward", seed 958239):
    # torch's atan2 backward computes -self for other's gradient even where
    # self is a bool that needs none, and raises
    src = "t1 = torch.tensor([1.75, -2.0], requires_grad=True)\nt7 = (t1 == t1).atan2(t1)\nt7.sum().backward()"
    if lib is ferrograd:
        g = run(lib, src)["t1"].grad.tolist()
        assert g == pytest.approx([-1 / (1 + 1.75**2), -1 / (1 + 4.0)], rel=1e-6)
    else:
        with pytest.raises(RuntimeError, match="on a bool tensor is not supported"):
            run(lib, src)


def check_float_to_int_nan(lib):
    # Not a ferrograd bug (KNOWN "float_to_int_nan", seed 934893): a NaN
    # written into an int64 tensor is undefined behaviour in torch
    ns = run(
        lib,
        "t2 = torch.zeros(3, dtype=torch.int64)\nt2[:] = torch.tensor([1.5, float('nan'), -2.5])",
    )
    assert ns["t2"].tolist()[0::2] == [1, -2]


def check_prod_zeros_inf_grad(lib):
    # the gradient of prod where a lane holds a zero and an inf (seed 921917)
    ns = run(
        lib,
        "x = torch.tensor([[0.0, float('inf')], [2.0, 3.0]], requires_grad=True)\n"
        "x.prod(1).sum().backward()",
    )
    assert ns["x"].grad.tolist() == [[float("inf"), 0.0], [3.0, 2.0]]


def _bits(values):
    """Each float's bits (a NaN as 'nan', whatever its sign and payload)."""
    return ["nan" if math.isnan(v) else struct.pack("<d", v).hex() for v in values]


def check_prod_zeros_grad_bits(lib):
    # prod's gradient when the input has zeros is torch's
    # prod_safe_zeros_backward for every lane (a zero anywhere switches the
    # whole tensor to it): grad * (exclusive cumprod from the front, times
    # the one from the back), each accumulated in double; the whole product
    # with several zeros and no create_graph is zeros (an inf or NaN too).
    # Bits pinned from torch 2.13, the same in both float dtypes' rounding.
    src = """
x = torch.tensor(VALUES, dtype=DTYPE, requires_grad=True)
g = torch.tensor(GRAD, dtype=DTYPE)
dx, = torch.autograd.grad(EXPR, x, g, retain_graph=True)
dxc, = torch.autograd.grad(EXPR, x, g, create_graph=True)
"""
    third = [1 / 3, 0.7, 1.1, -1.3]
    cases = [
        # one zero in one lane, the other lane rounded through the safe path
        ([[0.0, 0.1, 0.2, 0.3], third], "x.prod(1)", [0.37, -2.5]),
        # several zeros, along dim 0 (lanes interleaved in memory)
        ([[0.0, 0.1, 0.0, 0.3], [0.0, 0.7, 1.1, -1.3]], "x.prod(0)", [1.5, -0.5, 2.0, 3.0]),
        # a zero and an inf in one lane: 0 at the inf, inf at the zero
        ([[0.0, float("inf"), 2.0, 3.0], third], "x.prod(-1, keepdim=True)", [[1.0], [1.0]]),
        # the whole product: one zero, then two (zeros without a graph)
        ([[0.0, 0.1, 0.2, 0.3], third], "x.prod()", 0.37),
        ([[0.0, 0.1, 0.0, float("inf")], third], "x.prod()", 0.37),
        # and transposed (made contiguous first)
        ([[0.0, 0.1, 0.2, 0.3], third], "x.t().prod()", 1.0),
    ]
    for dtype in ("float32", "float64"):
        for values, expr, grad in cases:
            ns = run(
                lib,
                src.replace("VALUES", repr(values).replace("inf", "float('inf')"))
                .replace("DTYPE", f"torch.{dtype}")
                .replace("GRAD", repr(grad))
                .replace("EXPR", expr),
            )
            x, dx, dxc = ns["x"], ns["dx"], ns["dxc"]
            want = _prod_safe_zeros(values, expr, grad, dtype, shortcut=True)
            assert _bits(dx.reshape(-1).tolist()) == want, (dtype, expr)
            # with create_graph the whole product takes the safe path anyway
            want = _prod_safe_zeros(values, expr, grad, dtype, shortcut=False)
            assert _bits(dxc.reshape(-1).tolist()) == want, (dtype, expr)
            assert dxc.requires_grad and x.grad is None


def _prod_safe_zeros(values, expr, grad, dtype, shortcut):
    """torch's prod_safe_zeros_backward written out in numpy (the bits the
    checks expect), with the whole product's several-zeros shortcut."""
    import numpy as np

    ft = np.float32 if dtype == "float32" else np.float64
    x = np.array(values, dtype=ft)
    if shortcut and expr == "x.prod()" and (x == 0).sum() > 1:
        return _bits([0.0] * x.size)
    if expr in ("x.prod()", "x.t().prod()"):
        xs = x.T if expr.startswith("x.t()") else x
        lanes, dim = xs.reshape(1, -1), 1
    else:
        lanes, dim = x, 0 if "prod(0)" in expr else 1
    lanes = np.moveaxis(lanes, dim, -1)
    out = np.empty_like(lanes)
    for r in range(lanes.shape[0]):  # (0 * inf warns)
        lane, n = lanes[r], lanes.shape[1]
        front, back = np.empty(n, ft), np.empty(n, ft)
        acc = 1.0
        for j in range(n):
            front[j] = ft(acc)
            acc *= float(lane[j])
        acc = 1.0
        for j in reversed(range(n)):
            back[j] = ft(acc)
            acc *= float(lane[j])
        with np.errstate(invalid="ignore"):
            out[r] = front * back
    out = np.moveaxis(out, -1, dim)
    g = np.array(grad, dtype=ft)
    if expr in ("x.prod()", "x.t().prod()"):
        d = (g * out).reshape(x.T.shape if expr.startswith("x.t()") else x.shape)
        d = d.T if expr.startswith("x.t()") else d
    else:
        d = (np.expand_dims(g, dim) if g.ndim < x.ndim else g) * out
    return _bits([float(v) for v in d.reshape(-1)])


def check_prod_zeros_gradcheck(lib):
    # the safe path's first and second derivatives (float64), with one and
    # two zeros in a lane and along each dim
    x = lib.tensor(
        [[0.0, 1.5, -2.0, 0.7], [3.0, 0.1, 0.0, 0.0], [0.3, 0.4, 0.5, 0.6]],
        dtype=lib.float64,
        requires_grad=True,
    )
    for f in [
        lambda t: t.prod(1),
        lambda t: t.prod(0),
        lambda t: t.prod(),
        lambda t: t[:2].prod(),
        lambda t: t[0].prod(),
        lambda t: t.t().prod(0, keepdim=True),
    ]:
        assert lib.autograd.gradcheck(f, (x,))
        assert lib.autograd.gradgradcheck(f, (x,))
