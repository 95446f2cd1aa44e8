# Written by tools/gen_stubs.py from the runtime, except the hand-written region
# below, which it keeps as it is: edit that here, and rerun the generator.
# fmt: off

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, overload

import ferrograd
from ferrograd import Tensor, _DeviceLike, _DTypeLike, _Number, _Shape, _Dims

from ferrograd.amp.autocast_mode import autocast as autocast
from ferrograd.amp.autocast_mode import custom_bwd as custom_bwd
from ferrograd.amp.autocast_mode import custom_fwd as custom_fwd
from ferrograd.amp.autocast_mode import get_autocast_dtype as get_autocast_dtype
from ferrograd.amp.autocast_mode import is_autocast_available as is_autocast_available
from ferrograd.amp.autocast_mode import is_autocast_enabled as is_autocast_enabled
from ferrograd.amp.autocast_mode import set_autocast_dtype as set_autocast_dtype
from ferrograd.amp.autocast_mode import set_autocast_enabled as set_autocast_enabled

# ---- hand-written: kept as it is by tools/gen_stubs.py (edit here) ----

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----
