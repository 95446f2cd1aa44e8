"""torch.nn.init, from the Rust extension (the schemes are
`src/nn/init.rs`)."""

from .. import _C

uniform_ = _C._init.uniform_
normal_ = _C._init.normal_
trunc_normal_ = _C._init.trunc_normal_
constant_ = _C._init.constant_
ones_ = _C._init.ones_
zeros_ = _C._init.zeros_
eye_ = _C._init.eye_
xavier_uniform_ = _C._init.xavier_uniform_
xavier_normal_ = _C._init.xavier_normal_
kaiming_uniform_ = _C._init.kaiming_uniform_
kaiming_normal_ = _C._init.kaiming_normal_
calculate_gain = _C._init.calculate_gain
_calculate_fan_in_and_fan_out = _C._init._calculate_fan_in_and_fan_out

__all__ = [
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "calculate_gain",
]
