"""torch.linalg: decompositions, solves, norms and products (from the Rust extension)."""

from . import _C

_L = _C._linalg

LinAlgError = _L.LinAlgError
cholesky = _L.cholesky
cholesky_ex = _L.cholesky_ex
cond = _L.cond
cross = _L.cross
det = _L.det
diagonal = _L.diagonal
eigh = _L.eigh
eigvalsh = _L.eigvalsh
inv = _L.inv
inv_ex = _L.inv_ex
lstsq = _L.lstsq
lu = _L.lu
lu_factor = _L.lu_factor
lu_factor_ex = _L.lu_factor_ex
lu_solve = _L.lu_solve
matmul = _L.matmul
matrix_exp = _L.matrix_exp
matrix_norm = _L.matrix_norm
matrix_power = _L.matrix_power
matrix_rank = _L.matrix_rank
multi_dot = _L.multi_dot
norm = _L.norm
pinv = _L.pinv
qr = _L.qr
slogdet = _L.slogdet
solve = _L.solve
solve_ex = _L.solve_ex
solve_triangular = _L.solve_triangular
svd = _L.svd
svdvals = _L.svdvals
tensorinv = _L.tensorinv
tensorsolve = _L.tensorsolve
vander = _L.vander
vecdot = _L.vecdot
vector_norm = _L.vector_norm

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "inv_ex",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_triangular",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "vander",
    "vecdot",
    "vector_norm",
]
