# Written by tools/gen_stubs.py from the runtime, except the hand-written region
# below, which it keeps as it is: edit that here, and rerun the generator.
# fmt: off

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, overload

import ferrograd
from ferrograd import Tensor, _DeviceLike, _DTypeLike, _Number, _Shape, _Dims

from . import lr_scheduler as lr_scheduler

# ---- hand-written: kept as it is by tools/gen_stubs.py (edit here) ----

_ParamGroups = Iterable[Tensor] | Iterable[dict[str, Any]]

class Optimizer:
    defaults: dict[str, Any]
    state: dict[Tensor, dict[str, Any]]
    param_groups: list[dict[str, Any]]
    def __init__(self, params: _ParamGroups, defaults: dict[str, Any]) -> None: ...
    def add_param_group(self, param_group: dict[str, Any]) -> None: ...
    def zero_grad(self, set_to_none: _bool = ...) -> None: ...
    @overload
    def step(self, closure: None = ...) -> None: ...
    @overload
    def step(self, closure: Callable[[], _float]) -> _float: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state_dict: dict[str, Any]) -> None: ...

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----

class SGD(Optimizer):
    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: _float | Tensor = ...,
        momentum: _float = ...,
        dampening: _float = ...,
        weight_decay: _float = ...,
        nesterov: _bool = ...,
        *,
        maximize: _bool = ...,
        foreach: _bool | None = ...,
        differentiable: _bool = ...,
        fused: _bool | None = ...,
    ) -> None: ...

class Adam(Optimizer):
    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: _float | Tensor = ...,
        betas: tuple[_float, _float] = ...,
        eps: _float = ...,
        weight_decay: _float = ...,
        amsgrad: _bool = ...,
        *,
        foreach: _bool | None = ...,
        maximize: _bool = ...,
        capturable: _bool = ...,
        differentiable: _bool = ...,
        fused: _bool | None = ...,
        decoupled_weight_decay: Any = ...,
    ) -> None: ...

class AdamW(Adam):
    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: _float | Tensor = ...,
        betas: tuple[_float, _float] = ...,
        eps: _float = ...,
        weight_decay: _float = ...,
        amsgrad: _bool = ...,
        *,
        maximize: _bool = ...,
        foreach: _bool | None = ...,
        capturable: _bool = ...,
        differentiable: _bool = ...,
        fused: _bool | None = ...,
    ) -> None: ...

class RMSprop(Optimizer):
    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: _float | Tensor = ...,
        alpha: _float = ...,
        eps: _float = ...,
        weight_decay: _float = ...,
        momentum: _float = ...,
        centered: _bool = ...,
        capturable: _bool = ...,
        foreach: _bool | None = ...,
        maximize: _bool = ...,
        differentiable: _bool = ...,
    ) -> None: ...

class Adagrad(Optimizer):
    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: _float | Tensor = ...,
        lr_decay: _float = ...,
        weight_decay: _float = ...,
        initial_accumulator_value: _float = ...,
        eps: _float = ...,
        foreach: _bool | None = ...,
        *,
        maximize: _bool = ...,
        differentiable: _bool = ...,
        fused: _bool | None = ...,
    ) -> None: ...
