"""torch.utils: activation checkpointing, DLPack."""

from . import checkpoint, dlpack  # noqa: F401

__all__ = [
    "checkpoint",
    "dlpack",
]
