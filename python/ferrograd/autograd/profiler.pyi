# Written by tools/gen_stubs.py from the runtime, except the hand-written region
# below, which it keeps as it is: edit that here, and rerun the generator.
# fmt: off

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, overload

import ferrograd
from ferrograd import Tensor, _DeviceLike, _DTypeLike, _Number, _Shape, _Dims

import contextlib

# ---- hand-written: kept as it is by tools/gen_stubs.py (edit here) ----

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----

class profile:
    def __init__(
        self,
        enabled: _bool = ...,
        *,
        use_cuda: _bool = ...,
        use_device: Any = ...,
        record_shapes: _bool = ...,
        with_flops: Any = ...,
        profile_memory: _bool = ...,
        with_stack: _bool = ...,
        with_modules: Any = ...,
        use_kineto: Any = ...,
        use_cpu: Any = ...,
        experimental_config: Any = ...,
        acc_events: Any = ...,
        custom_trace_id_callback: Any = ...,
    ) -> None: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, *args: Any) -> Any: ...
    def events(self) -> Any: ...
    def key_averages(
        self,
        group_by_input_shape: _bool = ...,
        group_by_stack_n: Any = ...,
    ) -> Any: ...
    def total_average(self) -> Any: ...
    def table(self, sort_by: str | None = ..., row_limit: _int = ..., **kwargs: Any) -> Any: ...
    def export_chrome_trace(self, path: str) -> Any: ...
    @property
    def self_cpu_time_total(self) -> Any: ...

class record_function(contextlib.ContextDecorator):
    def __init__(self, name: str, args: Any = ...) -> None: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, *args: Any) -> Any: ...

class emit_nvtx:
    def __init__(self, enabled: _bool = ..., record_shapes: _bool = ...) -> None: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, *args: Any) -> Any: ...

class emit_itt:
    def __init__(self, enabled: _bool = ..., record_shapes: _bool = ...) -> None: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, *args: Any) -> Any: ...

class EventList(list[Any]):
    def __init__(
        self,
        *args: Any,
        group_by_input_shape: _bool = ...,
        with_stack: _bool = ...,
        profile_memory: _bool = ...,
    ) -> None: ...
    @property
    def self_cpu_time_total(self) -> Any: ...
    def key_averages(
        self,
        group_by_input_shape: _bool = ...,
        group_by_stack_n: Any = ...,
    ) -> Any: ...
    def total_average(self) -> Any: ...
    def table(
        self,
        sort_by: str | None = ...,
        row_limit: _int = ...,
        max_src_column_width: Any = ...,
        max_name_column_width: Any = ...,
        max_shapes_column_width: Any = ...,
        header: Any = ...,
        top_level_events_only: Any = ...,
    ) -> Any: ...
    def export_chrome_trace(self, path: str) -> Any: ...

class FunctionEvent:
    def __init__(
        self,
        id: Any,
        name: str,
        kind: Any,
        start_ns: Any,
        dur_ns: Any,
        self_ns: Any,
        thread: Any,
        input_shapes: Any,
        stack: Any = ...,
        cpu_memory_usage: Any = ...,
        self_cpu_memory_usage: Any = ...,
    ) -> None: ...
    @property
    def time_range_end(self) -> Any: ...
    @property
    def cpu_time(self) -> Any: ...

class FunctionEventAvg:
    def __init__(self) -> None: ...
    def add(self, other: Tensor | _Number) -> Any: ...
    def __iadd__(self, other: Any) -> Any: ...
    @property
    def cpu_time(self) -> Any: ...

def load_nvprof(path: str) -> Any: ...
