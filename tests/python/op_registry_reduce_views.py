"""Op registry entries: reductions, matrix products, softmax, views and
copies, and indexing. Loaded by ``op_registry``."""

from __future__ import annotations

import numpy as np

from op_registry import A, Const, NC, S, binary_samples, make_tensor, op

# ---- reductions ----
REDUCE_SAMPLES = [
    S(A(3, 4)),
    S(A(3, 4), dim=1),
    S(A(2, 3, 4), dim=(0, 2), keepdim=True),
    S(A(2, 3, 4), dim=-1, keepdim=True),
    S(NC(3, 4), dim=0),
    S(A()),
]
op(
    "sum",
    lambda lib, x, **kw: x.sum(**kw),
    REDUCE_SAMPLES + [S(A(3, 4), dim=[])],
    needs=("Tensor.sum",),
    api=("sum",),
)
op("mean", lambda lib, x, **kw: x.mean(**kw), REDUCE_SAMPLES, needs=("Tensor.mean",), api=("mean",))
op(
    "prod",
    lambda lib, x, **kw: lib.prod(x, **kw),
    [
        S(A(3, 4)),
        S(A(3, 4), dim=1),
        S(A(2, 3, 4), dim=0, keepdim=True),
        S(NC(3, 4), dim=-1),
        S(A()),
    ],
    api=("Tensor.prod",),
)
AMAX_SAMPLES = [
    S(A(3, 4)),
    S(A(3, 4), dim=1),
    S(A(2, 3, 4), dim=(0, 2), keepdim=True),
    S(NC(3, 4), dim=0),
]
op("amax", lambda lib, x, **kw: lib.amax(x, **kw), AMAX_SAMPLES, api=("Tensor.amax",))
op("amin", lambda lib, x, **kw: lib.amin(x, **kw), AMAX_SAMPLES, api=("Tensor.amin",))
op(
    "max_full",
    lambda lib, x: lib.max(x),
    [S(A(3, 4)), S(NC(3, 4))],
    needs=("max",),
    api=("Tensor.max",),
)
op(
    "max_dim",
    lambda lib, x, **kw: lib.max(x, **kw).values,
    [S(A(3, 4), dim=1), S(A(2, 3, 4), dim=0, keepdim=True), S(NC(3, 4), dim=-1)],
    needs=("max",),
)
op("max_binary", lambda lib, x, y: lib.max(x, y), binary_samples()[:2], needs=("max",))
op(
    "min_full",
    lambda lib, x: lib.min(x),
    [S(A(3, 4)), S(NC(3, 4))],
    needs=("min",),
    api=("Tensor.min",),
)
op(
    "min_dim",
    lambda lib, x, d, **kw: lib.min(x, d, **kw)[0],
    [S(A(3, 4), 1), S(A(2, 3, 4), 0, keepdim=True), S(NC(3, 4), -1)],
    needs=("min",),
)
VAR_SAMPLES = [
    S(A(3, 4)),
    S(A(3, 4), dim=1),
    S(A(3, 4), dim=1, correction=0),
    S(A(2, 3, 4), dim=(0, 2), keepdim=True, correction=2),
    S(NC(3, 4), dim=0, unbiased=False),
]
op("var", lambda lib, x, **kw: lib.var(x, **kw), VAR_SAMPLES, api=("Tensor.var",))
op("std", lambda lib, x, **kw: lib.std(x, **kw), VAR_SAMPLES, api=("Tensor.std",))
op(
    "norm",
    lambda lib, x, **kw: lib.norm(x, **kw),
    [
        S(A(3, 4)),
        S(A(3, 4), p=1, dim=1),
        S(A(3, 4), dim=0, keepdim=True),
        S(A(3, 4), p=3),
        S(NC(3, 4), p=2, dim=1),
    ],
    api=("Tensor.norm",),
)
op(
    "logsumexp",
    lambda lib, x, **kw: lib.logsumexp(x, **kw),
    [
        S(A(3, 4), dim=1),
        S(A(3, 4), dim=0, keepdim=True),
        S(A(2, 3, 4), dim=(0, 2)),
        S(NC(3, 4), dim=-1),
    ],
    api=("Tensor.logsumexp",),
)
op(
    "cumsum",
    lambda lib, x, **kw: lib.cumsum(x, **kw),
    [S(A(3, 4), dim=0), S(A(3, 4), dim=-1), S(A(5), dim=0), S(NC(3, 4), dim=1)],
    api=("Tensor.cumsum",),
)

# ---- linear algebra ----
op(
    "matmul",
    lambda lib, x, y: lib.matmul(x, y),
    [
        S(A(4), A(4)),
        S(A(3, 4), A(4)),
        S(A(4), A(4, 5)),
        S(A(3, 4), A(4, 5)),
        S(A(2, 3, 4), A(4, 5)),
        S(A(3, 4), A(2, 4, 5)),
        S(A(2, 1, 3, 4), A(5, 4, 2)),
        S(NC(3, 4), NC(4, 5)),
        S(A(4), A(2, 4, 3)),
    ],
    api=("Tensor.matmul",),
)
op(
    "matmul_op",
    lambda lib, x, y: x @ y,
    [S(A(3, 4), A(4, 5)), S(A(2, 3, 4), A(2, 4, 5))],
    needs=("Tensor.__matmul__",),
)
op(
    "mm",
    lambda lib, x, y: lib.mm(x, y),
    [S(A(3, 4), A(4, 5)), S(NC(3, 4), A(4, 5)), S(A(1, 4), NC(4, 2))],
    api=("Tensor.mm",),
)
op(
    "bmm",
    lambda lib, x, y: lib.bmm(x, y),
    [S(A(2, 3, 4), A(2, 4, 5)), S(NC(2, 3, 4), A(2, 4, 2))],
    api=("Tensor.bmm",),
)
op(
    "outer",
    lambda lib, x, y: lib.outer(x, y),
    [S(A(3), A(4)), S(A(1), A(2))],
    api=("Tensor.outer",),
)
op("dot", lambda lib, x, y: lib.dot(x, y), [S(A(5), A(5)), S(A(1), A(1))], api=("Tensor.dot",))

# ---- softmax ----
SOFTMAX_SAMPLES = [S(A(3, 4), 1), S(A(3, 4), 0), S(A(2, 3, 4), -1), S(NC(3, 4), 1), S(A(5), 0)]
op(
    "softmax",
    lambda lib, x, d: lib.softmax(x, d),
    SOFTMAX_SAMPLES,
    api=("Tensor.softmax", "nn.functional.softmax"),
)
op(
    "log_softmax",
    lambda lib, x, d: lib.log_softmax(x, dim=d),
    SOFTMAX_SAMPLES,
    api=("Tensor.log_softmax", "nn.functional.log_softmax"),
)

# ---- views and copies ----
op(
    "reshape",
    lambda lib, x, s: x.reshape(s),
    [
        S(A(3, 4), (4, 3)),
        S(A(3, 4), (-1,)),
        S(A(3, 4), (2, 2, 3)),
        S(NC(3, 4), (12,)),
        S(A(), (1, 1)),
    ],
    needs=("Tensor.reshape",),
    api=("reshape",),
)
op(
    "view",
    lambda lib, x, *s: x.view(*s),
    [S(A(3, 4), 12), S(A(2, 3, 4), 6, -1)],
    needs=("Tensor.view",),
)
op(
    "transpose",
    lambda lib, x, a, b: x.transpose(a, b),
    [S(A(3, 4), 0, 1), S(A(2, 3, 4), 0, 2), S(NC(3, 4), -1, -2)],
    needs=("Tensor.transpose",),
    api=("transpose",),
)
op("t", lambda lib, x: x.t(), [S(A(3, 4)), S(A(4))], needs=("Tensor.t",))
op(
    "permute",
    lambda lib, x, *d: x.permute(*d),
    [S(A(2, 3, 4), 2, 0, 1), S(NC(3, 4), 1, 0)],
    needs=("Tensor.permute",),
    api=("permute",),
)
op(
    "expand",
    lambda lib, x, *s: x.expand(*s),
    [S(A(3, 1), 3, 4), S(A(4), 2, 3, 4), S(A(3, 1), -1, 5), S(A(), 2, 2)],
    needs=("Tensor.expand",),
)
op(
    "sum_to_size",
    lambda lib, x, *s: x.sum_to_size(*s),
    [S(A(3, 4), 1, 4), S(A(2, 3, 4), 3, 1), S(A(2, 3), (3,)), S(A(3, 4), 3, 4), S(A(2, 3), 1)],
    needs=("Tensor.sum_to_size",),
)
op(
    "squeeze",
    lambda lib, x, *d: x.squeeze(*d),
    [S(A(3, 1, 4)), S(A(3, 1, 4), 1), S(A(1, 3, 1), (0, 2)), S(A(3, 4), 0)],
    needs=("Tensor.squeeze",),
    api=("squeeze",),
)
op(
    "unsqueeze",
    lambda lib, x, d: x.unsqueeze(d),
    [S(A(3, 4), 0), S(A(3, 4), -1), S(A(), 0)],
    needs=("Tensor.unsqueeze",),
    api=("unsqueeze",),
)
op(
    "flatten",
    lambda lib, x, *a: x.flatten(*a),
    [S(A(2, 3, 4)), S(A(2, 3, 4), 1), S(A(2, 3, 4), 0, 1), S(NC(3, 4))],
    needs=("Tensor.flatten",),
    api=("flatten",),
)
op(
    "narrow",
    lambda lib, x, d, s, n: x.narrow(d, s, n),
    [S(A(3, 4), 1, 1, 2), S(A(3, 4), 0, -2, 2), S(NC(3, 4), 1, 0, 3)],
    needs=("Tensor.narrow",),
    api=("narrow",),
)
op(
    "select",
    lambda lib, x, d, i: x.select(d, i),
    [S(A(3, 4), 1, 2), S(A(3, 4), 0, -1)],
    needs=("Tensor.select",),
    api=("select",),
)
op(
    "clone",
    lambda lib, x: x.clone(),
    [S(A(3, 4)), S(NC(3, 4))],
    needs=("Tensor.clone",),
    api=("clone",),
)
op("contiguous", lambda lib, x: x.contiguous() * 1.0, [S(NC(3, 4))], needs=("Tensor.contiguous",))
op(
    "inplace_add_on_view",
    lambda lib, x, y: _inplace_on_view(x, y),
    [S(A(3, 4), A(3, 2)), S(NC(3, 4), A(2))],
    needs=("Tensor.clone", "Tensor.narrow"),
)


def _inplace_on_view(x, y):
    z = x.clone()
    v = z.narrow(1, 1, 2)
    v.mul_(y)
    v.add_(y)
    return z * 2.0


# ---- indexing ----
def _getitem_basic(lib, x, which):
    return {
        0: lambda: x[1],
        1: lambda: x[:, 1:3],
        2: lambda: x[::2, 1::2],
        3: lambda: x[..., None],
        4: lambda: x[1:, None, -1],
        5: lambda: x[-1, ...],
    }[which]()


op(
    "getitem_basic",
    _getitem_basic,
    [S(A(3, 4), i) for i in range(6)] + [S(NC(3, 4), 1)],
    needs=("Tensor.__getitem__",),
)
op(
    "getitem_advanced",
    lambda lib, x, *idx: x[idx if len(idx) > 1 else idx[0]],
    [
        S(A(3, 4), Const([0, 2, 0])),
        S(A(3, 4), Const([[0, 1], [2, 2]])),
        S(A(3, 4), slice(None), Const([1, 1, 3])),
        S(A(3, 4), Const([[True, False, True, False]] * 3, "bool")),
        S(A(3, 4), Const([0, 2]), Const([1, 3])),
        S(NC(3, 4), Const([2, 2])),
    ],
    needs=("Tensor.__getitem__",),
)
op(
    "index_select",
    lambda lib, x, d, i: lib.index_select(x, d, i),
    [S(A(3, 4), 0, Const([2, 0, 2])), S(A(3, 4), 1, Const([3, 1])), S(NC(3, 4), 1, Const([0, 0]))],
    api=("Tensor.index_select",),
)
op(
    "gather",
    lambda lib, x, d, i: lib.gather(x, d, i),
    [
        S(A(3, 4), 1, Const([[0, 2], [1, 0], [3, 3]])),
        S(A(3, 4), 0, Const([[2, 0, 1, 2], [0, 0, 0, 1]])),
        S(NC(3, 4), 1, Const([[1], [1], [0]])),
    ],
    api=("Tensor.gather",),
)
op(
    "scatter_add",
    lambda lib, x, d, i, s: lib.scatter_add(x, d, i, s),
    [
        S(A(3, 4), 1, Const([[0, 2], [1, 0], [3, 3]]), A(3, 2)),
        S(A(3, 4), 0, Const([[2, 0, 1, 2], [2, 0, 0, 1]]), A(2, 4)),
        S(NC(3, 4), 1, Const([[1], [1], [0]]), A(3, 1)),
    ],
    api=("Tensor.scatter_add",),
)
op(
    "index_add",
    lambda lib, x, d, i, s, **kw: lib.index_add(x, d, i, s, **kw),
    [
        S(A(3, 4), 0, Const([2, 0, 2]), A(3, 4)),  # a repeated index accumulates
        S(A(3, 4), 1, Const([3, 1]), A(3, 2), alpha=2.5),
        S(NC(3, 4), -1, Const([0, 0, 1]), NC(3, 3)),
        S(A(2, 3, 2), 1, Const(2), A(2, 1, 2), alpha=-1),  # a 0-d index
        S(A(), 0, Const([0]), A()),
    ],
    api=("Tensor.index_add", "Tensor.index_add_"),
)
op(
    "index_copy",
    lambda lib, x, d, i, s: lib.index_copy(x, d, i, s),
    [
        S(A(3, 4), 0, Const([2, 0]), A(2, 4)),
        S(NC(3, 4), -1, Const([3, 1, 0]), NC(3, 3)),
        S(A(2, 3, 2), 1, Const(1), A(2, 1, 2)),
        S(A(3), 0, Const([1]), A()),  # a 0-d source into a vector
        S(A(), 0, Const([0]), A()),
    ],
    api=("Tensor.index_copy", "Tensor.index_copy_"),
)
op(
    "index_fill",
    lambda lib, x, d, i, v: lib.index_fill(x, d, i, v),
    [
        S(A(3, 4), 0, Const([2, 0, 2]), 1.5),
        S(NC(3, 4), -1, Const([3, -4]), -2.0),
        S(A(3, 4), 1, Const([1, 1, 3]), A()),  # a 0-d tensor value: its gradient too
        S(A(2, 3, 2), 2, Const(1), A()),
        S(A(), -1, Const([0]), A()),
    ],
    api=("Tensor.index_fill", "Tensor.index_fill_"),
)
op(
    "index_ops_inplace",
    lambda lib, x, s, t, v: _index_ops_inplace(lib, x, s, t, v),
    [S(A(3, 4), A(2, 4), A(3, 2), A()), S(NC(3, 4), NC(2, 4), A(3, 2), A())],
    needs=("Tensor.index_add_", "Tensor.index_copy_", "Tensor.index_fill_"),
)


def _index_ops_inplace(lib, x, s, t, v):
    z = x * 1.0
    z.index_add_(0, make_tensor(lib, np.array([2, 2]), "int64"), s, alpha=0.5)
    z.index_copy_(1, make_tensor(lib, np.array([3, 0]), "int64"), t)
    z.index_fill_(0, make_tensor(lib, np.array([1]), "int64"), v)
    return z * z


op(
    "masked_fill",
    lambda lib, x, m, v: lib.masked_fill(x, m, v),
    [
        S(A(3, 4), Const([[True, False, False, True]] * 3, "bool"), 0.5),
        S(A(3, 4), Const([False, True, True, False], "bool"), -1.0),
        S(NC(3, 4), Const([[True], [False], [True]], "bool"), 2.0),
    ],
    api=("Tensor.masked_fill",),
)
op(
    "where",
    lambda lib, c, x, y: lib.where(c, x, y),
    [
        S(Const([[True, False, True, False]] * 3, "bool"), A(3, 4), A(3, 4)),
        S(Const([True, False, False, True], "bool"), A(3, 4), A(1, 4)),
        S(Const([[True], [False], [True]], "bool"), NC(3, 4), A(4)),
    ],
    api=("Tensor.where",),
)
op(
    "where_scalar",
    lambda lib, c, x: lib.where(c, x, 0.0),
    [S(Const([[True, False, True, False]] * 3, "bool"), A(3, 4))],
    needs=("where",),
)
