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

def vjp(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Tensor],
    v: Tensor | Sequence[Tensor] | None = ...,
    create_graph: _bool = ...,
    strict: _bool = ...,
) -> Any: ...
def jvp(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Tensor],
    v: Tensor | Sequence[Tensor] | None = ...,
    create_graph: _bool = ...,
    strict: _bool = ...,
) -> Any: ...
def jacobian(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Tensor],
    create_graph: _bool = ...,
    strict: _bool = ...,
    vectorize: _bool = ...,
    strategy: Any = ...,
) -> Any: ...
def hessian(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Tensor],
    create_graph: _bool = ...,
    strict: _bool = ...,
    vectorize: _bool = ...,
    outer_jacobian_strategy: Any = ...,
) -> Any: ...
def hvp(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Tensor],
    v: Tensor | Sequence[Tensor] | None = ...,
    create_graph: _bool = ...,
    strict: _bool = ...,
) -> Any: ...
def vhp(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Tensor],
    v: Tensor | Sequence[Tensor] | None = ...,
    create_graph: _bool = ...,
    strict: _bool = ...,
) -> Any: ...
