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

from typing import NamedTuple

class UnpackedDualTensor(NamedTuple):
    primal: Tensor
    tangent: Tensor | None

class dual_level:
    def __enter__(self) -> _int: ...
    def __exit__(self, *args: object) -> None: ...

def enter_dual_level() -> _int: ...
def exit_dual_level(*, level: _int | None = ...) -> None: ...
def make_dual(tensor: Tensor, tangent: Tensor, *, level: _int | None = ...) -> Tensor: ...
def unpack_dual(tensor: Tensor, *, level: _int | None = ...) -> UnpackedDualTensor: ...

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----
