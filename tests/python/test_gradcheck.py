"""autograd.gradcheck / autograd.gradgradcheck.

Tests taking the ``lib`` fixture run on ferrograd and (when installed) on
torch: torch validates the expectations. Tests of what ferrograd cannot do
yet (vmap, forward AD) run on ferrograd only.
"""

import importlib
import inspect
import re
import warnings

import numpy as np
import pytest

import ferrograd
from helpers import square_function, to_numpy, two_output_function, wrong_jvp_square


def gc_module(lib):
    return importlib.import_module(lib.__name__ + ".autograd.gradcheck")


def leaf(lib, arr, requires_grad=True, dtype=None):
    t = lib.tensor(np.asarray(arr, dtype=np.float64), dtype=dtype or lib.float64)
    return t.requires_grad_(requires_grad)


def rand_leaf(lib, *shape, seed=0, low=-1.0, high=1.0):
    rng = np.random.default_rng(seed)
    return leaf(lib, rng.uniform(low, high, shape))


# ---- custom Functions with known defects ----------------------------------


def square_fns(lib):
    """(correct, wrong first derivative, wrong second derivative) squares."""
    return (
        square_function(lib),
        square_function(lib, lambda x, g: g * x),  # should be 2 x
        # First derivative right, but computed off the graph: its own
        # derivative (the second derivative of x^2) comes out wrong.
        square_function(lib, lambda x, g: g * 2 * x.detach()),
    )


# ---- API surface -----------------------------------------------------------


def test_exports():
    from ferrograd.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck

    assert ferrograd.autograd.gradcheck is gradcheck
    assert ferrograd.autograd.gradgradcheck is gradgradcheck
    assert issubclass(GradcheckError, RuntimeError)
    assert callable(ferrograd.autograd.functional.jacobian)


def test_signatures_match_torch(torch):
    for name in ("gradcheck", "gradgradcheck"):
        ours = inspect.signature(getattr(ferrograd.autograd, name)).parameters
        theirs = inspect.signature(getattr(torch.autograd, name)).parameters
        assert list(ours) == list(theirs), name
        for p in theirs:
            assert ours[p].kind == theirs[p].kind, (name, p)
            assert ours[p].default == theirs[p].default, (name, p)


# ---- passing checks ----------------------------------------------------------


@pytest.mark.parametrize("fast_mode", [False, True])
def test_passes_on_correct_functions(lib, fast_mode):
    x = rand_leaf(lib, 3, 4, seed=1)
    y = rand_leaf(lib, 4, seed=2)
    w = rand_leaf(lib, 4, 2, seed=3)
    gc = lib.autograd.gradcheck
    assert gc(lambda a: a.tanh() * a.exp(), x, fast_mode=fast_mode) is True
    assert gc(lambda a, b: (a * b).sin(), (x, y), fast_mode=fast_mode) is True
    assert gc(lambda a, b: a.matmul(b), [x, w], fast_mode=fast_mode) is True
    # Several outputs, one of them 0-d.
    assert gc(lambda a, b: (a + b, (a * a).sum()), (x, y), fast_mode=fast_mode) is True
    Square, _, _ = square_fns(lib)
    assert gc(Square.apply, (x,), fast_mode=fast_mode) is True


def test_non_tensor_and_non_differentiable_inputs(lib):
    x = rand_leaf(lib, 2, 3, seed=4)
    c = rand_leaf(lib, 2, 3, seed=5).detach()  # does not require grad
    calls = []

    def f(a, n, s, b):
        calls.append((n, s))
        return a * n + b.exp() * a

    assert lib.autograd.gradcheck(f, (x, 3, "tag", c)) is True
    assert all(v == (3, "tag") for v in calls)
    # The constant input was neither perturbed nor changed.
    np.testing.assert_array_equal(to_numpy(c), np.random.default_rng(5).uniform(-1, 1, (2, 3)))


def test_inputs_are_left_unchanged(lib):
    x = rand_leaf(lib, 3, seed=6)
    before = to_numpy(x).copy()
    lib.autograd.gradcheck(lambda a: a.sin(), (x,))
    lib.autograd.gradgradcheck(lambda a: a.sin(), (x,))
    np.testing.assert_array_equal(to_numpy(x), before)
    assert x.grad is None


@pytest.mark.parametrize("fast_mode", [False, True])
def test_output_without_gradient(lib, fast_mode):
    # Outputs that do not require grad: their numerical gradient must be zero.
    x = rand_leaf(lib, 3, seed=7)
    gc = lib.autograd.gradcheck
    assert gc(lambda a: (a.sin(), (a > 0).long()), (x,), fast_mode=fast_mode) is True
    assert gc(lambda a: (a > 5).double(), (x,), fast_mode=fast_mode) is True
    GradcheckError = gc_module(lib).GradcheckError
    with pytest.raises(GradcheckError, match="Numerical gradient for function expected to be zero"):
        gc(lambda a: a.detach() * 2, (x,), fast_mode=fast_mode)


# ---- failing checks ------------------------------------------------------------


def shown_jacobian(msg, kind):
    """The numbers of the ``kind:tensor([[...]])`` Jacobian printed in ``msg``."""
    m = re.search(kind + r":\s*tensor\((\[.*?\]\])", msg, re.S)
    assert m, msg
    return np.array(eval(m.group(1)))


def test_wrong_backward_fails_with_jacobians(lib):
    _, BadSquare, _ = square_fns(lib)
    xa = np.array([0.5, -1.25, 2.0])
    x = leaf(lib, xa)
    GradcheckError = gc_module(lib).GradcheckError
    with pytest.raises(GradcheckError) as info:
        lib.autograd.gradcheck(BadSquare.apply, (x,))
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:")
    assert "\nanalytical:" in msg
    # The analytical Jacobian shown is the (wrong) diag(x); the numerical one diag(2x).
    np.testing.assert_allclose(shown_jacobian(msg, "analytical"), np.diag(xa), atol=1e-4)
    np.testing.assert_allclose(shown_jacobian(msg, "numerical"), np.diag(2 * xa), atol=1e-4)


def test_mismatch_names_output_and_input(lib):
    _, BadSquare, _ = square_fns(lib)
    x = rand_leaf(lib, 2, seed=8)
    y = rand_leaf(lib, 3, seed=9)
    GradcheckError = gc_module(lib).GradcheckError
    with pytest.raises(GradcheckError, match="for output 1 with respect to input 1,"):
        lib.autograd.gradcheck(lambda a, b: (a * 2, BadSquare.apply(b)), (x, y))


def test_raise_exception_false(lib):
    _, BadSquare, _ = square_fns(lib)
    x = rand_leaf(lib, 3, seed=10)
    assert lib.autograd.gradcheck(BadSquare.apply, (x,), raise_exception=False) is False
    _, _, FlatSquare = square_fns(lib)
    assert lib.autograd.gradgradcheck(FlatSquare.apply, (x,), raise_exception=False) is False
    assert lib.autograd.gradcheck(lambda a: a * 2, (x,), raise_exception=False) is True


def test_fast_mode_fails_with_slow_mode_jacobians(lib):
    _, BadSquare, _ = square_fns(lib)
    xa = np.array([0.5, -1.25, 2.0])
    GradcheckError = gc_module(lib).GradcheckError
    with pytest.raises(GradcheckError) as info:
        lib.autograd.gradcheck(BadSquare.apply, (leaf(lib, xa),), fast_mode=True)
    msg = str(info.value)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:")
    assert "computed \nin fast mode" in msg
    np.testing.assert_allclose(shown_jacobian(msg, "Analytical"), np.diag(xa), atol=1e-4)
    np.testing.assert_allclose(shown_jacobian(msg, "Numerical"), np.diag(2 * xa), atol=1e-4)
    assert "The max per-element difference (slow mode) is: " in msg
    # u^T J v: the projected numbers differ by the factor 2 of the bug.
    m = re.match(r".*numerical:(\S+)\nanalytical:(\S+)\n", msg, re.S)
    assert m, msg
    num, ana = float(m.group(1)), float(m.group(2))
    assert num == pytest.approx(2 * ana, rel=1e-6)


def test_fast_mode_tolerance_scaling(lib):
    # A tiny error passes in both modes (atol scaled by sum(u) * sum(v)).
    class Tiny(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g * (3 + 1e-9)

    x = rand_leaf(lib, 4, seed=11)
    assert lib.autograd.gradcheck(Tiny.apply, (x,), fast_mode=True)
    assert lib.autograd.gradcheck(Tiny.apply, (x,))


def test_tolerances_are_used(lib):
    class Off(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g * 3.01

    x = rand_leaf(lib, 4, seed=12)
    assert not lib.autograd.gradcheck(Off.apply, (x,), raise_exception=False)
    assert lib.autograd.gradcheck(Off.apply, (x,), atol=0.02)
    assert lib.autograd.gradcheck(Off.apply, (x,), rtol=0.01, atol=0)


def test_nondeterministic_backward(lib):
    counter = [0]

    class Jitter(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            counter[0] += 1
            return g * (2 + 1e-9 * counter[0])

    x = rand_leaf(lib, 3, seed=13)
    GradcheckError = gc_module(lib).GradcheckError
    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        lib.autograd.gradcheck(Jitter.apply, (x,))
    assert lib.autograd.gradcheck(Jitter.apply, (x,), nondet_tol=1e-6)


def test_backward_not_multiplied_by_grad_output(lib):
    class Ignores(lib.autograd.Function):
        """Right Jacobian for one-hot upstream gradients, but a zero upstream
        gradient does not give a zero input gradient."""

        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return lib.ones(3, dtype=lib.float64) * (g + (g == 0).double())

    x = rand_leaf(lib, 3, seed=14)
    GradcheckError = gc_module(lib).GradcheckError
    with pytest.raises(GradcheckError, match="backward not multiplied by grad_output"):
        lib.autograd.gradcheck(Ignores.apply, (x,))


def test_check_undefined_grad(lib):
    x = rand_leaf(lib, 3, seed=15)
    GradcheckError = gc_module(lib).GradcheckError
    bad = two_output_function(lib, False, "raise")
    with pytest.warns(UserWarning, match="Backwards compatibility: New undefined gradient"):
        with pytest.raises(GradcheckError, match="Expected backward function to handle undefined"):
            lib.autograd.gradcheck(bad.apply, (x,))
    assert lib.autograd.gradcheck(bad.apply, (x,), check_undefined_grad=False)
    nonzero = two_output_function(lib, False, "ones")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(
            GradcheckError, match="Expected all input grads to be undefined or zero"
        ):
            lib.autograd.gradcheck(nonzero.apply, (x,))
    assert lib.autograd.gradcheck(nonzero.apply, (x,), check_undefined_grad=False)
    good = two_output_function(lib, False, "none")
    assert lib.autograd.gradcheck(good.apply, (x,))


# ---- input validation and options -------------------------------------------------


def test_float32_input_warns(lib):
    x = leaf(lib, [0.5, 1.0], dtype=lib.float32)
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double"):
        lib.autograd.gradcheck(lambda a: a * 2, (x,), eps=1e-3, atol=1e-2, rtol=1e-2)


def test_no_input_requires_grad(lib):
    x = rand_leaf(lib, 3).detach()
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        lib.autograd.gradcheck(lambda a: a * 2, (x,))


def test_stride_zero_input(lib):
    x = lib.zeros(1, 3, dtype=lib.float64).expand(4, 3).requires_grad_()
    with pytest.raises(RuntimeError, match="0th input has a dimension with stride 0"):
        lib.autograd.gradcheck(lambda a: a * 2, (x,))


def test_option_consistency_errors(lib):
    x = rand_leaf(lib, 3)
    f = lambda a: a * 2  # noqa: E731
    with pytest.raises(AssertionError, match="at least one of check_forward_ad or check_backward"):
        lib.autograd.gradcheck(f, (x,), check_backward_ad=False)
    with pytest.raises(AssertionError, match="check_batched_grad=True requires check_backward"):
        lib.autograd.gradcheck(
            f, (x,), check_batched_grad=True, check_backward_ad=False, check_forward_ad=True
        )
    with pytest.raises(AssertionError, match="check_batched_forward_grad=True requires"):
        lib.autograd.gradcheck(f, (x,), check_batched_forward_grad=True)
    with pytest.raises(AssertionError, match="check_fwd_over_rev or check_rev_over_rev"):
        lib.autograd.gradgradcheck(f, (x,), check_rev_over_rev=False)
    with pytest.raises(AssertionError, match="check_undefined_grad=True requires check_rev_over"):
        lib.autograd.gradgradcheck(f, (x,), check_rev_over_rev=False, check_fwd_over_rev=True)


def test_batched_grad(lib):
    x = rand_leaf(lib, 3)
    assert lib.autograd.gradcheck(lambda a: a.sin() * a, (x,), check_batched_grad=True)
    assert lib.autograd.gradgradcheck(lambda a: a * a * a, (x,), check_batched_grad=True)


def test_batched_forward_grad_needs_vmap():
    x = rand_leaf(ferrograd, 3)
    with pytest.raises(NotImplementedError, match="vmap"):
        ferrograd.autograd.gradcheck(
            lambda a: a * 2, (x,), check_forward_ad=True, check_batched_forward_grad=True
        )


def test_forward_ad_option():
    x = rand_leaf(ferrograd, 3)
    f = lambda a: a.sin() * a  # noqa: E731
    if hasattr(ferrograd.autograd, "forward_ad"):
        assert ferrograd.autograd.gradcheck(f, (x,), check_forward_ad=True)
        assert ferrograd.autograd.gradcheck(
            f, (x,), check_forward_ad=True, check_backward_ad=False, fast_mode=True
        )
    else:
        with pytest.raises(NotImplementedError, match="forward AD|forward-mode AD"):
            ferrograd.autograd.gradcheck(f, (x,), check_forward_ad=True)
        with pytest.raises(NotImplementedError, match="forward-mode AD"):
            ferrograd.autograd.gradgradcheck(f, (x,), check_fwd_over_rev=True)


def test_forward_ad_option_on_torch(torch):
    # The expectation the forward-AD code path is written against.
    x = rand_leaf(torch, 3)
    f = lambda a: a.sin() * a  # noqa: E731
    assert torch.autograd.gradcheck(f, (x,), check_forward_ad=True)


# ---- gradgradcheck ----------------------------------------------------------------


@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradgradcheck_passes(lib, fast_mode):
    x = rand_leaf(lib, 3, 2, seed=20)
    w = rand_leaf(lib, 2, 2, seed=21)
    ggc = lib.autograd.gradgradcheck
    assert ggc(lambda a: a.tanh() * a, (x,), fast_mode=fast_mode) is True
    assert ggc(lambda a, b: a.matmul(b).sigmoid(), (x, w), fast_mode=fast_mode) is True
    Square, _, _ = square_fns(lib)
    assert ggc(Square.apply, (x,), fast_mode=fast_mode) is True


def test_gradgradcheck_grad_outputs(lib):
    x = rand_leaf(lib, 3, seed=22)
    go = rand_leaf(lib, 3, seed=23)
    assert lib.autograd.gradgradcheck(lambda a: a.exp() * a, (x,), (go,))
    # A grad_output that does not require grad is not checked.
    assert lib.autograd.gradgradcheck(lambda a: a.exp() * a, (x,), go.detach())
    assert lib.autograd.gradgradcheck(lambda a: a.exp() * a, (x,), gen_non_contig_grad_outputs=True)
    y = rand_leaf(lib, 3, 2, seed=24)
    assert lib.autograd.gradgradcheck(
        lambda a: (a.sin() * 2, a.cos().sum()), (y,), gen_non_contig_grad_outputs=True
    )


@pytest.mark.parametrize(
    "make,seed",
    [
        # First derivative computed off the graph: d(2 g x)/dx = 2 g is missing.
        (lambda lib: square_fns(lib)[2], 25),
        # As torch: a once_differentiable backward's result has no graph to
        # x, so the double backward is seen as zero.
        (lambda lib: square_function(lib, once_differentiable=True), 26),
    ],
    ids=["flat_square", "once_differentiable"],
)
def test_gradgradcheck_catches_wrong_double_backward(lib, make, seed):
    fn = make(lib)
    x = rand_leaf(lib, 3, seed=seed)
    # First order is right...
    assert lib.autograd.gradcheck(fn.apply, (x,))
    # ... the second is not.
    GradcheckError = gc_module(lib).GradcheckError
    with pytest.raises(
        GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"
    ):
        lib.autograd.gradgradcheck(fn.apply, (x,))


# ---- against torch: same verdicts on the same functions ---------------------------


def test_same_verdicts_as_torch(torch):
    fns = {
        "tanh_exp": lambda lib: lambda a: a.tanh() * a.exp(),
        "bad_square": lambda lib: square_fns(lib)[1].apply,
        "flat_square": lambda lib: square_fns(lib)[2].apply,
        "matmul": lambda lib: lambda a: a.matmul(a.t()),
    }
    xa = np.random.default_rng(30).uniform(-1, 1, (3, 3))
    for name, make in fns.items():
        for check in ("gradcheck", "gradgradcheck"):
            for fast in (False, True):
                got = [
                    getattr(lib.autograd, check)(
                        make(lib), (leaf(lib, xa),), raise_exception=False, fast_mode=fast
                    )
                    for lib in (ferrograd, torch)
                ]
                assert got[0] == got[1], (name, check, fast, got)


# ---- the forward-AD code paths, on torch's engine ----------------------------------
# ferrograd has no forward AD yet; gradcheck.py's forward-AD code is written
# against torch's forward_ad API. Running the module's own code with torch in
# place of ferrograd checks that code now, so it works once forward_ad lands.


@pytest.fixture
def ported(torch):
    from helpers import torch_port

    return torch_port("gradcheck")


@pytest.mark.parametrize("fast_mode", [False, True])
def test_port_forward_ad(torch, ported, fast_mode):
    x = rand_leaf(torch, 3, 2, seed=40)
    y = rand_leaf(torch, 2, seed=41)
    f = lambda a, b: (a.sin() * b, (a * a).sum())  # noqa: E731
    assert ported.gradcheck(f, (x, y), check_forward_ad=True, fast_mode=fast_mode)
    assert ported.gradcheck(
        f, (x, y), check_forward_ad=True, check_backward_ad=False, fast_mode=fast_mode
    )
    assert ported.gradgradcheck(
        lambda a: a.tanh() * a, (x,), check_fwd_over_rev=True, fast_mode=fast_mode
    )


@pytest.mark.parametrize("fast_mode", [False, True])
def test_port_forward_ad_catches_wrong_jvp(torch, ported, fast_mode):
    BadJvp = wrong_jvp_square(torch)
    xa = np.array([0.5, -1.25, 2.0])
    with pytest.raises(ported.GradcheckError) as info:
        ported.gradcheck(
            BadJvp.apply,
            (leaf(torch, xa),),
            check_forward_ad=True,
            check_backward_ad=False,
            fast_mode=fast_mode,
            check_undefined_grad=False,
        )
    msg = str(info.value)
    assert msg.startswith(
        "Jacobian computed with forward mode mismatch for output 0 with respect to input 0,\n"
    )
    if not fast_mode:
        np.testing.assert_allclose(shown_jacobian(msg, "analytical"), np.diag(xa), atol=1e-4)
        np.testing.assert_allclose(shown_jacobian(msg, "numerical"), np.diag(2 * xa), atol=1e-4)
    else:
        np.testing.assert_allclose(shown_jacobian(msg, "Analytical"), np.diag(xa), atol=1e-4)


def test_port_backward_mode_matches_torch(torch, ported):
    # The whole checker on torch's engine gives torch's verdicts.
    _, BadSquare, FlatSquare = square_fns(torch)
    x = rand_leaf(torch, 3, seed=42)
    assert ported.gradcheck(lambda a: a.exp() * a, (x,))
    assert not ported.gradcheck(BadSquare.apply, (x,), raise_exception=False)
    assert not ported.gradgradcheck(FlatSquare.apply, (x,), raise_exception=False)
    assert not ported.gradcheck(BadSquare.apply, (x,), raise_exception=False, fast_mode=True)


def test_gen_non_contig_grad_outputs(lib):
    seen = []

    class Rec(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(g.is_contiguous())
            return g * 2

    x = rand_leaf(lib, 3, 4, seed=43)
    assert lib.autograd.gradgradcheck(Rec.apply, (x,), gen_non_contig_grad_outputs=True)
    assert False in seen  # the generated grad_outputs reached backward non-contiguous
    seen.clear()
    assert lib.autograd.gradgradcheck(Rec.apply, (x,))
    assert seen and all(seen)


def test_deprecated_jacobian_helpers(lib):
    gc = gc_module(lib)
    xa = np.array([0.5, -1.0])
    x = leaf(lib, xa)
    with pytest.warns(FutureWarning, match="get_numerical_jacobian"):
        (num,) = gc.get_numerical_jacobian(lambda inps: inps[0].exp(), (x,), eps=1e-6)
    np.testing.assert_allclose(to_numpy(num), np.diag(np.exp(xa)), rtol=1e-6)
    with pytest.warns(FutureWarning, match="get_analytical_jacobian"):
        (ana,), reentrant, sizes_ok, types_ok = gc.get_analytical_jacobian((x,), x.exp())
    np.testing.assert_allclose(to_numpy(ana), np.diag(np.exp(xa)), rtol=1e-12)
    assert reentrant and sizes_ok and types_ok
