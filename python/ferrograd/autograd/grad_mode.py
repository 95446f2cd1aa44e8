"""Grad-mode context managers and decorators (state lives in Rust, per thread)."""

import functools

from .. import _C

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"]


class _DecoratorContextManager:
    """A context manager that is also usable as a (factory-called) decorator."""

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"{type(self).__name__} decorator expects a callable")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Disables gradient recording inside its block (torch.no_grad)."""

    def __init__(self, orig_func=None):
        # Supports the bare ``@no_grad`` form as torch does.
        self._orig = orig_func

    def __new__(cls, orig_func=None):
        if orig_func is None or not callable(orig_func):
            return super().__new__(cls)
        return cls()(orig_func)

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class enable_grad(_DecoratorContextManager):
    """Enables gradient recording inside its block (torch.enable_grad)."""

    def __new__(cls, orig_func=None):
        if orig_func is None or not callable(orig_func):
            return super().__new__(cls)
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        pass

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode on construction; restores it on exit (torch semantics)."""

    def __init__(self, mode):
        self._prev = _C.is_grad_enabled()
        self._mode = bool(mode)
        _C._set_grad_enabled(self._mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def clone(self):
        return self.__class__(self._mode)


class inference_mode(_DecoratorContextManager):
    """Like no_grad, and marks the block as inference mode (torch.inference_mode)."""

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, type(True)):
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        self._mode = mode if isinstance(mode, type(True)) else True

    def __enter__(self):
        self._prev_grad = _C.is_grad_enabled()
        self._prev_inf = _C.is_inference_mode_enabled()
        if self._mode:
            _C._set_grad_enabled(False)
            _C._set_inference_mode(True)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev_grad)
        _C._set_inference_mode(self._prev_inf)
        return False

    def clone(self):
        return self.__class__(self._mode)
