"""What the small interleaved benchmarks (pow.py, vmath.py) share: their
options, the thread setup and banner, and ``per_call`` (the mean time of a
few calls after a pause, so the other library's spinning workers park)."""

import argparse
import os
import sys
import time


def per_call(fn, calls, pause):
    time.sleep(pause)  # lets the other library's idle workers park
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def setup(fg, torch, threads, n, repeats, size):
    """Parses --n, --repeats, --calls, --only and --pause (``n`` and
    ``repeats`` their defaults), sets both libraries to ``threads`` threads
    and prints what runs (``size(args)``: the problem size) to stderr."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=n)
    ap.add_argument("--repeats", type=int, default=repeats)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--only", default="")
    ap.add_argument("--pause", type=float, default=0.05)
    args = ap.parse_args()
    fg.set_num_threads(int(threads))
    torch.set_num_threads(int(threads))
    print(
        f"ferrograd from {os.path.dirname(fg.__file__)}; torch {torch.__version__}; "
        f"{threads} threads; {size(args)}",
        file=sys.stderr,
    )
    return args
