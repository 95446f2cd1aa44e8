"""The collectives on tensors: all_reduce, broadcast, reduce, the gathers,
scatters and reduce-scatters, all_to_all and barrier."""

from __future__ import annotations

from .. import _C
from ._common import _MPI, ReduceOp
from ._failure import _wait_all
from ._process_groups import _group
from ._work import (
    _agree,
    _Buf,
    _check_list,
    _check_tensor,
    _dtype_code,
    _meta,
    _mpi_op,
    _root_of,
    _same_dtype,
    _ThreadWork,
    _waited,
    _work,
)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``tensor`` across ranks, in place on every rank."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if g is None:
        return None
    code = _dtype_code(tensor)
    mop = _mpi_op(op, code)
    _agree(g, _meta("all_reduce", tensor, op=op), "all_reduce")
    return _all_reduce_unchecked(tensor, op, g, g.comm, async_op, mop)


# Synchronous all-reduces of this many bytes and more run MPI's blocking
# Allreduce (on the communicator's runner thread) rather than Iallreduce:
# Open MPI's blocking algorithms are faster on large buffers (64 MB float32
# on 2 ranks: ~1.5x), and the caller still waits in a polling loop.
_BLOCKING_MIN_BYTES = 1 << 20


def _all_reduce_unchecked(tensor, op, g, comm, async_op, mop=None, runner=None):
    MPI = _MPI()
    if mop is None:
        mop = _mpi_op(op, _dtype_code(tensor))
    b = _Buf(tensor)
    finish = b.epilogue(comm.Get_size() if op == ReduceOp.AVG else None)
    if runner is None and not async_op and b.arr.nbytes >= _BLOCKING_MIN_BYTES:
        runner = g.runner(comm)
    if runner is not None:
        arr = b.arr
        w = _ThreadWork(
            runner.submit(lambda: comm.Allreduce(MPI.IN_PLACE, arr, mop)), g, "all_reduce", finish
        )
        return _waited(w, async_op)
    req = comm.Iallreduce(MPI.IN_PLACE, b.arr, mop)
    return _work([req], g, "all_reduce", finish, async_op)


def _start(g, what, nbytes, async_op, finish, method, *args, **kwargs):
    """Starts ``comm.<method>`` (mpi4py's name of the blocking call):
    synchronous calls on ``nbytes`` of 1 MB and more run the blocking call
    on the communicator's runner thread (Open MPI's blocking algorithms are
    faster on large buffers), the others the non-blocking ``I<method>``."""
    comm = g.comm
    if not async_op and nbytes >= _BLOCKING_MIN_BYTES:
        call = getattr(comm, method)
        w = _ThreadWork(g.runner(comm).submit(lambda: call(*args, **kwargs)), g, what, finish)
        return _waited(w, False)
    req = getattr(comm, "I" + method.lower())(*args, **kwargs)
    return _work([req], g, what, finish, async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copies ``tensor`` of rank ``src`` (a global rank) to every rank."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if g is None:
        return None
    root = _root_of(g, src, group_src, "src")
    _agree(g, _meta("broadcast", tensor, root=root), "broadcast")
    b = _Buf(tensor, read_only=g.rank() == root)
    return _start(g, "broadcast", b.arr.nbytes, async_op, [b.finish], "Bcast", b.arr, root=root)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduces ``tensor`` across ranks into rank ``dst``'s tensor."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if g is None:
        return None
    root = _root_of(g, dst, group_dst, "dst")
    mop = _mpi_op(op, _dtype_code(tensor))
    _agree(g, _meta("reduce", tensor, root=root, op=op), "reduce")
    MPI = _MPI()
    is_root = g.rank() == root
    b = _Buf(tensor, read_only=not is_root)
    finish = b.epilogue(g.size() if op == ReduceOp.AVG and is_root else None)
    if is_root:
        return _start(
            g,
            "reduce",
            b.arr.nbytes,
            async_op,
            finish,
            "Reduce",
            MPI.IN_PLACE,
            b.arr,
            mop,
            root=root,
        )
    return _start(
        g, "reduce", b.arr.nbytes, async_op, finish, "Reduce", b.arr, None, mop, root=root
    )


def _io_group(output, input, group, what: str, names=("output", "input")):
    """Checks an output and an input tensor (``names``: the parameters'),
    of one dtype; the group to use (None on a rank that is not a member)."""
    _check_tensor(output, names[0])
    _check_tensor(input, names[1])
    g = _group(group)
    if g is not None and output.dtype != input.dtype:
        raise ValueError(
            f"{what}: output dtype {output.dtype} differs from input dtype {input.dtype}"
        )
    return g


def _check_per_rank(ts, like, n: int, what: str, name: str, mismatch):
    """``ts`` must hold ``n`` tensors of ``like``'s shape and dtype
    (``mismatch(t)``: the error's message for a tensor that is not)."""
    if len(ts) != n:
        raise ValueError(f"{what}: {name} has {len(ts)} tensors, the group has {n} ranks")
    for t in ts:
        if t.shape != like.shape or t.dtype != like.dtype:
            raise ValueError(mismatch(t))


# scatter's and gather's root-side list: (its parameter, the root's
# parameter, the error for a tensor unlike ``tensor``, the error for a list
# passed on another rank).
_ROOTED = {
    "scatter": (
        "scatter_list",
        "src",
        "scatter: every tensor in scatter_list must have the output tensor's shape and dtype",
        "Argument ``scatter_list`` must NOT be specified on non-source ranks.",
    ),
    "gather": (
        "gather_list",
        "dst",
        "gather: every tensor in gather_list must have the input tensor's shape and dtype",
        "Argument ``gather_list`` must NOT be specified on non-destination ranks.",
    ),
}


def _rooted(what: str, tensor, ts, group, global_rank, group_rank):
    """Checks scatter's or gather's arguments: ``tensor``, the root (rank 0
    by default), and the list ``ts``: one tensor of ``tensor``'s shape and
    dtype per rank on the root, nothing on the others. Returns (group,
    root, whether this rank is the root); (None, None, None) on a rank
    that is not a member of the group."""
    name, root_name, mismatch, off_root = _ROOTED[what]
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if g is None:
        return None, None, None
    root = _root_of(g, global_rank, group_rank, root_name, default=0)
    is_root = g.rank() == root
    if is_root:
        _check_list(ts, name)
        _check_per_rank(ts, tensor, g.size(), what, name, lambda t: mismatch)
    elif ts:
        raise ValueError(off_root)
    return g, root, is_root


def _stacked(like, n):
    return _C.empty((n,) + tuple(like.shape), dtype=like.dtype)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Gathers every rank's ``tensor`` into ``tensor_list`` (one per rank)."""
    _check_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if g is None:
        return None
    n = g.size()
    _check_per_rank(
        tensor_list,
        tensor,
        n,
        "all_gather",
        "tensor_list",
        lambda t: (
            f"all_gather: every output tensor must have the input's shape {list(tensor.shape)} and dtype "
            f"{tensor.dtype}, got {list(t.shape)} {t.dtype}"
        ),
    )
    _agree(g, _meta("all_gather", tensor), "all_gather")
    src = _Buf(tensor, read_only=True)
    out = _stacked(tensor, n)
    dst = out.numpy().reshape(-1)

    def finish():
        for i, t in enumerate(tensor_list):
            t.detach().copy_(out[i])

    return _start(g, "all_gather", dst.nbytes, async_op, [finish], "Allgather", src.arr, dst)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gathers every rank's ``input_tensor`` into ``output_tensor``: either
    concatenated along dim 0 or stacked (shape ``[world, *input.shape]``)."""
    g = _io_group(
        output_tensor,
        input_tensor,
        group,
        "all_gather_into_tensor",
        ("output_tensor", "input_tensor"),
    )
    if g is None:
        return None
    n = g.size()
    if output_tensor.numel() != n * input_tensor.numel():
        raise ValueError(
            f"all_gather_into_tensor: output tensor size must be equal to world_size times input tensor size "
            f"(output {list(output_tensor.shape)}, input {list(input_tensor.shape)}, world size {n})"
        )
    _agree(g, _meta("all_gather_into_tensor", input_tensor), "all_gather_into_tensor")
    src = _Buf(input_tensor, read_only=True)
    out = _Buf(output_tensor)
    return _start(
        g,
        "all_gather_into_tensor",
        out.arr.nbytes,
        async_op,
        [out.finish],
        "Allgather",
        src.arr,
        out.arr,
    )


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``input`` (world x output's size) across ranks; rank i keeps
    the i-th block in ``output``."""
    g = _io_group(output, input, group, "reduce_scatter_tensor")
    if g is None:
        return None
    n = g.size()
    if input.numel() != n * output.numel():
        raise ValueError(
            f"reduce_scatter_tensor: input tensor must be the same size as output size times world size "
            f"(input {list(input.shape)}, output {list(output.shape)}, world size {n})"
        )
    mop = _mpi_op(op, _dtype_code(input))
    _agree(g, _meta("reduce_scatter_tensor", input, op=op), "reduce_scatter_tensor")
    src = _Buf(input, read_only=True)
    out = _Buf(output)
    finish = out.epilogue(n if op == ReduceOp.AVG else None)
    return _start(
        g,
        "reduce_scatter_tensor",
        src.arr.nbytes,
        async_op,
        finish,
        "Reduce_scatter_block",
        src.arr,
        out.arr,
        mop,
    )


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces the lists across ranks; rank i keeps the sum of the i-th tensors."""
    _check_tensor(output, "output")
    _check_list(input_list, "input_list")
    g = _group(group)
    if g is None:
        return None
    _check_per_rank(
        input_list,
        output,
        g.size(),
        "reduce_scatter",
        "input_list",
        lambda t: (
            f"reduce_scatter: every input must have the output's shape {list(output.shape)} and dtype {output.dtype}"
        ),
    )
    stacked = _C.stack([t.detach() for t in input_list])
    return reduce_scatter_tensor(output, stacked, op=op, group=group, async_op=async_op)


def _split_counts(sizes, rows, n, row_numel, what, name):
    if sizes is None or len(sizes) == 0:
        if rows % n != 0:
            raise ValueError(
                f"{what}: dim 0 ({rows}) must be divisible by the world size {n} when {name} is not given"
            )
        sizes = [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n:
        raise ValueError(f"{what}: {name} has {len(sizes)} entries, the group has {n} ranks")
    if any(s < 0 for s in sizes) or sum(sizes) != rows:
        raise ValueError(f"{what}: {name} {sizes} must be non-negative and sum to dim 0 ({rows})")
    counts = [s * row_numel for s in sizes]
    return sizes, counts, _displacements(counts)


def _displacements(counts) -> list[int]:
    """Where each of consecutive pieces of ``counts`` elements starts."""
    displs = [0] * len(counts)
    for i in range(1, len(counts)):
        displs[i] = displs[i - 1] + counts[i - 1]
    return displs


def _exchange_counts(g, sent, expected, what: str, unit: str):
    """Tells each rank how much this one sends it (``sent[j]`` to rank j);
    ValueError unless what the ranks send this one is ``expected``."""
    import numpy as np

    got = np.empty(g.size(), dtype=np.int64)
    _wait_all([g.comm.Ialltoall(np.asarray(sent, dtype=np.int64), got)], g.timeout, what)
    if list(got) != expected:
        raise ValueError(
            f"{what}: rank {g.ranks[g.rank()]} expects {expected} {unit} from the ranks but they send {list(got)}"
        )


def all_to_all_single(
    output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False
):
    """Splits ``input`` along dim 0 (``input_split_sizes`` rows to each rank,
    equal parts by default) and receives the pieces the ranks send this one
    into ``output`` (``output_split_sizes`` rows from each)."""
    g = _io_group(output, input, group, "all_to_all_single")
    if g is None:
        return None
    n = g.size()
    if tuple(input.shape[1:]) != tuple(output.shape[1:]) or input.dim() == 0:
        raise ValueError(
            f"all_to_all_single: input {list(input.shape)} and output {list(output.shape)} must agree beyond dim 0"
        )
    row = 1
    for s in input.shape[1:]:
        row *= s
    isz, icounts, idispls = _split_counts(
        input_split_sizes, input.shape[0], n, row, "all_to_all_single", "input_split_sizes"
    )
    osz, ocounts, odispls = _split_counts(
        output_split_sizes, output.shape[0], n, row, "all_to_all_single", "output_split_sizes"
    )
    meta = _meta("all_to_all_single", input)
    meta[6] = -1  # dim 0 may differ between ranks
    meta[-1] = row
    _agree(g, meta, "all_to_all_single")
    # what each rank sends this one must be what this one expects
    _exchange_counts(g, isz, osz, "all_to_all_single", "rows")
    src = _Buf(input, read_only=True)
    out = _Buf(output)
    nbytes = max(src.arr.nbytes, out.arr.nbytes)
    return _start(
        g,
        "all_to_all_single",
        nbytes,
        async_op,
        [out.finish],
        "Alltoallv",
        [src.arr, (icounts, idispls)],
        [out.arr, (ocounts, odispls)],
    )


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Sends ``input_tensor_list[j]`` to rank j and receives rank j's piece
    for this rank into ``output_tensor_list[j]``."""
    _check_list(output_tensor_list, "output_tensor_list")
    _check_list(input_tensor_list, "input_tensor_list")
    g = _group(group)
    if g is None:
        return None
    n = g.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise ValueError(f"all_to_all: the lists must have one tensor per rank ({n})")
    dtype = input_tensor_list[0].dtype
    _same_dtype(list(input_tensor_list) + list(output_tensor_list), dtype, "all_to_all")
    sizes_in = [t.numel() for t in input_tensor_list]
    sizes_out = [t.numel() for t in output_tensor_list]
    probe = _C.empty((0,), dtype=dtype)
    _agree(g, _meta("all_to_all", probe), "all_to_all")
    _exchange_counts(g, sizes_in, sizes_out, "all_to_all", "elements")
    send = _C.cat([t.detach().reshape(-1) for t in input_tensor_list]) if n else probe
    recv = _C.empty((sum(sizes_out),), dtype=dtype)
    sd = _displacements(sizes_in)
    rd = _displacements(sizes_out)
    req = g.comm.Ialltoallv([send.numpy(), (sizes_in, sd)], [recv.numpy(), (sizes_out, rd)])

    def finish():
        _keep = send  # (the send buffer lives until completion)
        for t, off, k in zip(output_tensor_list, rd, sizes_out):
            t.detach().copy_(recv[off : off + k].reshape(t.shape))

    return _work([req], g, "all_to_all", [finish], async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank ``src`` sends ``scatter_list[i]`` to rank i, into ``tensor``."""
    g, root, is_root = _rooted("scatter", tensor, scatter_list, group, src, group_src)
    if g is None:
        return None
    _agree(g, _meta("scatter", tensor, root=root), "scatter")
    out = _Buf(tensor)
    send = _C.stack([t.detach() for t in scatter_list]) if is_root else None
    req = g.comm.Iscatter(send.numpy().reshape(-1) if is_root else None, out.arr, root=root)

    def keep():
        return send

    return _work([req], g, "scatter", [keep, out.finish], async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Rank ``dst`` receives every rank's ``tensor`` into ``gather_list``."""
    g, root, is_root = _rooted("gather", tensor, gather_list, group, dst, group_dst)
    if g is None:
        return None
    _agree(g, _meta("gather", tensor, root=root), "gather")
    src = _Buf(tensor, read_only=True)
    out = _stacked(tensor, g.size()) if is_root else None
    req = g.comm.Igather(src.arr, out.numpy().reshape(-1) if is_root else None, root=root)

    def finish():
        if is_root:
            for i, t in enumerate(gather_list):
                t.detach().copy_(out[i])

    return _work([req], g, "gather", [finish], async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Waits until every rank of the group reaches the barrier."""
    g = _group(group)
    if g is None:
        return None
    return _work([g.comm.Ibarrier()], g, "barrier", [], async_op)
