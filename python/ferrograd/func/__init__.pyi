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

from typing import Any, Callable

def grad(
    func: Callable[..., Any],
    argnums: int | tuple[int, ...] = ...,
    has_aux: bool = ...,
) -> Callable[..., Any]: ...
def grad_and_value(
    func: Callable[..., Any],
    argnums: int | tuple[int, ...] = ...,
    has_aux: bool = ...,
) -> Callable[..., Any]: ...
def hessian(
    func: Callable[..., Any], argnums: int | tuple[int, ...] = ...
) -> Callable[..., Any]: ...
def jacfwd(
    func: Callable[..., Any],
    argnums: int | tuple[int, ...] = ...,
    has_aux: bool = ...,
    *,
    randomness: str = ...,
) -> Callable[..., Any]: ...
def jacrev(
    func: Callable[..., Any],
    argnums: int | tuple[int, ...] = ...,
    *,
    has_aux: bool = ...,
    chunk_size: int | None = ...,
    _preallocate_and_copy: bool = ...,
) -> Callable[..., Any]: ...
def vmap(
    func: Callable[..., Any],
    in_dims: Any = ...,
    out_dims: Any = ...,
    randomness: str = ...,
    *,
    chunk_size: int | None = ...,
) -> Callable[..., Any]: ...

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----

def functional_call(
    module: Any,
    parameter_and_buffer_dicts: Any,
    args: Any = ...,
    kwargs: Any = ...,
    *,
    tie_weights: Any = ...,
    strict: _bool = ...,
) -> Any: ...
def jvp(
    func: Callable[..., Any],
    primals: Any,
    tangents: Any,
    *,
    strict: _bool = ...,
    has_aux: Any = ...,
) -> Any: ...
def linearize(func: Callable[..., Any], *primals: Any) -> Any: ...
def stack_module_state(models: Any) -> Any: ...
def vjp(func: Callable[..., Any], *primals: Any, has_aux: Any = ...) -> Any: ...
def debug_unwrap(tensor: Tensor, *, recurse: Any = ...) -> Any: ...
def replace_all_batch_norm_modules_(root: Any) -> Any: ...
