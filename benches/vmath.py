"""Transcendental pointwise ops of ferrograd against torch, float32 and
float64, on 10^6 elements: both libraries in one process, interleaved
(ferrograd, torch, ferrograd, ..., with a pause before each sample so the
other library's spinning workers park), median of the repeats; the ratio is
ferrograd's time over torch's (lower is better).

    PYTHONPATH=python python benches/vmath.py [--n 1000000] [--repeats 7]
"""

import statistics

from bench_lib.interleaved import per_call, setup
from bench_lib.threads import set_thread_env

THREADS = "2"
set_thread_env(THREADS)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import ferrograd as fg  # noqa: E402

# (name, input kind, op); the op takes the library and a tensor
OPS = [
    ("exp", "normal", lambda L, x: x.exp()),
    ("log", "positive", lambda L, x: x.log()),
    ("log1p", "positive", lambda L, x: x.log1p()),
    ("expm1", "normal", lambda L, x: x.expm1()),
    ("log2", "positive", lambda L, x: L.log2(x)),
    ("log10", "positive", lambda L, x: L.log10(x)),
    ("tanh", "normal", lambda L, x: x.tanh()),
    ("sigmoid", "normal", lambda L, x: x.sigmoid()),
    ("silu", "normal", lambda L, x: L._C._nn.silu(x)),
    ("gelu", "normal", lambda L, x: L._C._nn.gelu(x)),
    ("gelu_tanh", "normal", lambda L, x: L._C._nn.gelu(x, approximate="tanh")),
    ("erf", "normal", lambda L, x: L.erf(x)),
    ("sin", "wide", lambda L, x: x.sin()),
    ("cos", "wide", lambda L, x: x.cos()),
    ("tan", "wide", lambda L, x: x.tan()),
    ("chain", "normal", lambda L, x: x.exp().log1p().tanh().sigmoid().sin()),
]


def inputs(kind, n, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n) * 3
    if kind == "positive":
        x = np.abs(x) + 1e-3
    elif kind == "wide":
        x = x * 10
    return x.astype(dtype)


def main():
    args = setup(fg, torch, THREADS, 1_000_000, 7, lambda a: f"n = {a.n}")
    print(f"{'op':10s} {'dtype':8s} {'fg ms':>8s} {'torch ms':>9s} {'ratio':>6s}")
    only = set(args.only.split(",")) - {""}
    for name, kind, op in OPS:
        if only and name not in only:
            continue
        for dtype in ("float32", "float64"):
            x = inputs(kind, args.n, dtype)
            tf, tt = fg.from_numpy(x.copy()), torch.from_numpy(x.copy())
            # a check that both compute the same thing
            a, b = op(fg, tf).numpy(), op(torch, tt).numpy()
            tol = 1e-4 if dtype == "float32" else 1e-10
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=name)
            times = {"fg": [], "torch": []}
            for _ in range(args.repeats):
                times["fg"].append(per_call(lambda: op(fg, tf), args.calls, args.pause))
                times["torch"].append(per_call(lambda: op(torch, tt), args.calls, args.pause))
            f, t = statistics.median(times["fg"]), statistics.median(times["torch"])
            print(f"{name:10s} {dtype:8s} {f * 1e3:8.3f} {t * 1e3:9.3f} {f / t:6.2f}", flush=True)


if __name__ == "__main__":
    main()
