"""torch.linalg: decompositions, solves, norms and products (from the Rust extension)."""

from . import _C

_L = _C._linalg

LinAlgError = _L.LinAlgError
cholesky = _L.cholesky
cholesky_ex = _L.cholesky_ex
cross = _L.cross
det = _L.det
eigh = _L.eigh
eigvalsh = _L.eigvalsh
inv = _L.inv
inv_ex = _L.inv_ex
qr = _L.qr
slogdet = _L.slogdet
solve = _L.solve
solve_ex = _L.solve_ex
solve_triangular = _L.solve_triangular
svd = _L.svd
svdvals = _L.svdvals
vector_norm = _L.vector_norm

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cross",
    "det",
    "eigh",
    "eigvalsh",
    "inv",
    "inv_ex",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_triangular",
    "svd",
    "svdvals",
    "vector_norm",
]
