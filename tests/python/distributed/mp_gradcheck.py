"""Run on N ranks by test_distributed.py: the cross-process gradcheck of
every differentiable collective and of user Functions that call
collectives. Prints one "GRADCHECK <name> <world> ok" line per case
(rank 0) and "OK <rank>"."""

import ferrograd as torch
import ferrograd.distributed as dist
import ferrograd.distributed.nn.functional as F
from ferrograd.autograd.gradcheck import GradcheckError

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
torch.manual_seed(100 + r)


def leaf(*shape):
    return torch.randn(*shape, dtype=torch.float64).requires_grad_()


class GatherOwnSlice(torch.autograd.Function):
    """The contrastive-loss all-gather: forward all-gathers (plain
    collectives inside a user Function), backward all-reduces the gradient
    and keeps this rank's slice."""

    ordered_backward = True

    @staticmethod
    def forward(ctx, x):
        out = [torch.empty_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(out, x)
        return torch.cat(out)

    @staticmethod
    def backward(ctx, g):
        g = g.clone()
        dist.all_reduce(g)
        k = g.shape[0] // dist.get_world_size()
        return g[dist.get_rank() * k : (dist.get_rank() + 1) * k]


class ScaledAllReduce(torch.autograd.Function):
    """y = all_reduce(x) * s with a user backward calling all_reduce."""

    ordered_backward = True

    @staticmethod
    def forward(ctx, x, s):
        ctx.save_for_backward(s)
        y = x.clone()
        dist.all_reduce(y)
        return y * s

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        gx = (g * s).contiguous()
        dist.all_reduce(gx)
        return gx, None


class WrongAllGather(torch.autograd.Function):
    """MLX's convention (own slice, no reduction): wrong for per-rank
    losses, so the check must reject it."""

    ordered_backward = True

    @staticmethod
    def forward(ctx, x):
        out = [torch.empty_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(out, x)
        return torch.cat(out)

    @staticmethod
    def backward(ctx, g):
        k = g.shape[0] // dist.get_world_size()
        return g[dist.get_rank() * k : (dist.get_rank() + 1) * k]


uneven_in = [k + 1 for k in range(n)]
uneven_out = [r + 1] * n
CASES = {
    "all_reduce_sum": (lambda x: F.all_reduce(x * x), [leaf(3, 2)]),
    "all_reduce_avg": (lambda x: F.all_reduce(x.sin(), op=dist.ReduceOp.AVG), [leaf(4)]),
    "all_gather": (lambda x: torch.stack(F.all_gather(x.exp())), [leaf(2, 3)]),
    "reduce_scatter": (
        lambda x: F.reduce_scatter(torch.zeros(2, dtype=torch.float64), list((x * x).chunk(n))),
        [leaf(2 * n)],
    ),
    "broadcast": (lambda x: F.broadcast(x.tanh(), src=n - 1), [leaf(3)]),
    # off dst the output is undefined (torch): the loss reads it on dst only
    "reduce": (lambda x: F.reduce(x * x, dst=0) * float(r == 0), [leaf(3)]),
    "all_to_all": (
        lambda x: torch.cat(
            F.all_to_all(
                [torch.zeros(2, dtype=torch.float64) for _ in range(n)], list((x * 2).chunk(n))
            )
        ),
        [leaf(2 * n)],
    ),
    "all_to_all_single": (
        lambda x: F.all_to_all_single(torch.zeros(2 * n, dtype=torch.float64), x.sin()),
        [leaf(2 * n)],
    ),
    "all_to_all_single_uneven": (
        lambda x: F.all_to_all_single(
            torch.zeros(sum(uneven_out), 2, dtype=torch.float64), x * x, uneven_out, uneven_in
        ),
        [leaf(sum(uneven_in), 2)],
    ),
    "gather": (lambda x: torch.stack(F.gather(x * x, dst=0)), [leaf(2)]),
    "scatter": (lambda x: F.scatter(list((x * x).chunk(n)), src=0), [leaf(2 * n)]),
    "user_gather_own_slice": (lambda x: GatherOwnSlice.apply(x.sin()) ** 2, [leaf(3)]),
    "user_scaled_all_reduce": (
        lambda x, s: ScaledAllReduce.apply(x * x, s),
        [leaf(3), torch.randn(3, dtype=torch.float64)],
    ),
    "two_collectives_in_branches": (
        lambda x: (
            F.all_reduce(x[:2] * 3).sum() + torch.stack(F.all_gather(x[2:].exp())).sum() * x[0]
        ),
        [leaf(4)],
    ),
    "copy_to_parallel_region_replicated": (
        lambda w: F.copy_to_parallel_region(w) * float(r + 1),
        [torch.full((3,), 0.5, dtype=torch.float64).requires_grad_()],
    ),
}

for name, (fn, inputs) in CASES.items():
    replicated = (0,) if name.endswith("_replicated") else ()
    dist.gradcheck(fn, inputs, replicated=replicated)
    if r == 0:
        print(f"GRADCHECK {name} {n} ok", flush=True)

# tensor parallelism (Megatron's MLP): x replicated, W1 split by columns,
# W2 by rows, one replicated loss: the replicated-region pair is right
torch.manual_seed(7)
x_rep = torch.randn(4, dtype=torch.float64).requires_grad_()  # the same on every rank
torch.manual_seed(200 + r)
W1, W2 = leaf(4, 3), leaf(3, 2)


def megatron(x, w1, w2):
    h = (F.copy_to_parallel_region(x) @ w1).tanh()
    return F.reduce_from_parallel_region(h @ w2)


dist.gradcheck(megatron, [x_rep, W1, W2], replicated=(0,), replicated_loss=True)
if r == 0:
    print(f"GRADCHECK megatron_replicated_loss {n} ok", flush=True)


def megatron_torch_all_reduce(x, w1, w2):
    # torch's all_reduce sums the gradient over ranks: n times too much
    # for a replicated loss
    return F.all_reduce((F.copy_to_parallel_region(x) @ w1).tanh() @ w2)


try:
    dist.gradcheck(
        megatron_torch_all_reduce, [x_rep, W1, W2], replicated=(0,), replicated_loss=True
    )
except GradcheckError:
    if r == 0:
        print(f"GRADCHECK replicated_loss_with_all_reduce_rejected {n} ok", flush=True)
else:
    raise AssertionError("all_reduce's backward passed the replicated-loss check")

# the check catches a wrong convention (MLX's own-slice all_gather backward)
try:
    dist.gradcheck(lambda x: WrongAllGather.apply(x) ** 2, [leaf(3)])
except GradcheckError as e:
    if r == 0:
        print(f"GRADCHECK wrong_convention_rejected {n} ok", flush=True)
    assert "numerical" in str(e)
else:
    raise AssertionError("the wrong all_gather backward passed the check")

dist.destroy_process_group()
print(f"OK {r}", flush=True)
