"""One regression test per mismatch the differential fuzzer found (fuzz_programs.KNOWN).

Each ``check_<name>(lib)`` asserts torch's behaviour with ``lib`` as torch;
``test_<name>`` runs it on ferrograd, as a strict xfail (one-line reason)
while ferrograd is still wrong, so that a fix shows up as XPASS: then drop
the xfail and the KNOWN entry. ``test_checks_hold_on_torch`` runs every check
on torch itself, so the expectations are torch's (skipped without torch).
The checks are in the package fuzz_checks (``first``, ``second``, ``third``).
"""

import ferrograd
import pytest

from fuzz_checks import CHECKS as _CHECKS
from fuzz_checks import GRAD_FN_CASES, check_grad_fn_names

globals().update(_CHECKS)


# ---- ferrograd: strict xfails while wrong

WRONG: dict = {
    "grad_accumulate_layout": "the engine's sum of two gradients is row-major, torch keeps the layout "
    "of the buffer it adds into in place",
}
GRAD_FN_WRONG: set = set()


def xfail(key):
    return pytest.mark.xfail(strict=True, reason=WRONG[key]) if key in WRONG else (lambda f: f)


def _make(key):
    check = globals()[f"check_{key}"]

    @xfail(key)
    def test():
        check(ferrograd)

    test.__name__ = f"test_{key}"
    return test


# one test per check (KNOWN entries, and the fixed ones kept as regressions)
for _key in [
    k[6:] for k in list(globals()) if k.startswith("check_") and k != "check_grad_fn_names"
]:
    globals()[f"test_{_key}"] = _make(_key)


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            c,
            marks=pytest.mark.xfail(
                strict=True, reason="grad_fn named after another overload than torch's"
            ),
        )
        if c in GRAD_FN_WRONG
        else c
        for c in GRAD_FN_CASES
    ],
)
def test_grad_fn_names(case):
    check_grad_fn_names(ferrograd, case)


CHECKS = sorted(k for k in globals() if k.startswith("check_") and k != "check_grad_fn_names")


@pytest.mark.parametrize("check", CHECKS)
def test_checks_hold_on_torch(torch, check):
    globals()[check](torch)


@pytest.mark.parametrize("case", sorted(GRAD_FN_CASES))
def test_grad_fn_checks_hold_on_torch(torch, case):
    check_grad_fn_names(torch, case)
