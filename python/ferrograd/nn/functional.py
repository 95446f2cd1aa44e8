"""torch.nn.functional's activations, re-exported from the Rust extension."""

from .._C import log_softmax, relu, sigmoid, softmax, tanh  # noqa: F401
from .._C._nn import gelu, gelu_, silu, silu_, softplus  # noqa: F401
