"""Helpers shared by the hook tests (test_hooks.py, test_tensor_hooks.py): the
leaf values ``X``/``XA``, ``values`` (a comparable picture of hook arguments)
and ``raises``."""

import numpy as np
import pytest
from helpers import to_numpy

X = [0.5, -1.25, 2.0]
XA = np.array(X)


def values(obj):
    """A comparable picture of hook arguments: tensors become value lists."""
    if obj is None:
        return None
    if isinstance(obj, (tuple, list)):
        return tuple(values(o) for o in obj)
    if hasattr(obj, "detach"):
        return ("T", tuple(np.round(to_numpy(obj).reshape(-1), 12).tolist()))
    return obj


def raises(exc, fn, match=None):
    with pytest.raises(exc, match=match) as info:
        fn()
    return info.value
