"""Smoke test of benches/sweep.py (issue 22's operator and model sweep).

Runs a few quick cases on ferrograd alone, checks the summary math on
synthetic numbers and that the ferrograd result of every case with a cheap
numpy reference matches it. The torch parts skip when torch is missing.
Never asserts a speed.
"""

import importlib.util
import json
import math
import os
import sys

import ferrograd
import numpy as np
import pytest

BENCHES = os.path.join(os.path.dirname(__file__), "..", "..", "benches")
SWEEP = os.path.join(BENCHES, "sweep.py")


def load_bench(name="ferrograd_bench_sweep", path=SWEEP):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def sweep():
    return load_bench()


@pytest.fixture(scope="module")
def cases(sweep):
    return sweep.op_cases()


def _by_name(cases, name):
    return next(c for c in cases if c.name == name)


# The case table ------------------------------------------------------------------


def test_case_table_covers_the_issue(sweep, cases):
    names = [c.name for c in cases]
    assert len(names) == len(set(names))
    assert len(cases) >= 60
    fams = {c.family for c in cases}
    assert {"unary", "binary", "broadcast", "reduce", "softmax", "index", "cat"} <= fams
    assert {"matmul", "conv", "pool"} <= fams
    assert {"contig", "t", "perm", "step", "expand"} <= {c.layout for c in cases}
    assert {"f32", "f64", "i64", "i32", "u8", "f16", "bf16"} == {c.dtype for c in cases}
    assert {"fwd", "fwd+bwd"} == {c.mode for c in cases}
    sizes = [c.numel for c in cases]
    assert min(sizes) <= 100 and max(sizes) >= 10_000_000
    ops = {c.op for c in cases}
    for op in ("exp", "tanh", "sigmoid", "relu", "gelu", "sin", "log", "sqrt"):
        assert op in ops
    for op in ("add", "mul", "div", "pow", "maximum", "where", "gt", "eq"):
        assert op in ops
    for op in ("sum", "mean", "amax", "max", "var", "norm", "logsumexp", "argmax"):
        assert any(o.startswith(op + "(") for o in ops), op
    for op in ("softmax", "log_softmax", "layer_norm", "index_select", "gather", "scatter_add"):
        assert any(o.startswith(op) for o in ops), op
    for op in ("cat", "stack", "bmm", "einsum", "conv2d", "max_pool2d", "avg_pool2d"):
        assert any(o.startswith(op) for o in ops), op
    # each case: family/op/layout/dtype/size/mode in its name
    c = cases[0]
    assert c.name.split("/")[0] == c.family and c.name.endswith("/" + c.mode)
    assert any(c.quick for c in cases)
    assert len(sweep.MODELS) >= 6


# Harness on ferrograd alone ----------------------------------------------------------

QUICK = [
    "unary/exp/t/f32/100x100/fwd+bwd",
    "binary/add/mixed/f32/100x100/fwd",
    "reduce/sum(dim=-1)/t/f32/100x100/fwd+bwd",
    "matmul/matmul/contig/f32/1024x16x16@1024x16x16/fwd",
]


def test_quick_cases_on_ferrograd(sweep, cases):
    picked = [_by_name(cases, n) for n in QUICK]
    recs = sweep.run_cases(
        [c.workload() for c in picked],
        {"ferrograd": ferrograd},
        repeats=2,
        target=0.001,
        pause=0.0,
        log=None,
        cases=picked,
    )
    for c, r in zip(picked, recs):
        assert r["status"] == "ok", (r["name"], r["detail"])
        assert r["name"] == c.name and r["family"] == c.family and r["layout"] == c.layout
        assert r["fg_s"] > 0 and r["ratio"] is None and r["torch_s"] is None
        s = r["samples"]["ferrograd"]
        assert len(s["samples"]) == 2 and all(x > 0 for x in s["samples"]) and s["number"] >= 1
        if c.kind == "flop":
            assert r["fg_gflops"] > 0
        else:
            assert r["fg_gbps"] > 0 and r["bytes"] > 0
    # bytes model: unary fwd+bwd = I + 2 I_grad + 2 O = 5 N elements
    exp_t = picked[0]
    assert exp_t.nbytes() == 5 * 100 * 100 * 4


def test_models_run_on_ferrograd(sweep):
    for name, wl in sweep.MODELS.items():
        case = wl.make(ferrograd, True)
        case.run()
        loss, grad = case.result()
        assert np.isfinite(loss).all(), name
        assert np.isfinite(grad).all() and np.abs(grad).max() > 0, name
        case.run()  # a second step reuses the optimizer state


def test_ferrograd_missing_op_is_reported_not_raised(sweep):
    c = sweep.OpCase(
        "unary",
        "no_such_op",
        "contig",
        "f32",
        "10",
        10,
        "fwd",
        [sweep.Arg((10,))],
        lambda L, x: x.no_such_op(),
    )
    (rec,) = sweep.run_cases(
        [c.workload()], {"ferrograd": ferrograd}, 1, 0.001, pause=0.0, log=None, cases=[c]
    )
    assert rec["status"] == "missing" and "no_such_op" in rec["detail"]
    assert rec["fg_s"] is None


# Summary math ------------------------------------------------------------------------


def _rec(name, family, ratio, fg=None, th=None, layout="contig", status="ok", **kw):
    op = kw.pop("op", "exp")
    r = {
        "name": name,
        "family": family,
        "op": op,
        "layout": layout,
        "dtype": "f32",
        "mode": "fwd",
        "numel": kw.pop("numel", 1000),
        "size": kw.pop("size", "10x100"),
        "ratio": ratio,
        "fg_s": fg,
        "torch_s": th,
        "status": status,
        "detail": "",
    }
    r.update(kw)
    return r


def test_geomean_and_worst(sweep):
    assert sweep.geomean([0.5, 2.0]) == pytest.approx(1.0)
    assert sweep.geomean([0.1, 1.0, 10.0, None]) == pytest.approx(1.0)
    assert sweep.geomean([]) is None
    recs = [
        _rec("a", "unary", 0.5),
        _rec("b", "unary", 2.0),
        _rec("c", "unary", 8.0),
        _rec("d", "binary", 0.25),
        _rec("e", "binary", None, status="missing"),
        _rec("f", "binary", 1.0, status="mismatch"),
    ]
    s = sweep.summarize(recs)
    u, b = s["groups"]["unary"], s["groups"]["binary"]
    assert u["n"] == 3 and u["timed"] == 3
    assert u["geomean"] == pytest.approx(2.0)  # (0.5 * 2 * 8) ** (1/3)
    assert (u["worst"], u["worst_case"]) == (8.0, "c")
    assert (u["best"], u["best_case"]) == (0.5, "a")
    assert b["n"] == 3 and b["timed"] == 2 and b["missing"] == 1 and b["mismatch"] == 1
    assert b["geomean"] == pytest.approx(0.5)
    o = s["overall"]
    assert o["timed"] == 5 and o["worst_case"] == "c"
    assert o["geomean"] == pytest.approx(math.exp(sum(map(math.log, [0.5, 2, 8, 0.25, 1])) / 5))
    worst = sweep.worst_cases(recs, n=2)
    assert [w["name"] for w in worst] == ["c", "b"]


def test_stride_penalty(sweep):
    recs = [
        # elementwise: twins match by element count, whatever the shape
        _rec("exp-c", "unary", 1.0, fg=1.0, th=2.0, size="10x100"),
        _rec("exp-t", "unary", 1.0, fg=3.0, th=2.5, layout="t", size="100x10"),
        _rec("exp-p", "unary", 1.0, fg=1.2, th=2.0, layout="perm", size="10x10x10"),
        # a different element count: no twin
        _rec("exp-s", "unary", 1.0, fg=1.0, th=1.0, layout="step", numel=2000),
        # non-elementwise: twins match by size label; no target
        _rec("sum-c", "reduce", 1.0, fg=2.0, th=1.0, op="sum(dim=-1)"),
        _rec("sum-t", "reduce", 1.0, fg=5.0, th=1.5, op="sum(dim=-1)", layout="t"),
        _rec("sum-t2", "reduce", 1.0, fg=5.0, th=1.5, op="sum(dim=-1)", layout="t", size="9"),
        # errors: no time, no penalty value
        _rec("log-c", "unary", None, op="log", status="error"),
        _rec("log-t", "unary", 1.0, fg=1.0, th=1.0, op="log", layout="t"),
    ]
    pens = {p["name"]: p for p in sweep.stride_penalties(recs)}
    assert set(pens) == {"exp-t", "exp-p", "sum-t", "log-t"}
    assert pens["exp-t"]["fg_penalty"] == pytest.approx(3.0)
    assert pens["exp-t"]["torch_penalty"] == pytest.approx(1.25)
    assert pens["exp-t"]["ok"] is False and pens["exp-t"]["twin"] == "exp-c"
    assert pens["exp-p"]["fg_penalty"] == pytest.approx(1.2) and pens["exp-p"]["ok"] is True
    assert pens["sum-t"]["fg_penalty"] == pytest.approx(2.5)
    assert pens["sum-t"]["target"] is None and pens["sum-t"]["ok"] is None
    assert pens["log-t"]["fg_penalty"] is None and pens["log-t"]["ok"] is None


def test_foreign_load(sweep):
    assert sweep.foreign_load((0.0, 10.0, 1.0), (2.0, 14.0, 2.0)) == pytest.approx(1.5)
    assert sweep.foreign_load((0.0, 10.0, 1.0), (2.0, 10.0, 3.0)) == 0.0
    assert sweep.foreign_load((0.0, None, 1.0), (2.0, None, 3.0)) is None


# Results against numpy ------------------------------------------------------------------


def _cheap_cases(sweep, cases):
    """One forward case per (family, op, layout, dtype): the smallest, if
    it has a numpy reference and at most ~1e6 elements."""
    pick = {}
    for c in cases:
        if c.mode != sweep.FWD or c.ref is None or c.numel > 1_100_000:
            continue
        if c.kind == "flop" and c.fwd_flops > 5e7:
            continue
        k = (c.family, c.op, c.layout, c.dtype)
        if k not in pick or c.numel < pick[k].numel:
            pick[k] = c
    return list(pick.values())


def test_every_case_matches_numpy(sweep, cases):
    picked = _cheap_cases(sweep, cases)
    assert len(picked) >= 60
    bad = []
    for c in picked:
        bases = c.inputs_numpy()
        expected = c.numpy_reference(bases)
        case = c.make(ferrograd, bases=bases)
        case.run()
        (got,) = case.result()
        err = sweep.compare._compare_results([expected], [got])
        if not err < 1e-4:
            bad.append((c.name, err))
    assert not bad, bad


UNARY_GRAD = {
    "exp": np.exp,
    "tanh": lambda x: 1.0 - np.tanh(x) ** 2,
    "sigmoid": lambda x: np.exp(-x) / (1.0 + np.exp(-x)) ** 2,
    "relu": lambda x: (x > 0).astype(x.dtype),
    "sin": np.cos,
    "log": lambda x: 1.0 / x,
    "sqrt": lambda x: 0.5 / np.sqrt(x),
}


def test_unary_gradients_match_numpy(sweep, cases):
    pick = {}
    for c in cases:
        low = c.dtype in ("f16", "bf16")  # no float64 reference for 2-byte floats
        if c.family == "unary" and c.mode == sweep.BWD and c.op in UNARY_GRAD and not low:
            k = (c.op, c.layout, c.dtype)
            if c.numel <= 1_100_000 and (k not in pick or c.numel < pick[k].numel):
                pick[k] = c
    assert len(pick) >= 10
    for c in pick.values():
        bases = c.inputs_numpy()
        x = c.args[0].view(bases[0], is_np=True).astype(np.float64)
        g = np.random.default_rng(c.seed + 1).standard_normal(x.shape)
        g = g.astype(bases[0].dtype).astype(np.float64)
        case = c.make(ferrograd, bases=bases)
        case.run()
        _y, grad = case.result()
        err = sweep.compare._compare_results([g * UNARY_GRAD[c.op](x)], [grad])
        assert err < 1e-4, (c.name, err)


# The command line ---------------------------------------------------------------------


def test_cli_quick_json(sweep, tmp_path, capsys):
    path = tmp_path / "s.json"
    threads = str(ferrograd.get_num_threads())
    argv = ["--quick", "--no-torch", "--no-probes", "--threads", threads, "--json", str(path)]
    argv += ["--only", "unary/exp/contig,per_example"]
    assert sweep.main(argv) == 0
    out = capsys.readouterr().out
    assert "AVX-512" in out and "threads" in out and "OPERATOR SWEEP" in out
    rep = json.loads(path.read_text())
    assert {r["name"] for r in rep["ops"]} == {
        "unary/exp/contig/f32/100x100/fwd",
        "unary/exp/contig/f32/100x100/fwd+bwd",
    }
    assert [r["name"] for r in rep["models"]] == ["per_example"]
    assert all(r["fg_s"] > 0 and r["status"] == "ok" for r in rep["ops"] + rep["models"])
    assert "summary" in rep and "cpu" in rep["machine"] and "avx512" in rep["machine"]
    assert rep["summary"]["ops"]["overall"]["timed"] == 0  # no torch: no ratios


def test_cli_list(sweep, capsys):
    assert sweep.main(["--list", "--only", "conv2d"]) == 0
    lines = capsys.readouterr().out.split()
    assert lines and all("conv2d" in n for n in lines)


# With torch ----------------------------------------------------------------------------


def test_ratios_against_torch(sweep, cases, torch):
    picked = [_by_name(cases, n) for n in QUICK[:2]]
    wls = [c.workload() for c in picked] + [sweep.MODELS["per_example"]]
    libs = {"ferrograd": ferrograd, "torch": torch}
    # One torch thread: on a busy machine torch's OpenMP team, waiting for a
    # descheduled thread, takes milliseconds per op and would slow the test.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        recs = sweep.run_cases(
            wls, libs, 2, 0.001, pause=0.0, log=None, cases=picked + [None], quick=True
        )
    finally:
        torch.set_num_threads(threads)
    for r in recs:
        assert r["status"] == "ok", (r["name"], r["detail"])
        assert r["ratio"] == pytest.approx(r["fg_s"] / r["torch_s"])
        assert r["check"]["ok"] and r["check"]["against"] == "torch"
        assert r["pairs"][0] <= r["pairs"][1]


def test_scaling_table_against_torch(torch, tmp_path, capsys):
    scaling = load_bench("ferrograd_bench_scaling", os.path.join(BENCHES, "scaling.py"))
    path = tmp_path / "scaling.json"
    threads = (ferrograd.get_num_threads(), torch.get_num_threads())
    argv = ["--threads", "1", "--repeats", "1", "--sample-time", "0.001", "--json", str(path)]
    try:
        scaling.main(argv + ["--only", "wide,1024x16x16"])
    finally:
        ferrograd.set_num_threads(threads[0])
        torch.set_num_threads(threads[1])
    out = capsys.readouterr().out
    assert "wide graph forward" in out and "wide graph backward" in out
    runs = json.loads(path.read_text())["runs"]
    assert {r["case"] for r in runs} == {
        "wide graph (fwd | bwd)",
        "matmul/matmul/contig/f32/1024x16x16@1024x16x16/fwd",
    }
    for r in runs:
        assert r["threads"] == 1
        for lib in ("ferrograd", "torch"):
            t = r[lib]
            assert t["total_s"] > 0 and 0 <= t["first_s"] < t["total_s"]
            # Only the wide graph times its forward apart.
            assert (t["first_s"] > 0) == r["case"].startswith("wide")
