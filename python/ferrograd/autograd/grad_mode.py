"""Grad-mode context managers and decorators (torch.autograd.grad_mode).

The state itself lives in Rust, per thread: a new thread starts with grad
mode enabled and inference mode disabled, whatever the spawning thread does.
The classes mirror torch's: each is a context manager, and also a decorator,
either called (``@no_grad()``) or bare (``@no_grad``, ``@inference_mode``).
Decorated generator functions run each of their steps under the mode.
"""

import functools
import inspect
import sys
import warnings

from .. import _C

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"]


def _wrap_generator(ctx_factory, func):
    """Runs every step of the generator returned by ``func`` under a fresh
    context from ``ctx_factory`` (torch.utils._contextlib._wrap_generator)."""

    @functools.wraps(func)
    def generator_context(*args, **kwargs):
        gen = func(*args, **kwargs)
        try:
            with ctx_factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with ctx_factory():
                        gen.close()
                    raise
                except BaseException:
                    with ctx_factory():
                        response = gen.throw(*sys.exc_info())
                else:
                    with ctx_factory():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value

    return generator_context


def _context_decorator(ctx_factory, func):
    if inspect.isclass(func):
        raise RuntimeError(
            "Cannot decorate classes; it is ambiguous whether or not only the "
            "constructor or all methods should have the context manager applied; "
            "additionally, decorating a class at definition-site will prevent "
            "use of the identifier as a conventional type.  "
            "To specify which methods to decorate, decorate each of them "
            "individually."
        )
    if inspect.isgeneratorfunction(func):
        return _wrap_generator(ctx_factory, func)

    @functools.wraps(func)
    def decorate_context(*args, **kwargs):
        with ctx_factory():
            return func(*args, **kwargs)

    return decorate_context


class _DecoratorContextManager:
    """A context manager that is also usable as a decorator."""

    def __call__(self, orig_func):
        if inspect.isclass(orig_func):
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in "
                "future versions. You should only decorate functions or methods. "
                "To preserve the current behavior of class decoration, you can "
                "directly decorate the `__init__` method and nothing else.",
                FutureWarning,
                stacklevel=2,
            )

            def func(*args, **kwargs):
                return orig_func(*args, **kwargs)

        else:
            func = orig_func
        return _context_decorator(self.clone, func)

    def __enter__(self):
        raise NotImplementedError

    def __exit__(self, exc_type, exc_value, traceback):
        raise NotImplementedError

    def clone(self):
        # Subclasses whose __init__ takes parameters override this.
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also usable as a bare decorator: ``@no_grad`` as well as ``@no_grad()``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Context manager (and decorator) that disables gradient recording.

    Results computed inside have ``requires_grad=False`` even when their
    inputs require grad. Factory functions called with ``requires_grad=True``
    still make leaves that require grad. Thread local.
    """

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, exc_type, exc_value, traceback):
        _C._set_grad_enabled(self.prev)


class enable_grad(_NoParamDecoratorContextManager):
    """Context manager (and decorator) that enables gradient recording, e.g.
    inside a ``no_grad`` block. Thread local."""

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, exc_type, exc_value, traceback):
        _C._set_grad_enabled(self.prev)


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode to ``mode``.

    Works as a plain function call (the mode stays set), as a context manager
    (the previous mode comes back on exit) and as a decorator (the mode is
    set only while the decorated function runs). Thread local.
    """

    def __init__(self, mode):
        self.prev = _C.is_grad_enabled()
        self.mode = mode
        _C._set_grad_enabled(mode)

    def __call__(self, orig_func):
        # Used as a decorator: constructing us set the mode; undo that.
        _C._set_grad_enabled(self.prev)
        return super().__call__(orig_func)

    def __enter__(self):
        _C._set_grad_enabled(self.mode)

    def __exit__(self, exc_type, exc_value, traceback):
        _C._set_grad_enabled(self.prev)

    def __str__(self):
        return f"ferrograd.autograd.grad_mode.set_grad_enabled(mode={self.mode})"

    def __repr__(self):
        return str(self)

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Context manager (and decorator) for inference: ``inference_mode(True)``
    disables grad mode and turns inference mode on; ``inference_mode(False)``
    enables grad mode and turns inference mode off, as torch's does.

    Usable as ``@inference_mode``, ``@inference_mode()`` and
    ``@inference_mode(False)``. Thread local. Tensors made inside are
    inference tensors (``Tensor.is_inference()``), with torch's rules
    outside the block: no in-place writes, no saving for backward, no
    ``requires_grad=True``, no ``_version``; ``clone()`` gives a normal one.
    """

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode=True):
        self.mode = mode

    def __enter__(self):
        self._prev = (_C.is_grad_enabled(), _C.is_inference_mode_enabled())
        _C._set_grad_enabled(not self.mode)
        _C._set_inference_mode(self.mode)

    def __exit__(self, exc_type, exc_value, traceback):
        grad, inference = self._prev
        _C._set_grad_enabled(grad)
        _C._set_inference_mode(inference)

    def clone(self):
        return self.__class__(self.mode)
