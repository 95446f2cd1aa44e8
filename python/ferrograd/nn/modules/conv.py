"""Conv1d-3d and ConvTranspose1d-3d: parameters and torch's argument
checks; the convolutions themselves are `nn.functional.conv{1,2,3}d` and
`conv_transpose{1,2,3}d` (Rust)."""

from .. import functional as F
from ._op_module import _OpModule
from .linear import Linear, _weight_and_bias

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(value, n):
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,) * n


class _ConvNd(_OpModule):
    """A subclass names its op and number of spatial dims in its class
    statement: ``class Conv2d(_ConvNd, op=F.conv2d, dims=2): ...``."""

    _dims = 0
    _transposed = False

    def __init_subclass__(cls, dims=None, **kwargs):
        super().__init_subclass__(**kwargs)
        if dims is not None:
            cls._dims = dims

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        device=None,
        dtype=None,
        output_padding=0,
    ):
        super().__init__()
        n = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of {set(('valid', 'same'))}"
                )
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"padding_mode must be one of {set(_PADDING_MODES)}, but got "
                f"padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation = _ntuple(dilation, n)
        self.transposed = self._transposed
        self.output_padding = _ntuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's amounts for a non-zeros padding_mode: last dim first.
        if isinstance(self.padding, str):
            pads = []
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                total = d * (k - 1) if self.padding == "same" else 0
                pads += [total // 2, total - total // 2]
        else:
            pads = [p for p in reversed(self.padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = pads
        shape = (
            (in_channels, out_channels // groups)
            if self.transposed
            else (out_channels, in_channels // groups)
        )
        _weight_and_bias(self, (*shape, *self.kernel_size), bias, out_channels, device, dtype)

    reset_parameters = Linear.reset_parameters

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return self._op(input, weight, bias, self.stride, 0, self.dilation, self.groups)
        return self._op(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)

    def extra_repr(self):
        n = self._dims
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"
            f", stride={self.stride}"
        )
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd, op=F.conv1d, dims=1): ...


class Conv2d(_ConvNd, op=F.conv2d, dims=2): ...


class Conv3d(_ConvNd, op=F.conv3d, dims=3): ...


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
            output_padding,
        )

    def _output_padding(self, input, output_size):
        """The output_padding that makes the output `output_size` (torch's
        `_ConvTransposeNd._output_padding`)."""
        if output_size is None:
            return self.output_padding
        n = self._dims
        output_size = list(output_size)
        if len(output_size) == n + 2 or (len(output_size) == n + 1 and input.dim() == n + 1):
            output_size = output_size[-n:]
        if len(output_size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} "
                f"or {n + 2} elements (got {len(output_size)})"
            )
        spatial = input.shape[-n:]
        lo, hi = [], []
        for d in range(n):
            size = (
                (spatial[d] - 1) * self.stride[d]
                - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1)
                + 1
            )
            lo.append(size)
            hi.append(size + self.stride[d] - 1)
        if any(not (a <= o <= b) for a, o, b in zip(lo, output_size, hi)):
            raise ValueError(
                f"requested an output size of {output_size}, but valid sizes range from "
                f"{lo} to {hi} (for an input of {input.shape[-n:]})"
            )
        return tuple(o - a for o, a in zip(output_size, lo))

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return self._op(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            output_padding,
            self.groups,
            self.dilation,
        )


class ConvTranspose1d(_ConvTransposeNd, op=F.conv_transpose1d, dims=1): ...


class ConvTranspose2d(_ConvTransposeNd, op=F.conv_transpose2d, dims=2): ...


class ConvTranspose3d(_ConvTransposeNd, op=F.conv_transpose3d, dims=3): ...
