"""torch.utils.dlpack: tensors shared with other libraries through DLPack
(NumPy, torch, JAX, CuPy on the CPU, ...) without copying.

The capsule handling, and the memory sharing, is in Rust (`_C._from_dlpack`,
`Tensor.__dlpack__`); this module negotiates the protocol as torch's
`from_dlpack` does (DLPack 1.0 first, then the older keyword sets)."""

from .._C import _from_dlpack

_KDL_CPU = 1

__all__ = ["from_dlpack", "to_dlpack"]


def to_dlpack(tensor):
    """A DLPack capsule (legacy "dltensor") sharing `tensor`'s memory."""
    return tensor.__dlpack__()


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing the memory of `ext_tensor`: an object with
    `__dlpack__` (NumPy array, torch tensor, ...) or a DLPack capsule.
    `copy=True` asks for a copy, `copy=False` forbids one."""
    if not hasattr(ext_tensor, "__dlpack__"):
        if device is not None or copy is not None:
            raise AssertionError(
                "device and copy kwargs not supported when ext_tensor is already a DLPack capsule."
            )
        return _from_dlpack(ext_tensor)
    if device is not None and str(device) != "cpu":
        raise ValueError(f"from_dlpack: ferrograd tensors live on the CPU, not {device!r}")
    ext_device = tuple(int(x) for x in ext_tensor.__dlpack_device__())
    if ext_device[0] != _KDL_CPU:
        raise BufferError(
            f"from_dlpack: ferrograd tensors live on the CPU; got DLPack device {ext_device}"
        )
    kwargs = {"max_version": (1, 0)}
    if copy is not None:
        kwargs["copy"] = copy
    if device is not None:
        kwargs["dl_device"] = (_KDL_CPU, 0)
    producer_copied = True
    capsule = None
    # Older producers lack the newer keywords: drop them one by one.
    for drop in (None, "max_version", "copy", "dl_device"):
        if drop is not None:
            if drop == "copy" and "copy" in kwargs:
                producer_copied = False
            kwargs.pop(drop, None)
        try:
            capsule = ext_tensor.__dlpack__(**kwargs)
            break
        except TypeError:
            if drop == "dl_device":
                raise
    tensor = _from_dlpack(capsule)
    if copy is True and not producer_copied:
        tensor = tensor.clone()
    return tensor
