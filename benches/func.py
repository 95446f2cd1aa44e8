"""ferrograd.func against torch.func, in one run (issue 26's speed table).

    PYTHONPATH=python python benches/func.py

Prints best-of-10 wall times and ratios (ferrograd / torch.func; below 1 is
faster). vmap runs the batching rules (ops without one fall back to a
per-slice loop with a UserWarning, which this script turns into an error).
"""

import time, warnings, numpy as np
import ferrograd as fg, torch

# a vmap fallback (ferrograd or torch) fails the run
warnings.filterwarnings("error", message="There is a performance drop")
torch.set_num_threads(2)
fg.set_num_threads(2)


def timeit(f, n=10):
    f()
    best = 1e9
    for _ in range(n):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


rng = np.random.default_rng(0)
res = []
# 1. per-sample grads of an MLP
W1, b1, W2, b2 = (rng.standard_normal(s) * 0.05 for s in [(128, 784), (128,), (10, 128), (10,)])
X = rng.standard_normal((256, 784))
Y = rng.integers(0, 10, 256)


def mk(L):
    p = tuple(L.tensor(a, dtype=L.float32) for a in (W1, b1, W2, b2))
    x = L.tensor(X, dtype=L.float32)
    y = L.tensor(Y)

    def loss(p, x, y):
        h = L.nn.functional.linear(x, p[0], p[1]).relu()
        o = L.nn.functional.linear(h, p[2], p[3])
        return L.nn.functional.cross_entropy(o.unsqueeze(0), y.unsqueeze(0))

    return p, x, y, loss


p, x, y, loss = mk(fg)
tp, tx, ty, tloss = mk(torch)
a = timeit(lambda: fg.func.vmap(fg.func.grad(loss), in_dims=(None, 0, 0))(p, x, y))
b = timeit(lambda: torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))(tp, tx, ty))


def loop():  # the same per-sample grads, stacked as vmap returns them
    gs = [fg.func.grad(loss)(p, x[i], y[i]) for i in range(256)]
    return [fg.stack([g[k] for g in gs]) for k in range(4)]


c = timeit(loop, 1)
res.append(("per-sample grads MLP 256x784-128-10", a, b, c))
# 1b. per-sample grads of a small CNN (conv 8x3x3 + linear), batch 64 of 28x28
Wc1, bc1 = rng.standard_normal((8, 1, 3, 3)) * 0.3, np.zeros(8)
Wc2 = rng.standard_normal((10, 8 * 26 * 26)) * 0.01
Xc, Yc = rng.standard_normal((64, 1, 28, 28)), rng.integers(0, 10, 64)


def mk_cnn(L):
    p = tuple(L.tensor(a, dtype=L.float32) for a in (Wc1, bc1, Wc2))
    x, y = L.tensor(Xc, dtype=L.float32), L.tensor(Yc)

    def loss(p, x, y):
        h = L.nn.functional.conv2d(x.unsqueeze(0), p[0], p[1]).relu().flatten(1)
        return L.nn.functional.cross_entropy(h @ p[2].T, y.unsqueeze(0))

    return lambda: L.vmap(L.func.grad(loss), in_dims=(None, 0, 0))(p, x, y)


res.append(("per-sample grads CNN 64x1x28x28", timeit(mk_cnn(fg)), timeit(mk_cnn(torch)), None))
# 2. jacrev/jacfwd 256->256
Wj = rng.standard_normal((256, 256)) / 16
xj = rng.standard_normal(256)
for name in ("jacrev", "jacfwd"):
    fW, tW = fg.tensor(Wj), torch.tensor(Wj)
    a = timeit(lambda: getattr(fg.func, name)(lambda v: (fW @ v).tanh() + v.sin())(fg.tensor(xj)))
    b = timeit(
        lambda: getattr(torch.func, name)(lambda v: (tW @ v).tanh() + v.sin())(torch.tensor(xj))
    )
    res.append((f"{name} 256->256", a, b, None))
xh = rng.standard_normal(64)
Wh = rng.standard_normal((64, 64)) / 8
fW, tW = fg.tensor(Wh), torch.tensor(Wh)
a = timeit(lambda: fg.func.hessian(lambda v: ((fW @ v).tanh() ** 2).sum())(fg.tensor(xh)))
b = timeit(lambda: torch.func.hessian(lambda v: ((tW @ v).tanh() ** 2).sum())(torch.tensor(xh)))
res.append(("hessian 64 params", a, b, None))
# 3. vmap over 1024 small MLPs (16 elements)
Xs = rng.standard_normal((1024, 16))
M = rng.standard_normal((16, 16)) / 4
fM, tM = fg.tensor(Xs), torch.tensor(Xs)
fW, tW = fg.tensor(M), torch.tensor(M)
a = timeit(lambda: fg.vmap(lambda v: (fW @ v).tanh().sum())(fM))
b = timeit(lambda: torch.vmap(lambda v: (tW @ v).tanh().sum())(tM))
res.append(("vmap 1024 x 16-element MLP", a, b, None))
for name, a, b, c in res:
    s = f"{name:40s} ferrograd {a * 1e3:9.2f} ms  torch.func {b * 1e3:9.2f} ms  ratio {a / b:7.2f}"
    if c:
        s += f"  loop {c * 1e3:.1f} ms (vmap/loop {a / c:.2f})"
    print(s)
