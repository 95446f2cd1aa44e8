"""torch.cpu: the CPU device module (``ferrograd.cpu.amp.autocast``)."""

from . import amp

__all__ = ["amp", "is_available", "device_count"]


def is_available():
    return True


def device_count():
    return 1
