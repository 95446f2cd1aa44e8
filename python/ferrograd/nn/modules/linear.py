"""Identity and Linear."""

from ... import _C
from .. import functional as F
from ..parameter import Parameter
from .module import Module


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


def _weight_and_bias(module, weight_shape, bias, out_features, device, dtype):
    """Linear's and the convolutions' parameters: ``weight`` and ``bias``
    (``out_features`` long, or None), then ``module.reset_parameters()``."""
    module.weight = Parameter(_C.empty(weight_shape, device=device, dtype=dtype))
    if bias:
        module.bias = Parameter(_C.empty(out_features, device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)
    module.reset_parameters()


class Linear(Module):
    """`y = x @ weight.T + bias`; weight and bias start uniform in
    (-1/sqrt(in_features), 1/sqrt(in_features)), as torch's."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        shape = (out_features, in_features)
        _weight_and_bias(self, shape, bias, out_features, device, dtype)

    def reset_parameters(self):
        # torch's rule for Linear and convolutions alike: kaiming_uniform_
        # with a = sqrt(5), the bias uniform in +-1/sqrt(fan_in).
        _C._init._reset_linear_(self.weight, self.bias)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )
