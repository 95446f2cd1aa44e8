"""torch.amp.autocast for the CPU: ops of torch's lower-precision list
(matmul, mm, bmm, addmm, baddbmm, addbmm, linear, conv, conv_transpose)
compute in the autocast dtype, the losses in float32. The state is thread
local and lives in Rust; the casts happen in the ops (``autograd/autocast.rs``)."""

import functools
import warnings

from .. import _C

__all__ = [
    "autocast",
    "custom_bwd",
    "custom_fwd",
    "get_autocast_dtype",
    "is_autocast_available",
    "is_autocast_enabled",
    "set_autocast_dtype",
    "set_autocast_enabled",
]


def is_autocast_available(device_type):
    """Whether autocast can run on ``device_type`` here: only the CPU."""
    return device_type == "cpu"


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for ``device_type`` (torch's default: CUDA,
    which ferrograd does not have, so False)."""
    return device_type == "cpu" and _C._is_autocast_cpu_enabled()


def set_autocast_enabled(device_type, enabled=None):
    if enabled is None:  # the old one-argument form, for CUDA
        return
    if device_type == "cpu":
        _C._set_autocast_cpu_enabled(bool(enabled))


def get_autocast_dtype(device_type):
    from .. import float16

    return _C._get_autocast_cpu_dtype() if device_type == "cpu" else float16


def set_autocast_dtype(device_type, dtype):
    if device_type == "cpu":
        _C._set_autocast_cpu_dtype(dtype)


class autocast:
    """Context manager and decorator: ``with autocast("cpu"):`` runs the ops
    of torch's CPU autocast lists in ``dtype`` (default bfloat16) or float32.
    ``device_type="cuda"`` warns and does nothing, as torch without CUDA."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        from .. import bfloat16, float16

        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = True if cache_enabled is None else cache_enabled
        if device_type == "cuda":
            if enabled:
                warnings.warn(
                    "User provided device_type of 'cuda', but CUDA is not available. Disabling",
                    stacklevel=2,
                )
            enabled = False
        elif device_type != "cpu":
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{device_type}'"
            )
        elif self.fast_dtype not in (bfloat16, float16):
            if enabled:
                warnings.warn(
                    "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                    "CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.",
                    stacklevel=2,
                )
            enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        if self.device != "cpu":
            return self
        self._prev = (_C._is_autocast_cpu_enabled(), _C._get_autocast_cpu_dtype())
        _C._set_autocast_cpu_enabled(self._enabled)
        if self._enabled:
            _C._set_autocast_cpu_dtype(self.fast_dtype)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if self.device != "cpu":
            return False
        enabled, dtype = self._prev
        _C._set_autocast_cpu_enabled(enabled)
        _C._set_autocast_cpu_dtype(dtype)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


def _cast(value, dtype):
    from .. import Tensor

    if isinstance(value, Tensor):
        ok = value.is_floating_point() and value.dtype.itemsize != 8
        return value.to(dtype) if ok else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for a custom Function's ``forward``: records whether
    autocast was on (for ``custom_bwd``); with ``cast_inputs``, runs forward
    with autocast off and its floating inputs cast to that dtype, as
    torch.amp.custom_fwd."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_on = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if autocast_on:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, cast_inputs), **_cast(kwargs, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for a custom Function's ``backward``: runs it with the
    autocast state its forward ran with (see ``custom_fwd``)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(
            device_type=device_type,
            enabled=getattr(ctx, "_fwd_used_autocast", False),
            dtype=getattr(ctx, "_dtype", None),
        ):
            return bwd(*args, **kwargs)

    return decorate_bwd
