"""The timing harness shared by compare.py and sweep.py: interleaved timing
of a workload on each library with a results cross-check (``bench_workload``),
the physical-limit probes, the machine description, the libraries under test
and the time format.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import statistics
import time
from typing import Any

import numpy as np

from .workloads import FLOAT32, _rng

# ----------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------


def _time_n(fn, number):
    gc_was = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        return time.perf_counter() - t0
    finally:
        if gc_was:
            gc.enable()


def _calibrate(fn, target):
    """Warms fn up and returns how many calls make a sample of ~target s."""
    fn()
    number = 1
    while True:
        dt = _time_n(fn, number)
        if dt >= 0.2 * target or number >= 1_000_000:
            return max(1, int(round(number * target / max(dt, 1e-9))))
        number *= 10 if dt < 0.02 * target else 2


def _compare_results(ref, other):
    """Largest relative error between two lists of arrays."""
    worst = 0.0
    for a, b in zip(ref, other):
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            return float("inf")
        scale = max(np.abs(a).max(initial=0.0), 1e-6)
        worst = max(worst, float(np.abs(a - b).max(initial=0.0) / scale))
    return worst


def bench_workload(wl, libs, quick=False, repeats=7, target=0.25, check=True, pause=0.02):
    """Runs one workload on each library in ``libs`` (name -> module; the
    name "numpy" uses the workload's numpy version), interleaved.

    Returns a dict: {lib: {"median_s", "min_s", "samples", "number", ...}
    or {"error": str}}, plus "ratio" (ferrograd/torch) and "check".
    """
    cases = {}
    results: dict[str, Any] = {}
    for name, mod in libs.items():
        try:
            if name == "numpy":
                if wl.make_numpy is None:
                    continue
                cases[name] = wl.make_numpy(mod, quick)
            else:
                cases[name] = wl.make(mod, quick)
        except Exception as e:  # noqa: BLE001 - recorded in the table
            results[name] = {"error": f"{type(e).__name__}: {e}"}

    # Correctness cross-check on fresh data: one iteration each.
    outputs = {}
    for name, case in list(cases.items()):
        try:
            case.run()
            if check and case.result is not None:
                outputs[name] = case.result()
        except Exception as e:  # noqa: BLE001
            results[name] = {"error": f"{type(e).__name__}: {e}"}
            del cases[name]
    check_info = {}
    ref = outputs.get("torch", outputs.get("numpy"))
    if ref is not None and "ferrograd" in outputs:
        check_info["max_rel_err"] = _compare_results(ref, outputs["ferrograd"])
        check_info["ok"] = check_info["max_rel_err"] < wl.rtol
        check_info["against"] = "torch" if "torch" in outputs else "numpy"

    numbers = {}
    for name, case in list(cases.items()):
        try:
            numbers[name] = _calibrate(case.run, target)
        except Exception as e:  # noqa: BLE001
            results[name] = {"error": f"{type(e).__name__}: {e}"}
            del cases[name]

    samples = {name: [] for name in cases}

    def sample(name):
        gc.collect()
        time.sleep(pause)  # lets the other library's idle workers park
        try:
            samples[name].append(_time_n(cases[name].run, numbers[name]) / numbers[name])
        except Exception as e:  # noqa: BLE001
            results[name] = {"error": f"{type(e).__name__}: {e}"}
            del cases[name]

    # ferrograd and torch interleaved; numpy (a reference floor) after them,
    # so OpenBLAS's spinning workers never overlap a ferrograd/torch sample.
    for _ in range(repeats):
        for name in [n for n in cases if n != "numpy"]:
            if name in cases:
                sample(name)
    if "numpy" in cases:
        for _ in range(repeats):
            if "numpy" in cases:
                sample("numpy")
        time.sleep(0.2)
    for name in cases:
        med = statistics.median(samples[name])
        res = {
            "median_s": med,
            "min_s": min(samples[name]),
            "samples": samples[name],
            "number": numbers[name],
        }
        if wl.ops is not None:
            res["per_op_s"] = med / wl.ops(quick)
        if wl.nbytes is not None:
            res["gbps"] = wl.nbytes(quick) / med / 1e9
        if wl.flops is not None:
            res["gflops"] = wl.flops(quick) / med / 1e9
        results[name] = res
    cases.clear()
    gc.collect()

    fg, th = results.get("ferrograd", {}), results.get("torch", {})
    ratio = None
    pair_ratios = None
    if "median_s" in fg and "median_s" in th:
        ratio = fg["median_s"] / th["median_s"]
        # Sample i of each library ran back to back: their ratio is free of
        # the machine's slower drifts, so the spread of these ratios shows
        # how much the headline ratio (of the medians) can move by chance.
        pair_ratios = sorted(a / b for a, b in zip(fg["samples"], th["samples"]))
    return {
        "title": wl.title,
        "results": results,
        "ratio": ratio,
        "pair_ratios": pair_ratios,
        "check": check_info,
    }


# ----------------------------------------------------------------------------
# Physical-limit probes
# ----------------------------------------------------------------------------


def _best_of(fn, reps):
    fn()
    return min(_time_n(fn, 1) for _ in range(reps))


def probe_bandwidth(quick, torch=None, fg=None):
    n = (8 if quick else 64) * 1024 * 1024 // 8 * 4  # float64 elements
    reps = 3 if quick else 7
    a = np.zeros(n)
    b = np.ones(n)
    c = np.full(n, 2.0)
    s = 3.0
    out = {"array_mb": n * 8 / 1e6}
    # STREAM's convention: copy moves 2 arrays, triad 3 (no write-allocate).
    out["numpy_copy_gbps"] = 2 * 8 * n / _best_of(lambda: np.copyto(a, b), reps) / 1e9

    def triad():
        np.multiply(c, s, out=a)
        np.add(a, b, out=a)

    out["numpy_triad_gbps"] = 3 * 8 * n / _best_of(triad, reps) / 1e9
    if torch is not None:
        ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)
        out["torch_copy_gbps"] = 2 * 8 * n / _best_of(lambda: ta.copy_(tb), reps) / 1e9
        out["torch_triad_gbps"] = (
            3 * 8 * n / _best_of(lambda: torch.add(tb, tc, alpha=s, out=ta), reps) / 1e9
        )
    if fg is not None:
        fa, fb = fg.from_numpy(a), fg.from_numpy(b)
        out["ferrograd_copy_gbps"] = 2 * 8 * n / _best_of(lambda: fa.copy_(fb), reps) / 1e9
    out["limit_gbps"] = max(v for k, v in out.items() if k.endswith("_gbps"))
    return out


def probe_gemm(quick, torch=None, fg=None):
    """Best achieved float32 GEMM rate (2 n^3 / time, best of a few) of
    numpy, torch and ferrograd itself: the achieved peak of this machine."""
    n = 512 if quick else 2048
    reps = 3 if quick else 5
    r = _rng()
    a = r.standard_normal((n, n), dtype=FLOAT32)
    b = r.standard_normal((n, n), dtype=FLOAT32)
    flops = 2.0 * n**3
    out = {"n": n, "numpy_gflops": flops / _best_of(lambda: a @ b, reps) / 1e9}
    time.sleep(0.2)  # OpenBLAS workers spin a while after a call
    for name, mod in (("torch", torch), ("ferrograd", fg)):
        if mod is not None:
            ta, tb = mod.from_numpy(a), mod.from_numpy(b)
            out[f"{name}_gflops"] = flops / _best_of(lambda: ta @ tb, reps) / 1e9
    out["limit_gflops"] = max(v for k, v in out.items() if k.endswith("_gflops"))
    return out


# ----------------------------------------------------------------------------
# Machine description
# ----------------------------------------------------------------------------


def machine_info(threads, fg, torch):
    cpu = platform.processor() or platform.machine()
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    simd = [f for f in ("avx2", "fma", "avx512f") if f in flags]
    info = {
        "cpu": cpu,
        "simd": simd,
        "logical_cpus": os.cpu_count(),
        "threads": threads,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "loadavg_start": list(os.getloadavg()),
    }
    if hasattr(os, "sched_getaffinity"):
        info["usable_cpus"] = len(os.sched_getaffinity(0))
    if fg is not None:
        so = os.path.realpath(fg._C.__file__)
        info["ferrograd"] = getattr(fg, "__version__", "?")
        info["ferrograd_ext"] = so
        info["ferrograd_build"] = "debug" if "/debug/" in so else "release"
        info["ferrograd_threads"] = fg.get_num_threads()
    if torch is not None:
        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    return info


def _fmt_time(s):
    if s is None:
        return "-"
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.3f} s"


def _import_libs(no_torch=False):
    libs = {}
    import ferrograd

    libs["ferrograd"] = ferrograd
    if not no_torch:
        try:
            import torch

            libs["torch"] = torch
        except ImportError:
            pass
    return libs


def write_json(report, path, indent):
    """Writes the report to ``path`` as JSON and says so."""
    with open(path, "w") as f:
        json.dump(report, f, indent=indent)
    print(f"\nJSON written to {path}")
