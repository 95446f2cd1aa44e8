"""Registry entries (see op_registry.py) for torch.linalg and its top-level
relatives. ``add_entries(op, S)`` is called by op_registry.py.

Inputs are made well-conditioned inside each function (a shifted diagonal,
``x x^T + I`` for positive-definite ones, ``x + x^T`` for symmetric ones),
so finite differences are accurate. Decompositions whose factors are defined
up to signs (qr, svd, eigh) return the factors' absolute values, which are
sign-free (the registry compares them with torch's LAPACK results).
"""

from __future__ import annotations

from op_registry import NC, A, Arg, Const


def _eye(lib, x):
    return lib.eye(x.shape[-1], dtype=x.dtype)


def wc(lib, x):
    """x + 3 I: well-conditioned."""
    return x + 3 * _eye(lib, x)


def spd(lib, x):
    """x x^T + I: symmetric positive-definite."""
    return x @ x.mT + _eye(lib, x)


def sym(lib, x):
    return x + x.mT


def add_entries(op, S):  # noqa: PLR0915 - one flat list of entries
    la = "linalg."
    op(
        "linalg.solve",
        lambda lib, a, b, **kw: lib.linalg.solve(wc(lib, a), b, **kw),
        [
            S(A(3, 3), A(3, 2)),
            S(A(2, 3, 3), A(2, 3)),  # batched vector right-hand side
            S(A(3, 3), A(2, 3, 4)),  # broadcast batch
            S(A(3, 3), A(2, 3), left=False),
            S(NC(3, 3), A(3, 2)),
        ],
        needs=(la + "solve",),
    )
    op(
        "linalg.solve_ex",
        lambda lib, a, b: lib.linalg.solve_ex(wc(lib, a), b).result,
        [
            S(A(3, 3), A(3, 2)),
            S(
                A(2, 3, 3),
                A(
                    3,
                ),
            ),
        ],
        needs=(la + "solve_ex",),
    )
    op(
        "linalg.inv",
        lambda lib, a: lib.linalg.inv(wc(lib, a)),
        [S(A(3, 3)), S(A(2, 3, 3)), S(NC(3, 3))],
        needs=(la + "inv",),
        api=("inverse", "Tensor.inverse"),
    )
    op(
        "linalg.inv_ex",
        lambda lib, a: lib.linalg.inv_ex(wc(lib, a)).inverse,
        [S(A(3, 3)), S(A(2, 2, 2))],
        needs=(la + "inv_ex",),
    )
    op(
        "linalg.det",
        lambda lib, a: lib.linalg.det(a),
        [S(A(3, 3)), S(A(2, 4, 4)), S(A(1, 1)), S(NC(3, 3))],
        needs=(la + "det",),
        api=("det", "Tensor.det"),
    )
    op(
        "linalg.det_singular",
        # a zero column: det exactly 0, the gradient through the SVD
        lambda lib, a, m: lib.linalg.det(a * m),
        [
            S(A(3, 3), Const([1.0, 1.0, 0.0], "float64")),
            S(A(2, 3, 3), Const([0.0, 1.0, 1.0], "float64")),
        ],
        needs=(la + "det",),
    )
    op(
        "linalg.slogdet",
        lambda lib, a: tuple(lib.linalg.slogdet(a)),
        [S(A(3, 3)), S(A(2, 3, 3))],
        needs=(la + "slogdet",),
        api=("slogdet", "Tensor.slogdet"),
    )
    op(
        "logdet",
        lambda lib, a: lib.logdet(spd(lib, a)),
        [S(A(3, 3)), S(A(2, 3, 3))],
        api=("Tensor.logdet",),
    )
    op(
        "linalg.cholesky",
        lambda lib, a, **kw: lib.linalg.cholesky(spd(lib, a), **kw),
        [S(A(3, 3)), S(A(2, 3, 3)), S(A(3, 3), upper=True)],
        needs=(la + "cholesky",),
        api=("cholesky", "Tensor.cholesky"),
    )
    op(
        "linalg.cholesky_ex",
        lambda lib, a: lib.linalg.cholesky_ex(spd(lib, a)).L,
        [S(A(3, 3))],
        needs=(la + "cholesky_ex",),
    )
    op(
        "linalg.solve_triangular",
        lambda lib, a, b, **kw: lib.linalg.solve_triangular(wc(lib, a), b, **kw),
        [
            S(A(3, 3), A(3, 2), upper=True),
            S(A(3, 3), A(2, 3), upper=False, left=False),
            S(A(3, 3), A(3, 2), upper=False, unitriangular=True),
            S(A(2, 3, 3), A(3, 4), upper=True),
            S(NC(3, 3), A(3, 1), upper=False),
        ],
        needs=(la + "solve_triangular",),
    )
    op(
        "linalg.qr",
        lambda lib, a, **kw: tuple(t.abs() for t in lib.linalg.qr(a, **kw)),
        [
            S(A(4, 3)),
            S(A(3, 3)),
            S(A(3, 5)),
            S(A(2, 4, 3)),
            S(A(3, 3), mode="complete"),
            S(A(2, 4), mode="complete"),
        ],
        needs=(la + "qr",),
    )
    op(
        "linalg.svd",
        lambda lib, a: tuple(t.abs() for t in lib.linalg.svd(a, full_matrices=False)),
        [S(A(4, 3)), S(A(3, 4)), S(A(2, 3, 3)), S(NC(3, 3))],
        needs=(la + "svd",),
    )
    op(
        "linalg.svd_full",
        lambda lib, a: (lambda u, s, vh: (u[..., :3].abs(), s, vh[..., :3, :].abs()))(
            *lib.linalg.svd(a)
        ),
        [S(A(4, 3)), S(A(3, 5))],
        needs=(la + "svd",),
    )
    op(
        "linalg.svdvals",
        lambda lib, a: lib.linalg.svdvals(a),
        [S(A(4, 3)), S(A(2, 3, 5))],
        needs=(la + "svdvals",),
    )
    op(
        "svd",
        lambda lib, a, **kw: tuple(t.abs() for t in lib.svd(a, **kw)),
        [S(A(4, 3)), S(A(3, 3), some=False)],
        api=("Tensor.svd",),
    )
    op(
        "qr",
        lambda lib, a: tuple(t.abs() for t in lib.qr(a)),
        [S(A(4, 3))],
        api=("Tensor.qr",),
    )
    op(
        "linalg.eigh",
        lambda lib, a, **kw: (lambda w, v: (w, v.abs()))(*lib.linalg.eigh(sym(lib, a), **kw)),
        [S(A(3, 3)), S(A(2, 4, 4)), S(A(3, 3), UPLO="U")],
        needs=(la + "eigh",),
    )
    op(
        "linalg.eigvalsh",
        lambda lib, a: lib.linalg.eigvalsh(sym(lib, a)),
        [S(A(3, 3)), S(A(2, 4, 4))],
        needs=(la + "eigvalsh",),
    )
    op(
        "linalg.pinv",
        lambda lib, a, **kw: lib.linalg.pinv(a, **kw),
        [S(A(4, 3)), S(A(3, 4)), S(A(2, 3, 3))],
        needs=(la + "pinv",),
        api=("pinverse", "Tensor.pinverse"),
    )
    op(
        "linalg.pinv_hermitian",
        lambda lib, a: lib.linalg.pinv(spd(lib, a), hermitian=True),
        [S(A(3, 3))],
        needs=(la + "pinv",),
    )
    op(
        "linalg.lstsq",
        lambda lib, a, b, **kw: lib.linalg.lstsq(a, b, **kw).solution,
        [
            S(A(5, 3), A(5, 2)),
            S(A(3, 5), A(3, 2)),
            S(A(2, 4, 3), A(2, 4, 1)),
            S(A(2, 4, 3), A(2, 4)),
        ],
        needs=(la + "lstsq",),
    )
    op(
        "linalg.lstsq_gelsd",
        lambda lib, a, b: tuple(lib.linalg.lstsq(a, b, driver="gelsd"))[:2],
        [S(A(5, 3), A(5, 2))],
        needs=(la + "lstsq",),
    )
    op(
        "linalg.matrix_power",
        lambda lib, a, n: lib.linalg.matrix_power(wc(lib, a), n),
        [S(A(3, 3), 3), S(A(2, 3, 3), -2), S(A(3, 3), 0), S(A(3, 3), 1)],
        needs=(la + "matrix_power",),
        api=("matrix_power", "Tensor.matrix_power"),
    )
    op(
        "linalg.matrix_exp",
        lambda lib, a, scale=1.0: lib.linalg.matrix_exp(a * scale),
        [S(A(3, 3)), S(A(2, 3, 3)), S(A(3, 3), 4.0)],
        needs=(la + "matrix_exp",),
        api=("matrix_exp", "Tensor.matrix_exp"),
    )
    op(
        "linalg.matrix_norm",
        lambda lib, a, **kw: lib.linalg.matrix_norm(a, **kw),
        [
            S(A(3, 4)),
            S(A(2, 3, 4), ord="nuc"),
            S(A(3, 4), ord=2),
            S(A(3, 4), ord=-2),
            S(Arg((3, 4), "away"), ord=1, keepdim=True),
            S(Arg((3, 4), "away"), ord=-1),
            S(Arg((2, 3, 4), "away"), ord=float("inf"), dim=(0, 2)),
            S(Arg((3, 4), "away"), ord=float("-inf")),
        ],
        needs=(la + "matrix_norm",),
    )
    op(
        "linalg.norm",
        lambda lib, a, *args, **kw: lib.linalg.norm(a, *args, **kw),
        [
            S(A(3, 4)),
            S(A(3, 4), "nuc"),
            S(A(2, 3, 4), dim=(1, 2)),
            S(Arg((5,), "away"), 3),
            S(A(3, 4), 2, (0,)),
            S(A(2, 3, 4), keepdim=True),
        ],
        needs=(la + "norm",),
    )
    op(
        "linalg.cond",
        lambda lib, a, *args: lib.linalg.cond(wc(lib, a), *args),
        [S(A(3, 3)), S(A(2, 3, 3), -2)],
        needs=(la + "cond",),
    )
    op(
        "linalg.multi_dot",
        lambda lib, *ts: lib.linalg.multi_dot(list(ts)),
        [S(A(2, 3), A(3, 4), A(4, 2)), S(A(3), A(3, 4), A(4))],
        needs=(la + "multi_dot",),
    )
    op(
        "linalg.vecdot",
        lambda lib, x, y, **kw: lib.linalg.vecdot(x, y, **kw),
        [S(A(3, 4), A(3, 4)), S(A(2, 3), A(3), dim=-1), S(A(3, 4), A(3, 4), dim=0)],
        needs=(la + "vecdot",),
    )
    op(
        "linalg.vander",
        lambda lib, x, **kw: lib.linalg.vander(x, **kw),
        [S(A(4)), S(A(2, 3), N=4)],
        needs=(la + "vander",),
    )
    op(
        "linalg.tensorinv",
        lambda lib, a: lib.linalg.tensorinv(wc(lib, a.reshape(4, 4)).reshape(4, 2, 2), ind=1),
        [S(A(4, 2, 2))],
        needs=(la + "tensorinv",),
    )
    op(
        "linalg.tensorsolve",
        lambda lib, a, b: lib.linalg.tensorsolve(wc(lib, a.reshape(6, 6)).reshape(2, 3, 6), b),
        [S(A(2, 3, 6), A(2, 3))],
        needs=(la + "tensorsolve",),
    )
    op(
        "linalg.diagonal",
        lambda lib, a, **kw: lib.linalg.diagonal(a, **kw),
        [S(A(3, 4)), S(A(2, 3, 4), offset=1)],
        needs=(la + "diagonal",),
    )
    op(
        "linalg.matmul",
        lambda lib, a, b: lib.linalg.matmul(a, b),
        [S(A(2, 3), A(3, 4)), S(A(2, 2, 3), A(3))],
        needs=(la + "matmul",),
    )
    op(
        "cholesky_solve",
        lambda lib, b, a, **kw: lib.cholesky_solve(
            b, lib.linalg.cholesky(spd(lib, a), upper=kw.get("upper", False)), **kw
        ),
        [S(A(3, 2), A(3, 3)), S(A(2, 3, 1), A(3, 3), upper=True)],
        api=("Tensor.cholesky_solve",),
    )
    op(
        "cholesky_inverse",
        lambda lib, a, **kw: lib.cholesky_inverse(
            lib.linalg.cholesky(spd(lib, a), upper=kw.get("upper", False)), **kw
        ),
        [S(A(3, 3)), S(A(3, 3), upper=True)],
        api=("Tensor.cholesky_inverse",),
        no_torch_forward_ad="torch 2.13's tangent here disagrees with its own backward; "
        "ferrograd's passes the forward-mode gradcheck against finite differences",
    )
    op(
        "triangular_solve",
        lambda lib, b, a, **kw: lib.triangular_solve(b, wc(lib, a), **kw).solution,
        [S(A(3, 2), A(3, 3)), S(A(3, 2), A(3, 3), upper=False, transpose=True)],
        api=("Tensor.triangular_solve",),
        no_torch_forward_ad="torch's forward AD reads all of A, its forward and backward "
        "only A's triangle; ferrograd's tangent passes the forward-mode gradcheck",
    )
    op(
        "linalg.lu",
        lambda lib, a: tuple(lib.linalg.lu(a))[1:],
        [S(A(3, 3)), S(A(2, 4, 4)), S(A(3, 5)), S(A(5, 3))],
        needs=(la + "lu",),
    )
    op(
        "linalg.lu_factor",
        lambda lib, a: lib.linalg.lu_factor(a).LU,
        [S(A(3, 3)), S(A(2, 3, 3)), S(A(4, 2)), S(A(2, 4))],
        needs=(la + "lu_factor",),
    )
    op(
        "linalg.lu_solve",
        lambda lib, a, b, **kw: lib.linalg.lu_solve(*lib.linalg.lu_factor(wc(lib, a)), b, **kw),
        [
            S(A(3, 3), A(3, 2)),
            S(A(3, 3), A(3, 2), adjoint=True),
            S(A(3, 3), A(2, 3), left=False),
            S(A(2, 3, 3), A(2, 3), left=False, adjoint=True),
        ],
        needs=(la + "lu_solve", la + "lu_factor"),
    )
    op(
        "lu_unpack",
        lambda lib, a: tuple(lib.lu_unpack(*lib.linalg.lu_factor(a)))[1:],
        [S(A(3, 3)), S(A(4, 3))],
    )
