"""How ferrograd and torch scale with the thread count (issue 22: 16 threads
on a 16-core machine).

For each thread count (1, 2, 4, 8, 16 by default, capped at the CPU count)
both libraries are set to it in one process and timed interleaved
(ferrograd, torch, ferrograd, torch, ...), ``--repeats`` samples each,
medians:

* the wide graph of ``compare.py``'s workload 4 (32 branches x 10 layers of
  256x256 matmul + tanh), its forward and its backward timed apart in every
  iteration;
* ``compare.py``'s GEMM-bound workloads (matmul 1024 fwd+bwd, the MLP step)
  and its 10M-element elementwise workload;
* cases of the operator sweep that stress the iteration layer and the
  kernel splits: a sum over the middle dim of a 3-D tensor, elementwise ops
  on transposed operands, a softmax over a non-last dim and a batch of small
  products.

Prints one table per thread count and the wide graph's speed-up from one
thread; ``--json`` writes every sample. Never asserts a timing.

    python benches/scaling.py                       # 1, 2, 4, 8, 16 threads
    python benches/scaling.py --threads 1,4,16 --json scaling.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

F32 = np.float32


def _time_split(run, number):
    """Total seconds of ``number`` calls of run(), which returns the seconds
    its first part took: (total, first part)."""
    gc_was = gc.isenabled()
    gc.disable()
    try:
        first = 0.0
        t0 = time.perf_counter()
        for _ in range(number):
            first += run()
        return time.perf_counter() - t0, first
    finally:
        if gc_was:
            gc.enable()


def make_wide_split(L):
    """compare.py's wide graph; run() returns its forward's seconds."""
    r = np.random.default_rng(0)
    nb, depth, n = compare._wide_shape(False)
    scale = 1.0 / np.sqrt(n)
    xs = [L.from_numpy(r.standard_normal((n, n), dtype=F32)) for _ in range(nb)]
    ws = [
        [
            L.from_numpy((scale * r.standard_normal((n, n), dtype=F32)).astype(F32)).requires_grad_(
                True
            )
            for _ in range(depth)
        ]
        for _ in range(nb)
    ]

    def run():
        for branch in ws:
            for w in branch:
                w.grad = None
        t0 = time.perf_counter()
        sums = []
        for x, branch in zip(xs, ws):
            h = x
            for w in branch:
                h = (h @ w).tanh()
            sums.append(h.sum())
        loss = L.stack(sums).sum()
        t1 = time.perf_counter()
        loss.backward()
        return t1 - t0

    return run


def _plain(make):
    """A compare.py-style case as a split run (no first part)."""

    def build(L):
        case = make(L, False)

        def run():
            case.run()
            return 0.0

        return run

    return build


def _sweep_case(name):
    import sweep

    (case,) = [c for c in sweep.op_cases() if c.name == name]
    wl = case.workload()
    return _plain(wl.make)


CASES = [
    ("wide graph (fwd | bwd)", make_wide_split),
    ("matmul 1024 f32 fwd+bwd", _plain(compare.make_matmul)),
    ("MLP 784-512-512-10 step", _plain(compare.make_mlp)),
    ("tanh(x*w+b) 10M f32 fwd+bwd", _plain(compare.make_elementwise)),
]

SWEEP_CASES = [
    "reduce/sum(dim=1)/contig/f32/100x100x100/fwd",
    "unary/tanh/t/f32/2500x4000/fwd",
    "binary/mul/t/f32/1000x1000/fwd+bwd",
    "softmax/softmax(dim=0)/contig/f32/1000x1000/fwd",
    "matmul/matmul/contig/f32/1024x16x16@1024x16x16/fwd",
]


def bench(name, make, libs, repeats, target):
    runs = {k: make(m) for k, m in libs.items()}
    for run in runs.values():
        run()
    number = {}
    for k, run in runs.items():
        n = 1
        while True:
            dt, _ = _time_split(run, n)
            if dt >= 0.2 * target or n >= 100_000:
                number[k] = max(1, round(n * target / max(dt, 1e-9)))
                break
            n *= 4
    samples = {k: [] for k in runs}
    for _ in range(repeats):
        for k, run in runs.items():
            gc.collect()
            time.sleep(0.01)
            total, first = _time_split(run, number[k])
            samples[k].append((total / number[k], first / number[k]))
    out = {}
    for k, s in samples.items():
        out[k] = {
            "total_s": statistics.median(t for t, _ in s),
            "first_s": statistics.median(f for _, f in s),
            "samples": s,
        }
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2,4,8,16")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sample-time", type=float, default=0.3)
    ap.add_argument("--only", default=None, help="comma-separated substrings of case names")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    libs = compare._import_libs(False)
    fg, torch = libs["ferrograd"], libs.get("torch")
    if torch is None:
        sys.exit("scaling.py compares with torch: install it")
    cpus = os.cpu_count() or 1
    threads = [t for t in map(int, args.threads.split(",")) if t <= cpus]
    cases = list(CASES)
    for name in SWEEP_CASES:
        try:
            cases.append((name, _sweep_case(name)))
        except ValueError:
            print(f"# no sweep case {name}", file=sys.stderr)
    if args.only:
        keys = args.only.split(",")
        cases = [c for c in cases if any(k in c[0] for k in keys)]

    print(f"# ferrograd {fg.__file__}; torch {torch.__version__}; {cpus} CPUs")
    report = {"cpus": cpus, "torch": torch.__version__, "runs": []}
    for n in threads:
        fg.set_num_threads(n)
        torch.set_num_threads(n)
        print(f"\n## {n} thread(s)\n")
        print(f"| {'case':50} | {'ferrograd ms':>12} | {'torch ms':>10} | fg/torch |")
        print(f"|{'-' * 52}|{'-' * 14}|{'-' * 12}|----------|")
        for name, make in cases:
            res = bench(
                name, make, {"ferrograd": fg, "torch": torch}, args.repeats, args.sample_time
            )
            f, t = res["ferrograd"], res["torch"]
            report["runs"].append({"threads": n, "case": name, **res})
            rows = [(name, f["total_s"], t["total_s"])]
            if f["first_s"] > 0:
                rows = [
                    (name.replace("(fwd | bwd)", "forward"), f["first_s"], t["first_s"]),
                    (
                        name.replace("(fwd | bwd)", "backward"),
                        f["total_s"] - f["first_s"],
                        t["total_s"] - t["first_s"],
                    ),
                ]
            for label, a, b in rows:
                print(
                    f"| {label:50} | {a * 1e3:12.2f} | {b * 1e3:10.2f} | {a / b:8.2f} |", flush=True
                )

    wide = [r for r in report["runs"] if r["case"].startswith("wide")]
    if len(wide) > 1:
        print("\n## wide graph: backward speed-up over 1 thread\n")
        print(
            "| threads | ferrograd bwd ms | speed-up | torch bwd ms | speed-up | fg/torch (fwd+bwd) |"
        )
        print(
            "|---------|------------------|----------|--------------|----------|--------------------|"
        )

        def bwd(r, k):
            return r[k]["total_s"] - r[k]["first_s"]

        b0 = {k: bwd(wide[0], k) for k in ("ferrograd", "torch")}
        for r in wide:
            fb, tb = bwd(r, "ferrograd"), bwd(r, "torch")
            ratio = r["ferrograd"]["total_s"] / r["torch"]["total_s"]
            print(
                f"| {r['threads']:7} | {fb * 1e3:16.2f} | {b0['ferrograd'] / fb:8.2f} |"
                f" {tb * 1e3:12.2f} | {b0['torch'] / tb:8.2f} | {ratio:18.2f} |"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
