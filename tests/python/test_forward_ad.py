"""Forward-mode AD (``autograd.forward_ad``): levels, dual tensors, views,
in-place ops, custom Function ``jvp``, forward-over-reverse.

Tests taking ``lib`` run on ferrograd and (when installed) on torch with the
same code, so torch checks the expectations themselves; per-op tangents are
checked for every registry op in test_registry.py.
"""

import importlib

import numpy as np
import pytest

import ferrograd
from helpers import to_numpy, wrong_jvp_square


def fw(lib):
    return importlib.import_module(lib.__name__ + ".autograd.forward_ad")


def f64(lib, values, **kw):
    return lib.tensor(values, dtype=lib.float64, **kw)


def test_make_dual_and_unpack(lib):
    fwAD = fw(lib)
    x, t = f64(lib, [0.5, -1.0, 2.0]), f64(lib, [1.0, 2.0, 3.0])
    with fwAD.dual_level() as level:
        assert level == 0
        d = fwAD.make_dual(x, t)
        assert d is not x and d.data_ptr() == x.data_ptr()
        assert fwAD.unpack_dual(x).tangent is None  # x itself is untouched
        u = fwAD.unpack_dual(d)
        assert type(u).__name__ == "UnpackedDualTensor" and u._fields == ("primal", "tangent")
        np.testing.assert_array_equal(to_numpy(u.primal), to_numpy(x))
        np.testing.assert_array_equal(to_numpy(u.tangent), [1.0, 2.0, 3.0])
        assert fwAD.unpack_dual(u.primal).tangent is None
        y = d.sin() * d
        yt = fwAD.unpack_dual(y).tangent
        xs = to_numpy(x)
        np.testing.assert_allclose(to_numpy(yt), (np.cos(xs) * xs + np.sin(xs)) * [1, 2, 3])
    assert fwAD.unpack_dual(y).tangent is None  # tangents die with the level


def test_decorator_and_explicit_levels(lib):
    fwAD = fw(lib)

    @fwAD.dual_level()
    def run():
        d = fwAD.make_dual(f64(lib, [2.0]), f64(lib, [1.0]))
        return to_numpy(fwAD.unpack_dual(d * d).tangent)

    np.testing.assert_array_equal(run(), [4.0])
    level = fwAD.enter_dual_level()
    d = fwAD.make_dual(f64(lib, [3.0]), f64(lib, [1.0]))
    np.testing.assert_array_equal(to_numpy(fwAD.unpack_dual(d.exp()).tangent), [np.exp(3.0)])
    fwAD.exit_dual_level(level=level)
    assert fwAD.unpack_dual(d).tangent is None


def test_errors(lib):
    fwAD = fw(lib)
    x = f64(lib, [1.0, 2.0])
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="different size"):
            fwAD.make_dual(x, f64(lib, [1.0, 2.0, 3.0]))
        with pytest.raises(ValueError, match="floating point"):
            fwAD.make_dual(lib.tensor([1, 2]), lib.tensor([1, 2]))


def test_tangent_outside_level_is_none(lib):
    fwAD = fw(lib)
    u = fwAD.unpack_dual(f64(lib, [1.0]))
    assert u.tangent is None


def test_views_share_the_tangent(lib):
    fwAD = fw(lib)
    x = f64(lib, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    t = f64(lib, [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        col = d[:, 1]
        np.testing.assert_allclose(to_numpy(fwAD.unpack_dual(col).tangent), [0.2, 0.5])
        tt = fwAD.unpack_dual(d.t()).tangent
        np.testing.assert_allclose(to_numpy(tt), to_numpy(t).T)
        # writing through the view's tangent is seen by the base's tangent
        fwAD.unpack_dual(col).tangent.mul_(10)
        np.testing.assert_allclose(to_numpy(fwAD.unpack_dual(d).tangent)[:, 1], [2.0, 5.0])


def test_inplace_on_view_gives_the_base_a_tangent(lib):
    fwAD = fw(lib)
    with fwAD.dual_level():
        b = lib.zeros(4, dtype=lib.float64)
        v = b[:2]
        v.copy_(fwAD.make_dual(f64(lib, [1.0, 1.0]), f64(lib, [5.0, 5.0])))
        np.testing.assert_array_equal(to_numpy(fwAD.unpack_dual(b).tangent), [5, 5, 0, 0])
        w = b[1:]
        b.mul_(2)
        np.testing.assert_array_equal(to_numpy(fwAD.unpack_dual(w).tangent), [10, 0, 0])
        np.testing.assert_array_equal(to_numpy(fwAD.unpack_dual(v).tangent), [10, 10])


def test_inplace_ops_update_the_tangent(lib):
    fwAD = fw(lib)
    with fwAD.dual_level():
        d = fwAD.make_dual(f64(lib, [1.0, 2.0]), f64(lib, [1.0, 1.0]))
        y, z = d.clone(), d.clone()
        y.mul_(z)  # tangent t * z + y * t
        np.testing.assert_array_equal(to_numpy(fwAD.unpack_dual(y).tangent), [2.0, 4.0])
        y.exp_()
        np.testing.assert_allclose(
            to_numpy(fwAD.unpack_dual(y).tangent), np.exp([1.0, 4.0]) * [2.0, 4.0]
        )
        y.fill_(3.0)
        np.testing.assert_array_equal(to_numpy(fwAD.unpack_dual(y).tangent), [0.0, 0.0])


def test_non_differentiable_outputs_have_no_tangent(lib):
    fwAD = fw(lib)
    with fwAD.dual_level():
        d = fwAD.make_dual(f64(lib, [[1.0, 5.0], [7.0, 2.0]]), f64(lib, [[1.0, 2.0], [3.0, 4.0]]))
        values, indices = d.max(dim=1)
        np.testing.assert_array_equal(to_numpy(fwAD.unpack_dual(values).tangent), [2.0, 3.0])
        assert fwAD.unpack_dual(indices).tangent is None
        assert fwAD.unpack_dual(d > 2).tangent is None


def test_works_under_no_grad(lib):
    fwAD = fw(lib)
    with fwAD.dual_level(), lib.no_grad():
        d = fwAD.make_dual(f64(lib, [2.0]), f64(lib, [1.0]))
        np.testing.assert_array_equal(to_numpy(fwAD.unpack_dual(d**3).tangent), [12.0])


def test_forward_over_reverse_hvp(lib):
    """Hessian-vector product as the tangent of a gradient."""
    fwAD = fw(lib)
    xs = np.array([0.3, -0.2, 0.5])
    v = np.array([1.0, 0.5, -1.0])
    with fwAD.dual_level():
        x = fwAD.make_dual(f64(lib, xs.tolist()).requires_grad_(), f64(lib, v.tolist()))
        (g,) = lib.autograd.grad((x.tanh() ** 2).sum(), x, create_graph=True)
        hv = to_numpy(fwAD.unpack_dual(g).tangent)
    # H of sum(tanh(x)^2) is diagonal: d2/dx2 tanh^2 = 2 sech^4 - 4 tanh^2 sech^2
    th, sech2 = np.tanh(xs), 1 - np.tanh(xs) ** 2
    np.testing.assert_allclose(hv, (2 * sech2**2 - 4 * th**2 * sech2) * v, rtol=1e-10)


def test_tangent_is_differentiable(lib):
    """Reverse over forward: the tangent carries a graph when grad mode is on."""
    fwAD = fw(lib)
    x = f64(lib, [1.0, 2.0], requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, f64(lib, [1.0, 1.0]))
        t = fwAD.unpack_dual((d * d * d).sum()).tangent  # sum(3 x^2)
        assert t.requires_grad
        (g,) = lib.autograd.grad(t, x)
    np.testing.assert_allclose(to_numpy(g), [6.0, 12.0])


def test_nested_levels_ferrograd_only():
    """ferrograd goes past torch here: levels nest (torch raises)."""
    fwAD = fw(ferrograd)
    with fwAD.dual_level() as outer:
        x = fwAD.make_dual(f64(ferrograd, [2.0]), f64(ferrograd, [1.0]), level=outer)
        with fwAD.dual_level() as inner:
            assert inner == outer + 1
            y = fwAD.make_dual(x, f64(ferrograd, [1.0]), level=inner)
            z = y**3
            d_inner = fwAD.unpack_dual(z, level=inner).tangent  # 3 y^2, carries outer tangent
            np.testing.assert_array_equal(to_numpy(d_inner), [12.0])
            # the outer tangent of the inner tangent: d/dx 3x^2 = 6x
            dd = fwAD.unpack_dual(d_inner, level=outer).tangent
            np.testing.assert_array_equal(to_numpy(dd), [12.0])
            with pytest.raises(RuntimeError, match="not the last one"):
                fwAD.exit_dual_level(level=outer)
        assert fwAD.unpack_dual(z, level=outer).tangent is not None


class MulK:
    @staticmethod
    def make(lib, with_jvp=True):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y, k):
                ctx.save_for_forward(x, y)
                ctx.k = k
                return x * y * k

            @staticmethod
            def backward(ctx, g):
                raise AssertionError("not used")

        if with_jvp:

            def jvp(ctx, tx, ty, tk):
                assert tk is None  # non-tensor argument
                x, y = ctx.saved_tensors
                return (tx * y + x * ty) * ctx.k

            F.jvp = staticmethod(jvp)
        return F


def test_custom_function_jvp(lib):
    fwAD = fw(lib)
    F = MulK.make(lib)
    with fwAD.dual_level():
        x = fwAD.make_dual(f64(lib, [1.0, 2.0]), f64(lib, [3.0, 3.0]))
        y = f64(lib, [2.0, 2.0])  # no tangent: jvp receives zeros
        out = F.apply(x, y, 5.0)
        np.testing.assert_array_equal(to_numpy(out), [10.0, 20.0])
        np.testing.assert_array_equal(to_numpy(fwAD.unpack_dual(out).tangent), [30.0, 30.0])


def test_custom_function_without_jvp_raises(lib):
    fwAD = fw(lib)
    F = MulK.make(lib, with_jvp=False)
    with fwAD.dual_level():
        x = fwAD.make_dual(f64(lib, [1.0]), f64(lib, [1.0]))
        with pytest.raises(NotImplementedError, match="must implement the jvp function"):
            F.apply(x, f64(lib, [1.0]), 2.0)
        # without tangents the Function runs as usual
        out = F.apply(f64(lib, [1.0]), f64(lib, [2.0]), 3.0)
        np.testing.assert_array_equal(to_numpy(out), [6.0])


def test_wrong_jvp_fails_gradcheck_forward_ad():
    Bad = wrong_jvp_square(ferrograd)
    x = f64(ferrograd, [0.5, 1.5], requires_grad=True)
    gc = ferrograd.autograd.gradcheck
    with pytest.raises(RuntimeError, match="Jacobian computed with forward mode mismatch"):
        gc(Bad.apply, (x,), check_forward_ad=True, check_backward_ad=False)
    assert not gc(
        Bad.apply, (x,), check_forward_ad=True, check_backward_ad=False, raise_exception=False
    )


def test_functional_jacobian_forward_mode_matches_reverse():
    F = ferrograd.autograd.functional
    x = f64(ferrograd, [0.1, 0.2, 0.3])

    def f(x):
        return (x.unsqueeze(0) * x.unsqueeze(1)).tanh().sum(0)

    jr = F.jacobian(f, x)
    jf = F.jacobian(f, x, vectorize=True, strategy="forward-mode")
    np.testing.assert_allclose(to_numpy(jf), to_numpy(jr), rtol=1e-12)
