# Written by tools/gen_stubs.py from the runtime, except the hand-written region
# below, which it keeps as it is: edit that here, and rerun the generator.
# fmt: off

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, overload

import ferrograd
from ferrograd import Tensor, _DeviceLike, _DTypeLike, _Number, _Shape, _Dims

from . import functional as functional

from ferrograd.distributed.nn.functional import all_gather as all_gather
from ferrograd.distributed.nn.functional import all_reduce as all_reduce
from ferrograd.distributed.nn.functional import all_to_all as all_to_all
from ferrograd.distributed.nn.functional import all_to_all_single as all_to_all_single
from ferrograd.distributed.nn.functional import broadcast as broadcast
from ferrograd.distributed.nn.functional import copy_to_parallel_region as copy_to_parallel_region
from ferrograd.distributed.nn.functional import gather as gather
from ferrograd.distributed.nn.functional import reduce as reduce
from ferrograd.distributed.nn.functional import reduce_from_parallel_region as reduce_from_parallel_region
from ferrograd.distributed.nn.functional import reduce_scatter as reduce_scatter
from ferrograd.distributed.nn.functional import scatter as scatter

# ---- hand-written: kept as it is by tools/gen_stubs.py (edit here) ----

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----
