"""`ferrograd.save` / `ferrograd.load`: objects holding tensors (state
dicts, optimizer states, checkpoints) through pickle, with each tensor's
values, dtype, shape and requires_grad (see `Tensor.__reduce_ex__`).

The file format is plain pickle, not torch's zip archive: ferrograd reads
what ferrograd wrote. As in torch 2.6+, `load` defaults to
``weights_only=True``: only tensors, Parameters and plain containers and
scalars may be unpickled, so loading an untrusted file cannot run code."""

import os
import pickle

_ALLOWED = {
    ("ferrograd._C", "_rebuild_tensor"),
    ("ferrograd._C", "Tensor"),
    ("ferrograd", "Tensor"),
    ("ferrograd.nn.parameter", "_rebuild_parameter"),
    ("ferrograd.nn.parameter", "Parameter"),
    ("collections", "OrderedDict"),
    ("collections", "defaultdict"),
    ("builtins", "dict"),
    ("builtins", "list"),
    ("builtins", "tuple"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "int"),
    ("builtins", "float"),
    ("builtins", "complex"),
    ("builtins", "bool"),
    ("builtins", "str"),
    ("builtins", "bytes"),
    ("builtins", "slice"),
    # protocol 2 writes bytes as _codecs.encode(str, "latin1")
    ("_codecs", "encode"),
}


class _WeightsUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            "Weights only load failed. Re-running `ferrograd.load` with `weights_only` set to "
            "`False` will likely succeed, but it can result in arbitrary code execution. Do it "
            f"only if you got the file from a trusted source. Unsupported global: GLOBAL {module}.{name}"
        )


def _opened(f, mode):
    if isinstance(f, (str, os.PathLike)):
        return open(f, mode), True
    return f, False


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True):
    """Writes `obj` to a path or a binary file object."""
    handle, owned = _opened(f, "wb")
    try:
        pickle_module.dump(obj, handle, protocol=pickle_protocol)
    finally:
        if owned:
            handle.close()


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **kwargs):
    """Reads an object written by `save`. `map_location` may only name the
    CPU (the one device)."""
    if map_location not in (None, "cpu") and str(map_location) != "cpu":
        if not callable(map_location) and not isinstance(map_location, dict):
            raise RuntimeError(f"ferrograd supports only the 'cpu' device, got {map_location!r}")
    handle, owned = _opened(f, "rb")
    try:
        if weights_only:
            return _WeightsUnpickler(handle).load()
        return (pickle_module or pickle).load(handle)
    finally:
        if owned:
            handle.close()


__all__ = [
    "save",
    "load",
]
