"""vmap's batching rules of dims, products, nn functions and in-place
writes (``ops/batching.rs``, ``python/core/batched/``): every case runs
once on the whole batch (no fallback warning) and equals the per-slice
loop and torch's vmap; in-place writes follow torch's rules."""

import warnings

import ferrograd as fg
import numpy as np
import pytest
from ferrograd.func import _vmap, vmap
from helpers import no_vmap_fallback as _no_fallback

# The same draws, in the same order, as test_func_vmap_rules.py.
RNG = np.random.default_rng(26)
X = RNG.standard_normal((5, 3, 4))
W = RNG.standard_normal((7, 4))
CX = RNG.standard_normal((5, 2, 4, 7, 7))
CW = RNG.standard_normal((6, 4, 3, 3))
CB = RNG.standard_normal(6)
CWB = RNG.standard_normal((5, 6, 2, 3, 3))

# Each case: f(L, *values) and the inputs' in_dims; the batch of five is
# at that dim of each batched input. vmap runs without a fallback and
# equals the per-slice loop (shapes, dtypes, values), and torch's vmap
# when torch is installed.
P = np.abs(RNG.standard_normal((5, 3, 4))) + 0.5
IDX = RNG.integers(0, 3, (5, 3, 2))


def _t(L, a, **kw):
    return L.tensor(a, **kw)


DIM_CASES = {
    "roll": (lambda L, v: (L.roll(v, 1), v.roll((1, -1), (0, 1)), L.roll(v, shifts=2, dims=-1)),),
    "repeat_tile": (lambda L, v: (v.repeat(2, 1, 1), L.tile(v, (2,)), v.tile(2, 1)),),
    "diag": (lambda L, v: (L.diag(v[0]), L.diag(v[0], 1), v.diag(-1), v.diag()),),
    "msort": (lambda L, v: L.msort(v),),
    "diff": (
        lambda L, v: (
            L.diff(v, n=2, dim=0),
            L.diff(v),
            L.diff(v, prepend=_t(L, X[0, :, :1]), append=v[:, :2]),
        ),
    ),
    "rot90": (lambda L, v: (L.rot90(v), L.rot90(v, 2, [1, 0]), v.rot90(-1, (0, 1))),),
    "take_along_dim": (
        lambda L, v: (
            L.take_along_dim(v, _t(L, IDX[0]), dim=1),
            L.take_along_dim(v, _t(L, [5, 0, 3])),
            v.take_along_dim(_t(L, np.tile(IDX[1, :1, :1], (1, 4))), 0),
        ),
    ),
    "cross": (
        lambda L, v: (
            L.linalg.cross(v[:, :3], _t(L, W[:3, :3])),
            L.linalg.cross(v[:, :3], v[:, 1:], dim=0),
            v[:, 1:].cross(_t(L, W[:1, :3]), dim=1),
        ),
    ),
    "repeat_interleave": (
        lambda L, v: (L.repeat_interleave(v, 2), v.repeat_interleave(_t(L, [1, 0, 2]), dim=0)),
    ),
    "var_std_mean": (
        lambda L, v: (
            *L.var_mean(v),
            *L.var_mean(v, 1, keepdim=True),
            *L.std_mean(v, dim=0, correction=0),
        ),
    ),
    "norm": (lambda L, v: (L.norm(v), L.norm(v, p=1, dim=1), v.norm(dim=0, keepdim=True)),),
    "linalg_dims": (
        lambda L, v: (
            L.linalg.vecdot(v, _t(L, W[0, :4])),
            L.linalg.matrix_norm(v),
            L.linalg.matrix_norm(v, ord=1, dim=(1, 0)),
            L.linalg.norm(v),
            L.linalg.norm(v[0], 3),
            L.linalg.norm(v, dim=0),
            L.linalg.diagonal(v, offset=1),
            L.linalg.vander(v[0]),
        ),
    ),
    "normalize": (
        lambda L, v: (L.nn.functional.normalize(v), L.nn.functional.normalize(v, p=1, dim=-1)),
    ),
    "add_products": (
        lambda L, v: (
            L.addmm(v[:, :2], v, _t(L, W[:4, :2]), beta=0.5, alpha=2.0),
            L.addmv(_t(L, W[0, :3]), v, v[0]),
            L.baddbmm(v, v[None, :, :3], v[None]),
            L.addbmm(v, _t(L, X[:2, :, :3]), v.expand(2, 3, 4), alpha=0.5),
            v.addmm(_t(L, W[:3, :3]), v, beta=0),
        ),
    ),
    "inner_vdot": (
        lambda L, v: (
            L.inner(v, _t(L, W[:2, :4])),
            v.inner(v),
            L.vdot(v[0], v[1]),
            v[0].vdot(v[2]),
        ),
    ),
    "einsum": (
        lambda L, v: (
            L.einsum("ij,jk->ik", v, _t(L, W[:4, :2])),
            L.einsum("ij,ij", v, v),
            L.einsum("ii->i", v[:, :3]),
            L.einsum("...j,kj", v, v),
            L.einsum("bj,j->b", [v, v[0]]),
        ),
    ),
    "tensordot_kron": (
        lambda L, v: (
            L.tensordot(v, _t(L, W[:4, :2]), dims=1),
            L.tensordot(_t(L, W[:2, :3]), v, dims=([1], [0])),
            L.tensordot(v, _t(L, X[0]), dims=2),
            L.kron(v, _t(L, W[:2, :2])),
            L.kron(v[0], _t(L, W[:2, :2])),
            L.linalg.matmul(v, _t(L, W[:4, :2])),
        ),
    ),
    "special_binary": (
        lambda L, v: (
            L.special.xlog1py(v, _t(L, P[0])),
            L.special.zeta(v.abs() + 1.5, _t(L, P[1])),
            L.special.gammainc(v.abs(), _t(L, P[2])),
            L.polygamma(1, v.abs() + 0.5),
            (v.abs() + 0.5).polygamma(2),
        ),
    ),
    # two batched inputs (the second at another dim) and unbatched ones
    "two_batched": (
        lambda L, v, i: (
            L.take_along_dim(v, i, dim=1),
            L.linalg.cross(v[:, :3], v[:, 1:].exp()),
            L.diff(v, prepend=v[:, :1] * 2),
            L.special.xlog1py(i.double(), v.abs()[:, :2]),
            L.addmm(v[:, :2], v, i.double()[:1].expand(4, 2)),
            L.einsum("ij,ik->jk", v, i.double()),
        ),
        (0, 2),
        (X, np.ascontiguousarray(np.moveaxis(IDX, 0, 2))),
    ),
}


def _outputs(out):
    return out if isinstance(out, tuple) else (out,)


def _per_slice(f, args, in_dims):
    n = next(a.shape[d] for a, d in zip(args, in_dims) if d is not None)
    outs = [
        _outputs(f(fg, *[a if d is None else a.select(d, b) for a, d in zip(args, in_dims)]))
        for b in range(n)
    ]
    return [fg.stack([o[j] for o in outs]) for j in range(len(outs[0]))]


PROB = RNG.uniform(0.05, 0.95, (3, 4))
CXT = np.ascontiguousarray(np.moveaxis(CX[:, 0], 0, 2))  # batch at dim 2: (4, 7, 5, 7)
CWT = RNG.standard_normal((5, 4, 3, 3, 3))  # per-sample transposed-conv weights
NN_CASES = {
    "losses": (
        lambda L, v: (
            L.nn.functional.binary_cross_entropy(v.sigmoid(), _t(L, PROB)),
            L.nn.functional.binary_cross_entropy(
                v.sigmoid(), _t(L, PROB), weight=_t(L, W[0, :4]), reduction="sum"
            ),
            L.nn.functional.binary_cross_entropy_with_logits(v, _t(L, PROB), reduction="none"),
            L.nn.functional.binary_cross_entropy_with_logits(
                v, _t(L, PROB), pos_weight=_t(L, P[0, 0])
            ),
            L.nn.functional.nll_loss(v.log_softmax(-1), _t(L, [0, 3, 1])),
            L.nn.functional.nll_loss(
                v.log_softmax(-1), _t(L, [0, 3, 1]), ignore_index=1, reduction="sum"
            ),
        ),
        (0,),
        (X,),
    ),
    "stacks_meshgrid": (
        lambda L, v: (
            L.vstack([v, v[0]]),
            L.hstack([v, v]),
            L.hstack([v[0], _t(L, W[0])]),
            L.dstack([v, _t(L, X[0])]),
            *L.meshgrid(v[0], _t(L, W[0, :3]), indexing="xy"),
            *L.meshgrid(_t(L, W[1, :2]), v[1], indexing="ij"),
        ),
        (1,),
        (np.ascontiguousarray(np.moveaxis(X, 0, 1)),),
    ),
    # torch's vmap has no rule (nor fallback) for column_stack
    "column_stack": (
        lambda L, v: (L.column_stack([v[0], v[1]]), L.column_stack([v, _t(L, X[0, :, 0])])),
        (0,),
        (X,),
    ),
    "normalization_embedding": (
        lambda L, v: (
            L.nn.functional.group_norm(v, 2, _t(L, W[0, :4]), _t(L, W[1, :4])),
            L.nn.functional.batch_norm(
                v, None, None, _t(L, W[0, :4]), _t(L, W[1, :4]), training=True
            ),
            L.nn.functional.batch_norm(v, _t(L, X[0, 0]), _t(L, P[0, 0]), eps=1e-3),
            L.nn.functional.embedding(_t(L, IDX[0]), v),
        ),
        (0,),
        (X,),
    ),
    "samples_ops": (
        lambda L, v: (
            L.nn.functional.conv_transpose2d(v, _t(L, CW.transpose(1, 0, 2, 3)), stride=2),
            L.nn.functional.conv_transpose1d(v[:, 0], _t(L, CW[:, :, 0].transpose(1, 0, 2))),
            L.nn.functional.interpolate(v.unsqueeze(0), size=(5, 9), mode="bilinear"),
            L.nn.functional.avg_pool1d(v[0], 2),
            L.nn.functional.unfold(v, 2),
            L.nn.functional.fold(L.nn.functional.unfold(v, 2), (7, 7), 2),
        ),
        (2,),
        (CXT,),
    ),
    "batched_weights": (
        lambda L, x, w, i: (
            L.nn.functional.conv_transpose2d(x, w, _t(L, CB), groups=2, padding=1),
            L.nn.functional.conv_transpose3d(x.unsqueeze(-1), w.unsqueeze(-1), groups=2),
            L.nn.functional.embedding(i, x[0, 0]),
        ),
        (None, 0, 1),
        (CX[0], CWT, np.ascontiguousarray(IDX.transpose(1, 0, 2) % 7)),
    ),
}
DIM_CASES.update({f"nn_{k}": v for k, v in NN_CASES.items()})
WELL = X[:, :, :3] + 3 * np.eye(3)  # five well-conditioned 3x3 matrices


def _solves(L, a, b):
    eye = L.eye(3, dtype=L.float64)
    return (
        L.linalg.solve(a, b),
        L.linalg.solve(a, _t(L, W[:3, :2])),
        L.linalg.solve(_t(L, WELL[0]), b),
        L.linalg.solve(a, b[None].expand(2, 3, 2)),
        L.linalg.solve_ex(a, b).result,
        L.linalg.solve_triangular(a.triu(), b, upper=True),
        L.linalg.solve_triangular(a.tril(), b.mT, upper=False, left=False),
        L.cholesky_solve(b, L.linalg.cholesky(a @ a.mT + eye)),
        L.triangular_solve(b, a.triu()).solution,
        L.linalg.lu_solve(*L.linalg.lu_factor(a), b),
        *L.lu_unpack(*L.linalg.lu_factor(a)),
        L.linalg.multi_dot([a[0], a, b]),
        L.linalg.multi_dot([_t(L, W[:2, :3]), a, a[:, 1]]),
        L.linalg.lstsq(a, b).solution,
        *L.linalg.lstsq(a.repeat(2, 1), b.repeat(2, 1), driver="gelsd")[:2],
        L.linalg.tensorinv(a.reshape(3, 1, 3), ind=2),
        L.linalg.tensorsolve(a.reshape(3, 1, 3), b[:, 0].reshape(3, 1)),
        L.linalg.tensorsolve(a.reshape(3, 3, 1), _t(L, W[0, :3]), dims=(2,)),
    )


DIM_CASES["solves"] = (
    _solves,
    (0, 1),
    (WELL, np.ascontiguousarray(RNG.standard_normal((3, 5, 2)))),
)
NO_TORCH_RULE = {"nn_column_stack"}


@pytest.mark.parametrize(
    "name,in_dim",
    [(n, d) for n in sorted(DIM_CASES) for d in ([0, -1] if len(DIM_CASES[n]) == 1 else [None])],
)
def test_dim_and_product_rules_match_the_loop_and_torch(name, in_dim):
    f, *rest = DIM_CASES[name]
    in_dims, arrays = rest if rest else ((in_dim,), (np.moveaxis(X, 0, in_dim),))
    arrays = [np.ascontiguousarray(a) for a in arrays]
    args = [fg.tensor(a) for a in arrays]
    # one batched call: any op without a rule, or any error, fails the test
    got = _outputs(_vmap.vmap_batched_only(lambda *vs: f(fg, *vs), in_dims=in_dims)(*args))
    want = _per_slice(f, args, in_dims)
    assert len(got) == len(want)
    for j, (g, w) in enumerate(zip(got, want)):
        assert tuple(g.shape) == tuple(w.shape), j
        assert g.dtype == w.dtype, j
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-12, err_msg=str(j))
    try:
        import torch
    except ImportError:
        return
    if name in NO_TORCH_RULE:
        return
    tw = _outputs(
        torch.func.vmap(lambda *vs: f(torch, *vs), in_dims=in_dims)(
            *[torch.tensor(a) for a in arrays]
        )
    )
    for j, (g, w) in enumerate(zip(got, tw)):
        assert tuple(g.shape) == tuple(w.shape), j
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12, err_msg=str(j))


def _index_updates(L, v, s):
    return (
        L.index_add(v, 0, _t(L, [2, 0, 2]), s, alpha=2.5),
        v.index_add(1, _t(L, [3, 1]), _t(L, W[:3, :2])),
        L.index_copy(v, 0, _t(L, [2, 0]), s[:2]),
        v.index_fill(1, _t(L, [1, 3]), -2.0),
        L.index_fill(v, 0, _t(L, [1]), _t(L, 0.5)),
        L.scatter_add(v, 1, _t(L, IDX[0]), s[:, :2]),
        v.scatter_add(0, (s[:2] * 0).long() + _t(L, [[0], [2]]), s[:2]),
    )


def _inplace(L, v, s):
    z = v * 1.0
    z.narrow(1, 1, 2).mul_(s[:, :2]).add_(1.5)
    z.index_add_(0, _t(L, [2, 2]), s[:2], alpha=0.5)
    z.index_copy_(1, _t(L, [3, 0]), s[:, :2])
    z.index_fill_(0, _t(L, [1]), 2.0)
    z.clamp_(-1.0, 1.0)
    w = v * 2
    w.add_(_t(L, W[0, :4])).sub_(v[0], alpha=0.5)
    return z, w


DIM_CASES["index_updates"] = (_index_updates, (0, 1), (X, np.moveaxis(P, 0, 1)))
DIM_CASES["inplace"] = (_inplace, (0, 1), (X, np.moveaxis(P, 0, 1)))


def test_inplace_into_a_value_without_the_level_raises_torchs_error(torch):
    """An in-place write of a value batched over a level that self lacks
    (self from an outer vmap) raises torch's error (torch itself raises a
    shape error here); nothing falls back."""
    for lib, match in ((fg, "vmap: inplace arithmetic"), (torch, "")):

        def f(x, y):
            z = x * 1
            return lib.vmap(lambda v: z.add_(v) * 1)(y)

        with pytest.raises(RuntimeError, match=match):
            lib.vmap(f, in_dims=(0, None))(lib.tensor(X), lib.tensor(P))


def test_inplace_rules_never_write_into_an_input():
    """An in-place op on a mapped input itself takes the fallback (which
    reruns the function from its inputs), so a later op without a rule
    sees the inputs unchanged; on a fresh value it runs batched."""
    x = fg.tensor(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = vmap(lambda v: v.mul_(2).take(fg.tensor([0, 1])))(x * 1)
    np.testing.assert_allclose(got.numpy(), (X * 2).reshape(5, -1)[:, :2])
    got = _vmap.vmap_batched_only(lambda v: (v * 1).mul_(2))(x)
    np.testing.assert_allclose(got.numpy(), X * 2)
    np.testing.assert_allclose(x.numpy(), X)


def test_augmented_assignment_writes_in_place_under_vmap(torch):
    """``z += v`` on a batched ``z`` is the in-place method (it rebound the
    name to a new tensor, so the base of a view ``z`` missed the write),
    batched on a fresh value, as the per-slice loop and torch.func."""

    def make(lib):
        def f(x):
            y = x.clone()
            z = y[0:2]
            z += 1
            z *= x[0:2]
            z -= 0.5
            z /= 2
            return y

        return f

    x = fg.tensor(X)
    got = _no_fallback(vmap(make(fg)), x)
    loop = fg.stack([make(fg)(x[i]) for i in range(x.shape[0])])
    np.testing.assert_array_equal(got.numpy(), loop.numpy())
    want = torch.vmap(make(torch))(torch.tensor(X))
    np.testing.assert_allclose(got.numpy(), want.numpy())
