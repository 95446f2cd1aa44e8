"""Run on N ranks by test_distributed.py: DistributedDataParallel.

* an MLP trained on N ranks (each its shard of the batch) ends with the
  parameters one process gets training on the whole batch (float64),
  with one bucket and with many small buckets;
* no_sync accumulates locally, the next backward averages the sum;
* find_unused_parameters: a head used on some ranks only;
* without it, an unused parameter makes the next forward raise;
* different models on the ranks: RuntimeError at construction.
Prints "OK <rank>"."""

import ferrograd as torch
import ferrograd.distributed as dist
import ferrograd.nn as nn
from ferrograd.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi", timeout=60)
r, n = dist.get_rank(), dist.get_world_size()
PER_RANK = 4


def mlp():
    return nn.Sequential(
        nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 16), nn.Tanh(), nn.Linear(16, 4)
    ).double()


def data(step):
    torch.manual_seed(1000 + step)
    return torch.randn(PER_RANK * n, 8, dtype=torch.float64), torch.randn(
        PER_RANK * n, 4, dtype=torch.float64
    )


def close(a, b, what, tol=1e-10):
    err = (a - b).abs().max().item()
    assert err <= tol, f"rank {r}: {what}: max error {err}"


def train(model, steps, shard):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        x, y = data(step)
        if shard:
            x, y = x[r * PER_RANK : (r + 1) * PER_RANK], y[r * PER_RANK : (r + 1) * PER_RANK]
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    return model


for cap in (None, 0.0005):
    torch.manual_seed(0)
    reference = train(mlp(), 5, shard=False)
    torch.manual_seed(r)  # a different initialisation per rank: DDP broadcasts rank 0's
    net = mlp()
    ddp = DDP(net, bucket_cap_mb=cap)
    if cap is not None:
        assert len(ddp._buckets) > 2, len(ddp._buckets)
    train(ddp, 5, shard=True)
    for (name, p), q in zip(net.named_parameters(), reference.parameters()):
        close(p.detach(), q.detach(), f"DDP bucket_cap_mb={cap} {name}")

# two DDP models in one backward: each its own communicator, so their
# buckets never pair with the other's whatever order the hooks run in
torch.manual_seed(0)
ref_a, ref_b = mlp(), mlp()
torch.manual_seed(0)
net_a, net_b = mlp(), mlp()
ddp_a, ddp_b = DDP(net_a, bucket_cap_mb=0.001), DDP(net_b, bucket_cap_mb=0.001)
x, y = data(0)
(((ref_a(x) - y) ** 2).mean() + ((ref_b(x * 2) - y) ** 2).mean()).backward()
xs, ys = x[r * PER_RANK : (r + 1) * PER_RANK], y[r * PER_RANK : (r + 1) * PER_RANK]
(((ddp_a(xs) - ys) ** 2).mean() + ((ddp_b(xs * 2) - ys) ** 2).mean()).backward()
for p, q in zip(
    list(net_a.parameters()) + list(net_b.parameters()),
    list(ref_a.parameters()) + list(ref_b.parameters()),
):
    close(p.grad, q.grad, "two DDP models")

# no_sync: grads of two micro-batches, the first kept local
torch.manual_seed(0)
ref = mlp()
torch.manual_seed(0)
net = mlp()
ddp = DDP(net, bucket_cap_mb=0.001)
for step in range(2):
    x, y = data(step)
    ((ref(x) - y) ** 2).mean().backward()
for step in range(2):
    x, y = data(step)
    xs, ys = x[r * PER_RANK : (r + 1) * PER_RANK], y[r * PER_RANK : (r + 1) * PER_RANK]
    if step == 0:
        with ddp.no_sync():
            ((ddp(xs) - ys) ** 2).mean().backward()
        local = [p.grad.clone() for p in net.parameters()]
    else:
        ((ddp(xs) - ys) ** 2).mean().backward()
for p, q in zip(net.parameters(), ref.parameters()):
    close(p.grad, q.grad, "no_sync then sync")


# find_unused_parameters: rank 0 never uses head_b
class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4).double()
        self.head_a = nn.Linear(4, 1).double()
        self.head_b = nn.Linear(4, 1).double()

    def forward(self, x, use_b):
        h = self.body(x).tanh()
        out = self.head_a(h)
        return out + self.head_b(h) if use_b else out


torch.manual_seed(3)
model = TwoHeads()
ddp = DDP(model, find_unused_parameters=True)
x = torch.full((2, 4), 0.1 * (r + 1), dtype=torch.float64)
ddp(x, use_b=r != 0).sum().backward()
got = model.head_b.weight.grad.clone()
# expected: the average over ranks, rank 0 contributing zero
exp = torch.zeros_like(got)
for k in range(1, n):
    torch.manual_seed(3)
    m = TwoHeads()
    m(torch.full((2, 4), 0.1 * (k + 1), dtype=torch.float64), True).sum().backward()
    exp += m.head_b.weight.grad / n
close(got, exp, "find_unused_parameters head_b")
ddp(x, use_b=False).sum().backward()  # unused everywhere now: still finishes
assert model.head_b.weight.grad is not None

# without find_unused_parameters: the reduction cannot finish
torch.manual_seed(3)
model = TwoHeads()
ddp = DDP(model)
ddp(x, use_b=False).sum().backward()
try:
    ddp(x, use_b=False)
except RuntimeError as e:
    assert "Expected to have finished reduction" in str(e), e
else:
    raise AssertionError("the unfinished reduction was not reported")

# different models: a clear error on every rank
try:
    DDP(nn.Linear(3, 2 + (r == n - 1)).double())
except RuntimeError as e:
    assert "same model across all ranks" in str(e), e
else:
    raise AssertionError("different models were accepted")

dist.destroy_process_group()
print(f"OK {r}", flush=True)
