"""Dense linear algebra, ferrograd against torch, in one process,
interleaved (ferrograd, torch, ferrograd, ...), median of the samples.

    python benches/linalg.py                    # every case, 2 threads, 3 runs
    python benches/linalg.py --only svd --runs 5
    python benches/linalg.py --threads 1

Cases (issue 28): cholesky, solve, inv, qr and svd of one 256x256 float64
matrix and of a batch of 64 matrices of 32x32, forward and forward+backward
(the sum of the outputs, or of their absolute values for qr and svd, whose
factors are defined up to signs). Prints one table row per case: the
medians and ferrograd's time over torch's (below 1: ferrograd faster), and
the geometric mean of the ratios.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import statistics
import sys
import time


def _threads(argv):
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
    return "2"


if __name__ == "__main__":
    for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[v] = _threads(sys.argv)

import numpy as np  # noqa: E402


def _time(fn, number):
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - t0) / number
    finally:
        gc.enable()


def _inputs(lib, shape, rng_seed):
    rng = np.random.default_rng(rng_seed)
    a = rng.standard_normal(shape)
    n = shape[-1]
    spd = a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    b = rng.standard_normal(shape[:-1] + (4,))
    mk = lambda x: lib.tensor(x, dtype=lib.float64)  # noqa: E731
    return mk(a + 3 * np.eye(n)), mk(spd), mk(b)


OPS = {
    "cholesky": lambda lib, a, spd, b: [lib.linalg.cholesky(spd)],
    "solve": lambda lib, a, spd, b: [lib.linalg.solve(a, b)],
    "inv": lambda lib, a, spd, b: [lib.linalg.inv(a)],
    "qr": lambda lib, a, spd, b: [t.abs() for t in lib.linalg.qr(a)],
    "svd": lambda lib, a, spd, b: [t.abs() for t in lib.linalg.svd(a, full_matrices=False)],
}
SHAPES = {"256x256": (256, 256), "64x32x32": (64, 32, 32)}


def case(lib, op, shape, backward):
    a, spd, b = _inputs(lib, shape, 0)
    if backward:
        for t in (a, spd, b):
            t.requires_grad_(True)

    def run():
        outs = OPS[op](lib, a, spd, b)
        if backward:
            total = outs[0].sum()
            for o in outs[1:]:
                total = total + o.sum()
            total.backward()
            for t in (a, spd, b):
                t.grad = None

    return run


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--only", default="")
    p.add_argument("--seconds", type=float, default=0.3, help="time per sample")
    args = p.parse_args()

    import torch

    import ferrograd

    torch.set_num_threads(args.threads)
    ferrograd.set_num_threads(args.threads)
    print(f"threads={args.threads} runs={args.runs} torch {torch.__version__}")
    print(f"{'case':30s} {'ferrograd':>11s} {'torch':>11s} {'ratio':>7s}")
    ratios = []
    for op in OPS:
        for sname, shape in SHAPES.items():
            for backward in (False, True):
                label = f"{op} {sname} {'fwd+bwd' if backward else 'fwd'}"
                if args.only and not any(k in label for k in args.only.split(",")):
                    continue
                fns = {lib.__name__: case(lib, op, shape, backward) for lib in (ferrograd, torch)}
                for fn in fns.values():  # warm up, and size the sample
                    fn()
                number = {}
                for name, fn in fns.items():
                    once = _time(fn, 1)
                    number[name] = max(1, int(args.seconds / max(once, 1e-6)))
                samples = {name: [] for name in fns}
                for _ in range(args.runs):
                    for name, fn in fns.items():
                        samples[name].append(_time(fn, number[name]))
                f = statistics.median(samples["ferrograd"])
                t = statistics.median(samples["torch"])
                ratios.append(f / t)
                print(f"{label:30s} {f * 1e6:9.0f}us {t * 1e6:9.0f}us {f / t:7.2f}", flush=True)
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"geomean ratio {geo:.2f} over {len(ratios)} cases")


if __name__ == "__main__":
    main()
