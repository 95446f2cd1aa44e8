"""vmap's batching rules (``ops/batching.rs``, ``python/core/batched.rs``):
the function sees batched tensors with per-sample shapes, ops with a rule
run once on the whole batch (no fallback warning), results match torch's
vmap, and what vmap cannot do raises torch's errors."""

import warnings

import ferrograd as fg
import numpy as np
import pytest
from ferrograd.func import _vmap, grad, vmap

RNG = np.random.default_rng(26)
X = RNG.standard_normal((5, 3, 4))
W = RNG.standard_normal((7, 4))


def _no_fallback(f, *args, **kw):
    """``f(*args, **kw)`` failing on a fallback warning (the one-time record
    of warned ops is cleared first, so that every fallback warns)."""
    warned = set(_vmap._warned)
    _vmap._warned.clear()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            return f(*args, **kw)
    finally:
        _vmap._warned.update(warned)


CASES = {
    "unary": lambda L, v: v.exp().tanh(),
    "binary_scalar": lambda L, v: 2.0 - v * v / 3 + 1,
    "broadcast_unbatched": lambda L, v: v + L.tensor(W[0]),
    "sum_dim": lambda L, v: v.sum(0, keepdim=True),
    "sum_all": lambda L, v: v.sum(),
    "mean_tuple": lambda L, v: v.mean((0, 1)),
    "amax": lambda L, v: v.amax(-1),
    "max_all": lambda L, v: v.max(),
    "softmax": lambda L, v: v.softmax(-1),
    "log_softmax": lambda L, v: v.log_softmax(0),
    "matmul": lambda L, v: v @ v.T,
    "matmul_unbatched": lambda L, v: v @ L.tensor(W.T),
    "mv": lambda L, v: v.mv(v[0]),
    "dot": lambda L, v: v[0].dot(v[1]),
    "view_ops": lambda L, v: v.reshape(-1).unsqueeze(0).expand(2, 12).flatten(),
    "permute_transpose": lambda L, v: v.unsqueeze(1).permute(2, 0, 1).transpose(0, 2),
    "squeeze": lambda L, v: v[:1].squeeze(),
    "index": lambda L, v: v[1:, None, ..., 2],
    "select_narrow": lambda L, v: v.select(1, 2).narrow(0, 1, 2),
    "cat": lambda L, v: L.cat([v, v * 2], 1),
    "stack": lambda L, v: L.stack([v, v.exp()], -1),
    "where_clamp": lambda L, v: v.clamp(-0.5, 0.5).where(v > 0, v * 0),
    "linear": lambda L, v: L.nn.functional.linear(v, L.tensor(W), L.tensor(W[:, 0])).relu(),
    # module functions: the same rules as the methods
    "module_unary": lambda L, v: L.exp(L.sin(v)) + L.sqrt(L.abs(v)),
    "module_binary": lambda L, v: L.add(v, 1.5, alpha=2) - L.sub(2.0, v) * L.mul(L.tensor(W[0]), v),
    "module_binary_plain_first": lambda L, v: (
        L.maximum(L.tensor(W[0]), v) + L.atan2(L.tensor(W[1]), v)
    ),
    "module_reduce": lambda L, v: L.sum(v, dim=1) + L.amax(v, 0)[:3] + L.logsumexp(v, 1),
    "module_softmax": lambda L, v: L.softmax(v, -1) + L.log_softmax(v, dim=0),
    "module_rounding": lambda L, v: L.floor(v * 3) + L.round(v, decimals=1) + L.frac(v),
    "activations": lambda L, v: (
        L.nn.functional.gelu(v)
        + L.nn.functional.silu(v)
        + L.nn.functional.softplus(v, beta=2.0)
        + L.nn.functional.leaky_relu(v, 0.2)
        + L.nn.functional.elu(v)
        + L.nn.functional.logsigmoid(v)
    ),
    "special": lambda L, v: L.special.ndtr(v) + L.special.i1(v) + L.special.erfcx(v),
    "matmul_functions": lambda L, v: L.matmul(v, v.T) + L.mm(v, L.tensor(W[:3].T)),
    "outer_dot": lambda L, v: L.outer(v[0], v[1]) * L.dot(v[0], v[2]),
    "linalg": lambda L, v: (
        L.linalg.inv(v @ v.T + L.eye(3, dtype=L.float64))
        + L.linalg.det(v @ v.T + L.eye(3, dtype=L.float64))
        + L.linalg.cholesky(v @ v.T + L.eye(3, dtype=L.float64))
        + L.linalg.slogdet(v @ v.T + L.eye(3, dtype=L.float64))[1]
    ),
    "tril_triu_det": lambda L, v: L.tril(v) + L.triu(v, 1) + L.det(v[:, :3]),
    "losses": lambda L, v: (
        L.nn.functional.mse_loss(v, L.tensor(X[0]))
        + L.nn.functional.l1_loss(L.tensor(X[1]), v, reduction="sum")
        + L.nn.functional.smooth_l1_loss(v, v.flip(0), beta=0.5)
        + L.nn.functional.huber_loss(v, L.tensor(X[2]), delta=0.7, reduction="none").sum(0)[0]
    ),
    "division": lambda L, v: (
        L.div(v, 0.3, rounding_mode="floor")
        + L.remainder(v, 0.7)
        + L.fmod(L.tensor(X[0]), v)
        + L.floor_divide(v, L.tensor(W[0]))
    ),
    "layer_norm": lambda L, v: (
        L.nn.functional.layer_norm(v, (4,), L.tensor(W[0, :4]), L.tensor(W[1, :4]))
        + L.nn.functional.layer_norm(v, (3, 4), eps=1e-3)
    ),
    "swap_move": lambda L, v: (
        L.swapaxes(v, 0, 1) + L.swapdims(v, 1, 0) + v.swapaxes(-1, 0) + L.movedim(v, 1, 0)
    ),
    "pad_constant": lambda L, v: L.nn.functional.pad(v, (1, 2), value=0.5),
    "pad_reflect_replicate": lambda L, v: (
        L.nn.functional.pad(v.unsqueeze(0), (1, 1), mode="reflect")
        + L.nn.functional.pad(v, (2, 0), mode="replicate")
    ),
    "prod_diagonal_trace": lambda L, v: (
        v.prod()
        + L.prod(v, 1)[0]
        + L.trace(v[:, :3])
        + L.diagonal(v, 1).sum()
        + v.diagonal(0, 1, 0)
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("in_dim", [0, -1])
def test_rule_matches_torch_without_fallback(torch, name, in_dim):
    f = CASES[name]
    x = np.ascontiguousarray(np.moveaxis(X, 0, in_dim))
    got = _no_fallback(vmap(lambda v: f(fg, v), in_dims=in_dim), fg.tensor(x))
    want = torch.vmap(lambda v: f(torch, v), in_dims=in_dim)(torch.tensor(x))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_function_sees_logical_shapes_and_tensor_type():
    seen = []

    def f(v):
        seen.append((tuple(v.shape), v.dim(), v.size(-1), isinstance(v, fg.Tensor)))
        return v

    out = _no_fallback(vmap(f, in_dims=1), fg.tensor(X))
    assert seen == [((5, 4), 2, 4, True)]
    assert tuple(out.shape) == (3, 5, 4)


def test_nested_vmap_and_out_dims(torch):
    def f(L, v):
        return v * v.sum()

    got = _no_fallback(vmap(vmap(lambda v: f(fg, v)), out_dims=1), fg.tensor(X))
    want = torch.vmap(torch.vmap(lambda v: f(torch, v)), out_dims=1)(torch.tensor(X))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_per_sample_grads_of_an_unbatched_parameter(torch):
    def loss(L, p, v, y):
        o = L.nn.functional.linear(v, p).relu()
        return L.nn.functional.cross_entropy(o, y)

    y = RNG.integers(0, 7, (5, 3))
    got = _no_fallback(
        vmap(grad(lambda p, v, y: loss(fg, p, v, y)), in_dims=(None, 0, 0)),
        fg.tensor(W),
        fg.tensor(X),
        fg.tensor(y),
    )
    want = torch.func.vmap(
        torch.func.grad(lambda p, v, y: loss(torch, p, v, y)), in_dims=(None, 0, 0)
    )(torch.tensor(W), torch.tensor(X), torch.tensor(y))
    assert tuple(got.shape) == (5, 7, 4)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_op_without_rule_falls_back_with_a_warning_naming_it(torch):
    def f(L, v):
        return v.take(L.tensor([0, 3, 5]))

    _vmap._warned.discard("take")  # the warning is once per op and process
    with pytest.warns(UserWarning, match="batching rule for take"):
        got = vmap(lambda v: f(fg, v))(fg.tensor(X))
    want = torch.vmap(lambda v: f(torch, v))(torch.tensor(X))
    np.testing.assert_allclose(got.numpy(), want.numpy())


@pytest.mark.parametrize(
    "f",
    [
        lambda v: v.sum().item(),
        lambda v: float(v.sum()),
        lambda v: 1 if v.sum() > 0 else 0,
    ],
)
def test_value_reads_raise_torchs_error(torch, f):
    with pytest.raises(RuntimeError) as want:
        torch.vmap(f)(torch.tensor(X))
    with pytest.raises(RuntimeError) as got:
        vmap(f)(fg.tensor(X))
    assert str(got.value) == str(want.value)


def test_random_op_under_error_raises(torch):
    def f(L, v):
        return v + L.rand(4)

    with pytest.raises(RuntimeError) as want:
        torch.vmap(lambda v: f(torch, v))(torch.tensor(X))
    with pytest.raises(RuntimeError) as got:
        vmap(lambda v: f(fg, v))(fg.tensor(X))
    assert str(got.value) == str(want.value)


def test_mismatched_batch_sizes_raise_value_error(torch):
    with pytest.raises(ValueError) as want:
        torch.vmap(lambda a, b: a + b)(torch.tensor(X), torch.zeros(2, 3, 4))
    with pytest.raises(ValueError) as got:
        vmap(lambda a, b: a + b)(fg.tensor(X), fg.zeros(2, 3, 4))
    assert str(got.value) == str(want.value)


def test_trailing_rule_on_too_few_dims_raises_the_ops_error(torch):
    """A matrix op on a batched vector: each sample is 1-D, so the op's own
    error (the physical tensor alone would have looked like a matrix)."""
    x = fg.tensor(X[:, 0])
    with pytest.raises(RuntimeError) as ours:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vmap(fg.linalg.det)(x)
    with pytest.raises(RuntimeError):
        torch.vmap(torch.linalg.det)(torch.tensor(X[:, 0]))
    assert "2 dimensions" in str(ours.value)


def test_module_function_type_errors_keep_torchs_message():
    with pytest.raises(TypeError, match=r"exp\(\): argument 'input' \(position 1\) must be Tensor"):
        fg.exp([1.0])
    with pytest.raises(TypeError, match=r"argument 'input' \(position 1\) must be Tensor"):
        fg.sum(3)


def test_inplace_activation_under_vmap_matches_torch(torch):
    """``inplace=True`` is not run by the rule (a rule never writes): the
    per-slice run writes each sample, as torch's in-place write does."""
    x, tx = fg.tensor(X), torch.tensor(X)
    got = vmap(lambda v: fg.nn.functional.relu6(v * 1, inplace=True))(x)
    want = torch.vmap(lambda v: torch.nn.functional.relu6(v * 1, inplace=True))(tx)
    np.testing.assert_allclose(got.numpy(), want.numpy())


def test_chunk_size_runs_one_batched_call_per_chunk():
    calls = []

    def f(v, w):
        calls.append(tuple(v.shape))
        return v.exp() @ w, v.sum(), w

    x, w = fg.tensor(X), fg.tensor(W.T)
    full = _no_fallback(vmap(f, in_dims=(0, None), out_dims=(1, 0, None)), x, w)
    calls.clear()
    got = _no_fallback(vmap(f, in_dims=(0, None), out_dims=(1, 0, None), chunk_size=2), x, w)
    assert len(calls) == 3  # 5 samples: chunks of 2, 2, 1, each one call
    for g, want in zip(got, full):
        assert tuple(g.shape) == tuple(want.shape)
        np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-12)
    assert got[2] is w


def test_inplace_write_of_a_batched_value_into_a_plain_tensor_raises(torch):
    """torch's error, and nothing written: a captured tensor written with
    each sample's value would otherwise keep only the last one."""
    for lib, xs in ((fg, fg.tensor(X)), (torch, torch.tensor(X))):
        y = lib.zeros(3, 4, dtype=lib.float64)
        for write in (lambda v: y.copy_(v), lambda v: y.__setitem__(0, v[0])):
            with pytest.raises(RuntimeError, match="vmap: inplace arithmetic"):
                lib.vmap(lambda v: write(v) * 1)(xs)
        assert not y.any()
    y = fg.zeros(3, 4, dtype=fg.float64)
    for op in ("add_", "mul_", "sub_"):
        with pytest.raises(RuntimeError, match="vmap: inplace arithmetic"):
            vmap(lambda v: getattr(y, op)(v) * 1)(fg.tensor(X))
    with pytest.raises(RuntimeError, match="vmap: inplace arithmetic"):

        def iadd(v):
            z = y
            z += v
            return z

        vmap(iadd)(fg.tensor(X))
    assert not y.any()


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd", "hessian"])
def test_jacobians_run_batched_and_fall_back_to_their_loop(transform):
    """jacrev/jacfwd/hessian run all rows (columns) in one batched call
    when every op has a batching rule: the function runs a fixed number of
    times, not once per row; with an op that has none (``take``) they
    run their own loop (jacfwd: one jvp per column; jacrev: the rows of
    one forward through the engine), with the same result and no fallback
    warning."""
    A = fg.tensor(RNG.standard_normal((7, 7)))
    calls = []

    def smooth(v):
        calls.append(1)
        return ((A @ v).tanh() * v.sin()).sum() if transform == "hessian" else (A @ v).tanh()

    def no_rule(v):
        calls.append(1)
        y = (A @ v.take(fg.arange(7))).tanh()
        return (y * v.sin()).sum() if transform == "hessian" else y

    x = fg.tensor(RNG.standard_normal(7))
    T = getattr(fg.func, transform)
    got = _no_fallback(T(smooth), x)
    assert len(calls) <= 4
    calls.clear()
    looped = _no_fallback(T(no_rule), x)
    if transform == "jacfwd":
        assert len(calls) >= 7
    np.testing.assert_allclose(looped.numpy(), got.numpy(), rtol=1e-12, atol=1e-14)


def _square_function(base, **attrs):
    class Square(base):
        @staticmethod
        def forward(x):
            return x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    for k, v in attrs.items():
        setattr(Square, k, v)
    return Square


def test_custom_function_inside_vmap_follows_torch(torch):
    """A custom Function applied to batched tensors: torch's errors without
    vmap support and with both kinds; with ``generate_vmap_rule`` it runs
    (per sample) and composes with grad, and so does an old-style
    ``forward(ctx, x)`` Function (torch refuses those under transforms)."""
    rule = staticmethod(lambda info, in_dims, x: (x * x, in_dims[0]))
    for lib in (fg, torch):
        x = lib.arange(6.0).reshape(2, 3)
        plain = _square_function(lib.autograd.Function)
        with pytest.raises(RuntimeError, match="does not have vmap support"):
            lib.vmap(lambda v: plain.apply(v) + 1)(x)
        both = _square_function(lib.autograd.Function, generate_vmap_rule=True, vmap=rule)
        with pytest.raises(RuntimeError, match="both generate_vmap_rule=True and an overridden"):
            lib.vmap(both.apply)(x)
        gen = _square_function(lib.autograd.Function, generate_vmap_rule=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = lib.vmap(lambda v: gen.apply(v) + 1)(x)
            g = lib.vmap(lib.func.grad(lambda v: gen.apply(v).sum()))(x)
        np.testing.assert_allclose(y.numpy(), np.arange(6.0).reshape(2, 3) ** 2 + 1)
        np.testing.assert_allclose(g.numpy(), 2 * np.arange(6.0).reshape(2, 3))

    class Old(fg.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = fg.arange(6.0).reshape(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = vmap(grad(lambda v: Old.apply(v).sum()))(x)
    np.testing.assert_allclose(g.numpy(), 2 * np.arange(6.0).reshape(2, 3))


CX = RNG.standard_normal((5, 2, 4, 7, 7))
CW = RNG.standard_normal((6, 4, 3, 3))
CB = RNG.standard_normal(6)
CWB = RNG.standard_normal((5, 6, 2, 3, 3))
CONV = {
    "input": lambda L: L.vmap(
        lambda x: L.nn.functional.conv2d(x, L.tensor(CW), L.tensor(CB), 1, 1)
    )(L.tensor(CX)),
    "no_samples": lambda L: L.vmap(lambda x: L.nn.functional.conv2d(x, L.tensor(CW), stride=2))(
        L.tensor(CX[:, 0])
    ),
    "weight_groups": lambda L: L.vmap(
        lambda w: L.nn.functional.conv2d(L.tensor(CX[0]), w, L.tensor(CB), groups=2, padding="same")
    )(L.tensor(CWB)),
    "both": lambda L: L.vmap(lambda x, w: L.nn.functional.conv2d(x, w, groups=2))(
        L.tensor(CX), L.tensor(CWB)
    ),
    "conv1d_in_dim_1": lambda L: L.vmap(
        lambda x: L.nn.functional.conv1d(x, L.tensor(CW[..., 0])), in_dims=1
    )(L.tensor(np.ascontiguousarray(CX[..., 0].transpose(1, 0, 2, 3)))),
    "pools": lambda L: L.vmap(
        lambda x: (
            L.nn.functional.max_pool2d(x, 2)
            + L.nn.functional.avg_pool2d(x, 2, stride=2)
            + L.nn.functional.adaptive_avg_pool2d(x, 3)
            + L.nn.functional.adaptive_max_pool2d(x, (3, 3))
        )
    )(L.tensor(CX)),
    "pool_indices_no_samples": lambda L: L.stack(
        L.vmap(lambda x: L.nn.functional.max_pool2d(x, 3, return_indices=True))(L.tensor(CX[:, 0]))
    ),
    "pool1d_3d": lambda L: L.vmap(
        lambda x: (
            L.nn.functional.max_pool1d(x[..., 0], 2).sum()
            + L.nn.functional.adaptive_avg_pool3d(x.unsqueeze(0), 2).sum()
        )
    )(L.tensor(CX)),
    "nested": lambda L: L.vmap(
        L.vmap(lambda x, w: L.nn.functional.conv2d(x, w, groups=2), in_dims=(0, None))
    )(L.tensor(CX), L.tensor(CWB)),
}


@pytest.mark.parametrize("name", sorted(CONV))
def test_conv_rule_matches_torch(torch, name):
    got = _no_fallback(CONV[name], fg)
    want = CONV[name](torch)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_per_sample_gradients_of_a_cnn_match_a_loop():
    def loss(p, x):
        h = fg.nn.functional.conv2d(x.unsqueeze(0), p[0], p[1], padding=1).relu()
        return fg.nn.functional.linear(h.flatten(), p[2]).tanh().sum()

    p = (fg.tensor(CW), fg.tensor(CB), fg.tensor(RNG.standard_normal((3, 6 * 49))))
    xs = fg.tensor(CX[:, 0])
    got = _no_fallback(vmap(grad(loss), in_dims=(None, 0)), p, xs)
    for b in range(5):
        want = grad(loss)(p, xs[b])
        for g, w in zip(got, want):
            np.testing.assert_allclose(g[b].numpy(), w.numpy(), rtol=1e-10, atol=1e-12)


def test_embedding_of_batched_indices_matches_torch(torch):
    idx = RNG.integers(0, 7, (5, 3))
    got = _no_fallback(vmap(lambda i: fg.nn.functional.embedding(i, fg.tensor(W))), fg.tensor(idx))
    want = torch.vmap(lambda i: torch.nn.functional.embedding(i, torch.tensor(W)))(
        torch.tensor(idx)
    )
    np.testing.assert_allclose(got.numpy(), want.numpy())


def test_gather_rule_matches_torch(torch):
    idx = RNG.integers(0, 4, (5, 3, 2))
    cases = {
        "plain_index": lambda L: L.vmap(lambda v: v.gather(1, L.tensor(idx[0])))(L.tensor(X)),
        "module_fn": lambda L: L.vmap(lambda v: L.gather(v, -1, index=L.tensor(idx[1])))(
            L.tensor(X)
        ),
        "both_batched": lambda L: L.vmap(lambda v, i: v.gather(1, i))(L.tensor(X), L.tensor(idx)),
    }
    for name, f in cases.items():
        got, want = _no_fallback(f, fg), f(torch)
        np.testing.assert_allclose(got.numpy(), want.numpy(), err_msg=name)


# ---- rules of ops with dims, products, two-operand functions ----
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
