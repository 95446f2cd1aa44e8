"""Helpers shared by the Python tests.

* Tensor builders (``f64``, ``leaf``), value readers and comparisons
  (``to_numpy``, ``vals``, ``close``, ``same``) and small custom Functions
  (``square_function``, ``two_output_function``) several test files use.
* ``require``: skips a test ("not implemented yet") unless the library has
  the named attributes; ``raises``: the exception type and the start of its
  message. Torch availability is the ``torch`` fixture (skips
  when torch is absent) in conftest.py; ``lib`` there runs a test on
  ferrograd and on torch.
* A plain float64 central-difference gradient checker for registry samples
  (``gradcheck``, ``gradgradcheck``), independent of the library under test
  except for running its forward and backward: for a function ``f`` of
  tensors ``x_1..x_n`` with outputs ``y_1..y_m`` and a random upstream
  gradient ``v``, the analytical vector-Jacobian products
  ``d(sum_k <y_k, v_k>)/dx_i`` (from the library's autograd) are compared
  with central differences of ``sum_k <y_k(x + eps e_j), v_k>`` for every
  element ``j`` of every input, all arithmetic of the numerical side in
  numpy. ``autograd_gradcheck`` and ``forward_tangents`` run the library's
  own checkers and forward AD on the same samples; ``torch_port`` runs
  ferrograd's autograd modules on torch's engine.

Everything that builds tensors takes the library under test (``lib``:
ferrograd or torch), so the same test code runs on both.
"""

from __future__ import annotations

import math

import numpy as np

from op_registry import Arg, build_args, make_tensor, outputs_of

# ---- tensors --------------------------------------------------------------


def f64(lib, values, requires_grad=False, dtype=None):
    """A float64 (or ``dtype``) tensor holding ``values`` (nested lists or a
    numpy array)."""
    return lib.tensor(values, dtype=dtype or lib.float64, requires_grad=requires_grad)


def leaf(lib, values, requires_grad=True, dtype=None):
    """``f64`` as a leaf that requires grad (unless told otherwise)."""
    return f64(lib, values, requires_grad=requires_grad, dtype=dtype)


# ---- reading and comparing values -----------------------------------------


def to_numpy(t) -> np.ndarray:
    """A tensor's values as a numpy array (float64 for float tensors)."""
    t = t.detach()
    for attr in ("numpy", "tolist"):
        f = getattr(t, attr, None)
        if f is not None:
            try:
                return np.array(f())
            except Exception:
                pass
    # Fallback for a front end without numpy()/tolist(): element by element.
    shape = tuple(t.shape)
    flat = t.reshape(-1)
    vals = [flat.select(0, i).item() for i in range(int(np.prod(shape, dtype=np.int64)))]
    return np.array(vals).reshape(shape)


def dtype_name(t) -> str:
    return str(t.dtype).rsplit(".", 1)[-1]


def is_float(t) -> bool:
    return dtype_name(t) in ("float32", "float64", "float16", "bfloat16")


def vals(t):
    """A tensor's values as (nested) Python lists."""
    return t.tolist()


def close(t, expected, rtol=1e-12):
    """Asserts ``t`` (a tensor or array-like) equals ``expected`` (the same)
    within ``rtol``."""
    if hasattr(expected, "detach"):
        expected = to_numpy(expected)
    if hasattr(t, "detach"):
        t = to_numpy(t)
    np.testing.assert_allclose(t, np.asarray(expected, dtype=np.float64), rtol=rtol)


def same(a, b, signed_zero=False) -> bool:
    """Whether ``a`` and ``b`` (array-likes) have the same shape and values,
    NaN equal to NaN; with ``signed_zero`` the sign of a zero counts too."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return False
    if not signed_zero:
        return bool(np.array_equal(a, b, equal_nan=True))
    return all(
        (math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(1, y))
        for x, y in zip(a.ravel(), b.ravel())
    )


# ---- custom Functions -----------------------------------------------------


def unary_function(lib, forward, grad, once_differentiable=False, name="Unary"):
    """A custom Function class ``name`` computing ``forward(x)`` that saves
    ``x`` for its hand-written backward ``grad(x, g)``; ``once_differentiable``
    marks the backward so."""

    def fw(ctx, x):
        ctx.save_for_backward(x)
        return forward(x)

    def bw(ctx, g):
        (x,) = ctx.saved_tensors
        return grad(x, g)

    if once_differentiable:
        bw = lib.autograd.function.once_differentiable(bw)
    body = {"forward": staticmethod(fw), "backward": staticmethod(bw)}
    return type(name, (lib.autograd.Function,), body)


def square_function(lib, grad=None, once_differentiable=False):
    """``x * x`` with backward ``2 * x * g``, or ``grad(x, g)`` where given
    (a wrong one, for the checkers to catch)."""
    grad = grad or (lambda x, g: 2 * x * g)
    return unary_function(lib, lambda x: x * x, grad, once_differentiable, name="Square")


def cube_function(lib, grad=None):
    """``x * x * x`` with backward ``3 * x * x * g``, or ``grad(x, g)``."""
    grad = grad or (lambda x, g: 3 * x * x * g)
    return unary_function(lib, lambda x: x * x * x, grad, name="Cube")


def view_out(lib):
    """A custom Function returning a view of its input (``x.view_as(x)``),
    backward the identity: its output is a view torch restricts in place."""

    class ViewOut(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return g

    return ViewOut


def wrong_jvp_square(lib):
    """A custom Function computing ``x * x`` whose forward-mode derivative
    is wrong (``t * x``, not ``2 * x * t``); its backward must not run."""

    class BadJvp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            raise AssertionError("not used")

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return t * x  # should be 2 * x * t

    return BadJvp


def two_output_function(lib, materialize_grads=True, on_all_undefined="none"):
    """A custom Function with two outputs (x * 2, x * 3) of a 3-element x:
    when only one is used, the other's gradient is undefined while its node
    runs. With ``materialize_grads=False`` the backward gets None for it;
    where both are None it raises (``on_all_undefined="raise"``), returns
    ones (``"ones"``: wrong) or None (``"none"``)."""

    class TwoOut(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if not materialize_grads:
                ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            if ga is None and gb is None:
                if on_all_undefined == "raise":
                    raise RuntimeError("undefined gradient")
                if on_all_undefined == "ones":
                    return lib.ones(3, dtype=lib.float64)
                return None
            out = None
            for g, k in ((ga, 2), (gb, 3)):
                if g is not None:
                    out = g * k if out is None else out + g * k
            return out

    return TwoOut


# ---- library features -----------------------------------------------------


def require(lib, *names):
    """Skips the current test ("not implemented yet") unless ``lib`` has all
    the given attribute paths (``"Tensor.register_hook"``, ``"matmul"``)."""
    import pytest

    from op_registry import has_attr_path

    missing = [n for n in names if not has_attr_path(lib, n)]
    if missing:
        pytest.skip(f"not implemented yet: {', '.join(missing)}")


def raises(f, exc, start):
    """Asserts that ``f()`` raises ``exc`` with a message starting with ``start``."""
    import pytest

    with pytest.raises(exc) as info:
        f()
    assert str(info.value).startswith(start), str(info.value)


# ---- gradients by central differences (registry samples) ------------------


EPS = 1e-6
ATOL = 1e-5
RTOL = 1e-3


def float_outputs(result) -> list:
    return [o for o in outputs_of(result) if is_float(o)]


def upstream_grads(outputs: list, seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(tuple(o.shape)) for o in outputs]


def _pairing(outputs: list, vs: list) -> float:
    return float(sum((to_numpy(o).astype(np.float64) * v).sum() for o, v in zip(outputs, vs)))


def analytical_vjp(lib, fn, sample, arrays, vs, create_graph=False):
    """(outputs, leaves, grads) with grads[i] the library's VJP for input i
    (zeros where the input is unused)."""
    args, kwargs, leaves = build_args(lib, sample, arrays)
    outs = float_outputs(fn(lib, *args, **kwargs))
    pairs = [(o, v) for o, v in zip(outs, vs) if o.requires_grad]
    if not pairs or not leaves:
        return outs, leaves, [np.zeros(a.shape) for a in arrays]
    grads = lib.autograd.grad(
        [o for o, _ in pairs],
        leaves,
        grad_outputs=[make_tensor(lib, v) for _, v in pairs],
        allow_unused=True,
        create_graph=create_graph,
    )
    out = []
    for g, leaf, a in zip(grads, leaves, arrays):
        if g is None:
            out.append(np.zeros(a.shape))
            continue
        assert tuple(g.shape) == tuple(leaf.shape), (
            f"gradient shape {tuple(g.shape)} != input shape {tuple(leaf.shape)}"
        )
        assert dtype_name(g) == dtype_name(leaf), (
            f"gradient dtype {dtype_name(g)} != input dtype {dtype_name(leaf)}"
        )
        out.append(to_numpy(g))
    return outs, leaves, out


def numerical_vjp(lib, fn, sample, arrays, vs, eps=EPS):
    """Central differences of <f(x), v> with respect to every input element."""
    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros(a.shape)
        for j in np.ndindex(*a.shape) if a.ndim else [()]:
            vals = []
            for step in (eps, -eps):
                perturbed = [b.copy() for b in arrays]
                perturbed[i][j] += step
                args, kwargs, _ = build_args(lib, sample, perturbed)
                vals.append(_pairing(float_outputs(fn(lib, *args, **kwargs)), vs))
            g[j] = (vals[0] - vals[1]) / (2 * eps)
        grads.append(g)
    return grads


def gradcheck(lib, fn, sample, arrays, seed=0, atol=ATOL, rtol=RTOL):
    """Raises AssertionError with a readable message when the library's
    gradients disagree with central differences."""
    args, kwargs, _ = build_args(lib, sample, arrays)
    outs = float_outputs(fn(lib, *args, **kwargs))
    assert outs, "op produced no floating-point output"
    vs = upstream_grads(outs, seed)
    _, _, analytical = analytical_vjp(lib, fn, sample, arrays, vs)
    numerical = numerical_vjp(lib, fn, sample, arrays, vs)
    for i, (an, nu) in enumerate(zip(analytical, numerical)):
        if not np.allclose(an, nu, atol=atol, rtol=rtol):
            err = np.max(np.abs(an - nu))
            raise AssertionError(
                f"gradient of input {i} (shape {arrays[i].shape}) differs from central "
                f"differences by up to {err:.3g}\nanalytical:\n{an}\nnumerical:\n{nu}"
            )


def gradgradcheck(lib, fn, sample, arrays, seed=0, atol=ATOL, rtol=RTOL):
    """gradcheck of the first-order VJP (with a fixed upstream gradient):
    checks that backward formulas are themselves differentiable and right."""
    args, kwargs, _ = build_args(lib, sample, arrays)
    outs = float_outputs(fn(lib, *args, **kwargs))
    vs = upstream_grads(outs, seed)

    def first_order(lib, *args, **kwargs):
        leaves = [a for a in args if _is_tensor(lib, a) and a.requires_grad]
        outs = float_outputs(fn(lib, *args, **kwargs))
        pairs = [(o, v) for o, v in zip(outs, vs) if o.requires_grad]
        if not pairs:
            return ()
        grads = lib.autograd.grad(
            [o for o, _ in pairs],
            leaves,
            grad_outputs=[make_tensor(lib, v) for _, v in pairs],
            allow_unused=True,
            create_graph=True,
        )
        return tuple(g for g in grads if g is not None)

    if not float_outputs(first_order(lib, *args, **kwargs)):
        return  # linear in every input with no gradient at all: nothing to check
    gradcheck(lib, first_order, sample, arrays, seed=seed + 1, atol=atol, rtol=rtol)


def autograd_gradcheck(
    lib, fn, sample, arrays, seed=0, second_order=False, fast_mode=False, forward_ad=False
):
    """Runs ``lib.autograd.gradcheck`` (or ``gradgradcheck``) on a registry
    sample: the function takes the sample's differentiated leaves
    positionally and returns its floating-point outputs. A failure (the
    library's GradcheckError) is re-raised as AssertionError with its message.
    """
    args, kwargs, leaves = build_args(lib, sample, arrays)
    positions = [k for k, a in enumerate(sample.args) if isinstance(a, Arg)]

    def func(*xs):
        full = list(args)
        for p, x in zip(positions, xs):
            full[p] = x
        return tuple(float_outputs(fn(lib, *full, **kwargs)))

    from importlib import import_module

    GradcheckError = import_module(lib.__name__ + ".autograd.gradcheck").GradcheckError
    check = lib.autograd.gradgradcheck if second_order else lib.autograd.gradcheck
    with lib.random.fork_rng():
        lib.manual_seed(seed)
        try:
            extra = {"check_forward_ad": True, "check_backward_ad": False} if forward_ad else {}
            assert check(func, tuple(leaves), fast_mode=fast_mode, **extra) is True
        except GradcheckError as e:
            kind = "gradgradcheck" if second_order else "gradcheck"
            mode = " (fast_mode)" if fast_mode else ""
            raise AssertionError(f"autograd.{kind}{mode} failed: {e}") from None


def _is_tensor(lib, a) -> bool:
    return isinstance(a, lib.Tensor)


def torch_port(name: str):
    """ferrograd's ``autograd/<name>.py`` (gradcheck or functional) with
    ``ferrograd`` replaced by ``torch``: the same code driven by torch's
    engine. Lets the tests run code paths ferrograd cannot take yet (forward
    AD) against a real implementation of the API they are written for."""
    import os
    import re
    import sys
    import types

    import ferrograd

    path = os.path.join(os.path.dirname(ferrograd.__file__), "autograd", f"{name}.py")
    with open(path) as f:
        src = f.read()
    assert "import ferrograd as torch" in src
    for old, new in (
        ("import ferrograd as torch", "import torch"),
        ("from . import forward_ad", "from torch.autograd import forward_ad"),
        ("from .function import Function", "from torch.autograd.function import Function"),
    ):
        src = src.replace(old, new)
    # Sibling modules it imports (gradcheck's ``_gradcheck_jacobians``) are ported too.
    for sibling in sorted(set(re.findall(r"^\s*from \.(\w+) import", src, re.M))):
        torch_port(sibling)
        src = src.replace(f"from .{sibling} import", f"from _ferrograd_torch_port_{sibling} import")
    assert "import ferrograd" not in src and "from ." not in src, "unported import"
    mod_name = f"_ferrograd_torch_port_{name}"
    mod = types.ModuleType(mod_name)
    mod.__file__ = path
    sys.modules[mod_name] = mod
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


def forward_tangents(lib, fn, sample, arrays, tangents):
    """Forward-mode AD: the tangents of ``fn``'s floating outputs when its
    differentiated leaves carry ``tangents`` (numpy arrays), as numpy arrays."""
    from importlib import import_module

    fwAD = import_module(lib.__name__ + ".autograd.forward_ad")
    args, kwargs, leaves = build_args(lib, sample, arrays)
    positions = [k for k, a in enumerate(sample.args) if isinstance(a, Arg)]
    with fwAD.dual_level():
        full = list(args)
        for p, leaf, t in zip(positions, leaves, tangents):
            tangent = lib.tensor(t, dtype=lib.float64)
            full[p] = fwAD.make_dual(leaf.detach(), tangent)
        outs = float_outputs(fn(lib, *full, **kwargs))
        result = []
        for o in outs:
            t = fwAD.unpack_dual(o).tangent
            result.append(np.zeros(tuple(o.shape)) if t is None else to_numpy(t))
    return result


def no_vmap_fallback(f, *args, **kw):
    """``f(*args, **kw)`` failing on vmap's fallback warning (the one-time
    record of warned ops is cleared first, so that every fallback warns)."""
    import warnings

    from ferrograd.func import _vmap

    warned = set(_vmap._warned)
    _vmap._warned.clear()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            return f(*args, **kw)
    finally:
        _vmap._warned.update(warned)
