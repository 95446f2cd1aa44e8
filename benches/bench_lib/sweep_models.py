"""sweep.py's model cases: training steps written once against the torch
API (transformer, CNN, LSTM, MLP with layer norm, per-example gradients,
float64 PINN and ODE), ``MODELS`` by name.
"""

from __future__ import annotations

import math

import numpy as np

from .sweep_case import _prod
from .workloads import Case, Workload, _np

# ----------------------------------------------------------------------------
# Model cases: training steps written once against the torch API
# ----------------------------------------------------------------------------


def _init_params(L, module, seed, dtype=np.float32):
    """Sets every parameter from a seeded numpy generator, so both libraries
    start from the same weights."""
    rng = np.random.default_rng(seed)
    with L.no_grad():
        for name, p in module.named_parameters():
            shape = tuple(p.shape)
            if len(shape) >= 2:
                bound = 1.0 / math.sqrt(_prod(shape[1:]))
                arr = rng.uniform(-bound, bound, shape)
            elif name.endswith("weight"):
                arr = 1.0 + 0.1 * rng.standard_normal(shape)
            else:
                arr = 0.1 * rng.uniform(-1.0, 1.0, shape)
            p.copy_(L.from_numpy(np.ascontiguousarray(arr, dtype=dtype)))


def _tensor(L, arr):
    return L.from_numpy(np.ascontiguousarray(arr))


def _train_case(L, model, opt, loss_fn, probe, per_example=False):
    """One training step: zero_grad, loss_fn() (which calls backward itself
    when per_example), backward, optimizer step."""
    out = {}

    def run():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn()
        if not per_example:
            loss.backward()
        opt.step()
        out["loss"] = loss.detach()

    return Case(run, lambda: [_np(out["loss"]), _np(probe.grad)])


def make_transformer(L, quick):
    nn, F = L.nn, L.nn.functional
    B, S, D, H, FF = (2, 16, 32, 2, 64) if quick else (8, 64, 64, 4, 256)
    dh = D // H

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(D)
            self.qkv = nn.Linear(D, 3 * D)
            self.proj = nn.Linear(D, D)
            self.ln2 = nn.LayerNorm(D)
            self.ff1 = nn.Linear(D, FF)
            self.ff2 = nn.Linear(FF, D)

        def forward(self, x):
            h = self.ln1(x)
            qkv = self.qkv(h).reshape(B, S, 3, H, dh).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
            o = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, S, D)
            x = x + self.proj(o)
            return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))

    model = Block()
    _init_params(L, model, 1)
    r = np.random.default_rng(11)
    x = _tensor(L, r.standard_normal((B, S, D), dtype=np.float32))
    y = _tensor(L, r.standard_normal((B, S, D), dtype=np.float32))
    opt = L.optim.Adam(model.parameters(), lr=1e-3)
    return _train_case(L, model, opt, lambda: F.mse_loss(model(x), y), model.qkv.weight)


def make_cnn(L, quick):
    nn, F = L.nn, L.nn.functional
    B = 4 if quick else 32

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 16, 3, padding=1)
            self.c2 = nn.Conv2d(16, 32, 3, padding=1)
            self.fc = nn.Linear(32 * 8 * 8, 10)

        def forward(self, x):
            x = F.max_pool2d(self.c1(x).relu(), 2)
            x = F.avg_pool2d(self.c2(x).relu(), 2)
            return self.fc(x.flatten(1))

    model = Net()
    _init_params(L, model, 2)
    r = np.random.default_rng(12)
    x = _tensor(L, r.standard_normal((B, 3, 32, 32), dtype=np.float32))
    y = _tensor(L, r.integers(0, 10, size=B, dtype=np.int64))
    opt = L.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return _train_case(L, model, opt, lambda: F.cross_entropy(model(x), y), model.c1.weight)


def make_lstm(L, quick):
    nn, F = L.nn, L.nn.functional
    B, In, Hd, T = (4, 8, 16, 5) if quick else (16, 32, 128, 20)

    class LSTM(nn.Module):
        """An LSTM cell from Linear layers, unrolled over T steps."""

        def __init__(self):
            super().__init__()
            self.wx = nn.Linear(In, 4 * Hd)
            self.wh = nn.Linear(Hd, 4 * Hd, bias=False)
            self.head = nn.Linear(Hd, 1)

        def forward(self, xs):
            h = c = None
            for t in range(T):
                gates = self.wx(xs[t]) if h is None else self.wx(xs[t]) + self.wh(h)
                i, f, g, o = gates.chunk(4, dim=1)
                i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
                c = i * g if c is None else f * c + i * g
                h = o * c.tanh()
            return self.head(h)

    model = LSTM()
    _init_params(L, model, 3)
    r = np.random.default_rng(13)
    xs = _tensor(L, r.standard_normal((T, B, In), dtype=np.float32))
    y = _tensor(L, r.standard_normal((B, 1), dtype=np.float32))
    opt = L.optim.Adam(model.parameters(), lr=1e-3)
    return _train_case(L, model, opt, lambda: F.mse_loss(model(xs), y), model.wx.weight)


def make_mlp_ln(L, quick):
    nn, F = L.nn, L.nn.functional
    B, dims = (16, [64, 64, 64, 10]) if quick else (128, [256, 512, 512, 10])
    layers = []
    for i, (a, o) in enumerate(zip(dims[:-1], dims[1:])):
        layers.append(nn.Linear(a, o))
        if i < len(dims) - 2:
            layers += [nn.LayerNorm(o), nn.GELU()]
    model = nn.Sequential(*layers)
    _init_params(L, model, 4)
    r = np.random.default_rng(14)
    x = _tensor(L, r.standard_normal((B, dims[0]), dtype=np.float32))
    y = _tensor(L, r.integers(0, dims[-1], size=B, dtype=np.int64))
    opt = L.optim.Adam(model.parameters(), lr=1e-3)
    return _train_case(L, model, opt, lambda: F.cross_entropy(model(x), y), model[0].weight)


def make_per_example(L, quick):
    nn, F = L.nn, L.nn.functional
    N = 4 if quick else 32
    model = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 10))
    _init_params(L, model, 5)
    r = np.random.default_rng(15)
    x = _tensor(L, r.standard_normal((N, 64), dtype=np.float32))
    y = _tensor(L, r.integers(0, 10, size=N, dtype=np.int64))
    opt = L.optim.SGD(model.parameters(), lr=0.01)

    def loss_fn():
        total = 0.0
        for i in range(N):
            loss = F.cross_entropy(model(x[i : i + 1]), y[i : i + 1])
            loss.backward()
            total = total + loss.detach()
        return total

    return _train_case(L, model, opt, loss_fn, model[0].weight, per_example=True)


def make_pinn_f64(L, quick):
    """A physics-informed MLP in float64: u(x, t) with the heat equation's
    residual u_t - 0.1 u_xx from second derivatives by double backward."""
    nn = L.nn
    N, W = (16, 8) if quick else (256, 32)
    model = nn.Sequential(
        nn.Linear(2, W), nn.Tanh(), nn.Linear(W, W), nn.Tanh(), nn.Linear(W, 1)
    ).double()
    _init_params(L, model, 6, np.float64)
    r = np.random.default_rng(16)
    pts = _tensor(L, r.uniform(-1.0, 1.0, (N, 2)))
    bc = _tensor(L, np.stack([r.uniform(-1, 1, N // 4), np.zeros(N // 4)], axis=1))
    bc_val = _tensor(L, np.sin(np.pi * bc.numpy()[:, :1]))
    opt = L.optim.Adam(model.parameters(), lr=1e-3)

    def loss_fn():
        xt = pts.detach().requires_grad_(True)
        u = model(xt)
        (du,) = L.autograd.grad(u.sum(), xt, create_graph=True)
        u_x, u_t = du[:, 0:1], du[:, 1:2]
        (d2,) = L.autograd.grad(u_x.sum(), xt, create_graph=True)
        res = u_t - 0.1 * d2[:, 0:1]
        return (res * res).mean() + ((model(bc) - bc_val) ** 2).mean()

    return _train_case(L, model, opt, loss_fn, model[0].weight)


def make_ode_f64(L, quick):
    """A neural ODE dy/dt = f(y) in float64, integrated by RK4 unrolled over
    20 steps, trained to hit a target state."""
    nn, F = L.nn, L.nn.functional
    B, D, W, steps = (4, 4, 8, 4) if quick else (64, 16, 64, 20)
    f = nn.Sequential(nn.Linear(D, W), nn.Tanh(), nn.Linear(W, D)).double()
    _init_params(L, f, 7, np.float64)
    r = np.random.default_rng(17)
    y0 = _tensor(L, r.standard_normal((B, D)))
    target = _tensor(L, r.standard_normal((B, D)))
    dt = 0.05
    opt = L.optim.SGD(f.parameters(), lr=0.01)

    def loss_fn():
        y = y0
        for _ in range(steps):
            k1 = f(y)
            k2 = f(y + (0.5 * dt) * k1)
            k3 = f(y + (0.5 * dt) * k2)
            k4 = f(y + dt * k3)
            y = y + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        return F.mse_loss(y, target)

    return _train_case(L, f, opt, loss_fn, f[0].weight)


MODELS = {
    w.name: w
    for w in [
        Workload(
            "transformer", "transformer encoder block, 8x64x64, 4 heads, Adam", make_transformer
        ),
        Workload("cnn", "CNN conv-relu-pool x2 + linear, 32x3x32x32, CE, SGD", make_cnn),
        Workload("lstm", "LSTM cell from Linear, 20 steps, 16x32->128, Adam", make_lstm),
        Workload("mlp_ln", "MLP 256-512-512-10 + LayerNorm + GELU, batch 128, Adam", make_mlp_ln),
        Workload(
            "per_example", "per-example loop: 32 x (1-row MLP, backward), SGD", make_per_example
        ),
        Workload(
            "pinn_f64", "f64 PINN 2-32-32-1 tanh, u_t - 0.1 u_xx, 256 pts, Adam", make_pinn_f64
        ),
        Workload("ode_rk4_f64", "f64 neural ODE, RK4 x 20 steps, 64x16, SGD", make_ode_f64),
    ]
}
