# Written by tools/gen_stubs.py from the runtime, except the hand-written region
# below, which it keeps as it is: edit that here, and rerun the generator.
# fmt: off

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, overload

import ferrograd
from ferrograd import Tensor, _DeviceLike, _DTypeLike, _Number, _Shape, _Dims

from ferrograd.nn.modules import Module

# ---- hand-written: kept as it is by tools/gen_stubs.py (edit here) ----

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----

class DistributedDataParallel(Module):
    def __init__(
        self,
        module: Any,
        device_ids: Any = ...,
        output_device: Any = ...,
        dim: _int = ...,
        broadcast_buffers: Any = ...,
        process_group: Any = ...,
        bucket_cap_mb: Any = ...,
        find_unused_parameters: Any = ...,
        check_reduction: Any = ...,
        gradient_as_bucket_view: Any = ...,
        static_graph: Any = ...,
        init_sync: Any = ...,
        **kwargs: Any,
    ) -> None: ...
    def forward(self, *inputs: Any, **kwargs: Any) -> Tensor: ...
    def no_sync(self) -> Any: ...
