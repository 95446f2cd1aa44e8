"""ferrograd.distributed benchmarks (issue 27), run on N ranks:

    python -m ferrograd.distributed.run -n 2 benches/distributed.py
    python -m ferrograd.distributed.run -n 2 benches/distributed.py --quick

1. all_reduce bandwidth on 1-64 MB float32 tensors: ``dist.all_reduce`` on a
   ferrograd tensor against mpi4py's ``Allreduce`` on a NumPy array of the
   same size (the transport's own speed), interleaved, medians; the ratio is
   mpi4py's time over ferrograd's (>= 0.9 is the goal).
2. A DDP training step of an MLP on N ranks (forward, backward with the
   bucketed all-reduces, SGD step) against the same step inside
   ``no_sync()`` (no communication): the overlap ratio is DDP's step time
   over the no-communication step (<= 1.15 is the goal).

Rank 0 prints the tables (and the CPU, from /proc/cpuinfo); ``--json`` writes
the samples. Never asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
from mpi4py import MPI

import ferrograd as torch
import ferrograd.distributed as dist
import ferrograd.nn as nn
from ferrograd.nn.parallel import DistributedDataParallel as DDP


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def timed(fn, comm):
    comm.Barrier()
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def bench_all_reduce(sizes_mb, repeats, comm):
    rows = []
    for mb in sizes_mb:
        n = int(mb * 1024 * 1024 // 4)
        t = torch.ones(n)
        a = np.ones(n, dtype=np.float32)
        fg, mp = [], []
        # warm-up both paths
        dist.all_reduce(t)
        comm.Allreduce(MPI.IN_PLACE, a)
        for _ in range(repeats):
            fg.append(timed(lambda: dist.all_reduce(t), comm))
            mp.append(timed(lambda: comm.Allreduce(MPI.IN_PLACE, a), comm))
        f, m = statistics.median(fg), statistics.median(mp)
        rows.append(
            {
                "mb": mb,
                "ferrograd_s": f,
                "mpi4py_s": m,
                "ratio": m / f,
                "min_ratio": min(mp) / min(fg),
                "fg": fg,
                "mpi": mp,
            }
        )
    return rows


class MLP(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x).tanh()
        return x


def bench_ddp(width, depth, batch, repeats, comm, bucket_cap_mb):
    torch.manual_seed(0)
    model = MLP(width, depth)
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    torch.manual_seed(1 + comm.Get_rank())
    x = torch.randn(batch, width)

    def step():
        opt.zero_grad()
        ddp(x).square().mean().backward()
        opt.step()

    def step_no_comm():
        with ddp.no_sync():
            opt.zero_grad()
            ddp(x).square().mean().backward()
        opt.step()

    flat = torch.zeros(sum(p.numel() for p in model.parameters()))

    def comm_only():
        dist.all_reduce(flat)

    step()
    step_no_comm()
    with_comm, without, comm_alone = [], [], []
    for _ in range(repeats):
        with_comm.append(timed(step, comm))
        without.append(timed(step_no_comm, comm))
        comm_alone.append(timed(comm_only, comm))
    a, b = statistics.median(with_comm), statistics.median(without)
    c = statistics.median(comm_alone)
    min_ratio = min(with_comm) / min(without)
    params = sum(p.numel() for p in model.parameters())
    return {
        "params": params,
        "buckets": len(ddp._buckets),
        "ddp_s": a,
        "no_comm_s": b,
        "ratio": a / b,
        "min_ratio": min_ratio,
        "comm_s": c,
        # the share of the communication time hidden behind the backward
        "hidden": (b + c - a) / c,
        "ddp": with_comm,
        "no_comm": without,
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--json", default=None)
    p.add_argument(
        "--bucket-cap-mb",
        type=float,
        default=4.0,
        help="DDP bucket size (default 4: one per layer)",
    )
    p.add_argument(
        "--threads", type=int, default=None, help="threads per rank (default: cores / ranks)"
    )
    a = p.parse_args()
    dist.init_process_group("mpi")
    import os

    torch.set_num_threads(a.threads or max(1, (os.cpu_count() or 1) // dist.get_world_size()))
    comm = MPI.COMM_WORLD
    r, n = dist.get_rank(), dist.get_world_size()
    repeats = a.repeats or (3 if a.quick else 15)
    sizes = [1, 4] if a.quick else [1, 4, 16, 64]
    ar = bench_all_reduce(sizes, repeats, comm)
    ddp = bench_ddp(256 if a.quick else 1024, 4, 64, repeats, comm, a.bucket_cap_mb)
    if r == 0:
        print(
            f"# ferrograd.distributed on {n} ranks, {cpu_name()}, {torch.get_num_threads()} threads per rank"
        )
        print(f"# MPI: {MPI.Get_library_version().splitlines()[0]}")
        print("\nall_reduce (float32, in place), median of", repeats)
        print(
            f"{'size':>7} {'ferrograd':>11} {'mpi4py':>11} {'GB/s (fg)':>10} {'ratio':>7} {'ratio of mins':>14}"
        )
        for row in ar:
            gbs = row["mb"] * 1024 * 1024 / row["ferrograd_s"] / 1e9
            print(
                f"{row['mb']:>5}MB {row['ferrograd_s'] * 1e3:>9.2f}ms {row['mpi4py_s'] * 1e3:>9.2f}ms "
                f"{gbs:>10.2f} {row['ratio']:>7.2f} {row['min_ratio']:>14.2f}"
            )
        print(
            f"\nDDP step, MLP {ddp['params'] / 1e6:.1f}M params in {ddp['buckets']} bucket(s): "
            f"{ddp['ddp_s'] * 1e3:.1f} ms with communication, {ddp['no_comm_s'] * 1e3:.1f} ms without "
            f"(no_sync): ratio {ddp['ratio']:.2f} (of the fastest steps: {ddp['min_ratio']:.2f})"
        )
        print(
            f"the all-reduce of every gradient alone: {ddp['comm_s'] * 1e3:.1f} ms; "
            f"hidden behind the backward: {100 * ddp['hidden']:.0f}%"
        )
        if a.json:
            with open(a.json, "w") as f:
                json.dump(
                    {"all_reduce": ar, "ddp": ddp, "cpu": cpu_name(), "ranks": n}, f, indent=1
                )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
