"""Side-by-side benchmark of ferrograd against torch (and numpy for kernels).

Each workload is a function of the library module ``L`` that uses only the
torch-compatible tensor + autograd API, so the same code runs on ferrograd and
on torch. The libraries run in the same process, interleaved (ferrograd,
torch, [numpy,] ferrograd, torch, ...), several repeats; the table shows the
median time per iteration and the ratio ferrograd/torch (lower is better).

    python benches/compare.py                    # full run, 2 threads
    python benches/compare.py --quick            # smoke test
    python benches/compare.py --only add,matmul --json out.json
    python benches/compare.py --wheel dist/ferrograd-0.1.0-*.whl

Benchmark a release build (an installed wheel, or ``_C.so`` pointing at
``target/release``): the script prints which extension it loaded and warns on
a debug build.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:  # loaded by file (tests, sweep.py): bench_lib beside it
    sys.path.insert(0, _HERE)

from bench_lib.threads import early_threads, set_thread_env  # noqa: E402

if __name__ == "__main__":
    set_thread_env(early_threads(sys.argv))

import numpy as np  # noqa: E402

# The harness and the workloads live in bench_lib; their names stay reachable
# as compare.X (sweep.py, scaling.py and the tests use them).
from bench_lib.harness import (  # noqa: E402, F401
    _best_of,
    _calibrate,
    _compare_results,
    _fmt_time,
    _import_libs,
    _time_n,
    bench_workload,
    machine_info,
    probe_bandwidth,
    probe_gemm,
    write_json,
)
from bench_lib.workloads import (  # noqa: E402, F401
    FLOAT32,
    WORKLOADS,
    Case,
    Workload,
    _np,
    _wide_shape,
    make_elementwise,
    make_matmul,
    make_mlp,
)

# ----------------------------------------------------------------------------
# Fresh-process measurements: import time and peak RSS
# ----------------------------------------------------------------------------


def _child_env(fg_module):
    env = dict(os.environ)
    if fg_module is not None:
        pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(fg_module.__file__)))
        env["PYTHONPATH"] = pkg_root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def measure_import(lib, env, runs):
    code = (
        "import time; t0 = time.perf_counter(); import {0}; print(time.perf_counter() - t0)".format(
            lib
        )
    )
    times = []
    for i in range(runs + 1):
        p = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        if i > 0:  # the first run warms the file cache
            times.append(float(p.stdout.strip().splitlines()[-1]))
    return {"median_s": statistics.median(times), "samples": times}


def _peak_rss_mb():
    """Peak resident set size of this process, in MB.

    Linux keeps ``getrusage().ru_maxrss`` across ``execve``, so a child
    spawned by a large parent reports the parent's peak; ``VmHWM`` in
    /proc/self/status belongs to the new address space only, so it is used
    where it exists, with getrusage as the fallback.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child_rss(lib, quick, threads):
    """Child-process entry: import lib, run the MLP workload, print RSS (MB)."""
    mod = __import__(lib)
    mod.set_num_threads(threads)
    after_import = _peak_rss_mb()
    case = make_mlp(mod, quick)
    for _ in range(5):
        case.run()
    peak = _peak_rss_mb()
    print(json.dumps({"import_rss_mb": after_import, "peak_rss_mb": peak}))


def measure_rss(lib, env, quick, threads):
    args = [sys.executable, os.path.abspath(__file__), "--_child-rss", lib]
    args += ["--threads", str(threads)] + (["--quick"] if quick else [])
    p = subprocess.run(args, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------


def _cell(res, wl_ops):
    if res is None:
        return "-"
    if "error" in res:
        return "ERROR"
    t = res.get("per_op_s") if wl_ops else res["median_s"]
    return _fmt_time(t)


def _extra(res, probes):
    if not res or "error" in res:
        return ""
    parts = []
    if "gbps" in res:
        s = f"{res['gbps']:.1f} GB/s"
        lim = probes.get("bandwidth", {}).get("limit_gbps")
        if lim:
            s += f" ({100 * res['gbps'] / lim:.0f}% bw)"
        parts.append(s)
    if "gflops" in res:
        s = f"{res['gflops']:.1f} GFLOP/s"
        lim = probes.get("gemm", {}).get("limit_gflops")
        if lim:
            s += f" ({100 * res['gflops'] / lim:.0f}% peak)"
        parts.append(s)
    return ", ".join(parts)


# Issue 6's targets for the ratio ferrograd/torch (same run, median).
TARGETS = {
    "add": 0.35,
    "add_grad": 0.35,
    "chain": 0.5,
    "wide": 0.7,
    "elementwise": 1.0,
    "matmul": 1.2,
    "mlp": 1.0,
    "custom_fn": 0.5,
    "custom_chain": 0.5,
    "hvp": 0.7,
    "import": 0.1,
    "rss": 0.5,
}


def _pairs_cell(pairs):
    """The range of the per-repeat ratios (see ``bench_workload``)."""
    if not pairs:
        return ""
    return f"{pairs[0]:.2f}-{pairs[-1]:.2f}"


def _target_cell(name, ratio):
    t = TARGETS.get(name)
    if t is None or ratio is None:
        return ""
    return f"<= {t:g} " + ("ok" if ratio <= t else "MISS")


def fresh_process_ratios(report):
    """Ratios ferrograd/torch of the fresh-process measurements."""
    out = {}
    fp = report.get("fresh_process", {})
    imp = fp.get("import", {})
    if "ferrograd" in imp and "torch" in imp:
        out["import"] = imp["ferrograd"]["median_s"] / imp["torch"]["median_s"]
    rss = fp.get("rss", {})
    if "peak_rss_mb" in rss.get("ferrograd", {}) and "peak_rss_mb" in rss.get("torch", {}):
        out["rss"] = rss["ferrograd"]["peak_rss_mb"] / rss["torch"]["peak_rss_mb"]
    return out


def format_table(report):
    header = (
        "workload",
        "ferrograd",
        "torch",
        "numpy",
        "fg/torch",
        "pairs",
        "target",
        "ferrograd rate",
    )
    rows = [header]
    errors = []
    probes = report.get("probes", {})
    for name, w in report["workloads"].items():
        res = w["results"]
        per_op = WORKLOADS[name].ops is not None
        title = w["title"] + (" (per op)" if per_op else "")
        ratio = f"{w['ratio']:.2f}" if w["ratio"] is not None else "-"
        chk = w.get("check", {})
        if chk and not chk.get("ok", True):
            ratio += " MISMATCH"
        rows.append(
            (
                title,
                _cell(res.get("ferrograd"), per_op),
                _cell(res.get("torch"), per_op),
                _cell(res.get("numpy"), per_op),
                ratio,
                _pairs_cell(w.get("pair_ratios")),
                _target_cell(name, w["ratio"]),
                _extra(res.get("ferrograd"), probes),
            )
        )
        for lib, r in res.items():
            if "error" in r:
                errors.append(f"{name} [{lib}]: {r['error']}")
    fp = report.get("fresh_process", {})
    ratios = fresh_process_ratios(report)
    imp = fp.get("import", {})
    if imp:
        fgi, thi = imp.get("ferrograd"), imp.get("torch")
        r = ratios.get("import")
        rows.append(
            (
                "10a. import time (fresh process)",
                _fmt_time(fgi["median_s"]) if fgi else "-",
                _fmt_time(thi["median_s"]) if thi else "-",
                "",
                f"{r:.3f}" if r is not None else "-",
                "",
                _target_cell("import", r),
                "",
            )
        )
    rss = fp.get("rss", {})
    if rss:

        def mb(r):
            return f"{r['peak_rss_mb']:.0f} MB" if "peak_rss_mb" in r else "-"

        r = ratios.get("rss")
        rows.append(
            (
                "10b. peak RSS of the MLP step (fresh process)",
                mb(rss.get("ferrograd", {})),
                mb(rss.get("torch", {})),
                "",
                f"{r:.2f}" if r is not None else "-",
                "",
                _target_cell("rss", r),
                "",
            )
        )
        for lib, r in rss.items():
            if "error" in r:
                errors.append(f"rss [{lib}]: {r['error']}")
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for i, r in enumerate(rows):
        cells = [c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths))]
        lines.append("| " + " | ".join(cells) + " |")
        if i == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    out = "\n".join(lines)
    if errors:
        out += "\n\nErrors:\n" + "\n".join("  " + e for e in errors)
    return out


def format_header(report):
    m = report["machine"]
    lines = [
        f"CPU: {m['cpu']} ({', '.join(m['simd']) or 'no AVX2'}), "
        f"{m['logical_cpus']} logical CPUs"
        + (f", {m['usable_cpus']} usable" if "usable_cpus" in m else ""),
        f"threads: {m['threads']} (ferrograd.get_num_threads()={m.get('ferrograd_threads', '-')}, "
        f"torch.get_num_threads()={m.get('torch_threads', '-')})",
        f"python {m['python']}, numpy {m['numpy']}, torch {m.get('torch', '-')}, "
        f"ferrograd {m.get('ferrograd', '-')} [{m.get('ferrograd_build', '-')}: "
        f"{m.get('ferrograd_ext', '-')}]",
        f"load average: start {m['loadavg_start']}, end {m.get('loadavg_end', '-')}",
        f"repeats: {report['config']['repeats']}, median per iteration; quick={report['config']['quick']}; "
        "fg/torch: ratio of the medians; pairs: range of the ratios of back-to-back samples",
    ]
    p = report.get("probes", {})
    if "bandwidth" in p:
        bw = p["bandwidth"]
        lines.append(
            "memory bandwidth: "
            + ", ".join(f"{k[:-5]} {v:.1f} GB/s" for k, v in bw.items() if k.endswith("_gbps"))
        )
    if "gemm" in p:
        g = p["gemm"]
        lines.append(
            f"GEMM {g['n']}x{g['n']} f32: "
            + ", ".join(f"{k[:-7]} {v:.1f} GFLOP/s" for k, v in g.items() if k.endswith("_gflops"))
        )
    if "wheel" in report:
        w = report["wheel"]
        lines.append(f"wheel: {os.path.basename(w['path'])} = {w['mb']:.2f} MB (target < 10 MB)")
    return "\n".join(lines)


# ----------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, smaller sizes")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default=None, help="comma-separated workload names")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--json", default=None, metavar="PATH")
    ap.add_argument("--wheel", default=None, metavar="PATH", help="report this wheel's size")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-probes", action="store_true")
    ap.add_argument("--no-subprocess", action="store_true", help="skip import time / RSS")
    ap.add_argument("--list", action="store_true", help="list workload names")
    ap.add_argument("--_child-rss", dest="child_rss", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.list:
        for name, wl in WORKLOADS.items():
            print(f"{name:14s} {wl.title}")
        print(f"{'import':14s} 10a. import time (fresh process)")
        print(f"{'rss':14s} 10b. peak RSS of the MLP step (fresh process)")
        print(f"{'probes':14s} memory bandwidth and GEMM probes")
        return 0
    if args.child_rss:
        _child_rss(args.child_rss, args.quick, args.threads)
        return 0

    names = list(WORKLOADS) + ["import", "rss", "probes"]
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in WORKLOADS and n not in ("import", "rss", "probes")]
        if unknown:
            ap.error(f"unknown workload(s): {', '.join(unknown)} (see --list)")

    libs = _import_libs(args.no_torch)
    fg, torch = libs["ferrograd"], libs.get("torch")
    fg.set_num_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    repeats = args.repeats or (3 if args.quick else 7)
    target = 0.05 if args.quick else 0.25

    report = {
        "machine": machine_info(args.threads, fg, torch),
        "config": {"quick": args.quick, "repeats": repeats, "sample_target_s": target},
        "workloads": {},
        "probes": {},
        "fresh_process": {},
    }
    if report["machine"].get("ferrograd_build") == "debug":
        print("WARNING: ferrograd is a debug build; numbers are meaningless.", file=sys.stderr)
    print(format_header(report), flush=True)

    if "probes" in names and not args.no_probes:
        report["probes"]["bandwidth"] = probe_bandwidth(args.quick, torch, fg)
        report["probes"]["gemm"] = probe_gemm(args.quick, torch, fg)

    run_libs = dict(libs)
    run_libs["numpy"] = np
    for name in names:
        if name not in WORKLOADS:
            continue
        res = bench_workload(WORKLOADS[name], run_libs, args.quick, repeats, target)
        report["workloads"][name] = res
        r = res["results"]
        print(
            f"  {name}: "
            + ", ".join(
                f"{lib} {_fmt_time(v.get('median_s')) if 'error' not in v else 'ERROR'}"
                for lib, v in r.items()
            )
            + (f", ratio {res['ratio']:.2f}" if res["ratio"] is not None else ""),
            flush=True,
        )

    if not args.no_subprocess:
        env = _child_env(fg)
        sub_libs = ["ferrograd"] + (["torch"] if torch is not None else [])
        if "import" in names:
            runs = 3 if args.quick else 7
            report["fresh_process"]["import"] = {
                lib: measure_import(lib, env, runs) for lib in sub_libs
            }
        if "rss" in names:
            report["fresh_process"]["rss"] = {
                lib: measure_rss(lib, env, args.quick, args.threads) for lib in sub_libs
            }

    if args.wheel:
        report["wheel"] = {"path": args.wheel, "mb": os.path.getsize(args.wheel) / 1e6}
    report["machine"]["loadavg_end"] = list(os.getloadavg())
    report["fresh_process"]["ratios"] = fresh_process_ratios(report)

    print()
    print(format_header(report))
    print()
    print(format_table(report))
    if args.json:
        write_json(report, args.json, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
