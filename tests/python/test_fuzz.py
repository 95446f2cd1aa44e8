# ruff: noqa: S102, BLE001, S110 - the interpreter execs generated programs and records every exception
"""Differential fuzzing of ferrograd against torch (see the package fuzz_programs).

1,000 seeded programs in all (hypothesis with ``derandomize=True``: the same
programs every run):

* ``test_matches_torch`` (600): each program runs on ferrograd and torch;
  exception types, values, gradients, ``_version``, ``requires_grad``,
  ``is_leaf`` and ``grad_fn`` names must agree, except for the reported
  mismatches in ``fuzz_programs.KNOWN`` (each a strict xfail in
  test_fuzz_regressions.py). Skipped without torch.
* ``test_invariants`` (300, no torch needed): no crash (a Rust panic is a
  ``PanicException``), and a step that raises leaves every tensor's values
  and ``_version`` as they were.
* ``test_finite_differences`` (100, no torch needed): float64 programs of
  smooth ops, views, in-place ops and custom Functions; every leaf's
  ``.grad`` against central differences of the loss.

On a failure hypothesis shrinks the program and prints it as Python
(``import torch`` it and it runs). The long run is tools/fuzz_long.py.
"""

import importlib.util

import pytest

hypothesis = pytest.importorskip("hypothesis")

import ferrograd
import fuzz_programs as fp
from hypothesis import HealthCheck, given, settings

HAS_TORCH = importlib.util.find_spec("torch") is not None


def fuzz_settings(n):
    return settings(
        max_examples=n,
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
    )


@pytest.mark.skipif(not HAS_TORCH, reason="torch (the oracle) is not installed")
@pytest.mark.xfail(
    raises=SystemError,
    strict=False,
    reason="CPython 'AST constructor recursion depth mismatch' seen once, not yet understood",
)
@fuzz_settings(600)
@given(fp.programs())
def test_matches_torch(program):
    import torch

    out = fp.differential(program, ferrograd, torch)
    assert not out.new, f"\n{program.source()}\n\n{out.mismatch}"


@fuzz_settings(300)
@given(fp.programs())
def test_invariants(program):
    records = fp.run_program(ferrograd, program, check_atomic=True)
    for i, (step, rec) in enumerate(zip(program.steps, records)):
        if rec.error in ("PanicException", "SystemError") or rec.error.startswith("state:"):
            crash = fp.Mismatch(
                i,
                step.text(),
                step.kind,
                step.op,
                "exception",
                rec.error,
                "no error",
                "",
                rec.message,
            )
            assert fp.known(program, crash), (
                f"\n{program.source()}\n\nstep {i} crashed: {rec.error}: {rec.message}"
            )
        assert not rec.atomic, (
            f"\n{program.source()}\n\nstep {i} raised {rec.error} and changed {rec.atomic}"
        )


@fuzz_settings(100)
@given(fp.programs(smooth=True, max_steps=12))
def test_finite_differences(program):
    err = fp.finite_difference_check(ferrograd, program)
    assert err is None, f"\n{program.source()}\n\n{err}"


def test_known_mismatches_have_regression_tests():
    import test_fuzz_regressions as regressions

    for k in fp.KNOWN:
        assert hasattr(regressions, f"test_{k.name}"), (
            f"KNOWN entry {k.name!r} has no test in test_fuzz_regressions.py"
        )


def test_generator_is_deterministic():
    assert fp.random_program(7).source() == fp.random_program(7).source()
    assert fp.random_program(7).source() != fp.random_program(8).source()


def test_program_source_runs_as_torch_code():
    # the printed program is the reproducer: exec it with ferrograd as torch
    program = fp.random_program(3)
    ns = {"torch": ferrograd, **fp.make_functions(ferrograd)}
    for step in program.steps:
        try:
            exec(step.text(), ns)
        except Exception:
            pass
