"""Helpers shared by the pointwise-op tests (test_pointwise*.py): tensors from
arrays, seeded random inputs on a domain, and ``one`` (a single operand spec)."""

import numpy as np


def mk(lib, arr, dtype="float64", requires_grad=False):
    dt = getattr(lib, dtype)
    t = lib.tensor(np.asarray(arr).tolist(), dtype=dt)
    if requires_grad:
        t.requires_grad_(True)
    return t


def rand(shape, domain, seed):
    rng = np.random.default_rng(seed)
    if domain == "pos":
        return rng.uniform(0.5, 2.0, shape)
    if domain == "away":  # |x| in [0.3, 1.5], random sign: clear of kinks at 0
        return rng.uniform(0.3, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    if domain == "unit":
        return rng.uniform(-1.0, 1.0, shape)
    return rng.standard_normal(shape)


def one(domain="normal", shape=(3, 4)):
    return [(shape, domain)]
