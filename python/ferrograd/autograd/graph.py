"""ferrograd.autograd.graph: graph nodes, saved-tensor hooks, graph export.

The hook stack, version checks and the graph walk live in Rust; this module
only wraps them as torch's context managers and helpers.

Saved-tensor hooks: while a ``saved_tensors_hooks(pack_hook, unpack_hook)``
context is active, every tensor saved for backward (by built-in ops and by
``ctx.save_for_backward``) is passed to ``pack_hook`` when it is saved, and
only the returned object (anything) is kept. ``unpack_hook(packed)`` must
return a tensor; it is called whenever backward, ``grad_fn._saved_*`` or
``ctx.saved_tensors`` needs the value. Nested contexts use the innermost
pair; a node keeps the pair it saved with, so the hooks still apply after
the context exits.

Unlike torch, the unpack order is documented and stable: within one node,
saved tensors are unpacked in save order (the order in which the op saved
them, or the order of the ``save_for_backward`` arguments). And version
checks still run with hooks: the version of the original tensor is recorded
at save time, and unpacking after an in-place change raises the usual
"modified by an inplace operation" error.

Built-in ops cannot fail when they record themselves, so an exception
raised by ``pack_hook`` under a built-in op is raised (the same exception
object) when the ``saved_tensors_hooks`` context exits, and again by any
unpack of that saved tensor. Under ``Function.apply`` it is raised by
``apply`` itself. Exceptions raised by ``unpack_hook`` propagate unchanged.
"""

import os
import shutil
import subprocess
import tempfile
from typing import NamedTuple, Optional

from .. import _C
from .._C import Node  # noqa: F401

__all__ = [
    "Node",
    "GradientEdge",
    "get_gradient_edge",
    "increment_version",
    "saved_tensors_hooks",
    "save_on_cpu",
    "disable_saved_tensors_hooks",
    "allow_mutation_on_saved_tensors",
    "register_multi_grad_hook",
    "to_dot",
    "render",
]


class GradientEdge(NamedTuple):
    """An edge of the autograd graph: ``node`` and its input ``output_nr``."""

    node: Node
    output_nr: int
    ownership_token: Optional[Node] = None


def get_gradient_edge(tensor):
    """The edge a gradient for ``tensor`` flows along (its grad_fn, or the
    AccumulateGrad node of a leaf)."""
    node, nr = _C._get_gradient_edge(tensor)
    return GradientEdge(node, nr)


def increment_version(tensor):
    """Bumps the version counter of ``tensor`` (or of each tensor of an
    iterable), as an in-place operation would."""
    if isinstance(tensor, _C.Tensor):
        tensor = (tensor,)
    for t in tensor:
        _C._increment_version(t)


class saved_tensors_hooks:
    """Context manager setting a (pack_hook, unpack_hook) pair for saved
    tensors; see the module docstring."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def _push(self):
        _C._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)

    def __enter__(self):
        _C._take_saved_tensors_pack_error()  # an earlier, unrelated error is dropped
        self._push()
        return self

    def __exit__(self, exc_type, exc, tb):
        _C._pop_saved_tensors_hooks()
        if exc_type is None:
            _C._take_saved_tensors_pack_error()
        else:
            try:
                _C._take_saved_tensors_pack_error()
            except BaseException:
                pass


class save_on_cpu(saved_tensors_hooks):
    """Saves tensors through pack/unpack hooks that keep a copy (on the one
    CPU device) and give the copy back at unpack."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        self.pin_memory = pin_memory
        self.device_type = device_type

    def _push(self):
        _C._push_save_on_cpu_hooks()


class disable_saved_tensors_hooks:
    """Context manager (and decorator) under which setting saved-tensor hooks
    raises ``RuntimeError(error_message)``; entering it while hooks are set
    raises the same error."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self.prev = _C._saved_tensors_hooks_get_disabled_error_message()
        _C._saved_tensors_hooks_disable(self.error_message)
        return self

    def __exit__(self, *args):
        _C._saved_tensors_hooks_disable(self.prev)

    def __call__(self, f):
        import functools

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            with self.__class__(self.error_message):
                return f(*args, **kwargs)

        return wrapper


class allow_mutation_on_saved_tensors:
    """Context manager under which an in-place operation on a tensor saved
    for backward clones the saved value first, so backward stays correct.
    Backward must run inside the context."""

    def __enter__(self):
        _C._enter_allow_mutation_on_saved_tensors()
        return self

    def __exit__(self, *args):
        _C._exit_allow_mutation_on_saved_tensors()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Registers ``fn`` on the gradients of ``tensors``; returns a handle with
    ``remove()``.

    ``mode="all"``: once per backward, after the gradients of every tensor
    this backward computes, ``fn(grads)`` with a tuple of gradients (None
    for the ones not computed). ``mode="any"``: once per backward, with the
    first gradient computed."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    return _C._register_multi_grad_hook(list(tensors), fn, mode)


def to_dot(tensor, params=None, show_saved=False):
    """Graphviz DOT text of the backward graph of ``tensor`` (or of a
    sequence of tensors): one box per node named as ``grad_fn.name()``,
    leaves in blue labelled with their name from ``params`` ({name: tensor})
    and shape, outputs in green, and with ``show_saved`` the saved tensors'
    names and shapes in orange. Edges point from producer to consumer."""
    return _C._to_dot(tensor, params, show_saved)


def render(dot, path, format="svg"):
    """Runs Graphviz's ``dot`` on ``dot`` (DOT text, or a tensor whose graph
    is exported with ``to_dot``) and writes ``path``; returns ``path``."""
    if not isinstance(dot, str):
        dot = to_dot(dot)
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError(
            "render needs Graphviz's `dot` executable, which is not installed "
            "(or not on PATH); install Graphviz, or use to_dot() for the DOT text"
        )
    with tempfile.NamedTemporaryFile("w", suffix=".dot", delete=False) as f:
        f.write(dot)
        src = f.name
    try:
        r = subprocess.run(
            [exe, f"-T{format}", src, "-o", os.fspath(path)], capture_output=True, text=True
        )
    finally:
        os.unlink(src)
    if r.returncode != 0:
        raise RuntimeError(f"dot failed: {r.stderr.strip()}")
    return path
