"""sweep.py's operator case tables: unary, binary, compare, broadcast,
reduce, softmax, index, cat and copy cases, each family a function
returning its ``OpCase``s (matmul, conv and pool: sweep_ops_nn.py).
"""

from __future__ import annotations

import numpy as np

from .sweep_case import (
    BWD,
    F32,
    F64,
    FWD,
    I32,
    LOW,
    I64,
    INTS,
    U8,
    Arg,
    OpCase,
    _np_gelu,
    _np_layer_norm,
    _np_log_softmax,
    _np_logsumexp,
    _np_sigmoid,
    _np_softmax,
    _prod,
    _shape_str,
)

# Case tables -----------------------------------------------------------------------

# Element counts and the 2-D / 3-D shapes used for them.
SHAPES2 = {
    100: (10, 10),
    10_000: (100, 100),
    1_000_000: (1000, 1000),
    10_000_000: (2500, 4000),
}
SHAPE3 = (100, 100, 100)

UNARY = {
    # name: (fn, numpy reference, value domain)
    "exp": (lambda L, x: x.exp(), np.exp, "unit"),
    "tanh": (lambda L, x: x.tanh(), np.tanh, "normal"),
    "sigmoid": (lambda L, x: x.sigmoid(), _np_sigmoid, "normal"),
    "relu": (lambda L, x: x.relu(), lambda x: np.maximum(x, 0), "normal"),
    "gelu": (lambda L, x: L.nn.functional.gelu(x), _np_gelu, "normal"),
    "sin": (lambda L, x: x.sin(), np.sin, "normal"),
    "log": (lambda L, x: x.log(), np.log, "pos"),
    "sqrt": (lambda L, x: x.sqrt(), np.sqrt, "pos"),
}

BINARY = {
    # name: (fn, numpy reference, domain of a, domain of b)
    "add": (lambda L, a, b: a + b, np.add, "normal", "normal"),
    "mul": (lambda L, a, b: a * b, np.multiply, "normal", "normal"),
    "div": (lambda L, a, b: a / b, np.divide, "normal", "pos"),
    "pow": (lambda L, a, b: a.pow(b), np.power, "pos", "unit"),
    "maximum": (lambda L, a, b: L.maximum(a, b), np.maximum, "normal", "normal"),
}

COMPARE = {
    "gt": (lambda L, a, b: a > b, np.greater),
    "eq": (lambda L, a, b: a == b, np.equal),
}


class _Builder:
    def __init__(self):
        self.cases: list[OpCase] = []

    def add(
        self,
        family,
        op,
        args,
        fn,
        ref=None,
        *,
        layout=None,
        dtype=None,
        size=None,
        numel=None,
        modes=(FWD, BWD),
        kind="mem",
        fwd_flops=0.0,
        quick=False,
    ):
        """Adds the case in each mode; layout, dtype, size label and element
        count default to the first input's."""
        a0 = args[0]
        layout = layout or a0.layout
        dtype = dtype or a0.dtype
        size = size or _shape_str(a0.shape)
        numel = numel or _prod(a0.shape)
        if any(a.dtype in LOW for a in args):
            ref = None  # numpy computes no 2-byte float the library's way
        for mode in modes:
            self.cases.append(
                OpCase(
                    family,
                    op,
                    layout,
                    dtype,
                    size,
                    numel,
                    mode,
                    list(args),
                    fn,
                    ref,
                    kind,
                    fwd_flops,
                    quick,
                )
            )


def _lay_shape(n, layout):
    return SHAPE3 if layout == "perm" else SHAPES2[n]


def _unary_cases(b):
    def add(op, n, layout, dtype, quick=False):
        fn, ref, dom = UNARY[op]
        b.add("unary", op, [Arg(_lay_shape(n, layout), dtype, layout, dom)], fn, ref, quick=quick)

    for op in UNARY:
        add(op, 1_000_000, "contig", F32)
    for op in ("exp", "tanh", "relu"):
        for n in (100, 10_000, 10_000_000):
            add(op, n, "contig", F32, quick=(op == "exp" and n == 10_000))
        for layout in ("t", "perm", "step", "expand"):
            add(op, 1_000_000, layout, F32)
    add("exp", 10_000, "t", F32, quick=True)
    add("tanh", 10_000_000, "t", F32)
    add("tanh", 10_000_000, "step", F32)
    for op in ("exp", "tanh", "sigmoid", "sqrt"):
        add(op, 1_000_000, "contig", F64)
    for layout in ("t", "step"):
        add("tanh", 1_000_000, layout, F64)
    for dtype in LOW:
        for op in ("exp", "tanh", "relu", "sigmoid"):
            add(op, 1_000_000, "contig", dtype)
        add("exp", 10_000_000, "contig", dtype)
        add("tanh", 1_000_000, "t", dtype)


def _binary_cases(b):
    def add(op, n, layout, dtype, quick=False):
        fn, ref, da, db = BINARY[op]
        shape = _lay_shape(n, layout)
        la, lb = ("contig", "t") if layout == "mixed" else (layout, layout)
        if dtype in INTS:
            da = db = "int"
        args = [Arg(shape, dtype, la, da), Arg(shape, dtype, lb, db)]
        modes = (FWD,) if dtype in INTS else (FWD, BWD)
        b.add("binary", op, args, fn, ref, layout=layout, modes=modes, quick=quick)

    for op in BINARY:
        add(op, 1_000_000, "contig", F32)
    for op in ("add", "mul"):
        for n in (100, 10_000, 10_000_000):
            add(op, n, "contig", F32, quick=(op == "add" and n == 10_000))
        for layout in ("t", "mixed", "step", "perm"):
            add(op, 1_000_000, layout, F32)
    add("add", 10_000, "mixed", F32, quick=True)
    add("mul", 10_000_000, "mixed", F32)
    for op in ("add", "mul", "div", "pow"):
        add(op, 1_000_000, "contig", F64)
    for op in ("add", "mul"):
        add(op, 1_000_000, "contig", I64)
    for n in (10_000, 10_000_000):
        add("add", n, "contig", I64)
    add("add", 1_000_000, "t", I64)
    for dtype in (I32, U8):
        for op in ("add", "mul"):
            add(op, 1_000_000, "contig", dtype)
    add("add", 1_000_000, "t", I32)
    for dtype in LOW:
        for op in ("add", "mul", "div"):
            add(op, 1_000_000, "contig", dtype)
        add("add", 10_000_000, "contig", dtype)
        add("mul", 1_000_000, "t", dtype)

    # where(cond, a, b) with a precomputed bool mask
    shape = SHAPES2[1_000_000]
    for layout, dtype in (("contig", F32), ("t", F32), ("contig", F64)):
        cond = Arg(shape, gen=lambda r: r.random(shape) > 0.5, grad=False)
        args = [cond, Arg(shape, dtype, layout), Arg(shape, dtype, layout)]
        b.add(
            "binary",
            "where",
            args,
            lambda L, c, x, y: L.where(c, x, y),
            np.where,
            layout=layout,
            dtype=dtype,
        )


def _compare_cases(b):
    def add(op, shape, dtype, layout="contig", quick=False):
        dom = "small" if dtype == I64 else "normal"
        args = [Arg(shape, dtype, layout, dom, grad=False) for _ in range(2)]
        b.add("compare", op, args, *COMPARE[op], modes=(FWD,), quick=quick)

    s6 = SHAPES2[1_000_000]
    for op in COMPARE:
        for dtype in (F32, I64):
            add(op, s6, dtype)
    for layout in ("t", "step"):
        add("gt", s6, F32, layout)
    add("gt", SHAPES2[10_000], I64, quick=True)


def _broadcast_cases(b):
    add_fn, mul_fn = BINARY["add"][0], BINARY["mul"][0]

    def row_bias(n, dtype=F32, layout="contig", quick=False):
        r, c = SHAPES2[n]
        dom = "int" if dtype == I64 else "normal"
        args = [Arg((r, c), dtype, layout, dom), Arg((c,), dtype, dom=dom)]
        modes = (FWD,) if dtype == I64 else (FWD, BWD)
        b.add(
            "broadcast",
            "row_bias_add",
            args,
            add_fn,
            np.add,
            size=f"{r}x{c}+{c}",
            modes=modes,
            quick=quick,
        )

    for n in (10_000, 1_000_000, 10_000_000):
        row_bias(n, quick=(n == 10_000))
    row_bias(1_000_000, layout="t")
    row_bias(1_000_000, F64)
    row_bias(1_000_000, I64)
    r, c = SHAPES2[1_000_000]
    b.add(
        "broadcast",
        "col_bias_add",
        [Arg((r, c)), Arg((r, 1))],
        add_fn,
        np.add,
        size=f"{r}x{c}+{r}x1",
    )
    b.add(
        "broadcast",
        "row_scale_mul",
        [Arg((r, c)), Arg((c,))],
        mul_fn,
        np.multiply,
        size=f"{r}x{c}*{c}",
    )
    for r, c in (SHAPES2[1_000_000], SHAPES2[10_000_000]):
        b.add(
            "broadcast",
            "outer_mul",
            [Arg((r, 1)), Arg((1, c))],
            mul_fn,
            np.multiply,
            size=f"{r}x1*1x{c}",
            numel=r * c,
        )


def _dim_label(dim):
    if dim is None:
        return "all"
    if isinstance(dim, tuple):
        return "(" + ",".join(str(d) for d in dim) + ")"
    return str(dim)


def _reduce_op(op, dim):
    """(label, fn, numpy reference, differentiable) of a reduction."""
    lab = f"{op}(dim={_dim_label(dim)})"
    kw = {} if dim is None else {"dim": dim}
    ax = dim
    if op == "sum":
        return lab, lambda L, x: x.sum(**kw), lambda x: x.sum(axis=ax), True
    if op == "mean":
        return lab, lambda L, x: x.mean(**kw), lambda x: x.mean(axis=ax), True
    if op == "amax":
        return lab, lambda L, x: x.amax(dim=dim), lambda x: x.max(axis=ax), True
    if op == "max":
        lab = f"max(dim={_dim_label(dim)}).values"
        return lab, lambda L, x: L.max(x, dim=dim)[0], lambda x: x.max(axis=ax), True
    if op == "var":
        return lab, lambda L, x: x.var(**kw), lambda x: x.var(axis=ax, ddof=1), True
    if op == "norm":

        def ref(x):
            return np.sqrt((x.astype(np.float64) ** 2).sum(axis=ax))

        return lab, lambda L, x: x.norm(**kw), ref, True
    if op == "logsumexp":
        return lab, lambda L, x: L.logsumexp(x, dim=dim), lambda x: _np_logsumexp(x, ax), True
    if op == "argmax":
        return lab, lambda L, x: x.argmax(dim=dim), lambda x: x.argmax(axis=ax), False
    raise ValueError(op)


def _reduce_cases(b):
    def add(op, dim, shape, layout="contig", dtype=F32, quick=False):
        lab, fn, ref, diff = _reduce_op(op, dim)
        modes = (FWD, BWD) if diff and dtype not in INTS else (FWD,)
        arg = Arg(shape, dtype, layout, "int" if dtype in INTS else "normal")
        b.add("reduce", lab, [arg], fn, ref, modes=modes, quick=quick)

    for dim in (None, 0, 1, -1, (0, 2)):
        add("sum", dim, SHAPE3)
    for n in (100, 10_000, 10_000_000):
        add("sum", None, SHAPES2[n], quick=(n == 10_000))
    for dim in (-1, (0, 2)):
        add("mean", dim, SHAPE3)
    for op in ("amax", "max", "logsumexp", "argmax"):
        for dim in (0, -1):
            add(op, dim, SHAPE3)
    for dim in (None, 0, -1):
        add("var", dim, SHAPE3)
    for dim in (None, -1):
        add("norm", dim, SHAPE3)
    add("sum", -1, SHAPES2[10_000], quick=True)
    add("sum", -1, SHAPES2[10_000], "t", quick=True)
    # layouts, 2-D 1000x1000 (each with its contiguous twin)
    s6 = SHAPES2[1_000_000]
    for op, dim, layouts in (
        ("sum", -1, ("contig", "t", "step")),
        ("sum", 0, ("contig", "t")),
        ("sum", None, ("contig", "t")),
        ("amax", -1, ("contig", "t")),
        ("var", -1, ("contig", "t")),
        ("logsumexp", -1, ("contig", "t")),
    ):
        for layout in layouts:
            add(op, dim, s6, layout)
    add("mean", 1, SHAPE3, "perm")
    add("mean", 1, SHAPE3)
    add("sum", -1, SHAPES2[10_000_000])
    add("sum", -1, SHAPES2[10_000_000], "t")
    for op, dim in (("sum", None), ("sum", -1), ("var", -1), ("norm", None)):
        add(op, dim, SHAPE3, dtype=F64)
    for dim in (None, -1):
        add("sum", dim, SHAPE3, dtype=I64)
        add("sum", dim, SHAPE3, dtype=I32)
    for dtype in LOW:
        for op, dim in (("sum", None), ("sum", -1), ("sum", 0), ("mean", -1), ("amax", -1)):
            add(op, dim, SHAPE3, dtype=dtype)
        add("sum", None, SHAPES2[10_000_000], dtype=dtype)


def _softmax_cases(b):
    def sm(op, dim, shape, layout="contig", dtype=F32, quick=False):
        if op == "softmax":
            fn, ref = (lambda L, x: x.softmax(dim=dim)), (lambda x: _np_softmax(x, dim))
        else:
            fn, ref = (lambda L, x: x.log_softmax(dim=dim)), (lambda x: _np_log_softmax(x, dim))
        b.add("softmax", f"{op}(dim={dim})", [Arg(shape, dtype, layout)], fn, ref, quick=quick)

    def ln(shape, layout="contig", dtype=F32, quick=False):
        c = shape[-1]
        args = [Arg(shape, dtype, layout), Arg((c,), dtype, dom="pos"), Arg((c,), dtype)]

        def fn(L, x, w, bb):
            return L.nn.functional.layer_norm(x, (c,), w, bb)

        b.add("softmax", "layer_norm(last)", args, fn, _np_layer_norm, quick=quick)

    s6 = SHAPES2[1_000_000]
    for op in ("softmax", "log_softmax"):
        for dim in (-1, 0):
            sm(op, dim, s6)
    sm("softmax", -1, s6, "t")
    sm("softmax", -1, (100, 100), quick=True)
    sm("softmax", -1, (64, 64, 64))
    sm("softmax", -1, (10_000, 1000))
    sm("softmax", -1, s6, dtype=F64)
    sm("log_softmax", -1, (4096, 256))
    ln(s6)
    ln(s6, "t")  # the normalized dim is not the last in memory
    ln((100, 100), quick=True)
    ln((4096, 256))
    ln(s6, dtype=F64)


def _index_cases(b):
    def idx(shape, hi):
        return Arg(shape, gen=lambda r: r.integers(0, hi, size=shape, dtype=np.int64))

    def data(shape, dtype=F32, layout="contig"):
        return Arg(shape, dtype, layout, "int" if dtype == I64 else "normal")

    def add(op, args, fn, ref, size, quick=False):
        modes = (FWD,) if args[0].dtype == I64 else (FWD, BWD)
        b.add("index", op, args, fn, ref, size=size, modes=modes, quick=quick)

    def rows(n_rows, cols, k, dtype=F32, layout="contig", quick=False):
        add(
            "index_select(0)",
            [data((n_rows, cols), dtype, layout), idx((k,), n_rows)],
            lambda L, x, i: x.index_select(0, i),
            lambda x, i: x[i],
            f"{n_rows}x{cols}[{k}]",
            quick,
        )

    rows(10_000, 100, 5000)
    rows(100, 100, 50, quick=True)
    rows(1000, 1000, 500, layout="t")
    rows(1000, 1000, 500)
    rows(10_000, 100, 5000, F64)
    rows(10_000, 100, 5000, I64)
    s6 = SHAPES2[1_000_000]
    add(
        "index_select(1)",
        [data(s6), idx((500,), 1000)],
        lambda L, x, i: x.index_select(1, i),
        lambda x, i: x[:, i],
        "1000x1000[:,500]",
    )
    for dtype in (F32, I64):
        add(
            "gather(1)",
            [data(s6, dtype), idx((1000, 100), 1000)],
            lambda L, x, i: x.gather(1, i),
            lambda x, i: np.take_along_axis(x, i, 1),
            "1000x1000<-1000x100",
        )

    def np_scatter_add(x, i, s):
        out = x.copy()
        np.add.at(out, (i, np.arange(x.shape[1])[None, :]), s)
        return out

    add(
        "scatter_add(0)",
        [data(s6), idx(s6, 1000), data(s6)],
        lambda L, x, i, s: x.scatter_add(0, i, s),
        np_scatter_add,
        "1000x1000<-1000x1000",
    )
    for dtype in (F32, I64):
        add(
            "x[idx]",
            [data((10_000, 100), dtype), idx((5000,), 10_000)],
            lambda L, x, i: x[i],
            lambda x, i: x[i],
            "10000x100[5000]",
        )
    add(
        "x[:,idx]",
        [data(s6), idx((500,), 1000)],
        lambda L, x, i: x[:, i],
        lambda x, i: x[:, i],
        "1000x1000[:,500]",
    )
    add(
        "x[ri,ci]",
        [data(s6), idx((100_000,), 1000), idx((100_000,), 1000)],
        lambda L, x, i, j: x[i, j],
        lambda x, i, j: x[i, j],
        "1000x1000[100000 pts]",
    )
    mask = Arg(s6, gen=lambda r: r.random(s6) > 0.5, grad=False)
    add("x[mask]", [data(s6), mask], lambda L, x, m: x[m], lambda x, m: x[m], "1000x1000[mask]")


def _cat_cases(b):
    def cat(k, shape, dim, dtype=F32, layout="contig", big=False, quick=False):
        args = [Arg(shape, dtype, layout, "int" if dtype == I64 else "normal")] * k
        modes = (FWD,) if dtype == I64 or big else (FWD, BWD)
        b.add(
            "cat",
            f"cat(dim={dim})",
            args,
            lambda L, *xs: L.cat(xs, dim=dim),
            lambda *xs: np.concatenate(xs, axis=dim),
            size=f"{k}x{_shape_str(shape)}",
            numel=k * _prod(shape),
            modes=modes,
            quick=quick,
        )

    def stack(k, shape, dim, quick=False):
        b.add(
            "cat",
            f"stack(dim={dim})",
            [Arg(shape)] * k,
            lambda L, *xs: L.stack(xs, dim=dim),
            lambda *xs: np.stack(xs, axis=dim),
            size=f"{k}x{_shape_str(shape)}",
            numel=k * _prod(shape),
            quick=quick,
        )

    cat(4, (10, 25), 0, quick=True)
    cat(4, (250, 1000), 0)
    cat(4, (1000, 250), -1)
    cat(4, (250, 1000), 0, layout="t")
    cat(4, (1000, 250), -1, layout="t")
    cat(4, (250, 1000), 0, F64)
    cat(4, (250, 1000), 0, I64)
    cat(4, (2500, 1000), 0, big=True)
    cat(4, (2500, 1000), -1, big=True)
    stack(16, (625,), 0, quick=True)
    stack(16, (62_500,), 0)
    stack(16, (62_500,), -1)


def _copy_cases(b):
    def to_contig(L, x):
        return x.clone() if x.is_contiguous() else x.contiguous()

    def add(n, layout, dtype=F32, quick=False):
        arg = Arg(_lay_shape(n, layout), dtype, layout)
        b.add(
            "copy", "contiguous", [arg], to_contig, np.ascontiguousarray, modes=(FWD,), quick=quick
        )

    for layout in ("contig", "t", "perm", "step", "expand"):
        add(1_000_000, layout)
    add(10_000, "contig", quick=True)
    add(10_000, "t", quick=True)
    add(10_000_000, "contig")
    add(10_000_000, "t")
    add(1_000_000, "contig", F64)
    add(1_000_000, "t", F64)
