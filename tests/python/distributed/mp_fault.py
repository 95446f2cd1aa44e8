"""Run on N ranks by test_distributed.py with a mode argument:

* ``forward``: the last rank raises during its forward; the others are in
  an all_reduce and must fail with DistBackendError naming that rank.
* ``backward``: the last rank raises inside a backward node while the
  others wait in a collective of their backward.
* ``timeout``: the last rank hangs (sleeps); the others must time out.
* ``exit``: the last rank ends its program (sys.exit, no exception)
  before a collective the others wait in.
* ``ddp``: the last rank raises computing its loss; the others are in a
  DistributedDataParallel backward waiting for its buckets.

Every surviving rank prints "CAUGHT <rank> <message>" and exits with an
error itself; the whole job must end within seconds."""

import sys
import time

import ferrograd as torch
import ferrograd.distributed as dist
import ferrograd.distributed.nn.functional as F

mode = sys.argv[1]
dist.init_process_group("mpi", timeout=4 if mode == "timeout" else 60)
r, n = dist.get_rank(), dist.get_world_size()
bad = r == n - 1
w = torch.ones(4, requires_grad=True)


class Boom(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        if bad:
            raise ValueError("backward exploded on purpose")
        return g


try:
    if mode == "forward":
        if bad:
            raise RuntimeError("forward exploded on purpose")
        # 2 MB: MPI's blocking all-reduce on the runner thread
        dist.all_reduce(torch.ones(1 << 19))
    elif mode == "backward":
        # Boom's backward runs before the all_reduce's: the failing rank
        # never reaches the collective the others wait in
        y = Boom.apply(F.all_reduce(w * 2))
        y.sum().backward()
    elif mode == "exit":
        if bad:
            sys.exit(3)
        dist.all_reduce(w.detach().clone())
    elif mode == "ddp":
        from ferrograd.nn.parallel import DistributedDataParallel as DDP

        model = DDP(torch.nn.Linear(64, 64), bucket_cap_mb=0.001)
        out = model(torch.ones(8, 64))
        if bad:
            raise RuntimeError("loss exploded on purpose")
        before = [p.grad for p in model.parameters()]
        try:
            out.sum().backward()
        finally:
            # nothing half-written: the failed reduction left .grad alone
            # (the local gradients, never a partial average)
            print(f"GRADS {r} {[p.grad is not None for p in model.parameters()]}", flush=True)
    elif mode == "timeout":
        if bad:
            time.sleep(30)
        dist.all_reduce(w.detach().clone())
except dist.DistBackendError as e:
    print(f"CAUGHT {r} {e}", flush=True)
    raise
except RuntimeError as e:
    # in backward the engine reports the node's error as a RuntimeError
    if "peer failed" in str(e) or "timed out" in str(e) or "exited" in str(e):
        print(f"CAUGHT {r} {e}", flush=True)
    raise
print(f"OK {r}", flush=True)
