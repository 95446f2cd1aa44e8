"""Indexing: __getitem__ and __setitem__ (values, views, strides, gradients).
The indexing and joining ops, errors, zero-dim and numpy indices:
test_index_join_ops.py; the shared helpers: index_helpers.py.

Numeric checks (central differences in float64, first and second order) run
everywhere; comparisons with torch run when torch is installed.
"""

import pytest

import ferrograd as fg
from index_helpers import assert_close, boolt, check_oracle, gradcheck, long, mk, vals, tvals


MASK45 = [
    [True, False, True, False, False],
    [False, False, False, False, False],
    [True, True, True, True, True],
    [False, True, False, False, True],
]
MASK56 = [[(i * 6 + j) % 3 == 0 for j in range(6)] for i in range(5)]

# ---------------------------------------------------------------- getitem

GETITEM = {
    "int": lambda M: 1,
    "neg_int": lambda M: -1,
    "two_ints": lambda M: (1, 2),
    "neg_step_slice": lambda M: (-1, slice(None, None, 2)),
    "ellipsis_none": lambda M: (Ellipsis, None),
    "none_int_ellipsis_none": lambda M: (None, 1, Ellipsis, None),
    "slice": lambda M: slice(1, 3),
    "slice_step_int": lambda M: (slice(None), slice(None, None, 3), 2),
    "ellipsis_int": lambda M: (Ellipsis, 1),
    "empty_tuple": lambda M: (),
    "ellipsis": lambda M: Ellipsis,
    "ellipsis_twice": lambda M: (Ellipsis, 0, Ellipsis),
    "clamped_slice": lambda M: slice(-100, 100),
    "empty_slice": lambda M: slice(3, 1),
    "zero_dim_int_tensor": lambda M: long(M, 2),
    "idx_tensor": lambda M: long(M, [0, 2]),
    "idx_tensor_2d": lambda M: long(M, [[0, 1], [2, 3]]),
    "idx_negative_dup": lambda M: long(M, [-1, 0, -1, -1]),
    "mask": lambda M: boolt(M, MASK45),
    "mask_then_int": lambda M: (boolt(M, MASK45), 1),
    "mask_then_none": lambda M: (boolt(M, MASK45), None),
    "slice_then_mask": lambda M: (slice(None), boolt(M, MASK56)),
    "two_lists": lambda M: ([0, 2], [1, 1]),
    "slice_list": lambda M: (slice(None), [0, 2]),
    "list_of_bools": lambda M: [True, False, True, True],
    "idx_slice_idx": lambda M: (long(M, [0, 1, 3]), slice(None), long(M, [0, 2, 5])),
    "slice_idx_idx": lambda M: (slice(None), long(M, [0, 1, 3]), long(M, [0, 2, 5])),
    "idx_int_idx": lambda M: (long(M, [0, 1, 3]), 1, long(M, [0, 2, 5])),
    "int_slice_idx": lambda M: (1, slice(None), long(M, [0, 2, 5])),
    "ellipsis_idx": lambda M: (Ellipsis, long(M, [5, 0])),
    "broadcast_idx": lambda M: (long(M, [[0], [1]]), long(M, [1, 2, 3])),
    "idx_none_idx": lambda M: (long(M, [0, 1]), None, long(M, [2, 3])),
    "none_list": lambda M: (None, [1, 0, 1]),
    "true": lambda M: True,
    "false": lambda M: False,
    "int_true": lambda M: (1, True),
    "zero_dim_bool": lambda M: boolt(M, True),
    "empty_list": lambda M: [],
    "list_as_tuple": lambda M: [[0, 1], [1, 1]],
    "slice_step_idx": lambda M: (slice(None, None, 2), slice(None), long(M, [1, 1])),
}


@pytest.mark.parametrize("name", sorted(GETITEM))
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_getitem_matches_torch(name, layout):
    def make(M):
        if layout == "contiguous":
            return [mk(M, (4, 5, 6))]
        return [mk(M, (6, 5, 4))]

    def fn(M, x):
        if layout == "transposed":
            x = x.permute(2, 1, 0)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return x[GETITEM[name](M)]

    check_oracle(fn, make)


# (base shape, a (4, 5, 6) view of it)
LAYOUTS = {
    "contiguous": ((4, 5, 6), lambda x: x),
    "transposed": ((6, 5, 4), lambda x: x.transpose(0, 2)),
    "permuted": ((6, 4, 5), lambda x: x.permute(1, 2, 0)),
    "sliced": ((4, 10, 6), lambda x: x[:, ::2]),
    "expanded": ((1, 5, 6), lambda x: x.expand(4, 5, 6)),
}


def _strides_and_name(M, x, idx):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = x[idx]
    # strides of dims of size 1 are arbitrary
    st = [s for s, n in zip(y.stride(), y.shape) if n > 1] if y.numel() > 0 else None
    return tuple(y.shape), st, type(y.grad_fn).__name__ if y.grad_fn is not None else None


@pytest.mark.parametrize("name", sorted(GETITEM))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_getitem_strides_and_grad_fn_match_torch(torch, name, layout):
    """Advanced indexing lays its result out as torch's TensorIterator does
    (the kept dims in the source's memory order); basic indexing's views
    and their grad_fn names follow torch's overloads."""

    def case(M):
        shape, view = LAYOUTS[layout]
        x = view(mk(M, shape, requires_grad=True))
        return _strides_and_name(M, x, GETITEM[name](M))

    assert case(fg) == case(torch)


def test_index_output_layouts():
    """Contiguous sources keep the contiguous gather; others take the
    strided walk, and both give the same values."""
    x = mk(fg, (3, 2, 2, 2), requires_grad=False).transpose(2, 0)
    i = fg.tensor([1, 0, 1])
    y = x[i]
    assert y.stride() == (12, 2, 4, 1)
    assert tvals(y) == tvals(x.contiguous()[i])
    assert x.contiguous()[i].is_contiguous()


def test_getitem_views_share_storage():
    x = mk(fg, (4, 5), requires_grad=False)
    for idx in [1, (slice(1, 3), 2), (Ellipsis, None), (), slice(None, None, 2)]:
        y = x[idx]
        assert y._base is not None
        v0 = x._version
        y.zero_() if y.numel() else None
        assert x._version == v0 + 1
    assert all(v == 0 for v in vals(x[1])) and all(v == 0 for v in vals(x[:, 2]))
    # advanced indexing copies
    z = x[[0, 1]]
    assert z._base is None


def test_getitem_values_without_torch():
    x = fg.tensor([[0.0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]])
    assert vals(x[1]) == [4, 5, 6, 7]
    assert vals(x[-1, ::2]) == [8, 10]
    assert tuple(x[..., None].shape) == (3, 4, 1)
    assert vals(x[[0, 2], [1, 1]]) == [1, 9]
    assert vals(x[:, [0, 2]]) == [0, 2, 4, 6, 8, 10]
    assert vals(x[fg.tensor([[True, False, False, True]] * 3)]) == [0, 3, 4, 7, 8, 11]
    assert vals(x[fg.tensor([2, -3])]) == [8, 9, 10, 11, 0, 1, 2, 3]
    # non-adjacent advanced indices put the broadcast dims first
    y = fg.zeros(2, 3, 4, 5)
    assert tuple(y[fg.tensor([0, 1]), :, fg.tensor([0, 1])].shape) == (2, 3, 5)
    assert tuple(y[:, fg.tensor([0, 1]), fg.tensor([0, 1])].shape) == (2, 2, 5)
    assert tuple(y[:, fg.tensor([0, 1]), None, fg.tensor([0, 1])].shape) == (2, 2, 1, 5)
    assert tuple(y[1, :, fg.tensor([0, 1]), fg.tensor([0, 1])].shape) == (3, 2)


@pytest.mark.parametrize(
    "name",
    [
        "int",
        "two_ints",
        "slice_step_int",
        "idx_slice_idx",
        "mask",
        "broadcast_idx",
        "idx_negative_dup",
        "mask_then_int",
    ],
)
def test_getitem_gradcheck(name):
    gradcheck(lambda M, x: x[GETITEM[name](M)], lambda M: [mk(M, (4, 5, 6))])


# ---------------------------------------------------------------- setitem

SETITEM = {
    "int_scalar": (lambda M: 1, None),
    "int_tensor": (lambda M: 1, (6,)),
    "slice_col": (lambda M: (slice(None), 2), (4,)),
    "slice_broadcast": (lambda M: slice(1, 3), (1, 6)),
    "leading_ones": (lambda M: 0, (1, 1, 6)),
    "step": (lambda M: (1, slice(None, None, 2)), (3,)),
    "list": (lambda M: [0, 2], (2, 6)),
    "two_lists": (lambda M: ([0, 2], [1, 4]), (2,)),
    "mask_scalar": (lambda M: boolt(M, [r + [True] for r in MASK45]), None),
    "mask_values": (lambda M: boolt(M, [[True, False, True, False, False, True]] * 4), (12,)),
    "slice_list": (lambda M: (slice(None), [1, 3]), (4, 2)),
    "idx_broadcast": (lambda M: (long(M, [3, 0]), slice(None)), (6,)),
    "none_int": (lambda M: (None, 1), (6,)),
    "view_then_adv": (lambda M: (slice(1, None), [0, 2]), (3, 2)),
    "ellipsis": (lambda M: Ellipsis, (6,)),
    "zero_dim_int_tensor": (lambda M: long(M, 3), (6,)),
}


@pytest.mark.parametrize("name", sorted(SETITEM))
def test_setitem_matches_torch(name):
    idx, vshape = SETITEM[name]

    def make(M):
        ins = [mk(M, (4, 6), seed=1)]
        if vshape is not None:
            ins.append(mk(M, vshape, seed=2))
        return ins

    def fn(M, x, v=None):
        a = x * 1.5  # a non-leaf
        value = 3.25 if v is None else v * 2
        a[idx(M)] = value
        return a

    check_oracle(fn, make)


SETITEM_GRADCHECK = ["int_tensor", "list", "mask_values", "two_lists", "view_then_adv", "slice_col"]


@pytest.mark.parametrize("name", SETITEM_GRADCHECK)
def test_setitem_gradcheck(name):
    idx, vshape = SETITEM[name]

    def fn(M, x, v):
        a = x * 1.0
        a[idx(M)] = v
        return a

    gradcheck(fn, lambda M: [mk(M, (4, 6), seed=1), mk(M, vshape, seed=2)])


def test_setitem_versions_and_history():
    x = mk(fg, (3, 4))
    a = x * 1
    v0 = a._version
    a[0] = 5.0
    assert a._version == v0 + 1
    assert a.grad_fn.name() == "CopySlices"
    a[[1, 2], [0, 0]] = fg.tensor([7.0, 8.0], dtype=fg.float64)
    assert a._version == v0 + 2
    assert a.grad_fn.name() == "IndexPutBackward0"
    a.sum().backward()
    assert vals(x.grad) == [0, 0, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1]


def test_setitem_on_leaf_requiring_grad_fails_and_changes_nothing():
    x = mk(fg, (3, 4))
    before = vals(x)
    for idx in [0, [0, 1], (slice(None), 1)]:
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            x[idx] = 1.0
    assert vals(x) == before and x._version == 0


def test_setitem_int_and_bool_tensors():
    z = fg.zeros(3, dtype=fg.int64)
    z[0] = 2.7
    z[[1]] = 3
    assert vals(z) == [2, 3, 0]
    b = fg.zeros(3, dtype=fg.bool)
    b[0] = 5
    assert vals(b) == [True, False, False]
    with pytest.raises(
        RuntimeError, match="Index put requires the source and destination dtypes match"
    ):
        z[[0]] = fg.tensor([2.5])
    assert vals(z) == [2, 3, 0]


def test_setitem_value_requiring_grad_into_plain_tensor():
    v = mk(fg, (4,))
    a = fg.zeros(3, 4, dtype=fg.float64)
    a[1] = v
    assert a.requires_grad
    (a * a).sum().backward()
    assert_close(vals(v.grad), [2 * e for e in vals(v)])
