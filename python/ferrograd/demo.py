"""Train a small MLP on the two-spirals problem with ferrograd alone.

Run it with ``python -m ferrograd.demo``. It prints the loss going down and
the final accuracy (above 90% expected), in about a second or two.

The code is plain PyTorch code (``ferrograd`` is used exactly as ``torch``
would be): an ``nn.Module`` trained by ``optim.Adam`` on a cross-entropy
loss, with a custom autograd Function as the hidden layers' activation, a
hand-written ReLU whose backward ferrograd's engine calls.
"""

import argparse
import math
import random
import time

import ferrograd
import ferrograd.nn.functional as F
from ferrograd import nn
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


class MLP(nn.Module):
    """Linear layers with the custom ReLU between them."""

    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Linear(fan_in, fan_out) for fan_in, fan_out in zip(sizes[:-1], sizes[1:])
        )

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = ReLU.apply(x)
        return x


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
    opt = ferrograd.optim.Adam(model.parameters(), lr=0.02)
    print(
        f"two spirals: {x.shape[0]} points, MLP 2-{args.hidden}-{args.hidden}-2, "
        f"{ferrograd.get_num_threads()} threads"
    )

    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
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
