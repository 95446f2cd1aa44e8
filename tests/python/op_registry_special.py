"""Registry entries (see op_registry.py) for torch.special's differentiable
functions that the unary table (lgamma, digamma, i0: op_registry's table
entries) does not cover. ``add_entries(op, S)`` is called by op_registry.py.
The Bessel functions J/Y/K and the orthogonal polynomials have no derivative
in torch; test_special.py compares their values."""

from __future__ import annotations

from op_registry import A, Arg, Const, P


def _half_open(x):
    """(-0.9, 0.9) -> (0.05, 0.95)."""
    return x * 0.5 + 0.5


def add_entries(op, S):
    sp = "special."

    def unary(name, domain="normal", fn=None):
        f = fn or (lambda lib, x, _n=name: getattr(lib.special, _n)(x))
        op(
            sp + name,
            f,
            [S(Arg((3, 4), domain)), S(Arg((), domain)), S(Arg((2, 3), domain, noncontig=True))],
            needs=(sp + name,),
        )

    unary("erfcx")
    unary("ndtr")
    unary("ndtri", "unit", lambda lib, x: lib.special.ndtri(_half_open(x)))
    unary("log_ndtr")
    unary("entr", "pos")
    unary("i0e", "away")
    unary("i1")
    unary("i1e", "away")
    op(
        sp + "xlog1py",
        lambda lib, x, y: lib.special.xlog1py(x, y),
        [S(A(3, 4), P(3, 4)), S(A(3, 4), P(4)), S(A(2, 1), P(3))],
        needs=(sp + "xlog1py",),
    )
    op(
        sp + "zeta",
        lambda lib, x, q: lib.special.zeta(x, q),
        [S(Const([2.5, 3.0, 4.5], "float64"), P(2, 3))],
        needs=(sp + "zeta",),
        no_torch_forward_ad="torch has no forward AD for special_zeta",
    )
    op(
        sp + "gammainc",
        lambda lib, a, x: (lib.special.gammainc(a, x), lib.special.gammaincc(a, x)),
        [S(Const([0.5, 2.0, 3.5], "float64"), P(2, 3))],
        needs=(sp + "gammainc", sp + "gammaincc"),
        no_torch_forward_ad="torch has no forward AD for igamma",
    )
    op(
        "polygamma",
        lambda lib, x, n=1: lib.polygamma(n, x),
        [S(P(3, 4)), S(P(2, 3), 2), S(P(3), 0)],
        api=("Tensor.polygamma", sp + "polygamma"),
    )
    op(
        "mvlgamma",
        lambda lib, x, p: lib.mvlgamma(x, p),
        [S(Arg((3, 4), "gt1"), 2), S(Arg((3,), "gt1"), 3)],
        api=("Tensor.mvlgamma", sp + "multigammaln"),
    )
    op(
        "logit",
        lambda lib, x, **kw: lib.logit(_half_open(x), **kw),
        [S(Arg((3, 4), "unit")), S(Arg((3, 4), "unit"), eps=0.1)],
        api=("Tensor.logit", sp + "logit"),
    )
    # torch.special's aliases of top-level ops, called once each
    aliases = ["gammaln", "psi", "digamma", "expit", "erf", "erfc", "exp2", "expm1", "i0"]
    op(
        sp + "aliases",
        lambda lib, x: (
            tuple(getattr(lib.special, n)(x) for n in aliases)
            + (
                lib.special.log1p(x),
                lib.special.sinc(x),
                lib.special.erfinv(x * 0.5),
                lib.special.softmax(x, 0),
                lib.special.log_softmax(x, 1),
                lib.special.logsumexp(x, 1),
                lib.special.xlogy(x, x),
                lib.special.round(x),
            )
        ),
        [S(P(2, 3))],
        needs=tuple(sp + n for n in aliases)
        + tuple(
            sp + n
            for n in [
                "log1p",
                "sinc",
                "erfinv",
                "softmax",
                "log_softmax",
                "logsumexp",
                "xlogy",
                "round",
            ]
        ),
    )
