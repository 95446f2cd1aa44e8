"""The README's demo trains to >90% accuracy (python -m ferrograd.demo)."""

import ferrograd
from helpers import require

DEMO_NEEDS = (
    "autograd.Function",
    "nn.Module",
    "nn.ModuleList",
    "nn.Linear",
    "nn.functional.cross_entropy",
    "optim.Adam",
    "Tensor.clamp",
    "Tensor.argmax",
)


def test_demo_trains_two_spirals(capsys):
    require(ferrograd, *DEMO_NEEDS)
    from ferrograd import demo

    acc = demo.main(["--steps", "300"])
    out = capsys.readouterr().out
    assert acc > 0.9, out
    losses = [
        float(line.split("loss")[1].split()[0])
        for line in out.splitlines()
        if line.startswith("step")
    ]
    assert len(losses) >= 5
    assert losses[-1] < losses[0] / 5, out


def test_demo_relu_function_backward():
    require(ferrograd, *DEMO_NEEDS)
    from ferrograd import demo

    x = ferrograd.tensor([-1.5, 0.5, 2.0], dtype=ferrograd.float64, requires_grad=True)
    y = demo.ReLU.apply(x)
    assert y.grad_fn is not None
    (y * ferrograd.tensor([1.0, 2.0, 3.0], dtype=ferrograd.float64)).sum().backward()
    assert [x.grad.select(0, i).item() for i in range(3)] == [0.0, 2.0, 3.0]
    assert [y.select(0, i).item() for i in range(3)] == [0.0, 0.5, 2.0]
