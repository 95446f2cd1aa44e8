"""Buffers over tensors, the check that every rank's call matches, and the
Work classes (an MPI request's, a runner thread's)."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from .. import _C
from ._common import _MPI, _OPS, DistBackendError, DistError, ReduceOp, _timeout_seconds
from ._failure import _poll_failure, _timed_out, _wait_all

if TYPE_CHECKING:
    from ._process_groups import ProcessGroup

_DTYPE_CODES = {_C.float32: 1, _C.float64: 2, _C.int64: 3, _C.bool: 4}
_CODE_DTYPES = {v: str(k) for k, v in _DTYPE_CODES.items()}
_OP_NAMES = [
    "all_reduce",
    "broadcast",
    "reduce",
    "all_gather",
    "all_gather_into_tensor",
    "reduce_scatter_tensor",
    "all_to_all_single",
    "scatter",
    "gather",
    "barrier",
    "all_to_all",
    "reduce_scatter",
]
_MAX_DIMS = 8


def _check_tensor(t, name: str):
    if not isinstance(t, _C.Tensor):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
            f"             but got {type(t)} instead."
        )


def _check_list(ts, name: str):
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, _C.Tensor) for t in ts):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor]\n"
            f"             but got {type(ts)} instead."
        )


def _dtype_code(t) -> int:
    return _DTYPE_CODES[t.dtype]


class _Buf:
    """An MPI buffer over a tensor's memory: the tensor's own when it is
    contiguous, else a contiguous temporary copied back by ``finish``."""

    def __init__(self, t, read_only=False):
        self.t = t
        d = t.detach()
        self.tmp = None if d.is_contiguous() else d.contiguous()
        src = d if self.tmp is None else self.tmp
        self.arr = src.numpy().reshape(-1) if src.dim() != 0 else src.numpy().reshape(1)
        self.read_only = read_only

    def finish(self):
        if self.read_only:
            return
        if self.tmp is not None:
            self.t.detach().copy_(self.tmp)
        else:
            _C._increment_version(self.t)

    def divide(self, n):
        """Divides the received values by ``n`` (ReduceOp.AVG's mean)."""
        (self.tmp if self.tmp is not None else self.t.detach()).div_(n)

    def epilogue(self, avg_by=None) -> list:
        """What completion runs: ``finish``, after dividing by ``avg_by``
        when that is given."""
        if avg_by is None:
            return [self.finish]
        return [lambda: self.divide(avg_by), self.finish]


def _mpi_op(op, dtype_code):
    MPI = _MPI()
    if op not in _OPS:
        raise ValueError(f"Unknown reduce op {op!r}")
    if dtype_code == 4:  # bool: logical ops
        if op == ReduceOp.AVG:
            raise TypeError("ReduceOp.AVG is not supported for bool tensors")
        return MPI.LOR if op in (ReduceOp.SUM, ReduceOp.MAX) else MPI.LAND
    if op == ReduceOp.AVG and dtype_code == 3:
        raise TypeError(
            "ReduceOp.AVG is supported for floating point tensors only, got torch.int64"
        )
    return {0: MPI.SUM, 1: MPI.SUM, 2: MPI.PROD, 3: MPI.MIN, 4: MPI.MAX}[op.value]


def _meta(what: str, t, root=-1, op=None, extra=0):
    shape = list(t.shape) if t is not None else []
    row = [
        _OP_NAMES.index(what),
        _dtype_code(t) if t is not None else 0,
        root,
        -1 if op is None else op.value,
        extra,
        len(shape),
    ]
    row += _padded(shape)
    # shapes of more than _MAX_DIMS dims: the element count tells them apart
    n = 1
    for s in shape:
        n *= s
    row.append(n)
    return row


def _padded(shape) -> list:
    """A shape as ``_MAX_DIMS`` entries (cut or padded with zeros)."""
    return (list(shape) + [0] * _MAX_DIMS)[:_MAX_DIMS]


def _shape_at(row, at: int) -> list[int]:
    """The shape ``_padded`` wrote at ``row[at:]`` (its dim count at ``row[at - 1]``)."""
    return [int(s) for s in row[at : at + min(int(row[at - 1]), _MAX_DIMS)]]


def _describe(row) -> str:
    op = _OP_NAMES[row[0]] if 0 <= row[0] < len(_OP_NAMES) else "?"
    dtype = _CODE_DTYPES.get(row[1], "-")
    shape = _shape_at(row, 6)
    parts = [op, dtype, f"shape {list(shape)}"]
    if row[2] != -1:
        parts.append(f"root {row[2]}")
    if row[3] != -1:
        parts.append(f"op {_OPS[row[3]].name}")
    if row[4]:
        parts.append(f"arg {row[4]}")
    return " ".join(parts)


def _agree(g: ProcessGroup, row, what: str):
    """Every rank of ``g`` passes its call's description; all must match."""
    import numpy as np

    mine = np.asarray(row, dtype=np.int64)
    every = np.empty((g.size(), mine.size), dtype=np.int64)
    _wait_all([g.comm.Iallgather(mine, every)], g.timeout, what, ranks=g.ranks)
    bad = [r for r in range(g.size()) if not np.array_equal(every[r], every[0])]
    if bad:
        lines = "; ".join(f"rank {g.ranks[r]}: {_describe(every[r])}" for r in range(g.size()))
        raise ValueError(f"ferrograd.distributed.{what}: the ranks' calls do not match ({lines})")


def _work(reqs, g, what, finish=(), async_op=False):
    return _waited(Work(reqs, g, what, finish), async_op)


def _waited(w, async_op):
    """``w`` for an asynchronous call; else waits for it and returns None."""
    if async_op:
        return w
    w.wait()
    return None


class Work:
    """A started operation (torch's ``Work``): ``wait()`` blocks until it
    completes (and raises on a peer's failure or the timeout),
    ``is_completed()`` tests without blocking."""

    def __init__(self, reqs, group, what, finish=()):
        self._reqs = [r for r in reqs if r is not None]
        self._group = group
        self._what = what
        self._finish = list(finish)
        self._done = False
        self._error = None
        self._lock = threading.Lock()

    def _complete(self):
        # runs the epilogue once (copies back, AVG's division, versions)
        with self._lock:
            if self._done:
                return
            for f in self._finish:
                f()
            self._done = True

    def _limit(self, timeout) -> float:
        """Raises the error an earlier wait met; else a wait's limit in seconds."""
        if self._error is not None:
            raise self._error
        return self._group.timeout if timeout is None else _timeout_seconds(timeout)

    def wait(self, timeout=None) -> bool:
        if self._done:
            return True
        limit = self._limit(timeout)
        try:
            _wait_all(self._reqs, limit, self._what, ranks=self._group.ranks)
        except DistError as e:
            self._error = e
            raise
        self._complete()
        return True

    def is_completed(self) -> bool:
        if self._done:
            return True
        if self._error is not None:
            return True
        MPI = _MPI()
        if self._reqs and not MPI.Request.Testall(self._reqs):
            return False
        self._complete()
        return True

    def is_success(self) -> bool:
        return self.is_completed() and self._error is None

    def exception(self):
        return self._error

    def result(self):
        return []

    def __repr__(self) -> str:
        return f"<Work {self._what} {'completed' if self._done else 'pending'}>"


class _Future:
    __slots__ = ("done", "error")

    def __init__(self):
        self.done = threading.Event()
        self.error = None


class _Runner:
    """A daemon thread running blocking MPI calls in submission order (as
    torch's process groups run collectives on their own threads): the
    call progresses while the submitting thread computes, and MPI's
    blocking algorithms are used."""

    def __init__(self):
        import queue

        self._q = queue.SimpleQueue()
        self._t = threading.Thread(target=self._loop, name="ferrograd-mpi", daemon=True)
        self._t.start()

    def _loop(self):
        while True:
            fn, fut = self._q.get()
            try:
                fn()
            except BaseException as e:  # handed to the waiter
                fut.error = e
            fut.done.set()

    def submit(self, fn) -> _Future:
        fut = _Future()
        self._q.put((fn, fut))
        return fut


class _ThreadWork(Work):
    """A Work whose operation runs on a runner thread."""

    def __init__(self, fut, group, what, finish=()):
        super().__init__([], group, what, finish)
        self._fut = fut

    def wait(self, timeout=None) -> bool:
        if self._done:
            return True
        limit = self._limit(timeout)
        start = time.monotonic()
        # Event.wait releases the GIL; wake up now and then to notice a
        # peer's failure or the timeout
        while not self._fut.done.wait(0.05):
            try:
                _poll_failure(self._group.ranks)
            except DistError as e:
                self._error = e
                raise
            if time.monotonic() - start > limit:
                self._error = _timed_out(self._what, limit)
                raise self._error
        if self._fut.error is not None:
            self._error = DistBackendError(f"{self._what} failed in MPI: {self._fut.error}")
            raise self._error
        self._complete()
        return True

    def is_completed(self) -> bool:
        if self._done or self._error is not None:
            return True
        if not self._fut.done.is_set():
            return False
        if self._fut.error is None:
            self._complete()
        return True


def _root(g: ProcessGroup, global_rank, name: str) -> int:
    if not isinstance(global_rank, int) or isinstance(global_rank, bool):
        raise TypeError(f"{name} must be an int, got {type(global_rank).__name__}")
    if global_rank not in g._global_to_group:
        raise ValueError(f"Invalid {name} {global_rank}: not a rank of {g}")
    return g._global_to_group[global_rank]


def _root_of(g: ProcessGroup, global_rank, group_rank, name: str, default=None) -> int:
    """A root's group rank: ``group_rank`` when given, else that of the
    global rank ``global_rank`` (``default`` when that is None too)."""
    if group_rank is not None:
        return group_rank
    return _root(g, default if global_rank is None else global_rank, name)


def _same_dtype(ts, dtype, what):
    for t in ts:
        if t.dtype != dtype:
            raise ValueError(f"{what}: tensors must all have dtype {dtype}, got {t.dtype}")
