"""float16 and bfloat16 against float32, ferrograd against torch.

Elementwise ops and reductions on 10M elements and a 1024 x 1024 matmul,
in each of float32, float16 and bfloat16, both libraries in one process,
interleaved (op by op, dtype by dtype, library by library), the minimum of
``--reps`` runs. Two ratios per row: ferrograd's time over torch's on the
same dtype, and ferrograd's float32 time over its time on the row's dtype
(above 1: the 2-byte dtype is faster than float32).

    python benches/low_precision.py            # 3 runs per case, 2 threads
    python benches/low_precision.py --reps 5 --threads 1
"""

from __future__ import annotations

import argparse
import time

DTYPES = ("float32", "float16", "bfloat16")
N = 10_000_000

CASES = {
    "add": lambda a, b: a + b,
    "mul_scalar": lambda a, b: a * 1.5,
    "exp": lambda a, b: a.exp(),
    "relu": lambda a, b: a.relu(),
    "tanh": lambda a, b: a.tanh(),
    "sum": lambda a, b: a.sum(),
    "mean_lastdim": lambda a, b: a.view(1000, -1).mean(1),
    "to_float32": lambda a, b: a.float(),
}


def _best(f, runs):
    f()  # warm up (allocations, the buffer cache)
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()

    import torch

    import ferrograd as fg

    libs = {"ferrograd": fg, "torch": torch}
    for lib in libs.values():
        lib.set_num_threads(args.threads)
    data = {}
    for name, L in libs.items():
        L.manual_seed(0)
        for dn in DTYPES:
            data[name, dn] = (L.randn(N).to(getattr(L, dn)), L.randn(N).to(getattr(L, dn)))
    best = {}
    for _ in range(args.reps):
        for op, f in CASES.items():
            for dn in DTYPES:
                for name in libs:
                    a, b = data[name, dn]
                    t = _best(lambda: f(a, b), 1)
                    best[op, dn, name] = min(best.get((op, dn, name), t), t)
                    time.sleep(0.02)
    print(f"{N:,} elements, {args.threads} threads, min of {args.reps}")
    print(
        f"{'op':13s} {'dtype':9s} {'ferrograd ms':>12s} {'torch ms':>9s} {'fg/torch':>9s} {'fg f32/this':>11s}"
    )
    for op in CASES:
        for dn in DTYPES:
            mine, theirs = best[op, dn, "ferrograd"], best[op, dn, "torch"]
            f32 = best[op, "float32", "ferrograd"]
            print(
                f"{op:13s} {dn:9s} {mine * 1e3:12.2f} {theirs * 1e3:9.2f} "
                f"{mine / theirs:9.2f} {f32 / mine:11.2f}"
            )
    for dn in DTYPES:
        mats = {name: L.randn(1024, 1024).to(getattr(L, dn)) for name, L in libs.items()}
        t = {name: float("inf") for name in libs}
        for _ in range(args.reps):
            for name in libs:
                m = mats[name]
                t[name] = min(t[name], _best(lambda: m @ m, 2))
        print(
            f"matmul 1024   {dn:9s} {t['ferrograd'] * 1e3:12.2f} {t['torch'] * 1e3:9.2f} "
            f"{t['ferrograd'] / t['torch']:9.2f}"
        )


if __name__ == "__main__":
    main()
