# Written by tools/gen_stubs.py from the runtime, except the hand-written region
# below, which it keeps as it is: edit that here, and rerun the generator.
# fmt: off

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, overload

import ferrograd
from ferrograd import Tensor, _DeviceLike, _DTypeLike, _Number, _Shape, _Dims

from ferrograd import get_rng_state as get_rng_state
from ferrograd import initial_seed as initial_seed
from ferrograd import manual_seed as manual_seed
from ferrograd import seed as seed
from ferrograd import set_rng_state as set_rng_state

# ---- hand-written: kept as it is by tools/gen_stubs.py (edit here) ----

from contextlib import AbstractContextManager

def fork_rng(
    devices: Iterable[Any] | None = ...,
    enabled: _bool = ...,
    _caller: str = ...,
    _devices_kw: str = ...,
    device_type: str = ...,
) -> AbstractContextManager[None]: ...

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----
