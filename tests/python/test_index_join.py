"""Indexing and joining ops: values, views, gradients, errors.

Numeric checks (central differences in float64, first and second order) run
everywhere; comparisons with torch run when torch is installed.
"""

import random

import numpy as np
import pytest

import ferrograd as fg

# ---------------------------------------------------------------- helpers


def vals(t):
    """Row-major values of a ferrograd tensor, read without __getitem__."""
    f = t.detach().reshape(-1)
    return [f.select(0, i).item() for i in range(f.numel())]


def tvals(t):
    return t.detach().reshape(-1).tolist()


def values_of(M, t):
    return tvals(t) if M is not fg else vals(t)


def assert_close(a, b, tol=1e-9):
    assert len(a) == len(b), (a, b)
    for x, y in zip(a, b):
        if isinstance(y, bool) or isinstance(x, bool):
            assert bool(x) == bool(y), (a, b)
        else:
            assert abs(x - y) <= tol * (1 + abs(y)), (a, b)


def seq(n, seed):
    rng = random.Random(seed)
    return [round(rng.uniform(-2, 2), 3) for _ in range(n)]


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def nest(flat, shape):
    if not shape:
        return flat[0]
    step = numel(shape[1:])
    return [nest(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def mk(M, shape, seed=0, requires_grad=True):
    """A float64 leaf (not a view) of `shape` with deterministic values."""
    if 0 in shape:
        t = M.zeros(*shape, dtype=M.float64)
    else:
        t = M.tensor(nest(seq(numel(shape), seed), tuple(shape)), dtype=M.float64)
    if requires_grad:
        t.requires_grad_(True)
    return t


def weights(M, shape, k):
    if 0 in shape:
        return M.zeros(*shape, dtype=M.float64)
    return M.tensor(nest(seq(numel(shape), 1000 + k), tuple(shape)), dtype=M.float64)


def as_list(y):
    return list(y) if isinstance(y, (tuple, list)) else [y]


def loss_of(M, ys):
    total = 0
    for k, y in enumerate(ys):
        if y.dtype == M.float64:
            total = total + (y * weights(M, tuple(y.shape), k)).sum()
    return total


def run(M, fn, make):
    """Outputs (shape, values, is_view) and input grads of fn on make(M)."""
    ins = make(M)
    ys = as_list(fn(M, *ins))
    leaves = [t for t in ins if isinstance(t, M.Tensor) and t.requires_grad]
    outs = [(tuple(y.shape), values_of(M, y), y._base is not None) for y in ys]
    grads = []
    if leaves and any(y.requires_grad for y in ys):
        gs = M.autograd.grad([loss_of(M, ys)], leaves, allow_unused=True)
        grads = [None if g is None else values_of(M, g) for g in gs]
    return outs, grads


def check_oracle(fn, make, views=True):
    torch = pytest.importorskip("torch")
    t_outs, t_grads = run(torch, fn, make)
    f_outs, f_grads = run(fg, fn, make)
    assert len(t_outs) == len(f_outs)
    for (ts, tv, tview), (fs, fv, fview) in zip(t_outs, f_outs):
        assert ts == fs
        assert_close(fv, tv)
        if views:
            assert tview == fview
    assert len(t_grads) == len(f_grads)
    for tg, fgr in zip(t_grads, f_grads):
        if tg is None:
            assert fgr is None or all(v == 0 for v in fgr)
        else:
            assert_close(fgr, tg)


def gradcheck(fn, make, eps=1e-6, tol=1e-6):
    """fn(fg, *make(fg)) vs central differences, for the gradient (VJP) and
    for the double backward (the JVP obtained by differentiating the VJP
    with respect to the output gradient)."""
    ins = make(fg)
    leaves = [i for i, t in enumerate(ins) if isinstance(t, fg.Tensor) and t.requires_grad]
    assert leaves

    def f_at(vals_by_leaf):
        new = list(make(fg))
        for i, v in zip(leaves, vals_by_leaf):
            new[i] = fg.tensor(v, dtype=fg.float64).reshape(*ins[i].shape)
        with fg.no_grad():
            return as_list(fn(fg, *new))

    base = [vals(ins[i]) for i in leaves]

    def loss_at(vs):
        ys = f_at(vs)
        return sum(
            sum(a * b for a, b in zip(vals(y), vals(weights(fg, tuple(y.shape), k))))
            for k, y in enumerate(ys)
            if y.dtype == fg.float64
        )

    # first order
    ys = as_list(fn(fg, *ins))
    grads = fg.autograd.grad([loss_of(fg, ys)], [ins[i] for i in leaves], allow_unused=True)
    for j, g in enumerate(grads):
        num = []
        for e in range(len(base[j])):
            plus = [list(b) for b in base]
            minus = [list(b) for b in base]
            plus[j][e] += eps
            minus[j][e] -= eps
            num.append((loss_at(plus) - loss_at(minus)) / (2 * eps))
        got = [0.0] * len(num) if g is None else vals(g)
        assert_close(got, num, tol)

    # second order: d/dgo <vjp(go), v> == J v
    ys = as_list(fn(fg, *ins))
    ys = [y for y in ys if y.dtype == fg.float64]
    gos = [weights(fg, tuple(y.shape), 7 + k).requires_grad_(True) for k, y in enumerate(ys)]
    gs = fg.autograd.grad(
        ys, [ins[i] for i in leaves], grad_outputs=gos, create_graph=True, allow_unused=True
    )
    dirs = [seq(len(b), 77 + j) for j, b in enumerate(base)]
    s2 = 0
    for j, g in enumerate(gs):
        if g is not None:
            s2 = s2 + (g * fg.tensor(dirs[j], dtype=fg.float64).reshape(*g.shape)).sum()
    jv = fg.autograd.grad([s2], gos, allow_unused=True)
    plus = f_at([[b + eps * d for b, d in zip(bs, ds)] for bs, ds in zip(base, dirs)])
    minus = f_at([[b - eps * d for b, d in zip(bs, ds)] for bs, ds in zip(base, dirs)])
    plus = [y for y in plus if y.dtype == fg.float64]
    minus = [y for y in minus if y.dtype == fg.float64]
    for k, g in enumerate(jv):
        num = [(a - b) / (2 * eps) for a, b in zip(vals(plus[k]), vals(minus[k]))]
        got = [0.0] * len(num) if g is None else vals(g)
        assert_close(got, num, tol)


def long(M, v):
    return M.tensor(v, dtype=M.int64)


def boolt(M, v):
    return M.tensor(v, dtype=M.bool)


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
