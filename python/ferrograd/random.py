"""ferrograd.random: the global generator (torch.random's functions)."""

import contextlib

from ._C import get_rng_state, initial_seed, manual_seed, seed, set_rng_state

__all__ = [
    "fork_rng",
    "get_rng_state",
    "initial_seed",
    "manual_seed",
    "seed",
    "set_rng_state",
]


@contextlib.contextmanager
def fork_rng(
    devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cpu"
):
    """Restores the global generator's state when the block exits."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
