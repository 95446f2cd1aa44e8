"""Batched matrix products, ferrograd against torch, in one process,
interleaved (ferrograd, torch, ferrograd, ...), median of the samples.

    python benches/batched_matmul.py              # every case, 2 threads
    python benches/batched_matmul.py --only attn,f32 --repeats 5
    python benches/batched_matmul.py --threads 1

Cases (issue 22): float32 `a @ b` and `a @ b^T` (b^T a stride view) for
batch 64..4096 and square matrices 4..64; float64 and int64 batched; an
attention block fwd+bwd (q, k, v [8, 8, 128, 64]).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time

from bench_lib.threads import early_threads, set_thread_env

if __name__ == "__main__":
    set_thread_env(early_threads(sys.argv))

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


def _number(fn, target):
    fn()
    n = 1
    while True:
        dt = _time(fn, n) * n
        if dt >= 0.2 * target or n >= 100_000:
            return max(1, int(round(n * target / max(dt, 1e-9))))
        n *= 10 if dt < 0.02 * target else 2


def product(L, batch, size, dtype, transposed):
    r = np.random.default_rng(0)
    shape = (batch, size, size)
    if dtype == "int64":
        a, b = (r.integers(-9, 9, shape) for _ in range(2))
    else:
        a, b = (r.standard_normal(shape).astype(dtype) for _ in range(2))
    a, b = L.from_numpy(a), L.from_numpy(b)
    if transposed:
        return lambda: a @ b.transpose(-1, -2)
    return lambda: a @ b


def attention(L, b=8, h=8, s=128, d=64):
    r = np.random.default_rng(0)
    q, k, v = (
        L.from_numpy(r.standard_normal((b, h, s, d)).astype(np.float32)).requires_grad_(True)
        for _ in range(3)
    )

    def run():
        for t in (q, k, v):
            t.grad = None
        s_ = (q @ k.transpose(-2, -1)) * 0.125
        p = s_.softmax(-1)
        o = p @ v
        o.sum().backward()

    return run


def cases(only):
    out = []
    for dtype, sizes, batches in (
        ("float32", (4, 8, 16, 32, 64), (64, 512, 4096)),
        ("float64", (8, 16, 32, 64), (512, 4096)),
        ("int64", (8, 16, 32), (512,)),
    ):
        for batch in batches:
            for size in sizes:
                if batch * size**3 > (1 << 30):
                    continue
                for tr in (False, True) if dtype == "float32" else (False,):
                    name = f"{dtype} [{batch},{size},{size}] @ {'b^T' if tr else 'b'}"
                    out.append(
                        (
                            dtype if not tr else "f32t",
                            name,
                            lambda L, b=batch, s=size, d=dtype, t=tr: product(L, b, s, d, t),
                        )
                    )
    out.append(("attn", "attention [8,8,128,64] fwd+bwd", attention))
    if only:
        keys = only.split(",")
        alias = {"f32": "float32", "f64": "float64", "i64": "int64"}
        keys = [alias.get(k, k) for k in keys]
        out = [c for c in out if c[0] in keys or any(k in c[1] for k in keys)]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--target", type=float, default=0.04, help="seconds per sample")
    ap.add_argument("--only", default="")
    args = ap.parse_args()

    import ferrograd
    import torch

    ferrograd.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    print(f"ferrograd {ferrograd.__file__}; torch {torch.__version__}; threads {args.threads}")
    print(f"| {'case':40} | {'ferrograd':>10} | {'torch':>10} | fg/torch | pairs     |")
    print(f"|{'-' * 42}|{'-' * 12}|{'-' * 12}|----------|-----------|")
    ratios = []
    for _key, name, make in cases(args.only):
        fns = {"fg": make(ferrograd), "torch": make(torch)}
        num = {k: _number(f, args.target) for k, f in fns.items()}
        samples = {"fg": [], "torch": []}
        for _ in range(args.repeats):
            for k, f in fns.items():
                samples[k].append(_time(f, num[k]))
        fg, th = (statistics.median(samples[k]) for k in ("fg", "torch"))
        pairs = [x / y for x, y in zip(samples["fg"], samples["torch"])]
        ratios.append(fg / th)
        print(
            f"| {name:40} | {fg * 1e6:8.1f}us | {th * 1e6:8.1f}us | {fg / th:8.2f} |"
            f" {min(pairs):.2f}-{max(pairs):.2f} |",
            flush=True,
        )
    if ratios:
        geo = float(np.exp(np.mean(np.log(ratios))))
        print(f"geometric mean of the ratios: {geo:.2f}; worst {max(ratios):.2f}")


if __name__ == "__main__":
    main()
