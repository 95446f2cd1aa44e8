"""nn.functional.linear and the losses: reductions (and torch's legacy
size_average/reduce flags), ignore_index, class weights, label smoothing,
probability targets and torch's errors, run on ferrograd and (through the
`lib` fixture) on torch. Gradients are checked in the op registry."""

import math

import pytest


def F(lib):
    return lib.nn.functional


def test_reductions_and_legacy_flags(lib):
    x, y = lib.tensor([1.0, 2.0, 4.0]), lib.tensor([0.0, 2.0, 1.0])
    assert F(lib).mse_loss(x, y).item() == pytest.approx(10 / 3)
    assert F(lib).mse_loss(x, y, reduction="sum").item() == 10.0
    assert F(lib).l1_loss(x, y, reduction="none").tolist() == [1.0, 0.0, 3.0]
    assert F(lib).mse_loss(x, y, size_average=False).item() == 10.0
    assert F(lib).l1_loss(x, y, reduce=False).tolist() == [1.0, 0.0, 3.0]
    assert F(lib).smooth_l1_loss(x, y, reduction="none").tolist() == [0.5, 0.0, 2.5]
    assert F(lib).huber_loss(x, y, delta=2.0, reduction="none").tolist() == [0.5, 0.0, 4.0]
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F(lib).mse_loss(x, y, reduction="avg")


def test_linear(lib):
    x = lib.tensor([[1.0, 2.0]])
    w = lib.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    assert F(lib).linear(x, w).tolist() == [[1.0, 4.0, 3.0]]
    assert F(lib).linear(x, w, lib.tensor([1.0, 1.0, 1.0])).tolist() == [[2.0, 5.0, 4.0]]


def test_binary_cross_entropy(lib):
    p, t = lib.tensor([0.5, 0.0, 1.0]), lib.tensor([1.0, 0.0, 0.0])
    # log(0) is clamped to -100, as in torch.
    assert F(lib).binary_cross_entropy(p, t, reduction="none").tolist() == pytest.approx(
        [math.log(2), 0.0, 100.0]
    )
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F(lib).binary_cross_entropy(lib.tensor([1.5]), lib.tensor([1.0]))
    z = lib.zeros(2, requires_grad=True)
    loss = F(lib).binary_cross_entropy_with_logits(z, lib.tensor([1.0, 0.0]))
    assert loss.item() == pytest.approx(math.log(2))
    (g,) = lib.autograd.grad(loss, z)  # sigmoid(0) - t, halved by the mean
    assert g.tolist() == pytest.approx([-0.25, 0.25])


def test_nll_and_cross_entropy(lib):
    logits = lib.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 3.0]])
    target = lib.tensor([0, 2])
    logp = F(lib).log_softmax(logits, 1)
    want = -(logp[0, 0] + logp[1, 2]).item() / 2
    assert F(lib).cross_entropy(logits, target).item() == pytest.approx(want)
    assert F(lib).nll_loss(logp, target).item() == pytest.approx(want)
    # ignore_index drops a sample from the sum and the count.
    assert F(lib).cross_entropy(logits, target, ignore_index=2).item() == pytest.approx(
        -logp[0, 0].item()
    )
    w = lib.tensor([1.0, 1.0, 3.0])
    weighted = -(logp[0, 0] + 3 * logp[1, 2]).item() / 4
    assert F(lib).nll_loss(logp, target, weight=w).item() == pytest.approx(weighted)
    assert math.isnan(F(lib).cross_entropy(logits, lib.tensor([-100, -100])).item())
    probs = lib.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    assert F(lib).cross_entropy(logits, probs).item() == pytest.approx(want)
    smooth = F(lib).cross_entropy(logits, target, label_smoothing=0.3).item()
    assert smooth == pytest.approx(0.7 * want - 0.3 / 3 * logp.sum().item() / 2)


def test_class_target_errors(lib):
    logits = lib.zeros(3, 4)
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        F(lib).cross_entropy(logits, lib.tensor([0, 4, 1]))
    with pytest.raises(
        ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)"
    ):
        F(lib).nll_loss(logits, lib.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long"):
        F(lib).nll_loss(logits, lib.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        F(lib).cross_entropy(logits, lib.tensor([0, 1, 2]), label_smoothing=1.5)


def test_training_steps_reduce_the_loss(lib):
    lib.manual_seed(0)
    x = lib.randn(32, 5)
    y = (x[:, 0] > 0).long()
    w = lib.zeros(2, 5, requires_grad=True)
    losses = []
    for _ in range(30):
        loss = F(lib).cross_entropy(F(lib).linear(x, w), y)
        (g,) = lib.autograd.grad(loss, w)
        with lib.no_grad():
            w -= 0.5 * g
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
