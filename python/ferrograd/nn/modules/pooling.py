"""Max, average and adaptive (average and max) pooling modules over
`nn.functional`'s pooling ops (Rust)."""

from .. import functional as F
from ._op_module import _OpModule
from .conv import _ntuple


class _PoolNd(_OpModule):
    """Max and average pooling: a window of kernel_size, stride (the kernel
    size by default) and padding."""

    def __init__(self, args):
        super().__init__()
        self._store(args)
        if self.stride is None:
            self.stride = self.kernel_size

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _MaxPoolNd(_PoolNd):
    _args = ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")

    def __init__(
        self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False
    ):
        super().__init__(locals())

    def extra_repr(self):
        return super().extra_repr() + f", dilation={self.dilation}, ceil_mode={self.ceil_mode}"


class MaxPool1d(_MaxPoolNd, op=F.max_pool1d): ...


class MaxPool2d(_MaxPoolNd, op=F.max_pool2d): ...


class MaxPool3d(_MaxPoolNd, op=F.max_pool3d): ...


class AvgPool1d(_PoolNd, op=F.avg_pool1d):
    _args = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad")

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True
    ):
        super().__init__(locals())
        self.kernel_size = _ntuple(self.kernel_size, 1)
        self.stride = _ntuple(self.stride, 1)
        self.padding = _ntuple(self.padding, 1)


class _AvgPoolNd(_PoolNd):
    _args = AvgPool1d._args + ("divisor_override",)

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ):
        super().__init__(locals())


class AvgPool2d(_AvgPoolNd, op=F.avg_pool2d): ...


class AvgPool3d(_AvgPoolNd, op=F.avg_pool3d): ...


class _AdaptivePoolNd(_OpModule):
    def extra_repr(self):
        return f"output_size={self.output_size}"


class _AdaptiveAvgPoolNd(_AdaptivePoolNd):
    _args = ("output_size",)

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd, op=F.adaptive_avg_pool1d): ...


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd, op=F.adaptive_avg_pool2d): ...


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd, op=F.adaptive_avg_pool3d): ...


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    _args = ("output_size", "return_indices")

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self._store(locals())


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd, op=F.adaptive_max_pool1d): ...


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd, op=F.adaptive_max_pool2d): ...


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd, op=F.adaptive_max_pool3d): ...
