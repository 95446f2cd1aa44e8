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

def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: _float,
    norm_type: _float | None = ...,
    error_if_nonfinite: _bool = ...,
    foreach: _bool | None = ...,
) -> Tensor: ...
def clip_grad_norm(
    parameters: Tensor | Iterable[Tensor],
    max_norm: _float,
    norm_type: _float = ...,
    error_if_nonfinite: _bool = ...,
    foreach: _bool | None = ...,
) -> Any: ...
def clip_grad_value_(
    parameters: Tensor | Iterable[Tensor],
    clip_value: _float,
    foreach: _bool | None = ...,
) -> Tensor: ...
def parameters_to_vector(parameters: Tensor | Iterable[Tensor]) -> Any: ...
def vector_to_parameters(vec: Tensor, parameters: Tensor | Iterable[Tensor]) -> Any: ...
