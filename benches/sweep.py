"""Broad benchmark sweep of ferrograd against torch (issue 22: speed on every
layout, dtype and core count).

Two sweeps, each case written once against the torch-compatible API so the
same code runs on both libraries, in one process, interleaved (ferrograd,
torch, ferrograd, torch, ...), ``--repeats`` samples per library, medians:

* the OPERATOR sweep: op families (unary and binary elementwise, comparisons,
  broadcasting, reductions, softmax/layer_norm, indexing, cat/stack, copies,
  matmul/bmm/einsum, conv2d, pooling) crossed with layouts (contig, t:
  transposed, perm: permuted, step: ``[..., ::2]``, expand: stride 0, mixed:
  one operand transposed, nhwc: channels-last), dtypes (f32, f64, the
  integers i64/i32/u8 where the op takes them, and the 2-byte floats
  f16/bf16, drawn in float32 and cast) and sizes from 1e2 to 1e7 elements, each forward
  only (fwd) and, where the op has a backward, forward and backward
  (fwd+bwd: ``y.backward(g)`` with a fixed random g);
* the MODEL sweep: end-to-end training steps (forward, backward, optimizer
  step) of small models.

Reported: the ratio ferrograd_time / torch_time (lower is better) per case;
per family the geometric mean and the worst case; for memory-bound cases the
achieved GB/s and its fraction of a bandwidth probe, for matmul/conv GFLOP/s
and the fraction of a GEMM probe; for every case on a non-contiguous layout
its "stride penalty" (its time over the time of the same op, size, dtype and
mode on contiguous inputs; target <= 1.5 for elementwise ops). Never asserts
a timing.

    python benches/sweep.py --threads 2 --json sweep.json
    python benches/sweep.py --quick                   # smoke test
    python benches/sweep.py --only unary/exp,matmul --repeats 5
    python benches/sweep.py --models-only             # or --ops-only
    python benches/sweep.py --list                    # case names

Case names read family/op/layout/dtype/size/mode, e.g.
``reduce/sum(dim=1)/contig/f32/100x100x100/fwd+bwd``; ``--only`` takes
comma-separated substrings of them (or of model names).

On a non-contiguous layout the op's input is a detached view made a leaf
(``x.t().detach().requires_grad_()``), so fwd+bwd times the op's forward and
backward on that layout and no copy of the view's own backward.

Byte counts for GB/s are a model of the minimal traffic of an unfused eager
op: fwd reads every input once and writes the output (I + O bytes); fwd+bwd
adds reading the output gradient and one saved tensor per differentiable
input and writing the input gradients (I + 2 I_grad + 2 O). Inputs count
their logical elements, except an expanded (stride-0) input, which counts its
stored ones. GFLOP/s of matmul/conv count 2 flops (a multiply and an add)
per product term, and three products for fwd+bwd; float64 matmul/conv rates
are given as a fraction of half the float32 GEMM probe.

The stride penalty compares a case with its contiguous twin: for elementwise
families the same op, dtype, mode and element count, for the others the same
op, dtype, mode and size label.

The load column is the number of CPUs that other processes kept busy while
the case ran (from /proc/stat). On a machine shared with other work, torch's
OpenMP team waits for a descheduled thread at every parallel region and slows
by up to orders of magnitude (ferrograd's pool less so): ratios taken under
load are not comparable with a quiet run.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import sys
import time
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:  # loaded by file (tests, scaling.py): bench_lib beside it
    sys.path.insert(0, _HERE)

from bench_lib.threads import early_threads, set_thread_env  # noqa: E402

if __name__ == "__main__":
    set_thread_env(early_threads(sys.argv))


def load_compare():
    """benches/compare.py as a module (the harness: timing, probes, machine)."""
    name = "ferrograd_bench_compare"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, "compare.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


compare = load_compare()
Case = compare.Case
Workload = compare.Workload
_np = compare._np

# The case model, the case tables, the models and the report live in
# bench_lib; their names stay reachable as sweep.X (the tests, scaling.py).
from bench_lib.harness import write_json  # noqa: E402
from bench_lib.sweep_case import (  # noqa: E402, F401
    BWD,
    ELEMENTWISE,
    F32,
    F64,
    FWD,
    I64,
    NP_DTYPE,
    STRIDE_TARGET,
    Arg,
    OpCase,
)
from bench_lib.sweep_models import (  # noqa: E402, F401
    MODELS,
    make_cnn,
    make_lstm,
    make_mlp_ln,
    make_ode_f64,
    make_per_example,
    make_pinn_f64,
    make_transformer,
)
from bench_lib.sweep_ops import (  # noqa: E402, F401
    BINARY,
    COMPARE,
    SHAPE3,
    SHAPES2,
    UNARY,
    _binary_cases,
    _broadcast_cases,
    _Builder,
    _cat_cases,
    _compare_cases,
    _copy_cases,
    _index_cases,
    _reduce_cases,
    _softmax_cases,
    _unary_cases,
)
from bench_lib.sweep_ops_nn import (  # noqa: E402, F401
    _conv_cases,
    _matmul_cases,
    _pool_cases,
)
from bench_lib.sweep_report import (  # noqa: E402, F401
    build_summary,
    format_model_table,
    format_not_ok,
    format_op_table,
    format_report,
    format_stride_table,
    format_summary_table,
    format_worst,
    geomean,
    machine_header,
    stride_penalties,
    summarize,
    worst_cases,
)


def op_cases():
    b = _Builder()
    for fn in (
        _unary_cases,
        _binary_cases,
        _compare_cases,
        _broadcast_cases,
        _reduce_cases,
        _softmax_cases,
        _index_cases,
        _cat_cases,
        _copy_cases,
        _matmul_cases,
        _conv_cases,
        _pool_cases,
    ):
        fn(b)
    # Drop exact duplicates (same name), keeping the first.
    seen, out = set(), []
    for c in b.cases:
        if c.name not in seen:
            seen.add(c.name)
            out.append(c)
    return out


# ----------------------------------------------------------------------------
# Running
# ----------------------------------------------------------------------------


def _classify(res, check):
    """Status of a case from bench_workload's result: ok, mismatch, missing
    (AttributeError/NotImplementedError on ferrograd), error, torch-error."""
    fg = res["results"].get("ferrograd", {})
    th = res["results"].get("torch")
    if "error" in fg:
        err = fg["error"]
        if err.startswith(("AttributeError", "NotImplementedError")):
            return "missing", err
        return "error", err
    if th is not None and "error" in th:
        return "torch-error", th["error"]
    if check and not check.get("ok", True):
        return "mismatch", f"max rel err {check.get('max_rel_err'):.3g}"
    return "ok", ""


def record_of(res, case=None):
    """A flat record of one bench_workload result (for tables and JSON)."""
    r = res["results"]
    fg, th = r.get("ferrograd", {}), r.get("torch", {})
    status, detail = _classify(res, res.get("check"))
    rec = {
        "name": res["title"],
        "status": status,
        "detail": detail,
        "fg_s": fg.get("median_s"),
        "torch_s": th.get("median_s"),
        "ratio": res["ratio"],
        "pairs": [res["pair_ratios"][0], res["pair_ratios"][-1]] if res["pair_ratios"] else None,
        "check": res.get("check"),
        "samples": {
            lib: {"samples": v.get("samples"), "number": v.get("number")}
            for lib, v in r.items()
            if "samples" in v
        },
    }
    for lib, key in (("ferrograd", "fg"), ("torch", "torch")):
        v = r.get(lib, {})
        for unit in ("gbps", "gflops"):
            if unit in v:
                rec[f"{key}_{unit}"] = v[unit]
    if case is not None:
        rec.update(
            family=case.family,
            op=case.op,
            layout=case.layout,
            dtype=case.dtype,
            size=case.size,
            numel=case.numel,
            mode=case.mode,
            kind=case.kind,
        )
        if case.kind == "flop":
            rec["flops"] = case.flops()
        else:
            rec["bytes"] = case.nbytes()
    return rec


def _cpu_snapshot():
    """(wall s, busy CPU s of the whole machine, CPU s of this process), to
    measure how much CPU other processes took while a case ran."""
    busy = None
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        busy = (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")  # minus idle, iowait
    except (OSError, ValueError, IndexError):
        pass
    t = os.times()
    return time.perf_counter(), busy, t.user + t.system


def foreign_load(before, after):
    """Average number of CPUs other processes kept busy between two
    snapshots (None where /proc/stat is unavailable)."""
    wall = after[0] - before[0]
    if before[1] is None or after[1] is None or wall <= 0:
        return None
    return max(0.0, ((after[1] - before[1]) - (after[2] - before[2])) / wall)


def run_cases(workloads, libs, repeats, target, pause=0.01, log=print, cases=None, quick=False):
    """Benches each workload on libs (interleaved) and returns the records.

    The objects alive at the start (torch's modules hold about a million)
    are frozen out of the garbage collector meanwhile: the harness collects
    before every sample, which otherwise takes 0.1-0.3 s with torch loaded.
    """
    gc.collect()
    gc.freeze()
    try:
        return _run_cases(workloads, libs, repeats, target, pause, log, cases, quick)
    finally:
        gc.unfreeze()


def _run_cases(workloads, libs, repeats, target, pause, log, cases, quick):
    records = []
    for i, wl in enumerate(workloads):
        snap = _cpu_snapshot()
        res = compare.bench_workload(wl, libs, quick, repeats, target, check=True, pause=pause)
        rec = record_of(res, cases[i] if cases else None)
        rec["name"] = wl.name
        rec["foreign_load"] = foreign_load(snap, _cpu_snapshot())
        records.append(rec)
        if log:
            log(_progress_line(rec, i + 1, len(workloads)))
        gc.collect()
    return records


def _progress_line(rec, i, n):
    ratio = f"{rec['ratio']:.2f}" if rec["ratio"] is not None else "-"
    s = (
        f"  [{i}/{n}] {rec['name']}: fg {compare._fmt_time(rec['fg_s'])}, "
        f"torch {compare._fmt_time(rec['torch_s'])}, ratio {ratio}"
    )
    if rec.get("foreign_load") is not None:
        s += f", other load {rec['foreign_load']:.1f} CPUs"
    if rec["status"] != "ok":
        s += f"  {rec['status'].upper()}: {rec['detail']}"
    return s


# ----------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------


def select(names, only):
    if not only:
        return list(names)
    subs = [s.strip() for s in only.split(",") if s.strip()]
    return [n for n in names if any(s in n for s in subs)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="a handful of small cases, 1 repeat")
    ap.add_argument("--only", default=None, help="comma-separated substrings of case names")
    ap.add_argument("--models-only", action="store_true")
    ap.add_argument("--ops-only", action="store_true")
    ap.add_argument("--json", default=None, metavar="PATH")
    ap.add_argument("--repeats", type=int, default=None, help="samples per library (default 3)")
    ap.add_argument("--sample-time", type=float, default=None, help="seconds per sample")
    ap.add_argument("--no-torch", action="store_true", help="ferrograd alone (no ratios)")
    ap.add_argument("--no-probes", action="store_true")
    ap.add_argument("--list", action="store_true", help="list the case names")
    args = ap.parse_args(argv)
    if args.models_only and args.ops_only:
        ap.error("--models-only and --ops-only exclude each other")

    cases = [] if args.models_only else op_cases()
    models = [] if args.ops_only else list(MODELS.values())
    if args.quick:
        cases = [c for c in cases if c.quick]
    keep = set(select([c.name for c in cases], args.only))
    cases = [c for c in cases if c.name in keep]
    keep_m = set(select([m.name for m in models], args.only))
    models = [m for m in models if m.name in keep_m]
    if args.list:
        for c in cases:
            print(c.name)
        for m in models:
            print(f"model/{m.name}  {m.title}")
        return 0

    libs = compare._import_libs(args.no_torch)
    fg, torch = libs["ferrograd"], libs.get("torch")
    fg.set_num_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    repeats = args.repeats or (1 if args.quick else 3)
    target = args.sample_time or (0.01 if args.quick else 0.05)

    machine = compare.machine_info(args.threads, fg, torch)
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    machine["avx512"] = any(f.startswith("avx512") for f in flags)
    machine["avx512_flags"] = sorted(f for f in flags if f.startswith("avx512"))
    report: dict[str, Any] = {
        "machine": machine,
        "config": {
            "quick": args.quick,
            "repeats": repeats,
            "target_s": target,
            "only": args.only,
            "argv": sys.argv[1:] if argv is None else list(argv),
        },
        "probes": {},
        "ops": [],
        "models": [],
    }
    if machine.get("ferrograd_build") == "debug":
        print("WARNING: ferrograd is a debug build; numbers are meaningless.", file=sys.stderr)
    print(machine_header(report), flush=True)
    print(f"# {len(cases)} operator cases, {len(models)} models", flush=True)

    if not args.no_probes:
        report["probes"]["bandwidth"] = compare.probe_bandwidth(args.quick, torch, fg)
        report["probes"]["gemm"] = compare.probe_gemm(args.quick, torch, fg)
        bw, gm = report["probes"]["bandwidth"], report["probes"]["gemm"]
        print(
            f"# probes: memory bandwidth {bw['limit_gbps']:.1f} GB/s (best of numpy/torch/"
            f"ferrograd copy/triad), GEMM {gm['n']}^3 f32 {gm['limit_gflops']:.1f} GFLOP/s",
            flush=True,
        )

    t0 = time.perf_counter()

    def log(line):
        print(line, flush=True)

    if cases:
        report["ops"] = run_cases(
            [c.workload() for c in cases],
            libs,
            repeats,
            target,
            log=log,
            cases=cases,
            quick=args.quick,
        )
    if models:
        recs = run_cases(models, libs, repeats, target, log=log, quick=args.quick)
        for rec, m in zip(recs, models):
            rec["title"] = m.title + (" [quick sizes]" if args.quick else "")
        report["models"] = recs
    report["elapsed_s"] = time.perf_counter() - t0
    report["machine"]["loadavg_end"] = list(os.getloadavg())
    report["summary"] = build_summary(report["ops"], report["models"])

    print()
    print(format_report(report))
    if args.json:
        write_json(report, args.json, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
