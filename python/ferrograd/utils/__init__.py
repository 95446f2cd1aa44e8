"""torch.utils: activation checkpointing."""

from . import checkpoint  # noqa: F401
