"""GroupNorm, LayerNorm and BatchNorm1d/2d (the arithmetic, including the
running statistics, is `src/ops/normalization.rs`)."""

from ... import _C
from .. import functional as F
from ..parameter import Parameter
from .module import Module


def _affine(module, shape, affine, bias, device, dtype):
    """Registers an elementwise affine's weight (ones) and bias (zeros), or
    None for either."""
    kw = dict(device=device, dtype=dtype)
    weight = Parameter(_C.ones(shape, **kw)) if affine else None
    module.register_parameter("weight", weight)
    module.register_parameter("bias", Parameter(_C.zeros(shape, **kw)) if affine and bias else None)


class _AffineNorm(Module):
    """A normalization with an elementwise affine (weight and bias, or None)."""

    def reset_parameters(self):
        if self.weight is not None:
            _C._init.ones_(self.weight)
        if self.bias is not None:
            _C._init.zeros_(self.bias)


class GroupNorm(_AffineNorm):
    def __init__(
        self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True
    ):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(
                f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine(self, num_channels, affine, bias, device, dtype)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class LayerNorm(_AffineNorm):
    def __init__(
        self,
        normalized_shape,
        eps=1e-5,
        elementwise_affine=True,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine(self, self.normalized_shape, elementwise_affine, bias, device, dtype)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class _BatchNorm(_AffineNorm):
    _dims = ()

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        device=None,
        dtype=None,
        *,
        bias=True,
    ):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine(self, num_features, affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", _C.zeros(num_features, **kw))
            self.register_buffer("running_var", _C.ones(num_features, **kw))
            self.register_buffer("num_batches_tracked", _C.tensor(0, dtype=_C.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        if self.track_running_stats:
            _C._init.zeros_(self.running_mean)
            _C._init.ones_(self.running_var)
            _C._init.zeros_(self.num_batches_tracked)

    def reset_parameters(self):
        self.reset_running_stats()
        super().reset_parameters()

    def forward(self, input):
        if input.dim() not in self._dims:
            wanted = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {wanted} input (got {input.dim()}D input)")
        return _C._nn._batch_norm_module(
            input,
            self.running_mean,
            self.running_var,
            self.num_batches_tracked,
            self.weight,
            self.bias,
            self.training,
            self.track_running_stats,
            self.momentum,
            self.eps,
        )

    def extra_repr(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    _dims = (4,)
