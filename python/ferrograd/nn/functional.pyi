# Written by tools/gen_stubs.py from the runtime, except the hand-written region
# below, which it keeps as it is: edit that here, and rerun the generator.
# fmt: off

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, overload

import ferrograd
from ferrograd import Tensor, _DeviceLike, _DTypeLike, _Number, _Shape, _Dims

from ferrograd import log_softmax as log_softmax
from ferrograd import sigmoid as sigmoid
from ferrograd import softmax as softmax
from ferrograd import tanh as tanh

# ---- hand-written: kept as it is by tools/gen_stubs.py (edit here) ----

from ferrograd import Tensor

def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = ...,
    stride: Any = ...,
    padding: Any = ...,
    dilation: Any = ...,
    groups: _int = ...,
) -> Tensor: ...
def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = ...,
    stride: Any = ...,
    padding: Any = ...,
    dilation: Any = ...,
    groups: _int = ...,
) -> Tensor: ...
def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = ...,
    stride: Any = ...,
    padding: Any = ...,
    dilation: Any = ...,
    groups: _int = ...,
) -> Tensor: ...
def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = ...,
    stride: Any = ...,
    padding: Any = ...,
    output_padding: Any = ...,
    groups: _int = ...,
    dilation: Any = ...,
) -> Tensor: ...
def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = ...,
    stride: Any = ...,
    padding: Any = ...,
    output_padding: Any = ...,
    groups: _int = ...,
    dilation: Any = ...,
) -> Tensor: ...
def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = ...,
    stride: Any = ...,
    padding: Any = ...,
    output_padding: Any = ...,
    groups: _int = ...,
    dilation: Any = ...,
) -> Tensor: ...
def max_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = ...,
    padding: Any = ...,
    dilation: Any = ...,
    ceil_mode: _bool = ...,
    return_indices: _bool = ...,
) -> Any: ...
def max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = ...,
    padding: Any = ...,
    dilation: Any = ...,
    ceil_mode: _bool = ...,
    return_indices: _bool = ...,
) -> Any: ...
def max_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = ...,
    padding: Any = ...,
    dilation: Any = ...,
    ceil_mode: _bool = ...,
    return_indices: _bool = ...,
) -> Any: ...
def max_pool1d_with_indices(
    input: Tensor,
    kernel_size: Any,
    stride: Any = ...,
    padding: Any = ...,
    dilation: Any = ...,
    ceil_mode: _bool = ...,
) -> tuple[Tensor, Tensor]: ...
def avg_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = ...,
    padding: Any = ...,
    ceil_mode: _bool = ...,
    count_include_pad: _bool = ...,
) -> Tensor: ...
def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor: ...
def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: _bool = ...) -> Any: ...

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----

def gelu(input: Tensor, approximate: str = ...) -> Tensor: ...
def softplus(input: Tensor, beta: _Number = ..., threshold: _float = ...) -> Tensor: ...
def dropout(
    input: Tensor,
    p: _float = ...,
    training: _bool = ...,
    inplace: _bool = ...,
) -> Tensor: ...
def leaky_relu(input: Tensor, negative_slope: _float = ..., inplace: _bool = ...) -> Tensor: ...
def hardtanh(
    input: Tensor,
    min_val: _float = ...,
    max_val: _float = ...,
    inplace: _bool = ...,
) -> Tensor: ...
def relu6(input: Tensor, inplace: _bool = ...) -> Tensor: ...
def elu(input: Tensor, alpha: _Number = ..., inplace: _bool = ...) -> Tensor: ...
def selu(input: Tensor, inplace: _bool = ...) -> Tensor: ...
def celu(input: Tensor, alpha: _Number = ..., inplace: _bool = ...) -> Tensor: ...
def logsigmoid(input: Tensor) -> Tensor: ...
def one_hot(tensor: Tensor, num_classes: _int = ...) -> Tensor: ...
def pad(
    input: Tensor,
    pad: Sequence[_int],
    mode: str = ...,
    value: Tensor | _Number | None = ...,
) -> Tensor: ...
def normalize(
    input: Tensor,
    p: _float = ...,
    dim: _Dims = ...,
    eps: _float = ...,
    out: Tensor | None = ...,
) -> Tensor: ...
def layer_norm(
    input: Tensor,
    normalized_shape: _int | Sequence[_int],
    weight: Tensor | None = ...,
    bias: Tensor | None = ...,
    eps: _float = ...,
) -> Tensor: ...
def group_norm(
    input: Tensor,
    num_groups: _int,
    weight: Tensor | None = ...,
    bias: Tensor | None = ...,
    eps: _float = ...,
) -> Tensor: ...
def batch_norm(
    input: Tensor,
    running_mean: Tensor,
    running_var: Tensor,
    weight: Tensor | None = ...,
    bias: Tensor | None = ...,
    training: _bool = ...,
    momentum: _float = ...,
    eps: _float = ...,
) -> Tensor: ...
def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: _int | None = ...,
    max_norm: _float | None = ...,
    norm_type: _float = ...,
    scale_grad_by_freq: _bool = ...,
    sparse: _bool = ...,
) -> Tensor: ...
def unfold(
    input: Tensor,
    kernel_size: _int | Sequence[_int],
    dilation: _int | Sequence[_int] | None = ...,
    padding: _int | Sequence[_int] | str | None = ...,
    stride: _int | Sequence[_int] | None = ...,
) -> Tensor: ...
def fold(
    input: Tensor,
    output_size: _int | Sequence[_int],
    kernel_size: _int | Sequence[_int],
    dilation: _int | Sequence[_int] | None = ...,
    padding: _int | Sequence[_int] | str | None = ...,
    stride: _int | Sequence[_int] | None = ...,
) -> Tensor: ...
def max_pool2d_with_indices(
    input: Tensor,
    kernel_size: _int | Sequence[_int],
    stride: _int | Sequence[_int] | None = ...,
    padding: _int | Sequence[_int] | str | None = ...,
    dilation: _int | Sequence[_int] | None = ...,
    ceil_mode: _bool = ...,
) -> Tensor: ...
def max_pool3d_with_indices(
    input: Tensor,
    kernel_size: _int | Sequence[_int],
    stride: _int | Sequence[_int] | None = ...,
    padding: _int | Sequence[_int] | str | None = ...,
    dilation: _int | Sequence[_int] | None = ...,
    ceil_mode: _bool = ...,
) -> Tensor: ...
def avg_pool2d(
    input: Tensor,
    kernel_size: _int | Sequence[_int],
    stride: _int | Sequence[_int] | None = ...,
    padding: _int | Sequence[_int] | str | None = ...,
    ceil_mode: _bool = ...,
    count_include_pad: _bool = ...,
    divisor_override: _int | None = ...,
) -> Tensor: ...
def avg_pool3d(
    input: Tensor,
    kernel_size: _int | Sequence[_int],
    stride: _int | Sequence[_int] | None = ...,
    padding: _int | Sequence[_int] | str | None = ...,
    ceil_mode: _bool = ...,
    count_include_pad: _bool = ...,
    divisor_override: _int | None = ...,
) -> Tensor: ...
def adaptive_avg_pool2d(input: Tensor, output_size: _int | Sequence[_int]) -> Tensor: ...
def adaptive_avg_pool3d(input: Tensor, output_size: _int | Sequence[_int]) -> Tensor: ...
def adaptive_max_pool2d(
    input: Tensor,
    output_size: _int | Sequence[_int],
    return_indices: _bool = ...,
) -> Tensor: ...
def adaptive_max_pool3d(
    input: Tensor,
    output_size: _int | Sequence[_int],
    return_indices: _bool = ...,
) -> Tensor: ...
def adaptive_max_pool1d_with_indices(
    input: Tensor,
    output_size: _int | Sequence[_int],
) -> Tensor: ...
def adaptive_max_pool2d_with_indices(
    input: Tensor,
    output_size: _int | Sequence[_int],
) -> Tensor: ...
def adaptive_max_pool3d_with_indices(
    input: Tensor,
    output_size: _int | Sequence[_int],
) -> Tensor: ...
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = ...) -> Tensor: ...
def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: _bool | None = ...,
    reduce: Any = ...,
    reduction: str = ...,
) -> Tensor: ...
def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: _bool | None = ...,
    reduce: Any = ...,
    reduction: str = ...,
) -> Tensor: ...
def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: _bool | None = ...,
    reduce: Any = ...,
    reduction: str = ...,
    beta: _Number = ...,
) -> Tensor: ...
def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = ...,
    delta: _float = ...,
) -> Tensor: ...
def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = ...,
    size_average: _bool | None = ...,
    reduce: Any = ...,
    reduction: str = ...,
) -> Tensor: ...
def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = ...,
    size_average: _bool | None = ...,
    reduce: Any = ...,
    reduction: str = ...,
    pos_weight: Tensor | None = ...,
) -> Tensor: ...
def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = ...,
    size_average: _bool | None = ...,
    ignore_index: _int = ...,
    reduce: Any = ...,
    reduction: str = ...,
) -> Tensor: ...
def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = ...,
    size_average: _bool | None = ...,
    ignore_index: _int = ...,
    reduce: Any = ...,
    reduction: str = ...,
    label_smoothing: _float = ...,
) -> Tensor: ...
def relu(input: Tensor, inplace: _bool = ...) -> Tensor: ...
def silu(input: Tensor, inplace: _bool = ...) -> Tensor: ...
def gelu_(input: Tensor, approximate: str = ...) -> Tensor: ...
def leaky_relu_(input: Tensor, negative_slope: _float = ...) -> Tensor: ...
def hardtanh_(input: Tensor, min_val: _float = ..., max_val: _float = ...) -> Tensor: ...
def elu_(input: Tensor, alpha: _Number = ...) -> Tensor: ...
def silu_(input: Tensor) -> Tensor: ...
def dropout1d(
    input: Tensor,
    p: _float = ...,
    training: _bool = ...,
    inplace: _bool = ...,
) -> Tensor: ...
def dropout2d(
    input: Tensor,
    p: _float = ...,
    training: _bool = ...,
    inplace: _bool = ...,
) -> Tensor: ...
def dropout3d(
    input: Tensor,
    p: _float = ...,
    training: _bool = ...,
    inplace: _bool = ...,
) -> Tensor: ...
def interpolate(
    input: Tensor,
    size: _Shape | None = ...,
    scale_factor: _float | Sequence[_float] | None = ...,
    mode: str = ...,
    align_corners: _bool | None = ...,
    recompute_scale_factor: Any = ...,
    antialias: Any = ...,
) -> Tensor: ...
def upsample(
    input: Tensor,
    size: _Shape | None = ...,
    scale_factor: _float | Sequence[_float] | None = ...,
    mode: str = ...,
    align_corners: _bool | None = ...,
) -> Tensor: ...
