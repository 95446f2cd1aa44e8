# Written by tools/gen_stubs.py from the runtime, except the hand-written region
# below, which it keeps as it is: edit that here, and rerun the generator.
# fmt: off

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, overload

import ferrograd
from ferrograd import Tensor, _DeviceLike, _DTypeLike, _Number, _Shape, _Dims

from . import amp as amp

# ---- hand-written: kept as it is by tools/gen_stubs.py (edit here) ----

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----

def is_available() -> _bool: ...
def device_count() -> Any: ...
