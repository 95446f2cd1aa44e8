"""Runs every op of the registry (op_registry.py) through:

* ``test_all_registry_ops_exist`` -- the one coverage test: fails listing every
  registry op (and API alias) that ferrograd does not have yet;
* ``test_gradcheck`` -- float64 central differences vs ferrograd's backward
  (the plain, library-independent checker of ``helpers``);
* ``test_gradgradcheck`` -- the same for the gradient itself (double backward);
* ``test_autograd_gradcheck`` / ``test_autograd_gradgradcheck`` -- every
  sample through ``ferrograd.autograd.gradcheck`` (slow and fast mode) /
  ``gradgradcheck`` (full Jacobians, ``create_graph=True``, undefined and
  zero upstream gradients);
* ``test_forward_ad_gradcheck`` / ``test_forward_ad_matches_reverse`` /
  ``test_forward_ad_against_torch`` -- forward-mode AD: Jacobians by jvp vs
  central differences, ``<J t, u> == <t, J^T u>`` against reverse mode, and
  tangents equal to torch's forward AD;
* ``test_against_torch`` -- forward values and gradients equal torch's on the
  same inputs (skipped without torch).

The per-op tests are parametrized with the op names as ids; ops ferrograd
lacks are skipped there with "not implemented yet".
"""

import numpy as np
import pytest

import ferrograd
from helpers import (
    analytical_vjp,
    autograd_gradcheck,
    dtype_name,
    float_outputs,
    forward_tangents,
    gradcheck,
    gradgradcheck,
    to_numpy,
    upstream_grads,
)
from op_registry import REGISTRY, build_args, has_attr_path, outputs_of, sample_arrays

IDS = [e.name for e in REGISTRY]


def _runnable(entry):
    missing = [n for n in entry.needs if not has_attr_path(ferrograd, n)]
    if missing:
        pytest.skip(f"not implemented yet: {', '.join(missing)}")


def _for_each_sample(entry, check):
    """Runs ``check(index, sample, arrays)`` on every sample; failures name the sample."""
    for i, sample in enumerate(entry.samples):
        arrays = sample_arrays(entry, i)
        try:
            check(i, sample, arrays)
        except AssertionError as e:
            raise AssertionError(f"{entry.name} sample {i} {sample.describe()}: {e}") from None


def test_all_registry_ops_exist():
    missing = {}
    for e in REGISTRY:
        m = e.missing(ferrograd)
        if m:
            missing[e.name] = m
    lines = [f"  {name}: {', '.join(m)}" for name, m in missing.items()]
    if missing:
        pytest.fail(
            f"{len(missing)} of {len(REGISTRY)} registry ops are not (fully) implemented in "
            "ferrograd:\n" + "\n".join(lines),
            pytrace=False,
        )


def test_registry_names_exist_in_torch(torch):
    """Validates the registry itself: every name it uses is torch API."""
    bad = [(e.name, m) for e in REGISTRY for m in [e.missing(torch)] if m]
    assert not bad, f"registry entries use names torch does not have: {bad}"


def test_registry_samples_are_well_formed():
    from op_registry import Arg

    for e in REGISTRY:
        assert e.samples, f"{e.name} has no samples"
        for s in e.samples:
            assert any(isinstance(a, Arg) for a in s.args), f"{e.name}: sample without input"
    # Non-contiguous inputs are exercised by many entries.
    nc = [
        e.name
        for e in REGISTRY
        if any(getattr(a, "noncontig", False) for s in e.samples for a in s.args)
    ]
    assert len(nc) > len(REGISTRY) // 2


def test_noncontiguous_samples_are_noncontiguous():
    from op_registry import NC, make_leaf

    leaf = make_leaf(ferrograd, NC(3, 4), np.arange(12.0).reshape(3, 4))
    assert tuple(leaf.shape) == (3, 4)
    assert not leaf.is_contiguous()
    assert leaf.is_leaf and leaf.requires_grad
    np.testing.assert_array_equal(to_numpy(leaf), np.arange(12.0).reshape(3, 4))


@pytest.mark.parametrize("entry", REGISTRY, ids=IDS)
def test_gradcheck(entry):
    _runnable(entry)

    def check(i, sample, arrays):
        args, kwargs, leaves = build_args(ferrograd, sample, arrays)
        for leaf, a in zip(leaves, arrays):
            assert dtype_name(leaf) == "float64"
            np.testing.assert_array_equal(to_numpy(leaf), a)
        gradcheck(ferrograd, entry.fn, sample, arrays, seed=i)

    _for_each_sample(entry, check)


@pytest.mark.parametrize("entry", REGISTRY, ids=IDS)
def test_gradgradcheck(entry):
    _runnable(entry)
    _for_each_sample(entry, lambda i, s, a: gradgradcheck(ferrograd, entry.fn, s, a, seed=i))


@pytest.mark.parametrize("entry", REGISTRY, ids=IDS)
def test_autograd_gradcheck(entry):
    _runnable(entry)

    def check(i, sample, arrays):
        autograd_gradcheck(ferrograd, entry.fn, sample, arrays, seed=i)
        autograd_gradcheck(ferrograd, entry.fn, sample, arrays, seed=i, fast_mode=True)

    _for_each_sample(entry, check)


@pytest.mark.parametrize("entry", REGISTRY, ids=IDS)
def test_autograd_gradgradcheck(entry):
    _runnable(entry)
    _for_each_sample(
        entry,
        lambda i, s, a: autograd_gradcheck(ferrograd, entry.fn, s, a, seed=i, second_order=True),
    )


@pytest.mark.parametrize("entry", REGISTRY, ids=IDS)
def test_forward_ad_gradcheck(entry):
    """Forward-mode AD Jacobians (columns by jvp) against central differences."""
    _runnable(entry)
    _for_each_sample(
        entry,
        lambda i, s, a: autograd_gradcheck(ferrograd, entry.fn, s, a, seed=i, forward_ad=True),
    )


@pytest.mark.parametrize("entry", REGISTRY, ids=IDS)
def test_forward_ad_matches_reverse(entry):
    """<J t, u> by forward AD equals <t, J^T u> by reverse mode, for random t, u."""
    _runnable(entry)

    def check(i, sample, arrays):
        rng = np.random.default_rng(1000 + i)
        tangents = [rng.standard_normal(a.shape) for a in arrays]
        jt = forward_tangents(ferrograd, entry.fn, sample, arrays, tangents)
        us = [rng.standard_normal(t.shape) for t in jt]
        _, _, jtu = analytical_vjp(ferrograd, entry.fn, sample, arrays, us)
        lhs = sum(float(np.sum(a * b)) for a, b in zip(jt, us))
        rhs = sum(float(np.sum(a * b)) for a, b in zip(tangents, jtu))
        assert abs(lhs - rhs) <= 1e-7 * (1 + abs(rhs)), f"<Jt,u>={lhs} but <t,J^T u>={rhs}"

    _for_each_sample(entry, check)


@pytest.mark.parametrize("entry", REGISTRY, ids=IDS)
def test_forward_ad_against_torch(entry, torch):
    """Output tangents equal torch's forward AD on the same inputs."""
    _runnable(entry)
    if entry.no_torch_forward_ad:
        pytest.skip(entry.no_torch_forward_ad)

    def check(i, sample, arrays):
        rng = np.random.default_rng(2000 + i)
        tangents = [rng.standard_normal(a.shape) for a in arrays]
        got = forward_tangents(ferrograd, entry.fn, sample, arrays, tangents)
        ref = forward_tangents(torch, entry.fn, sample, arrays, tangents)
        assert len(got) == len(ref)
        for k, (g, r) in enumerate(zip(got, ref)):
            np.testing.assert_allclose(
                g, r, rtol=1e-7, atol=1e-9, err_msg=f"tangent of output {k} differs from torch"
            )

    _for_each_sample(entry, check)


@pytest.mark.parametrize("entry", REGISTRY, ids=IDS)
def test_against_torch(entry, torch):
    _runnable(entry)

    def check(i, sample, arrays):
        args, kwargs, _ = build_args(torch, sample, arrays)
        ref = outputs_of(entry.fn(torch, *args, **kwargs))
        args, kwargs, _ = build_args(ferrograd, sample, arrays)
        got = outputs_of(entry.fn(ferrograd, *args, **kwargs))
        assert len(got) == len(ref), f"{len(got)} outputs, torch gives {len(ref)}"
        for k, (g, r) in enumerate(zip(got, ref)):
            assert tuple(g.shape) == tuple(r.shape), (
                f"output {k}: shape {tuple(g.shape)}, torch {tuple(r.shape)}"
            )
            assert dtype_name(g) == dtype_name(r), (
                f"output {k}: dtype {dtype_name(g)}, torch {dtype_name(r)}"
            )
            assert g.requires_grad == r.requires_grad, (
                f"output {k}: requires_grad {g.requires_grad}, torch {r.requires_grad}"
            )
            np.testing.assert_allclose(
                to_numpy(g),
                to_numpy(r),
                rtol=entry.rtol,
                atol=entry.atol,
                err_msg=f"output {k} differs from torch",
            )
        vs = upstream_grads(float_outputs(ref), seed=i)
        _, _, g_ref = analytical_vjp(torch, entry.fn, sample, arrays, vs)
        _, _, g_got = analytical_vjp(ferrograd, entry.fn, sample, arrays, vs)
        for k, (g, r) in enumerate(zip(g_got, g_ref)):
            np.testing.assert_allclose(
                g,
                r,
                rtol=entry.rtol,
                atol=entry.atol,
                err_msg=f"gradient of input {k} differs from torch",
            )

    _for_each_sample(entry, check)


@pytest.mark.parametrize("entry", REGISTRY, ids=IDS)
def test_registry_entry_is_valid_on_torch(entry, torch):
    """The registry's own check: every sample passes gradcheck and gradgradcheck
    on torch (the plain checker and torch.autograd's, through the same wrapper
    as the ferrograd tests), so a failure of the ferrograd tests above is
    ferrograd's."""

    def check(i, sample, arrays):
        gradcheck(torch, entry.fn, sample, arrays, seed=i)
        autograd_gradcheck(torch, entry.fn, sample, arrays, seed=i)
        gradgradcheck(torch, entry.fn, sample, arrays, seed=i)
        autograd_gradcheck(torch, entry.fn, sample, arrays, seed=i, second_order=True)

    _for_each_sample(entry, check)
