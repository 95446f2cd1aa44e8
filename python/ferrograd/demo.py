"""Train a small MLP on the two-spirals problem with ferrograd alone.

Run it with ``python -m ferrograd.demo``. It prints the loss going down and
the final accuracy (above 90% expected), in about a second or two.

The code is plain PyTorch code (``ferrograd`` is used exactly as ``torch``
would be), including a custom autograd Function: the hidden layers'
activation is a hand-written ReLU whose backward ferrograd's engine calls.
"""

import argparse
import math
import random
import time

import ferrograd
from ferrograd.autograd import Function


class ReLU(Function):
    """max(x, 0) with a hand-written backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x > 0).type_as(grad_output)


def two_spirals(points_per_class, noise=0.02, seed=0):
    """Two interleaved spiral arms in [-1, 1]^2; labels 0 and 1."""
    rng = random.Random(seed)
    xs, ys = [], []
    for i in range(points_per_class):
        t = 0.3 + 3.5 * math.pi * i / points_per_class  # 1.75 turns
        r = t / (3.8 * math.pi)
        for label, sign in ((0, 1.0), (1, -1.0)):
            xs.append(
                [
                    sign * r * math.cos(t) + rng.gauss(0.0, noise),
                    sign * r * math.sin(t) + rng.gauss(0.0, noise),
                ]
            )
            ys.append(label)
    return ferrograd.tensor(xs), ferrograd.tensor(ys)


class MLP:
    def __init__(self, sizes):
        self.layers = []
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            w = ferrograd.randn(fan_in, fan_out) * math.sqrt(2.0 / fan_in)
            b = ferrograd.zeros(fan_out)
            self.layers.append((w.requires_grad_(), b.requires_grad_()))

    def parameters(self):
        return [p for layer in self.layers for p in layer]

    def __call__(self, x):
        for i, (w, b) in enumerate(self.layers):
            x = x @ w + b
            if i < len(self.layers) - 1:
                x = ReLU.apply(x)
        return x


class Adam:
    """Adam, written with in-place tensor ops under no_grad."""

    def __init__(self, params, lr=0.01, betas=(0.9, 0.999), eps=1e-8):
        self.params, self.lr, self.betas, self.eps = params, lr, betas, eps
        self.m = [ferrograd.zeros(p.shape) for p in params]
        self.v = [ferrograd.zeros(p.shape) for p in params]
        self.t = 0

    @ferrograd.no_grad()
    def step(self):
        self.t += 1
        b1, b2 = self.betas
        c1, c2 = 1 - b1**self.t, 1 - b2**self.t
        for p, m, v in zip(self.params, self.m, self.v):
            g = p.grad
            m.mul_(b1).add_(g * (1 - b1))
            v.mul_(b2).add_(g * g * (1 - b2))
            p.sub_((m / c1) / ((v / c2).sqrt() + self.eps) * self.lr)

    def zero_grad(self):
        for p in self.params:
            p.grad = None


def cross_entropy(logits, target):
    log_probs = ferrograd.log_softmax(logits, dim=1)
    return -log_probs.gather(1, target.unsqueeze(1)).mean()


def accuracy(logits, target):
    return (logits.argmax(dim=1) == target).float().mean().item()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--points", type=int, default=200, help="points per class")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    ferrograd.manual_seed(args.seed)
    x, y = two_spirals(args.points, seed=args.seed)
    model = MLP([2, args.hidden, args.hidden, 2])
    opt = Adam(model.parameters(), lr=0.02)
    print(
        f"two spirals: {x.shape[0]} points, MLP 2-{args.hidden}-{args.hidden}-2, "
        f"{ferrograd.get_num_threads()} threads"
    )

    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        logits = model(x)
        loss = cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 1 or step % 25 == 0:
            print(f"step {step:4d}  loss {loss.item():.4f}  accuracy {accuracy(logits, y):6.1%}")
    elapsed = time.perf_counter() - start

    with ferrograd.no_grad():
        acc = accuracy(model(x), y)
    print(f"final accuracy {acc:.1%} after {args.steps} steps in {elapsed:.2f} s")
    return acc


if __name__ == "__main__":
    main()
