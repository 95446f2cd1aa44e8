"""Op registry entries: joining and splitting, and the rest of the
top-level functions. Loaded by ``op_registry``."""

from __future__ import annotations

from op_registry import A, Const, NC, S, op

# ---- joining and splitting ----
op(
    "cat",
    lambda lib, *xs, **kw: lib.cat(list(xs), **kw),
    [
        S(A(2, 4), A(3, 4)),
        S(A(3, 1), A(3, 4), dim=1),
        S(A(2, 3, 2), A(2, 3, 1), A(2, 3, 3), dim=-1),
        S(NC(3, 4), A(1, 4), dim=0),
    ],
    api=("concat", "concatenate"),
)
op(
    "stack",
    lambda lib, *xs, **kw: lib.stack(list(xs), **kw),
    [
        S(A(3, 4), A(3, 4)),
        S(A(3, 4), A(3, 4), A(3, 4), dim=1),
        S(A(3, 4), NC(3, 4), dim=-1),
        S(A(), A()),
    ],
)
op(
    "split",
    lambda lib, x, s, **kw: lib.split(x, s, **kw),
    [S(A(5, 4), 2), S(A(3, 4), [1, 3], dim=1), S(NC(3, 4), 2, dim=-1)],
    api=("Tensor.split",),
)
op(
    "chunk",
    lambda lib, x, n, **kw: lib.chunk(x, n, **kw),
    [S(A(5, 4), 3), S(A(3, 4), 2, dim=1), S(NC(3, 4), 4, dim=1)],
    api=("Tensor.chunk",),
)


# -- nn.functional: more activations, padding, normalize ---------------------
op(
    "leaky_relu",
    lambda lib, x, **kw: lib.nn.functional.leaky_relu(x, **kw),
    [S(A(3, 4)), S(A(2, 3), negative_slope=0.2), S(NC(3, 4), negative_slope=-0.5)],
    needs=("nn.functional.leaky_relu",),
)
op(
    "hardtanh",
    lambda lib, x, **kw: lib.nn.functional.hardtanh(x, **kw),
    [S(A(3, 4)), S(A(2, 3), min_val=-0.5, max_val=2.0), S(NC(3, 4))],
    needs=("nn.functional.hardtanh",),
)
op(
    "relu6",
    lambda lib, x: lib.nn.functional.relu6(x * 4),
    [S(A(3, 4)), S(NC(2, 3))],
    needs=("nn.functional.relu6",),
)
op(
    "elu",
    lambda lib, x, **kw: lib.nn.functional.elu(x, **kw),
    [S(A(3, 4)), S(A(2, 3), alpha=0.5), S(NC(3, 4), alpha=2.0)],
    needs=("nn.functional.elu",),
)
op(
    "selu",
    lambda lib, x: lib.nn.functional.selu(x),
    [S(A(3, 4)), S(NC(2, 3))],
    needs=("nn.functional.selu",),
)
op(
    "celu",
    lambda lib, x, **kw: lib.nn.functional.celu(x, **kw),
    [S(A(3, 4)), S(A(2, 3), alpha=0.5)],
    needs=("nn.functional.celu",),
    rtol=1e-6,  # torch rounds 1/alpha to float32 in its float64 backward
)
op(
    "logsigmoid",
    lambda lib, x: lib.nn.functional.logsigmoid(x),
    [S(A(3, 4)), S(A()), S(NC(2, 3))],
    needs=("nn.functional.logsigmoid",),
)
op(
    "pad",
    lambda lib, x, **kw: lib.nn.functional.pad(x, **kw),
    [
        S(A(2, 3, 4), pad=(1, 2)),
        S(A(2, 3, 4), pad=(2, 0, -1, 1), value=0.5),
        S(A(1, 3, 4), pad=(2, 3, 1, 2), mode="reflect"),
        S(A(1, 3, 4), pad=(2, 1, 1, 2), mode="replicate"),
        S(A(1, 3, 4), pad=(2, 1, 3, 0), mode="circular"),
        S(NC(2, 3, 4), pad=(1, 1), mode="reflect"),
    ],
    needs=("nn.functional.pad",),
)
op(
    "unfold",
    lambda lib, x, **kw: lib.nn.functional.unfold(x, **kw),
    [
        S(A(2, 2, 4, 3), kernel_size=2),
        S(A(1, 2, 4, 5), kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
        S(A(2, 3, 4), kernel_size=2, stride=2),
    ],
    needs=("nn.functional.unfold",),
)
op(
    "fold",
    lambda lib, x, **kw: lib.nn.functional.fold(x, **kw),
    [
        S(A(2, 8, 6), output_size=(3, 4), kernel_size=2),
        S(A(1, 4, 9), output_size=(4, 5), kernel_size=2, padding=1, stride=2),
        S(A(8, 4), output_size=(3, 3), kernel_size=2, dilation=1),
    ],
    needs=("nn.functional.fold",),
)
op(
    "conv2d",
    lambda lib, x, w, *b, **kw: lib.nn.functional.conv2d(x, w, *b, **kw),
    [
        S(A(2, 2, 4, 4), A(3, 2, 2, 2), A(3)),
        S(A(1, 2, 5, 4), A(2, 2, 3, 2), stride=(2, 1), padding=1, dilation=(1, 2)),
        S(A(1, 4, 3, 3), A(4, 2, 2, 2), A(4), groups=2),
        S(A(2, 4, 4), A(2, 2, 2, 3), padding="same"),
        S(NC(1, 2, 3, 4), A(2, 2, 2, 2)),
    ],
    needs=("nn.functional.conv2d",),
    api=("conv2d",),
)
op(
    "conv1d",
    lambda lib, x, w, *b, **kw: lib.nn.functional.conv1d(x, w, *b, **kw),
    [S(A(2, 2, 6), A(3, 2, 3), A(3), stride=2, padding=1), S(A(1, 2, 5), A(2, 1, 2), groups=2)],
    needs=("nn.functional.conv1d",),
    api=("conv1d",),
)
op(
    "conv3d",
    lambda lib, x, w, *b, **kw: lib.nn.functional.conv3d(x, w, *b, **kw),
    [S(A(1, 2, 3, 3, 3), A(2, 2, 2, 2, 2), A(2), padding=(1, 0, 0))],
    needs=("nn.functional.conv3d",),
    api=("conv3d",),
)
op(
    "conv_transpose2d",
    lambda lib, x, w, *b, **kw: lib.nn.functional.conv_transpose2d(x, w, *b, **kw),
    [
        S(A(2, 2, 3, 3), A(2, 3, 2, 2), A(3)),
        S(A(1, 2, 3, 2), A(2, 2, 3, 2), stride=2, padding=1, output_padding=1),
        S(A(1, 4, 2, 3), A(4, 1, 2, 2), A(2), groups=2, dilation=(2, 1)),
        S(A(2, 3, 3), A(2, 2, 2, 2), stride=(1, 2)),
    ],
    needs=("nn.functional.conv_transpose2d",),
    api=("conv_transpose2d",),
)
op(
    "conv_transpose1d",
    lambda lib, x, w, *b, **kw: lib.nn.functional.conv_transpose1d(x, w, *b, **kw),
    [S(A(2, 2, 4), A(2, 3, 3), A(3), stride=2, padding=1, output_padding=1)],
    needs=("nn.functional.conv_transpose1d",),
    api=("conv_transpose1d",),
)
op(
    "conv_transpose3d",
    lambda lib, x, w, *b, **kw: lib.nn.functional.conv_transpose3d(x, w, *b, **kw),
    [S(A(1, 2, 2, 2, 2), A(2, 2, 2, 2, 2), A(2), stride=(2, 1, 1))],
    needs=("nn.functional.conv_transpose3d",),
    api=("conv_transpose3d",),
)
op(
    "interpolate",
    lambda lib, x, **kw: lib.nn.functional.interpolate(x, **kw),
    [
        S(A(1, 2, 3, 4), size=(5, 7)),
        S(A(1, 2, 4, 3), scale_factor=(0.5, 1.7), mode="nearest-exact"),
        S(A(2, 1, 3, 4), size=(5, 6), mode="bilinear"),
        S(A(1, 2, 3, 3), scale_factor=1.5, mode="bilinear", align_corners=True),
        S(A(2, 2, 5), size=3, mode="linear"),
        S(A(1, 1, 2, 3, 2), scale_factor=2, mode="trilinear"),
        S(A(1, 2, 4, 5), size=(2, 3), mode="area"),
    ],
    needs=("nn.functional.interpolate",),
)
op(
    "max_pool2d",
    lambda lib, x, **kw: lib.nn.functional.max_pool2d(x, **kw),
    [
        S(A(2, 2, 4, 4), kernel_size=2),
        S(A(1, 2, 5, 5), kernel_size=3, stride=2, padding=1, ceil_mode=True),
        S(A(2, 4, 5), kernel_size=(2, 3), dilation=(2, 1)),
    ],
    needs=("nn.functional.max_pool2d",),
    api=("max_pool2d",),
)
op(
    "max_pool1d",
    lambda lib, x, **kw: lib.nn.functional.max_pool1d(x, **kw),
    [S(A(2, 3, 7), kernel_size=3, stride=2, padding=1)],
    needs=("nn.functional.max_pool1d",),
    api=("max_pool1d",),
)
op(
    "max_pool3d",
    lambda lib, x, **kw: lib.nn.functional.max_pool3d(x, **kw),
    [S(A(1, 2, 4, 3, 4), kernel_size=2, stride=1)],
    needs=("nn.functional.max_pool3d",),
    api=("max_pool3d",),
)
op(
    "avg_pool2d",
    lambda lib, x, **kw: lib.nn.functional.avg_pool2d(x, **kw),
    [
        S(A(2, 2, 4, 4), kernel_size=2),
        S(A(1, 2, 5, 5), kernel_size=3, stride=2, padding=1, ceil_mode=True),
        S(A(1, 2, 5, 5), kernel_size=3, stride=2, padding=1, count_include_pad=False),
        S(A(2, 4, 4), kernel_size=2, divisor_override=3),
    ],
    needs=("nn.functional.avg_pool2d",),
)
op(
    "avg_pool1d",
    lambda lib, x, **kw: lib.nn.functional.avg_pool1d(x, **kw),
    [S(A(2, 3, 7), kernel_size=3, stride=2, padding=1, ceil_mode=True)],
    needs=("nn.functional.avg_pool1d",),
    api=("avg_pool1d",),
)
op(
    "avg_pool3d",
    lambda lib, x, **kw: lib.nn.functional.avg_pool3d(x, **kw),
    [S(A(1, 2, 4, 3, 4), kernel_size=2, padding=1)],
    needs=("nn.functional.avg_pool3d",),
)
op(
    "adaptive_avg_pool2d",
    lambda lib, x, size: lib.nn.functional.adaptive_avg_pool2d(x, size),
    [S(A(2, 2, 5, 4), (3, 2)), S(A(2, 5, 4), 1), S(A(1, 2, 5, 4), (None, 3))],
    needs=("nn.functional.adaptive_avg_pool2d",),
)
op(
    "adaptive_max_pool2d",
    lambda lib, x, size: lib.nn.functional.adaptive_max_pool2d(x, size),
    [S(A(2, 2, 5, 4), (3, 2)), S(A(2, 5, 4), 1), S(A(1, 2, 3, 4), (None, 6))],
    needs=("nn.functional.adaptive_max_pool2d",),
)
op(
    "adaptive_max_pool1d",
    lambda lib, x, size: lib.nn.functional.adaptive_max_pool1d(x, size),
    [S(A(2, 3, 7), 3)],
    needs=("nn.functional.adaptive_max_pool1d",),
    api=("adaptive_max_pool1d",),
)
op(
    "adaptive_max_pool3d",
    lambda lib, x, size: lib.nn.functional.adaptive_max_pool3d(x, size),
    [S(A(1, 2, 3, 4, 5), (2, 3, 2))],
    needs=("nn.functional.adaptive_max_pool3d",),
)
op(
    "adaptive_avg_pool1d",
    lambda lib, x, size: lib.nn.functional.adaptive_avg_pool1d(x, size),
    [S(A(2, 3, 7), 3)],
    needs=("nn.functional.adaptive_avg_pool1d",),
    api=("adaptive_avg_pool1d",),
)
op(
    "adaptive_avg_pool3d",
    lambda lib, x, size: lib.nn.functional.adaptive_avg_pool3d(x, size),
    [S(A(1, 2, 3, 4, 5), (2, 3, 2))],
    needs=("nn.functional.adaptive_avg_pool3d",),
)
op(
    "normalize",
    lambda lib, x, **kw: lib.nn.functional.normalize(x, **kw),
    [S(A(3, 4)), S(A(2, 3, 4), p=1.0, dim=-1), S(NC(3, 4), dim=0)],
    needs=("nn.functional.normalize",),
)

op(
    "layer_norm",
    lambda lib, x, w, b, **kw: lib.nn.functional.layer_norm(x, tuple(w.shape), w, b, **kw),
    [S(A(3, 4), A(4), A(4)), S(A(2, 3, 4), A(3, 4), A(3, 4), eps=1e-3), S(NC(3, 4), A(4), A(4))],
    needs=("nn.functional.layer_norm",),
)
op(
    "group_norm",
    lambda lib, x, *wb, **kw: lib.nn.functional.group_norm(x, 2, *wb, **kw),
    [S(A(2, 4, 3), A(4), A(4)), S(A(3, 6, 2, 2), A(6), A(6), eps=1e-3), S(NC(3, 4))],
    needs=("nn.functional.group_norm",),
)
op(
    "layer_norm_plain",
    lambda lib, x: lib.nn.functional.layer_norm(x, x.shape[-1:]),
    [S(A(3, 4)), S(A(2, 3, 5))],
    needs=("nn.functional.layer_norm",),
)
op(
    "batch_norm_training",
    lambda lib, x, w, b: lib.nn.functional.batch_norm(x, None, None, w, b, training=True),
    [S(A(5, 3), A(3), A(3)), S(A(4, 2, 3), A(2), A(2)), S(NC(4, 3), A(3), A(3))],
    needs=("nn.functional.batch_norm",),
)
op(
    "batch_norm_eval",
    lambda lib, x, w, b, rm, rv: lib.nn.functional.batch_norm(x, rm, rv, w, b, eps=1e-3),
    [
        S(
            A(5, 3),
            A(3),
            A(3),
            Const([0.1, -0.2, 0.3], "float64"),
            Const([0.5, 1.5, 2.0], "float64"),
        )
    ],
    needs=("nn.functional.batch_norm",),
)
op(
    "embedding",
    lambda lib, idx, w, **kw: lib.nn.functional.embedding(idx, w, **kw),
    [
        # padding_idx is left out: its rows' gradient is zero by design,
        # not the derivative (tested in test_nn.py)
        S(Const([[1, 2], [0, 1]]), A(4, 3)),
        S(Const([3, 0, 3, 2]), NC(4, 3)),
    ],
    needs=("nn.functional.embedding",),
)


# -- combining and NaN-aware ops ------------------------------------------------
op(
    "tensordot",
    lambda lib, a, b, **kw: lib.tensordot(a, b, **kw),
    [
        S(A(2, 3), A(3, 4), dims=1),
        S(A(2, 3, 4), A(3, 4, 2)),
        S(A(3, 2, 4), A(4, 3), dims=([0, 2], [1, 0])),
        S(NC(3, 4), A(4, 2), dims=1),
    ],
)
op(
    "kron",
    lambda lib, a, b: lib.kron(a, b),
    # (no non-contiguous sample: torch's kron rejects one with a view error)
    [S(A(2, 3), A(2, 2)), S(A(3), A(2, 2)), S(A(2, 1, 2), A(3, 2))],
    api=("Tensor.kron",),
)
op(
    "cross",
    lambda lib, a, b, **kw: lib.linalg.cross(a, b, **kw),
    [S(A(4, 3), A(4, 3)), S(A(3, 2), A(3, 1), dim=0), S(NC(2, 3), A(1, 3))],
    needs=("linalg.cross",),
    api=("cross", "Tensor.cross"),
)
op(
    "diff",
    lambda lib, x, *rest, **kw: lib.diff(x, **kw),
    [S(A(5)), S(A(3, 4), n=2, dim=0), S(NC(3, 4), n=1)],
    api=("Tensor.diff",),
)
op(
    "diff_prepend",
    lambda lib, x, p, a: lib.diff(x, prepend=p, append=a),
    [S(A(2, 4), A(2, 1), A(2, 2))],
    needs=("diff",),
)
op(
    "take_along_dim",
    lambda lib, x, i, **kw: lib.take_along_dim(x, i, **kw),
    [
        S(A(2, 3), Const([[2, 0], [1, 1]]), dim=1),
        S(A(2, 3), Const([5, 0, 3])),
        S(A(3, 4), Const([[0, 2, 1, 0]]), dim=0),
    ],
    api=("Tensor.take_along_dim",),
)
op(
    "rot90",
    lambda lib, x, **kw: lib.rot90(x, **kw),
    [S(A(2, 3)), S(A(2, 3, 4), k=2, dims=[1, 2]), S(NC(3, 4), k=-1)],
    api=("Tensor.rot90",),
)
op(
    "meshgrid",
    lambda lib, a, b: lib.meshgrid(a, b, indexing="xy"),
    [S(A(3), A(2))],
)
op(
    "stacks",
    lambda lib, a, b: (
        lib.vstack([a, b]),
        lib.hstack([a, b]),
        lib.dstack([a, b]),
        lib.column_stack([a, b]),
    ),
    [S(A(4), A(4)), S(A(2, 3), A(2, 3))],
    needs=("vstack", "hstack", "dstack", "column_stack"),
)
op(
    "nan_to_num",
    lambda lib, x, **kw: lib.nan_to_num(x, **kw),
    [S(A(3, 4)), S(A(2, 3), nan=1.0, posinf=2.0)],
    api=("Tensor.nan_to_num",),
)
op(
    "nansum",
    lambda lib, x, **kw: lib.nansum(x, **kw),
    [S(A(3, 4)), S(A(3, 4), dim=1, keepdim=True)],
    api=("Tensor.nansum",),
)
op(
    "nanmean",
    lambda lib, x, **kw: lib.nanmean(x, **kw),
    [S(A(3, 4)), S(A(3, 4), dim=0)],
    api=("Tensor.nanmean",),
)

op(
    "repeat_interleave",
    lambda lib, x, r, **kw: lib.repeat_interleave(x, r, **kw),
    [S(A(3), 2), S(A(2, 3), Const([1, 0, 2]), dim=1), S(NC(3, 2), 2, dim=0)],
    api=("Tensor.repeat_interleave",),
)
op(
    "var_mean",
    lambda lib, x, **kw: lib.var_mean(x, **kw),
    [S(A(3, 4)), S(A(3, 4), dim=1, keepdim=True), S(A(2, 3), dim=0, correction=0)],
)
op(
    "std_mean",
    lambda lib, x, **kw: lib.std_mean(x, **kw),
    [S(A(3, 4)), S(A(3, 4), dim=1)],
)
