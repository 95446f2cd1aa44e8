"""Data-parallel training of an MLP with DistributedDataParallel.

    python -m ferrograd.distributed.run -n 2 examples/distributed_ddp_mlp.py

Every rank trains on its 1/N of each batch; DDP averages the
gradients, so the model follows exactly the path of one process training on
the whole batch. Rank 0 trains that single-process model too and compares
(float64: equal to rounding).
"""

from __future__ import annotations

import ferrograd as torch
import ferrograd.distributed as dist
import ferrograd.nn as nn
from ferrograd.nn.parallel import DistributedDataParallel as DDP

PER_RANK = 16
STEPS = 20


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1)
    ).double()


def batch(step: int, world: int) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(1000 + step)
    x = torch.rand(PER_RANK * world, 2, dtype=torch.float64) * 4 - 2
    y = (x[:, :1] * x[:, 1:]).sin()
    return x, y


def train(model: nn.Module, world: int, rank: int | None = None) -> float:
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(STEPS):
        x, y = batch(step, world)
        if rank is not None:
            x, y = (
                x[rank * PER_RANK : (rank + 1) * PER_RANK],
                y[rank * PER_RANK : (rank + 1) * PER_RANK],
            )
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(loss.item())


def main() -> None:
    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    net = make_model()
    loss = train(DDP(net), n, rank=r)
    print(f"rank {r}: last loss on its shard {loss:.4f}")
    if r == 0:
        single = make_model()
        train(single, n)
        err = max((p - q).abs().max().item() for p, q in zip(net.parameters(), single.parameters()))
        print(
            f"DDP on {n} ranks vs one process over the whole batch: max parameter difference {err:.2e}"
        )
        assert err < 1e-10, err
    dist.destroy_process_group()
    print(f"OK {r}", flush=True)


if __name__ == "__main__":
    main()
