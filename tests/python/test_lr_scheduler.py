"""optim.lr_scheduler: each schedule against its closed form, the same
sequences as torch's (when installed), ReduceLROnPlateau's rule, chaining,
state and errors, on ferrograd and (through `lib`) torch."""

import importlib
import math

import pytest

import ferrograd


def optim_of(lib):
    return importlib.import_module(lib.__name__ + ".optim")


def rates(lib, make, n=20, lr=1.0, metrics=None):
    o = optim_of(lib)
    opt = o.SGD([lib.ones(1, requires_grad=True)], lr=lr)
    sched = make(o.lr_scheduler, opt)
    out = [sched.get_last_lr()[0]]
    for i in range(n):
        opt.step()
        sched.step() if metrics is None else sched.step(metrics[i])
        out.append(sched.get_last_lr()[0])
    return out


CASES = {
    "step": (lambda S, o: S.StepLR(o, 3, gamma=0.5), lambda e: 0.5 ** (e // 3)),
    "multistep": (
        lambda S, o: S.MultiStepLR(o, [2, 5, 5, 9], gamma=0.3),
        lambda e: 0.3 ** sum(m <= e for m in [2, 5, 5, 9]),
    ),
    "exponential": (lambda S, o: S.ExponentialLR(o, 0.9), lambda e: 0.9**e),
    "cosine": (
        lambda S, o: S.CosineAnnealingLR(o, T_max=6, eta_min=0.01),
        lambda e: 0.01 + 0.99 * (1 + math.cos(math.pi * e / 6)) / 2,
    ),
    "linear": (
        lambda S, o: S.LinearLR(o, start_factor=0.25, total_iters=4),
        lambda e: 0.25 + 0.75 * min(e, 4) / 4,
    ),
    "constant": (
        lambda S, o: S.ConstantLR(o, factor=0.5, total_iters=3),
        lambda e: 0.5 if e < 3 else 1.0,
    ),
    "lambda": (lambda S, o: S.LambdaLR(o, lambda e: 1 / (e + 1)), lambda e: 1 / (e + 1)),
    "multiplicative": (lambda S, o: S.MultiplicativeLR(o, lambda e: 0.8), lambda e: 0.8**e),
}


@pytest.mark.parametrize("name", list(CASES))
def test_schedule_closed_forms(lib, name):
    make, closed = CASES[name]
    got = rates(lib, make)
    assert got == pytest.approx([closed(e) for e in range(len(got))], rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_same_rates_as_torch(torch, name):
    make = CASES[name][0]
    assert rates(ferrograd, make, n=30) == rates(torch, make, n=30)


def test_chained_schedulers(lib):
    o = optim_of(lib)
    opt = o.SGD([lib.ones(1, requires_grad=True)], lr=1.0)
    a = o.lr_scheduler.ExponentialLR(opt, 0.9)
    b = o.lr_scheduler.StepLR(opt, 2, 0.5)
    got = []
    for _ in range(6):
        opt.step()
        a.step()
        b.step()
        got.append(opt.param_groups[0]["lr"])
    want = [0.9**e * 0.5 ** (e // 2) for e in range(1, 7)]
    assert got == pytest.approx(want, rel=1e-12)
    assert opt.param_groups[0]["initial_lr"] == 1.0 and a.base_lrs == [1.0]


def test_groups_and_state(lib):
    o = optim_of(lib)
    p, q = lib.ones(1, requires_grad=True), lib.ones(1, requires_grad=True)
    opt = o.SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=1.0)
    sched = o.lr_scheduler.LambdaLR(opt, [lambda e: 0.5**e, lambda e: 1.0])
    for _ in range(3):
        opt.step()
        sched.step()
    assert sched.get_last_lr() == [0.125, 0.5] and sched.last_epoch == 3
    state = sched.state_dict()
    assert state["last_epoch"] == 3 and state["base_lrs"] == [1.0, 0.5]
    assert "optimizer" not in state and state["lr_lambdas"] == [None, None]
    fresh = o.lr_scheduler.LambdaLR(opt, [lambda e: 0.5**e, lambda e: 1.0])
    fresh.load_state_dict(state)
    assert fresh.last_epoch == 3
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        o.lr_scheduler.LambdaLR(opt, [lambda e: 1.0])


def test_reduce_on_plateau(lib):
    S = optim_of(lib).lr_scheduler
    metrics = [10, 9, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8]
    got = rates(
        lib,
        lambda S, o: S.ReduceLROnPlateau(o, patience=2, factor=0.5, cooldown=1, min_lr=0.2),
        n=len(metrics),
        metrics=metrics,
    )
    # Improvements until epoch 3, then cuts after 3 bad epochs, a cooldown
    # epoch, 3 more bad epochs, and the floor.
    assert got == [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25]
    got = rates(
        lib,
        lambda S, o: S.ReduceLROnPlateau(
            o, mode="max", threshold_mode="abs", threshold=0.5, patience=0
        ),
        n=6,
        metrics=[0.0, 0.3, 0.6, 1.2, 1.5, 1.6],
    )
    assert got == pytest.approx([1.0, 1.0, 0.1, 0.1, 0.1, 0.01, 0.001])
    o = optim_of(lib)
    opt = o.SGD([lib.ones(1, requires_grad=True)], lr=1.0)
    for kw, msg in [
        (dict(factor=1.0), "Factor should be < 1.0."),
        (dict(mode="avg"), "mode avg is unknown!"),
        (dict(threshold_mode="x"), "threshold mode x is unknown!"),
        (dict(min_lr=[0.1, 0.2]), "expected 1 min_lrs, got 2"),
    ]:
        with pytest.raises(ValueError, match=msg):
            S.ReduceLROnPlateau(opt, **kw)


def test_errors(lib):
    o = optim_of(lib)
    S = o.lr_scheduler
    opt = o.SGD([lib.ones(1, requires_grad=True)], lr=1.0)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        S.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Ending multiplicative factor"):
        S.LinearLR(opt, end_factor=1.5)
    with pytest.raises(ValueError, match="Constant multiplicative factor"):
        S.ConstantLR(opt, factor=2)
    assert "initial_lr" not in opt.param_groups[0]  # the failed ones changed nothing
    with pytest.raises(TypeError, match="is not an Optimizer"):
        S.StepLR(object(), 3)
    fresh = o.SGD([lib.ones(1, requires_grad=True)], lr=1.0)
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(fresh, 3, last_epoch=4)
