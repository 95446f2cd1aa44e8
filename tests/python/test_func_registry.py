"""vmap over the op registry: for every entry, ``vmap(op)`` over a batch of
three samples of its first differentiated input (mapped at dim 0 and at the
last dim) equals the op run on each sample and stacked, and ``vmap(grad(op))``
equals per-sample gradients from a loop.

Ops with a batching rule run once on the batch; the others run vmap's per-slice
fallback (see ``ferrograd/func/_vmap.py``). The test pins the plumbing (in_dims, out_dims, tuple outputs,
integer outputs, composition with grad) that rules must keep.
"""

import numpy as np
import pytest

import ferrograd
from op_registry import REGISTRY, Arg, build_args, outputs_of, random_array, sample_arrays

IDS = [e.name for e in REGISTRY]
BATCH = 3


def _first_arg_index(sample):
    for k, a in enumerate(sample.args):
        if isinstance(a, Arg):
            return k
    return None


def _case(entry):
    """(sample, arrays, position of the mapped arg in args, batch of
    arrays for it) for the entry's first sample with a tensor input."""
    for i, sample in enumerate(entry.samples):
        k = _first_arg_index(sample)
        if k is None:
            continue
        arrays = sample_arrays(entry, i)
        rng = np.random.default_rng(4242 + i)
        spec = sample.args[k]
        batch = np.stack([random_array(rng, spec) for _ in range(BATCH)])
        return sample, arrays, k, batch
    return None


def _np(x):
    return x.detach().numpy()


def _run(entry, sample, arrays, k, value):
    args, kwargs, _ = build_args(ferrograd, sample, arrays, requires_grad=False)
    args[k] = value
    return entry.fn(ferrograd, *args, **kwargs)


def _setup(entry):
    if not entry.runnable(ferrograd):
        pytest.skip("not implemented yet")
    case = _case(entry)
    if case is None:
        pytest.skip("no tensor input")
    return case


@pytest.mark.parametrize("entry", REGISTRY, ids=IDS)
@pytest.mark.parametrize("in_dim", [0, -1])
def test_vmap_matches_loop(entry, in_dim):
    sample, arrays, k, batch = _setup(entry)
    if batch.ndim == 1 and in_dim == -1:
        in_dim = 0
    moved = np.ascontiguousarray(np.moveaxis(batch, 0, in_dim))
    xs = ferrograd.tensor(moved, dtype=ferrograd.float64)

    def f(x):
        out = _run(entry, sample, arrays, k, x)
        return tuple(outputs_of(out))

    got = ferrograd.vmap(f, in_dims=in_dim)(xs)
    want = [
        outputs_of(_run(entry, sample, arrays, k, ferrograd.tensor(batch[b]))) for b in range(BATCH)
    ]
    assert len(got) == len(want[0])
    for j, g in enumerate(got):
        assert tuple(g.shape)[0] == BATCH
        w = np.stack([_np(want[b][j]) for b in range(BATCH)])
        np.testing.assert_allclose(_np(g), w, rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("entry", REGISTRY, ids=IDS)
def test_vmap_grad_matches_per_sample_loop(entry):
    sample, arrays, k, batch = _setup(entry)

    def loss(x):
        outs = [o for o in outputs_of(_run(entry, sample, arrays, k, x)) if o.is_floating_point()]
        if not outs:
            return (x * 0).sum()
        return sum((o * o).sum() for o in outs)

    xs = ferrograd.tensor(batch, dtype=ferrograd.float64)
    got = ferrograd.vmap(ferrograd.func.grad(loss))(xs)
    for b in range(BATCH):
        x = ferrograd.tensor(batch[b], requires_grad=True)
        out = loss(x)
        (g,) = ferrograd.autograd.grad(out, x, allow_unused=True)
        want = np.zeros(batch[b].shape) if g is None else _np(g)
        np.testing.assert_allclose(_np(got[b]), want, rtol=1e-10, atol=1e-12, equal_nan=True)


def test_report_ops_on_the_fallback():
    """Runs last in this file: lists the ops that sent a registry entry's
    vmap to the per-slice fallback (``pytest -s`` shows them), and checks
    that the common families ran their batching rules."""
    from ferrograd.func._vmap import fallback_ops

    ops = fallback_ops()
    print(f"\nvmap fallback used by {len(ops)} op(s): {', '.join(ops)}")
    assert all(isinstance(o, str) for o in ops)
    for op in ("exp", "add", "mul", "matmul", "softmax", "reshape"):
        assert op not in ops
