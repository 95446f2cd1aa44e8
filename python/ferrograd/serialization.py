"""`ferrograd.save` / `ferrograd.load` in torch's checkpoint format.

A checkpoint is torch's zip archive: ``<name>/data.pkl`` (pickle protocol
2; each tensor is ``torch._utils._rebuild_tensor_v2`` over a storage named
by a persistent id ``('storage', torch.FloatStorage, key, 'cpu', numel)``),
``<name>/data/<key>`` (each storage's raw little-endian bytes),
``<name>/byteorder``, ``<name>/version`` and ``.format_version``. So a
``state_dict`` saved by torch loads here and one saved here loads in torch.
Tensors that share a storage keep sharing it across the round trip.

As in torch 2.6+, ``load`` defaults to ``weights_only=True``: only
tensors, Parameters, storages, plain containers and scalars may be
unpickled, so loading an untrusted file cannot run code.

Files written by earlier ferrograd versions (plain pickle, no zip) still
load; ``_use_new_zipfile_serialization=False`` writes that format.

The storage bytes are copied in Rust (``_C._storage_bytes``,
``_C._storage_from_bytes``, ``_C._storage_view``); this module is the
zip and pickle plumbing."""

import collections
import io
import os
import pickle
import zipfile

from . import _C

# torch's storage classes and the dtype each one holds.
_STORAGE_DTYPES = {
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
    "LongStorage": "int64",
    "BoolStorage": "bool",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
}
_STORAGE_OF = {dtype: storage for storage, dtype in _STORAGE_DTYPES.items()}

_PLAIN = {
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
# ferrograd's own pickles (the pre-zip format and Tensor.__reduce_ex__).
_FERROGRAD = {
    ("ferrograd._C", "_rebuild_tensor"),
    ("ferrograd._C", "Tensor"),
    ("ferrograd", "Tensor"),
    ("ferrograd.nn.parameter", "_rebuild_parameter"),
    ("ferrograd.nn.parameter", "Parameter"),
}


class _StorageType:
    """What ``torch.FloatStorage`` and friends unpickle to: a dtype name."""

    def __init__(self, dtype):
        self.dtype = dtype


class _Global:
    """Pickled as ``GLOBAL module name`` without importing the module."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle's save_reduce wants a callable
        raise TypeError(f"{self.module}.{self.name} is a stand-in for pickling")


class _Storage:
    """A ferrograd storage on its way into a checkpoint."""

    def __init__(self, key, tensor, numel, dtype):
        self.key, self.tensor, self.numel, self.dtype = key, tensor, numel, dtype


def _rebuild_tensor_v2(
    storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None
):
    t = _C._storage_view(storage, storage_offset, list(size), list(stride))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    from .nn.parameter import Parameter

    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = _rebuild_parameter(data, requires_grad)
    for k, v in (state or {}).items():
        setattr(p, k, v)
    return p


def _torch_global(module, name):
    """ferrograd's stand-in for a global torch wrote, or None."""
    if module == "torch._utils":
        return {
            "_rebuild_tensor_v2": _rebuild_tensor_v2,
            "_rebuild_parameter": _rebuild_parameter,
            "_rebuild_parameter_with_state": _rebuild_parameter_with_state,
        }.get(name)
    if module == "torch" and name in _STORAGE_DTYPES:
        return _StorageType(_STORAGE_DTYPES[name])
    return None


def _weights_only_error(module, name):
    return pickle.UnpicklingError(
        "Weights only load failed. Re-running `ferrograd.load` with `weights_only` set to "
        "`False` will likely succeed, but it can result in arbitrary code execution. Do it "
        f"only if you got the file from a trusted source. Unsupported global: GLOBAL {module}.{name}"
    )


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, weights_only, load_storage=None):
        super().__init__(f)
        self.weights_only = weights_only
        self.load_storage = load_storage
        self.storages = {}

    def find_class(self, module, name):
        g = _torch_global(module, name)
        if g is not None:
            return g
        if (module, name) in _PLAIN or (module, name) in _FERROGRAD:
            return super().find_class(module, name)
        if self.weights_only:
            raise _weights_only_error(module, name)
        if module == "torch" or module.startswith("torch."):
            try:  # torch.nn.Linear -> ferrograd.nn.Linear, ...
                return super().find_class("ferrograd" + module[len("torch") :], name)
            except (ImportError, AttributeError):
                pass
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if self.load_storage is None:
            raise pickle.UnpicklingError("a persistent id outside a checkpoint archive")
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"Unsupported persistent id {pid!r}")
        storage_type, key = pid[1], str(pid[2])
        if not isinstance(storage_type, _StorageType):
            raise pickle.UnpicklingError(f"Unsupported storage type {storage_type!r}")
        if key not in self.storages:
            self.storages[key] = _C._storage_from_bytes(self.load_storage(key), storage_type.dtype)
        return self.storages[key]


class _Pickler(pickle._Pickler):
    """torch's data.pkl: tensors reduce to ``_rebuild_tensor_v2`` over
    persistent storages, Parameters to ``_rebuild_parameter``."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, f):
        super().__init__(f, protocol=2)
        self.storages = {}  # key -> _Storage, in first-seen order

    def _save_global_standin(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    dispatch[_Global] = _save_global_standin

    def persistent_id(self, obj):
        if isinstance(obj, _Storage):
            return ("storage", _Global("torch", _STORAGE_OF[obj.dtype]), obj.key, "cpu", obj.numel)
        return None

    def reducer_override(self, obj):
        from .nn.parameter import Parameter

        if isinstance(obj, Parameter):
            return (
                _Global("torch._utils", "_rebuild_parameter"),
                (obj.detach(), obj.requires_grad, collections.OrderedDict()),
            )
        if isinstance(obj, _C.Tensor):
            ptr, numel, offset, dtype = _C._storage_info(obj)
            st = self.storages.get(ptr)
            if st is None:
                st = self.storages[ptr] = _Storage(str(len(self.storages)), obj, numel, dtype)
            return (
                _Global("torch._utils", "_rebuild_tensor_v2"),
                (
                    st,
                    offset,
                    tuple(obj.shape),
                    tuple(obj.stride()),
                    obj.requires_grad,
                    collections.OrderedDict(),
                ),
            )
        return NotImplemented


def _archive_name(f):
    if isinstance(f, (str, os.PathLike)):
        return os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
    return "archive"


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True):
    """Writes `obj` to a path or a binary file object, in torch's zip
    checkpoint format (plain pickle with `_use_new_zipfile_serialization=False`)."""
    if not _use_new_zipfile_serialization:
        handle, owned = _opened(f, "wb")
        try:
            pickle_module.dump(obj, handle, protocol=pickle_protocol)
        finally:
            if owned:
                handle.close()
        return
    buf = io.BytesIO()
    p = _Pickler(buf)
    p.dump(obj)
    name = _archive_name(f)
    handle, owned = _opened(f, "wb")
    try:
        with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_STORED) as z:
            z.writestr(f"{name}/data.pkl", buf.getvalue())
            z.writestr(f"{name}/.format_version", "1")
            z.writestr(f"{name}/.storage_alignment", "64")
            z.writestr(f"{name}/byteorder", "little")
            for st in p.storages.values():
                z.writestr(f"{name}/data/{st.key}", _C._storage_bytes(st.tensor))
            z.writestr(f"{name}/version", "3\n")
    finally:
        if owned:
            handle.close()


def _opened(f, mode):
    if isinstance(f, (str, os.PathLike)):
        return open(f, mode), True
    return f, False


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **kwargs):
    """Reads a checkpoint written by torch.save or ferrograd.save (or an
    older ferrograd plain pickle). `map_location` may only name the CPU."""
    if map_location not in (None, "cpu") and str(map_location) != "cpu":
        if not callable(map_location) and not isinstance(map_location, dict):
            raise RuntimeError(f"ferrograd supports only the 'cpu' device, got {map_location!r}")
    handle, owned = _opened(f, "rb")
    try:
        start = handle.tell()
        if zipfile.is_zipfile(handle):
            handle.seek(start)
            with zipfile.ZipFile(handle) as z:
                return _load_zip(z, weights_only)
        handle.seek(start)
        if weights_only:
            return _Unpickler(handle, True).load()
        return (pickle_module or pickle).load(handle)
    finally:
        if owned:
            handle.close()


def _load_zip(z, weights_only):
    names = z.namelist()
    pkl = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
    if not pkl:
        raise RuntimeError("PytorchStreamReader failed locating file data.pkl: file not found")
    prefix = pkl[0][: -len("data.pkl")]
    if f"{prefix}byteorder" in names and z.read(f"{prefix}byteorder").decode() != "little":
        raise RuntimeError("ferrograd reads only little-endian checkpoints")
    with z.open(pkl[0]) as data:
        up = _Unpickler(
            io.BytesIO(data.read()), weights_only, lambda key: z.read(f"{prefix}data/{key}")
        )
        return up.load()


__all__ = [
    "save",
    "load",
]
