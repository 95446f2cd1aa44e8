"""Coverage of torch's public API, per namespace.

With torch installed, lists torch's public functions per namespace and fails
when ferrograd lacks one of ``torch.linalg`` or ``torch.special`` that is not
named below with its reason. The top level, Tensor methods and
``nn.functional`` (torch's own list of overridable functions,
``torch.overrides.get_testing_overrides()``) are reported, not yet enforced
(issue 28's later parts). Run with ``-s`` to see the figures.
"""

import pytest

import ferrograd

# Names ferrograd does not provide, each with its reason.
EXCLUDED = {
    "linalg": {
        "eig": "complex eigenvalues and eigenvectors: needs the complex dtypes",
        "eigvals": "complex eigenvalues: needs the complex dtypes",
    },
    "special": {},
}

# Names not implemented yet (issue 28): listed so that the gap is explicit.
PENDING = {
    "linalg": {
        "ldl_factor": "not yet",
        "ldl_factor_ex": "not yet",
        "ldl_solve": "not yet",
        "householder_product": "not yet",
    },
    "special": {
        "airy_ai": "not yet (needs Airy/fractional-order Bessel kernels)",
    },
}

# Public names of these modules that are not functions of the namespace.
NOT_FUNCTIONS = {"Tensor", "torch", "common_args", "multi_dim_common", "common_notes"}


def torch_names(torch, namespace):
    mod = getattr(torch, namespace)
    return sorted(
        n
        for n in dir(mod)
        if not n.startswith("_") and n not in NOT_FUNCTIONS and callable(getattr(mod, n))
    )


def coverage(torch, namespace):
    names = torch_names(torch, namespace)
    mod = getattr(ferrograd, namespace)
    have = [n for n in names if hasattr(mod, n)]
    return names, have


@pytest.mark.parametrize("namespace", ["linalg", "special"])
def test_namespace_covered(torch, namespace):
    names, have = coverage(torch, namespace)
    listed = {**EXCLUDED[namespace], **PENDING[namespace]}
    missing = [n for n in names if n not in have and n not in listed]
    print(
        f"\ntorch.{namespace}: ferrograd has {len(have)} of {len(names)}"
        f" ({100 * len(have) / len(names):.0f}%); excluded: {sorted(EXCLUDED[namespace])};"
        f" pending: {sorted(PENDING[namespace])}"
    )
    assert not missing, f"torch.{namespace} names missing from ferrograd: {missing}"
    # A listed name that ferrograd has is stale.
    stale = [n for n in listed if hasattr(getattr(ferrograd, namespace), n)]
    assert not stale, f"listed as missing but present: {stale}"


def test_report_other_namespaces(torch):
    """Top level, Tensor and nn.functional, from torch's overridable list."""
    import torch.nn.functional as F

    overrides = torch.overrides.get_testing_overrides()
    top, tensor, functional = set(), set(), set()
    for f in overrides:
        name = getattr(f, "__name__", None)
        if not name or name.startswith("_"):
            continue
        qual = getattr(f, "__qualname__", "")
        module = getattr(f, "__module__", None)
        if getattr(torch, name, None) is f or qual.startswith("_VariableFunctionsClass"):
            top.add(name)
        elif module == "torch.nn.functional" or getattr(F, name, None) is f:
            functional.add(name)
        elif module is None or qual.startswith(("TensorBase", "Tensor", "getset_descriptor")):
            tensor.add(name)
    rows = [
        ("torch", top, ferrograd),
        ("Tensor", tensor, ferrograd.Tensor),
        ("nn.functional", functional, ferrograd.nn.functional),
    ]
    for label, names, mod in rows:
        have = sum(hasattr(mod, n) for n in names)
        print(
            f"\n{label}: ferrograd has {have} of {len(names)} ({100 * have / max(len(names), 1):.0f}%)"
        )
