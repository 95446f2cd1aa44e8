"""ferrograd.func.vmap (and ferrograd.vmap): in_dims / out_dims / pytrees /
chunk_size / randomness argument handling, nesting with grad, and the
errors, run on ferrograd and (when installed) torch via the ``lib``
fixture. Also functional_call / stack_module_state and
``autograd.grad(is_grads_batched=True)``."""

from collections import namedtuple

import ferrograd
import numpy as np
import pytest

Pair = namedtuple("Pair", ["a", "b"])
RNG = np.random.default_rng(7)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((4, 3))
V = RNG.standard_normal(4)


def t(lib, a, **kw):
    return lib.tensor(np.asarray(a, dtype=np.float64), **kw)


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), np.asarray(b), rtol=tol, atol=tol)


def test_vmap_is_exported(lib):
    assert lib.vmap is lib.func.vmap


def test_vmap_dot(lib):
    out = lib.vmap(lambda a, v: (a * v).sum(), in_dims=(0, None))(t(lib, A), t(lib, V))
    close(out, A @ V)


def test_vmap_in_dims_none_and_negative(lib):
    out = lib.vmap(lambda a, v: a * v, in_dims=(0, None))(t(lib, A), t(lib, V))
    close(out, A * V)
    out = lib.vmap(lambda a, v: a * v, in_dims=(-1, None))(t(lib, B), t(lib, V))
    close(out, B.T * V)
    out = lib.vmap(lambda a: a.sum(), in_dims=1)(t(lib, A))
    close(out, A.sum(0))


def test_vmap_out_dims(lib):
    out = lib.vmap(lambda a: a * 2, out_dims=1)(t(lib, A))
    close(out, (A * 2).T)
    out = lib.vmap(lambda a: a * 2, out_dims=-1)(t(lib, A))
    close(out, (A * 2).T)
    x, y = lib.vmap(lambda a: (a, a.sum()), out_dims=(1, 0))(t(lib, A))
    close(x, A.T)
    close(y, A.sum(1))


def test_vmap_out_dims_none(lib):
    c = t(lib, V)
    x, y = lib.vmap(lambda a: (a + 1, c), out_dims=(0, None))(t(lib, A))
    close(x, A + 1)
    close(y, V)


def test_vmap_pytree_in_and_out(lib):
    def f(d, p):
        return {"s": d["x"] * p.a, "t": [p.b + 1]}

    inp = ({"x": t(lib, A)}, Pair(t(lib, V), t(lib, A)))
    out = lib.vmap(f, in_dims=({"x": 0}, Pair(None, 0)))(*inp)
    assert isinstance(out, dict) and isinstance(out["t"], list)
    close(out["s"], A * V)
    close(out["t"][0], A + 1)


def test_vmap_nested(lib):
    out = lib.vmap(lib.vmap(lambda a, b: a * b, in_dims=(0, None)), in_dims=(None, 0))(
        t(lib, V), t(lib, A)
    )
    close(out, A[:, None, :] * 0 + np.outer(V, np.ones(4))[None] * A[:, None, :])
    outer = lib.vmap(lib.vmap(lambda x, y: x * y, in_dims=(None, 0)), in_dims=(0, None))
    close(outer(t(lib, V), t(lib, V)), np.outer(V, V))


def test_vmap_of_grad_per_sample(lib):
    w = t(lib, V)

    def loss(w, x):
        return ((x * w).sum() - 1.0) ** 2

    g = lib.vmap(lib.func.grad(loss), in_dims=(None, 0))(w, t(lib, A))
    r = A @ V - 1.0
    close(g, 2 * r[:, None] * A)


def test_grad_of_vmap(lib):
    g = lib.func.grad(lambda x: lib.vmap(lambda r: (r * r).sum())(x).sum())(t(lib, A))
    close(g, 2 * A)


def test_vmap_jacrev_batched_jacobians(lib):
    j = lib.vmap(lib.func.jacrev(lambda x: x.sin()))(t(lib, A))
    exp = np.stack([np.diag(np.cos(r)) for r in A])
    close(j, exp)


def test_vmap_kwargs_not_batched(lib):
    out = lib.vmap(lambda a, scale=1.0: a * scale)(t(lib, A), scale=2.0)
    close(out, 2 * A)


def test_vmap_chunk_size_same_result(lib):
    for c in (1, 2, 5):
        close(lib.vmap(lambda a: a.exp().sum(), chunk_size=c)(t(lib, A)), np.exp(A).sum(1))


def test_vmap_errors(lib):
    f = lambda a: a
    with pytest.raises(ValueError):  # batch sizes differ
        lib.vmap(lambda a, b: a + b)(t(lib, A), t(lib, B))
    with pytest.raises(ValueError):  # in_dim out of range
        lib.vmap(f, in_dims=2)(t(lib, A))
    with pytest.raises(ValueError):  # in_dims structure
        lib.vmap(lambda a, b: a, in_dims=(0,))(t(lib, A), t(lib, A))
    with pytest.raises(ValueError):  # vmapping a non-tensor
        lib.vmap(lambda a, b: a)(t(lib, A), 1.0)
    with pytest.raises(ValueError):  # nothing to map over
        lib.vmap(f, in_dims=None)(t(lib, A))
    with pytest.raises(ValueError):  # no inputs
        lib.vmap(lambda: 1)()
    with pytest.raises(ValueError):  # in_dims of a bad type
        lib.vmap(f, in_dims="0")(t(lib, A))
    with pytest.raises(ValueError):  # non-tensor output
        lib.vmap(lambda a: 1.0)(t(lib, A))
    with pytest.raises(RuntimeError):
        lib.vmap(f, randomness="sometimes")
    with pytest.raises(ValueError):
        lib.vmap(f, chunk_size=0)(t(lib, A))


def test_functional_call(lib):
    lin = lib.nn.Linear(4, 2).double()
    w = t(lib, RNG.standard_normal((2, 4)))
    b = t(lib, RNG.standard_normal(2))
    x = t(lib, A)
    out = lib.func.functional_call(lin, {"weight": w, "bias": b}, (x,))
    close(out, A @ w.numpy().T + b.numpy())
    out = lib.func.functional_call(lin, ({"weight": w}, {"bias": b}), x)
    close(out, A @ w.numpy().T + b.numpy())
    # the module's own parameters are back
    assert lin.weight is not w
    close(lin(x), A @ lin.weight.detach().numpy().T + lin.bias.detach().numpy())


def test_functional_call_grad_wrt_params(lib):
    lin = lib.nn.Linear(4, 1, bias=False).double()
    params = {"weight": t(lib, V.reshape(1, 4))}

    def loss(p, x):
        return lib.func.functional_call(lin, p, (x,)).sum()

    g = lib.func.grad(loss)(params, t(lib, A))
    close(g["weight"], A.sum(0, keepdims=True))


def test_stack_module_state_ensemble(lib):
    models = [lib.nn.Linear(4, 2).double() for _ in range(3)]
    params, buffers = lib.func.stack_module_state(models)
    assert tuple(params["weight"].shape) == (3, 2, 4)
    assert params["weight"].requires_grad and buffers == {}
    base = models[0]

    def run(p, x):
        return lib.func.functional_call(base, p, (x,))

    x = t(lib, A)
    out = lib.vmap(run, in_dims=(0, None))(params, x)
    for i, m in enumerate(models):
        close(out[i], m(x).detach().numpy())


def test_is_grads_batched(lib):
    x = t(lib, V, requires_grad=True)
    y = x.sin() * 2
    basis = lib.eye(4, dtype=lib.float64)
    (j,) = lib.autograd.grad(y, x, basis, is_grads_batched=True)
    close(j, np.diag(2 * np.cos(V)))
    z = (x * x).sum()
    (g,) = lib.autograd.grad(z, x, t(lib, [1.0, 2.0, 3.0]), is_grads_batched=True)
    close(g, np.outer([1.0, 2.0, 3.0], 2 * V))


def test_is_grads_batched_create_graph(lib):
    x = t(lib, V, requires_grad=True)
    y = x**3
    (j,) = lib.autograd.grad(y, x, lib.eye(4, dtype=lib.float64), True, True, is_grads_batched=True)
    (h,) = lib.autograd.grad(j.sum(), x)
    close(h, 6 * V)


def test_oracle_vmap_against_torch(torch):
    def make(lib):
        W = lib.tensor(B)

        def f(x, y):
            return (x @ W).tanh() * y.sum(), y.softmax(-1)

        return f

    ours = ferrograd.vmap(make(ferrograd), in_dims=(1, 0), out_dims=(0, 1))(
        ferrograd.tensor(B), ferrograd.tensor(A)
    )
    ref = torch.vmap(make(torch), in_dims=(1, 0), out_dims=(0, 1))(torch.tensor(B), torch.tensor(A))
    for o, r in zip(ours, ref):
        np.testing.assert_allclose(o.numpy(), r.numpy(), rtol=1e-12, atol=1e-12)


def test_functional_jacobian_vectorize(lib):
    F = lib.autograd.functional

    def f(x, y):
        return x.sin() * y.sum(), (x * y).exp()

    inp = (t(lib, V), t(lib, V[::-1].copy()))
    a = F.jacobian(f, inp, vectorize=True)
    b = F.jacobian(f, inp)
    for ra, rb in zip(a, b):
        for ja, jb in zip(ra, rb):
            close(ja, jb.numpy())
    h = F.hessian(lambda x: (x.sin() * x).sum(), t(lib, V), vectorize=True)
    close(h, np.diag(-np.sin(V) * V + 2 * np.cos(V)))
    j = F.jacobian(lambda x: x**2, t(lib, V), create_graph=True, vectorize=True)
    assert j.requires_grad


def test_vmap_randomness(lib):
    x = t(lib, A)
    with pytest.raises(RuntimeError, match="randomness"):
        lib.vmap(lambda r: r + lib.rand(4, dtype=lib.float64))(x)
    lib.manual_seed(0)
    same = lib.vmap(lambda r: r + lib.rand(4, dtype=lib.float64), randomness="same")(x)
    noise = (same - x).numpy()
    np.testing.assert_allclose(noise, np.broadcast_to(noise[0], noise.shape), rtol=0, atol=1e-15)
    diff = lib.vmap(lambda r: r + lib.rand(4, dtype=lib.float64), randomness="different")(x)
    noise = (diff - x).numpy()
    assert not np.allclose(noise[0], noise[1])
    # no random op: every mode gives the plain result
    for mode in ("error", "same", "different"):
        close(lib.vmap(lambda r: r * 2, randomness=mode)(x), 2 * A)


def test_custom_functions_under_vmap_and_grad():
    # With generate_vmap_rule (torch's errors without it: see
    # test_func_vmap_rules.py), each slice runs the Function as written, so
    # beyond torch an old-style forward(ctx, ...) Function runs too.
    class Cube(ferrograd.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    class Square(ferrograd.autograd.Function):
        generate_vmap_rule = True

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

    x = t(ferrograd, A)
    close(ferrograd.vmap(Cube.apply)(x), A**3)
    g = ferrograd.vmap(ferrograd.func.grad(lambda r: Cube.apply(r).sum()))(x)
    close(g, 3 * A * A)
    g = ferrograd.vmap(ferrograd.func.grad(lambda r: Square.apply(r).sum()))(x)
    close(g, 2 * A)


def test_vmap_empty_batch(lib):
    x = lib.ones(0, 3, dtype=lib.float64)
    a, s = lib.vmap(lambda r: (r * 2, r.sum()), out_dims=(1, 0))(x)
    assert tuple(a.shape) == (3, 0) and tuple(s.shape) == (0,)


def _scale_fn(lib, seen):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

        @staticmethod
        def vmap(info, in_dims, x, k):
            seen.append((info.batch_size, info.randomness, tuple(in_dims)))
            # The whole batch in one call; the batch dim of x stays where it is.
            return Scale.apply(x, k), in_dims[0]

    return Scale


def test_function_vmap_staticmethod(lib):
    seen = []
    Scale = _scale_fn(lib, seen)
    x = t(lib, A)
    out = lib.vmap(Scale.apply, in_dims=(1, None))(x, 3.0)
    close(out, 3 * A.T)
    assert seen == [(4, "error", (1, None))]
    out = lib.vmap(Scale.apply, in_dims=(0, None), out_dims=1, randomness="same")(x, 2.0)
    close(out, 2 * A.T)
    assert seen[-1] == (3, "same", (0, None))
    g = lib.func.grad(lambda x: lib.vmap(Scale.apply, in_dims=(0, None))(x, 5.0).sum())(x)
    close(g, np.full(A.shape, 5.0))


def test_function_vmap_unbatched_output_is_expanded(lib):
    class Const(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x.new_ones(2)

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return None

        @staticmethod
        def vmap(info, in_dims, x):
            return Const.apply(x.select(in_dims[0], 0)), None

    out = lib.vmap(Const.apply)(t(lib, A))
    close(out, np.ones((3, 2)))


def test_function_generate_vmap_rule(lib):
    class Sq(lib.autograd.Function):
        generate_vmap_rule = True

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

    x = t(lib, A)
    close(lib.vmap(Sq.apply, in_dims=1)(x), (A * A).T)
    close(lib.vmap(lib.func.grad(lambda r: Sq.apply(r).sum()))(x), 2 * A)


def test_replace_all_batch_norm_modules_(lib):
    net = lib.nn.Sequential(lib.nn.Linear(4, 4), lib.nn.BatchNorm1d(4)).double()
    assert lib.func.replace_all_batch_norm_modules_(net) is net
    bn = net[1]
    assert bn.running_mean is None and bn.running_var is None and not bn.track_running_stats
    out = lib.vmap(lambda r: net(r.unsqueeze(0).expand(2, 4)).sum())(t(lib, A))
    assert tuple(out.shape) == (3,)


def test_debug_unwrap(lib):
    x = t(lib, V)
    y = lib.func.debug_unwrap(x)
    close(y, V)


def test_is_grads_batched_errors(lib):
    def run(go):
        x = lib.ones(3, dtype=lib.float64, requires_grad=True)
        return lib.autograd.grad(x * 2, x, go, is_grads_batched=True)

    with pytest.raises(RuntimeError, match="is_grads_batched"):
        run(lib.ones(2, 4, dtype=lib.float64))
    with pytest.raises(IndexError):
        run(lib.ones(0, 3, dtype=lib.float64))
    x = lib.ones(3, dtype=lib.float64, requires_grad=True)
    with pytest.raises(ValueError):
        lib.autograd.grad(
            (x * 2, x * 3),
            x,
            (lib.ones(2, 3, dtype=lib.float64), lib.ones(4, 3, dtype=lib.float64)),
            is_grads_batched=True,
        )
    with pytest.raises(IndexError):
        lib.autograd.grad(
            (x * 2).sum(), x, lib.tensor(1.0, dtype=lib.float64), is_grads_batched=True
        )


def test_jacrev_of_empty_output():
    # Beyond torch (whose jacrev raises IndexError here): an empty Jacobian.
    lib = ferrograd
    j = lib.func.jacrev(lambda x: x[:0] * 2)(t(lib, V))
    assert tuple(j.shape) == (0, 4)
    j = lib.autograd.functional.jacobian(lambda x: x[:0] * 2, t(lib, V), vectorize=True)
    assert tuple(j.shape) == (0, 4)
