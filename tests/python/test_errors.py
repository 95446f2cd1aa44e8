"""Bad input raises torch's exception type and changes nothing.

Each case builds its tensors with ``lib`` and returns ``(thunk, watched)``:
calling ``thunk`` must raise the expected exception type, and every tensor in
``watched`` must keep its values, shape, version and ``.grad`` afterwards.
Every case runs on ferrograd and (when installed) torch, which checks the
expected types themselves. Cases using ops ferrograd lacks skip with
"not implemented yet" (the registry's coverage test lists missing ops).
"""

import numpy as np
import pytest

from helpers import require, to_numpy


def f64(lib, values, requires_grad=False):
    return lib.tensor(values, dtype=lib.float64, requires_grad=requires_grad)


def M(lib, rows=2, cols=3, requires_grad=False):
    return f64(
        lib, np.arange(rows * cols, dtype=np.float64).reshape(rows, cols).tolist(), requires_grad
    )


CASES = []


def case(name, exc, needs=(), match=None):
    def deco(fn):
        CASES.append(pytest.param(fn, exc, needs, match, id=name))
        return fn

    return deco


# ---- shapes ----
@case("sum_to_size_not_expandable", RuntimeError, match=r"size \{\[2, 3\]\} is not expandable")
def _(lib):
    x = M(lib, 1, 4, requires_grad=True)
    return (lambda: x.sum_to_size(2, 3), [x])


@case("sum_to_size_negative", RuntimeError, match="is not expandable")
def _(lib):
    x = M(lib, 1, 4)
    return (lambda: x.sum_to_size(-1), [x])


@case("add_shape_mismatch", RuntimeError, match="must match the size")
def _(lib):
    a, b = M(lib), f64(lib, [1.0, 2.0, 3.0, 4.0])
    return (lambda: a + b), [a, b]


@case("mul_shape_mismatch", RuntimeError)
def _(lib):
    a, b = M(lib, 2, 3, True), M(lib, 3, 2)
    return (lambda: a * b), [a, b]


@case("matmul_shape_mismatch", RuntimeError, needs=("matmul",))
def _(lib):
    a, b = M(lib, 2, 3), M(lib, 2, 3)
    return (lambda: lib.matmul(a, b)), [a, b]


@case("mm_needs_2d", RuntimeError, needs=("mm",))
def _(lib):
    a, b = M(lib, 2, 3), f64(lib, [1.0, 2.0, 3.0])
    return (lambda: lib.mm(a, b)), [a, b]


@case("mm_dtype_mismatch", RuntimeError, needs=("mm",))
def _(lib):
    a = M(lib, 2, 3)
    b = lib.ones(3, 2, dtype=lib.float32)
    return (lambda: lib.mm(a, b)), [a, b]


@case("bmm_batch_mismatch", RuntimeError, needs=("bmm",))
def _(lib):
    a = lib.ones(2, 2, 3, dtype=lib.float64)
    b = lib.ones(3, 3, 2, dtype=lib.float64)
    return (lambda: lib.bmm(a, b)), [a, b]


@case("view_incompatible_strides", RuntimeError, match="view size is not compatible")
def _(lib):
    a = M(lib)
    return (lambda: a.t().view(-1)), [a]


@case("reshape_wrong_numel", RuntimeError, match="invalid for input of size")
def _(lib):
    a = M(lib)
    return (lambda: a.reshape(4, 2)), [a]


@case("reshape_two_inferred", RuntimeError, match="only one dimension can be inferred")
def _(lib):
    a = M(lib)
    return (lambda: a.reshape(-1, -1)), [a]


@case("expand_non_singleton", RuntimeError, match="expanded size")
def _(lib):
    a = M(lib)
    return (lambda: a.expand(3, 3)), [a]


@case("permute_wrong_length", RuntimeError)
def _(lib):
    a = M(lib)
    return (lambda: a.permute(0)), [a]


@case("permute_repeated_dim", RuntimeError)
def _(lib):
    a = M(lib)
    return (lambda: a.permute(0, 0)), [a]


@case("narrow_too_long", RuntimeError, match="exceeds dimension size")
def _(lib):
    a = M(lib)
    return (lambda: a.narrow(1, 1, 5)), [a]


@case("cat_shape_mismatch", RuntimeError, needs=("cat",))
def _(lib):
    a, b = M(lib, 2, 3), M(lib, 3, 2)
    return (lambda: lib.cat([a, b])), [a, b]


@case("stack_shape_mismatch", RuntimeError, needs=("stack",))
def _(lib):
    a, b = M(lib, 2, 3), M(lib, 3, 2)
    return (lambda: lib.stack([a, b])), [a, b]


@case("where_shape_mismatch", RuntimeError, needs=("where",))
def _(lib):
    c = lib.tensor([[True, False, True], [False, True, True]])
    a, b = M(lib), f64(lib, [1.0, 2.0, 3.0, 4.0])
    return (lambda: lib.where(c, a, b)), [a, b]


@case("split_sizes_do_not_sum", RuntimeError, needs=("split",))
def _(lib):
    a = M(lib)
    return (lambda: lib.split(a, [1, 1], dim=1)), [a]


# ---- dims and indices ----
@case("sum_dim_out_of_range", IndexError, match="Dimension out of range")
def _(lib):
    a = M(lib)
    return (lambda: a.sum(2)), [a]


@case("mean_dim_out_of_range", IndexError)
def _(lib):
    a = M(lib)
    return (lambda: a.mean(-3)), [a]


@case("sum_repeated_dim", RuntimeError, match="appears multiple times")
def _(lib):
    a = M(lib)
    return (lambda: a.sum((1, 1))), [a]


@case("transpose_dim_out_of_range", IndexError)
def _(lib):
    a = M(lib)
    return (lambda: a.transpose(0, 2)), [a]


@case("unsqueeze_dim_out_of_range", IndexError)
def _(lib):
    a = M(lib)
    return (lambda: a.unsqueeze(4)), [a]


@case("select_index_out_of_range", IndexError)
def _(lib):
    a = M(lib)
    return (lambda: a.select(1, 3)), [a]


@case("softmax_dim_out_of_range", IndexError, needs=("softmax",))
def _(lib):
    a = M(lib)
    return (lambda: lib.softmax(a, 2)), [a]


@case("getitem_index_out_of_range", IndexError, needs=("Tensor.__getitem__",))
def _(lib):
    a = M(lib)
    return (lambda: a[5]), [a]


@case("getitem_too_many_indices", IndexError, needs=("Tensor.__getitem__",))
def _(lib):
    a = M(lib)
    return (lambda: a[0, 0, 0]), [a]


@case("index_select_out_of_range", IndexError, needs=("index_select",))
def _(lib):
    a = M(lib)
    return (lambda: lib.index_select(a, 0, lib.tensor([5]))), [a]


@case("index_select_float_index", RuntimeError, needs=("index_select",))
def _(lib):
    a = M(lib)
    return (lambda: lib.index_select(a, 0, f64(lib, [1.0]))), [a]


@case("gather_index_out_of_range", RuntimeError, needs=("gather",))
def _(lib):
    a = M(lib)
    return (lambda: lib.gather(a, 1, lib.tensor([[5], [0]]))), [a]


@case("scatter_add_index_out_of_range", RuntimeError, needs=("Tensor.scatter_add_",))
def _(lib):
    a = M(lib)
    src = M(lib)
    return (lambda: a.scatter_add_(1, lib.tensor([[7, 0, 0], [0, 0, 0]]), src)), [a, src]


# ---- dtypes ----
@case(
    "requires_grad_on_integer_tensor",
    RuntimeError,
    match="floating point dtype can require gradients",
)
def _(lib):
    a = lib.tensor([1, 2, 3])
    return (lambda: a.requires_grad_()), [a]


@case("inplace_float_into_long", RuntimeError, match="can't be cast to the desired output type")
def _(lib):
    a = lib.tensor([1, 2, 3])
    return (lambda: a.add_(1.5)), [a]


@case("inplace_broadcast_changes_shape", RuntimeError)
def _(lib):
    a = f64(lib, [1.0, 2.0, 3.0])
    b = M(lib)
    return (lambda: a.add_(b)), [a, b]


@case("sub_bool_tensors", RuntimeError, match="Subtraction, the `-` operator, with two bool")
def _(lib):
    a = lib.tensor([True, False])
    return (lambda: a - a), [a]


@case("neg_bool_tensor", RuntimeError, match="Negation, the `-` operator, on a bool tensor")
def _(lib):
    a = lib.tensor([True, False])
    return (lambda: -a), [a]


@case("mean_of_integer_tensor", RuntimeError, match="could not infer output dtype")
def _(lib):
    a = lib.tensor([1, 2, 3])
    return (lambda: a.mean()), [a]


# ---- values and construction ----
@case("item_of_many_elements", RuntimeError, match="cannot be converted to Scalar")
def _(lib):
    a = M(lib)
    return (lambda: a.item()), [a]


@case("float_of_many_elements", ValueError, needs=("Tensor.__float__",))
def _(lib):
    a = M(lib)
    return (lambda: float(a)), [a]


@case("bool_of_many_elements", RuntimeError, match="ambiguous")
def _(lib):
    a = M(lib)
    return (lambda: bool(a)), [a]


@case("len_of_0d", TypeError, match="len\\(\\) of a 0-d tensor")
def _(lib):
    a = f64(lib, 1.0)
    return (lambda: len(a)), [a]


@case("ragged_nested_list", ValueError)
def _(lib):
    return (lambda: lib.tensor([[1.0, 2.0], [3.0]])), []


@case("zeros_negative_size", RuntimeError)
def _(lib):
    return (lambda: lib.zeros(-1)), []


@case("add_wrong_operand_type", TypeError)
def _(lib):
    a = M(lib)
    return (lambda: a + "x"), [a]


# ---- autograd misuse ----
@case("inplace_on_leaf_requiring_grad", RuntimeError, match="leaf Variable that requires grad")
def _(lib):
    a = M(lib, requires_grad=True)
    return (lambda: a.mul_(2.0)), [a]


@case(
    "inplace_on_view_of_leaf_requiring_grad",
    RuntimeError,
    match="view of a leaf Variable that requires grad",
)
def _(lib):
    a = M(lib, requires_grad=True)
    v = a.narrow(0, 0, 1)
    return (lambda: v.add_(1.0)), [a, v]


@case("requires_grad_false_on_non_leaf", RuntimeError, match="leaf variables")
def _(lib):
    a = M(lib, requires_grad=True)
    b = a * 2
    return (lambda: setattr(b, "requires_grad", False)), [a, b]


@case("assign_grad_of_wrong_shape", RuntimeError)
def _(lib):
    a = M(lib, requires_grad=True)
    return (lambda: setattr(a, "grad", f64(lib, [1.0, 2.0]))), [a]


@case("backward_without_grad", RuntimeError, match="does not require grad")
def _(lib):
    a = M(lib)
    return (lambda: a.sum().backward()), [a]


@case("backward_non_scalar", RuntimeError, match="implicitly created only for scalar")
def _(lib):
    a = M(lib, requires_grad=True)
    return (lambda: (a * 2).backward()), [a]


@case("backward_gradient_wrong_shape", RuntimeError, match="Mismatch in shape")
def _(lib):
    a = M(lib, requires_grad=True)
    return (lambda: (a * 2).backward(f64(lib, [1.0]))), [a]


@case("grad_of_unused_input", RuntimeError, match="not have been used in the graph")
def _(lib):
    a = M(lib, requires_grad=True)
    b = M(lib, requires_grad=True)
    return (lambda: lib.autograd.grad((a * a).sum(), [a, b])), [a, b]


@case("grad_materialize_with_allow_unused_false", ValueError)
def _(lib):
    a = M(lib, requires_grad=True)
    return (
        lambda: lib.autograd.grad((a * a).sum(), [a], allow_unused=False, materialize_grads=True)
    ), [a]


@case("select_method_out_of_range", IndexError, match="out of range for tensor of size")
def _(lib):
    a = M(lib)
    return (lambda: a.select(1, 4)), [a]


@case(
    "index_out_of_range", IndexError, match="index 5 is out of bounds for dimension 0 with size 2"
)
def _(lib):
    a = M(lib)
    return (lambda: a[5]), [a]


@case("inplace_on_leaf_view_requiring_grad", RuntimeError, match="a view of a leaf Variable")
def _(lib):
    base = f64(lib, [0.0, 0.0, 0.0, 0.0])
    w = base.view(2, 2).requires_grad_()
    return (lambda: w.add_(1)), [base, w]


@case("inplace_on_view_of_leaf_view", RuntimeError, match="a view of a leaf Variable")
def _(lib):
    base = f64(lib, [0.0, 0.0, 0.0, 0.0])
    w = base.view(2, 2).requires_grad_()

    def go():
        w[0] = 1.0

    return go, [base, w]


@case("inplace_on_view_of_detached_leaf", RuntimeError, match="a view of a leaf Variable")
def _(lib):
    u = f64(lib, [0.0, 0.0, 0.0, 0.0]).detach().requires_grad_()
    v = u.view(2, 2)
    return (lambda: v.mul_(2)), [u, v]


@case("backward_after_inplace_on_saved", RuntimeError, match="modified by an inplace operation")
def _(lib):
    a = M(lib, requires_grad=True)
    b = a * 1.0
    loss = (b * b).sum()
    b.add_(1.0)
    return (lambda: loss.backward()), [a, b]


def _grad(t):
    if not (t.is_leaf or t.retains_grad):
        return None  # reading .grad of a non-leaf warns in torch
    return None if t.grad is None else to_numpy(t.grad).copy()


def _snapshot(t):
    return (
        tuple(t.shape),
        to_numpy(t).copy(),
        t._version,
        _grad(t),
        t.requires_grad,
    )


@pytest.mark.parametrize("build, exc, needs, match", CASES)
def test_bad_input_raises_and_changes_nothing(lib, build, exc, needs, match):
    require(lib, *needs)
    thunk, watched = build(lib)
    before = [_snapshot(t) for t in watched]
    with pytest.raises(exc, match=match):
        thunk()
    for i, (b, a) in enumerate(zip(before, [_snapshot(t) for t in watched])):
        assert b[0] == a[0], f"tensor {i}: shape changed"
        np.testing.assert_array_equal(b[1], a[1], err_msg=f"tensor {i}: values changed")
        assert b[2] == a[2], f"tensor {i}: version changed"
        assert (b[3] is None) == (a[3] is None), f"tensor {i}: grad changed"
        if b[3] is not None:
            np.testing.assert_array_equal(b[3], a[3], err_msg=f"tensor {i}: grad changed")
        assert b[4] == a[4], f"tensor {i}: requires_grad changed"


def test_failed_op_leaves_no_graph(lib):
    """A failing op must not leave a half-built node on its inputs."""
    a = M(lib, requires_grad=True)
    b = f64(lib, [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(RuntimeError):
        a + b
    (a * 2).sum().backward()
    np.testing.assert_array_equal(to_numpy(a.grad), np.full((2, 3), 2.0))


# ---- a dtype without a kernel: NotImplementedError (torch's AT_DISPATCH) ----

NO_KERNEL = {
    "softmax": (lambda L: L.tensor([[1, 5]]).softmax(-1), "softmax_lastdim_kernel_impl", "Long"),
    "log_softmax": (
        lambda L: L.tensor([[1, 5]]).log_softmax(-1),
        "log_softmax_lastdim_kernel_impl",
        "Long",
    ),
    "round_decimals": (lambda L: L.tensor([1]).round(decimals=1), "round_cpu", "Long"),
    "frac": (lambda L: L.tensor([1]).frac(), "frac_cpu", "Long"),
    "hypot": (lambda L: L.hypot(L.tensor([1]), L.tensor([1])), "hypot_cpu", "Long"),
    "logaddexp": (lambda L: L.logaddexp(L.tensor([1]), L.tensor([2])), "logaddexp_cpu", "Long"),
    "lerp": (lambda L: L.lerp(L.tensor([1]), L.tensor([2]), 0.5), "lerp_kernel_scalar", "Long"),
    "pow_bool": (lambda L: L.tensor([True]) ** L.tensor([True]), "pow", "Bool"),
    "abs_bool": (lambda L: L.tensor([True]).abs(), "abs_cpu", "Bool"),
    "trunc_bool": (lambda L: L.tensor([True]).trunc(), "trunc_vml_cpu", "Bool"),
    "floor_divide_bool": (lambda L: L.tensor([True]) // L.tensor([True]), "div_floor_cpu", "Bool"),
    "bitwise_not_float": (lambda L: L.bitwise_not(L.tensor([1.0])), "bitwise_not_cpu", "Float"),
    "bitwise_and_float": (
        lambda L: L.tensor([1.0]) & L.tensor([True]),
        "bitwise_and_cpu",
        "Float",
    ),
    "matmul_bool": (lambda L: L.tensor([[True]]) @ L.tensor([[True]]), "addmm_impl_cpu_", "Bool"),
    "gelu": (lambda L: L.nn.functional.gelu(L.tensor([1])), "GeluKernelImpl", "Long"),
    "silu": (lambda L: L.nn.functional.silu(L.tensor([1])), "silu_cpu", "Long"),
    "elu": (lambda L: L.nn.functional.elu(L.tensor([1])), "elu_cpu", "Long"),
    "softplus": (lambda L: L.nn.functional.softplus(L.tensor([1])), "softplus_cpu", "Long"),
    "logsigmoid": (lambda L: L.nn.functional.logsigmoid(L.tensor([1])), "log_sigmoid_cpu", "Long"),
    "layer_norm": (
        lambda L: L.nn.functional.layer_norm(L.tensor([[1, 2]]), (2,)),
        "LayerNormKernelImpl",
        "Long",
    ),
    "uniform_": (lambda L: L.zeros(3, dtype=L.int64).uniform_(), "check_uniform_bounds", "Long"),
    "normal_": (lambda L: L.zeros(3, dtype=L.int64).normal_(), "normal_kernel_cpu", "Long"),
    "arange_bool": (lambda L: L.arange(3, dtype=L.bool), "arange_cpu", "Bool"),
    "linspace_bool": (lambda L: L.linspace(0, 1, 3, dtype=L.bool), "linspace_cpu", "Bool"),
    "randperm_bool": (lambda L: L.randperm(3, dtype=L.bool), "randperm", "Bool"),
}


@pytest.mark.parametrize("name", sorted(NO_KERNEL))
def test_missing_kernel_raises_not_implemented_error(lib, name):
    thunk, kernel, dtype = NO_KERNEL[name]
    with pytest.raises(NotImplementedError) as e:
        thunk(lib)
    assert type(e.value) is NotImplementedError
    assert str(e.value) == f"\"{kernel}\" not implemented for '{dtype}'"


def test_dtype_errors_that_are_not_missing_kernels(lib):
    for thunk, msg in [
        (lambda: lib.nn.functional.hardtanh(lib.tensor([True])), "Bool inputs not supported"),
        (lambda: lib.zeros(3, dtype=lib.int64).exponential_(), "continuous probability"),
    ]:
        with pytest.raises(RuntimeError, match=msg) as e:
            thunk()
        assert type(e.value) is RuntimeError
