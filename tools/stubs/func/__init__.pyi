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
