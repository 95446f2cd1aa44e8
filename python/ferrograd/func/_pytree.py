"""Minimal pytrees for the function transforms: tuples, lists, dicts and
namedtuples are nodes, anything else (tensors, numbers, None) is a leaf.
Argument plumbing only; no tensor math here."""

from collections import OrderedDict

__all__ = ["tree_flatten", "tree_leaves", "tree_map", "tree_unflatten"]


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


class TreeSpec:
    """How to rebuild a pytree from its leaves: ``kind`` is ``None`` for a
    leaf, else the node type, its keys (dicts) and the children's specs."""

    __slots__ = ("children", "keys", "kind", "num_leaves")

    def __init__(self, kind, keys, children):
        self.kind = kind
        self.keys = keys
        self.children = children
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in children)

    def __eq__(self, other):
        return (
            isinstance(other, TreeSpec)
            and self.kind == other.kind
            and self.keys == other.keys
            and self.children == other.children
        )

    def __repr__(self):
        if self.kind is None:
            return "*"
        return f"TreeSpec({self.kind.__name__}, {self.keys}, {self.children})"


_LEAF = TreeSpec(None, None, ())


def tree_flatten(tree):
    """``(leaves, spec)`` of ``tree``, leaves in depth-first order (dicts in
    insertion order)."""
    leaves = []
    spec = _flatten(tree, leaves)
    return leaves, spec


def _flatten(tree, leaves):
    if isinstance(tree, (list, tuple)):
        kids = [_flatten(t, leaves) for t in tree]
        kind = type(tree) if _is_namedtuple(tree) else (list if isinstance(tree, list) else tuple)
        return TreeSpec(kind, None, kids)
    if isinstance(tree, dict):
        keys = list(tree.keys())
        kids = [_flatten(tree[k], leaves) for k in keys]
        kind = OrderedDict if isinstance(tree, OrderedDict) else dict
        return TreeSpec(kind, keys, kids)
    leaves.append(tree)
    return _LEAF


def tree_unflatten(leaves, spec):
    """Inverse of :func:`tree_flatten`."""
    it = iter(leaves)
    out = _unflatten(it, spec)
    return out


def _unflatten(it, spec):
    if spec.kind is None:
        return next(it)
    kids = [_unflatten(it, c) for c in spec.children]
    if spec.keys is not None:
        return spec.kind(zip(spec.keys, kids))
    if _is_namedtuple_type(spec.kind):
        return spec.kind(*kids)
    return spec.kind(kids)


def _is_namedtuple_type(t):
    return issubclass(t, tuple) and hasattr(t, "_fields")


def tree_leaves(tree):
    return tree_flatten(tree)[0]


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix, tree, what="in_dims"):
    """Leaves of ``prefix`` repeated over the leaves of ``tree`` where
    ``prefix`` is a leaf above a subtree (``in_dims=0`` for a tuple argument).
    Raises ValueError when the structures differ."""
    out = []
    _broadcast(prefix, tree, out, what)
    return out


def _broadcast(prefix, tree, out, what):
    if not isinstance(prefix, (list, tuple, dict)):
        out.extend([prefix] * len(tree_leaves(tree)))
        return
    if isinstance(prefix, dict):
        if not isinstance(tree, dict) or set(prefix) != set(tree):
            raise ValueError(f"{what}: structure {prefix!r} does not match the input {tree!r}")
        for k in tree:
            _broadcast(prefix[k], tree[k], out, what)
        return
    if not isinstance(tree, (list, tuple)) or len(prefix) != len(tree):
        raise ValueError(f"{what}: structure {prefix!r} does not match the input structure")
    for p, t in zip(prefix, tree):
        _broadcast(p, t, out, what)
