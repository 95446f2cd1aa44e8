"""torch.nn.functional's activations, re-exported from the Rust extension."""

from .. import _C
from .._C import log_softmax, relu, sigmoid, softmax, tanh  # noqa: F401

gelu = _C._nn.gelu
gelu_ = _C._nn.gelu_
silu = _C._nn.silu
silu_ = _C._nn.silu_
softplus = _C._nn.softplus
