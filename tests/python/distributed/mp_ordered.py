"""Run on N ranks by test_distributed.py: a backward whose independent
branches each contain a collective. Each branch's backward first runs a
slow node whose delay depends on the rank, so the collectives become ready
in a different order on every rank; the engine's ordered lane
(``ordered_backward``) must still issue them in one order (else the ranks'
calls would not match: a ValueError, or a hang). Prints "OK <rank>".
With ``--unordered`` the Functions do not ask for the lane: the run must
fail with the mismatch error (the test that the test can fail)."""

import sys
import time

import ferrograd as torch
import ferrograd.distributed as dist
import ferrograd.distributed.nn.functional as F

UNORDERED = "--unordered" in sys.argv
if UNORDERED:
    F._Collective.ordered_backward = False
dist.init_process_group("mpi", timeout=10 if UNORDERED else 60)
r, n = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(4)
BRANCHES = 4
issued = []


class Slow(torch.autograd.Function):
    """Identity; its backward sleeps longer for early branches on rank 0
    and for late branches on the other ranks."""

    @staticmethod
    def forward(ctx, x, b):
        ctx.b = b
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        order = ctx.b if r == 0 else BRANCHES - 1 - ctx.b
        time.sleep((0.06 if UNORDERED else 0.02) * (BRANCHES - order))
        return g, None


class Logged(torch.autograd.Function):
    """all_reduce whose backward records the order it ran in."""

    ordered_backward = not UNORDERED

    @staticmethod
    def forward(ctx, x, b):
        ctx.b = b
        y = x.clone()
        dist.all_reduce(y)
        return y

    @staticmethod
    def backward(ctx, g):
        issued.append(ctx.b)
        g = g.clone()
        dist.all_reduce(g)
        return g, None


x = torch.randn(1 << 18, dtype=torch.float64, requires_grad=True)
for trial in range(3):
    issued.clear()
    total = 0
    for b in range(BRANCHES):
        # branches big enough for the engine to run them on pool threads,
        # every branch a different size: a pairing of different branches
        # across ranks could not go unnoticed
        h = (x[: 40000 * (b + 1)] * (b + 1)).sin()
        if b % 2:
            h = Logged.apply(h, b)
        else:
            h = F.all_reduce(h)
        # summed as big tensors: the engine spawns the branches on the pool
        total = total + Slow.apply(h, b)[:40000]
    total.sum().backward()
    # the Python-side log: latest created first
    assert issued == [3, 1], issued
    # the gradient: every rank's loss reads every rank's x through the
    # all_reduce, so d(sum of losses)/dx_r = n * d(own branch)/dx
    expect = torch.zeros_like(x)
    for b in range(BRANCHES):
        expect[:40000] += n * (b + 1) * (x[:40000].detach() * (b + 1)).cos()
    assert torch.allclose(x.grad, expect), (x.grad - expect).abs().max()
    x.grad = None
dist.destroy_process_group()
print(f"OK {r}", flush=True)
