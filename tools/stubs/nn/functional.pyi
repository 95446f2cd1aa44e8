# Hand-written part of the generated stub (see tools/gen_stubs.py).

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
def max_pool1d(
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
def avg_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = ...,
    padding: Any = ...,
    ceil_mode: _bool = ...,
    count_include_pad: _bool = ...,
) -> Tensor: ...
def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor: ...
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
def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: _bool = ...) -> Any: ...
