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

from ferrograd.amp.autocast_mode import autocast as _amp_autocast

class autocast(_amp_autocast):
    def __init__(
        self,
        enabled: _bool = ...,
        dtype: _DTypeLike | None = ...,
        cache_enabled: _bool = ...,
    ) -> None: ...

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----
