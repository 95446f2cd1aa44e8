"""autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp.

Results are checked numerically in float64 (central differences, numpy) and
against torch.autograd.functional on the same functions (skipped without
torch), including the exact tuple nesting of what is returned. Error tests
take the ``lib`` fixture and so also run on torch.
"""

import importlib

import numpy as np
import pytest

import ferrograd
from helpers import to_numpy

EPS = 1e-6


def F(lib):
    return importlib.import_module(lib.__name__ + ".autograd.functional")


def T(lib, a, requires_grad=False):
    return lib.tensor(np.asarray(a, dtype=np.float64), dtype=lib.float64).requires_grad_(
        requires_grad
    )


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


# Test functions, written once for both libraries (numpy arrays in, numpy out
# for the numerical reference).


def f_single(x):
    return x.exp() * x.sin()


def f_reduce(x):
    return (x.exp() * x).sum(1)


def f_two_in(x, y):
    return x.tanh() * y + x * x


def f_two_out(x):
    return x.sin(), (x * x).sum()


def f_two_in_two_out(x, y):
    return x * y.sum(), (x.exp() * y.cos()).sum() + y * 0.5


def s_single(x):
    return (x.exp() * x * x).sum()


def s_two(x, y):
    return (x.sin() * y.exp()).sum() + (x * x * y).sum()


def numerical_jacobian(lib, fn, arrays):
    """J[out][in] as numpy arrays of shape out.shape + in.shape (central differences)."""

    def call(arrs):
        res = fn(*[T(lib, a) for a in arrs])
        return [to_numpy(r) for r in (res if isinstance(res, tuple) else (res,))]

    base = call(arrays)
    jac = [[np.zeros(o.shape + a.shape) for a in arrays] for o in base]
    for i, a in enumerate(arrays):
        for idx in np.ndindex(*a.shape) if a.ndim else [()]:
            plus = [b.copy() for b in arrays]
            minus = [b.copy() for b in arrays]
            plus[i][idx] += EPS
            minus[i][idx] -= EPS
            for o, (p, m) in enumerate(zip(call(plus), call(minus))):
                jac[o][i][(Ellipsis,) + tuple(idx)] = (p - m) / (2 * EPS)
    return jac


def structure(res):
    """'T' for a tensor, nested tuples (and lists: torch's forward-mode
    jacobian returns lists) otherwise."""
    if isinstance(res, (tuple, list)):
        return type(res)(structure(r) for r in res)
    return "T"


def flat(res):
    if isinstance(res, (tuple, list)):
        return [t for r in res for t in flat(r)]
    return [res]


def assert_close_tree(got, ref, rtol=1e-7, atol=1e-9):
    assert structure(got) == structure(ref), (structure(got), structure(ref))
    for g, r in zip(flat(got), flat(ref)):
        assert tuple(g.shape) == tuple(r.shape)
        assert g.requires_grad == r.requires_grad
        np.testing.assert_allclose(to_numpy(g), to_numpy(r), rtol=rtol, atol=atol)


# ---- numerical checks (no torch needed) ---------------------------------------------


JAC_CASES = [
    ("single", f_single, [rnd(3, 2, seed=1)]),
    ("reduce", f_reduce, [rnd(2, 3, seed=2)]),
    ("two_in", f_two_in, [rnd(3, seed=3), rnd(3, seed=4)]),
    ("two_out", f_two_out, [rnd(2, 2, seed=5)]),
    ("two_in_two_out", f_two_in_two_out, [rnd(2, seed=6), rnd(2, seed=7)]),
    ("scalar", f_single, [np.array(0.7)]),
]


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("name,fn,arrays", JAC_CASES, ids=[c[0] for c in JAC_CASES])
def test_jacobian_numerical(name, fn, arrays, vectorize):
    lib = ferrograd
    tuple_in = len(arrays) > 1
    inputs = tuple(T(lib, a) for a in arrays)
    res = F(lib).jacobian(fn, inputs if tuple_in else inputs[0], vectorize=vectorize)
    ref = numerical_jacobian(lib, fn, arrays)
    tuple_out = isinstance(fn(*inputs), tuple)
    # Nesting: J[out][in], unpacked where the input/output is not a tuple.
    if tuple_out and tuple_in:
        got = [list(r) for r in res]
    elif tuple_out:
        got = [[r] for r in res]
    elif tuple_in:
        got = [list(res)]
    else:
        got = [[res]]
    for o in range(len(ref)):
        for i in range(len(arrays)):
            assert not got[o][i].requires_grad
            np.testing.assert_allclose(to_numpy(got[o][i]), ref[o][i], rtol=1e-6, atol=1e-7)


def test_vjp_jvp_numerical():
    lib = ferrograd
    xa, ya = rnd(3, seed=8), rnd(3, seed=9)
    J = numerical_jacobian(lib, f_two_in_two_out, [xa, ya])
    outs = f_two_in_two_out(T(lib, xa), T(lib, ya))
    v_out = tuple(rnd(*tuple(o.shape), seed=11 + k) for k, o in enumerate(outs))
    v_in = (rnd(3, seed=20), rnd(3, seed=21))

    out, vjp = F(lib).vjp(
        f_two_in_two_out, (T(lib, xa), T(lib, ya)), tuple(T(lib, v) for v in v_out)
    )
    assert isinstance(out, tuple) and isinstance(vjp, tuple) and len(vjp) == 2
    for i in range(2):
        expect = sum(np.tensordot(v_out[o], J[o][i], axes=v_out[o].ndim) for o in range(len(v_out)))
        np.testing.assert_allclose(to_numpy(vjp[i]), expect, rtol=1e-6, atol=1e-7)

    out, jvp = F(lib).jvp(
        f_two_in_two_out, (T(lib, xa), T(lib, ya)), tuple(T(lib, v) for v in v_in)
    )
    assert isinstance(jvp, tuple) and len(jvp) == 2
    for o in range(2):
        expect = sum(np.tensordot(J[o][i], v_in[i], axes=v_in[i].ndim) for i in range(2))
        np.testing.assert_allclose(to_numpy(jvp[o]), expect, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(to_numpy(out[o]), to_numpy(outs[o]))


def test_hessian_vhp_hvp_numerical():
    lib = ferrograd
    xa, ya = rnd(2, 2, seed=30), rnd(2, 2, seed=31)

    def grads(x, y):
        with lib.enable_grad():
            x = x.detach().requires_grad_()
            y = y.detach().requires_grad_()
            return tuple(g.detach() for g in lib.autograd.grad(s_two(x, y), (x, y)))

    # H[i][j] = d grad_i / d x_j, by differences of the engine's gradient.
    H_ref = numerical_jacobian(lib, grads, [xa, ya])
    H = F(lib).hessian(s_two, (T(lib, xa), T(lib, ya)))
    assert structure(H) == (("T", "T"), ("T", "T"))
    for i in range(2):
        for j in range(2):
            assert tuple(H[i][j].shape) == (2, 2, 2, 2)
            np.testing.assert_allclose(to_numpy(H[i][j]), H_ref[i][j], rtol=1e-6, atol=1e-6)

    v = (rnd(2, 2, seed=32), rnd(2, 2, seed=33))
    vt = tuple(T(lib, a) for a in v)
    out, vhp = F(lib).vhp(s_two, (T(lib, xa), T(lib, ya)), vt)
    out2, hvp = F(lib).hvp(s_two, (T(lib, xa), T(lib, ya)), vt)
    np.testing.assert_allclose(to_numpy(out), to_numpy(s_two(T(lib, xa), T(lib, ya))))
    np.testing.assert_allclose(to_numpy(out2), to_numpy(out))
    for j in range(2):
        # (v^T H)_j = sum_i v_i . H[i][j]
        expect_vhp = sum(np.tensordot(v[i], H_ref[i][j], axes=2) for i in range(2))
        # (H v)_i = sum_j H[i][j] . v_j
        expect_hvp = sum(np.tensordot(H_ref[j][k], v[k], axes=2) for k in range(2))
        np.testing.assert_allclose(to_numpy(vhp[j]), expect_vhp, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(to_numpy(hvp[j]), expect_hvp, rtol=1e-6, atol=1e-6)


def test_single_input_hessian_and_v_none():
    lib = ferrograd
    x = T(lib, 0.4)
    H = F(lib).hessian(lambda a: a.sin() * a, x)
    # d2/dx2 (x sin x) = 2 cos x - x sin x
    assert isinstance(H, lib.Tensor) and tuple(H.shape) == ()
    np.testing.assert_allclose(H.item(), 2 * np.cos(0.4) - 0.4 * np.sin(0.4), rtol=1e-12)
    _, d = F(lib).jvp(lambda a: a.exp(), x)
    np.testing.assert_allclose(d.item(), np.exp(0.4), rtol=1e-12)
    _, d = F(lib).vjp(lambda a: a.exp(), x)
    np.testing.assert_allclose(d.item(), np.exp(0.4), rtol=1e-12)
    _, d = F(lib).vhp(lambda a: a.exp(), x)
    np.testing.assert_allclose(d.item(), np.exp(0.4), rtol=1e-12)
    _, d = F(lib).hvp(lambda a: a.exp(), x)
    np.testing.assert_allclose(d.item(), np.exp(0.4), rtol=1e-12)


def test_unused_input_gives_zeros(lib):
    x, y = T(lib, rnd(3, seed=40)), T(lib, rnd(2, seed=41))
    jac = F(lib).jacobian(lambda a, b: a * 2, (x, y))
    assert structure(jac) == ("T", "T")
    np.testing.assert_array_equal(to_numpy(jac[1]), np.zeros((3, 2)))
    np.testing.assert_array_equal(to_numpy(jac[0]), 2 * np.eye(3))
    _, vjp = F(lib).vjp(lambda a, b: a * 2, (x, y), T(lib, np.ones(3)))
    np.testing.assert_array_equal(to_numpy(vjp[1]), np.zeros(2))
    H = F(lib).hessian(lambda a, b: (a * a).sum(), (x, y))
    np.testing.assert_array_equal(to_numpy(H[1][1]), np.zeros((2, 2)))
    np.testing.assert_array_equal(to_numpy(H[0][0]), 2 * np.eye(3))


def test_create_graph_results_are_differentiable(lib):
    xa = rnd(3, seed=42)
    x = T(lib, xa, requires_grad=True)
    out, jvp = F(lib).jvp(lambda a: a.exp() * a, x, T(lib, np.ones(3)), create_graph=True)
    assert out.requires_grad and jvp.requires_grad
    # d/dx sum(jvp) with jvp = (x + 1) e^x: (x + 2) e^x
    (g,) = lib.autograd.grad(jvp.sum(), x)
    np.testing.assert_allclose(to_numpy(g), (xa + 2) * np.exp(xa), rtol=1e-10)

    H = F(lib).hessian(lambda a: (a.exp()).sum(), x, create_graph=True)
    assert H.requires_grad
    (g,) = lib.autograd.grad(H.sum(), x)
    np.testing.assert_allclose(to_numpy(g), np.exp(xa), rtol=1e-10)

    out, vjp = F(lib).vjp(lambda a: a * a, x, T(lib, np.ones(3)))
    assert not out.requires_grad and not vjp.requires_grad
    J = F(lib).jacobian(lambda a: a * a, x, create_graph=True)
    assert J.requires_grad
    J = F(lib).jacobian(lambda a: a * a, x)
    assert not J.requires_grad and J.grad_fn is None


# ---- errors (also run on torch) ---------------------------------------------------------


def test_strict_errors(lib):
    fn = F(lib)
    x, y = T(lib, rnd(3, seed=50)), T(lib, rnd(3, seed=51))
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not"):
        fn.vjp(lambda a: a.detach(), x, T(lib, np.ones(3)), strict=True)
    with pytest.raises(
        RuntimeError, match="is independent of input 1. This is not allowed in strict"
    ):
        fn.vjp(lambda a, b: a * 2, (x, y), T(lib, np.ones(3)), strict=True)
    with pytest.raises(
        RuntimeError, match="Output 0 of the user-provided function is independent of input 1"
    ):
        fn.jacobian(lambda a, b: a * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1. This is not allowed in strict"):
        fn.jvp(lambda a, b: a * 2, (x, y), (x, y), strict=True)
    with pytest.raises(
        RuntimeError,
        match="jacobian of the user-provided function with respect to input 0 is independent",
    ):
        fn.hessian(lambda a: a.sum() * 2, x, strict=True)
    with pytest.raises(
        RuntimeError,
        match="jacobian of the user-provided function with respect to input 0 is independent",
    ):
        fn.vhp(lambda a: a.sum() * 2, x, x, strict=True)
    with pytest.raises(
        RuntimeError,
        match="jacobian of the user-provided function is independent of input 0. This is not allowed in strict mode when create_graph=True",
    ):
        fn.jacobian(lambda a: a * 2, x, strict=True, create_graph=True)
    # Non-strict: the mathematical zeros.
    _, vjp = fn.vjp(lambda a, b: a * 2, (x, y), T(lib, np.ones(3)))
    np.testing.assert_array_equal(to_numpy(vjp[1]), np.zeros(3))
    _, hvp = fn.hvp(lambda a: a.sum() * 2, x, x)
    np.testing.assert_array_equal(to_numpy(hvp), np.zeros(3))


def test_argument_errors(lib):
    fn = F(lib)
    x = T(lib, rnd(3, seed=52))
    with pytest.raises(
        TypeError,
        match="The inputs given to vjp must be either a Tensor or a tuple of Tensors but the value at index 1",
    ):
        fn.vjp(lambda a, b: a, (x, 2.0), x)
    with pytest.raises(
        TypeError,
        match="The inputs given to jacobian must be either a Tensor or a tuple of Tensors but the given inputs has type",
    ):
        fn.jacobian(lambda a: a, [x])
    with pytest.raises(
        TypeError, match="outputs of the user-provided function given to jvp must be"
    ):
        fn.jvp(lambda a: 3.0, x, x)
    with pytest.raises(
        RuntimeError,
        match="The vector v can only be None if the user-provided function returns a single Tensor with a single element.",
    ):
        fn.vjp(lambda a: a * 2, x)
    with pytest.raises(
        RuntimeError,
        match="The vector v can only be None if the input to the user-provided function is a single Tensor with a single element.",
    ):
        fn.jvp(lambda a: a * 2, x)
    with pytest.raises(
        RuntimeError,
        match=r"v has invalid size: should be torch.Size\(\[3\]\)|v has invalid size: should be",
    ):
        fn.vjp(lambda a: a * 2, x, T(lib, np.ones(2)))
    with pytest.raises(
        RuntimeError, match="v is a tuple of invalid length: should be 2 but got 1."
    ):
        fn.jvp(lambda a, b: a * b, (x, x), (x,))
    with pytest.raises(RuntimeError, match="The given v should contain a single Tensor."):
        fn.vjp(lambda a: a * 2, x, (x, x))
    with pytest.raises(RuntimeError, match="Entry 1 in v has invalid size"):
        fn.jvp(lambda a, b: a * b, (x, x), (x, T(lib, np.ones(2))))
    with pytest.raises(
        RuntimeError, match="The function given to hessian should return a single Tensor"
    ):
        fn.hessian(lambda a: (a.sum(), a.sum()), x)
    with pytest.raises(
        RuntimeError,
        match="The Tensor returned by the function given to hessian should contain a single element",
    ):
        fn.hessian(lambda a: a * 2, x)
    with pytest.raises(
        RuntimeError, match="The function given to vhp should return a single Tensor"
    ):
        fn.vhp(lambda a: (a.sum(),), x, x)
    with pytest.raises(
        RuntimeError,
        match="The Tensor returned by the function given to hvp should contain a single element",
    ):
        fn.hvp(lambda a: a * 2, x, x)


def test_strategy_errors(lib):
    fn = F(lib)
    x = T(lib, rnd(3, seed=53))
    with pytest.raises(
        AssertionError,
        match='Expected strategy to be either "forward-mode" or "reverse-mode". Hint',
    ):
        fn.jacobian(lambda a: a, x, strategy="sideways")
    with pytest.raises(
        AssertionError, match='Expected strategy to be either "forward-mode" or "reverse-mode".'
    ):
        fn.hessian(lambda a: a.sum(), x, outer_jacobian_strategy="sideways")
    with pytest.raises(
        NotImplementedError,
        match='`create_graph=True` and `strategy="forward-mode"` are not supported together',
    ):
        fn.jacobian(lambda a: a, x, strategy="forward-mode", create_graph=True)
    with pytest.raises(
        RuntimeError, match='`strict=True` and `strategy="forward-mode"` are not supported together'
    ):
        fn.jacobian(lambda a: a, x, strategy="forward-mode", strict=True)
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        fn.jacobian(lambda a: a, x, strategy="forward-mode")
    with pytest.raises(
        RuntimeError, match="`strict=True` and `vectorized=True` are not supported together"
    ):
        fn.jacobian(lambda a: a, x, strict=True, vectorize=True)


def test_forward_mode_strategy():
    lib = ferrograd
    xa = rnd(3, seed=54)
    fn = F(lib)
    if hasattr(lib.autograd, "forward_ad"):
        J = fn.jacobian(f_single, T(lib, xa), vectorize=True, strategy="forward-mode")
        ref = fn.jacobian(f_single, T(lib, xa))
        np.testing.assert_allclose(to_numpy(J), to_numpy(ref), rtol=1e-12)
        H = fn.hessian(s_single, T(lib, xa), vectorize=True, outer_jacobian_strategy="forward-mode")
        np.testing.assert_allclose(
            to_numpy(H), to_numpy(fn.hessian(s_single, T(lib, xa))), rtol=1e-10
        )
    else:
        with pytest.raises(NotImplementedError, match="forward-mode AD"):
            fn.jacobian(f_single, T(lib, xa), vectorize=True, strategy="forward-mode")
        with pytest.raises(NotImplementedError, match="forward-mode AD"):
            fn.hessian(s_single, T(lib, xa), vectorize=True, outer_jacobian_strategy="forward-mode")


def test_user_tensors_untouched(lib):
    x = T(lib, rnd(3, seed=55))
    F(lib).hessian(s_single, x)
    F(lib).vjp(f_single, x, x)
    assert not x.requires_grad and x.grad is None


# ---- against torch.autograd.functional ------------------------------------------------

ORACLE_CASES = [
    ("jacobian_single", "jacobian", f_single, [(3, 2)], {}),
    ("jacobian_vectorize", "jacobian", f_two_in_two_out, [(2,), (2,)], {"vectorize": True}),
    ("jacobian_tuple_in", "jacobian", f_two_in, [(3,), (3,)], {}),
    ("jacobian_tuple_out", "jacobian", f_two_out, [(2, 2)], {}),
    ("jacobian_both", "jacobian", f_two_in_two_out, [(2,), (2,)], {}),
    ("jacobian_create_graph", "jacobian", f_two_in, [(3,), (3,)], {"create_graph": True}),
    ("hessian_single", "hessian", s_single, [(2, 2)], {}),
    ("hessian_tuple", "hessian", s_two, [(2,), (2,)], {}),
    ("hessian_vectorize", "hessian", s_two, [(2,), (2,)], {"vectorize": True}),
    ("hessian_create_graph", "hessian", s_two, [(2,), (2,)], {"create_graph": True}),
    ("vjp_single", "vjp", f_single, [(3, 2)], {"v": "out"}),
    ("vjp_tuple", "vjp", f_two_in_two_out, [(2,), (2,)], {"v": "out"}),
    ("vjp_create_graph", "vjp", f_two_in, [(3,), (3,)], {"v": "out", "create_graph": True}),
    ("jvp_single", "jvp", f_reduce, [(2, 3)], {"v": "in"}),
    ("jvp_tuple", "jvp", f_two_in_two_out, [(2,), (2,)], {"v": "in"}),
    ("jvp_create_graph", "jvp", f_two_out, [(2, 2)], {"v": "in", "create_graph": True}),
    ("vhp_single", "vhp", s_single, [(3,)], {"v": "in"}),
    ("vhp_tuple", "vhp", s_two, [(2,), (2,)], {"v": "in"}),
    ("hvp_single", "hvp", s_single, [(3,)], {"v": "in"}),
    ("hvp_tuple", "hvp", s_two, [(2,), (2,)], {"v": "in", "create_graph": True}),
]


def run_case(lib, api, fn, shapes, kw, seed, inputs_require_grad=False):
    arrays = [rnd(*s, seed=seed + k) for k, s in enumerate(shapes)]
    inputs = tuple(T(lib, a, inputs_require_grad) for a in arrays)
    inp = inputs if len(inputs) > 1 else inputs[0]
    kw = dict(kw)
    if kw.get("v") == "in":
        vs = tuple(T(lib, rnd(*s, seed=seed + 50 + k)) for k, s in enumerate(shapes))
        kw["v"] = vs if len(vs) > 1 else vs[0]
    elif kw.get("v") == "out":
        outs = fn(*inputs)
        outs_t = outs if isinstance(outs, tuple) else (outs,)
        vs = tuple(T(lib, rnd(*tuple(o.shape), seed=seed + 80 + k)) for k, o in enumerate(outs_t))
        kw["v"] = vs if isinstance(outs, tuple) else vs[0]
    return getattr(F(lib), api)(fn, inp, **kw)


@pytest.mark.parametrize("name,api,fn,shapes,kw", ORACLE_CASES, ids=[c[0] for c in ORACLE_CASES])
def test_against_torch(torch, name, api, fn, shapes, kw):
    for rg in (False, True):
        ref = run_case(torch, api, fn, shapes, kw, seed=60, inputs_require_grad=rg)
        got = run_case(ferrograd, api, fn, shapes, kw, seed=60, inputs_require_grad=rg)
        assert_close_tree(got, ref)


def test_nesting_matches_torch(torch):
    """The nesting of every result: tensor, tuple, or tuple of tuples."""
    cases = [
        ("jacobian", lambda a: a * 2, 1, {}),
        ("jacobian", lambda a, b: a * b, 2, {}),
        ("jacobian", lambda a: (a * 2, a.sum()), 1, {}),
        ("jacobian", lambda a, b: (a * b, (a + b).sum()), 2, {}),
        ("jacobian", lambda a: (a * 2,), 1, {}),  # a 1-tuple output stays a tuple
        ("hessian", lambda a: (a * a).sum(), 1, {}),
        ("hessian", lambda a, b: (a * b).sum(), 2, {}),
        ("vjp", lambda a: (a * 2,), 1, {"v": "out"}),
        ("vjp", lambda a, b: a * b, 2, {"v": "out"}),
        ("jvp", lambda a: (a * 2, a * 3), 1, {"v": "in"}),
        ("jvp", lambda a, b: a * b, 2, {"v": "in"}),
        ("vhp", lambda a, b: (a * b).sum(), 2, {"v": "in"}),
        ("hvp", lambda a: (a * a).sum(), 1, {"v": "in"}),
    ]
    for api, fn, n_in, kw in cases:
        shapes = [(3,)] * n_in
        ref = run_case(torch, api, fn, shapes, kw, seed=70)
        got = run_case(ferrograd, api, fn, shapes, kw, seed=70)
        assert structure(got) == structure(ref), (api, structure(got), structure(ref))
        assert_close_tree(got, ref)
    # A 1-tuple input is kept as a tuple too.
    for lib_res in (
        F(torch).jacobian(lambda a: a * 2, (T(torch, np.ones(2)),)),
        F(ferrograd).jacobian(lambda a: a * 2, (T(ferrograd, np.ones(2)),)),
    ):
        assert structure(lib_res) == ("T",)


# ---- strategy="forward-mode" on torch's engine -------------------------------------
# functional.py's forward-mode code runs on forward_ad, which ferrograd does not
# have yet: run the module's own code with torch in place of ferrograd.


def test_port_forward_mode_jacobian_and_hessian(torch):
    from helpers import torch_port

    port = torch_port("functional")
    for fn, shapes in (
        (f_single, [(3, 2)]),
        (f_two_in, [(3,), (3,)]),
        (f_two_out, [(2, 2)]),
        (f_two_in_two_out, [(2,), (2,)]),
    ):
        inputs = tuple(T(torch, rnd(*s, seed=90 + k)) for k, s in enumerate(shapes))
        inp = inputs if len(inputs) > 1 else inputs[0]
        kw = {"vectorize": True, "strategy": "forward-mode"}
        got = port.jacobian(fn, inp, **kw)
        assert_close_tree(got, torch.autograd.functional.jacobian(fn, inp, **kw))
        # Same values as reverse mode (which nests in tuples, not lists).
        rev = torch.autograd.functional.jacobian(fn, inp)
        for g, r in zip(flat(got), flat(rev), strict=True):
            np.testing.assert_allclose(to_numpy(g), to_numpy(r), rtol=1e-10, atol=1e-12)
    for fn, shapes in ((s_single, [(3,)]), (s_two, [(2,), (2,)])):
        inputs = tuple(T(torch, rnd(*s, seed=95 + k)) for k, s in enumerate(shapes))
        inp = inputs if len(inputs) > 1 else inputs[0]
        kw = {"vectorize": True, "outer_jacobian_strategy": "forward-mode"}
        got = port.hessian(fn, inp, **kw)
        assert_close_tree(got, torch.autograd.functional.hessian(fn, inp, **kw))
