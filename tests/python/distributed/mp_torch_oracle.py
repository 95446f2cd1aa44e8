"""Run on N ranks by test_distributed.py, once with ferrograd and once with
torch (gloo) as the oracle: the same program (``import <lib> as torch``)
runs every differentiable collective forward and backward and writes each
rank's outputs and input gradients to ``<outdir>/<lib>.<rank>.json``; the
test compares the two libraries' files.

    mp_torch_oracle.py ferrograd|torch OUTDIR PORT
"""

import importlib
import json
import os
import sys

import numpy as np

lib, outdir, port = sys.argv[1], sys.argv[2], sys.argv[3]
torch = importlib.import_module(lib)
dist = importlib.import_module(lib + ".distributed")
F = importlib.import_module(lib + ".distributed.nn.functional")

if lib == "torch":
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = port
    os.environ["RANK"] = os.environ["OMPI_COMM_WORLD_RANK"]
    os.environ["WORLD_SIZE"] = os.environ["OMPI_COMM_WORLD_SIZE"]
dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(1234 + r)


def leaf(*shape):
    return torch.tensor(rng.standard_normal(shape), dtype=torch.float64, requires_grad=True)


def weights(t):
    return torch.tensor(rng.standard_normal(tuple(t.shape)), dtype=torch.float64)


CASES = {
    "all_reduce": lambda x: (F.all_reduce(x * x),),
    "all_reduce_avg": lambda x: (F.all_reduce(x.sin(), op=dist.ReduceOp.AVG),),
    "all_gather": lambda x: F.all_gather(x.exp()),
    "broadcast": lambda x: (F.broadcast(x.tanh(), src=n - 1),),
    "reduce": lambda x: (F.reduce(x * x, dst=0),),
    "all_to_all": lambda x: F.all_to_all(
        [torch.zeros(2, dtype=torch.float64) for _ in range(n)], list((x * 2).chunk(n))
    ),
    "all_to_all_single": lambda x: (
        F.all_to_all_single(torch.zeros(2 * n, dtype=torch.float64), x.sin()),
    ),
    "gather": lambda x: F.gather(x * x, dst=0),
    "scatter": lambda x: (F.scatter(list((x * x).chunk(n)), src=0),),
}
SHAPES = {"all_to_all": (2 * n,), "all_to_all_single": (2 * n,), "scatter": (2 * n,)}

result = {}
for name, fn in CASES.items():
    x = leaf(*SHAPES.get(name, (3,)))
    outs = fn(x)
    loss = sum((o * weights(o)).sum() for o in outs)
    if name == "reduce" and r != 0:
        loss = loss * 0.0  # off dst the output is undefined
    loss.backward()
    result[name] = {
        "out": [o.detach().tolist() for o in outs] if not (name == "reduce" and r != 0) else None,
        "grad": x.grad.tolist(),
    }

with open(os.path.join(outdir, f"{lib}.{r}.json"), "w") as f:
    json.dump(result, f)
dist.destroy_process_group()
print(f"OK {r}", flush=True)
