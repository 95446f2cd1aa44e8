# Hand-written part of the generated stub (see tools/gen_stubs.py).

from contextlib import AbstractContextManager

def fork_rng(
    devices: Iterable[Any] | None = ...,
    enabled: _bool = ...,
    _caller: str = ...,
    _devices_kw: str = ...,
    device_type: str = ...,
) -> AbstractContextManager[None]: ...
