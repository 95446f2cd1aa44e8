"""Op registry entries: pointwise ops (the binary and unary tables, the
other elementwise functions), rearranging, addmm, sorting, losses and
rounding. Loaded by ``op_registry`` (entries are appended in file order)."""

from __future__ import annotations

from op_registry import A, Arg, Const, NC, P, S, W, binary_samples, op, unary, unary_samples


# ---- binary table ops (arithmetic, atan2, hypot, xlogy) ----
# Every differentiable op of the binary tables in src/ops (arith, trig,
# special), from the op table itself: the function on broadcasting samples
# from the entry's domains (and `alpha=`), and per dunder the operator
# (`name_op`), the reflected operator with a number (`name_scalar`) and the
# in-place operator on a non-leaf (`name_inplace`).
def _binary_table_ops():
    import operator

    import ferrograd

    for row in ferrograd._C._op_table():
        if row["kind"] not in ("binary_numeric", "binary_float"):
            continue
        name, (d1, d2) = row["name"], row["domain"].split()
        aliases = row["aliases"]
        samples = binary_samples(d1, d2)
        if row["form"] == "alpha":
            samples = samples + [S(Arg((3, 4), d1), Arg((4,), d2), alpha=2.5)]
        op(
            name,
            lambda lib, x, y, _n=name, **kw: getattr(lib, _n)(x, y, **kw),
            samples,
            api=(f"Tensor.{name}", *aliases, *(f"Tensor.{a}" for a in aliases)),
        )
        if not row["dunders"]:
            continue
        fwd = row["dunders"][0]
        f = getattr(operator, fwd.strip("_"))
        op(
            f"{name}_op",
            lambda lib, x, y, _f=f: _f(x, y),
            binary_samples(d1, d2),
            needs=(f"Tensor.{fwd}",),
        )
        rev, inp = "__r" + fwd[2:], "__i" + fwd[2:]
        if rev in row["dunders"]:
            op(
                f"{name}_scalar",
                lambda lib, x, _f=f: _f(x, 1.5) + _f(2.5, x),
                [S(Arg((3, 4), d2)), S(Arg((), d2))],
                needs=(f"Tensor.{fwd}", f"Tensor.{rev}"),
            )
        if inp in row["dunders"]:
            fi = getattr(operator, inp.strip("_"))
            op(
                f"{name}_inplace",
                lambda lib, x, y, _f=fi: _f(x * 1, y),
                binary_samples(d1, d2)[:2],
                needs=(f"Tensor.{inp}",),
            )


_binary_table_ops()
op("neg_op", lambda lib, x: -x, unary_samples(), needs=("Tensor.__neg__",))
op("neg", lambda lib, x: lib.neg(x), unary_samples(), api=("Tensor.neg", "negative"))
op(
    "pow_tensor",
    lambda lib, x, y: lib.pow(x, y),
    [S(P(3, 4), A(3, 4)), S(P(3, 4), A(4)), S(NC(3, 4, domain="pos"), A(3, 4))],
    needs=("pow",),
    api=("Tensor.pow", "Tensor.__pow__"),
)
op("pow_op", lambda lib, x, y: x**y, [S(P(3, 4), A(1, 4))], needs=("Tensor.__pow__",))
op(
    "pow_scalar",
    lambda lib, x, e: lib.pow(x, e),
    [S(P(3, 4), 2.5), S(A(3, 4), 3), S(A(3, 4), 2), S(P(3, 4), -1.5), S(A(), 2), S(NC(3, 4), 2)],
    needs=("pow",),
)
op("pow_scalar_op", lambda lib, x: x**2 + x**0.5, [S(P(3, 4))], needs=("Tensor.__pow__",))
op("rpow", lambda lib, x: 2.0**x, [S(A(3, 4)), S(A())], needs=("Tensor.__rpow__",))


# ---- pointwise unary ----
# Every op of the family tables in src/ops (unary, trig, special), from the
# op table itself: name, aliases and sample domain come from its entry.
def _table_ops():
    import ferrograd

    for row in ferrograd._C._op_table():
        if row["kind"] != "unary_float":
            continue
        unary(row["name"], row["domain"])
        for alias in row["aliases"]:
            unary(alias, row["domain"])


_table_ops()
unary("abs", "away")
unary("sign", "away")
unary("relu", "away")
unary("square")
op(
    "gelu",
    lambda lib, x, **kw: lib.nn.functional.gelu(x, **kw),
    [S(A(3, 4)), S(A(2, 3, 2)), S(NC(3, 4)), S(A(3, 4), approximate="tanh")],
    needs=("nn.functional.gelu",),
)
op(
    "silu",
    lambda lib, x: lib.nn.functional.silu(x),
    [S(A(3, 4)), S(A()), S(NC(3, 4))],
    needs=("nn.functional.silu",),
)
op(
    "softplus",
    lambda lib, x, **kw: lib.nn.functional.softplus(x, **kw),
    [S(A(3, 4)), S(NC(3, 4)), S(A(3, 4), beta=2.0), S(A(3, 4), beta=0.5, threshold=1.0)],
    needs=("nn.functional.softplus",),
)
op(
    "clamp",
    lambda lib, x, **kw: lib.clamp(x, **kw),
    [
        S(A(3, 4), min=-0.5, max=0.5),
        S(A(3, 4), min=0.0),
        S(A(3, 4), max=0.25),
        S(NC(3, 4), min=-0.3, max=0.6),
        S(A(), min=-0.5, max=0.5),
    ],
    api=("Tensor.clamp",),
)
op(
    "clip",
    lambda lib, x, **kw: lib.clip(x, **kw),
    [S(A(3, 4), min=-0.5, max=0.5)],
    api=("Tensor.clip",),
)
op("maximum", lambda lib, x, y: lib.maximum(x, y), binary_samples(), api=("Tensor.maximum",))

# ---- inverse trigonometric, hyperbolic, other bases, error functions ----
unary("deg2rad")
unary("rad2deg")
op(
    "xlogy_scalar",
    lambda lib, x: lib.xlogy(x, 2.5) + lib.xlogy(1.5, x.abs() + 0.5),
    [S(A(3, 4)), S(A())],
    needs=("xlogy",),
)
op("logaddexp", lambda lib, x, y: lib.logaddexp(x, y), binary_samples(), api=("Tensor.logaddexp",))
op(
    "logaddexp2",
    lambda lib, x, y: lib.logaddexp2(x, y),
    binary_samples(),
    api=("Tensor.logaddexp2",),
)
op(
    "lerp_scalar",
    lambda lib, x, y: lib.lerp(x, y, 0.3) + x.lerp(y, 0.8),
    binary_samples()[:3],
    needs=("lerp", "Tensor.lerp"),
)
op(
    "lerp_tensor",
    lambda lib, x, y, w: lib.lerp(x, y, w),
    [S(A(3, 4), A(3, 4), A(3, 4)), S(A(3, 4), A(4), A(3, 1))],
    needs=("lerp",),
)
op(
    "addcmul",
    lambda lib, x, y, z, **kw: lib.addcmul(x, y, z, **kw),
    [S(A(3, 4), A(3, 4), A(3, 4)), S(A(3, 4), A(4), A(3, 1), value=0.5)],
    api=("Tensor.addcmul",),
)
op(
    "addcdiv",
    lambda lib, x, y, z, **kw: lib.addcdiv(x, y, z, **kw),
    [S(A(3, 4), A(3, 4), W(3, 4)), S(A(3, 4), A(4), W(3, 1), value=-2.0)],
    api=("Tensor.addcdiv",),
)

# ---- rearranging elements ----
op(
    "flip",
    lambda lib, x, *d: x.flip(*d),
    [S(A(2, 3, 4), 0), S(A(2, 3, 4), 0, 2), S(NC(3, 4), -1)],
    needs=("Tensor.flip",),
    api=("flip",),
)
op(
    "roll",
    lambda lib, x, *a: lib.roll(x, *a),
    [S(A(3, 4), 1), S(A(3, 4), -1, 1), S(A(2, 3, 4), (1, 2), (0, 2)), S(NC(3, 4), 2, 0)],
    api=("Tensor.roll",),
)
op(
    "repeat",
    lambda lib, x, *r: x.repeat(*r),
    [S(A(3, 4), 2, 1), S(A(3), 2, 2), S(NC(3, 4), 1, 3)],
    needs=("Tensor.repeat",),
)
op(
    "tile",
    lambda lib, x, r: lib.tile(x, r),
    [S(A(3, 4), (2,)), S(A(3), (2, 2))],
    api=("Tensor.tile",),
)
op(
    "tril",
    lambda lib, x, *k: lib.tril(x, *k),
    [S(A(3, 4)), S(A(2, 3, 4), -1), S(NC(4, 3), 1)],
    api=("Tensor.tril",),
)
op("triu", lambda lib, x, *k: lib.triu(x, *k), [S(A(3, 4)), S(A(2, 4, 3), 1)], api=("Tensor.triu",))
op(
    "diagonal",
    lambda lib, x, **kw: lib.diagonal(x, **kw),
    [S(A(3, 4)), S(A(3, 4), offset=1), S(A(2, 3, 4), offset=-1, dim1=2, dim2=0), S(NC(4, 3))],
    api=("Tensor.diagonal",),
)
op(
    "diag",
    lambda lib, x, *k: lib.diag(x, *k),
    [S(A(3)), S(A(3), 1), S(A(3, 4), -1)],
    api=("Tensor.diag",),
)
op("trace", lambda lib, x: lib.trace(x), [S(A(3, 4)), S(NC(3, 3))], api=("Tensor.trace",))
op(
    "movedim",
    lambda lib, x, s, d: lib.movedim(x, s, d),
    [S(A(2, 3, 4), 0, 2), S(A(2, 3, 4), (0, 1), (2, 0))],
    api=("Tensor.movedim", "moveaxis", "Tensor.moveaxis"),
)
op(
    "swapaxes",
    lambda lib, x: lib.swapaxes(x, 0, 2),
    [S(A(2, 3, 4))],
    api=("Tensor.swapaxes", "swapdims", "Tensor.swapdims"),
)

op(
    "einsum",
    lambda lib, eq, *xs: lib.einsum(eq, *xs),
    [
        S("ij,jk->ik", A(2, 3), A(3, 4)),
        S("ij,jk,kl", A(2, 3), A(3, 4), A(4, 2)),
        S("bij,bjk->bik", A(2, 3, 4), NC(2, 4, 3)),
        S("ii->i", A(3, 3)),
        S("...ij,j->...i", A(2, 3, 4), A(4)),
        S("i,j->ij", A(3), A(4)),
        S("ij,ij->", A(2, 3), A(2, 3)),
    ],
)

# ---- beta * input + alpha * product ----
op(
    "addmm",
    lambda lib, x, a, b, **kw: lib.addmm(x, a, b, **kw),
    [S(A(2, 4), A(2, 3), A(3, 4)), S(A(4), A(2, 3), A(3, 4), beta=0.5, alpha=2.0)],
    api=("Tensor.addmm",),
)
op(
    "addmv",
    lambda lib, x, a, v, **kw: lib.addmv(x, a, v, **kw),
    [S(A(2), A(2, 3), A(3)), S(A(2), A(2, 3), A(3), alpha=-1.0)],
    api=("Tensor.addmv",),
)
op(
    "baddbmm",
    lambda lib, x, a, b, **kw: lib.baddbmm(x, a, b, **kw),
    [S(A(2, 2, 4), A(2, 2, 3), A(2, 3, 4)), S(A(2, 4), A(2, 2, 3), A(2, 3, 4), beta=2.0)],
    api=("Tensor.baddbmm",),
)
op(
    "addbmm",
    lambda lib, x, a, b, **kw: lib.addbmm(x, a, b, **kw),
    [S(A(2, 4), A(3, 2, 3), A(3, 3, 4), alpha=0.5)],
    api=("Tensor.addbmm",),
)
op(
    "inner",
    lambda lib, x, y: lib.inner(x, y),
    [S(A(2, 3), A(4, 3)), S(A(3), A(3))],
    api=("Tensor.inner",),
)
op("vdot", lambda lib, x, y: lib.vdot(x, y), [S(A(3), A(3))], api=("Tensor.vdot",))

# ---- sorting (values are gathered: gradient scattered back) ----
op(
    "sort",
    lambda lib, x, **kw: x.sort(**kw).values,
    [S(A(3, 4)), S(A(3, 4), dim=0, descending=True), S(NC(3, 4))],
    needs=("Tensor.sort",),
    api=("sort",),
)
op(
    "topk",
    lambda lib, x, k, **kw: lib.topk(x, k, **kw).values,
    [S(A(3, 5), 2), S(A(3, 5), 3, dim=0, largest=False)],
    api=("Tensor.topk",),
)
op(
    "kthvalue",
    lambda lib, x, k, **kw: lib.kthvalue(x, k, **kw).values,
    [S(A(3, 5), 2), S(A(4, 3), 1, dim=0, keepdim=True)],
    api=("Tensor.kthvalue",),
)
op("msort", lambda lib, x: lib.msort(x), [S(A(4, 3))], api=("Tensor.msort",))

# ---- nn.functional: linear and losses ----
TARGET5 = Const([0, 3, 1, 1, 2])
PROBS = Const(
    [
        [0.1, 0.2, 0.3, 0.4],
        [0.25, 0.25, 0.25, 0.25],
        [0.7, 0.1, 0.1, 0.1],
        [0.0, 0.0, 1.0, 0.0],
        [0.4, 0.3, 0.2, 0.1],
    ],
    "float64",
)
BINARY = Const([[0.0, 1.0, 0.3, 1.0], [1.0, 0.0, 0.5, 0.9], [0.2, 0.8, 1.0, 0.0]], "float64")
CLASS_W = Const([0.5, 1.0, 2.0, 1.5], "float64")
op(
    "linear",
    lambda lib, *a: lib.nn.functional.linear(*a),
    [S(A(4, 3), A(2, 3), A(2)), S(A(2, 4, 3), A(2, 3)), S(A(4, 3), A(3))],
    needs=("nn.functional.linear",),
)
for _name in ("mse_loss", "l1_loss"):
    op(
        _name,
        lambda lib, x, y, _n=_name, **kw: getattr(lib.nn.functional, _n)(x, y, **kw),
        [
            S(A(3, 4), A(3, 4)),
            S(A(3, 4), A(3, 4), reduction="sum"),
            S(A(3, 4), A(3, 4), reduction="none"),
        ],
        needs=(f"nn.functional.{_name}",),
    )
op(
    "smooth_l1_loss",
    lambda lib, x, y, **kw: lib.nn.functional.smooth_l1_loss(x, y, **kw),
    [S(A(3, 4), A(3, 4)), S(A(3, 4), A(3, 4), beta=0.5, reduction="sum")],
    needs=("nn.functional.smooth_l1_loss",),
)
op(
    "huber_loss",
    lambda lib, x, y, **kw: lib.nn.functional.huber_loss(x, y, **kw),
    [S(A(3, 4), A(3, 4)), S(A(3, 4), A(3, 4), delta=0.5, reduction="none")],
    needs=("nn.functional.huber_loss",),
)
op(
    "binary_cross_entropy",
    lambda lib, x, t, **kw: lib.nn.functional.binary_cross_entropy(x.sigmoid(), t, **kw),
    [
        S(A(3, 4), BINARY),
        S(A(3, 4), BINARY, weight=Const([1.0, 2.0, 0.5, 1.0], "float64"), reduction="sum"),
    ],
    needs=("nn.functional.binary_cross_entropy",),
)
op(
    "binary_cross_entropy_with_logits",
    lambda lib, x, t, **kw: lib.nn.functional.binary_cross_entropy_with_logits(x, t, **kw),
    [S(A(3, 4), BINARY), S(A(3, 4), BINARY, pos_weight=Const([1.0, 2.0, 3.0, 0.5], "float64"))],
    needs=("nn.functional.binary_cross_entropy_with_logits",),
)
op(
    "nll_loss",
    lambda lib, x, t, **kw: lib.nn.functional.nll_loss(x, t, **kw),
    [
        S(A(5, 4), TARGET5),
        S(A(5, 4), TARGET5, weight=CLASS_W),
        S(A(5, 4), TARGET5, ignore_index=1, reduction="sum"),
        S(A(2, 4, 3), Const([[0, 1, 3], [2, 2, 0]]), reduction="none"),
    ],
    needs=("nn.functional.nll_loss",),
)
op(
    "cross_entropy",
    lambda lib, x, t, **kw: lib.nn.functional.cross_entropy(x, t, **kw),
    [
        S(A(5, 4), TARGET5),
        S(A(5, 4), TARGET5, weight=CLASS_W, label_smoothing=0.2, ignore_index=3),
        S(A(5, 4), TARGET5, label_smoothing=0.1, reduction="none"),
        S(A(5, 4), PROBS),
        S(NC(5, 4), PROBS, label_smoothing=0.3, weight=CLASS_W),
    ],
    needs=("nn.functional.cross_entropy",),
)

# ---- rounding (zero derivative, inputs clear of the jumps) and remainders ----
unary("floor")
unary("ceil")
unary("trunc")
unary("frac")
op("fix", lambda lib, x: lib.fix(x), unary_samples()[:2], api=("Tensor.fix",))
op(
    "round",
    lambda lib, x, **kw: lib.round(x, **kw),
    [S(A(3, 4)), S(A(3, 4), decimals=1), S(A(3, 4), decimals=-1), S(NC(3, 4))],
    api=("Tensor.round",),
)
op(
    "remainder",
    lambda lib, x, y: lib.remainder(x, y),
    binary_samples("normal", "away"),
    api=("Tensor.remainder",),
)
op(
    "remainder_op",
    lambda lib, x, y: x % y,
    binary_samples("normal", "away")[:3],
    needs=("Tensor.__mod__",),
)
op(
    "remainder_scalar",
    lambda lib, x: (x % 0.7) + (x % -1.3),
    [S(A(3, 4)), S(A())],
    needs=("Tensor.__mod__",),
)
op("fmod", lambda lib, x, y: lib.fmod(x, y), binary_samples("normal", "away"), api=("Tensor.fmod",))
op("fmod_scalar", lambda lib, x: lib.fmod(x, 0.7), [S(A(3, 4))], needs=("fmod",))
op(
    "div_rounding",
    lambda lib, x, y, **kw: lib.div(x, y, **kw),
    [S(A(3, 4), W(4), rounding_mode="floor"), S(A(3, 4), W(3, 4), rounding_mode="trunc")],
    needs=("div",),
    api=("Tensor.div", "divide"),
)

op("minimum", lambda lib, x, y: lib.minimum(x, y), binary_samples(), api=("Tensor.minimum",))
