# Written by tools/gen_stubs.py from the runtime, except the hand-written region
# below, which it keeps as it is: edit that here, and rerun the generator.
# fmt: off

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, overload

import ferrograd
from ferrograd import Tensor, _DeviceLike, _DTypeLike, _Number, _Shape, _Dims

from . import grad_mode as grad_mode
from . import function as function
from . import forward_ad as forward_ad
from . import functional as functional
from . import anomaly_mode as anomaly_mode
from . import profiler as profiler
from . import graph as graph

from ferrograd import backward as backward
from ferrograd import grad as grad
from ferrograd.autograd.anomaly_mode import detect_anomaly as detect_anomaly
from ferrograd.autograd.anomaly_mode import is_anomaly_check_nan_enabled as is_anomaly_check_nan_enabled
from ferrograd.autograd.anomaly_mode import is_anomaly_enabled as is_anomaly_enabled
from ferrograd.autograd.anomaly_mode import set_detect_anomaly as set_detect_anomaly
from ferrograd.autograd.function import Function as Function
from ferrograd.autograd.function import InplaceFunction as InplaceFunction
from ferrograd.autograd.function import Variable as Variable
from ferrograd.autograd.function import once_differentiable as once_differentiable
from ferrograd.autograd.grad_mode import enable_grad as enable_grad
from ferrograd.autograd.grad_mode import inference_mode as inference_mode
from ferrograd.autograd.grad_mode import no_grad as no_grad
from ferrograd.autograd.grad_mode import set_grad_enabled as set_grad_enabled
from ferrograd.autograd.gradcheck import gradcheck as gradcheck
from ferrograd.autograd.gradcheck import gradgradcheck as gradgradcheck

# ---- hand-written: kept as it is by tools/gen_stubs.py (edit here) ----

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----
