"""sweep.py's summary math (geometric means by family, stride penalties,
worst cases) and its tables: the machine header, the per-op table, the
family summary, the stride penalties, the models and the worst cases.
"""

from __future__ import annotations

import math

from .harness import _fmt_time
from .sweep_case import ELEMENTWISE, F64, STRIDE_TARGET

# ----------------------------------------------------------------------------
# Summary math
# ----------------------------------------------------------------------------


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def summarize(records, key="family"):
    """Per-group (and overall) geomean and worst of the ratios.

    Returns {"groups": {group: {...}}, "overall": {...}}; each entry has n
    (cases), timed (cases with a ratio), geomean, worst (ratio) and
    worst_case (its name), best/best_case, and counts of each non-ok status.
    """

    def stats(recs):
        timed = [r for r in recs if r.get("ratio") is not None]
        out = {"n": len(recs), "timed": len(timed), "geomean": geomean([r["ratio"] for r in timed])}
        if timed:
            w = max(timed, key=lambda r: r["ratio"])
            b = min(timed, key=lambda r: r["ratio"])
            out.update(worst=w["ratio"], worst_case=w["name"], best=b["ratio"], best_case=b["name"])
        else:
            out.update(worst=None, worst_case=None, best=None, best_case=None)
        for st in ("mismatch", "missing", "error", "torch-error"):
            out[st] = sum(1 for r in recs if r.get("status") == st)
        return out

    groups = {}
    for r in records:
        groups.setdefault(r.get(key, "?"), []).append(r)
    return {"groups": {g: stats(rs) for g, rs in groups.items()}, "overall": stats(records)}


def _twin_key(rec, layout="contig"):
    size = rec["numel"] if rec["family"] in ELEMENTWISE else rec["size"]
    return (rec["family"], rec["op"], rec["dtype"], rec["mode"], size, layout)


def stride_penalties(records):
    """For every case on a non-contiguous layout with a contiguous twin (same
    family, op, dtype, mode and size): its time over the twin's, for
    ferrograd and for torch. Elementwise families carry the target."""
    by_key = {_twin_key(r, r["layout"]): r for r in records if "family" in r}
    out = []
    for r in records:
        if "family" not in r or r["layout"] == "contig":
            continue
        twin = by_key.get(_twin_key(r))
        if twin is None:
            continue

        def pen(a, b):
            return a / b if a is not None and b else None

        fg_pen = pen(r.get("fg_s"), twin.get("fg_s"))
        th_pen = pen(r.get("torch_s"), twin.get("torch_s"))
        elementwise = r["family"] in ELEMENTWISE
        out.append(
            {
                "name": r["name"],
                "twin": twin["name"],
                "family": r["family"],
                "layout": r["layout"],
                "elementwise": elementwise,
                "fg_s": r.get("fg_s"),
                "fg_contig_s": twin.get("fg_s"),
                "fg_penalty": fg_pen,
                "torch_penalty": th_pen,
                "target": STRIDE_TARGET if elementwise else None,
                "ok": (fg_pen <= STRIDE_TARGET) if (elementwise and fg_pen is not None) else None,
            }
        )
    return out


def worst_cases(records, n=15):
    timed = [r for r in records if r.get("ratio") is not None]
    return sorted(timed, key=lambda r: r["ratio"], reverse=True)[:n]


def build_summary(op_records, model_records):
    return {
        "ops": summarize(op_records),
        "ops_by_layout": summarize([r for r in op_records if "layout" in r], key="layout"),
        "ops_by_dtype": summarize([r for r in op_records if "dtype" in r], key="dtype"),
        "models": summarize(model_records, key="name"),
        "stride_penalties": stride_penalties(op_records),
        "worst15": [
            {"name": r["name"], "ratio": r["ratio"]}
            for r in worst_cases(op_records + model_records)
        ],
        "not_ok": [
            {"name": r["name"], "status": r["status"], "detail": r["detail"]}
            for r in op_records + model_records
            if r["status"] != "ok"
        ],
    }


# ----------------------------------------------------------------------------
# Tables
# ----------------------------------------------------------------------------


def _table(header, rows, left=1):
    rows = [tuple(header)] + [tuple(r) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for i, r in enumerate(rows):
        cells = [c.ljust(w) if j < left else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths))]
        lines.append("| " + " | ".join(cells) + " |")
        if i == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _f(x, fmt="{:.2f}"):
    return "-" if x is None else fmt.format(x)


def machine_header(report):
    """The lines printed at the top of every table."""
    m = report["machine"]
    avx512 = "AVX-512: yes" if m.get("avx512") else "AVX-512: no"
    simd = "+".join(s.upper() for s in m.get("simd", []) if s != "avx512f") or "no AVX2"
    usable = f", {m['usable_cpus']} usable" if "usable_cpus" in m else ""
    threads = (
        f"threads: {m['threads']} (ferrograd {m.get('ferrograd_threads', '-')}, "
        f"torch {m.get('torch_threads', '-')})"
    )
    libs = (
        f"# python {m['python']}, numpy {m['numpy']}, torch {m.get('torch', '-')}, "
        f"ferrograd {m.get('ferrograd', '-')} ({m.get('ferrograd_build', '-')}: "
        f"{m.get('ferrograd_ext', '-')})"
    )
    cpu = f"# CPU: {m['cpu']} ({simd}; {avx512}), {m['logical_cpus']} logical CPUs{usable}"
    lines = [f"{cpu}; {threads}", libs]
    la = m.get("loadavg_start")
    lines.append(
        f"# load average at start {la[0]:.2f}"
        + (f", at end {m['loadavg_end'][0]:.2f}" if m.get("loadavg_end") else "")
        + "; load column: CPUs other processes kept busy during the case"
    )
    cfg = report["config"]
    lines.append(
        f"# repeats {cfg['repeats']} per library, interleaved, medians; "
        f"sample ~{cfg['target_s']} s; quick={cfg['quick']}; "
        "ratio = ferrograd / torch (lower is better)"
    )
    return "\n".join(lines)


def _rate(rec, lib, probes):
    key = "fg" if lib == "ferrograd" else "torch"
    if f"{key}_gbps" in rec:
        v = rec[f"{key}_gbps"]
        lim = probes.get("bandwidth", {}).get("limit_gbps")
        return f"{v:.1f} GB/s" + (f" ({100 * v / lim:.0f}%)" if lim else "")
    if f"{key}_gflops" in rec:
        v = rec[f"{key}_gflops"]
        lim = probes.get("gemm", {}).get("limit_gflops")
        if lim and rec.get("dtype") == F64:
            lim = lim / 2  # float64 peak: half the float32 probe (same FMA width)
        return f"{v:.1f} GFLOP/s" + (f" ({100 * v / lim:.0f}%)" if lim else "")
    return ""


def format_op_table(report):
    probes = report.get("probes", {})
    rows = []
    for r in report["ops"]:
        status = r["status"] if r["status"] == "ok" else r["status"].upper()
        rows.append(
            (
                r["name"],
                _fmt_time(r["fg_s"]),
                _fmt_time(r["torch_s"]),
                _f(r["ratio"]),
                f"{r['pairs'][0]:.2f}-{r['pairs'][1]:.2f}" if r["pairs"] else "",
                _rate(r, "ferrograd", probes),
                _rate(r, "torch", probes),
                _f(r.get("foreign_load"), "{:.1f}"),
                status,
            )
        )
    hdr = (
        "case",
        "ferrograd",
        "torch",
        "fg/torch",
        "pairs",
        "fg rate",
        "torch rate",
        "load",
        "status",
    )
    return machine_header(report) + "\n" + _table(hdr, rows)


def format_summary_table(summary, report, key_name="family"):
    rows = []
    for g, s in list(summary["groups"].items()) + [("OVERALL", summary["overall"])]:
        bad = ", ".join(
            f"{s[k]} {k}" for k in ("mismatch", "missing", "error", "torch-error") if s[k]
        )
        rows.append(
            (
                g,
                str(s["n"]),
                str(s["timed"]),
                _f(s["geomean"]),
                _f(s["worst"]),
                s["worst_case"] or "-",
                _f(s["best"]),
                bad,
            )
        )
    hdr = (key_name, "cases", "timed", "geomean", "worst", "worst case", "best", "not ok")
    return machine_header(report) + "\n" + _table(hdr, rows)


def format_stride_table(summary, report):
    pens = summary["stride_penalties"]
    if not pens:
        return ""
    rows = []
    for p in sorted(pens, key=lambda p: (not p["elementwise"], p["name"])):
        tgt = ""
        if p["elementwise"] and p["fg_penalty"] is not None:
            tgt = f"<= {STRIDE_TARGET:g} " + ("ok" if p["ok"] else "MISS")
        rows.append(
            (
                p["name"],
                _fmt_time(p["fg_s"]),
                _fmt_time(p["fg_contig_s"]),
                _f(p["fg_penalty"]),
                _f(p["torch_penalty"]),
                tgt,
            )
        )
    hdr = ("case (non-contiguous)", "fg", "fg contig", "fg penalty", "torch penalty", "target")
    ew = [p for p in pens if p["elementwise"] and p["fg_penalty"] is not None]
    miss = [p for p in ew if not p["ok"]]
    tail = (
        f"\nelementwise stride penalties: {len(ew)}, over {STRIDE_TARGET:g}: {len(miss)}; "
        f"geomean ferrograd {_f(geomean([p['fg_penalty'] for p in ew]))}, "
        f"torch {_f(geomean([p['torch_penalty'] for p in ew]))}"
    )
    return machine_header(report) + "\n" + _table(hdr, rows) + tail


def format_model_table(report):
    rows = []
    for r in report["models"]:
        status = r["status"] if r["status"] == "ok" else r["status"].upper()
        rows.append(
            (
                r["name"],
                r.get("title", ""),
                _fmt_time(r["fg_s"]),
                _fmt_time(r["torch_s"]),
                _f(r["ratio"]),
                f"{r['pairs'][0]:.2f}-{r['pairs'][1]:.2f}" if r["pairs"] else "",
                _f(r.get("foreign_load"), "{:.1f}"),
                status + (f" ({r['detail']})" if r["detail"] else ""),
            )
        )
    hdr = ("model", "step", "ferrograd", "torch", "fg/torch", "pairs", "load", "status")
    return machine_header(report) + "\n" + _table(hdr, rows, left=2)


def format_worst(summary, report):
    rows = [(str(i + 1), w["name"], _f(w["ratio"])) for i, w in enumerate(summary["worst15"])]
    return machine_header(report) + "\n" + _table(("#", "worst cases", "fg/torch"), rows, left=2)


def format_not_ok(summary):
    lines = [f"  {x['status'].upper()}: {x['name']}: {x['detail']}" for x in summary["not_ok"]]
    return "\n".join(lines)


def format_report(report):
    s = report["summary"]
    parts = []
    if report["ops"]:
        parts += ["OPERATOR SWEEP", format_op_table(report), ""]
        parts += ["PER FAMILY (ratio ferrograd/torch)", format_summary_table(s["ops"], report), ""]
        parts += ["PER LAYOUT", format_summary_table(s["ops_by_layout"], report, "layout"), ""]
        parts += ["PER DTYPE", format_summary_table(s["ops_by_dtype"], report, "dtype"), ""]
        st = format_stride_table(s, report)
        if st:
            parts += [
                "STRIDE PENALTY (time on the layout / time contiguous, same op, size, dtype, mode)",
                st,
                "",
            ]
    if report["models"]:
        parts += ["MODEL SWEEP (one training step)", format_model_table(report), ""]
        m = s["models"]["overall"]
        parts.append(
            f"models: geomean {_f(m['geomean'])}, worst {_f(m['worst'])} ({m['worst_case']})"
        )
        parts.append("")
    parts += ["WORST CASES", format_worst(s, report)]
    if s["not_ok"]:
        parts += ["", "NOT OK (mismatch / missing / error):", format_not_ok(s)]
    return "\n".join(parts)
