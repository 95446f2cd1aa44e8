"""ferrograd.nn: the functional basics (modules and losses come later)."""

from . import functional  # noqa: F401
