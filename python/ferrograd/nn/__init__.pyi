# Written by tools/gen_stubs.py from the runtime, except the hand-written region
# below, which it keeps as it is: edit that here, and rerun the generator.
# fmt: off

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, overload

import ferrograd
from ferrograd import Tensor, _DeviceLike, _DTypeLike, _Number, _Shape, _Dims

from . import functional as functional
from . import init as init
from . import parallel as parallel
from . import utils as utils

from ferrograd.nn.modules import AdaptiveAvgPool1d as AdaptiveAvgPool1d
from ferrograd.nn.modules import AdaptiveAvgPool2d as AdaptiveAvgPool2d
from ferrograd.nn.modules import AdaptiveAvgPool3d as AdaptiveAvgPool3d
from ferrograd.nn.modules import AdaptiveMaxPool1d as AdaptiveMaxPool1d
from ferrograd.nn.modules import AdaptiveMaxPool2d as AdaptiveMaxPool2d
from ferrograd.nn.modules import AdaptiveMaxPool3d as AdaptiveMaxPool3d
from ferrograd.nn.modules import AvgPool1d as AvgPool1d
from ferrograd.nn.modules import AvgPool2d as AvgPool2d
from ferrograd.nn.modules import AvgPool3d as AvgPool3d
from ferrograd.nn.modules import BCELoss as BCELoss
from ferrograd.nn.modules import BCEWithLogitsLoss as BCEWithLogitsLoss
from ferrograd.nn.modules import BatchNorm1d as BatchNorm1d
from ferrograd.nn.modules import BatchNorm2d as BatchNorm2d
from ferrograd.nn.modules import CELU as CELU
from ferrograd.nn.modules import Conv1d as Conv1d
from ferrograd.nn.modules import Conv2d as Conv2d
from ferrograd.nn.modules import Conv3d as Conv3d
from ferrograd.nn.modules import ConvTranspose1d as ConvTranspose1d
from ferrograd.nn.modules import ConvTranspose2d as ConvTranspose2d
from ferrograd.nn.modules import ConvTranspose3d as ConvTranspose3d
from ferrograd.nn.modules import CrossEntropyLoss as CrossEntropyLoss
from ferrograd.nn.modules import Dropout as Dropout
from ferrograd.nn.modules import Dropout1d as Dropout1d
from ferrograd.nn.modules import Dropout2d as Dropout2d
from ferrograd.nn.modules import Dropout3d as Dropout3d
from ferrograd.nn.modules import ELU as ELU
from ferrograd.nn.modules import Embedding as Embedding
from ferrograd.nn.modules import Flatten as Flatten
from ferrograd.nn.modules import Fold as Fold
from ferrograd.nn.modules import GELU as GELU
from ferrograd.nn.modules import GroupNorm as GroupNorm
from ferrograd.nn.modules import Hardtanh as Hardtanh
from ferrograd.nn.modules import HuberLoss as HuberLoss
from ferrograd.nn.modules import Identity as Identity
from ferrograd.nn.modules import L1Loss as L1Loss
from ferrograd.nn.modules import LayerNorm as LayerNorm
from ferrograd.nn.modules import LeakyReLU as LeakyReLU
from ferrograd.nn.modules import Linear as Linear
from ferrograd.nn.modules import LogSigmoid as LogSigmoid
from ferrograd.nn.modules import LogSoftmax as LogSoftmax
from ferrograd.nn.modules import MSELoss as MSELoss
from ferrograd.nn.modules import MaxPool1d as MaxPool1d
from ferrograd.nn.modules import MaxPool2d as MaxPool2d
from ferrograd.nn.modules import MaxPool3d as MaxPool3d
from ferrograd.nn.modules import Module as Module
from ferrograd.nn.modules import ModuleDict as ModuleDict
from ferrograd.nn.modules import ModuleList as ModuleList
from ferrograd.nn.modules import NLLLoss as NLLLoss
from ferrograd.nn.modules import ParameterList as ParameterList
from ferrograd.nn.modules import ReLU as ReLU
from ferrograd.nn.modules import ReLU6 as ReLU6
from ferrograd.nn.modules import SELU as SELU
from ferrograd.nn.modules import Sequential as Sequential
from ferrograd.nn.modules import SiLU as SiLU
from ferrograd.nn.modules import Sigmoid as Sigmoid
from ferrograd.nn.modules import SmoothL1Loss as SmoothL1Loss
from ferrograd.nn.modules import Softmax as Softmax
from ferrograd.nn.modules import Softplus as Softplus
from ferrograd.nn.modules import Tanh as Tanh
from ferrograd.nn.modules import Unfold as Unfold
from ferrograd.nn.modules import Upsample as Upsample
from ferrograd.nn.modules import UpsamplingBilinear2d as UpsamplingBilinear2d
from ferrograd.nn.modules import UpsamplingNearest2d as UpsamplingNearest2d
from ferrograd.nn.parameter import Parameter as Parameter

# ---- hand-written: kept as it is by tools/gen_stubs.py (edit here) ----

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----
