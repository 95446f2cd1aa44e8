"""Forward-mode AD (``torch.autograd.forward_ad``).

Tangents live on tensors in the Rust core; each op's tangent is derived there
from the op's stated derivative. This module only names the entry points.
Unlike torch, levels may be nested: an op propagates the tangents of every
open level (torch raises "Nested forward mode AD is not supported").
"""

from typing import NamedTuple, Optional

from .. import _C
from ..autograd.grad_mode import _DecoratorContextManager

__all__ = [
    "UnpackedDualTensor",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
    "dual_level",
]

_current_level = -1


def enter_dual_level():
    """Opens a new forward AD level; returns its index (0 for the outermost)."""
    global _current_level
    _current_level = _C._enter_dual_level()
    return _current_level


def exit_dual_level(*, level=None):
    """Closes the innermost level (``level`` must be it, when given): every
    tangent at that level is dropped."""
    global _current_level
    if level is None:
        level = _current_level
    _C._exit_dual_level(None if level < 0 else level)
    _current_level = level - 1


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` whose tangent at ``level`` is ``tangent``.
    Inside vmap either may be batched: both are batched over every active
    level and the dual is made of their physical tensors (the ops then
    carry the tangents of all samples at once)."""
    if _C._vmap_is_batched(tensor) or _C._vmap_is_batched(tangent):
        p, t = _C._vmap_expand(tensor), _C._vmap_expand(tangent)
        # an expanded primal (one not batched before) gets its own memory:
        # the tangent is laid out as the primal is
        primal = _C._vmap_physical(p).contiguous()
        dual = _C._make_dual(primal, _C._vmap_physical(t), level)
        return _C._vmap_like(dual, p)
    return _C._make_dual(tensor, tangent, level)


class UnpackedDualTensor(NamedTuple):
    """Namedtuple of the primal and the tangent of a dual tensor."""

    primal: "object"
    tangent: Optional["object"]


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of ``tensor`` at ``level``; tangent is None when
    it has none."""
    if _C._vmap_is_batched(tensor):
        primal, tangent = _C._unpack_dual(_C._vmap_physical(tensor), level)
        return UnpackedDualTensor(
            _C._vmap_like(primal, tensor),
            None if tangent is None else _C._vmap_like(tangent, tensor),
        )
    primal, tangent = _C._unpack_dual(tensor, level)
    return UnpackedDualTensor(primal, tangent)


class dual_level(_DecoratorContextManager):
    """Context manager for a forward AD level: tangents set inside it are
    dropped on exit.

    Example::

        with dual_level():
            x = make_dual(x_p, x_t)
            jvp = unpack_dual(f(x)).tangent
    """

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()
