"""vmap's batching rules (``ops/batching.rs``, ``python/core/batched/``):
the function sees batched tensors with per-sample shapes, ops with a rule
run once on the whole batch (no fallback warning), results match torch's
vmap, and what vmap cannot do raises torch's errors."""

import warnings

import ferrograd as fg
import numpy as np
import pytest
from ferrograd.func import _vmap, grad, vmap
from helpers import no_vmap_fallback as _no_fallback

RNG = np.random.default_rng(26)
X = RNG.standard_normal((5, 3, 4))
W = RNG.standard_normal((7, 4))


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
