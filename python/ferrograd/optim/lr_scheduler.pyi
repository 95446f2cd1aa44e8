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

from ferrograd.optim import Optimizer

class LRScheduler:
    optimizer: Optimizer
    last_epoch: _int
    base_lrs: list[_float]
    def __init__(self, optimizer: Optimizer, last_epoch: _int = ...) -> None: ...
    def get_lr(self) -> list[_float]: ...
    def step(self, epoch: _int | None = ...) -> None: ...
    def get_last_lr(self) -> list[_float]: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state_dict: dict[str, Any]) -> None: ...

class ReduceLROnPlateau(LRScheduler):
    def step(self, metrics: _float | Tensor, epoch: _int | None = ...) -> None: ...  # type: ignore[override]
    @property
    def in_cooldown(self) -> _bool: ...
    # ---- generated members ----
    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = ...,
        factor: _float = ...,
        patience: _int = ...,
        threshold: _float = ...,
        threshold_mode: str = ...,
        cooldown: _int = ...,
        min_lr: _float | Sequence[_float] = ...,
        eps: _float = ...,
    ) -> None: ...

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----

class StepLR(LRScheduler):
    def __init__(
        self,
        optimizer: Optimizer,
        step_size: _int,
        gamma: _float = ...,
        last_epoch: _int = ...,
    ) -> None: ...

class MultiStepLR(LRScheduler):
    def __init__(
        self,
        optimizer: Optimizer,
        milestones: Sequence[_int],
        gamma: _float = ...,
        last_epoch: _int = ...,
    ) -> None: ...

class ExponentialLR(LRScheduler):
    def __init__(self, optimizer: Optimizer, gamma: _float, last_epoch: _int = ...) -> None: ...

class CosineAnnealingLR(LRScheduler):
    def __init__(
        self,
        optimizer: Optimizer,
        T_max: _int,
        eta_min: _float = ...,
        last_epoch: _int = ...,
    ) -> None: ...

class LinearLR(LRScheduler):
    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: _float = ...,
        end_factor: _float = ...,
        total_iters: _int = ...,
        last_epoch: _int = ...,
    ) -> None: ...

class ConstantLR(LRScheduler):
    def __init__(
        self,
        optimizer: Optimizer,
        factor: _float = ...,
        total_iters: _int = ...,
        last_epoch: _int = ...,
    ) -> None: ...

class LambdaLR(LRScheduler):
    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[_int], _float] | Sequence[Callable[[_int], _float]],
        last_epoch: _int = ...,
    ) -> None: ...
    def state_dict(self) -> Any: ...
    def load_state_dict(self, state_dict: Mapping[str, Any]) -> Any: ...

class MultiplicativeLR(LRScheduler):
    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[_int], _float] | Sequence[Callable[[_int], _float]],
        last_epoch: _int = ...,
    ) -> None: ...
    def state_dict(self) -> Any: ...
    def load_state_dict(self, state_dict: Mapping[str, Any]) -> Any: ...
