"""Smoke test of benches/compare.py: one quick workload runs on ferrograd.

Only checks that the harness works and measures something; never asserts a
speed.
"""

import importlib.util
import os
import sys

import ferrograd

COMPARE = os.path.join(os.path.dirname(__file__), "..", "..", "benches", "compare.py")


def load_compare():
    spec = importlib.util.spec_from_file_location("ferrograd_bench_compare", COMPARE)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_quick_workload_on_ferrograd():
    compare = load_compare()
    wl = compare.WORKLOADS["add_grad"]
    res = compare.bench_workload(
        wl, {"ferrograd": ferrograd}, quick=True, repeats=2, target=0.001, pause=0.0
    )
    fg = res["results"]["ferrograd"]
    assert "error" not in fg, fg.get("error")
    assert fg["median_s"] > 0
    assert len(fg["samples"]) == 2 and all(s > 0 for s in fg["samples"])
    assert res["ratio"] is None  # no torch in this run
    assert res["pair_ratios"] is None


def test_ratio_and_pairwise_ratios_of_two_libraries():
    compare = load_compare()
    wl = compare.WORKLOADS["add_grad"]
    # ferrograd stands in for torch: the harness only sees the names.
    res = compare.bench_workload(
        wl,
        {"ferrograd": ferrograd, "torch": ferrograd},
        quick=True,
        repeats=3,
        target=0.001,
        pause=0.0,
    )
    fg, th = res["results"]["ferrograd"], res["results"]["torch"]
    assert res["ratio"] == fg["median_s"] / th["median_s"]
    pairs = res["pair_ratios"]
    assert len(pairs) == 3 and pairs == sorted(pairs)
    expected = sorted(a / b for a, b in zip(fg["samples"], th["samples"]))
    assert pairs == expected
    report = {"workloads": {"add_grad": res}, "probes": {}}
    table = compare.format_table(report)
    assert f"{pairs[0]:.2f}-{pairs[-1]:.2f}" in table
    assert "pairs" in table.splitlines()[0]


def test_workloads_run_on_the_torch_api_names():
    compare = load_compare()
    # Every workload of the table is registered and has a title.
    assert {"add", "chain", "matmul", "mlp", "custom_fn", "hvp"} <= set(compare.WORKLOADS)
    assert all(w.title for w in compare.WORKLOADS.values())
