"""Custom autograd Functions (ferrograd.autograd.Function), checked against
torch's behaviour (continued from test_function.py): what backward may
return, exceptions, double backward and once_differentiable, numeric checks,
threads, InplaceFunction/Variable/legacy, the examples in
examples/custom_functions.py and the torch oracle.
"""

import importlib.util
import math
import pathlib
import threading
import traceback

import pytest

import ferrograd as torch
from ferrograd.autograd import Function, InplaceFunction, Variable, once_differentiable
from helpers import cube_function, two_output_function
from function_helpers import Square, assert_close, leaf, tolist

ROOT = pathlib.Path(__file__).resolve().parents[2]


# ----- backward results -----------------------------------------------------


def _scale_fn(bw, lib=torch):
    """x * k with the given backward (on ``lib``: ferrograd or torch)."""

    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        backward = staticmethod(bw)

    return MyFn


def test_backward_too_few_gradients():
    y = _scale_fn(lambda ctx, g: g * 2).apply(leaf([1.0]), 2.0)
    with pytest.raises(
        RuntimeError,
        match=r"^function MyFnBackward returned an incorrect number of gradients \(expected 2, got 1\)$",
    ):
        y.sum().backward()


def test_backward_too_many_gradients():
    y = _scale_fn(lambda ctx, g: (g, None, g)).apply(leaf([1.0]), 2.0)
    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 2, got 3\)"):
        y.sum().backward()


def test_backward_extra_trailing_nones_accepted():
    x = leaf([1.0])
    _scale_fn(lambda ctx, g: (g * 2, None, None, None)).apply(x, 2.0).sum().backward()
    assert_close(x.grad, [2.0])


def test_backward_single_tensor_for_single_input():
    x = leaf([1.0, 2.0])
    Square.apply(x).sum().backward()
    assert_close(x.grad, [2.0, 4.0])


def test_backward_gradient_for_non_tensor_input_must_be_none():
    y = _scale_fn(lambda ctx, g: (g, g)).apply(leaf([1.0]), 2.0)
    with pytest.raises(
        RuntimeError,
        match="function MyFnBackward returned a gradient different than None at position 2, but the corresponding forward input was not a Variable",
    ):
        y.sum().backward()


def test_backward_non_tensor_gradient():
    y = _scale_fn(lambda ctx, g: (1, None)).apply(leaf([1.0]), 2.0)
    with pytest.raises(RuntimeError, match=r"^expected Variable or None \(got int\)$"):
        y.sum().backward()


def test_backward_wrong_shape():
    y = _scale_fn(lambda ctx, g: (torch.ones(4), None)).apply(leaf([1.0, 2.0, 3.0]), 2.0)
    with pytest.raises(
        RuntimeError,
        match=r"Function MyFnBackward returned an invalid gradient at index 0 - got \[4\] but expected shape compatible with \[3\]",
    ):
        y.sum().backward()


def test_backward_broadcast_shape_is_summed():
    x = leaf([1.0, 2.0, 3.0])
    _scale_fn(lambda ctx, g: (torch.ones(2, 3), None)).apply(x, 2.0).sum().backward()
    assert_close(x.grad, [2.0, 2.0, 2.0])
    # ...but a gradient that does not broadcast *from* the input shape is an error
    y = _scale_fn(lambda ctx, g: (torch.ones(1), None)).apply(leaf([1.0, 2.0, 3.0]), 2.0)
    with pytest.raises(RuntimeError, match="returned an invalid gradient at index 0"):
        y.sum().backward()


def test_backward_gradient_dtype_is_cast():
    x = leaf([1.0, 2.0])
    _scale_fn(lambda ctx, g: (torch.ones(2, dtype=torch.float64), None)).apply(
        x, 2.0
    ).sum().backward()
    assert x.grad.dtype == torch.float32
    assert_close(x.grad, [1.0, 1.0])


def test_gradient_for_input_not_requiring_grad_is_ignored():
    class F(Function):
        @staticmethod
        def forward(ctx, x, w):
            return x * w

        @staticmethod
        def backward(ctx, g):
            return g, torch.ones(7)  # wrong shape, but nobody wants it

    x = leaf([1.0, 2.0])
    F.apply(x, torch.ones(2)).sum().backward()
    assert_close(x.grad, [1.0, 1.0])


def test_vjp_is_an_alias_of_backward():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 5

    x = leaf([1.0])
    F.apply(x).sum().backward()
    assert_close(x.grad, [5.0])


def test_missing_backward_and_forward():
    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    class NoForward(Function):
        pass

    y = NoBackward.apply(leaf([1.0]))
    with pytest.raises(
        NotImplementedError, match="You must implement either the backward or vjp method"
    ):
        y.sum().backward()
    with pytest.raises(NotImplementedError, match="You must implement the forward function"):
        NoForward.apply(leaf([1.0]))


def test_backward_and_vjp_both_defined():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def vjp(ctx, g):
            return g

    with pytest.raises(
        RuntimeError,
        match="Implementing both 'backward' and 'vjp' for a custom Function is not allowed",
    ):
        F.apply(leaf([1.0])).sum().backward()


# ----- exceptions -----------------------------------------------------------


class CustomError(Exception):
    pass


def test_exception_in_backward_propagates_unchanged():
    raised = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            e = CustomError("from backward")
            raised.append(e)
            raise e

    with pytest.raises(CustomError) as info:
        F.apply(leaf([1.0])).sum().backward()
    assert info.value is raised[0]
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "backward" in frames


def test_exception_in_backward_through_autograd_grad():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise KeyError("boom")

    x = leaf([1.0])
    with pytest.raises(KeyError, match="boom"):
        torch.autograd.grad(F.apply(x).sum(), x)


def test_exception_in_forward_propagates_unchanged():
    raised = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            e = ValueError("from forward")
            raised.append(e)
            raise e

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(ValueError) as info:
        F.apply(leaf([1.0]))
    assert info.value is raised[0]
    assert "forward" in [f.name for f in traceback.extract_tb(info.value.__traceback__)]


def test_graph_usable_after_failed_backward():
    fail = [True]

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            if fail[0]:
                raise CustomError("once")
            return g * 2

    x = leaf([1.0])
    y = F.apply(x)
    with pytest.raises(CustomError):
        y.sum().backward(retain_graph=True)
    fail[0] = False
    y.sum().backward()
    assert_close(x.grad, [2.0])


# ----- double backward, once_differentiable --------------------------------


def test_create_graph_double_backward():
    modes = []

    def grad(x, g):
        modes.append(torch.is_grad_enabled())
        return 3 * x * x * g

    Cube = cube_function(torch, grad)

    x = leaf([1.0, 2.0], torch.float64)
    (g,) = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    assert modes == [True] and g.requires_grad
    assert_close(g, [3.0, 12.0])
    (gg,) = torch.autograd.grad(g.sum(), x)
    assert_close(gg, [6.0, 12.0])
    (g2,) = torch.autograd.grad(Cube.apply(x).sum(), x)
    assert modes[-1] is False and not g2.requires_grad


def test_once_differentiable():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            assert not torch.is_grad_enabled()
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf([1.0, 2.0])
    (g,) = torch.autograd.grad(F.apply(x).sum(), x)
    assert_close(g, [2.0, 4.0])
    y = F.apply(x)
    (g,) = torch.autograd.grad((y * y).sum(), x, create_graph=True)
    assert g.requires_grad
    with pytest.raises(
        RuntimeError,
        match="^trying to differentiate twice a function that was marked with @once_differentiable$",
    ):
        g.sum().backward()


def test_backward_calling_autograd_grad_inside():
    def recompute(x, g):
        """Checkpoint-style: forward without a graph, backward recomputes."""
        with torch.enable_grad():
            xd = x.detach().requires_grad_()
            y = xd * xd * xd
        (gx,) = torch.autograd.grad(y, xd, g)
        return gx

    Recompute = cube_function(torch, recompute)

    x = leaf([1.0, 2.0])
    Recompute.apply(x).sum().backward()
    assert_close(x.grad, [3.0, 12.0])


# ----- numeric checks -------------------------------------------------------


class Rational(Function):
    """f(x, y) = x * y / (1 + y * y), hand-written derivative."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y / (1 + y * y)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        d = 1 + y * y
        gx = g * y / d if ctx.needs_input_grad[0] else None
        gy = g * x * (1 - y * y) / (d * d) if ctx.needs_input_grad[1] else None
        return gx, gy


def _numeric_grad(f, inputs, i, eps=1e-6):
    x = inputs[i]
    n = x.numel()
    out = []
    for j in range(n):
        e = torch.tensor([1.0 if k == j else 0.0 for k in range(n)], dtype=torch.float64).reshape(
            *x.shape
        )
        plus = list(inputs)
        minus = list(inputs)
        plus[i] = x.detach() + e * eps
        minus[i] = x.detach() - e * eps
        out.append((f(*plus).sum().item() - f(*minus).sum().item()) / (2 * eps))
    return out


def test_gradcheck_float64():
    x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([[1.2, 0.4, -0.9], [-2.0, 0.1, 0.8]], dtype=torch.float64, requires_grad=True)
    gx, gy = torch.autograd.grad(Rational.apply(x, y).sum(), (x, y))
    with torch.no_grad():
        assert_close(gx, _numeric_grad(Rational.apply, [x, y], 0), 1e-7)
        assert_close(gy, _numeric_grad(Rational.apply, [x, y], 1), 1e-7)


def test_gradgradcheck_float64():
    # The backward is written in ferrograd ops: differentiate it numerically too.
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([1.2, 0.4, -0.9], dtype=torch.float64, requires_grad=True)

    def grad_y(x, y):
        with torch.enable_grad():
            y = y.detach().requires_grad_()
            (g,) = torch.autograd.grad(Rational.apply(x, y).sum(), y, create_graph=True)
        return g

    (g,) = torch.autograd.grad(Rational.apply(x, y).sum(), y, create_graph=True)
    (ggx, ggy) = torch.autograd.grad(g.sum(), (x, y))
    assert_close(ggx, _numeric_grad(grad_y, [x, y], 0), 1e-6)
    assert_close(ggy, _numeric_grad(grad_y, [x, y], 1), 1e-6)


# ----- threads --------------------------------------------------------------


@pytest.mark.parametrize("n", [5, 1 << 16])  # the second runs kernels on the pool
def test_concurrent_backward_from_two_threads(n):
    Mul3 = cube_function(torch)

    errors, results = [], []

    def work(seed):
        try:
            for i in range(8):
                x = torch.randn(n, dtype=torch.float64, requires_grad=True)
                y = Mul3.apply(Square.apply(x) + 1.0)  # (x^2 + 1)^3
                z = Square.apply(x * 2.0)
                (y.sum() + z.sum()).backward()
                with torch.no_grad():
                    u = x * x + 1
                    expected = 6 * x * u * u + 8 * x
                    diff = x.grad - expected
                    results.append((diff * diff).sum().item())
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors, errors
    assert len(results) == 16 and max(results) < 1e-12


# ----- InplaceFunction, Variable, legacy ------------------------------------


def test_inplace_function():
    class AddOne(InplaceFunction):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf([1.0])
    a = x * 2
    assert AddOne.apply(a) is a
    assert_close(a, [3.0])
    a.sum().backward()
    assert_close(x.grad, [2.0])
    assert issubclass(InplaceFunction, Function)
    with pytest.warns(DeprecationWarning):
        f = AddOne(inplace=True)
    assert f.inplace is True


def test_variable():
    t = torch.ones(3)
    v = Variable(t)
    assert isinstance(v, torch.Tensor) and v is not t and not v.requires_grad
    assert v.data_ptr() == t.data_ptr()
    v = Variable(t, requires_grad=True)
    assert v.requires_grad and v.is_leaf and not t.requires_grad
    assert isinstance(t, Variable)
    assert Variable().shape == (0,)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        Variable(3)


def test_legacy_instance_call_raises():
    with pytest.warns(DeprecationWarning):
        f = Square()
    with pytest.raises(
        RuntimeError, match="Legacy autograd function with non-static forward method is deprecated"
    ):
        f(leaf([1.0]))


def test_next_functions_without_node():
    ctx = Square._backward_cls()
    with pytest.raises(RuntimeError, match="Attribute 'next_functions' is invalid"):
        ctx.next_functions


# ----- examples/custom_functions.py -----------------------------------------


def _load_example(module_name, backend):
    src = (ROOT / "examples" / "custom_functions.py").read_text()
    if backend != "ferrograd":
        src = src.replace("import ferrograd as torch\n", f"import {backend} as torch\n")
    spec = importlib.util.spec_from_loader(module_name, loader=None)
    mod = importlib.util.module_from_spec(spec)
    exec(compile(src, str(ROOT / "examples" / "custom_functions.py"), "exec"), mod.__dict__)
    return mod


@pytest.fixture(scope="module")
def ex():
    return _load_example("fg_examples", "ferrograd")


def test_example_scale_tracker(ex):
    stats = {}
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, requires_grad=True)
    y = ex.ScaleTracker.apply(x, "layer1", stats)
    assert y.grad_fn.name() == "ScaleTrackerBackward"
    (y * y).sum().backward()  # grad = 2x: twice the std
    s = math.sqrt(sum((v - 2.5) ** 2 for v in [1, 2, 3, 4]) / 3)
    assert abs(stats["layer1"]["forward_std"] - s) < 1e-12
    assert abs(stats["layer1"]["backward_std"] - 2 * s) < 1e-12
    assert_close(x.grad, [2.0, 4.0, 6.0, 8.0])


def test_example_grad_factor(ex):
    x = leaf([1.0, -2.0])
    y = ex.GradFactor.apply(x, -0.5)
    assert_close(y, [1.0, -2.0])
    (y * 3).sum().backward()
    assert_close(x.grad, [-1.5, -1.5])


def test_example_all_gather(ex):
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    g = ex.AllGather.apply(x)
    assert tuple(g.shape) == (1, 2, 2)
    assert_close(g, [[[1.0, 2.0], [3.0, 4.0]]])
    w = torch.tensor([[[1.0, 2.0], [3.0, 4.0]]])
    (g * w).sum().backward()
    assert_close(x.grad, [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match="single-process"):
        ex.AllGather.apply(x, 1, 2)


def test_example_main_runs(ex, capsys):
    ex.main()
    out = capsys.readouterr().out
    assert "gradient check, squared error: 0.0" in out


# ----- torch oracle ---------------------------------------------------------


def _functions(T):
    """The same custom Functions, built on module T (torch or ferrograd)."""

    class MulAdd(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k):
            ctx.save_for_backward(a, b)
            ctx.k = k
            return a * b + k * a, k

        @staticmethod
        def backward(ctx, g, _):
            a, b = ctx.saved_tensors
            return g * (b + ctx.k), g * a, None

    class SaveOut(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * x
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y * 3  # any formula: compared across backends

    class Split(T.autograd.Function):
        @staticmethod
        def forward(x, scale=2.0):
            return x * scale, x - 1, (x * 0).long()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.scale = inputs[1]
            ctx.mark_non_differentiable(output[1])

        @staticmethod
        def backward(ctx, ga, gb, gc):
            return ga * ctx.scale + gb * 100, None

    class InplaceScale(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, s):
            x.mul_(s)
            ctx.mark_dirty(x)
            ctx.s = s
            return x

        @staticmethod
        def backward(ctx, g):
            return g * ctx.s, None

    Sparse = two_output_function(T, materialize_grads=False)
    return MulAdd, SaveOut, Split, InplaceScale, Sparse


def _run_oracle_program(T, a_vals, b_vals):
    MulAdd, SaveOut, Split, InplaceScale, Sparse = _functions(T)
    a = T.tensor(a_vals, dtype=T.float64, requires_grad=True)
    b = T.tensor(b_vals, dtype=T.float64, requires_grad=True)
    y, k = MulAdd.apply(a, b, 0.5)
    z = SaveOut.apply(y)
    p, q, r = Split.apply(z)
    m = InplaceScale.apply(p * 1, 3.0)
    s1, s2 = Sparse.apply(b)
    loss = (m * m).sum() + (q * 0.1).sum() + s2.sum()
    gy, ga, gb = T.autograd.grad(loss, (y, a, b), create_graph=True)
    (gga,) = T.autograd.grad((ga * ga).sum(), a)
    return {
        "k": k,
        "flags": (q.requires_grad, r.requires_grad, r.dtype == T.int64, m.grad_fn.name()),
        "values": [tolist(t) for t in (y, z, p, q, m, s1, s2)],
        "grads": [tolist(t) for t in (gy, ga, gb, gga)],
    }


def test_oracle_against_torch():
    real = pytest.importorskip("torch")
    a_vals = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
    b_vals = [[1.25, 0.5, -1.0], [-2.0, 0.75, 1.0]]
    want = _run_oracle_program(real, a_vals, b_vals)
    got = _run_oracle_program(torch, a_vals, b_vals)
    assert got["k"] == want["k"]
    assert got["flags"] == want["flags"]
    for g, w in zip(got["values"] + got["grads"], want["values"] + want["grads"]):
        assert_close(g, w, 1e-12)


def test_oracle_examples_against_torch():
    real = pytest.importorskip("torch")
    results = {}
    for backend, T in (("torch", real), ("ferrograd", torch)):
        mod = _load_example(f"{backend}_examples", backend)
        stats = {}
        x = T.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=T.float64, requires_grad=True)
        h = mod.ScaleTracker.apply(x * x, "h", stats)
        h = mod.GradFactor.apply(h, -0.3)
        g = mod.AllGather.apply(h)
        (g * g * g).sum().backward()
        results[backend] = (stats, tolist(g), tolist(x.grad))
    (ts, tg, tx), (fs, fg, fx) = results["torch"], results["ferrograd"]
    assert abs(ts["h"]["forward_std"] - fs["h"]["forward_std"]) < 1e-12
    assert abs(ts["h"]["backward_std"] - fs["h"]["backward_std"]) < 1e-12
    assert_close(fg, tg, 1e-12)
    assert_close(fx, tx, 1e-12)


def test_oracle_errors_match_torch():
    real = pytest.importorskip("torch")

    def messages(T):
        out = []

        for bw in (
            lambda ctx, g: (),
            lambda ctx, g: (g, g),
            lambda ctx, g: ("x", None),
            lambda ctx, g: (T.ones(4), None),
        ):
            x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
            try:
                _scale_fn(bw, T).apply(x, 2.0).sum().backward()
            except Exception as e:
                out.append((type(e).__name__, str(e)))
        return out

    assert messages(torch) == messages(real)
