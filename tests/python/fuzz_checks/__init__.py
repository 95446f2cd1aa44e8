"""The checks behind test_fuzz_regressions.py: one ``check_<name>(lib)`` per
mismatch the differential fuzzer found (fuzz_programs.KNOWN), each asserting
torch's behaviour with ``lib`` as torch. They stand in ``first``, ``second``,
``third`` and ``fourth`` (in the order they were found); ``CHECKS`` maps every
``check_<name>`` to its function, in that order."""

from . import first, fourth, second, third
from .third import GRAD_FN_CASES, check_grad_fn_names

CHECKS = {
    k: v
    for module in (first, second, third, fourth)
    for k, v in vars(module).items()
    if k.startswith("check_")
}

__all__ = ["CHECKS", "GRAD_FN_CASES", "check_grad_fn_names"]
