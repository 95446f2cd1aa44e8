"""utils.checkpoint: both variants give the gradients of the plain run,
rerun the function once in the backward with the forward's random state,
and pass keyword arguments; checkpoint_sequential. On ferrograd and
(through `lib`) torch."""

import importlib
import math

import pytest


def mods(lib):
    nn = importlib.import_module(lib.__name__ + ".nn")
    ck = importlib.import_module(lib.__name__ + ".utils.checkpoint")
    return nn, ck


def make_net(lib):
    nn, _ = mods(lib)
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.3), nn.Linear(8, 2))
    with lib.no_grad():
        for i, p in enumerate(net.parameters()):
            p.copy_(lib.linspace(-1, 1, p.numel()).reshape(p.shape) * (0.5 + 0.1 * i))
    return net


@pytest.mark.parametrize("reentrant", [True, False])
def test_gradients_match_the_plain_run(lib, reentrant):
    _, ck = mods(lib)
    net = make_net(lib)
    x = lib.linspace(-2, 2, 12).reshape(3, 4).requires_grad_()

    def grads(checkpointed):
        net.zero_grad()
        x.grad = None
        lib.manual_seed(5)  # the dropout mask
        y = ck.checkpoint(net, x, use_reentrant=reentrant) if checkpointed else net(x)
        (y * y).sum().backward()
        return [x.grad.tolist()] + [p.grad.tolist() for p in net.parameters()]

    assert grads(True) == grads(False)


@pytest.mark.parametrize("reentrant", [True, False])
def test_reruns_once_with_the_same_randomness(lib, reentrant):
    _, ck = mods(lib)
    calls = []

    def f(a, b):
        calls.append(1)
        return (a * b).tanh() * lib.rand(3)

    a = lib.ones(3, requires_grad=True)
    b = lib.full((3,), 0.5, requires_grad=True)
    lib.manual_seed(1)
    y = ck.checkpoint(f, a, b, use_reentrant=reentrant)
    noise_after = lib.rand(1).item()
    y.sum().backward()
    after_backward = lib.rand(1).item()
    assert len(calls) == 2
    lib.manual_seed(1)
    noise = lib.rand(3)  # what the forward drew
    assert lib.rand(1).item() == noise_after
    assert lib.rand(1).item() == after_backward  # the rerun left the stream alone
    slope = 0.5 * (1 - math.tanh(0.5) ** 2)
    assert a.grad.tolist() == pytest.approx([n * slope for n in noise.tolist()], rel=1e-6)


def test_keyword_arguments_and_errors(lib):
    _, ck = mods(lib)

    def f(a, scale=2.0):
        return a.exp() * scale

    a = lib.zeros(2, requires_grad=True)
    ck.checkpoint(f, a, use_reentrant=False, scale=3.0).sum().backward()
    assert a.grad.tolist() == [3.0, 3.0]
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        ck.checkpoint(f, a, use_reentrant=True, scale=3.0)
    out = ck.checkpoint(f, lib.zeros(2), use_reentrant=True)
    with pytest.raises(RuntimeError):
        out.sum().backward()
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        ck.checkpoint(f, a)


def test_checkpoint_sequential(lib):
    nn, ck = mods(lib)
    lib.manual_seed(0)
    seq = nn.Sequential(*[nn.Linear(3, 3) for _ in range(4)])
    x = lib.linspace(0, 1, 6).reshape(2, 3)
    seq(x).pow(2).sum().backward()
    want = [p.grad.clone() for p in seq.parameters()]
    seq.zero_grad()
    ck.checkpoint_sequential(seq, 2, x, use_reentrant=False).pow(2).sum().backward()
    for p, w in zip(seq.parameters(), want):
        assert (p.grad - w).abs().max().item() < 1e-6
