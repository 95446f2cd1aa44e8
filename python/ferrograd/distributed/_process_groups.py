"""Process groups: the default (world) group, ``new_group``, ``init_process_group``
and ``destroy_process_group``, and the rank queries.

The world group and the list of groups live here only (``_process_groups._WORLD``,
``_process_groups._groups``); other modules read them through this module."""

from __future__ import annotations

import os

from . import _failure
from ._common import _MPI, Backend, _timeout_seconds
from ._work import _Runner


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
            with _failure._lock:
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

_WORLD: ProcessGroup | None = None
_groups: list[ProcessGroup] = []


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
    global _WORLD
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
    _failure._control = world.Dup()
    _WORLD = ProcessGroup(comm, range(mpi_size), seconds, str(name))
    GroupMember.WORLD = _WORLD
    _groups.append(_WORLD)
    _failure._install_failure_reporting()


def destroy_process_group(group=None):
    """Frees a group (default: the default group and every other group)."""
    global _WORLD
    if group is None or group is GroupMember.WORLD:
        if _WORLD is None:
            raise _not_initialized()
        for g in _groups:
            _free(g)
        _groups.clear()
        if _failure._control is not None:
            _failure._control.Free()
            _failure._control = None
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


def _member(group) -> ProcessGroup:
    """The process group; ValueError on a rank that is not a member."""
    g = _group(group)
    if g is None:
        raise ValueError("Invalid process group specified")
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
    return _member(group).backend


def get_process_group_ranks(group) -> list[int]:
    return list(_member(group).ranks)


def get_group_rank(group, global_rank: int) -> int:
    g = _member(group)
    if global_rank not in g._global_to_group:
        raise ValueError(f"Global rank {global_rank} is not part of group {g}")
    return g._global_to_group[global_rank]


def get_global_rank(group, group_rank: int) -> int:
    g = _member(group)
    if not 0 <= group_rank < len(g.ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {g}")
    return g.ranks[group_rank]
