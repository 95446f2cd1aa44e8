# Written by tools/gen_stubs.py from the runtime, except the hand-written region
# below, which it keeps as it is: edit that here, and rerun the generator.
# fmt: off

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, overload

import ferrograd
from ferrograd import Tensor, _DeviceLike, _DTypeLike, _Number, _Shape, _Dims

from ferrograd.autograd.function import Function

# ---- hand-written: kept as it is by tools/gen_stubs.py (edit here) ----

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----

class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx: Any, run_function: Any, preserve_rng_state: _bool, *args: Any) -> Tensor: ...
    @staticmethod
    def backward(ctx: Any, *grads: Any) -> None: ...

def checkpoint(
    function: Callable[..., Any],
    *args: Any,
    use_reentrant: _bool | None = ...,
    preserve_rng_state: _bool = ...,
    determinism_check: Any = ...,
    debug: Any = ...,
    early_stop: Any = ...,
    context_fn: Any = ...,
    **kwargs: Any,
) -> Any: ...
def checkpoint_sequential(
    functions: Any,
    segments: Any,
    input: Tensor,
    use_reentrant: _bool | None = ...,
    **kwargs: Any,
) -> Any: ...
