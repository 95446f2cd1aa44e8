"""Differentiable collectives (torch.distributed.nn)."""

from . import functional
from .functional import (
    all_gather,
    all_reduce,
    all_to_all,
    all_to_all_single,
    broadcast,
    copy_to_parallel_region,
    gather,
    reduce,
    reduce_from_parallel_region,
    reduce_scatter,
    scatter,
)

__all__ = [
    "functional",
    "all_gather",
    "all_reduce",
    "all_to_all",
    "all_to_all_single",
    "broadcast",
    "copy_to_parallel_region",
    "gather",
    "reduce",
    "reduce_from_parallel_region",
    "reduce_scatter",
    "scatter",
]
