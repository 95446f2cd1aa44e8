"""ferrograd: a CPU autograd engine with a Rust core and PyTorch's API.

``import ferrograd as torch`` runs torch tensor + autograd code unchanged.
"""

from . import _C
from ._C import (  # noqa: F401
    Tensor,
    bool,
    device,
    double,
    dtype,
    float,
    float32,
    float64,
    get_num_threads,
    int64,
    is_grad_enabled,
    is_inference_mode_enabled,
    long,
    manual_seed,
    ones,
    rand,
    randn,
    set_num_threads,
    tensor,
    zeros,
)
from ._size import Size

_C._set_size_class(Size)

from . import autograd  # noqa: E402, F401
from . import nn  # noqa: E402, F401
from .autograd.grad_mode import (  # noqa: E402, F401
    enable_grad,
    inference_mode,
    no_grad,
    set_grad_enabled,
)
from .autograd.anomaly_mode import (  # noqa: E402, F401
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
)

__version__ = "0.1.0"

# Everything else the extension exports at top level (op functions added by
# the op families) becomes part of the ferrograd namespace.
for _name in dir(_C):
    if not _name.startswith("_") and _name not in globals():
        globals()[_name] = getattr(_C, _name)
del _name

from . import linalg, optim, random, utils  # noqa: E402, F401
from .serialization import load, save  # noqa: E402, F401

# The convolution and pooling functions torch also exports at top level.
from .nn.functional import (  # noqa: E402, F401
    adaptive_avg_pool1d,
    adaptive_max_pool1d,
    avg_pool1d,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool3d,
)
