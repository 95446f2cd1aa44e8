# Hand-written part of the generated stub (see tools/gen_stubs.py).

def save(obj: Any, f: Any, pickle_module: Any = ..., pickle_protocol: _int = ...) -> None: ...
def load(
    f: Any,
    map_location: Any = ...,
    pickle_module: Any = ...,
    *,
    weights_only: _bool = ...,
    mmap: Any = ...,
    **kwargs: Any,
) -> Any: ...
