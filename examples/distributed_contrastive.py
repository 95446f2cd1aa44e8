"""A contrastive loss over an all-gathered batch, trained on N processes.

    python -m ferrograd.distributed.run -n 2 examples/distributed_contrastive.py

Each rank embeds its shard of the batch; ``GatherLayer`` (the custom
Function such training code writes against torch.distributed) all-gathers
the embeddings so that every rank scores its rows against the whole batch;
its backward all-reduces the gradient and keeps this rank's slice. The
encoder is wrapped in DistributedDataParallel. Rank 0 then trains the same
encoder in one process over the whole batch and checks that both end with
the same parameters (float64).

Why the two agree: rank r's loss is the mean over its rows of the
cross-entropy of (its rows x all rows); the sum over ranks of these losses
divided by N is the single-process loss (the mean over all rows). DDP
averages the gradients (the 1/N), and GatherLayer's backward sums over
ranks the gradient each rank's loss sends to every slice (the all_reduce).
"""

from typing import Any

import ferrograd as torch
import ferrograd.distributed as dist
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.nn.parallel import DistributedDataParallel as DDP

PER_RANK = 4
STEPS = 5
TEMPERATURE = 0.5


class GatherLayer(torch.autograd.Function):
    """All-gather with the gradient of the sum of the ranks' losses."""

    ordered_backward = True  # its backward communicates

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        out = [torch.empty_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(out, x.contiguous())
        return torch.cat(out)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        grad = grad.contiguous().clone()
        dist.all_reduce(grad)
        k = grad.shape[0] // dist.get_world_size()
        r = dist.get_rank()
        return grad[r * k : (r + 1) * k]


def encoder() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 8)).double()


def batch(step: int, world: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two views of PER_RANK * world items: (anchors, positives)."""
    torch.manual_seed(100 + step)
    base = torch.randn(PER_RANK * world, 6, dtype=torch.float64)
    noise = torch.randn(PER_RANK * world, 6, dtype=torch.float64)
    return base, base + 0.1 * noise


def loss_fn(za: torch.Tensor, zp_all: torch.Tensor, first_row: int) -> torch.Tensor:
    """Cross-entropy of each anchor against every positive; the matching
    positive of anchor i is row first_row + i."""
    za = F.normalize(za, dim=1)
    zp_all = F.normalize(zp_all, dim=1)
    logits = za @ zp_all.t() / TEMPERATURE
    target = torch.arange(za.shape[0]) + first_row
    return F.cross_entropy(logits, target)


def train_distributed() -> nn.Module:
    r, n = dist.get_rank(), dist.get_world_size()
    net = encoder()
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for step in range(STEPS):
        a, p = batch(step, n)
        rows = slice(r * PER_RANK, (r + 1) * PER_RANK)
        za, zp = model(a[rows]), model(p[rows])
        loss = loss_fn(za, GatherLayer.apply(zp), r * PER_RANK)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net  # the module DDP wraps (model.module)


def train_single(n: int) -> nn.Module:
    model = encoder()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for step in range(STEPS):
        a, p = batch(step, n)
        loss = loss_fn(model(a), model(p), 0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def main() -> None:
    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    model = train_distributed()
    if r == 0:
        single = train_single(n)
        err = max(
            (p - q).abs().max().item() for p, q in zip(model.parameters(), single.parameters())
        )
        print(f"{n} ranks vs one process over the whole batch: max parameter difference {err:.2e}")
        assert err < 1e-10, err
    dist.destroy_process_group()
    print(f"OK {r}", flush=True)


if __name__ == "__main__":
    main()
