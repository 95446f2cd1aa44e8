"""ferrograd.func's autodiff transforms (grad, grad_and_value, vjp, jvp,
linearize, jacrev, jacfwd, hessian) against known derivatives. Every test
runs on ferrograd and, when installed, on torch (the ``lib`` fixture), so
torch.func validates the expected values and the error types."""

from collections import namedtuple

import ferrograd
import numpy as np
import pytest

Pair = namedtuple("Pair", ["a", "b"])

X = np.array([0.3, -1.2, 2.0, 0.7])
Y = np.array([1.5, 0.4, -0.6, 2.2])


def t(lib, a, **kw):
    return lib.tensor(np.asarray(a, dtype=np.float64), **kw)


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), np.asarray(b), rtol=tol, atol=tol)


def f_sin(x):
    return (x.sin() * x).sum()


def d_sin(x):
    return np.cos(x) * x + np.sin(x)


def dd_sin(x):
    return -np.sin(x) * x + 2 * np.cos(x)


def test_grad_known(lib):
    close(lib.func.grad(f_sin)(t(lib, X)), d_sin(X))


def test_grad_result_detached_at_top_level(lib):
    g = lib.func.grad(f_sin)(t(lib, X))
    assert not g.requires_grad and g.grad_fn is None


def test_grad_of_grad(lib):
    gg = lib.func.grad(lambda x: lib.func.grad(f_sin)(x).sum())(t(lib, X))
    close(gg, dd_sin(X))


def test_grad_under_no_grad(lib):
    with lib.no_grad():
        close(lib.func.grad(f_sin)(t(lib, X)), d_sin(X))


def test_grad_argnums_tuple_and_negative(lib):
    def f(x, y):
        return (x * x * y).sum()

    gx, gy = lib.func.grad(f, argnums=(0, 1))(t(lib, X), t(lib, Y))
    close(gx, 2 * X * Y)
    close(gy, X * X)
    close(lib.func.grad(f, argnums=-1)(t(lib, X), t(lib, Y)), X * X)
    (gy,) = lib.func.grad(f, argnums=(1,))(t(lib, X), t(lib, Y))
    close(gy, X * X)


def test_grad_pytree_inputs(lib):
    def f(d):
        return (d["w"] * d["p"].a + d["p"].b[0] ** 3).sum()

    inp = {"w": t(lib, X), "p": Pair(t(lib, Y), [t(lib, X)])}
    g = lib.func.grad(f)(inp)
    assert isinstance(g, dict) and isinstance(g["p"], Pair) and isinstance(g["p"].b, list)
    close(g["w"], Y)
    close(g["p"].a, X)
    close(g["p"].b[0], 3 * X * X)


def test_grad_unused_input_is_zero(lib):
    gx, gy = lib.func.grad(lambda x, y: x.sum(), argnums=(0, 1))(t(lib, X), t(lib, Y))
    close(gx, np.ones(4))
    close(gy, np.zeros(4))


def test_grad_has_aux(lib):
    def f(x):
        return (x * x).sum(), {"n": x.sum()}

    g, aux = lib.func.grad(f, has_aux=True)(t(lib, X))
    close(g, 2 * X)
    close(aux["n"], X.sum())
    (g, (v, aux)) = lib.func.grad_and_value(f, has_aux=True)(t(lib, X))
    close(v, (X * X).sum())
    close(aux["n"], X.sum())


def test_grad_and_value(lib):
    g, v = lib.func.grad_and_value(f_sin)(t(lib, X))
    close(g, d_sin(X))
    close(v, (np.sin(X) * X).sum())


def test_grad_kwargs_pass_through(lib):
    def f(x, scale=1.0):
        return (x * scale).sum()

    close(lib.func.grad(f)(t(lib, X), scale=3.0), np.full(4, 3.0))


def test_grad_closure_over_outer_variable(lib):
    # d/dx of grad_y (x * y).sum() at y = c is d/dx x.sum() = 1.
    c = t(lib, Y)

    def outer(x):
        return lib.func.grad(lambda y: (x * y * y).sum())(c).sum()

    close(lib.func.grad(outer)(t(lib, X)), 2 * Y)


def test_grad_composes_with_outer_backward(lib):
    x = t(lib, X, requires_grad=True)
    g = lib.func.grad(f_sin)(x)
    g.sum().backward()
    close(x.grad, dd_sin(X))


def test_grad_errors(lib):
    with pytest.raises(RuntimeError):
        lib.func.grad(lambda x: x * 2)(t(lib, X))  # not a scalar
    with pytest.raises(RuntimeError):
        lib.func.grad(lambda x: 1.0)(t(lib, X))  # not a tensor
    with pytest.raises(RuntimeError):
        lib.func.grad(lambda x, y: (x * y).sum(), argnums=2)(t(lib, X), t(lib, Y))
    with pytest.raises(RuntimeError):
        lib.func.grad(lambda x: x.sum(), argnums=())(t(lib, X))
    with pytest.raises(RuntimeError):
        lib.func.grad(lambda x: x.sum(), argnums=0.5)(t(lib, X))
    with pytest.raises(RuntimeError):
        lib.func.grad(lambda x: x.sum(), has_aux=True)(t(lib, X))
    with pytest.raises(RuntimeError):
        lib.func.grad(lambda x: x.sum())(lib.tensor([1, 2]))  # integer input


def test_vjp(lib):
    def f(x, y):
        return x * y, (x + y).sin()

    out, fn = lib.func.vjp(f, t(lib, X), t(lib, Y))
    close(out[0], X * Y)
    assert not out[0].requires_grad
    u, w = t(lib, [1.0, 2.0, 3.0, 4.0]), t(lib, [0.5, -1.0, 1.0, 2.0])
    gx, gy = fn((u, w))
    u, w = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, -1.0, 1.0, 2.0])
    close(gx, u * Y + w * np.cos(X + Y))
    close(gy, u * X + w * np.cos(X + Y))
    gx2, _ = fn((t(lib, u), t(lib, w)))  # vjp_fn may be called again
    close(gx2, gx.detach().numpy())


def test_vjp_single_primal_returns_tuple(lib):
    out, fn = lib.func.vjp(lambda x: x.exp(), t(lib, X))
    res = fn(lib.ones(4, dtype=lib.float64))
    assert isinstance(res, tuple) and len(res) == 1
    close(res[0], np.exp(X))


def test_vjp_has_aux_and_errors(lib):
    out, fn, aux = lib.func.vjp(lambda x: (x * 2, x.sum()), t(lib, X), has_aux=True)
    close(aux, X.sum())
    close(fn(lib.ones(4, dtype=lib.float64))[0], np.full(4, 2.0))
    with pytest.raises(RuntimeError):
        fn((lib.ones(4, dtype=lib.float64),))  # structure differs
    with pytest.raises(RuntimeError):
        fn(lib.ones(3, dtype=lib.float64))  # shape differs


def test_jvp(lib):
    def f(x, y):
        return x.sin() * y

    out, tan = lib.func.jvp(f, (t(lib, X), t(lib, Y)), (t(lib, np.ones(4)), t(lib, np.zeros(4))))
    close(out, np.sin(X) * Y)
    close(tan, np.cos(X) * Y)


def test_jvp_pytree_and_aux(lib):
    def f(p):
        return {"s": p.a * p.b}, p.a.sum()

    prim = (Pair(t(lib, X), t(lib, Y)),)
    tang = (Pair(t(lib, np.ones(4)), t(lib, np.ones(4))),)
    out, tan, aux = lib.func.jvp(f, prim, tang, has_aux=True)
    close(out["s"], X * Y)
    close(tan["s"], X + Y)
    close(aux, X.sum())


def test_jvp_errors(lib):
    with pytest.raises(RuntimeError):
        lib.func.jvp(lambda x: x, t(lib, X), (t(lib, X),))  # primals not a tuple
    with pytest.raises(RuntimeError):
        lib.func.jvp(lambda x: x, (t(lib, X),), (t(lib, X), t(lib, X)))
    with pytest.raises(RuntimeError):
        lib.func.jvp(lambda x: x, (t(lib, X),), (t(lib, [1.0, 2.0]),))


def test_jvp_of_grad_is_hvp(lib):
    v = np.array([1.0, 0.0, -1.0, 2.0])
    _, hvp = lib.func.jvp(lib.func.grad(f_sin), (t(lib, X),), (t(lib, v),))
    close(hvp, dd_sin(X) * v)


def test_linearize(lib):
    out, jfn = lib.func.linearize(lambda x: x.sin(), t(lib, X))
    close(out, np.sin(X))
    close(jfn(t(lib, Y)), np.cos(X) * Y)
    close(jfn(t(lib, X)), np.cos(X) * X)


def test_jacrev_jacfwd_known(lib):
    def f(x):
        return x.sin() * x

    for jac in (lib.func.jacrev, lib.func.jacfwd):
        j = jac(f)(t(lib, X))
        assert tuple(j.shape) == (4, 4)
        close(j, np.diag(d_sin(X)))


def test_jac_matrix_function_shapes(lib):
    a = np.arange(6.0).reshape(2, 3) / 7

    def f(m, v):
        return m @ v

    for jac in (lib.func.jacrev, lib.func.jacfwd):
        jm, jv = jac(f, argnums=(0, 1))(t(lib, a), t(lib, X[:3]))
        assert tuple(jm.shape) == (2, 2, 3) and tuple(jv.shape) == (2, 3)
        close(jv, a)
        exp = np.zeros((2, 2, 3))
        for i in range(2):
            exp[i, i] = X[:3]
        close(jm, exp)


def test_jac_pytree_output_and_aux(lib):
    def f(x):
        return {"a": x * 2, "b": (x * x).sum()}, x.mean()

    for jac in (lib.func.jacrev, lib.func.jacfwd):
        j, aux = jac(f, has_aux=True)(t(lib, X))
        close(j["a"], 2 * np.eye(4))
        close(j["b"], 2 * X)
        close(aux, X.mean())


def test_jacrev_chunk_size(lib):
    f = lambda x: x.exp() * x.sum()
    full = lib.func.jacrev(f)(t(lib, X))
    for c in (1, 3, 10):
        close(lib.func.jacrev(f, chunk_size=c)(t(lib, X)), full.numpy())
    with pytest.raises(ValueError):
        lib.func.jacrev(f, chunk_size=0)


def test_nested_jacobians_agree(lib):
    def f(x):
        return (x.sin() * x.sum()).sum()

    x = t(lib, X)
    ref = lib.func.hessian(f)(x).numpy()
    for h in (
        lib.func.jacrev(lib.func.jacrev(f)),
        lib.func.jacfwd(lib.func.jacfwd(f)),
        lib.func.jacrev(lib.func.jacfwd(f)),
        lib.func.jacfwd(lib.func.jacrev(f)),
    ):
        close(h(x), ref, 1e-9)
    s, c = np.sin(X), np.cos(X)
    exp = np.outer(c, np.ones(4)) + np.outer(np.ones(4), c) + np.diag(-s * X.sum())
    close(lib.func.hessian(f)(x), exp, 1e-9)


def test_hessian_argnums(lib):
    def f(x, y):
        return (x * x * y).sum()

    h = lib.func.hessian(f, argnums=1)(t(lib, X), t(lib, Y))
    close(h, np.zeros((4, 4)))
    hx = lib.func.hessian(f)(t(lib, X), t(lib, Y))
    close(hx, np.diag(2 * Y))


def test_oracle_against_torch_func(torch):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 5))
    x = rng.standard_normal(5)

    def make(lib):
        W = lib.tensor(w)

        def f(x):
            return ((W @ x).tanh() ** 2).sum() + (x.exp() * x).sum()

        return f

    for name in ("grad", "jacrev", "jacfwd", "hessian"):
        ours = getattr(ferrograd.func, name)(make(ferrograd))(ferrograd.tensor(x))
        ref = getattr(torch.func, name)(make(torch))(torch.tensor(x))
        np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)
