"""torch.nn.functional's activations, dropout, padding, one_hot, normalize,
linear layer, convolution, pooling and losses, re-exported from the Rust
extension."""

import warnings

from .. import _C
from .._C import log_softmax, sigmoid, softmax, tanh  # noqa: F401

gelu = _C._nn.gelu
softplus = _C._nn.softplus
dropout = _C._nn.dropout
leaky_relu = _C._nn.leaky_relu
hardtanh = _C._nn.hardtanh
relu6 = _C._nn.relu6
elu = _C._nn.elu
selu = _C._nn.selu
celu = _C._nn.celu
logsigmoid = _C._nn.logsigmoid
one_hot = _C._nn.one_hot
pad = _C._nn.pad
normalize = _C._nn.normalize
layer_norm = _C._nn.layer_norm
group_norm = _C._nn.group_norm
batch_norm = _C._nn.batch_norm
embedding = _C._nn.embedding

unfold = _C._nn.unfold
fold = _C._nn.fold
conv1d = _C._nn.conv1d
conv2d = _C._nn.conv2d
conv3d = _C._nn.conv3d
conv_transpose1d = _C._nn.conv_transpose1d
conv_transpose2d = _C._nn.conv_transpose2d
conv_transpose3d = _C._nn.conv_transpose3d
max_pool1d = _C._nn.max_pool1d
max_pool2d = _C._nn.max_pool2d
max_pool3d = _C._nn.max_pool3d
max_pool1d_with_indices = _C._nn.max_pool1d_with_indices
max_pool2d_with_indices = _C._nn.max_pool2d_with_indices
max_pool3d_with_indices = _C._nn.max_pool3d_with_indices
avg_pool1d = _C._nn.avg_pool1d
avg_pool2d = _C._nn.avg_pool2d
avg_pool3d = _C._nn.avg_pool3d
adaptive_avg_pool1d = _C._nn.adaptive_avg_pool1d
adaptive_avg_pool2d = _C._nn.adaptive_avg_pool2d
adaptive_avg_pool3d = _C._nn.adaptive_avg_pool3d
adaptive_max_pool1d = _C._nn.adaptive_max_pool1d
adaptive_max_pool2d = _C._nn.adaptive_max_pool2d
adaptive_max_pool3d = _C._nn.adaptive_max_pool3d
adaptive_max_pool1d_with_indices = _C._nn.adaptive_max_pool1d_with_indices
adaptive_max_pool2d_with_indices = _C._nn.adaptive_max_pool2d_with_indices
adaptive_max_pool3d_with_indices = _C._nn.adaptive_max_pool3d_with_indices

linear = _C._nn.linear
mse_loss = _C._nn.mse_loss
l1_loss = _C._nn.l1_loss
smooth_l1_loss = _C._nn.smooth_l1_loss
huber_loss = _C._nn.huber_loss
binary_cross_entropy = _C._nn.binary_cross_entropy
binary_cross_entropy_with_logits = _C._nn.binary_cross_entropy_with_logits
nll_loss = _C._nn.nll_loss
cross_entropy = _C._nn.cross_entropy


def relu(input, inplace=False):
    return input.relu_() if inplace else _C.relu(input)


def silu(input, inplace=False):
    return _C._nn.silu_(input) if inplace else _C._nn.silu(input)


def gelu_(input, approximate="none"):
    return _C._nn.gelu_(input, approximate)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


silu_ = _C._nn.silu_


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of `(N, C, L)` or `(C, L)` input."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. "
            "Note that dropout1d exists to provide channel-wise dropout on inputs with 1 "
            "spatial dimension, a channel dimension, and an optional batch dimension "
            "(i.e. 2D or 3D inputs)."
        )
    return _C._nn.feature_dropout(input, p, training, inplace, input.dim() == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of `(N, C, H, W)` input (torch's rules for other
    ranks, warnings included)."""
    _check_p(p)
    if input.dim() not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is deprecated "
            "and will result in an error in a future release. To retain the behavior "
            "and silence this warning, please use dropout instead. Note that dropout2d "
            "exists to provide channel-wise dropout on inputs with 2 spatial dimensions, "
            "a channel dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if input.dim() == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
            "1D dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _C._nn.feature_dropout(input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of `(N, C, D, H, W)` or `(C, D, H, W)` input."""
    _check_p(p)
    if input.dim() not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is deprecated "
            "and will result in an error in a future release. To retain the behavior "
            "and silence this warning, please use dropout instead. Note that dropout3d "
            "exists to provide channel-wise dropout on inputs with 3 spatial dimensions, "
            "a channel dimension, and an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    return _C._nn.feature_dropout(input, p, training, inplace, input.dim() == 5)


_INTERP_RANK = {"linear": 3, "bilinear": 4, "trilinear": 5}
_SIZE_MISMATCH = (
    "Input and output must have the same number of spatial dimensions, but got "
    "input with spatial dimensions of {shape} and output size "
    "of {value}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
    "and output size in (o1, o2, ...,oK) format."
)
_SCALE_MISMATCH = (
    "Input and scale_factor must have the same number of spatial dimensions, "
    "but got input with spatial dimensions of {shape} and "
    "scale_factor of shape {value}. Please provide input tensor in "
    "(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
)


def _per_spatial_dim(value, input, convert, mismatch):
    """``value`` (one, or a list or tuple of one per spatial dim) as a list of
    one converted value per spatial dim of ``input``."""
    dim = input.dim() - 2
    if isinstance(value, (list, tuple)):
        if len(value) != dim:
            raise ValueError(mismatch.format(shape=list(input.shape[2:]), value=value))
        return [convert(v) for v in value]
    return [convert(value)] * dim


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """torch's interpolate: the argument rules (as in torch's Python) here;
    the resampling is Rust (`_C._nn._interpolate`). Modes: nearest,
    nearest-exact, linear/bilinear/trilinear and area."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the "
                "interpolating modes: linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scale_factors = None
        output_size = _per_spatial_dim(size, input, int, _SIZE_MISMATCH)
    elif scale_factor is not None:
        output_size = None
        scale_factors = _per_spatial_dim(scale_factor, input, float, _SCALE_MISMATCH)
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if output_size is None:
        output_size = [int(input.shape[i + 2] * scale_factors[i]) for i in range(dim)]
    if recompute_scale_factor:
        scale_factors = None
    if antialias:
        raise NotImplementedError("ferrograd: interpolate(antialias=True) is not supported")
    modes = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
    if input.dim() not in (3, 4, 5):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
            f"the modes: {' | '.join(modes)} (got {mode})"
        )
    if mode in _INTERP_RANK and input.dim() != _INTERP_RANK[mode]:
        raise NotImplementedError(
            f"Got {input.dim()}D input, but {mode} mode needs {_INTERP_RANK[mode]}D input"
        )
    if mode not in modes:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
            f"the modes: {' | '.join(modes)} (got {mode})"
        )
    return _C._nn._interpolate(input, output_size, scale_factors, mode, bool(align_corners))


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


__all__ = [
    "log_softmax",
    "sigmoid",
    "softmax",
    "tanh",
    "gelu",
    "softplus",
    "dropout",
    "leaky_relu",
    "hardtanh",
    "relu6",
    "elu",
    "selu",
    "celu",
    "logsigmoid",
    "one_hot",
    "pad",
    "normalize",
    "layer_norm",
    "group_norm",
    "batch_norm",
    "embedding",
    "unfold",
    "fold",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_pool3d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices",
    "linear",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "nll_loss",
    "cross_entropy",
    "relu",
    "silu",
    "gelu_",
    "leaky_relu_",
    "hardtanh_",
    "elu_",
    "silu_",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "interpolate",
    "upsample",
]
