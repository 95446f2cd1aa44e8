"""ferrograd.nn: Parameter, Module and the common layers, losses and
initialisers, and nn.functional. Modules are bookkeeping; every
computation is a Rust op."""

from . import functional, init, parallel, utils  # noqa: F401
from .modules import *  # noqa: F401, F403
from .modules import __all__ as _modules_all
from .parameter import Parameter

__all__ = ["Parameter", "functional", "init", "parallel", "utils"] + _modules_all
