"""torch.autograd.Function: custom differentiable operations.

``MyFn.apply`` and the ctx object are implemented in Rust
(``_C._FunctionBase``); the ctx of a call is the graph node of its outputs,
an instance of the per-class ``MyFnBackward`` type made by the metaclass
below (so ``y.grad_fn is ctx``).
"""

import functools
import warnings

from .. import _C
from .._C import Tensor
from .grad_mode import no_grad

__all__ = [
    "BackwardCFunction",
    "Function",
    "FunctionCtx",
    "FunctionMeta",
    "InplaceFunction",
    "Variable",
    "once_differentiable",
]

# ctx methods (save_for_backward, saved_tensors, needs_input_grad, mark_dirty,
# mark_non_differentiable, set_materialize_grads) live on the Rust base.
FunctionCtx = _C._FunctionBase


class BackwardCFunction(_C._FunctionBase):
    """Base of the ``MyFnBackward`` node types: instances are the ctx objects."""

    def __del__(self):
        # While Python holds a ctx, the ctx owns its graph node; when the
        # last reference goes, a node that is still in use owns it again
        # (see src/python/autograd/function.rs). No reference cycle either way.
        self._release_node()

    def apply(self, *args):
        """Calls the user's backward (or vjp) with this ctx."""
        return self._get_user_fn()(self, *args)

    def apply_jvp(self, *args):
        return self._forward_cls.jvp(self, *args)

    def mark_shared_storage(self, *pairs):
        warnings.warn(
            "`mark_shared_storage` is deprecated. Tensors with shared storages are "
            "automatically tracked. Note that calls to `set_()` are not tracked",
            FutureWarning,
            stacklevel=2,
        )

    @property
    def metadata(self):
        d = self.__dict__.get("_metadata")
        if d is None:
            d = self.__dict__["_metadata"] = {}
        return d


class FunctionMeta(type):
    """Gives each Function class its node type, ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        super().__init__(name, bases, attrs)


class _SingleLevelFunction(_C._FunctionBase, metaclass=FunctionMeta):
    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for "
            "your custom autograd.Function to use it with backward "
            "mode AD."
        )

    # vjp and backward are aliases of each other
    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with forward mode AD."
        )


class Function(_SingleLevelFunction):
    """Base class for custom differentiable operations (torch.autograd.Function).

    Subclasses define ``forward`` and ``backward`` staticmethods and are called
    through ``MyFn.apply(*args)``.

    Differences from torch: a graph is freed as soon as nothing refers to it,
    without the garbage collector, whatever forward stores on ctx. Tensors
    stored as plain ctx attributes (``ctx.out = out``, also inside lists,
    tuples and dicts) that are outputs of the Function (or views of them)
    read as stand-ins outside backward (the same memory and version counter,
    without history) and as the tensors themselves during backward (double
    backward works through them). Attributes holding tensors (or lists and
    tuples of them) are dropped when backward frees the saved tensors (a
    backward without ``retain_graph``), as saved tensors are.
    """

    def __init__(self, *args, **kwargs):
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions "
            "are all static, so you should invoke them on the class itself. "
            "Instantiating an autograd function will raise an "
            "error in a future version of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. "
            "Please use new-style autograd function with static forward method. "
            "(Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError(
            "To use autograd.Function with vmap, you must either override the "
            "vmap staticmethod or set generate_vmap_rule=True."
        )


def once_differentiable(fn):
    """Marks a backward as not differentiable: it runs without recording a
    graph, and differentiating through its result raises."""

    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        with no_grad():
            outputs = fn(ctx, *args, **kwargs)

        if not _C.is_grad_enabled():
            return outputs
        # Like torch: only an approximation of whether the result would have
        # required grad.
        if not any(isinstance(arg, Tensor) and arg.requires_grad for arg in args):
            return outputs
        single = not isinstance(outputs, tuple)
        wrapped = _C._delayed_error(
            "trying to differentiate twice a function that was marked with @once_differentiable",
            *((outputs,) if single else outputs),
        )
        return wrapped[0] if single else wrapped

    return wrapper


class InplaceFunction(Function):
    """A Function that may work in place (``self.inplace``)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=VariableMeta):
    """Deprecated torch.autograd.Variable: ``Variable(t)`` returns a Tensor
    (a detached alias of ``t``) with the given ``requires_grad``."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if data is None:
            data = _C.zeros(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        out.requires_grad_(requires_grad)
        return out
