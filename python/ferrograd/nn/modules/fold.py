"""Unfold and Fold over `nn.functional.unfold`/`fold` (Rust)."""

from .. import functional as F
from ._op_module import _OpModule


def _window_repr(module):
    return (
        f"kernel_size={module.kernel_size}, dilation={module.dilation}, "
        f"padding={module.padding}, stride={module.stride}"
    )


class Unfold(_OpModule, op=F.unfold):
    _args = ("kernel_size", "dilation", "padding", "stride")

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self._store(locals())

    def extra_repr(self):
        return _window_repr(self)


class Fold(_OpModule, op=F.fold):
    _args = ("output_size", *Unfold._args)

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self._store(locals())

    def extra_repr(self):
        return f"output_size={self.output_size}, {_window_repr(self)}"
