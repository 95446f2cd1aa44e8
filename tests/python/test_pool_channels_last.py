"""Max pooling of a channels-last input (an NHWC tensor seen as NCHW, as
`x.permute(0, 3, 1, 2)` or torch's channels_last gives it) takes its own
kernel: values, indices and gradients must equal those of the same input
made contiguous, for strides, padding, dilation, ceil_mode, ties and NaN."""

import math

import pytest

import ferrograd as fg

F = fg.nn.functional


def nhwc_view(x):
    return x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)


@pytest.mark.parametrize(
    "kw",
    [
        dict(kernel_size=2, stride=2),
        dict(kernel_size=3, stride=1, padding=1),
        dict(kernel_size=3, stride=2, padding=1, dilation=2),
        dict(kernel_size=(2, 3), stride=(1, 2), ceil_mode=True),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("channels", [5, 37])  # 37: two blocks of 16 and a rest
def test_channels_last_matches_contiguous(kw, dtype, channels):
    fg.manual_seed(3)
    dt = getattr(fg, dtype)
    x = fg.randn(2, channels, 9, 11, dtype=dt)
    x[0, 1, 2, 3] = math.nan
    x[1, 2, :2, :2] = 1.5  # ties: the first position wins
    x[0, channels - 1, 4, 4] = math.nan
    a = x.clone().requires_grad_()
    b = nhwc_view(x).requires_grad_()
    assert not b.is_contiguous()
    va, ia = F.max_pool2d(a, return_indices=True, **kw)
    vb, ib = F.max_pool2d(b, return_indices=True, **kw)
    assert va.shape == vb.shape and ia.shape == ib.shape
    assert ia.tolist() == ib.tolist()
    assert fg.equal(va.isnan(), vb.isnan())
    assert fg.allclose(va.nan_to_num(0.0), vb.nan_to_num(0.0), atol=0.0, rtol=0.0)
    # Without indices or a graph, the values alone (a kernel that skips
    # the positions) are the same.
    with fg.no_grad():
        vc = F.max_pool2d(b, **kw)
    assert fg.equal(vc.isnan(), vb.isnan())
    assert fg.equal(vc.nan_to_num(0.0), vb.detach().nan_to_num(0.0))
    assert vc.stride() == vb.stride()
    g = fg.randn(*va.shape, dtype=dt)
    va.backward(g)
    vb.backward(g)
    assert fg.allclose(a.grad, b.grad, atol=0.0, rtol=0.0)


def test_unbatched_and_int_inputs_keep_working():
    x = nhwc_view(fg.arange(2 * 3 * 4 * 4).reshape(2, 3, 4, 4))
    assert F.max_pool2d(x, 2).tolist() == F.max_pool2d(x.contiguous(), 2).tolist()


def test_matches_torch(torch):
    import numpy as np

    v = np.random.default_rng(0).standard_normal((2, 4, 8, 8))
    out = []
    for lib in (fg, torch):
        x = lib.tensor(v).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
        x.requires_grad_()
        y, i = lib.nn.functional.max_pool2d(x, 3, 2, 1, return_indices=True)
        y.backward(lib.ones_like(y))
        out.append((y.detach().numpy(), i.numpy(), x.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)
