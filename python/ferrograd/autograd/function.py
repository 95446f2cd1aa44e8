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
    "NestedIOFunction",
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


def _flat_tensors(obj):
    """The tensors of a nest of lists, tuples and dicts, in order."""
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _flat_tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _flat_tensors(o)
    elif obj is not None:
        raise ValueError(
            f"Auto nesting doesn't know how to process an input object of type "
            f"{type(obj).__name__}. Accepted types: Tensors, or lists/tuples of them"
        )


def _flat_tensors_or_none(obj):
    if obj is None or isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _flat_tensors_or_none(o)
    else:
        raise ValueError(
            f"Auto nesting doesn't know how to process an input object of type "
            f"{type(obj).__name__}. Accepted types: Tensors or None, or lists/tuples of them"
        )


def _unflatten(flat, proto):
    """`flat` (a sequence) in the nesting of `proto` (tensors are leaves)."""

    def take(flat, proto):
        if not isinstance(proto, (list, tuple)):
            return flat[0], flat[1:]
        out = []
        for e in proto:
            if e is None:
                out.append(None)
            else:
                v, flat = take(flat, e)
                out.append(v)
        return type(proto)(out), flat

    return take(tuple(flat), proto)[0]


def _map_nested(obj, fn):
    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, (list, tuple)):
        mapped = (_map_nested(o, fn) for o in obj)
        return type(obj)(*mapped) if hasattr(obj, "_fields") else type(obj)(mapped)
    if isinstance(obj, dict):
        return {k: _map_nested(v, fn) for k, v in obj.items()}
    return obj


class _NestedCall(Function):
    """The new-style Function that runs one call of a NestedIOFunction: its
    inputs and outputs are the call's tensors, flattened."""

    @staticmethod
    def forward(ctx, fn, *flat):
        aliases = {}

        def data(t):
            d = t.data
            aliases[id(d)] = (d, t)
            return d

        ctx._fn = fn
        result = fn.forward_extended(*_map_nested(fn._nested_input, data))
        del fn._nested_input
        # the nesting only (tensors as True): fn keeps no tensor, so no
        # reference cycle runs through the graph
        fn._nested_output = _map_nested(result, lambda t: True)
        own = lambda ts: tuple(aliases.get(id(t), (None, t))[1] for t in ts)  # noqa: E731
        ctx.save_for_backward(*fn.__dict__.pop("_flat_to_save", ()))
        ctx.mark_dirty(*own(fn.__dict__.pop("_flat_dirty", ())))
        out = tuple(_flat_tensors(result))
        ctx.mark_non_differentiable(*fn.__dict__.pop("_flat_non_differentiable", ()))
        return out

    @staticmethod
    def backward(ctx, *grads):
        fn = ctx._fn
        fn._ctx = ctx
        try:
            result = fn.backward_extended(*_unflatten(grads, fn._nested_output))
        finally:
            del fn._ctx
        return (None, *_flat_tensors_or_none(result))


class NestedIOFunction(Function):
    """torch's legacy Function with nested inputs and outputs: an instance
    is called with tensors inside lists, tuples and dicts;
    ``forward_extended`` gets them (as ``.data``, without history) and may
    return a nest of tensors; ``backward_extended`` gets the gradients in
    the outputs' nesting and returns them in the inputs' (None for no
    gradient). ``save_for_backward``, ``saved_tensors``, ``mark_dirty`` and
    ``mark_non_differentiable`` take and give nests too. (torch 2.13 keeps
    the class for compatibility, but calling an instance there raises
    AttributeError; here it runs, as a new-style Function underneath.)"""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # the graph node is named after the class: `<Name>Backward`
        cls._call = type(cls.__name__, (_NestedCall,), {})

    def __call__(self, *input):
        self._nested_input = input
        flat = type(self)._call.apply(self, *_flat_tensors(input))
        if isinstance(flat, Tensor):
            flat = (flat,)
        return _unflatten(flat, self._nested_output)

    def forward_extended(self, *input):
        """User defined forward."""
        raise NotImplementedError

    def backward_extended(self, *grad_output):
        """User defined backward."""
        raise NotImplementedError

    def save_for_backward(self, *args):
        self._flat_to_save = tuple(_flat_tensors(args))
        self._to_save_nested = _map_nested(args, lambda t: True)

    @property
    def saved_tensors(self):
        return _unflatten(self._ctx.saved_tensors, self._to_save_nested)

    def mark_dirty(self, *args, **kwargs):
        self._flat_dirty = tuple(_flat_tensors((args, kwargs)))

    def mark_non_differentiable(self, *args, **kwargs):
        self._flat_non_differentiable = tuple(_flat_tensors((args, kwargs)))


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
