# Type stubs for ferrograd's front end (creation, conversion, dtypes, devices,
# grad modes). Op families add more functions and Tensor methods; the module
# and Tensor `__getattr__` below keep them usable (as `Any`) until stubbed.

import builtins
from typing import (
    Any,
    Callable,
    SupportsIndex,
    Iterable,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    overload,
)

import numpy as np

from . import autograd as autograd
from . import random as random
from .autograd.grad_mode import enable_grad as enable_grad
from .autograd.grad_mode import inference_mode as inference_mode
from .autograd.grad_mode import no_grad as no_grad
from .autograd.grad_mode import set_grad_enabled as set_grad_enabled

__version__: str

_F = TypeVar("_F", bound=Callable[..., Any])

class dtype:
    @property
    def is_floating_point(self) -> builtins.bool: ...
    @property
    def itemsize(self) -> builtins.int: ...
    @property
    def is_signed(self) -> builtins.bool: ...

float32: dtype
float: dtype
float64: dtype
double: dtype
int64: dtype
long: dtype
bool: dtype

_DTypeLike = Union[dtype, type]
_dtype = dtype

class device:
    def __init__(self, type: Union[str, device], index: Optional[builtins.int] = None) -> None: ...
    @property
    def type(self) -> str: ...
    @property
    def index(self) -> Optional[builtins.int]: ...

_DeviceLike = Union[str, device, None]

class Size(Tuple[builtins.int, ...]):
    def __new__(cls, sizes: Iterable[Any] = ...) -> Size: ...
    def numel(self) -> builtins.int: ...
    @overload
    def __getitem__(self, key: SupportsIndex) -> builtins.int: ...
    @overload
    def __getitem__(self, key: slice) -> Size: ...  # type: ignore[override]
    def __add__(self, other: Tuple[builtins.int, ...]) -> Size: ...  # type: ignore[override]
    def __radd__(self, other: Tuple[builtins.int, ...]) -> Size: ...
    def __mul__(self, n: builtins.int) -> Size: ...  # type: ignore[override]
    def __rmul__(self, n: builtins.int) -> Size: ...  # type: ignore[override]

_Number = Union[builtins.int, builtins.float, builtins.bool]
_Shape = Union[builtins.int, Sequence[builtins.int]]

class _RemovableHandle:
    """What the register_*hook methods return (torch.utils.hooks.RemovableHandle)."""

    @property
    def id(self) -> builtins.int: ...
    def remove(self) -> None: ...
    def __enter__(self) -> _RemovableHandle: ...
    def __exit__(self, *args: Any) -> None: ...

class Tensor:
    __array_priority__: builtins.int
    def __init__(self, *args: Any, device: _DeviceLike = ...) -> None: ...
    # core properties
    @property
    def shape(self) -> Size: ...
    @property
    def dtype(self) -> _dtype: ...
    @property
    def device(self) -> device: ...
    @property
    def ndim(self) -> builtins.int: ...
    @property
    def is_cpu(self) -> builtins.bool: ...
    @property
    def is_cuda(self) -> builtins.bool: ...
    @property
    def is_leaf(self) -> builtins.bool: ...
    @property
    def grad_fn(self) -> Any: ...
    @property
    def output_nr(self) -> builtins.int: ...
    @property
    def retains_grad(self) -> builtins.bool: ...
    @property
    def T(self) -> Tensor: ...
    @property
    def mT(self) -> Tensor: ...
    requires_grad: builtins.bool
    grad: Optional[Tensor]
    @overload
    def size(self) -> Size: ...
    @overload
    def size(self, dim: builtins.int) -> builtins.int: ...
    @overload
    def stride(self) -> Tuple[builtins.int, ...]: ...
    @overload
    def stride(self, dim: builtins.int) -> builtins.int: ...
    def dim(self) -> builtins.int: ...
    def numel(self) -> builtins.int: ...
    def nelement(self) -> builtins.int: ...
    def storage_offset(self) -> builtins.int: ...
    def is_contiguous(self) -> builtins.bool: ...
    def is_floating_point(self) -> builtins.bool: ...
    def data_ptr(self) -> builtins.int: ...
    def element_size(self) -> builtins.int: ...
    def __len__(self) -> builtins.int: ...
    # values and conversion
    def item(self) -> _Number: ...
    def tolist(self) -> Any: ...
    def numpy(self, *, force: builtins.bool = ...) -> np.ndarray: ...
    def __array__(self, dtype: Any = ..., copy: Optional[builtins.bool] = ...) -> np.ndarray: ...
    def __float__(self) -> builtins.float: ...
    def __int__(self) -> builtins.int: ...
    def __bool__(self) -> builtins.bool: ...
    def __format__(self, format_spec: str) -> str: ...
    @overload
    def to(
        self, dtype: _DTypeLike, non_blocking: builtins.bool = ..., copy: builtins.bool = ...
    ) -> Tensor: ...
    @overload
    def to(
        self,
        device: _DeviceLike = ...,
        dtype: Optional[_DTypeLike] = ...,
        non_blocking: builtins.bool = ...,
        copy: builtins.bool = ...,
    ) -> Tensor: ...
    @overload
    def to(
        self, other: Tensor, non_blocking: builtins.bool = ..., copy: builtins.bool = ...
    ) -> Tensor: ...
    @overload
    def type(self) -> str: ...
    @overload
    def type(self, dtype: Union[_DTypeLike, str], non_blocking: builtins.bool = ...) -> Tensor: ...
    def cpu(self, memory_format: Any = ...) -> Tensor: ...
    def cuda(
        self, device: Any = ..., non_blocking: builtins.bool = ..., memory_format: Any = ...
    ) -> Tensor: ...
    def float(self) -> Tensor: ...
    def double(self) -> Tensor: ...
    def long(self) -> Tensor: ...
    def bool(self) -> Tensor: ...
    def type_as(self, other: Tensor) -> Tensor: ...
    def clone(self) -> Tensor: ...
    def contiguous(self) -> Tensor: ...
    def detach(self) -> Tensor: ...
    def detach_(self) -> Tensor: ...
    # creation from an existing tensor
    def new_zeros(
        self,
        *size: Any,
        dtype: Optional[_DTypeLike] = ...,
        device: _DeviceLike = ...,
        requires_grad: builtins.bool = ...,
    ) -> Tensor: ...
    def new_ones(
        self,
        *size: Any,
        dtype: Optional[_DTypeLike] = ...,
        device: _DeviceLike = ...,
        requires_grad: builtins.bool = ...,
    ) -> Tensor: ...
    def new_empty(
        self,
        *size: Any,
        dtype: Optional[_DTypeLike] = ...,
        device: _DeviceLike = ...,
        requires_grad: builtins.bool = ...,
    ) -> Tensor: ...
    def new_full(
        self,
        size: Sequence[builtins.int],
        fill_value: _Number,
        *,
        dtype: Optional[_DTypeLike] = ...,
        device: _DeviceLike = ...,
        requires_grad: builtins.bool = ...,
    ) -> Tensor: ...
    def new_tensor(
        self,
        data: Any,
        *,
        dtype: Optional[_DTypeLike] = ...,
        device: _DeviceLike = ...,
        requires_grad: builtins.bool = ...,
    ) -> Tensor: ...
    # autograd
    def requires_grad_(self, requires_grad: builtins.bool = ...) -> Tensor: ...
    def retain_grad(self) -> None: ...
    def register_hook(self, hook: Callable[[Tensor], Optional[Tensor]]) -> _RemovableHandle: ...
    def register_post_accumulate_grad_hook(
        self, hook: Callable[[Tensor], None]
    ) -> _RemovableHandle: ...
    def backward(
        self,
        gradient: Optional[Tensor] = ...,
        retain_graph: Optional[builtins.bool] = ...,
        create_graph: builtins.bool = ...,
        inputs: Any = ...,
    ) -> None: ...
    # views
    def view(self, *shape: Any) -> Tensor: ...
    def reshape(self, *shape: Any) -> Tensor: ...
    def view_as(self, other: Tensor) -> Tensor: ...
    def reshape_as(self, other: Tensor) -> Tensor: ...
    def transpose(self, dim0: builtins.int, dim1: builtins.int) -> Tensor: ...
    def t(self) -> Tensor: ...
    def permute(self, *dims: Any) -> Tensor: ...
    def expand(self, *sizes: Any) -> Tensor: ...
    def expand_as(self, other: Tensor) -> Tensor: ...
    def unsqueeze(self, dim: builtins.int) -> Tensor: ...
    def squeeze(self, dim: Any = ...) -> Tensor: ...
    def flatten(self, start_dim: builtins.int = ..., end_dim: builtins.int = ...) -> Tensor: ...
    def narrow(self, dim: builtins.int, start: builtins.int, length: builtins.int) -> Tensor: ...
    def select(self, dim: builtins.int, index: builtins.int) -> Tensor: ...
    # arithmetic (more come from the op families)
    def __add__(self, other: Any) -> Tensor: ...
    def __radd__(self, other: Any) -> Tensor: ...
    def __sub__(self, other: Any) -> Tensor: ...
    def __rsub__(self, other: Any) -> Tensor: ...
    def __mul__(self, other: Any) -> Tensor: ...
    def __rmul__(self, other: Any) -> Tensor: ...
    def __truediv__(self, other: Any) -> Tensor: ...
    def __rtruediv__(self, other: Any) -> Tensor: ...
    def __neg__(self) -> Tensor: ...
    def sum(
        self, dim: Any = ..., keepdim: builtins.bool = ..., *, dtype: Optional[_dtype] = ...
    ) -> Tensor: ...
    def mean(
        self, dim: Any = ..., keepdim: builtins.bool = ..., *, dtype: Optional[_dtype] = ...
    ) -> Tensor: ...
    # truth values and closeness
    def all(self, dim: Any = ..., keepdim: builtins.bool = ...) -> Tensor: ...
    def any(self, dim: Any = ..., keepdim: builtins.bool = ...) -> Tensor: ...
    def isclose(
        self,
        other: Tensor,
        rtol: builtins.float = ...,
        atol: builtins.float = ...,
        equal_nan: builtins.bool = ...,
    ) -> Tensor: ...
    def allclose(
        self,
        other: Tensor,
        rtol: builtins.float = ...,
        atol: builtins.float = ...,
        equal_nan: builtins.bool = ...,
    ) -> builtins.bool: ...
    def equal(self, other: Tensor) -> builtins.bool: ...
    def __getattr__(self, name: str) -> Any: ...

# ----- truth values and closeness -----
def all(input: Tensor, dim: Any = ..., keepdim: builtins.bool = ...) -> Tensor: ...
def any(input: Tensor, dim: Any = ..., keepdim: builtins.bool = ...) -> Tensor: ...
def isclose(
    input: Tensor,
    other: Tensor,
    rtol: builtins.float = ...,
    atol: builtins.float = ...,
    equal_nan: builtins.bool = ...,
) -> Tensor: ...
def allclose(
    input: Tensor,
    other: Tensor,
    rtol: builtins.float = ...,
    atol: builtins.float = ...,
    equal_nan: builtins.bool = ...,
) -> builtins.bool: ...
def equal(input: Tensor, other: Tensor) -> builtins.bool: ...

# ----- creation -----
def tensor(
    data: Any,
    *,
    dtype: Optional[_DTypeLike] = ...,
    device: _DeviceLike = ...,
    requires_grad: builtins.bool = ...,
    pin_memory: builtins.bool = ...,
) -> Tensor: ...
def as_tensor(
    data: Any, dtype: Optional[_DTypeLike] = ..., device: _DeviceLike = ...
) -> Tensor: ...
def from_numpy(ndarray: np.ndarray) -> Tensor: ...
def zeros(
    *shape: Any,
    size: Any = ...,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    pin_memory: builtins.bool = ...,
    requires_grad: builtins.bool = ...,
) -> Tensor: ...
def ones(
    *shape: Any,
    size: Any = ...,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    pin_memory: builtins.bool = ...,
    requires_grad: builtins.bool = ...,
) -> Tensor: ...
def empty(
    *shape: Any,
    size: Any = ...,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    pin_memory: builtins.bool = ...,
    requires_grad: builtins.bool = ...,
    memory_format: Any = ...,
) -> Tensor: ...
def full(
    size: Sequence[builtins.int],
    fill_value: Any,
    *,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    pin_memory: builtins.bool = ...,
    requires_grad: builtins.bool = ...,
) -> Tensor: ...
def arange(
    *args: Any,
    start: Any = ...,
    end: Any = ...,
    step: Any = ...,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    pin_memory: builtins.bool = ...,
    requires_grad: builtins.bool = ...,
) -> Tensor: ...
def linspace(
    start: Any,
    end: Any,
    steps: builtins.int,
    *,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    pin_memory: builtins.bool = ...,
    requires_grad: builtins.bool = ...,
) -> Tensor: ...
def eye(
    n: builtins.int,
    m: Optional[builtins.int] = ...,
    *,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    pin_memory: builtins.bool = ...,
    requires_grad: builtins.bool = ...,
) -> Tensor: ...
def rand(
    *shape: Any,
    size: Any = ...,
    generator: None = ...,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    pin_memory: builtins.bool = ...,
    requires_grad: builtins.bool = ...,
) -> Tensor: ...
def randn(
    *shape: Any,
    size: Any = ...,
    generator: None = ...,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    pin_memory: builtins.bool = ...,
    requires_grad: builtins.bool = ...,
) -> Tensor: ...
def randint(
    *args: Any,
    low: Any = ...,
    high: Any = ...,
    size: Any = ...,
    generator: None = ...,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    pin_memory: builtins.bool = ...,
    requires_grad: builtins.bool = ...,
) -> Tensor: ...
def randperm(
    n: builtins.int,
    *,
    generator: None = ...,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    pin_memory: builtins.bool = ...,
    requires_grad: builtins.bool = ...,
) -> Tensor: ...
def zeros_like(
    input: Tensor,
    *,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    requires_grad: builtins.bool = ...,
    memory_format: Any = ...,
) -> Tensor: ...
def ones_like(
    input: Tensor,
    *,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    requires_grad: builtins.bool = ...,
    memory_format: Any = ...,
) -> Tensor: ...
def empty_like(
    input: Tensor,
    *,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    requires_grad: builtins.bool = ...,
    memory_format: Any = ...,
) -> Tensor: ...
def full_like(
    input: Tensor,
    fill_value: Any,
    *,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    requires_grad: builtins.bool = ...,
    memory_format: Any = ...,
) -> Tensor: ...
def rand_like(
    input: Tensor,
    *,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    requires_grad: builtins.bool = ...,
    memory_format: Any = ...,
) -> Tensor: ...
def randn_like(
    input: Tensor,
    *,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    requires_grad: builtins.bool = ...,
    memory_format: Any = ...,
) -> Tensor: ...
def randint_like(
    input: Tensor,
    low_or_high: builtins.int,
    high: Optional[builtins.int] = ...,
    *,
    dtype: Optional[_DTypeLike] = ...,
    layout: Any = ...,
    device: _DeviceLike = ...,
    requires_grad: builtins.bool = ...,
    memory_format: Any = ...,
) -> Tensor: ...

# ----- helpers -----
def get_default_dtype() -> dtype: ...
def is_tensor(obj: Any) -> builtins.bool: ...
def is_floating_point(input: Tensor) -> builtins.bool: ...
def numel(input: Tensor) -> builtins.int: ...
def is_grad_enabled() -> builtins.bool: ...
def is_inference_mode_enabled() -> builtins.bool: ...
def set_num_threads(n: builtins.int) -> None: ...
def get_num_threads() -> builtins.int: ...
def manual_seed(seed: builtins.int) -> None: ...
def initial_seed() -> builtins.int: ...
def seed() -> builtins.int: ...
def get_rng_state() -> Tensor: ...
def set_rng_state(new_state: Tensor) -> None: ...
def set_printoptions(
    precision: Optional[builtins.int] = ...,
    threshold: Optional[builtins.float] = ...,
    edgeitems: Optional[builtins.int] = ...,
    linewidth: Optional[builtins.int] = ...,
    profile: Optional[str] = ...,
    sci_mode: Optional[builtins.bool] = ...,
) -> None: ...
def get_printoptions() -> dict[str, Any]: ...
def backward(
    tensors: Any,
    grad_tensors: Any = ...,
    retain_graph: Optional[builtins.bool] = ...,
    create_graph: builtins.bool = ...,
    grad_variables: Any = ...,
    inputs: Any = ...,
) -> None: ...
def __getattr__(name: str) -> Any: ...
