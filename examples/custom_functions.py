"""Three real-world custom autograd Functions.

Written against torch's API: replace the import below with ``import torch``
and the file runs unchanged on PyTorch (tests/python/test_function_backward.py
runs it both ways and compares).

    PYTHONPATH=python python examples/custom_functions.py
"""

import math
from typing import Any

import ferrograd as torch


def _std(t: torch.Tensor) -> float:
    """Unbiased standard deviation of all elements, as a Python float."""
    n = t.numel()
    centered = t - t.mean()
    return math.sqrt((centered * centered).sum().item() / max(n - 1, 1))


class ScaleTracker(torch.autograd.Function):
    """Identity that records the scale (std) of the activations it sees on the
    forward pass and of their gradient on the backward pass, under ``name`` in
    the ``stats`` dict. Handy for spotting exploding or vanishing signals."""

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, name: str, stats: dict[str, dict[str, float]]
    ) -> torch.Tensor:
        stats.setdefault(name, {})["forward_std"] = _std(x)
        ctx.tag = name
        ctx.stats = stats
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        ctx.stats[ctx.tag]["backward_std"] = _std(grad)
        return grad, None, None


class GradFactor(torch.autograd.Function):
    """Identity on the forward pass; multiplies the gradient by ``factor`` on the
    backward pass (``factor=-1`` is the gradient reversal layer of domain
    adaptation; ``0 < factor < 1`` damps a branch's gradient)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, factor: float) -> torch.Tensor:
        ctx.factor = factor
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad * ctx.factor, None


class AllGather(torch.autograd.Function):
    """Differentiable all-gather, in a single process: every rank contributes
    its tensor and receives the stack of all of them, shape ``(world, *x.shape)``.
    Backward hands each rank the slice of the gradient that belongs to its own
    input. With a world of one the collective is local: gather is a stack of
    one tensor (in a multi-process run, backward would first sum the gradient
    over ranks, then slice)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, rank: int = 0, world_size: int = 1) -> torch.Tensor:
        if world_size != 1 or rank != 0:
            raise ValueError("this single-process AllGather needs rank=0, world_size=1")
        ctx.rank = rank
        gathered = [x]  # what a collective would return for a world of one
        return _stack(gathered)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        return grad.select(0, ctx.rank), None, None


def _stack(tensors: list[torch.Tensor]) -> torch.Tensor:
    # torch.stack for a list of one tensor, with the ops every backend has.
    (only,) = tensors
    return only.unsqueeze(0).contiguous()


def main() -> None:
    torch.manual_seed(0)
    w = torch.randn(4, 3, requires_grad=True)
    x = torch.randn(4, 3)
    stats: dict[str, dict[str, float]] = {}

    h = ScaleTracker.apply(w * x, "hidden", stats)
    h = GradFactor.apply(h, 0.25)
    g = AllGather.apply(h)
    loss = (g * g).sum()
    loss.backward()

    # The gradient reaching the tracker is 0.25 * 2 * h: half the scale of h.
    print("recorded scales:", stats)
    print("grad_fn chain:", g.grad_fn.name(), "<-", g.grad_fn.next_functions[0][0].name())
    # d(loss)/dw = 0.25 * 2 * (w * x) * x
    expected = (w * x * x * 0.5).detach()
    err = ((w.grad - expected) * (w.grad - expected)).sum().item()
    print("gradient check, squared error:", err)


if __name__ == "__main__":
    main()
