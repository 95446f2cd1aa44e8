"""Bad input that torch refuses, refused the same way (issue 24).

Each case runs on ferrograd and on torch (the ``lib`` fixture; the torch
half skips without torch): the exception type and the start of torch's
message, and that nothing was written or recorded before the error.

* Memory overlap, checked in one place (``kernels/iter.rs``): a written
  tensor may not repeat an element (an ``expand``ed view) except for
  ``fill_``/``zero_`` and index writes, and may share memory with an input
  only as the very same view.
* The view + in-place rules of torch's autograd: views returned by a
  multi-output op, views made under ``no_grad`` or inference mode, views
  returned by a custom Function.
* Views see in-place changes of their base in their history (their
  ``grad_fn`` is rebuilt), and in-place ops keep the history of what they
  overwrite (``copy_``/``fill_``/``zero_`` give it a zero gradient).
* Smaller ones: ``max()``'s gradient with a NaN, ``unflatten``,
  ``autograd.grad`` without inputs, ``out=`` of the binary ops, allocation
  failure, Ctrl-C during a long backward.

The version-counter error and the autograd rules the fuzzer found:
test_reliability_rules.py.
"""

import _thread
import gc
import signal
import threading
import time

import pytest

from helpers import raises, view_out

INTERNAL = "unsupported operation: more than one element of the written-to tensor"
PARTIAL = "unsupported operation: some elements of the input tensor and the written-to tensor"


# ---- memory overlap -------------------------------------------------------


@pytest.mark.parametrize(
    "write",
    [
        lambda t, a: a.add_(1),
        lambda t, a: a.mul_(a),
        lambda t, a: a.exp_(),
        lambda t, a: a.clamp_(0, 1),
        lambda t, a: a.relu_(),
        lambda t, a: a.copy_(t.ones(2, 3)),
        lambda t, a: t.mul(t.ones(2, 3), 2, out=a),
        lambda t, a: t.exp(t.ones(2, 3), out=a),
        lambda t, a: a.scatter_(1, t.zeros(2, 1, dtype=t.int64), t.ones(2, 1)),
    ],
    ids=["add_", "mul_self", "exp_", "clamp_", "relu_", "copy_", "mul_out", "exp_out", "scatter_"],
)
def test_writing_an_expanded_view_raises(lib, write):
    base = lib.zeros(3)
    a = base.expand(2, 3)
    raises(lambda: write(lib, a), RuntimeError, INTERNAL)
    assert base.tolist() == [0.0, 0.0, 0.0] and base._version == 0


@pytest.mark.parametrize(
    "fill", [lambda a: a.fill_(2.0), lambda a: a.zero_()], ids=["fill_", "zero_"]
)
def test_fill_may_write_an_expanded_view(lib, fill):
    base = lib.tensor([[1.0], [3.0]])
    a = base.expand(2, 3)
    fill(a)
    assert a.tolist() == [[base[0, 0].item()] * 3, [base[1, 0].item()] * 3]


@pytest.mark.parametrize(
    "write",
    [
        lambda t, b: b[1:6].copy_(b[0:5]),
        lambda t, b: b[1:6].add_(b[0:5]),
        lambda t, b: b[:9].view(3, 3)[:2].add_(b[:9].view(3, 3)[1:]),
        lambda t, b: t.add(b[0:5], 1, out=b[1:6]),
        lambda t, b: t.sub(b[0:5], b[2:7], out=b[1:6]),
        lambda t, b: t.exp(b[0:5], out=b[1:6]),
        lambda t, b: b.index_put_((t.tensor([1, 2, 3]),), b[0:3]),
        lambda t, b: b[1:4].scatter_(0, t.tensor([0, 1, 2]), b[0:3]),
        lambda t, b: b[1:6].__setitem__(slice(None), b[0:5]),
    ],
    ids=[
        "copy_",
        "add_",
        "add_2d",
        "add_out",
        "sub_out",
        "exp_out",
        "index_put_",
        "scatter_",
        "setitem",
    ],
)
def test_partial_overlap_with_an_input_raises(lib, write):
    b = lib.arange(10.0)
    raises(lambda: write(lib, b), RuntimeError, PARTIAL)
    assert b.tolist() == [float(i) for i in range(10)] and b._version == 0


def test_transposed_self_is_a_partial_overlap(lib):
    b = lib.arange(9.0).reshape(3, 3)
    raises(lambda: b.add_(b.t()), RuntimeError, PARTIAL)
    assert b.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]]


def test_the_same_view_may_be_read_and_written(lib):
    b = lib.arange(10.0)
    b[0:5].copy_(b[0:5])
    b[0:5].add_(b[0:5])
    lib.add(b[5:], 1, out=b[5:])
    y = lib.tensor(2.0)
    y[None] = y
    assert b.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    assert y.item() == 2.0


def test_index_put_refuses_values_and_indices_sharing_its_memory(lib):
    t = lib.ones(1, 2)
    raises(lambda: t.index_put_((lib.tensor([0]),), t), RuntimeError, PARTIAL)
    i = lib.tensor([0, 1])
    raises(lambda: i.index_put_((i,), lib.tensor([1, 1])), RuntimeError, PARTIAL)
    # one bool mask and a 0-dim value: torch runs masked_fill_, allowed
    x = lib.tensor([1.0, 2.0])
    x[x > 1] = x[0]
    assert x.tolist() == [1.0, 1.0]


# ---- view + in-place rules -----------------------------------------------

MULTI = "This view is the output of a function that returns multiple views."
NO_GRAD = "A view was created in no_grad mode and is being modified inplace with grad mode enabled."


@pytest.mark.parametrize(
    "pieces,name",
    [
        (lambda y: y.unbind(), "Unbind"),
        (lambda y: y.split(1), "Split"),
        (lambda y: y.chunk(2), "Split"),
        (lambda y: y.split([1, 1]), "SplitWithSizes"),
    ],
    ids=["unbind", "split", "chunk", "split_with_sizes"],
)
def test_views_of_a_multi_output_op_refuse_in_place(lib, pieces, name):
    x = lib.ones(2, 3, requires_grad=True)
    a = pieces(x * 2)[0]
    with pytest.raises(RuntimeError) as info:
        a.mul_(2)
    assert str(info.value).startswith(
        f"Output 0 of {name} is a view and is being modified inplace."
    )
    assert MULTI in str(info.value)
    assert (a == 2).all()
    # a view of such a view inherits the restriction; no_grad lifts it
    with pytest.raises(RuntimeError, match="returns multiple views"):
        a[:1].mul_(2)
    with lib.no_grad():
        a.mul_(2)
    assert (a == 4).all()


def test_views_made_under_no_grad_refuse_in_place_with_grad(lib):
    x = lib.ones(4, requires_grad=True)
    with lib.no_grad():
        v = x[:2]
    assert v.requires_grad and v.is_leaf and v.grad_fn is None
    raises(lambda: v.mul_(2), RuntimeError, NO_GRAD)
    y = x * 2
    with lib.no_grad():
        w = y[:2]
    raises(lambda: w.mul_(2), RuntimeError, NO_GRAD)
    raises(
        lambda: w[:1].mul_(2),
        RuntimeError,
        "Output 0 of Slice is a view of a view which was created in no_grad mode",
    )
    # a plain tensor's no_grad view: nothing requires grad, nothing refused;
    # but an operand that requires grad makes the op recorded: refused
    p = lib.ones(4)
    with lib.no_grad():
        pv = p[:2]
    pv.mul_(2)
    raises(lambda: pv.mul_(lib.ones(2, requires_grad=True)), RuntimeError, "A view was created")
    assert x.tolist() == [1.0] * 4 and p.tolist() == [2.0, 2.0, 1.0, 1.0]


def test_views_made_in_inference_mode_refuse_in_place_in_normal_mode(lib):
    y = lib.ones(4, requires_grad=True) * 2
    with lib.inference_mode():
        v = y[:2]
    raises(lambda: v.mul_(2), RuntimeError, "A view was created in inference mode")


def test_view_returned_by_a_custom_function_refuses_in_place(lib):
    o = view_out(lib).apply(lib.ones(3, requires_grad=True) * 2)
    with pytest.raises(RuntimeError) as info:
        o.mul_(2)
    assert str(info.value).startswith(
        "Output 0 of ViewOut is a view and is being modified inplace."
    )
    assert "custom Function" in str(info.value)


# ---- histories through in-place ops ---------------------------------------


def test_a_view_sees_an_in_place_op_on_its_base(lib):
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    v = y[0]
    y.mul_(2)
    assert type(v.grad_fn).__name__ == "AsStridedBackward0"
    (v * lib.tensor([1.0, 5.0])).sum().backward()
    assert x.grad.tolist() == [[2.0, 10.0], [0.0, 0.0]]
    x.grad = None
    t = (x * 1).permute(1, 0)
    t[0, :] = 2
    (t * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert x.grad.tolist() == [[0.0, 3.0], [0.0, 4.0]]


def test_a_view_of_a_base_that_starts_requiring_grad(lib):
    c = lib.zeros(2)
    v = c[0:1]
    c.copy_(lib.ones(2, requires_grad=True))
    assert v.requires_grad and type(v.grad_fn).__name__ == "AsStridedBackward0"
    b = lib.ones(2, 3)
    m = b.movedim(1, 0)
    b.requires_grad_()
    assert m.requires_grad


@pytest.mark.parametrize(
    "op,node",
    [
        (lambda t, b: b.copy_(t.ones(2)), "CopyBackwards"),
        (lambda t, b: b.fill_(1.0), "FillBackward2"),
        (lambda t, b: b.zero_(), "ZeroBackward0"),
        (lambda t, b: b.fill_(t.tensor(2.0)), "FillBackward3"),
    ],
    ids=["copy_", "fill_", "zero_", "fill_tensor"],
)
def test_overwriting_keeps_history_with_a_zero_gradient(lib, op, node):
    a = lib.ones(2, requires_grad=True)
    b = a * 1
    op(lib, b)
    assert b.requires_grad and type(b.grad_fn).__name__ == node
    b.sum().backward()
    assert a.grad.tolist() == [0.0, 0.0]


def test_fill_with_a_tensor_is_differentiable_in_it(lib):
    w = lib.tensor(2.0, requires_grad=True)
    b = lib.zeros(3)
    b.fill_(w)
    b.sum().backward()
    assert w.grad.item() == 3.0


# ---- smaller cases ---------------------------------------------------------


def test_max_gives_a_nan_result_gradient_to_the_nan(lib):
    x = lib.tensor([1.0, float("nan"), 3.0], requires_grad=True)
    x.max().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]
    a = lib.tensor([float("nan"), -1.25], requires_grad=True)
    m = a.maximum(lib.tensor([1.75, 0.25]))
    (g,) = lib.autograd.grad(m, a, lib.tensor([float("nan"), float("nan")]))
    assert g[1].item() == 0.0


def test_unflatten(lib):
    x = lib.arange(6.0, requires_grad=True)
    y = x.unflatten(0, (2, -1))
    assert y.shape == (2, 3) and y._base is not None
    assert lib.unflatten(x, 0, [3, 2]).shape == (3, 2)
    raises(lambda: x.unflatten(0, (4, 2)), RuntimeError, "unflatten: Provided sizes [4, 2]")
    raises(lambda: x.unflatten(0, ()), RuntimeError, "unflatten: sizes must be non-empty")


def test_grad_with_no_inputs_raises(lib):
    x = lib.ones(2, requires_grad=True)
    raises(lambda: lib.autograd.grad((x * 2).sum(), []), RuntimeError, "`inputs` argument")


def test_binary_ops_take_out(lib):
    a, b = lib.tensor([1.0, 2.0]), lib.tensor([3.0, 5.0])
    for name, want in [
        ("add", [4.0, 7.0]),
        ("sub", [-2.0, -3.0]),
        ("mul", [3.0, 10.0]),
        ("div", [1 / 3, 0.4]),
        ("true_divide", [1 / 3, 0.4]),
        ("atan2", None),
    ]:
        out = lib.empty(2)
        r = getattr(lib, name)(a, b, out=out)
        assert r is out
        if want is not None:
            assert out.tolist() == pytest.approx(want)
    out = lib.empty(2)
    lib.add(a, b, alpha=2, out=out)
    assert out.tolist() == [7.0, 12.0]
    raises(lambda: lib.add(a, b, out=lib.empty(2, dtype=lib.int64)), RuntimeError, "result type")


def test_add_alpha_keeps_the_operands_result_type(lib):
    r = lib.add(lib.tensor(0.25, dtype=lib.float64), lib.tensor([1, 2]), alpha=-0.5)
    assert r.dtype == lib.float64
    raises(
        lambda: lib.tensor([1, 2]).add(lib.tensor([1, 2]), alpha=-0.5),
        RuntimeError,
        "For integral input tensors, argument alpha must not be a floating point number.",
    )


def test_other_errors_of_torchs_type(lib):
    raises(lambda: lib.ones(4).permute(0, 1), RuntimeError, "permute(sparse_coo)")
    raises(lambda: lib.ones(4).permute(), TypeError, "permute() missing")
    raises(lambda: lib.ones(4)[:2].detach_(), RuntimeError, "Can't detach views in-place")
    raises(lambda: lib.ones(2).sub(lib.tensor([True, False])), RuntimeError, "Subtraction")
    assert lib.tensor(1.5).t().item() == 1.5
    _, b = lib.split(lib.zeros(3, 0), 2, 0)
    assert b.sqrt().shape == (1, 0)


def test_zero_gradients_where_torch_defines_them(lib):
    x = lib.tensor([[-1.5]]).expand(1, 3).requires_grad_()
    x.std().backward()
    assert x.grad.tolist() == [[0.0, 0.0, 0.0]]
    a, b = lib.zeros(2, requires_grad=True), lib.zeros(2, requires_grad=True)
    lib.atan2(a, b).sum().backward()
    assert a.grad.tolist() == [0.0, 0.0] and b.grad.tolist() == [0.0, 0.0]


def test_allocation_failure_raises(lib):
    for make in [
        lambda: lib.empty(2**45),
        lambda: lib.zeros(2**44, 2),
        lambda: lib.ones(2**43, dtype=lib.float64),
        # a broadcast result far larger than its operands
        lambda: lib.ones(2**21, 1) + lib.ones(1, 2**21),
        lambda: lib.where(lib.ones(2**21, 1) > 0, lib.ones(1, 2**21), 0.0),
    ]:
        with pytest.raises(RuntimeError, match="DefaultCPUAllocator: can't allocate memory"):
            make()


def big(lib, n=10**11, dtype=None):
    """A broadcast view of one element: far more elements than memory holds."""
    return lib.ones(1, dtype=dtype or lib.float32).expand(n)


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: big(lib).contiguous(),
        lambda lib: big(lib).clone(),
        lambda lib: big(lib, dtype=lib.int64).float(),
        lambda lib: big(lib).exp(),
        lambda lib: big(lib).sin(),
        lambda lib: big(lib).sigmoid(),
        lambda lib: lib.nn.functional.gelu(big(lib)),
        lambda lib: lib.ones(10).repeat(10**10),
        lambda lib: lib.cat([big(lib), lib.ones(1)]),
        lambda lib: big(lib)[None].expand(2, -1).sum(0),
        lambda lib: big(lib).view(10**11, 1).expand(-1, 2).logsumexp(1),
        lambda lib: big(lib).view(10**11, 1).softmax(1),
        lambda lib: lib.ones(200000, 1) @ lib.ones(1, 200000),
        lambda lib: lib.ones(4)[lib.zeros(1, dtype=lib.int64).expand(10**11)],
        lambda lib: lib.ones(4).gather(0, lib.zeros(1, dtype=lib.int64).expand(10**11)),
        lambda lib: lib.ones(4).index_select(0, lib.zeros(1, dtype=lib.int64).expand(10**11)),
        lambda lib: lib.nn.functional.unfold(lib.ones(1, 1, 1, 1).expand(1, 1, 100000, 100000), 3),
    ],
    ids=[
        "contiguous",
        "clone",
        "cast",
        "exp",
        "sin",
        "sigmoid",
        "gelu",
        "repeat",
        "cat",
        "sum",
        "logsumexp",
        "softmax",
        "matmul",
        "index",
        "gather",
        "index_select",
        "unfold",
    ],
)
def test_kernel_outputs_larger_than_memory_raise(lib, make):
    # kernel outputs from broadcast inputs: torch's RuntimeError, never an
    # abort or a PanicException
    with pytest.raises(RuntimeError, match="DefaultCPUAllocator: can't allocate memory"):
        make(lib)


def test_ctrl_c_stops_a_long_backward_and_the_graph_stays_usable(lib):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    x = lib.ones(64, 64, requires_grad=True)
    y = x
    for _ in range(20000):
        y = y * 1.0001
    loss = y.sum()
    fired = []

    def interrupt():
        fired.append(time.perf_counter())
        _thread.interrupt_main()

    # The interrupt is handled by whatever Python code runs next on this
    # thread; a finalizer run by the cyclic collector (garbage left by earlier
    # tests) would receive it, and CPython drops an exception raised there.
    gc.collect()
    gc.disable()
    # Python installs its SIGINT handler only when the process starts with
    # SIGINT at its default; a shell's background job (CI, nohup) starts
    # with it ignored, and then interrupt_main() does nothing. Ctrl-C at a
    # terminal runs this handler.
    old_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.2, interrupt)
    timer.start()
    start = time.perf_counter()
    runs = 0
    try:
        with pytest.raises(KeyboardInterrupt):
            # until the interrupt lands (inside a backward, most likely), or
            # a minute after it was sent (a loaded machine may run the timer
            # late)
            while not fired or time.perf_counter() - fired[0] < 60:
                loss.backward(retain_graph=True)
                runs += 1
        noticed = time.perf_counter() - fired[0]
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old_handler)
        gc.enable()
    assert fired, (
        f"the timer did not fire ({runs} backward runs, {time.perf_counter() - start:.1f} s)"
    )
    assert noticed < 30
    x.grad = None
    loss.backward(retain_graph=True)
    assert x.grad is not None and x.grad.shape == (64, 64)


def test_sixteen_python_threads_share_leaves(lib):
    """16 threads: a shared leaf, a custom Function whose backward runs a
    nested backward, tensor hooks, and one thread whose hook raises. The
    leaf's gradient is an exact sum; no thread hangs."""
    w = lib.ones(4, dtype=lib.float64, requires_grad=True)

    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with lib.enable_grad():
                xd = x.detach().requires_grad_()
                (gx,) = lib.autograd.grad((xd * xd).sum(), xd)  # nested: 2x
            return g * gx

    def boom(g):
        raise ValueError("boom")

    n, steps = 16, 5
    barrier = threading.Barrier(n)
    errors, raised = [], []

    def work(k):
        try:
            barrier.wait()
            for _ in range(steps):
                y = Square.apply(w * float(k))  # k^2 w^2
                y.register_hook(lambda g: g * 2)
                y.sum().backward()  # adds 2 * 2 k^2 w = 4 k^2 per element
            z = w * 1.0
            z.register_hook(boom)
            try:
                z.sum().backward()
            except ValueError as e:
                raised.append(str(e))
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hangs"
    assert not errors, errors
    assert raised == ["boom"] * n
    want = steps * 4 * sum(k * k for k in range(n))
    assert w.grad.tolist() == [float(want)] * 4
