"""Upsample and its fixed-mode variants over `nn.functional.interpolate`."""

from .. import functional as F
from ._op_module import _OpModule


class Upsample(_OpModule, op=F.interpolate):
    _args = ("size", "scale_factor", "mode", "align_corners", "recompute_scale_factor")

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode="nearest",
        align_corners=None,
        recompute_scale_factor=None,
    ):
        super().__init__()
        self.name = type(self).__name__
        if isinstance(scale_factor, tuple):
            scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            scale_factor = float(scale_factor) if scale_factor else None
        self._store(locals())

    def extra_repr(self):
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
