# ruff: noqa: S102 - the checks exec snippets
"""Regression checks of the differential fuzzer's mismatches, third part,
with the grad_fn name cases (see test_fuzz_regressions.py).
"""

import math

import ferrograd
import pytest

from .common import name, raises, run


def check_clamp_cast_message(lib):
    # clamp_ with a number bound names the output type by its C++ name
    for src, want in [
        ("torch.tensor([1, 2]).clamp_(0.5)", "desired output type long int"),
        ("torch.tensor([1, 2]).clamp_max_(0.5)", "desired output type long int"),
        ("torch.tensor([True]).clamp_(1.5)", "desired output type bool"),
        ("torch.tensor([1, 2]).clamp_(torch.tensor(0.5))", "desired output type Long"),
        ("torch.tensor([1, 2]).add_(0.5)", "desired output type Long"),
    ]:
        with pytest.raises(RuntimeError, match=want + "$"):
            run(lib, src)
    ns = run(lib, "x = torch.tensor([1, 5])\nx.clamp_(2, 3)")
    assert ns["x"].tolist() == [2, 3]


def check_cumsum_0d_negative_zero(lib):
    # cumsum of a 0-dim tensor is a copy (seed 705026)
    ns = run(lib, "t2 = torch.tensor(0.0, dtype=torch.float64)\nt6 = torch.rsqrt((-t2).cumsum(0))")
    assert ns["t6"].item() == float("-inf")


GRAD_FN_CASES = {
    "narrow": ("x.narrow(1, 0, 2)", "SliceBackward0"),
    "rsub": ("2 - x", "RsubBackward1"),
    "rdiv": ("-1.5 / x", "MulBackward0"),
    "squeeze_dim": ("x[None].squeeze(0)", "SqueezeBackward1"),
    "t": ("x.t()", "TBackward0"),
    "unsqueeze_index": ("x[None, :, :]", "UnsqueezeBackward0"),
    "select_index": ("x[1, :]", "SelectBackward0"),
    "reshape_copy": ("x.t().reshape(6)", "ViewBackward0"),
    "reshape_alias": ("x.t().reshape(3, 2)", "ReshapeAliasBackward0"),
    "reshape_contiguous": ("x.reshape(3, 2)", "ViewBackward0"),
    "squeeze_all": ("x[None].squeeze()", "SqueezeBackward0"),
    "squeeze_dims": ("x[None].squeeze((0,))", "SqueezeBackward2"),
    "matmul_vector_matrix": ("x[0] @ x.t()", "SqueezeBackward4"),
    "t_vector": ("x[0].t()", "TBackward0"),
    "full_slices": ("x[:, 0:3]", "AliasBackward0"),
    "lone_full_slice": ("x[:]", "SliceBackward0"),
    "rsub_float": ("2.5 - x", "RsubBackward1"),
    "matmul_batched": ("x[None] @ x.t()[None]", "UnsafeViewBackward0"),
    "matmul_batched_4d": ("x[None, None] @ x.t()", "UnsafeViewBackward0"),
    "matmul_matrix_batched": ("x @ x.t()[None]", "CloneBackward0"),
    "matmul_vector_batched": ("x[0] @ x.t()[None]", "UnsafeViewBackward0"),
    "bmm": ("torch.bmm(x[None], x.t()[None])", "BmmBackward0"),
}


def check_grad_fn_names(lib, case):
    expr, expected = GRAD_FN_CASES[case]
    ns = run(lib, f"x = torch.ones(2, 3, requires_grad=True) * 1\ny = {expr}")
    got = name(ns["y"])
    if case == "reshape_copy":  # a copy: torch's _unsafe_view
        expected = "UnsafeViewBackward0"
    assert got == expected


def check_index_ops_missing(lib):
    ns = run(
        lib,
        "x = torch.zeros(3)\nx.index_add_(0, torch.tensor([0, 0]), torch.ones(2))\nx.index_fill_(0, torch.tensor([2]), 5.0)",
    )
    assert ns["x"].tolist() == [2.0, 0.0, 5.0]


def check_sub_bool(lib):
    raises(lib, "torch.ones(2).sub(torch.ones(2) > 0)", RuntimeError)


def check_permute_no_dims(lib):
    raises(lib, "torch.tensor(1.0).permute()", TypeError)


def check_detach_view(lib):
    raises(lib, "x = torch.ones(3)\nv = x.unsqueeze(0)\nv.detach_()", RuntimeError)


def check_not_implemented_dtype(lib):
    raises(lib, "torch.tensor([[1, 5]]).softmax(-1)", NotImplementedError)
    # an empty input is returned before a kernel is picked
    y = run(lib, "y = torch.zeros((2, 0), dtype=torch.int64).log_softmax(0)")["y"]
    assert y.shape == (2, 0) and y.dtype == lib.int64


def check_copy_onto_same_data(lib):
    # torch's copy_ of the very same data returns before its overlap checks
    # (fuzzer seeds 500188, 500229 of the long run); setitem expands the value
    # to the target's shape first (copy_to), and expand gives a new size-1 dim
    # the stride torch's inferExpandGeometry does.
    src = """
t0 = torch.tensor([-1.0]).expand(4)
t0.copy_(t0)
t1 = torch.tensor([-0.75]).expand(4)
t1[None, :] = t1
t2 = torch.ones(2, 3)
t2[None] = t2
"""
    ns = run(lib, src)
    assert [ns[k]._version for k in ("t0", "t1", "t2")] == [1, 1, 1]
    assert ns["t0"].tolist() == [-1.0] * 4 and ns["t1"].tolist() == [-0.75] * 4
    x = lib.ones(2, 3)
    assert x.expand(1, 2, 3).stride() == (6, 3, 1)
    assert x.t().expand(1, 3, 2).stride() == (3, 1, 3)
    assert x[:, :1].expand(1, 2, 4).stride() == (6, 3, 0)
    assert x.expand(4, 1, 2, 3).stride() == (0, 6, 3, 1)
    assert lib.tensor(1.0).expand(1, 3).stride() == (0, 0)


def check_inplace_on_own_memory(lib):
    # Not a bug (fuzz_programs.KNOWN "inplace_on_own_memory"): an operand that
    # views the written memory in a layout torch's overlap check cannot
    # decide. Both run it; ferrograd reads the operand first, so its result is
    # that of `t0.div_(t2.clone())`; torch's depends on its loop order.
    src = """
t0 = torch.tensor([[[[1.75, -1.25], [0.0, 1.25]]], [[[-0.75, -1.75], [0.75, -0.5]]], [[[1.5, -1.0], [1.25, 0.75]]]], dtype=torch.float64)[::2]
t2 = t0.transpose(3, -4)
t0.div_(t2)
"""
    ns = run(lib, src)
    assert ns["t0"].shape == (2, 1, 2, 2) and ns["t0"]._version == 1
    if lib is ferrograd:
        ref = run(lib, src.replace("t0.div_(t2)", "t0.div_(t2.clone())"))
        assert repr(ns["t0"].tolist()) == repr(ref["t0"].tolist())  # (a NaN in it)


def check_same_tensor_overlaps_itself(lib):
    # torch's assert_no_overlap: the very same tensor is a full overlap even
    # when its layout is not dense or it is empty (long-run seeds 106, 215,
    # 10333); setitem of a number into several elements of an expanded view
    # is fill_(Tensor), a copy_, so it refuses (seed 159), fill_(Scalar) not.
    for src in [
        "t0 = torch.ones(4, 2)[::2]\nt0.index_put_((torch.tensor([1, 0]),), t0)",
        "t0 = torch.ones(2, 1).expand(2, 3)\nt0.index_put_((torch.tensor([0, 1]),), t0)",
        "t0 = torch.zeros((3, 0))\nt0.index_put_((torch.tensor([2, 0, 1]),), t0)",
        "t0 = torch.ones(1, 2).expand(4, 2)\nt0[[1, 0, 3, 2]] = t0",
        "t0 = torch.tensor([-2.0]).expand(3)\nt0[:] = -1",
        "t0 = torch.tensor([-2.0]).expand(3)\nt0.fill_(torch.tensor(-1.0))",
    ]:
        raises(lib, src, RuntimeError)
    ns = run(lib, "t0 = torch.tensor([-2.0]).expand(3)\nt0[0] = -1\nt0.fill_(-3)")
    assert ns["t0"].tolist() == [-3.0, -3.0, -3.0]


def check_rdiv_saves_result(lib):
    # `number / x` is `x.reciprocal() * number` (MulBackward0 over
    # ReciprocalBackward0, which saves its result): modifying x in place
    # afterwards leaves the graph usable. `x / number` reads neither x nor
    # the result for d/dx, `x * y` reads only the other operand.
    ns = run(
        lib,
        """
x = torch.tensor([1.0, 2.0, 4.0], requires_grad=True)
h = x * 1
y = 2 / h + h / 4 + 3 * h - 1.5 / h
h.add_(1)
y.sum().backward()
""",
    )
    assert ns["x"].grad.tolist() == [
        -2 + 0.25 + 3 + 1.5,
        -0.5 + 0.25 + 3 + 0.375,
        -0.125 + 0.25 + 3 + 0.09375,
    ]
    raises(
        lib,
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\nh = x * 1\ny = h / x\nh.add_(1)\ny.sum().backward()",
        RuntimeError,
    )


def check_leaf_moved_into_graph_interior(lib):
    # a leaf detach_()ed after a view of it was taken, then given a history
    # by an in-place op reading that view: backward through the view reaches
    # the leaf's AccumulateGrad, which refuses (seed 984471)
    src = """
t1 = torch.tensor([[0.0, -0.25], [1.0, -1.0]], requires_grad=True)
t3 = t1.view(2, 2)
t1.detach_()
t1.sub_(t3, alpha=2)
"""
    ns = run(lib, src)
    assert ns["t1"].grad_fn is not None and ns["t1"].requires_grad
    with pytest.raises(RuntimeError, match="leaf variable has been moved into the graph interior"):
        run(lib, src + "t3.backward(torch.ones_like(t3))")


def check_requires_grad_checks_dtype_first(lib):
    # an int64 tensor that got a grad_fn from a float written into it:
    # requires_grad_() checks the dtype before the leaf (seed 988214); the
    # requires_grad setter refuses any non-leaf first, then the dtype, with
    # its own message
    src = """
t6 = torch.tensor(3)
t6[None] = torch.tensor(-1.25, dtype=torch.float64, requires_grad=True)
"""
    nonleaf_true = "you can only change requires_grad flags of leaf variables\\.$"
    for tail, msg in [
        ("t6.requires_grad_()", "^only Tensors of floating point dtype can require gradients$"),
        ("t6.requires_grad_(False)", "If you want to use a computed variable in a subgraph"),
        ("t6.requires_grad = True", nonleaf_true),
        ("t6.requires_grad = False", "If you want to use a computed variable in a subgraph"),
        (
            "torch.tensor([1, 2]).requires_grad = True",
            "^only Tensors of floating point and complex dtype can require gradients$",
        ),
        (
            "torch.tensor([1, 2]).requires_grad_()",
            "^only Tensors of floating point dtype can require gradients$",
        ),
        ("y = torch.ones(2, requires_grad=True) * 2\ny.requires_grad = True", nonleaf_true),
    ]:
        with pytest.raises(RuntimeError, match=msg):
            run(lib, src + tail)
    ns = run(lib, src + "y = torch.ones(2, requires_grad=True) * 2\ny.requires_grad_()")
    assert not ns["t6"].is_leaf and ns["y"].requires_grad
    ns = run(lib, src + "z = torch.tensor([1, 2])\nz.requires_grad = False")
    assert not ns["z"].requires_grad


def check_empty_view_grad_has_no_history(lib):
    # the regenerated view (AsStridedBackward0) of an empty narrow: its
    # backward is torch's as_strided_backward, fresh zeros without history
    # even under create_graph (seed 934213)
    ns = run(
        lib,
        """
t9 = torch.tensor([1.0, 2.0, 3.0])
t10 = t9.narrow(0, 3, 0)
t11 = torch.tensor([1.5, 0.0, 0.25], requires_grad=True)
t9.add_(t11)
t13 = torch.square(t10)
t14, = torch.autograd.grad(t13.sum(), (t9,), create_graph=True)
""",
    )
    assert ns["t10"].grad_fn.name() == "AsStridedBackward0"
    t14 = ns["t14"]
    assert t14.tolist() == [0.0, 0.0, 0.0]
    assert not t14.requires_grad and t14.grad_fn is None


def check_relu_double_backward_reaches_input(lib):
    # relu's gradient (threshold_backward) has a defined zero derivative for
    # relu's result (torch's `self: zeros_like(grad)`), so a gradient taken
    # through it reaches relu's input (seed 971999)
    ns = run(
        lib,
        """
t1 = torch.tensor(-1.75, requires_grad=True)
t9 = t1.amin((-1,))
t10 = t9.relu()
t13, = torch.autograd.grad(t10.sum(), (t9,), create_graph=True)
t15, t16 = t13.max(0, keepdim=True)
t17 = torch.softmax(t15, dim=-1)
t20, = torch.autograd.grad(t17.sum(), (t9,), create_graph=True)
x = torch.tensor([-1.5, 0.5, 2.0], requires_grad=True)
g, = torch.autograd.grad(x.relu().sum(), (x,), create_graph=True)
gg, = torch.autograd.grad(g.sum(), (x,))
""",
    )
    assert ns["t13"].grad_fn.name() == "ThresholdBackwardBackward0"
    assert ns["t20"].tolist() == 0.0
    assert ns["gg"].tolist() == [0.0, 0.0, 0.0]


def check_setitem_none_views_value(lib):
    # `t[None] = t` views the value (slicePrefix1sSize) before expanding it:
    # `view` gives size-1 dims computeStride's strides, so a value whose
    # size-1 dims have other strides is a partial overlap of the target
    # (seed 978109); a contiguous or plainly transposed one is the very
    # same memory and allowed
    bad = [
        "t = torch.sin(torch.arange(8.0).reshape(4, 1, 1, 2).transpose(0, 3))",
        "t = torch.arange(6.0).reshape(3, 1, 2).transpose(0, 2)",
        "t = torch.arange(4.0).reshape(4, 1).t()",
    ]
    good = [
        "t = torch.arange(8.0).reshape(2, 1, 1, 4)",
        "t = torch.arange(8.0).reshape(4, 2).t()",
        "t = torch.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1)",
    ]
    for make in bad:
        for idx in ("[None, :]", "[None]", "[None, None]"):
            src = f"{make}\nbefore = t.clone()\n"
            with pytest.raises(RuntimeError, match="refer to a single memory location"):
                run(lib, src + f"t{idx} = t")
            ns = {"torch": lib}
            exec(src, ns)
            try:
                exec(f"t{idx} = t", ns)
            except RuntimeError:
                pass
            assert ns["t"].tolist() == ns["before"].tolist() and ns["t"]._version == 0
        run(lib, f"{make}\nt[...] = t\nt[:] = t")
    for make in good:
        ns = run(lib, f"{make}\nbefore = t.clone()\nt[None] = t\nt[None, :] = t")
        assert ns["t"].tolist() == ns["before"].tolist()


def check_mm_outer_product_signed_zero(lib):
    # mm of a column by a row (k = 1, both sides longer than 1) is the outer
    # product: each element the bare product, so -1.25 * 0.0 is -0.0 and its
    # reciprocal -inf (seeds 981924, 989010); with k = 2 and for bmm the
    # sum starts from +0.0 (small sizes; see the notes of the fix)
    def signs(t):
        return [math.copysign(1.0, v) for v in t.reshape(-1).tolist()]

    ns = run(
        lib,
        """
a = torch.tensor([[-1.25], [2.0], [-0.0]])
b = torch.tensor([[0.0, -1.5]])
r = a.mm(b)
r64 = a.double() @ b.double()
r3 = a[None].repeat(2, 1, 1) @ b
re = a[None].expand(2, 3, 1) @ b
rb = torch.bmm(a[None], b[None])
k2 = torch.cat([a, a], 1).mm(torch.cat([b, b], 0))
inv = r.reciprocal()
""",
    )
    want = [-1.0, 1.0, 1.0, -1.0, -1.0, 1.0]
    assert ns["r"].tolist() == [[-0.0, 1.875], [0.0, -3.0], [-0.0, 0.0]]
    assert signs(ns["r"]) == want and signs(ns["r64"]) == want
    # a 3-D @ 2-D product folds into one mm (torch's should_fold) when the
    # batch dims fold without a copy; an expanded one is a batched product
    assert signs(ns["r3"]) == want * 2
    assert signs(ns["re"]) == [1.0, 1.0, 1.0, -1.0, 1.0, 1.0] * 2
    assert signs(ns["rb"]) == [1.0, 1.0, 1.0, -1.0, 1.0, 1.0]
    assert signs(ns["k2"]) == [1.0, 1.0, 1.0, -1.0, 1.0, 1.0]
    assert ns["inv"][:, 0].tolist() == [-math.inf, math.inf, -math.inf]


def check_prod_zeros_one_element_lane(lib):
    # with zeros, a lane of one element gets the gradient itself (torch's
    # shortcut in prod_safe_zeros_backward): no history under create_graph
    # (long-run seeds 994972, 1051260); without zeros it is grad * r / x
    ns = run(
        lib,
        """
y = torch.tensor([[0.0], [2.0]], requires_grad=True) * 1
g1, = torch.autograd.grad(y.prod(1).sum(), y, create_graph=True)
z = torch.tensor([0.0], requires_grad=True) * 1
g2, = torch.autograd.grad(z.prod(), z, create_graph=True)
w = torch.tensor([[1.0, 3.0]], requires_grad=True) * 1
g3, = torch.autograd.grad(w.prod(0).sum(), w, create_graph=True)
""",
    )
    assert ns["g1"].tolist() == [[1.0], [1.0]] and not ns["g1"].requires_grad
    assert ns["g2"].tolist() == [1.0] and not ns["g2"].requires_grad
    assert ns["g3"].tolist() == [[1.0, 1.0]] and ns["g3"].requires_grad


def check_mm_backward_unpacks_what_it_reads(lib):
    # mm's gradient for mat2 reads self's values and mat2's layout only, so
    # mat2 modified in place after the product still gets its gradient
    # (long-run seed 995992); self's gradient reads mat2 and refuses then
    src = """
a = torch.tensor([[-1.75, 0.0]]).expand(2, 2)
w = torch.tensor([[2.0, -1.25, 0.5], [-1.0, -1.25, 1.5]], requires_grad=True)
y = a.mm(w)
with torch.no_grad():
    w.mul_(2)
y.backward(torch.ones_like(y))
"""
    ns = run(lib, src)
    assert ns["w"].grad.tolist() == [[-3.5, -3.5, -3.5], [0.0, 0.0, 0.0]]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        run(
            lib,
            """
x = torch.ones(2, 2, requires_grad=True)
b = torch.ones(2, 3)
y = x.mm(b)
b.mul_(2)
y.sum().backward()
""",
        )


def check_fill_expanded_view_recorded(lib):
    # fill_/zero_ of an expanded view of a tensor with history is recorded
    # (the base's CopySlices), as torch (long-run seeds 1043975, 1068463);
    # only a backward through that CopySlices refuses the expanded view
    src = """
t0 = torch.tensor(-0.25, dtype=torch.float64, requires_grad=True)
t5 = t0.reshape(1) * t0.reshape(1)
t7 = t5.expand(3)
t7.OP
"""
    for op, v in [("zero_()", 0.0), ("fill_(2.0)", 2.0)]:
        ns = run(lib, src.replace("OP", op))
        assert ns["t5"].tolist() == [v] and ns["t7"].tolist() == [v] * 3
        assert ns["t5"]._version == 1 and ns["t7"].grad_fn.name() == "AsStridedBackward0"
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            run(lib, src.replace("OP", op) + "t5.sum().backward()")
    # an expanded view of a leaf that requires grad refuses first
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        run(lib, "t1 = torch.ones(2, requires_grad=True)\nt1.expand(3, 2).fill_(1.5)")


def check_dirty_output_drops_retained_grad(lib):
    # a custom Function's recorded dirty output loses the gradient it
    # retained under its old history (long-run seed 1058124); a built-in
    # in-place op keeps it, and so does mark_dirty under no_grad
    ns = run(
        lib,
        """
x = torch.tensor([1.0, 2.0], requires_grad=True)
a, b, c = x * 1, x * 1, x * 1
for t in (a, b, c):
    t.retain_grad()
(a * a + b * b + c * c).sum().backward()
a2 = Dirty.apply(a)
b.mul_(2)
with torch.no_grad():
    c2 = Dirty.apply(c)
""",
    )
    assert ns["a2"] is ns["a"] and ns["a"].grad is None and ns["a"].retains_grad
    assert ns["a"].tolist() == [3.0, 6.0]
    assert ns["b"].grad.tolist() == [2.0, 4.0]
    assert ns["c"].grad.tolist() == [2.0, 4.0]
