"""sweep.py's matmul, conv and pool case tables (the elementwise, reduction,
index and join families: sweep_ops.py)."""

from __future__ import annotations

import numpy as np

from .sweep_case import (
    BWD,
    F32,
    F64,
    FWD,
    Arg,
    _np_conv2d,
    _np_pool,
    _prod,
    _shape_str,
)


def _matmul_cases(b):
    def mm(
        m,
        k,
        n,
        dtype=F32,
        la="contig",
        lb="contig",
        batch=(),
        fwd_only=False,
        quick=False,
        op="matmul",
        fn=None,
    ):
        a = Arg(batch + (m, k), dtype, la, dom="unit")
        bb = Arg(batch + (k, n), dtype, lb, dom="unit")
        # layout tag: contig, or c/t per operand (tc: a transposed)
        layout = "contig" if la == lb == "contig" else la[0] + lb[0]
        b.add(
            "matmul",
            op,
            [a, bb],
            fn or (lambda L, x, y: x @ y),
            np.matmul,
            layout=layout,
            size=f"{_shape_str(batch + (m, k))}@{_shape_str(batch + (k, n))}",
            numel=_prod(batch) * m * n,
            modes=(FWD,) if fwd_only else (FWD, BWD),
            kind="flop",
            fwd_flops=2.0 * _prod(batch) * m * k * n,
            quick=quick,
        )

    mm(16, 16, 16, batch=(1024,), quick=True)
    mm(16, 16, 16)
    mm(64, 64, 64, batch=(32,))
    mm(64, 64, 64, batch=(32,), lb="t")
    mm(256, 256, 256)
    mm(256, 256, 256, la="t")
    mm(256, 256, 256, lb="t")
    mm(256, 784, 512)
    mm(1024, 1024, 1024)
    mm(1024, 1024, 1024, la="t")
    mm(1024, 1024, 1024, lb="t")
    mm(256, 256, 256, F64)
    mm(1024, 1024, 1024, F64, fwd_only=True)
    mm(128, 128, 128, batch=(16,), op="bmm", fn=lambda L, x, y: L.bmm(x, y))
    mm(
        128,
        128,
        128,
        batch=(16,),
        op="einsum(bij,bjk->bik)",
        fn=lambda L, x, y: L.einsum("bij,bjk->bik", x, y),
    )
    # matrix-vector
    b.add(
        "matmul",
        "mv",
        [Arg((1024, 1024), dom="unit"), Arg((1024,), dom="unit")],
        lambda L, x, y: x @ y,
        np.matmul,
        size="1024x1024@1024",
        kind="flop",
        fwd_flops=2.0 * 1024 * 1024,
    )
    # a @ b.T as einsum, and attention scores q k^T
    b.add(
        "matmul",
        "einsum(ij,kj->ik)",
        [Arg((256, 256), dom="unit")] * 2,
        lambda L, p, q: L.einsum("ij,kj->ik", p, q),
        lambda p, q: p @ q.T,
        size="256x256,256x256",
        kind="flop",
        fwd_flops=2.0 * 256**3,
    )
    q = Arg((8, 4, 64, 32), dom="unit")
    b.add(
        "matmul",
        "einsum(bhqd,bhkd->bhqk)",
        [q, q],
        lambda L, p, r: L.einsum("bhqd,bhkd->bhqk", p, r),
        lambda p, r: np.einsum("bhqd,bhkd->bhqk", p, r),
        size="8x4x64x32,8x4x64x32",
        numel=8 * 4 * 64 * 64,
        kind="flop",
        fwd_flops=2.0 * 8 * 4 * 64 * 64 * 32,
    )


def _conv_cases(b):
    def conv(n, c, h, o, k, stride=1, pad=1, dtype=F32, layout="contig", quick=False):
        x = Arg((n, c, h, h), dtype, layout, dom="unit", perm=(0, 3, 1, 2))
        w = Arg((o, c, k, k), dtype, dom="unit")
        bias = Arg((o,), dtype, dom="unit")
        ho = (h + 2 * pad - k) // stride + 1
        b.add(
            "conv",
            "conv2d",
            [x, w, bias],
            lambda L, x, w, bb: L.nn.functional.conv2d(x, w, bb, stride=stride, padding=pad),
            lambda x, w, bb: _np_conv2d(x, w, bb, stride, pad),
            size=f"{_shape_str((n, c, h, h))}*{_shape_str((o, c, k, k))}/s{stride}p{pad}",
            kind="flop",
            fwd_flops=2.0 * n * o * ho * ho * c * k * k,
            quick=quick,
        )

    conv(1, 3, 32, 16, 3, quick=True)
    conv(8, 16, 32, 32, 3)
    conv(8, 16, 32, 32, 3, layout="nhwc")
    conv(16, 32, 16, 64, 3)
    conv(8, 16, 32, 32, 3, stride=2)
    conv(8, 64, 16, 64, 1, pad=0)
    conv(32, 3, 32, 16, 5, pad=2)
    conv(4, 8, 16, 16, 3, dtype=F64)


def _pool_cases(b):
    def pool(kind, shape, k, s, p=0, dtype=F32, layout="contig", quick=False):
        name = "max_pool2d" if kind == "max" else "avg_pool2d"
        b.add(
            "pool",
            f"{name}(k{k},s{s},p{p})",
            [Arg(shape, dtype, layout, perm=(0, 3, 1, 2))],
            lambda L, x: getattr(L.nn.functional, name)(x, k, s, p),
            lambda x: _np_pool(x, k, s, p, kind),
            quick=quick,
        )

    small, big = (8, 16, 32, 32), (8, 32, 64, 64)
    pool("max", (2, 4, 16, 16), 2, 2, quick=True)
    for kind in ("max", "avg"):
        for shape in (small, big):
            pool(kind, shape, 2, 2)
    pool("max", small, 3, 1, 1)
    pool("avg", small, 3, 1, 1)
    pool("max", big, 2, 2, layout="nhwc")
    pool("max", small, 2, 2, dtype=F64)
