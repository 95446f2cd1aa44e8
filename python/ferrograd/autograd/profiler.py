"""``torch.autograd.profiler``: a CPU profiler over ferrograd's own events.

Events come from the Rust core: every forward op (named as torch names it,
``aten::mul``; its time covers the whole op, kernel included), every backward
node the engine evaluates (``MulBackward0``, on the worker thread that ran
it) and every ``record_function`` range. With ``with_stack=True`` forward ops
and user ranges carry the Python stack they were called from (``stack``,
innermost frame first); with ``profile_memory=True`` each event carries the
tensor storage bytes allocated (positive) and freed (negative) while it was
the innermost open range (``self_cpu_memory_usage``) and that plus its
children's (``cpu_memory_usage``). This module only groups and formats them.
"""

import contextlib
import json
import os

from .. import _C

__all__ = [
    "profile",
    "record_function",
    "emit_nvtx",
    "emit_itt",
    "load_nvprof",
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
]


def _format_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_memory(nbytes):
    kb, mb, gb = 1024, 1024 * 1024, 1024 * 1024 * 1024
    if abs(nbytes) >= gb:
        return f"{nbytes * 1.0 / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes * 1.0 / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes * 1.0 / kb:.2f} KB"
    return f"{nbytes} B"


# Frames of the profiler itself are left out of stacks, as torch does.
_STACK_SKIP = ("autograd/profiler.py", "autograd/__init__.py", "contextlib.py")


def _trim_path(path, width):
    if len(path) > width:
        path = path[len(path) - width :]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def _filter_stack(stack):
    return [f for f in stack if not any(s in f for s in _STACK_SKIP)]


def _format_percent(x, total):
    return f"{(x * 100.0 / total) if total else 0.0:.2f}%"


class FunctionEvent:
    """One profiled range. Times are in microseconds."""

    def __init__(
        self,
        id,
        name,
        kind,
        start_ns,
        dur_ns,
        self_ns,
        thread,
        input_shapes,
        stack=(),
        cpu_memory_usage=0,
        self_cpu_memory_usage=0,
    ):
        self.id = id
        self.name = name
        self.key = name
        self.kind = kind
        self.thread = thread
        self.input_shapes = [list(s) for s in input_shapes]
        self.time_range_start = start_ns / 1000.0
        self.cpu_time_total = dur_ns / 1000.0
        self.self_cpu_time_total = self_ns / 1000.0
        self.count = 1
        self.is_user_annotation = kind == "user_annotation"
        self.is_async = False
        self.stack = _filter_stack(stack)
        self.cpu_memory_usage = cpu_memory_usage
        self.self_cpu_memory_usage = self_cpu_memory_usage

    @property
    def time_range_end(self):
        return self.time_range_start + self.cpu_time_total

    @property
    def cpu_time(self):
        return self.cpu_time_total

    def __repr__(self):
        return (
            f"<FunctionEvent id={self.id} name={self.name} kind={self.kind} "
            f"cpu_time={_format_time(self.cpu_time_total)} "
            f"self_cpu_time={_format_time(self.self_cpu_time_total)} "
            f"thread={self.thread} input_shapes={self.input_shapes}>"
        )


class FunctionEventAvg:
    """Events with the same key (and input shapes, when grouped so), summed."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes = None
        self.is_user_annotation = False
        self.stack = []
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.is_user_annotation = other.is_user_annotation
            self.stack = other.stack
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        return self

    def __iadd__(self, other):
        return self.add(other)

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time="
            f"{_format_time(self.self_cpu_time_total)} cpu_time="
            f"{_format_time(self.cpu_time)} input_shapes={self.input_shapes}>"
        )


class EventList(list):
    """A list of events (or of averages) with torch's reporting methods."""

    def __init__(self, *args, group_by_input_shape=False, with_stack=False, profile_memory=False):
        super().__init__(*args)
        self._group_by_input_shape = group_by_input_shape
        self._with_stack = with_stack
        self._profile_memory = profile_memory

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        groups = {}
        for e in self:
            k = [e.key]
            if group_by_input_shape:
                k.append(str(e.input_shapes))
            if group_by_stack_n > 0:
                k.append(tuple(e.stack[:group_by_stack_n]))
            groups.setdefault(tuple(k), FunctionEventAvg()).add(e)
        for avg in groups.values():
            avg.stack = avg.stack[:group_by_stack_n] if group_by_stack_n > 0 else []
        return EventList(
            groups.values(),
            group_by_input_shape=group_by_input_shape,
            with_stack=group_by_stack_n > 0,
            profile_memory=self._profile_memory,
        )

    def total_average(self):
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
        total.key = "Total"
        total.input_shapes = None
        return total

    def table(
        self,
        sort_by=None,
        row_limit=100,
        max_src_column_width=75,
        max_name_column_width=55,
        max_shapes_column_width=80,
        header=None,
        top_level_events_only=False,
    ):
        events = list(self)
        if sort_by is not None:
            events.sort(key=lambda e: getattr(e, sort_by), reverse=True)
        total = sum(e.self_cpu_time_total for e in self)
        name_w = min(max((len(e.key) for e in events), default=4) + 4, max_name_column_width)
        name_w = max(name_w, 4)
        headers = [
            "Self CPU %",
            "Self CPU",
            "CPU total %",
            "CPU total",
            "CPU time avg",
        ]
        mem = self._profile_memory
        if mem:
            headers += ["CPU Mem", "Self CPU Mem"]
        headers.append("# of Calls")
        shapes = self._group_by_input_shape
        if shapes:
            shape_w = min(
                max((len(str(e.input_shapes)) for e in events), default=12) + 4,
                max_shapes_column_width,
            )
            shape_w = max(shape_w, len("Input Shapes"))
        stacks = self._with_stack and any(e.stack for e in events)
        src_w = 0
        if stacks:
            src_w = min(
                max((len(f) for e in events for f in e.stack), default=0) + 4,
                max_src_column_width,
            )
            src_w = max(src_w, len("Source Location"))
        widths = (
            [name_w]
            + [12] * len(headers)
            + ([shape_w] if shapes else [])
            + ([src_w] if stacks else [])
        )
        names = (
            ["Name"]
            + headers
            + (["Input Shapes"] if shapes else [])
            + (["Source Location"] if stacks else [])
        )

        def line(cells):
            return "".join(f"{c:>{w}}  " for c, w in zip(cells, widths))

        sep = "".join("-" * w + "  " for w in widths)
        out = []
        if header is not None:
            out += ["=" * len(sep), header]
        out += [sep, line(names), sep]
        for e in events[:row_limit] if row_limit is not None and row_limit >= 0 else events:
            name = e.key
            if len(name) >= name_w - 3:
                name = name[: name_w - 6] + "..."
            cells = [
                name,
                _format_percent(e.self_cpu_time_total, total),
                _format_time(e.self_cpu_time_total),
                _format_percent(e.cpu_time_total, total),
                _format_time(e.cpu_time_total),
                _format_time(e.cpu_time),
            ]
            if mem:
                cells += [
                    _format_memory(e.cpu_memory_usage),
                    _format_memory(e.self_cpu_memory_usage),
                ]
            cells.append(str(e.count))
            if shapes:
                s = str(e.input_shapes)
                if len(s) >= shape_w - 3:
                    s = s[: shape_w - 6] + "..."
                cells.append(s)
            src = list(e.stack) if stacks else []
            if stacks:
                cells.append(_trim_path(src[0], src_w) if src else "")
            out.append(line(cells))
            if stacks:
                # torch prints the further frames of the source location on
                # lines of their own, under the column, then a blank line.
                for frame in src[1:]:
                    out.append(line([""] * (len(widths) - 1) + [_trim_path(frame, src_w)]))
                out.append(line([""] * len(widths)))
        out.append(sep)
        out.append(f"Self CPU time total: {_format_time(total)}")
        return "\n".join(out) + "\n"

    def export_chrome_trace(self, path):
        pid = os.getpid()
        trace = [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "ferrograd"}}
        ]
        for tid in sorted({e.thread for e in self}):
            trace.append(
                {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": pid,
                    "tid": tid,
                    "args": {"name": f"thread {tid}"},
                }
            )
        for e in self:
            ev = {
                "ph": "X",
                "cat": e.kind,
                "name": e.name,
                "pid": pid,
                "tid": e.thread,
                "ts": e.time_range_start,
                "dur": e.cpu_time_total,
                "args": {},
            }
            if e.input_shapes:
                ev["args"]["Input Dims"] = e.input_shapes
            trace.append(ev)
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)


class profile:
    """``torch.autograd.profiler.profile``: records ops, backward nodes and
    user ranges while active.

    ``with_stack`` records the Python stack of forward ops and user ranges;
    ``profile_memory`` the tensor storage bytes each range allocated and
    freed. Entering a second profile while one is on replaces the first, as
    in torch: the outer one then ends with no events.
    """

    def __init__(
        self,
        enabled=True,
        *,
        use_cuda=False,
        use_device=None,
        record_shapes=False,
        with_flops=False,
        profile_memory=False,
        with_stack=False,
        with_modules=False,
        use_kineto=False,
        use_cpu=True,
        experimental_config=None,
        acc_events=False,
        custom_trace_id_callback=None,
    ):
        if use_cuda or (use_device not in (None, "cpu")):
            raise RuntimeError(
                "profile(use_cuda/use_device): ferrograd is CPU-only and has no device to profile"
            )
        if not use_cpu and enabled:
            raise RuntimeError("profile(use_cpu=False): ferrograd only profiles the CPU")
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.function_events = None
        self.entered = False

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        _C._profiler_start(self.record_shapes, self.with_stack, self.profile_memory)
        return self

    def __exit__(self, *args):
        if not self.enabled:
            return
        raw = _C._profiler_stop()
        self.function_events = EventList(
            (FunctionEvent(i, *r) for i, r in enumerate(raw)),
            with_stack=self.with_stack,
            profile_memory=self.profile_memory,
        )
        return False

    def _check_finished(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def events(self):
        self._check_finished()
        return self.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        self._check_finished()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self):
        self._check_finished()
        return self.function_events.total_average()

    def table(self, sort_by=None, row_limit=100, **kwargs):
        self._check_finished()
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def __str__(self):
        return self.table() if self.function_events is not None else "<unfinished profile>"

    def export_chrome_trace(self, path):
        self._check_finished()
        self.function_events.export_chrome_trace(path)

    @property
    def self_cpu_time_total(self):
        self._check_finished()
        return self.function_events.self_cpu_time_total


class record_function(contextlib.ContextDecorator):
    """A user range in the profile; a context manager or a decorator."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._rf = _C._RecordFunction(name)

    def __enter__(self):
        self._rf._enter()
        return self

    def __exit__(self, *args):
        self._rf._exit()
        return False

    def _recreate_cm(self):
        # A fresh range per call of a decorated function.
        return record_function(self.name, self.args)


def _no_backend(what, needs):
    raise RuntimeError(
        f"{what} needs a ferrograd built with {needs}; ferrograd is CPU-only and has none. "
        "Use ferrograd.autograd.profiler.profile instead."
    )


class emit_nvtx:
    """Unavailable: needs a CUDA build with NVTX (ferrograd is CPU-only)."""

    def __init__(self, enabled=True, record_shapes=False):
        if enabled:
            _no_backend("emit_nvtx", "CUDA and NVTX support")
        self.enabled = False

    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False


class emit_itt:
    """Unavailable: needs a build with Intel VTune (ITT) support."""

    def __init__(self, enabled=True, record_shapes=False):
        if enabled:
            _no_backend("emit_itt", "Intel VTune (ITT) support")
        self.enabled = False

    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False


def load_nvprof(path):
    """Unavailable: nvprof traces come from CUDA builds (ferrograd is CPU-only)."""
    _no_backend("load_nvprof", "CUDA (nvprof traces)")
