"""Run on N ranks by test_distributed.py: every collective, every dtype,
contiguous and not, sync and async, a subgroup, point to point, and the
errors for bad or mismatched calls. Prints "OK <rank>" at the end."""

import ferrograd as torch
import ferrograd.distributed as dist


def check(cond, what):
    if not cond:
        raise AssertionError(f"rank {dist.get_rank()}: {what}")


def raises(kind, fn, needle=""):
    try:
        fn()
    except kind as e:
        check(needle in str(e), f"message {e!r} lacks {needle!r}")
        return
    raise AssertionError(f"rank {dist.get_rank()}: expected {kind.__name__}")


check(dist.is_available(), "is_available")
check(not dist.is_initialized(), "not initialised yet")
raises(ValueError, lambda: dist.get_rank(), "has not been initialized")
# torch's env:// variables are checked against MPI's ranks
import os  # noqa: E402

os.environ["WORLD_SIZE"] = "99"
raises(ValueError, lambda: dist.init_process_group("mpi"), "MPI started")
del os.environ["WORLD_SIZE"]
raises(ValueError, lambda: dist.init_process_group("bogus"), "Invalid backend")
raises(RuntimeError, lambda: dist.init_process_group("nccl"), "GPU")
check(not dist.is_initialized(), "failed inits leave nothing")
dist.init_process_group(backend="mpi")
check(dist.is_initialized(), "initialised")
raises(ValueError, lambda: dist.init_process_group("mpi"), "twice")
r, n = dist.get_rank(), dist.get_world_size()
check(dist.get_backend() == "mpi", "backend")

DTYPES = [torch.float32, torch.float64, torch.int64]
for dt in DTYPES:
    for async_op in (False, True):
        x = (torch.arange(6) + r).to(dt)
        w = dist.all_reduce(x, async_op=async_op)
        if async_op:
            w.wait()
            check(w.is_completed(), "work completed")
        expect = [sum(i + k for k in range(n)) for i in range(6)]
        check(x.tolist() == expect, f"all_reduce {dt} {x.tolist()}")
        # non-contiguous: a transposed view, written back through copy_
        base = (torch.arange(12) * (r + 1)).to(dt).reshape(3, 4)
        y = base.t()
        v0 = base._version
        dist.all_reduce(y, op=dist.ReduceOp.MAX)
        check(
            base.tolist() == (torch.arange(12) * n).to(dt).reshape(3, 4).tolist(),
            "all_reduce MAX of a view",
        )
        check(base._version > v0, "version bumped")
for op, f in [
    (dist.ReduceOp.SUM, lambda vals: sum(vals)),
    (dist.ReduceOp.PRODUCT, lambda vals: __import__("math").prod(vals)),
    (dist.ReduceOp.MIN, min),
    (dist.ReduceOp.MAX, max),
    (dist.ReduceOp.AVG, lambda vals: sum(vals) / len(vals)),
]:
    x = torch.tensor([1.5 + r, -2.0 * r, 3.0], dtype=torch.float64)
    dist.all_reduce(x, op=op)
    ranks = range(n)
    expect = [f([1.5 + k for k in ranks]), f([-2.0 * k for k in ranks]), f([3.0] * n)]
    check(
        all(abs(a - b) < 1e-12 for a, b in zip(x.tolist(), expect)), f"{op} {x.tolist()} {expect}"
    )
# large tensors (MPI's blocking all-reduce on a runner thread), sync and
# async, contiguous and not, with AVG's division
for async_op in (False, True):
    big = (torch.arange(1 << 19, dtype=torch.float32) % 7 + r).reshape(512, 1024)
    view = big.t()
    w = dist.all_reduce(view, op=dist.ReduceOp.AVG, async_op=async_op)
    if async_op:
        check(w.wait() and w.is_completed(), "big async work")
    expect = (torch.arange(1 << 19, dtype=torch.float32) % 7 + (n - 1) / 2).reshape(512, 1024)
    check(torch.allclose(big, expect), "big all_reduce AVG")
    flat = torch.full((1 << 19,), float(r + 1), dtype=torch.float64)
    dist.all_reduce(flat, op=dist.ReduceOp.MAX)
    check(flat.min().item() == float(n), "big all_reduce MAX")
# the other collectives on 1 MB and more (blocking calls on the runner)
K = 1 << 18
big = torch.full((K,), float(r))
dist.broadcast(big, src=n - 1)
check(big.min().item() == float(n - 1) and big.max().item() == float(n - 1), "big broadcast")
big = torch.full((K,), float(r + 1), dtype=torch.float64)
dist.reduce(big, dst=0)
if r == 0:
    check(big.min().item() == float(n * (n + 1) // 2), "big reduce")
cat = torch.zeros(n * K)
dist.all_gather_into_tensor(cat, torch.full((K,), float(r)))
check(
    cat.reshape(n, K).mean(1).tolist() == [float(k) for k in range(n)], "big all_gather_into_tensor"
)
lst = [torch.zeros(K) for _ in range(n)]
dist.all_gather(lst, torch.full((K,), float(r)))
check([t.mean().item() for t in lst] == [float(k) for k in range(n)], "big all_gather")
out = torch.zeros(K)
dist.reduce_scatter_tensor(out, torch.ones(n * K) * (r + 1))
check(out.min().item() == float(n * (n + 1) // 2), "big reduce_scatter_tensor")
out = torch.zeros(n * K)
dist.all_to_all_single(out, torch.full((n * K,), float(r)))
check(out.reshape(n, K).mean(1).tolist() == [float(k) for k in range(n)], "big all_to_all_single")
# other Python threads run while a rank waits in a collective (MPI waits
# without the GIL): rank 0 waits ~0.3 s for the others, a thread counts
import threading  # noqa: E402
import time  # noqa: E402

for size in (4, 1 << 19):
    ticks = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    th = threading.Thread(target=count)
    th.start()
    if r != 0:
        time.sleep(0.3)
    dist.all_reduce(torch.ones(size))
    stop.set()
    th.join()
    if r == 0:
        check(ticks[0] > 50, f"a thread ran {ticks[0]} times while rank 0 waited")
# bool: SUM is a logical or
b = torch.tensor([r == 0, False, True])
dist.all_reduce(b)
check(b.tolist() == [True, False, True], "bool all_reduce")

# leaf that requires grad: the collective writes its data, not its graph
p = torch.ones(3, requires_grad=True)
dist.all_reduce(p)
check(p.tolist() == [float(n)] * 3 and p.is_leaf and p.grad_fn is None, "leaf all_reduce")

# broadcast from every root
for root in range(n):
    x = torch.full((2, 3), float(r))
    dist.broadcast(x, src=root)
    check(x.tolist() == [[float(root)] * 3] * 2, "broadcast")
    y = torch.full((4,), float(r)).reshape(2, 2).t()
    dist.broadcast(y, root)
    check(y.tolist() == [[float(root)] * 2] * 2, "broadcast non-contiguous")

# reduce
x = torch.tensor([1.0 + r, 2.0])
dist.reduce(x, dst=n - 1)
if r == n - 1:
    check(x.tolist() == [sum(1.0 + k for k in range(n)), 2.0 * n], "reduce")

# all_gather (list), all_gather_into_tensor (cat and stack)
for dt in DTYPES:
    out = [torch.zeros(2, 2, dtype=dt) for _ in range(n)]
    dist.all_gather(out, torch.full((2, 2), r, dtype=dt))
    check([t.tolist() for t in out] == [[[k, k], [k, k]] for k in range(n)], f"all_gather {dt}")
cat = torch.zeros(2 * n, 3)
dist.all_gather_into_tensor(cat, torch.full((2, 3), float(r)))
check(
    cat[:, 0].tolist() == [float(k) for k in range(n) for _ in range(2)],
    "all_gather_into_tensor cat",
)
st = torch.zeros(n, 2, 3)
w = dist.all_gather_into_tensor(st, torch.full((2, 3), float(r)), async_op=True)
w.wait()
check(st[:, 0, 0].tolist() == [float(k) for k in range(n)], "all_gather_into_tensor stack")

# reduce_scatter_tensor, reduce_scatter
out = torch.zeros(2)
dist.reduce_scatter_tensor(out, torch.arange(2 * n, dtype=torch.float32) * (r + 1))
tri = n * (n + 1) // 2
check(
    out.tolist() == [float((2 * r) * tri), float((2 * r + 1) * tri)],
    f"reduce_scatter_tensor {out.tolist()}",
)
out = torch.zeros(3)
dist.reduce_scatter(out, [torch.full((3,), float(k + r)) for k in range(n)])
check(out.tolist() == [float(sum(r + k for k in range(n)))] * 3, "reduce_scatter")

# all_to_all_single: equal and uneven splits
inp = torch.arange(2 * n, dtype=torch.float64) + 100 * r
out = torch.zeros(2 * n, dtype=torch.float64)
dist.all_to_all_single(out, inp)
check(
    out.tolist() == [float(100 * k + 2 * r + j) for k in range(n) for j in range(2)],
    "all_to_all_single",
)
# rank r sends k+1 rows to rank k, receives r+1 rows from every rank
in_splits = [k + 1 for k in range(n)]
out_splits = [r + 1] * n
inp = torch.arange(sum(in_splits) * 2, dtype=torch.float32).reshape(-1, 2) + 1000 * r
out = torch.zeros(sum(out_splits), 2)
dist.all_to_all_single(out, inp, out_splits, in_splits)
start = sum(range(1, r + 1))
expect = []
for k in range(n):
    expect += (torch.arange(sum(in_splits) * 2, dtype=torch.float32).reshape(-1, 2) + 1000 * k)[
        start : start + r + 1
    ].tolist()
check(out.tolist() == expect, "all_to_all_single uneven")
raises(
    ValueError,
    lambda: dist.all_to_all_single(torch.zeros(n + 1, 2), inp, [1] * (n - 1) + [2], in_splits),
    "expects",
)

# all_to_all (lists)
outs = [torch.zeros(k + 1) for k in range(n)]
dist.all_to_all(outs, [torch.full((r + 1,), float(10 * r + k)) for k in range(n)])
check([t.tolist() for t in outs] == [[float(10 * k + r)] * (k + 1) for k in range(n)], "all_to_all")

# scatter / gather
s = torch.zeros(2)
dist.scatter(s, [torch.full((2,), float(k)) for k in range(n)] if r == 0 else None, src=0)
check(s.tolist() == [float(r)] * 2, "scatter")
gl = [torch.zeros(2) for _ in range(n)] if r == n - 1 else None
dist.gather(torch.full((2,), float(r)), gl, dst=n - 1)
if r == n - 1:
    check([t.tolist() for t in gl] == [[float(k)] * 2 for k in range(n)], "gather")

# point to point: a ring, blocking and async
nxt, prv = (r + 1) % n, (r - 1) % n
if n > 1:
    got = torch.zeros(3)
    if r % 2 == 0:
        dist.send(torch.full((3,), float(r)), nxt)
        src = dist.recv(got, prv)
    else:
        src = dist.recv(got, prv)
        dist.send(torch.full((3,), float(r)), nxt)
    check(got.tolist() == [float(prv)] * 3 and src == prv, "send/recv ring")
    got = torch.zeros(2, 2, dtype=torch.float64)
    rq = dist.irecv(got, tag=5)  # any source
    sq = dist.isend(torch.full((2, 2), float(r), dtype=torch.float64), nxt, tag=5)
    sq.wait()
    rq.wait()
    check(got.tolist() == [[float(prv)] * 2] * 2, "isend/irecv")
    # a mismatched receive is an error, not garbage
    if r == 0:
        dist.send(torch.zeros(4), 1, tag=9)
    elif r == 1:
        raises(ValueError, lambda: dist.recv(torch.zeros(5), 0, tag=9), "sent a tensor")

# subgroups: the even ranks, and a group this rank is not in
evens = dist.new_group([k for k in range(n) if k % 2 == 0])
if r % 2 == 0:
    x = torch.ones(2)
    dist.all_reduce(x, group=evens)
    check(x.tolist() == [float((n + 1) // 2)] * 2, "subgroup all_reduce")
    check(
        dist.get_world_size(evens) == (n + 1) // 2 and dist.get_rank(evens) == r // 2,
        "subgroup rank",
    )
else:
    check(evens is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(evens) == -1, "non member")
    check(dist.all_reduce(torch.ones(2), group=evens) is None, "non member collective is a no-op")

# picklable objects
objs = [None] * n
dist.all_gather_object(objs, {"rank": r, "name": f"r{r}"})
check(objs == [{"rank": k, "name": f"r{k}"} for k in range(n)], "all_gather_object")
cfg = [{"lr": 0.1}, "x"] if r == n - 1 else [None, None]
dist.broadcast_object_list(cfg, src=n - 1)
check(cfg == [{"lr": 0.1}, "x"], "broadcast_object_list")
got = [None] * n if r == 0 else None
dist.gather_object((r, "a" * r), got, dst=0)
if r == 0:
    check(got == [(k, "a" * k) for k in range(n)], "gather_object")

# mismatches across ranks: clear errors on every rank, no hang
raises(ValueError, lambda: dist.all_reduce(torch.ones(3 + r)), "do not match")
raises(
    ValueError,
    lambda: dist.all_reduce(torch.ones(3, dtype=torch.float32 if r == 0 else torch.float64)),
    "do not match",
)
raises(
    ValueError,
    lambda: dist.all_reduce(torch.ones(3), op=dist.ReduceOp.SUM if r == 0 else dist.ReduceOp.MAX),
    "do not match",
)
raises(ValueError, lambda: dist.broadcast(torch.ones(3), src=r), "do not match")
# bad arguments: torch's exception types
raises(TypeError, lambda: dist.all_reduce([1.0, 2.0]), "Expected parameter `tensor`")
raises(ValueError, lambda: dist.all_gather([torch.zeros(2)] * (n + 1), torch.zeros(2)), "ranks")
raises(
    ValueError,
    lambda: dist.all_gather_into_tensor(torch.zeros(n * 2 + 1), torch.zeros(2)),
    "world_size",
)
raises(ValueError, lambda: dist.broadcast(torch.zeros(2), src=n), "Invalid src")
raises(
    TypeError,
    lambda: dist.all_reduce(torch.ones(2, dtype=torch.int64), op=dist.ReduceOp.AVG),
    "floating",
)
# everything still works after the errors
x = torch.ones(2)
dist.all_reduce(x)
check(x.tolist() == [float(n)] * 2, "after errors")
dist.barrier()
dist.destroy_process_group()
check(not dist.is_initialized(), "destroyed")
print(f"OK {r}", flush=True)
