# Written by tools/gen_stubs.py from the runtime, except the hand-written region
# below, which it keeps as it is: edit that here, and rerun the generator.
# fmt: off

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, overload

import ferrograd
from ferrograd import Tensor, _DeviceLike, _DTypeLike, _Number, _Shape, _Dims

# ---- hand-written: kept as it is by tools/gen_stubs.py (edit here) ----

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----

def uniform_(tensor: Tensor, a: Tensor = ..., b: Tensor = ..., generator: Any = ...) -> Tensor: ...
def normal_(
    tensor: Tensor,
    mean: _float = ...,
    std: _float = ...,
    generator: Any = ...,
) -> Tensor: ...
def trunc_normal_(
    tensor: Tensor,
    mean: _float = ...,
    std: _float = ...,
    a: Tensor = ...,
    b: Tensor = ...,
    generator: Any = ...,
) -> Tensor: ...
def constant_(tensor: Tensor, val: _Number) -> Tensor: ...
def ones_(tensor: Tensor) -> Tensor: ...
def zeros_(tensor: Tensor) -> Tensor: ...
def eye_(tensor: Tensor) -> Tensor: ...
def xavier_uniform_(tensor: Tensor, gain: _float = ..., generator: Any = ...) -> Tensor: ...
def xavier_normal_(tensor: Tensor, gain: _float = ..., generator: Any = ...) -> Tensor: ...
def kaiming_uniform_(
    tensor: Tensor,
    a: Tensor = ...,
    mode: str = ...,
    nonlinearity: str = ...,
    generator: Any = ...,
) -> Tensor: ...
def kaiming_normal_(
    tensor: Tensor,
    a: Tensor = ...,
    mode: str = ...,
    nonlinearity: str = ...,
    generator: Any = ...,
) -> Tensor: ...
def calculate_gain(nonlinearity: str, param: Tensor | None = ...) -> _float: ...
