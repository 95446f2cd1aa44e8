"""torch.nn.functional's activations, linear layer and losses, re-exported
from the Rust extension."""

from .. import _C
from .._C import log_softmax, relu, sigmoid, softmax, tanh  # noqa: F401

gelu = _C._nn.gelu
gelu_ = _C._nn.gelu_
silu = _C._nn.silu
silu_ = _C._nn.silu_
softplus = _C._nn.softplus

linear = _C._nn.linear
mse_loss = _C._nn.mse_loss
l1_loss = _C._nn.l1_loss
smooth_l1_loss = _C._nn.smooth_l1_loss
huber_loss = _C._nn.huber_loss
binary_cross_entropy = _C._nn.binary_cross_entropy
binary_cross_entropy_with_logits = _C._nn.binary_cross_entropy_with_logits
nll_loss = _C._nn.nll_loss
cross_entropy = _C._nn.cross_entropy
