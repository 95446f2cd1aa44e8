"""torch.linalg: cross and vector_norm (from the Rust extension)."""

from . import _C

cross = _C._linalg.cross
vector_norm = _C._linalg.vector_norm

__all__ = ["cross", "vector_norm"]
