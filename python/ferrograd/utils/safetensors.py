"""safetensors files (Hugging Face's format), read and written by the Rust
`safetensors` crate. The names are `safetensors.torch`'s: `save`/`load`
for bytes, `save_file`/`load_file` for files. Dtypes ferrograd lacks load
widened (float16/bfloat16 as float32, int8/int16/int32/uint8 as int64)."""

import os

from .._C import _safetensors_load, _safetensors_save

__all__ = ["load", "load_file", "load_metadata", "save", "save_file"]


def save(tensors, metadata=None):
    """The safetensors bytes of a dict of name -> tensor."""
    if not isinstance(tensors, dict):
        raise TypeError(f"Expected a dict of [str, Tensor] but received {type(tensors)}")
    return _safetensors_save(tensors, metadata)


def save_file(tensors, filename, metadata=None):
    """Writes a dict of name -> tensor to `filename`."""
    data = save(tensors, metadata)
    with open(os.fspath(filename), "wb") as f:
        f.write(data)


def load(data):
    """A dict of name -> tensor from safetensors bytes."""
    return _safetensors_load(bytes(data))[0]


def load_file(filename, device="cpu"):
    """A dict of name -> tensor read from `filename` (CPU only)."""
    if str(device) != "cpu":
        raise ValueError(f"ferrograd tensors live on the CPU, not {device!r}")
    with open(os.fspath(filename), "rb") as f:
        return load(f.read())


def load_metadata(filename):
    """The string metadata of a safetensors file (or None)."""
    with open(os.fspath(filename), "rb") as f:
        return _safetensors_load(f.read())[1]
