"""uniform_, normal_, bernoulli_, exponential_ and bernoulli: ranges,
moments over many samples, seeding, dtypes and torch's errors, on
ferrograd and (through the `lib` fixture) torch. No gradients: the fills
replace values (a leaf that requires grad is filled under no_grad)."""

import math

import pytest

N = 200_000


def moments(t):
    m = t.double().mean().item()
    return m, ((t.double() - m) ** 2).mean().item()


def test_uniform(lib):
    lib.manual_seed(1)
    x = lib.empty(N).uniform_(-2.0, 3.0)
    assert x.min().item() >= -2.0 and x.max().item() < 3.0
    m, v = moments(x)
    assert m == pytest.approx(0.5, abs=0.02) and v == pytest.approx(25 / 12, rel=0.02)
    assert lib.empty(3, dtype=lib.float64).uniform_(**{"from": 5, "to": 5}).tolist() == [5.0] * 3


def test_normal_and_exponential(lib):
    lib.manual_seed(2)
    m, v = moments(lib.empty(N).normal_(2.0, 0.5))
    assert m == pytest.approx(2.0, abs=0.01) and v == pytest.approx(0.25, rel=0.02)
    e = lib.empty(N, dtype=lib.float64).exponential_(4.0)
    m, v = moments(e)
    assert e.min().item() >= 0.0
    assert m == pytest.approx(0.25, rel=0.02) and v == pytest.approx(1 / 16, rel=0.04)


def test_bernoulli(lib):
    lib.manual_seed(3)
    b = lib.empty(N).bernoulli_(0.3)
    assert ((b == 0) | (b == 1)).all().item()
    assert b.mean().item() == pytest.approx(0.3, abs=0.01)
    i = lib.empty(1000, dtype=lib.int64).bernoulli_(1.0)
    assert i.dtype == lib.int64 and i.sum().item() == 1000
    p = lib.tensor([0.0, 1.0, 0.0, 1.0] * 1000)
    assert lib.bernoulli(p).tolist() == p.tolist()
    assert lib.full((N,), 0.25).bernoulli().mean().item() == pytest.approx(0.25, abs=0.01)


def test_seeded_fills_repeat(lib):
    lib.manual_seed(7)
    a = lib.empty(5).normal_()
    lib.manual_seed(7)
    assert lib.empty(5).normal_().tolist() == a.tolist()


def test_errors_and_grad_rules(lib):
    cases = [
        (lambda: lib.empty(3, dtype=lib.int64).uniform_(), "not implemented for 'Long'"),
        (lambda: lib.empty(3).uniform_(2, 1), r"\[from, to\) range, but found from=2 > to=1"),
        (lambda: lib.empty(3).normal_(0, -1), "normal expects std >= 0.0, but found std -1"),
        (lambda: lib.empty(3).bernoulli_(1.5), r"expects p to be in \[0, 1\], but got p=1.5"),
        (lambda: lib.ones(3, requires_grad=True).normal_(), "leaf Variable that requires grad"),
    ]
    for f, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            f()
    w = lib.ones(3, requires_grad=True)
    with lib.no_grad():
        w.uniform_(0.0, 1e-3)
    assert w.requires_grad and w.max().item() < 1e-3
    assert not math.isnan(w.sum().item())
