"""``ferrograd.Size``: the type of ``tensor.shape`` and ``tensor.size()``.

A tuple of ints, like ``torch.Size``: slicing and concatenation give Sizes,
``numel()`` is the product of the dims, and it prints as
``ferrograd.Size([2, 3])``.
"""

import operator

_tuple_new = tuple.__new__


class Size(tuple):
    """The shape of a tensor: a tuple of ints."""

    __slots__ = ()
    __module__ = "ferrograd"

    def __new__(cls, sizes=()):
        items = []
        for i, v in enumerate(sizes):
            if isinstance(v, (float, str, bytes)) or v is None:
                raise TypeError(
                    f"ferrograd.Size() takes an iterable of 'int' (item {i} is "
                    f"'{type(v).__name__}')"
                )
            try:
                items.append(operator.index(v))
            except TypeError:
                if hasattr(v, "item") and hasattr(v, "numel") and v.numel() == 1:
                    value = v.item()
                    if isinstance(value, int) and not isinstance(value, bool):
                        items.append(value)
                        continue
                raise TypeError(
                    f"ferrograd.Size() takes an iterable of 'int' (item {i} is "
                    f"'{type(v).__name__}')"
                ) from None
        return _tuple_new(cls, items)

    def __repr__(self):
        return f"ferrograd.Size({list(self)})"

    __str__ = __repr__

    def numel(self):
        """The number of elements of a tensor of this shape."""
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, key):
        r = tuple.__getitem__(self, key)
        return _tuple_new(Size, r) if isinstance(key, slice) else r

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return _tuple_new(Size, tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return _tuple_new(Size, tuple.__add__(other, self))

    def __mul__(self, n):
        r = tuple.__mul__(self, n)
        return NotImplemented if r is NotImplemented else _tuple_new(Size, r)

    __rmul__ = __mul__

    def __reduce__(self):
        return (Size, (tuple(self),))
