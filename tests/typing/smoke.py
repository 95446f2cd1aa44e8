"""Typed smoke test of ferrograd's stubs: realistic torch-style code that
`mypy --strict` must accept (tests/python/test_stubs.py runs it through mypy
and also executes it, so every line is real API)."""

from __future__ import annotations

import ferrograd as torch
import ferrograd.nn.functional as F
from ferrograd import Tensor, nn
from ferrograd.autograd.function import FunctionCtx


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        return grad * 2 * x


class MLP(nn.Module):
    def __init__(self, d_in: int, d_hidden: int, d_out: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.act = nn.GELU()
        self.drop = nn.Dropout(p=0.1)
        self.fc2 = nn.Linear(d_hidden, d_out, bias=False)
        self.norm = nn.LayerNorm(d_hidden)

    def forward(self, x: Tensor) -> Tensor:
        h: Tensor = self.act(self.norm(self.fc1(x)))
        out: Tensor = self.fc2(self.drop(h))
        return out


def creation() -> list[Tensor]:
    a = torch.zeros(2, 3)
    b = torch.ones((2, 3), dtype=torch.float64)
    c = torch.randn(4, 4, requires_grad=True)
    d = torch.arange(0, 10, 2)
    e = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    f = torch.full((2, 2), 7.0)
    g = torch.linspace(0.0, 1.0, steps=5)
    h = torch.eye(3)
    i = torch.zeros_like(e)
    return [a, b, c, d, e, f, g, h, i]


def arithmetic(x: Tensor, y: Tensor) -> float:
    z = (x + y) * 2.0 - y / 3 + x @ y.T
    z = z.exp().log1p().clamp(min=0.0).sqrt()
    z = torch.where(z > 1.0, z, torch.zeros_like(z))
    s = torch.sum(z, dim=1, keepdim=True).mean()
    values, indices = torch.max(x, dim=1)
    top = x.topk(2, dim=1).values
    parts = torch.split(x, 1, dim=0)
    stacked = torch.stack([x, y]).reshape(-1).unsqueeze(0)
    n: int = x.dim() + x.numel() + x.size(0) + x.shape[1]
    close: bool = torch.allclose(x, x.clone())
    total = s + values.sum() + indices.float().sum() + top.sum() + stacked.sum()
    return float(total.item()) + n + len(parts) + int(close)


def autograd_and_training() -> float:
    torch.manual_seed(0)
    model = MLP(3, 8, 2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    x = torch.randn(16, 3)
    target = torch.randint(0, 2, (16,))
    loss_fn = nn.CrossEntropyLoss()
    last = 0.0
    model.train()
    for _ in range(3):
        opt.zero_grad()
        logits = model(x)
        loss = loss_fn(logits, target) + F.mse_loss(F.relu(logits), torch.zeros_like(logits))
        loss.backward()
        opt.step()
        sched.step()
        last = loss.item()
    model.eval()
    with torch.no_grad():
        probs = F.softmax(model(x), dim=-1)
    assert not probs.requires_grad
    lrs: list[float] = sched.get_last_lr()

    w = torch.randn(3, requires_grad=True)
    y = Square.apply(w).sum()
    (gw,) = torch.autograd.grad(y, [w])
    assert torch.allclose(gw, 2 * w)
    sd = model.state_dict()
    model.load_state_dict(sd)
    n_params = sum(p.numel() for p in model.parameters())
    for name, p in model.named_parameters():
        assert isinstance(name, str) and p.grad is not None
    return last + lrs[0] + n_params


def main() -> None:
    tensors = creation()
    x, y = torch.randn(3, 3), torch.randn(3, 3)
    print(len(tensors), arithmetic(x, y), autograd_and_training())


if __name__ == "__main__":
    main()
