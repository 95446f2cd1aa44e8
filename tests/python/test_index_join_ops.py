"""Indexing and joining ops (index_select, gather, scatter, cat, split, ...):
values, views, gradients, errors, zero-dim and numpy indices (continued from
test_index_join.py).

Numeric checks (central differences in float64, first and second order) run
everywhere; comparisons with torch run when torch is installed.
"""

import numpy as np
import pytest

import ferrograd as fg
from index_helpers import assert_close, boolt, check_oracle, gradcheck, long, mk, vals


# ---------------------------------------------------------------- ops

IDX_G0 = [[0, 1, 2, 0], [2, 2, 1, 0]]
IDX_G1 = [[3, 0], [1, 1], [0, 2]]

OPS = {
    "gather_d0": (lambda M, x: x.gather(0, long(M, IDX_G0)), lambda M: [mk(M, (3, 4))]),
    "gather_d1_small": (lambda M, x: M.gather(x, 1, long(M, IDX_G1)), lambda M: [mk(M, (3, 4))]),
    "gather_noncontig": (
        lambda M, x: x.t().gather(-1, long(M, [[0, 2], [1, 1], [2, 0], [0, 0]])),
        lambda M: [mk(M, (3, 4))],
    ),
    "scatter_add": (
        lambda M, x, s: x.scatter_add(0, long(M, IDX_G0), s),
        lambda M: [mk(M, (3, 4)), mk(M, (2, 4), 1)],
    ),
    "scatter_add_fn": (
        lambda M, x, s: M.scatter_add(x, 1, long(M, IDX_G1), s),
        lambda M: [mk(M, (3, 4)), mk(M, (3, 2), 1)],
    ),
    "scatter_src": (
        lambda M, x, s: x.scatter(1, long(M, [[3, 0], [1, 2], [0, 2]]), s),
        lambda M: [mk(M, (3, 4)), mk(M, (3, 2), 1)],
    ),
    "scatter_value": (
        lambda M, x: M.scatter(x, 0, long(M, [[0, 1, 2, 0]]), 2.5),
        lambda M: [mk(M, (3, 4))],
    ),
    "scatter_value_kw": (
        lambda M, x: x.scatter(0, long(M, [[0, 1, 2, 0]]), value=-1.0),
        lambda M: [mk(M, (3, 4))],
    ),
    "index_select_d0": (
        lambda M, x: x.index_select(0, long(M, [2, 0, 2])),
        lambda M: [mk(M, (3, 4))],
    ),
    "index_select_d1_nc": (
        lambda M, x: M.index_select(x.t(), 1, long(M, [1, 1, 0])),
        lambda M: [mk(M, (3, 4))],
    ),
    "index_select_scalar_idx": (
        lambda M, x: x.index_select(1, long(M, 3)),
        lambda M: [mk(M, (3, 4))],
    ),
    "masked_fill_scalar": (
        lambda M, x: x.masked_fill(boolt(M, [True, False, False, True]), 3.5),
        lambda M: [mk(M, (3, 4))],
    ),
    "masked_fill_tensor": (
        lambda M, x, v: M.masked_fill(x, boolt(M, [[True], [False], [True]]), v),
        lambda M: [mk(M, (3, 4)), mk(M, ())],
    ),
    "masked_fill_broadcast": (
        lambda M, x: x.masked_fill(boolt(M, [[[True, False, True, False]]] * 2), 1.0),
        lambda M: [mk(M, (3, 4))],
    ),
    "index_put": (
        lambda M, x, v: x.index_put((long(M, [0, 2]), long(M, [1, 3])), v),
        lambda M: [mk(M, (3, 4)), mk(M, (2,), 1)],
    ),
    "index_put_acc": (
        lambda M, x, v: x.index_put((long(M, [0, 0, 2]),), v, accumulate=True),
        lambda M: [mk(M, (3, 4)), mk(M, (3, 4), 1)],
    ),
    "index_put_mask": (
        lambda M, x, v: M.index_put(x, (boolt(M, [True, False, True]),), v),
        lambda M: [mk(M, (3, 4)), mk(M, (4,), 1)],
    ),
    "take": (lambda M, x: x.take(long(M, [[0, 11], [-1, 5]])), lambda M: [mk(M, (3, 4))]),
    "take_nc": (lambda M, x: M.take(x.t(), long(M, [1, 2, 3])), lambda M: [mk(M, (3, 4))]),
    "masked_select": (
        lambda M, x: x.masked_select(boolt(M, [True, False, True, True])),
        lambda M: [mk(M, (3, 4))],
    ),
    "masked_select_broadcast": (
        lambda M, x: M.masked_select(x, boolt(M, [[[True, False, True, True]], [[False] * 4]])),
        lambda M: [mk(M, (3, 4))],
    ),
    "index_put_acc_broadcast": (
        lambda M, x, v: x.index_put((long(M, [2, 0, 2]), long(M, [1, 1, 1])), v, accumulate=True),
        lambda M: [mk(M, (3, 4)), mk(M, (1,), 1)],
    ),
    "cat_d0": (lambda M, a, b: M.cat([a, b]), lambda M: [mk(M, (2, 3)), mk(M, (1, 3), 1)]),
    "cat_d1": (lambda M, a, b: M.cat((a, b, a), 1), lambda M: [mk(M, (2, 3)), mk(M, (2, 1), 1)]),
    "cat_neg_nc": (
        lambda M, a, b: M.cat([a.t(), b], dim=-1),
        lambda M: [mk(M, (3, 2)), mk(M, (2, 2), 1)],
    ),
    "cat_legacy_empty": (
        lambda M, a, b: M.cat([a, b], 1),
        lambda M: [mk(M, (0,)), mk(M, (2, 2), 1)],
    ),
    "concat": (lambda M, a, b: M.concat([a, b]), lambda M: [mk(M, (2,)), mk(M, (3,), 1)]),
    "stack_d0": (lambda M, a, b: M.stack([a, b]), lambda M: [mk(M, (2, 3)), mk(M, (2, 3), 1)]),
    "stack_last_nc": (
        lambda M, a, b: M.stack([a.t(), b], -1),
        lambda M: [mk(M, (3, 2)), mk(M, (2, 3), 1)],
    ),
    "split_int": (lambda M, x: x.split(2, 1), lambda M: [mk(M, (3, 5))]),
    "split_sections": (lambda M, x: M.split(x, [1, 0, 2], 0), lambda M: [mk(M, (3, 5))]),
    "split_partial_use": (lambda M, x: M.split(x, 2)[1], lambda M: [mk(M, (5, 2))]),
    "chunk": (lambda M, x: x.chunk(3, -1), lambda M: [mk(M, (2, 7))]),
    "chunk_fn_nc": (lambda M, x: M.chunk(x.t(), 2), lambda M: [mk(M, (2, 5))]),
    "unbind": (lambda M, x: x.unbind(1), lambda M: [mk(M, (2, 3))]),
    "unbind_partial": (lambda M, x: M.unbind(x)[2], lambda M: [mk(M, (3, 2))]),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_matches_torch(name):
    fn, make = OPS[name]
    check_oracle(lambda M, *a: fn(M, *a), make)


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_gradcheck(name):
    fn, make = OPS[name]
    gradcheck(lambda M, *a: fn(M, *a), make)


def test_scatter_add_src_larger_than_index_gradcheck():
    # torch's backward rejects this case; ferrograd pads the gradient
    gradcheck(
        lambda M, x, s: x.scatter_add(0, long(M, [[0, 2]]), s),
        lambda M: [mk(M, (3, 4)), mk(M, (2, 3), 1)],
    )


def test_cat_type_promotion():
    a = fg.tensor([1, 2])
    b = fg.tensor([0.5], dtype=fg.float64)
    c = fg.tensor([True])
    assert fg.cat([a, b]).dtype == fg.float64
    assert fg.cat([a, c]).dtype == fg.int64
    assert vals(fg.cat([a, c])) == [1, 2, 1]
    assert fg.stack([fg.tensor([1.0]), fg.tensor([1.0], dtype=fg.float64)]).dtype == fg.float64
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = fg.tensor([3.0], dtype=fg.float64, requires_grad=True)
    fg.cat([x, y]).sum().backward()
    assert x.grad.dtype == fg.float32 and y.grad.dtype == fg.float64


def test_split_chunk_unbind_are_views():
    x = mk(fg, (4, 6), requires_grad=False)
    for pieces in [x.split(2), fg.split(x, [1, 3], 0), x.chunk(4, 1), x.unbind(0)]:
        for p in pieces:
            assert p._base is not None
    assert [tuple(p.shape) for p in fg.chunk(fg.zeros(6), 4)] == [(2,), (2,), (2,)]
    assert [tuple(p.shape) for p in fg.chunk(fg.zeros(0), 3)] == [(0,), (0,), (0,)]
    x = mk(fg, (4, 6))
    assert x.split(2)[0].grad_fn.name() == "SplitBackward0"
    assert x.unbind()[0].grad_fn.name() == "UnbindBackward0"
    assert fg.cat([x, x]).grad_fn.name() == "CatBackward0"
    assert fg.stack([x, x]).grad_fn.name() == "StackBackward0"


def test_inplace_ops_autograd_and_versions():
    x = mk(fg, (3, 4))
    s = mk(fg, (2, 4), 1)
    a = x * 1
    a.scatter_add_(0, fg.tensor(IDX_G0), s)
    a.masked_fill_(fg.tensor([True, False, False, False]), 0.0)
    a.index_put_((fg.tensor([1]),), fg.tensor([9.0], dtype=fg.float64), accumulate=True)
    a.scatter_(1, fg.tensor([[0], [1], [2]]), 1.0)
    assert a._version == 4
    a.sum().backward()
    assert x.grad is not None and s.grad is not None
    # cross-check with the out-of-place ops
    x2, s2 = mk(fg, (3, 4)), mk(fg, (2, 4), 1)
    b = x2.scatter_add(0, fg.tensor(IDX_G0), s2)
    b = b.masked_fill(fg.tensor([True, False, False, False]), 0.0)
    b = b.index_put((fg.tensor([1]),), fg.tensor([9.0], dtype=fg.float64), accumulate=True)
    b = b.scatter(1, fg.tensor([[0], [1], [2]]), 1.0)
    b.sum().backward()
    assert_close(vals(a), vals(b))
    assert_close(vals(x.grad), vals(x2.grad))
    assert_close(vals(s.grad), vals(s2.grad))


def test_inplace_on_view_rebases_base():
    x = mk(fg, (3, 4))
    a = x * 2
    a[1].masked_fill_(fg.tensor([True, True, False, False]), 0.0)
    a.sum().backward()
    assert vals(x.grad) == [2, 2, 2, 2, 0, 0, 2, 2, 2, 2, 2, 2]


def test_inplace_without_grad_writes_directly():
    x = fg.zeros(2, 3)
    x.index_put_((fg.tensor([0, 0]), fg.tensor([1, 1])), fg.tensor(1.0), accumulate=True)
    x.masked_fill_(fg.tensor([False, False, True]), 5.0)
    x.scatter_add_(1, fg.tensor([[0]]), fg.tensor([[3.0]]))
    x[1, 0] = 7.0
    assert vals(x) == [3, 2, 5, 7, 0, 5]
    assert x._version == 4


def test_nonzero():
    x = fg.tensor([[0.0, 1.0], [2.0, 0.0]])
    assert vals(x.nonzero()) == [0, 1, 1, 0]
    assert tuple(fg.nonzero(x).shape) == (2, 2)
    r, c = x.nonzero(as_tuple=True)
    assert vals(r) == [0, 1] and vals(c) == [1, 0]


def test_double_backward_through_getitem():
    x = mk(fg, (3, 4))
    y = (x[[0, 2]] * x[[0, 2]]).sum()
    (g,) = fg.autograd.grad([y], [x], create_graph=True)
    (gg,) = fg.autograd.grad([g.sum()], [x])
    assert vals(gg) == [2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2, 2]


# ---------------------------------------------------------------- errors

X34 = lambda M: M.tensor([[0.0] * 4] * 3)  # noqa: E731

ERRORS = {
    "int_out_of_range": (lambda M: X34(M)[5], IndexError),
    "neg_int_out_of_range": (lambda M: X34(M)[-4], IndexError),
    "too_many": (lambda M: X34(M)[0, 0, 0], IndexError),
    "too_many_tensor": (lambda M: X34(M)[0, 0, long(M, [0])], IndexError),
    "negative_step": (lambda M: X34(M)[::-1], ValueError),
    "zero_step": (lambda M: X34(M)[::0], ValueError),
    "ellipsis_then_too_many": (lambda M: M.zeros(2, 3, 4)[..., 0, ..., 0], IndexError),
    "float_index": (lambda M: X34(M)[1.5], IndexError),
    "float_tensor_index": (lambda M: X34(M)[M.tensor([0.0, 1.0])], IndexError),
    "tensor_out_of_range": (lambda M: X34(M)[long(M, [5])], IndexError),
    "tensor_neg_out_of_range": (lambda M: X34(M)[long(M, [-4])], IndexError),
    "mask_shape": (lambda M: X34(M)[boolt(M, [True, False])], IndexError),
    "broadcast_mismatch": (lambda M: X34(M)[long(M, [0, 1]), long(M, [0, 1, 2])], IndexError),
    "zero_dim_int": (lambda M: M.tensor(1.0)[0], IndexError),
    "gather_oob": (lambda M: X34(M).gather(0, long(M, [[5]])), RuntimeError),
    "gather_negative": (lambda M: X34(M).gather(0, long(M, [[-1]])), RuntimeError),
    "gather_ndim": (lambda M: X34(M).gather(0, long(M, [0])), RuntimeError),
    "gather_size": (lambda M: X34(M).gather(0, long(M, [[0] * 5])), RuntimeError),
    "gather_float_index": (lambda M: X34(M).gather(0, M.tensor([[0.0]])), RuntimeError),
    "gather_dim": (lambda M: X34(M).gather(2, long(M, [[0]])), IndexError),
    "index_select_oob": (lambda M: X34(M).index_select(0, long(M, [3])), IndexError),
    "index_select_neg": (lambda M: X34(M).index_select(0, long(M, [-1])), IndexError),
    "index_select_2d": (lambda M: X34(M).index_select(0, long(M, [[1]])), IndexError),
    "index_select_float": (lambda M: X34(M).index_select(0, M.tensor([1.0])), RuntimeError),
    "scatter_add_oob": (lambda M: X34(M).scatter_add(0, long(M, [[3]]), X34(M)), RuntimeError),
    "scatter_dtype": (lambda M: X34(M).scatter(1, long(M, [[0]]), long(M, [[1]])), RuntimeError),
    "scatter_size": (lambda M: X34(M).scatter(1, long(M, [[0, 1]]), M.zeros(1, 1)), RuntimeError),
    "take_oob": (lambda M: X34(M).take(long(M, [12])), IndexError),
    "take_float": (lambda M: X34(M).take(M.tensor([1.0])), RuntimeError),
    "masked_fill_float_mask": (
        lambda M: X34(M).masked_fill(M.tensor([1.0, 0, 0, 0]), 1.0),
        RuntimeError,
    ),
    "masked_fill_1d_value": (
        lambda M: X34(M).masked_fill(boolt(M, [True] * 4), M.tensor([1.0, 2.0])),
        RuntimeError,
    ),
    "masked_fill_inplace_broadcast": (
        lambda M: X34(M).masked_fill_(M.ones(2, 3, 4, dtype=M.bool), 1.0),
        RuntimeError,
    ),
    "masked_select_float": (lambda M: X34(M).masked_select(M.tensor([1.0])), RuntimeError),
    "index_put_dtype": (lambda M: X34(M).index_put_((long(M, [0]),), long(M, [1])), RuntimeError),
    "index_put_shape": (
        lambda M: X34(M).index_put((long(M, [0]),), M.tensor([1.0, 2.0])),
        RuntimeError,
    ),
    "index_put_oob": (lambda M: X34(M).index_put_((long(M, [3]),), M.tensor(1.0)), IndexError),
    "cat_shapes": (lambda M: M.cat([X34(M), M.zeros(2, 3)]), RuntimeError),
    "cat_ndim": (lambda M: M.cat([X34(M), M.zeros(3)]), RuntimeError),
    "cat_empty": (lambda M: M.cat([]), ValueError),
    "cat_zero_dim": (lambda M: M.cat([M.tensor(1.0)]), RuntimeError),
    "cat_dim": (lambda M: M.cat([X34(M)], 2), IndexError),
    "cat_not_list": (lambda M: M.cat(X34(M)), TypeError),
    "cat_non_tensor": (lambda M: M.cat([X34(M), 1]), TypeError),
    "stack_shapes": (lambda M: M.stack([X34(M), M.zeros(2, 3)]), RuntimeError),
    "stack_empty": (lambda M: M.stack([]), RuntimeError),
    "stack_dim": (lambda M: M.stack([X34(M)], 3), IndexError),
    "split_sections": (lambda M: M.split(X34(M), [1, 1]), RuntimeError),
    "split_zero": (lambda M: M.split(X34(M), 0), RuntimeError),
    "split_negative": (lambda M: X34(M).split(-1), RuntimeError),
    "split_0d": (lambda M: M.tensor(1.0).split(1), RuntimeError),
    "chunk_zero": (lambda M: M.chunk(X34(M), 0), RuntimeError),
    "chunk_0d": (lambda M: M.tensor(1.0).chunk(1), RuntimeError),
    "unbind_0d": (lambda M: M.unbind(M.tensor(1.0)), IndexError),
    "unbind_dim": (lambda M: X34(M).unbind(2), IndexError),
}

# messages that ferrograd words differently from torch
LOOSE_MESSAGES = {
    "ellipsis_then_too_many",
    "float_index",
    "gather_float_index",
    "scatter_add_oob",
    "gather_ndim",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    fn, exc = ERRORS[name]
    with pytest.raises(exc) as info:
        fn(fg)
    assert str(info.value)


@pytest.mark.parametrize("name", sorted(set(ERRORS) - LOOSE_MESSAGES))
def test_error_messages_match_torch(name, torch):
    fn, exc = ERRORS[name]
    with pytest.raises(exc) as t_info:
        fn(torch)
    with pytest.raises(exc) as f_info:
        fn(fg)
    assert str(f_info.value) == str(t_info.value)


def test_failed_inplace_ops_change_nothing():
    x = fg.zeros(3, 4)
    for bad in [
        lambda: x.index_put_((fg.tensor([0, 7]),), fg.tensor(1.0), accumulate=True),
        lambda: x.scatter_add_(0, fg.tensor([[0, 1, 9]]), fg.ones(1, 3)),
        lambda: x.scatter_(0, fg.tensor([[0, -1]]), 2.0),
        lambda: x.__setitem__(fg.tensor([1, 5]), 3.0),
        lambda: x.__setitem__((0, 9), 3.0),
        lambda: x.masked_fill_(fg.tensor([1.0, 0, 0, 0]), 1.0),
    ]:
        with pytest.raises((IndexError, RuntimeError)):
            bad()
    assert vals(x) == [0.0] * 12
    assert x._version == 0


ZERO_DIM = {
    "none": lambda M: None,
    "ellipsis": lambda M: Ellipsis,
    "empty_tuple": lambda M: (),
    "true": lambda M: True,
    "false": lambda M: False,
    "bool_tensor": lambda M: boolt(M, True),
    "none_none": lambda M: (None, Ellipsis, None),
}


@pytest.mark.parametrize("name", sorted(ZERO_DIM))
def test_getitem_zero_dim_matches_torch(name):
    check_oracle(lambda M, x: x[ZERO_DIM[name](M)], lambda M: [mk(M, ())])


def test_getitem_zero_dim_values():
    x = fg.tensor(2.5)
    assert tuple(x[None].shape) == (1,) and vals(x[None]) == [2.5]
    assert tuple(x[...].shape) == () and x[...]._base is not None
    assert tuple(x[fg.tensor(True)].shape) == (1,)
    assert tuple(x[False].shape) == (0,)
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        x[0]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
        x[fg.tensor([True])]


def test_numpy_indices():
    np = pytest.importorskip("numpy")
    x = fg.tensor([[0.0, 1, 2], [3, 4, 5]])
    assert vals(x[np.int64(1)]) == [3, 4, 5]
    assert vals(x[np.array([1, 0]), np.array([2, 2])]) == [5, 2]
    assert vals(x[np.array([[True, False, True], [False, False, True]])]) == [0, 2, 5]
    x[np.int64(0), np.int64(1)] = np.float64(9.0)
    assert vals(x)[1] == 9.0
    with pytest.raises(TypeError, match="can't assign a numpy.ndarray to a torch.FloatTensor"):
        x[0] = np.array([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="can't assign a list to a torch.FloatTensor"):
        x[0] = [1.0, 2.0, 3.0]


@pytest.mark.parametrize("shape", [(3, 70001), (2, 3, 40000), (150000,)])
def test_nonzero_and_mask_index_over_many_pieces(shape, at_threads):
    # Counted and written per piece of 65536 elements, in parallel: every
    # piece boundary (mid-row too) must give numpy's coordinates.
    rng = np.random.default_rng(5)
    a = rng.random(shape) > 0.3
    v = rng.standard_normal(shape)
    want = np.stack(np.nonzero(a), axis=1)
    for n in (1, 2):
        m = fg.from_numpy(a)
        got = at_threads(n, lambda: fg.nonzero(m))
        np.testing.assert_array_equal(got.numpy(), want)
        cols = at_threads(n, lambda: fg.nonzero(m, as_tuple=True))
        for c, w in zip(cols, np.nonzero(a)):
            np.testing.assert_array_equal(c.numpy(), w)
        np.testing.assert_array_equal(fg.from_numpy(v)[m].numpy(), v[a])
