"""torch.cpu.amp: the CPU-only spelling of ``ferrograd.amp.autocast``."""

from ...amp import autocast as _autocast

__all__ = ["autocast"]


class autocast(_autocast):
    """``ferrograd.cpu.amp.autocast(...)``, which is
    ``ferrograd.amp.autocast("cpu", ...)`` (deprecated in torch, kept)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        from ... import bfloat16

        super().__init__(
            "cpu",
            dtype=bfloat16 if dtype is None else dtype,
            enabled=enabled,
            cache_enabled=cache_enabled,
        )
