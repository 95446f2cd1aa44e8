"""CPU autocast (torch.autocast("cpu")): torch's op lists, the state's
scope, the gradients' dtypes, and custom Functions with custom_fwd/bwd."""

import warnings

import numpy as np
import pytest

import ferrograd as fg


def _model():
    fg.manual_seed(0)
    return fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.ReLU(), fg.nn.Linear(8, 3))


def test_lower_precision_and_float32_ops():
    x, w = fg.randn(2, 4), fg.randn(4, 3)
    with fg.autocast("cpu"):
        assert fg.is_autocast_enabled("cpu") and fg.get_autocast_dtype("cpu") == fg.bfloat16
        assert (x @ w).dtype == fg.bfloat16
        assert x.mm(w).dtype == fg.bfloat16
        assert fg.bmm(x.unsqueeze(0), w.unsqueeze(0)).dtype == fg.bfloat16
        assert fg.addmm(fg.zeros(3), x, w).dtype == fg.bfloat16
        assert fg.nn.functional.linear(x, w.t(), fg.zeros(3)).dtype == fg.bfloat16
        img, k = fg.randn(1, 2, 5, 5), fg.randn(3, 2, 3, 3)
        assert fg.nn.functional.conv2d(img, k).dtype == fg.bfloat16
        assert (x + 1).dtype == fg.float32  # not on either list
        y = (x @ w).float()
        low = y.bfloat16()
        assert fg.nn.functional.mse_loss(low, low).dtype == fg.float32
        assert fg.nn.functional.cross_entropy(low, fg.tensor([0, 2])).dtype == fg.float32
        # float64 inputs are not cast
        assert (x.double() @ w.double()).dtype == fg.float64
    assert not fg.is_autocast_enabled("cpu")
    assert (x @ w).dtype == fg.float32
    # the values: the float32 product of the bfloat16-rounded operands, rounded
    with fg.autocast("cpu"):
        got = x @ w
    want = (x.bfloat16().float() @ w.bfloat16().float()).bfloat16()
    assert np.allclose(got.float().tolist(), want.float().tolist(), rtol=1e-2, atol=1e-2)


def test_scope_nesting_dtype_and_decorator():
    x, w = fg.randn(2, 4), fg.randn(4, 3)
    with fg.autocast("cpu", dtype=fg.float16):
        assert (x @ w).dtype == fg.float16
        with fg.autocast("cpu", enabled=False):
            assert (x @ w).dtype == fg.float32
            assert not fg.is_autocast_enabled("cpu")
        assert (x @ w).dtype == fg.float16
    assert fg.get_autocast_dtype("cpu") == fg.bfloat16

    @fg.autocast("cpu")
    def f(a, b):
        return a @ b

    assert f(x, w).dtype == fg.bfloat16 and (x @ w).dtype == fg.float32
    with fg.cpu.amp.autocast():
        assert (x @ w).dtype == fg.bfloat16
    with fg.amp.autocast(device_type="cpu"):
        assert (x @ w).dtype == fg.bfloat16
    with pytest.raises(RuntimeError, match="unsupported autocast device_type"):
        fg.autocast("tpu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with fg.autocast("cuda"):
            assert (x @ w).dtype == fg.float32
    assert any("CUDA is not available" in str(c.message) for c in caught)
    with pytest.raises(RuntimeError, match="Bfloat16 and Float16"):
        fg.set_autocast_dtype("cpu", fg.float64)


def test_training_under_autocast_keeps_float32_parameters_and_grads():
    model = _model()
    opt = fg.optim.SGD(model.parameters(), lr=0.1)
    x, t = fg.randn(16, 4), fg.randint(0, 3, (16,))
    losses = []
    for _ in range(15):
        opt.zero_grad()
        with fg.autocast("cpu"):
            out = model(x)
            loss = fg.nn.functional.cross_entropy(out, t)
        assert out.dtype == fg.bfloat16 and loss.dtype == fg.float32
        loss.backward()
        assert all(p.grad.dtype == fg.float32 for p in model.parameters())
        opt.step()
        losses.append(loss.item())
    assert all(p.dtype == fg.float32 for p in model.parameters())
    assert losses[-1] < losses[0]


class _Scale(fg.autograd.Function):
    @staticmethod
    @fg.amp.custom_fwd(device_type="cpu", cast_inputs=fg.float32)
    def forward(ctx, x):
        ctx.dtype_seen = x.dtype
        ctx.autocast_inside = fg.is_autocast_enabled("cpu")
        return x * 2

    @staticmethod
    @fg.amp.custom_bwd(device_type="cpu")
    def backward(ctx, g):
        return g * 2


def test_custom_fwd_casts_inputs_and_turns_autocast_off():
    x = fg.randn(3).bfloat16().requires_grad_()
    with fg.autocast("cpu"):
        y = _Scale.apply(x)
    assert y.dtype == fg.float32
    y.sum().backward()
    assert x.grad.dtype == fg.bfloat16 and x.grad.tolist() == [2.0, 2.0, 2.0]
    y2 = _Scale.apply(x)  # outside autocast: no cast
    assert y2.dtype == fg.bfloat16


def test_autocast_matches_torch(torch):
    model = _model()
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    with torch.no_grad():
        for p, q in zip(tmodel.parameters(), model.parameters()):
            p.copy_(torch.tensor(q.tolist()))
    x = np.random.default_rng(0).standard_normal((5, 4)).tolist()
    t = [0, 1, 2, 1, 0]
    with fg.autocast("cpu"):
        out = model(fg.tensor(x))
        loss = fg.nn.functional.cross_entropy(out, fg.tensor(t))
    with torch.autocast("cpu"):
        tout = tmodel(torch.tensor(x))
        tloss = torch.nn.functional.cross_entropy(tout, torch.tensor(t))
    assert str(out.dtype).split(".")[-1] == str(tout.dtype).split(".")[-1]
    assert str(loss.dtype).split(".")[-1] == str(tloss.dtype).split(".")[-1]
    assert np.allclose(out.float().tolist(), tout.float().tolist(), rtol=2e-2, atol=2e-2)
    loss.backward()
    tloss.backward()
    for p, q in zip(model.parameters(), tmodel.parameters()):
        assert p.grad.dtype == fg.float32
        assert np.allclose(p.grad.tolist(), q.grad.tolist(), rtol=5e-2, atol=2e-2)
