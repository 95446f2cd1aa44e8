"""RSS growth per graph workload with the garbage collector off, ferrograd
against torch: the leak table of issue 24.

Each workload of tests/python/graph_workloads.py (one small graph built,
maybe run backward through, and dropped) runs in a fresh interpreter per
library, with ``gc.disable()``: a warm-up, then N iterations between two
readings of the resident set size (/proc/self/statm). A graph that only the
cyclic garbage collector could free shows up as growth proportional to N;
one freed by reference counting as none.

    PYTHONPATH=python python tools/leak_table.py            # 10^5 iterations
    PYTHONPATH=python python tools/leak_table.py -n 10000 -k ctx.out
    PYTHONPATH=python python tools/leak_table.py --lib ferrograd

Linux only (reads /proc). Prints a Markdown table, growth in MiB.
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests", "python")

CHILD = r"""
import gc, importlib, json, os, sys, time
sys.path.insert(0, {tests!r})
import warnings
warnings.simplefilter("ignore")
lib = importlib.import_module({lib!r})
if {lib!r} == "torch":
    torch = lib
    torch.set_num_threads(1)
import graph_workloads
work = graph_workloads.WORKLOADS[{name!r}]

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

gc.collect()
gc.disable()
for _ in range({warmup}):
    work(lib)
before = rss()
t0 = time.perf_counter()
for _ in range({n}):
    work(lib)
dt = time.perf_counter() - t0
after = rss()
print(json.dumps({{"grown": after - before, "seconds": dt}}))
"""


def run(lib, name, n, warmup):
    code = CHILD.format(tests=TESTS, lib=lib, name=name, n=n, warmup=warmup)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env
    )
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def available(lib):
    try:
        __import__(lib)
        return True
    except ImportError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=100_000, help="iterations per workload")
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("-k", default="", help="only workloads whose name contains this")
    ap.add_argument("--lib", action="append", help="ferrograd and/or torch (default: both)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    sys.path.insert(0, TESTS)
    from graph_workloads import WORKLOADS

    libs = [lib for lib in (args.lib or ["ferrograd", "torch"]) if available(lib)]
    names = [n for n in WORKLOADS if args.k in n]
    mib = 2.0**20
    print(f"RSS growth over {args.n} iterations, gc disabled (MiB; after {args.warmup} warm-up)\n")
    print("| workload | " + " | ".join(libs) + " |")
    print("|---|" + "---:|" * len(libs))
    results = {}
    t_start = time.time()
    for name in names:
        cells = []
        for lib in libs:
            r = run(lib, name, args.n, args.warmup)
            results[(name, lib)] = r
            if "error" in r:
                cells.append(f"error: {r['error'][:60]}")
            else:
                cells.append(f"{r['grown'] / mib:.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\n({time.time() - t_start:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{n}|{lib}": r for (n, lib), r in results.items()}, f, indent=1)


if __name__ == "__main__":
    main()
