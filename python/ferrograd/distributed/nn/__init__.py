"""Differentiable collectives (torch.distributed.nn)."""

# The collectives, as functional.__all__ lists them.
from . import functional
from .functional import *

__all__ = ["functional"] + functional.__all__
