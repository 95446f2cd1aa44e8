"""ferrograd.autograd: torch.autograd's surface, backed by the Rust engine."""

from .._C import backward, grad  # noqa: F401
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: F401
from .function import Function, InplaceFunction, Variable, once_differentiable  # noqa: F401
from . import function  # noqa: F401
from . import forward_ad  # noqa: F401
from . import functional  # noqa: F401

# As in torch, ``autograd.gradcheck`` is the function; the module stays
# importable as ``ferrograd.autograd.gradcheck`` (``from
# ferrograd.autograd.gradcheck import GradcheckError``).
from .gradcheck import gradcheck, gradgradcheck  # noqa: F401, E402
from .anomaly_mode import detect_anomaly, set_detect_anomaly  # noqa: F401, E402
from .anomaly_mode import is_anomaly_enabled, is_anomaly_check_nan_enabled  # noqa: F401, E402
from . import profiler  # noqa: F401, E402
from .._C import _profiler_enabled  # noqa: F401, E402
from . import graph  # noqa: F401, E402

__all__ = [
    "backward",
    "grad",
    "grad_mode",
    "enable_grad",
    "inference_mode",
    "no_grad",
    "set_grad_enabled",
    "function",
    "Function",
    "InplaceFunction",
    "Variable",
    "once_differentiable",
    "forward_ad",
    "functional",
    "gradcheck",
    "gradgradcheck",
    "anomaly_mode",
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
    "profiler",
    "graph",
]
