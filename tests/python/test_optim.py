"""optim.SGD, Adam and AdamW: each step against the update rule written out
in plain Python floats (float64 parameters), the same training on torch
(when installed), and the Optimizer API (groups, zero_grad, closures,
state_dict round trips, torch's errors) on both libraries."""

import copy
import importlib
import math

import pytest

import ferrograd

GRADS = [[0.5, -1.0, 2.0], [0.1, 0.2, -0.3], [1.5, -2.5, 0.25], [0.0, 1.0, -1.0]]
START = [1.0, -2.0, 3.0]


def optim_of(lib):
    return importlib.import_module(lib.__name__ + ".optim")


def train(lib, make, dtype):
    """Four steps on p (loss = g . p) and q (loss = sum q^3); the values."""
    p = lib.tensor(START, dtype=dtype, requires_grad=True)
    q = lib.tensor([[0.5, 0.25], [-1.0, 2.0]], dtype=dtype, requires_grad=True)
    opt = make(optim_of(lib), [p, q])
    for g in GRADS:
        opt.zero_grad()
        ((p * lib.tensor(g, dtype=dtype)).sum() + (q * q * q).sum()).backward()
        opt.step()
    return p.tolist() + sum(q.tolist(), [])


def sgd_rule(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    p, buf = list(START), None
    for g in GRADS:
        g = [-x if maximize else x for x in g]
        g = [x + weight_decay * w for x, w in zip(g, p)]
        if momentum:
            if buf is None:
                buf = list(g)
            else:
                buf = [momentum * b + (1 - dampening) * x for b, x in zip(buf, g)]
            g = [x + momentum * b for x, b in zip(g, buf)] if nesterov else buf
        p = [w - lr * x for w, x in zip(p, g)]
    return p


def adam_rule(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, decoupled=False):
    b1, b2 = betas
    p, m, v, vmax = list(START), [0.0] * 3, [0.0] * 3, [0.0] * 3
    for step, g in enumerate(GRADS, 1):
        if decoupled:
            p = [w * (1 - lr * weight_decay) for w in p]
        else:
            g = [x + weight_decay * w for x, w in zip(g, p)]
        m = [a + (1 - b1) * (x - a) for a, x in zip(m, g)]
        v = [b2 * a + (1 - b2) * x * x for a, x in zip(v, g)]
        vmax = [max(a, b) for a, b in zip(vmax, v)]
        second = vmax if amsgrad else v
        bc2 = math.sqrt(1 - b2**step)
        size = lr / (1 - b1**step)
        p = [w - size * a / (math.sqrt(s) / bc2 + eps) for w, a, s in zip(p, m, second)]
    return p


def rmsprop_rule(lr, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False):
    p, sq, gavg, buf = list(START), [0.0] * 3, [0.0] * 3, [0.0] * 3
    for g in GRADS:
        g = [x + weight_decay * w for x, w in zip(g, p)]
        sq = [alpha * s + (1 - alpha) * x * x for s, x in zip(sq, g)]
        if centered:
            gavg = [a + (1 - alpha) * (x - a) for a, x in zip(gavg, g)]
            avg = [math.sqrt(s - a * a) + eps for s, a in zip(sq, gavg)]
        else:
            avg = [math.sqrt(s) + eps for s in sq]
        if momentum > 0:
            buf = [momentum * b + x / a for b, x, a in zip(buf, g, avg)]
            p = [w - lr * b for w, b in zip(p, buf)]
        else:
            p = [w - lr * x / a for w, x, a in zip(p, g, avg)]
    return p


def adagrad_rule(lr, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10):
    p, acc = list(START), [initial_accumulator_value] * 3
    for step, g in enumerate(GRADS, 1):
        g = [x + weight_decay * w for x, w in zip(g, p)]
        clr = lr / (1 + (step - 1) * lr_decay)
        acc = [a + x * x for a, x in zip(acc, g)]
        p = [w - clr * x / (math.sqrt(a) + eps) for w, x, a in zip(p, g, acc)]
    return p


SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01),
    dict(lr=0.1, momentum=0.5, nesterov=True, maximize=True),
]
ADAM_CASES = [
    ("Adam", dict(lr=0.1)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, amsgrad=True, betas=(0.8, 0.99))),
    ("Adam", dict(lr=0.05, eps=1e-3)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, amsgrad=True, weight_decay=0.5)),
]


RMSPROP_CASES = [
    dict(lr=0.01),
    dict(lr=0.01, alpha=0.9, weight_decay=0.1, momentum=0.5),
    dict(lr=0.02, centered=True, eps=1e-3),
    dict(lr=0.02, centered=True, momentum=0.9),
]
ADAGRAD_CASES = [
    dict(lr=0.1),
    dict(lr=0.1, lr_decay=0.5, weight_decay=0.2, initial_accumulator_value=0.3, eps=1e-3),
]


@pytest.mark.parametrize("kw", RMSPROP_CASES)
def test_rmsprop_follows_the_rule(kw):
    got = train(ferrograd, lambda o, ps: o.RMSprop(ps, **kw), ferrograd.float64)[:3]
    assert got == pytest.approx(rmsprop_rule(**kw), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("kw", ADAGRAD_CASES)
def test_adagrad_follows_the_rule(kw):
    got = train(ferrograd, lambda o, ps: o.Adagrad(ps, **kw), ferrograd.float64)[:3]
    assert got == pytest.approx(adagrad_rule(**kw), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("kw", SGD_CASES)
def test_sgd_follows_the_rule(kw):
    got = train(ferrograd, lambda o, ps: o.SGD(ps, **kw), ferrograd.float64)[:3]
    assert got == pytest.approx(sgd_rule(**kw), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name,kw", ADAM_CASES)
def test_adam_follows_the_rule(name, kw):
    got = train(ferrograd, lambda o, ps: getattr(o, name)(ps, **kw), ferrograd.float64)[:3]
    decoupled = name == "AdamW"
    if decoupled:
        kw = dict(kw, weight_decay=kw.get("weight_decay", 1e-2))
    assert got == pytest.approx(adam_rule(decoupled=decoupled, **kw), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(
    "name,kw",
    [("SGD", kw) for kw in SGD_CASES]
    + ADAM_CASES
    + [("RMSprop", kw) for kw in RMSPROP_CASES]
    + [("Adagrad", kw) for kw in ADAGRAD_CASES],
    ids=lambda x: str(x),
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_same_training_as_torch(torch, name, kw, dtype):
    def make(o, ps):
        return getattr(o, name)(ps, **kw)

    got = train(ferrograd, make, getattr(ferrograd, dtype))
    want = train(torch, make, getattr(torch, dtype))
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert got == pytest.approx(want, rel=tol, abs=tol)


def test_param_groups_and_state(lib):
    o = optim_of(lib)
    a = lib.ones(2, requires_grad=True)
    b = lib.ones(2, requires_grad=True)
    c = lib.ones(2, requires_grad=True)
    opt = o.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[1]["params"] == [b]
    (a.sum() + b.sum()).backward()
    opt.step()
    assert a.tolist() == pytest.approx([0.9, 0.9]) and b.tolist() == pytest.approx([0.5, 0.5])
    assert opt.state[a]["momentum_buffer"].tolist() == [1.0, 1.0]
    opt.add_param_group({"params": [c], "lr": 1.0})
    assert opt.param_groups[2]["momentum"] == 0.9
    # A parameter without a gradient is skipped and gets no state.
    opt.step()
    assert c.tolist() == [1.0, 1.0] and c not in opt.state


def test_zero_grad_and_closure(lib):
    o = optim_of(lib)
    p = lib.tensor([1.0, 2.0], requires_grad=True)
    opt = o.Adam([p], lr=0.1)
    (p * p).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == pytest.approx(5.0)
    assert p.tolist() == pytest.approx([0.9, 1.9])
    opt.step()  # no closure: the gradient left by the last one
    assert opt.state[p]["step"].item() == 2.0


def test_state_dict_round_trip(lib):
    o = optim_of(lib)
    p = lib.tensor([1.0, 2.0], requires_grad=True)
    opt = o.Adam([p], lr=0.1, amsgrad=True)
    (p * p).sum().backward()
    opt.step()
    sd = copy.deepcopy(opt.state_dict())  # as torch.save + torch.load give it
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"]
    assert sd["param_groups"][0]["params"] == [0] and sd["param_groups"][0]["lr"] == 0.1
    q = lib.tensor([1.0, 2.0], requires_grad=True)
    opt2 = o.Adam([q], lr=0.5, amsgrad=True)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.1 and opt2.param_groups[0]["params"] == [q]
    assert opt2.state[q]["step"].item() == 1.0
    assert opt2.state[q]["exp_avg"].tolist() == pytest.approx([0.2, 0.4])
    # From the same values, both continue identically.
    q.data = p.detach().clone()
    for t, op in ((p, opt), (q, opt2)):
        t.grad = lib.tensor([1.0, -1.0])
        op.step()
    assert p.tolist() == pytest.approx(q.tolist(), rel=1e-6)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        o.Adam([{"params": [p]}, {"params": [q]}]).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size"):
        o.Adam([p, q]).load_state_dict(sd)


@pytest.mark.parametrize(
    "name,kw,msg",
    [
        ("SGD", dict(lr=-0.1), "Invalid learning rate"),
        ("SGD", dict(momentum=-1.0), "Invalid momentum value"),
        ("SGD", dict(weight_decay=-1.0), "Invalid weight_decay value"),
        ("SGD", dict(nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
        ("Adam", dict(lr=-1.0), "Invalid learning rate"),
        ("Adam", dict(eps=-1e-3), "Invalid epsilon value"),
        ("Adam", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0"),
        ("AdamW", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1"),
        ("Adam", dict(weight_decay=-0.5), "Invalid weight_decay value"),
        ("RMSprop", dict(alpha=-0.5), "Invalid alpha value"),
        ("RMSprop", dict(momentum=-0.5), "Invalid momentum value"),
        ("Adagrad", dict(lr_decay=-0.5), "Invalid lr_decay value"),
        ("Adagrad", dict(initial_accumulator_value=-1.0), "Invalid initial_accumulator_value"),
    ],
)
def test_bad_hyperparameters(lib, name, kw, msg):
    with pytest.raises(ValueError, match=msg):
        getattr(optim_of(lib), name)([lib.ones(1, requires_grad=True)], **kw)


def test_state_layout_matches_torch(lib):
    o = optim_of(lib)
    p = lib.ones(2, requires_grad=True)
    ada = o.Adagrad([p], initial_accumulator_value=0.5)
    # Adagrad's state exists before the first step.
    assert sorted(ada.state[p]) == ["step", "sum"] and ada.state[p]["sum"].tolist() == [0.5, 0.5]
    rms = o.RMSprop([p], momentum=0.9, centered=True)
    plain = o.SGD([p], lr=0.1)
    p.grad = lib.ones(2)
    rms.step()
    plain.step()
    keys = ["grad_avg", "momentum_buffer", "square_avg", "step"]
    assert sorted(rms.state_dict()["state"][0]) == keys
    assert plain.state_dict()["state"] == {}


def test_bad_params(lib):
    o = optim_of(lib)
    x = lib.ones(1, requires_grad=True)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        o.SGD(x)
    with pytest.raises(ValueError, match="empty parameter list"):
        o.SGD([])
    with pytest.raises(ValueError, match="more than one parameter group"):
        o.SGD([{"params": [x]}, {"params": [x]}])
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        o.SGD([x * 2])
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        o.SGD([x, 1.0])
