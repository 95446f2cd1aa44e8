"""torch.nn.functional's activations, dropout, linear layer and losses,
re-exported from the Rust extension."""

from .. import _C
from .._C import log_softmax, sigmoid, softmax, tanh  # noqa: F401

gelu = _C._nn.gelu
softplus = _C._nn.softplus
dropout = _C._nn.dropout

linear = _C._nn.linear
mse_loss = _C._nn.mse_loss
l1_loss = _C._nn.l1_loss
smooth_l1_loss = _C._nn.smooth_l1_loss
huber_loss = _C._nn.huber_loss
binary_cross_entropy = _C._nn.binary_cross_entropy
binary_cross_entropy_with_logits = _C._nn.binary_cross_entropy_with_logits
nll_loss = _C._nn.nll_loss
cross_entropy = _C._nn.cross_entropy


def relu(input, inplace=False):
    return input.relu_() if inplace else _C.relu(input)


def silu(input, inplace=False):
    return _C._nn.silu_(input) if inplace else _C._nn.silu(input)


def gelu_(input, approximate="none"):
    return _C._nn.gelu_(input, approximate)


silu_ = _C._nn.silu_
