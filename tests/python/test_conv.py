"""Convolution, pooling and unfold/fold (functional and modules) on ferrograd
and (through the `lib` fixture) torch; values against torch's; a small CNN
trained step for step against torch. Gradients are in the op registry."""

import importlib

import numpy as np
import pytest

import ferrograd


def F_of(lib):
    return importlib.import_module(lib.__name__ + ".nn.functional")


def nn_of(lib):
    return importlib.import_module(lib.__name__ + ".nn")


def arange(lib, *shape):
    n = int(np.prod(shape))
    return lib.arange(n, dtype=lib.float64).reshape(*shape)


def test_conv2d_values(lib):
    F = F_of(lib)
    x = arange(lib, 1, 1, 3, 3)
    w = lib.ones(1, 1, 2, 2, dtype=lib.float64)
    y = F.conv2d(x, w, lib.tensor([0.5], dtype=lib.float64))
    assert y.tolist() == [[[[8.5, 12.5], [20.5, 24.5]]]]
    # padding, stride and dilation: taps at distance 2, zeros outside
    y = F.conv2d(x, w, padding=1, dilation=2)
    assert y.tolist() == [[[[4.0, 8.0, 4.0], [8.0, 16.0, 8.0], [4.0, 8.0, 4.0]]]]
    y = F.conv2d(x, w, padding=1, stride=2, dilation=2)
    assert y.tolist() == [[[[4.0, 4.0], [4.0, 4.0]]]]
    # groups: each output channel sees its own input channel
    x2 = lib.cat([x, 10 * x], 1)
    y = F.conv2d(x2, lib.ones(2, 1, 1, 1, dtype=lib.float64), groups=2)
    assert lib.equal(y, x2)
    # unbatched input
    assert F.conv2d(x[0], w).shape == (1, 2, 2)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    "shape",
    [
        (32, 3, 12, 4, 5, 1, 2, "float32"),
        (8, 6, 10, 8, 3, 2, 1, "float32"),
        (5, 3, 9, 4, 3, 2, 0, "float64"),
        (6, 4, 8, 5, (1, 3), 1, (0, 1), "float64"),
        # windows of a sample over 2 MiB: many column blocks per sample
        (4, 64, 32, 16, 3, 1, 1, "float32"),
        # one sample, its blocks over the threads
        (1, 16, 40, 8, 3, 1, 1, "float32"),
        (1, 16, 33, 8, 3, 2, 1, "float64"),
    ],
)
def test_conv_values_alone_match_the_recorded_forward(shape, threads):
    """Without autograd (no_grad, or no input requiring grad) conv runs
    each sample's windows through the product in cache, without the
    im2col tensor: the same values, bit for bit, as the recorded forward,
    at any thread count and for an input in channels-last memory order."""
    n, c, h, o, k, stride, pad, dtype = shape
    ks = k if isinstance(k, tuple) else (k, k)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, c, h, h)).astype(dtype)
    w = rng.standard_normal((o, c) + ks).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    F = F_of(ferrograd)
    old = ferrograd.get_num_threads()
    ferrograd.set_num_threads(threads)
    try:
        X, W, B = ferrograd.from_numpy(x), ferrograd.from_numpy(w), ferrograd.from_numpy(b)
        with ferrograd.no_grad():
            alone = F.conv2d(X, W, B, stride=stride, padding=pad)
        plain = F.conv2d(X, W, B, stride=stride, padding=pad)
        recorded = F.conv2d(X, W.detach().requires_grad_(), B, stride=stride, padding=pad)
        X_nhwc = ferrograd.from_numpy(np.ascontiguousarray(x.transpose(0, 2, 3, 1))).permute(
            0, 3, 1, 2
        )
        nhwc = F.conv2d(X_nhwc, W, B, stride=stride, padding=pad)
    finally:
        ferrograd.set_num_threads(old)
    assert recorded.grad_fn is not None and alone.grad_fn is None
    want = recorded.detach().numpy()
    for got in (alone, plain, nhwc):
        assert got.shape == recorded.shape
        assert np.array_equal(got.numpy(), want)
    # and the values themselves, against a direct sum over the windows
    xp = np.pad(
        x.astype(np.float64),
        ((0, 0), (0, 0)) + tuple((p, p) for p in (pad if isinstance(pad, tuple) else (pad, pad))),
    )
    ho = (xp.shape[2] - ks[0]) // stride + 1
    wo = (xp.shape[3] - ks[1]) // stride + 1
    ref = np.zeros((n, o, ho, wo))
    for i in range(ho):
        for j in range(wo):
            win = xp[:, :, i * stride : i * stride + ks[0], j * stride : j * stride + ks[1]]
            ref[:, :, i, j] = np.einsum("ncab,ocab->no", win, w.astype(np.float64))
    ref += b[None, :, None, None]
    tol = 1e-4 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(want, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize(
    "shape",
    [
        # (n, c, h, o, k, stride, pad, dtype)
        (1, 16, 40, 8, 3, 1, 1, "float32"),  # one sample, several column blocks
        (6, 8, 20, 12, 3, 2, 1, "float64"),  # several samples per partial sum
        (40, 3, 9, 4, 3, 1, 0, "float32"),  # more units than partial sums
    ],
)
def test_conv_gradients_do_not_depend_on_the_thread_count(shape):
    """The weight's gradient gathers the windows again block by block and
    sums the blocks in an order fixed by the sizes: the same bits at 1, 2
    and 3 threads, and equal to a direct float64 sum over the windows."""
    n, c, h, o, k, stride, pad, dtype = shape
    rng = np.random.default_rng(2)
    x = rng.standard_normal((n, c, h, h)).astype(dtype)
    w = rng.standard_normal((o, c, k, k)).astype(dtype)
    F = F_of(ferrograd)
    old = ferrograd.get_num_threads()
    grads = []
    try:
        for threads in (1, 2, 3):
            ferrograd.set_num_threads(threads)
            X = ferrograd.from_numpy(x).requires_grad_()
            W = ferrograd.from_numpy(w).requires_grad_()
            y = F.conv2d(X, W, stride=stride, padding=pad)
            g = ferrograd.from_numpy(np.cos(np.arange(y.numel())).reshape(y.shape).astype(dtype))
            y.backward(g)
            grads.append((X.grad.numpy(), W.grad.numpy(), g.numpy()))
    finally:
        ferrograd.set_num_threads(old)
    for dx, dw, _ in grads[1:]:
        assert np.array_equal(dx, grads[0][0])
        assert np.array_equal(dw, grads[0][1])
    dw, g = grads[0][1], grads[0][2].astype(np.float64)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ref = np.zeros((o, c, k, k))
    for a in range(k):
        for b in range(k):
            win = xp[
                :, :, a : a + stride * g.shape[2] : stride, b : b + stride * g.shape[3] : stride
            ]
            ref[:, :, a, b] = np.einsum("nchw,nohw->oc", win, g)
    tol = 1e-4 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(dw, ref, rtol=tol, atol=tol * np.abs(ref).max())


def test_conv_records_when_only_the_bias_requires_grad(lib):
    # the values-only path adds the bias inside its kernel: a bias that
    # requires grad (input and weight not) must still get its gradient
    F = F_of(lib)
    x = arange(lib, 4, 3, 5, 5)
    w = lib.ones(4, 3, 3, 3, dtype=lib.float64)
    b = lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True)
    y = F.conv2d(x, w, b, padding=1)
    assert y.grad_fn is not None
    y.sum().backward()
    assert b.grad.tolist() == [100.0] * 4


@pytest.mark.parametrize("bias", [True, False])
def test_conv_records_one_node_with_the_bias_inside(lib, bias):
    # As torch: the convolution (and its bias) is one ConvolutionBackward0
    # node over the input, the weight and the bias, so a backward through
    # it is a chain; the input, the weight and the bias get their gradients.
    F = F_of(lib)
    x = arange(lib, 2, 3, 5, 5).requires_grad_()
    w = lib.ones(4, 3, 3, 3, dtype=lib.float64, requires_grad=True)
    b = lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True)
    y = F.conv2d(x, w, b if bias else None, padding=1)
    assert y.grad_fn.name() == "ConvolutionBackward0"
    y.sum().backward()
    assert w.grad.shape == w.shape and x.grad.shape == x.shape
    # each output position sums its window: the weight's gradient per tap
    # is the sum of the shifted inputs; the bias's the count of outputs.
    assert x.grad[0, 0, 2, 2].item() == 4 * 9
    if bias:
        assert b.grad.tolist() == [50.0] * 4
    else:
        assert b.grad is None


def test_conv_same_padding_keeps_size(lib):
    F = F_of(lib)
    x = lib.randn(2, 3, 7, 6)
    for k in [(3, 3), (4, 2), (2, 5)]:
        y = F.conv2d(x, lib.randn(5, 3, *k), padding="same")
        assert y.shape == (2, 5, 7, 6)
    assert F.conv1d(lib.randn(2, 3, 9), lib.randn(4, 3, 4), padding="valid").shape == (2, 4, 6)
    assert F.conv3d(lib.randn(1, 2, 4, 4, 4), lib.randn(3, 2, 2, 2, 2)).shape == (1, 3, 3, 3, 3)


def test_conv_transpose_is_convs_adjoint(lib):
    F = F_of(lib)
    rng = np.random.default_rng(1)
    x = lib.tensor(rng.standard_normal((2, 4, 7, 6)))
    w = lib.tensor(rng.standard_normal((6, 2, 3, 2)))
    kw = dict(stride=2, padding=1, dilation=(1, 2), groups=2)
    y = F.conv2d(x, w, **kw)
    c = lib.tensor(rng.standard_normal(tuple(y.shape)))
    back = F.conv_transpose2d(c, w, output_padding=(0, 1), **kw)
    assert back.shape == x.shape
    assert abs((y * c).sum().item() - (x * back).sum().item()) < 1e-9
    # a 1x1 input spreads the kernel over the output
    k = lib.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    assert F.conv_transpose2d(lib.ones(1, 1, 1, 1), k).tolist() == k.tolist()
    assert F.conv_transpose2d(lib.ones(1, 1, 2, 1), k, stride=2).tolist() == [
        [[[1.0, 2.0], [3.0, 4.0], [1.0, 2.0], [3.0, 4.0]]]
    ]


def test_unfold_fold_round_trip(lib):
    F = F_of(lib)
    x = arange(lib, 2, 3, 4, 5)
    cols = F.unfold(x, (2, 3), padding=1, stride=(1, 2))
    assert cols.shape == (2, 3 * 6, 5 * 3)
    # fold(unfold(x)) multiplies each element by the windows covering it
    ones = lib.ones_like(x)
    cover = F.fold(F.unfold(ones, 2), (4, 5), 2)
    assert lib.equal(F.fold(F.unfold(x, 2), (4, 5), 2), x * cover)
    assert cover[0, 0].tolist()[0] == [1.0, 2.0, 2.0, 2.0, 1.0]


def test_max_pool_indices_and_ties(lib):
    F = F_of(lib)
    x = lib.tensor([[[1.0, 3.0, 3.0, 2.0, 5.0, 4.0]]], requires_grad=True)
    v, i = F.max_pool1d(x, 2, return_indices=True)
    assert v.tolist() == [[[3.0, 3.0, 5.0]]] and i.tolist() == [[[1, 2, 4]]]
    assert i.dtype == lib.int64
    v, i = F.max_pool1d(x, 3, stride=1, return_indices=True)
    assert i.tolist() == [[[1, 1, 4, 4]]]  # the first of equal maxima
    v.sum().backward()
    assert x.grad.tolist() == [[[0.0, 2.0, 0.0, 0.0, 2.0, 0.0]]]
    z = F.max_pool2d(lib.ones(1, 1, 2, 2, requires_grad=True), 2)
    assert type(z.grad_fn).__name__ == "MaxPool2DWithIndicesBackward0"
    y, j = F.max_pool2d(arange(lib, 1, 1, 5, 5), 2, 2, 1, ceil_mode=True, return_indices=True)
    assert y.tolist() == [[[[0.0, 2.0, 4.0], [10.0, 12.0, 14.0], [20.0, 22.0, 24.0]]]]
    assert j.tolist() == [[[[0, 2, 4], [10, 12, 14], [20, 22, 24]]]]


def test_adaptive_max_pool(lib):
    F = F_of(lib)
    nn = nn_of(lib)
    x = lib.tensor([[[5.0, 1.0, 2.0, 0.0, 4.0]]], requires_grad=True)
    v, i = F.adaptive_max_pool1d(x, 3, return_indices=True)  # windows 0-1, 1-3, 3-4
    assert v.tolist() == [[[5.0, 2.0, 4.0]]] and i.tolist() == [[[0, 2, 4]]]
    v.sum().backward()
    assert x.grad.tolist() == [[[1.0, 0.0, 1.0, 0.0, 1.0]]]
    z = F.adaptive_max_pool2d(lib.ones(1, 1, 4, 4, requires_grad=True), 2)
    assert type(z.grad_fn).__name__ == "AdaptiveMaxPool2DBackward0"
    y = F.adaptive_max_pool2d(arange(lib, 1, 1, 5, 6), (3, None))
    assert y[0, 0, :, 0].tolist() == [6.0, 18.0, 24.0] and y.shape == (1, 1, 3, 6)
    m = nn.AdaptiveMaxPool2d((2, 3), return_indices=True)
    assert repr(m) == "AdaptiveMaxPool2d(output_size=(2, 3))"
    v, i = m(lib.randn(2, 3, 5, 7))
    assert v.shape == i.shape == (2, 3, 2, 3) and i.dtype == lib.int64
    with pytest.raises(RuntimeError, match="Expected 3D or 4D tensor"):
        F.adaptive_max_pool2d(lib.randn(5), 2)


def test_avg_pool_divisors(lib):
    F = F_of(lib)
    x = arange(lib, 1, 1, 5, 5)
    y = F.avg_pool2d(x, 2, 2, 1, ceil_mode=True)
    assert y[0, 0, 0].tolist() == [0.0, 0.75, 1.75]
    y = F.avg_pool2d(x, 2, 2, 1, ceil_mode=True, count_include_pad=False)
    assert y[0, 0, 0].tolist() == [0.0, 1.5, 3.5]
    assert F.avg_pool2d(x, 2, divisor_override=1)[0, 0, 0].tolist() == [12.0, 20.0]
    assert F.adaptive_avg_pool2d(x, 1).item() == 12.0
    y = F.adaptive_avg_pool1d(arange(lib, 1, 1, 5), 3)
    assert y.tolist() == [[[0.5, 2.0, 3.5]]]  # windows 0-1, 1-3, 3-4


def test_interpolate(lib):
    F = F_of(lib)
    nn = nn_of(lib)
    x = arange(lib, 1, 1, 2, 2)
    assert F.interpolate(x, scale_factor=2).tolist() == [
        [[[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [2.0, 2.0, 3.0, 3.0], [2.0, 2.0, 3.0, 3.0]]]
    ]
    y = F.interpolate(x, size=(3, 3), mode="bilinear", align_corners=True)
    assert y.tolist() == [[[[0.0, 0.5, 1.0], [1.0, 1.5, 2.0], [2.0, 2.5, 3.0]]]]
    y = F.interpolate(arange(lib, 1, 1, 2), size=4, mode="linear")
    assert y.tolist() == [[[0.0, 0.25, 0.75, 1.0]]]
    assert F.interpolate(arange(lib, 1, 1, 4, 4), scale_factor=0.5, mode="area")[0, 0].tolist() == [
        [2.5, 4.5],
        [10.5, 12.5],
    ]
    m = nn.Upsample(scale_factor=2, mode="bilinear")
    assert repr(m) == "Upsample(scale_factor=2.0, mode='bilinear')"
    assert m(x).shape == (1, 1, 4, 4)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(x, size=4, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, size=4, align_corners=True)
    with pytest.raises(NotImplementedError, match="linear mode needs 3D input"):
        F.interpolate(x, size=4, mode="linear")


def test_against_torch(torch):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in [(2, 4, 9, 8), (6, 2, 3, 2), (6,)]]

    def run(lib):
        F = F_of(lib)
        x, w, b = [lib.tensor(a, dtype=lib.float32, requires_grad=True) for a in arrays]
        outs = [
            F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2),
            F.conv2d(x, w, None, padding="same", groups=2),
            F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
            F.avg_pool2d(x, (3, 2), 2, 1, ceil_mode=True, count_include_pad=False),
            F.adaptive_avg_pool2d(x, (4, 3)),
            F.unfold(x, (2, 3), dilation=2, padding=1),
            F.interpolate(x, scale_factor=(1.3, 0.6), mode="bilinear"),
            F.interpolate(x, size=(11, 5)),
        ]
        loss = sum((o * o).sum() for o in outs)
        grads = lib.autograd.grad(loss, (x, w, b))
        return [o.detach().numpy() for o in outs + list(grads)]

    for a, b in zip(run(ferrograd), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_modules(lib):
    nn = nn_of(lib)
    c = nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2, bias=False)
    assert c.weight.shape == (6, 2, 3, 2) and c.bias is None
    assert (c.kernel_size, c.stride, c.padding) == ((3, 2), (2, 2), (1, 1))
    assert repr(c) == (
        "Conv2d(4, 6, kernel_size=(3, 2), stride=(2, 2), padding=(1, 1), groups=2, bias=False)"
    )
    assert c(lib.randn(1, 4, 5, 5)).shape == (1, 6, 3, 3)
    # default init: uniform within 1/sqrt(fan_in) for weight and bias
    c = nn.Conv1d(3, 8, 5)
    bound = 1 / np.sqrt(15)
    assert 0.5 * bound < c.weight.abs().max().item() <= bound
    assert c.bias.abs().max().item() <= bound
    assert list(c.state_dict()) == ["weight", "bias"]
    c = nn.Conv2d(2, 2, 3, padding="same", padding_mode="reflect", dilation=2)
    assert c._reversed_padding_repeated_twice == [2, 2, 2, 2]
    assert c(lib.randn(1, 2, 6, 5)).shape == (1, 2, 6, 5)
    c = nn.Conv2d(2, 2, (4, 3), padding="same", padding_mode="circular")
    assert c._reversed_padding_repeated_twice == [1, 1, 1, 2]
    assert nn.Conv3d(2, 3, 2)(lib.randn(2, 2, 3, 3, 3)).shape == (2, 3, 2, 2, 2)
    t = nn.ConvTranspose2d(3, 4, 3, stride=2)
    assert t.weight.shape == (3, 4, 3, 3) and t.transposed
    x = lib.randn(1, 3, 5, 5)
    assert t(x).shape == (1, 4, 11, 11)
    assert t(x, output_size=[12, 12]).shape == (1, 4, 12, 12)
    assert t(x, output_size=[1, 4, 11, 12]).shape == (1, 4, 11, 12)
    with pytest.raises(ValueError, match="valid sizes range from"):
        t(x, output_size=[13, 12])
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect")
    assert repr(nn.ConvTranspose1d(2, 4, 3, stride=2, output_padding=1, groups=2)) == (
        "ConvTranspose1d(2, 4, kernel_size=(3,), stride=(2,), output_padding=(1,), groups=2)"
    )
    m = nn.MaxPool2d(2, return_indices=True)
    v, i = m(lib.randn(1, 1, 4, 4))
    assert v.shape == i.shape == (1, 1, 2, 2)
    assert repr(m) == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.AvgPool1d(3)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert nn.AvgPool2d(2, ceil_mode=True)(lib.randn(1, 3, 5, 5)).shape == (1, 3, 3, 3)
    assert nn.AdaptiveAvgPool2d((None, 2))(lib.randn(2, 3, 5, 4)).shape == (2, 3, 5, 2)
    assert repr(nn.AdaptiveAvgPool2d((1, 1))) == "AdaptiveAvgPool2d(output_size=(1, 1))"
    assert nn.Unfold(2, padding=1)(lib.randn(1, 2, 3, 3)).shape == (1, 8, 16)
    assert nn.Fold((4, 5), 2)(lib.randn(1, 8, 12)).shape == (1, 2, 4, 5)


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda nn: nn.Conv2d(3, 4, 3, groups=0), ValueError, "groups must be a positive"),
        (lambda nn: nn.Conv2d(3, 4, 3, groups=2), ValueError, "in_channels must be divisible"),
        (lambda nn: nn.Conv2d(6, 4, 3, groups=3), ValueError, "out_channels must be divisible"),
        (lambda nn: nn.Conv2d(3, 4, 3, padding="full"), ValueError, "Invalid padding string"),
        (lambda nn: nn.Conv2d(3, 4, 3, padding="same", stride=2), ValueError, "strided"),
        (lambda nn: nn.Conv2d(3, 4, 3, padding_mode="edge"), ValueError, "padding_mode must"),
    ],
)
def test_module_argument_errors(lib, make, error, match):
    with pytest.raises(error, match=match):
        make(nn_of(lib))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda F, x: F.conv2d(x, x.new_ones(4, 3, 3, 3)), "to have 3 channels, but got 2"),
        (lambda F, x: F.conv2d(x, x.new_ones(4, 2, 6, 6)), "Kernel size can't be greater"),
        (lambda F, x: F.conv2d(x, x.new_ones(3, 1, 3, 3), groups=2), "divisible by 2"),
        (lambda F, x: F.conv2d(x, x.new_ones(4, 2, 3, 3), x.new_ones(3)), "expected bias"),
        (lambda F, x: F.conv2d(x, x.new_ones(4, 2, 3, 3), stride=0), "non-positive stride"),
        (lambda F, x: F.conv2d(x, x.new_ones(4, 2, 3, 3), padding=-1), "negative padding"),
        (lambda F, x: F.conv2d(x, x.new_ones(4, 2, 2, 2), padding="foo"), "Invalid padding"),
        (lambda F, x: F.conv2d(x, x.new_ones(4, 2, 3, 3), stride=(1, 1, 1)), "list of 2 values"),
        (lambda F, x: F.conv2d(x.double(), x.new_ones(4, 2, 3, 3)), "expected scalar type"),
        (lambda F, x: F.conv2d(x[0, 0], x.new_ones(4, 2, 3, 3)), "Expected 3D .unbatched."),
        (lambda F, x: F.conv_transpose2d(x, x.new_ones(3, 4, 3, 3)), "to have 3 channels"),
        (lambda F, x: F.conv_transpose2d(x, x.new_ones(2, 2, 3, 3), padding=5), "too small"),
        (lambda F, x: F.conv_transpose2d(x, x.new_ones(2, 2, 3, 3), output_padding=1), "smaller"),
        (lambda F, x: F.max_pool2d(x, 3, padding=2), "pad should be at most half"),
        (lambda F, x: F.max_pool2d(x, 6), "Output size is too small"),
        (lambda F, x: F.max_pool2d(x, 2, stride=0), "stride should not be zero"),
        (lambda F, x: F.avg_pool2d(x, 2, divisor_override=0), "divisor must be not zero"),
        (lambda F, x: F.adaptive_avg_pool2d(x, (2, 2, 2)), "output_size must be 2"),
        (lambda F, x: F.unfold(x, 6), "must be at least one"),
        (lambda F, x: F.fold(x.new_ones(1, 7, 16), (5, 5), 2), "divisible by the product"),
        (lambda F, x: F.fold(x.new_ones(1, 8, 15), (5, 5), 2), "number of sliding blocks"),
    ],
)
def test_bad_input_raises_and_changes_nothing(lib, call, match):
    x = lib.ones(1, 2, 5, 5, requires_grad=True)
    before = x.detach().clone()
    with pytest.raises(RuntimeError, match=match):
        call(F_of(lib), x)
    assert lib.equal(x.detach(), before) and x.grad is None and x._version == 0


def test_cnn_training_matches_torch(torch):
    def run(lib):
        nn = nn_of(lib)
        F = F_of(lib)
        optim = importlib.import_module(lib.__name__ + ".optim")
        rng = np.random.default_rng(3)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
                self.conv2 = nn.Conv2d(4, 6, 3, groups=2)
                self.pool = nn.MaxPool2d(2)
                self.head = nn.Linear(6 * 2 * 2, 3)

            def forward(self, x):
                x = self.pool(F.relu(self.conv1(x)))
                x = F.avg_pool2d(F.relu(self.conv2(x)), 1)
                return self.head(x.flatten(1))

        net = Net()
        with lib.no_grad():
            for p in net.parameters():
                p.copy_(lib.tensor(0.3 * rng.standard_normal(tuple(p.shape)), dtype=p.dtype))
        x = lib.tensor(rng.standard_normal((8, 1, 8, 8)), dtype=lib.float32)
        y = lib.tensor(rng.integers(0, 3, 8))
        opt = optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        losses = []
        for _ in range(15):
            opt.zero_grad()
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    fl, tl = run(ferrograd), run(torch)
    assert fl == pytest.approx(tl, rel=1e-4)
    assert fl[-1] < fl[0]
