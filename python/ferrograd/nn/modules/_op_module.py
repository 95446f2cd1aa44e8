"""_OpModule: the base of the modules whose forward is one `nn.functional` op
(pooling, fold, upsampling, embedding)."""

from .module import Module


class _OpModule(Module):
    """A module whose forward is ``_op(input, *attributes)``, the attributes
    named in ``_args`` in that order. A subclass names its op in its class
    statement (``class MaxPool2d(_MaxPoolNd, op=F.max_pool2d): ...``)."""

    _op = None
    _args = ()

    def __init_subclass__(cls, op=None, **kwargs):
        super().__init_subclass__(**kwargs)
        if op is not None:
            cls._op = staticmethod(op)

    def _store(self, args):
        """Sets the attributes named in ``_args`` from ``args``, the
        ``locals()`` of ``__init__`` (names it does not hold are left alone)."""
        for name in self._args:
            if name in args:
                setattr(self, name, args[name])

    def forward(self, input):
        return self._op(input, *[getattr(self, name) for name in self._args])
