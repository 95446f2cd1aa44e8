"""torch.utils: activation checkpointing, DLPack, safetensors files."""

from . import checkpoint, dlpack, safetensors  # noqa: F401

__all__ = [
    "checkpoint",
    "dlpack",
    "safetensors",
]
