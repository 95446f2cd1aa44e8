"""Differentiable collectives: torch.distributed.nn.functional.

Each function is a custom autograd Function with exactly torch's backward
(torch/distributed/nn/functional.py): the gradient a rank receives is the
derivative of the *sum of every rank's loss* with respect to its input.

================  ================================  ==========================
collective        forward                           backward (torch, here)
================  ================================  ==========================
all_reduce(SUM)   y = sum_r x_r on every rank       all_reduce(SUM) of dy
all_gather        (x_0, ..., x_{n-1}) on every rank  reduce-scatter(SUM) of dy
reduce_scatter    y_i = sum_r x_r[i]                all_gather of dy
broadcast(src)    y = x_src                         reduce(SUM) to src; 0 elsewhere
reduce(dst)       y_dst = sum_r x_r (others: undef.)  broadcast of dy from dst
all_to_all        y_j = x_j of rank j               all_to_all of dy back
gather(dst)       dst gets (x_0, ..., x_{n-1})      scatter of dy from dst
scatter(src)      y_i = x_src[i]                    gather of dy to src
================  ================================  ==========================

Other libraries choose other conventions. JAX's ``psum`` transposes to
``psum`` as here only for values that differ per device; for a value
replicated across devices (``pvary``/``shard_map`` with replication
checks) its transpose is the identity. MLX returns the gradient unchanged
for ``all_sum`` and this rank's slice for ``all_gather``. Which is right
depends on what the loss is:

* **per-rank losses** (each rank computes its own loss from its own data,
  the training objective is their sum: data parallelism, a contrastive
  loss over an all-gathered batch): torch's formulas, used here.
* **a replicated loss** (every rank computes the *same* loss from the same
  replicated values, as in tensor/model parallelism): summing the
  gradient over ranks would count it ``world_size`` times. There the pair
  below is right: :func:`copy_to_parallel_region` (identity forward,
  all_reduce backward) where a replicated value enters a region computed
  piecewise per rank, and :func:`reduce_from_parallel_region` (all_reduce
  forward, identity backward) where the pieces are summed back into a
  replicated value (Megatron-LM's ``f``/``g`` operators).

torch applies ``all_reduce``'s op to the gradient too (its backward of
``ReduceOp.MAX`` is an all_reduce MAX of the gradient); that is the
gradient only for SUM and AVG, which is what the checks cover.

Every Function here sets ``ordered_backward = True``: the backward engine
runs these nodes one at a time in reverse creation order, so every rank
issues the backward's collectives in the same order.
"""

from __future__ import annotations

from ... import _C
from ...autograd import Function
from .. import distributed_c10d as dist
from ..distributed_c10d import ReduceOp

__all__ = [
    "all_gather",
    "all_reduce",
    "all_to_all",
    "all_to_all_single",
    "broadcast",
    "copy_to_parallel_region",
    "gather",
    "reduce",
    "reduce_from_parallel_region",
    "reduce_scatter",
    "scatter",
]


def broadcast(tensor, src, group=None):
    """Broadcasts ``tensor`` from rank ``src``; differentiable (backward:
    the gradients summed onto ``src``, zero on the other ranks)."""
    return _Broadcast.apply(src, group, tensor)


def gather(tensor, dst=0, group=None):
    """Gathers the ranks' tensors on ``dst`` (a tuple, one per rank; zeros
    on the other ranks); backward scatters the gradients from ``dst``."""
    return _Gather.apply(dst, group, tensor)


def scatter(tensors, src=0, group=None):
    """Rank ``src`` sends ``tensors[i]`` to rank i; backward gathers the
    gradients onto ``src``."""
    return _Scatter.apply(src, group, *tensors)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None):
    """Reduces onto ``dst``; backward broadcasts ``dst``'s gradient."""
    return _Reduce.apply(dst, op, group, tensor)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None):
    """Reduces the lists, rank i keeps the reduced i-th tensor; backward
    all-gathers the gradient."""
    return _Reduce_Scatter.apply(op, group, output, *input_list)


def all_gather(tensor, group=None):
    """Every rank's ``tensor``, as a tuple; backward reduce-scatters (sums
    each rank's gradient for this rank's slot)."""
    return _AllGather.apply(group, tensor)


def all_to_all(output_tensor_list, input_tensor_list, group=None):
    """Sends ``input_tensor_list[j]`` to rank j; returns what each rank
    sent this one. Backward sends the gradients back the same way."""
    return _AlltoAll.apply(group, output_tensor_list, *input_tensor_list)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None):
    """``all_to_all_single`` with autograd: backward is the all-to-all of
    the gradient with the split sizes swapped."""
    return _AlltoAllSingle.apply(group, output, output_split_sizes, input_split_sizes, input)


def all_reduce(tensor, op=ReduceOp.SUM, group=None):
    """All-reduce with autograd: backward all-reduces the gradient."""
    return _AllReduce.apply(op, group, tensor)


def copy_to_parallel_region(tensor, group=None):
    """Identity forward, all_reduce(SUM) backward: where a value replicated
    on every rank enters computation split across ranks (replicated-loss
    convention; Megatron's ``f``)."""
    return _CopyToParallel.apply(group, tensor)


def reduce_from_parallel_region(tensor, group=None):
    """all_reduce(SUM) forward, identity backward: the mirror of
    :func:`copy_to_parallel_region` (Megatron's ``g``), summing per-rank
    partial results into a replicated value whose loss every rank computes."""
    return _ReduceFromParallel.apply(group, tensor)


class _Collective(Function):
    ordered_backward = True


class _Broadcast(_Collective):
    @staticmethod
    def forward(ctx, src, group, tensor):
        ctx.src = src
        ctx.group = group
        ctx.rank = dist.get_rank(group=group)
        tensor = tensor.clone()
        dist.broadcast(tensor, src, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad_output):
        gx = _Reduce.apply(ctx.src, ReduceOp.SUM, ctx.group, grad_output)
        if ctx.src != ctx.rank:
            gx.zero_()
        return (None, None, gx)


class _Gather(_Collective):
    @staticmethod
    def forward(ctx, dst, group, tensor):
        ctx.dst = dst
        ctx.group = group
        tensor_list = [_C.zeros_like(tensor) for _ in range(dist.get_world_size(group=group))]
        tensor = tensor.contiguous()
        if dist.get_rank(group=group) == dst:
            dist.gather(tensor, tensor_list, dst, group=group)
        else:
            dist.gather(tensor, None, dst, group=group)
        return tuple(tensor_list)

    @staticmethod
    def backward(ctx, *grad_outputs):
        return (None, None) + (_Scatter.apply(ctx.dst, ctx.group, *grad_outputs),)


class _Scatter(_Collective):
    @staticmethod
    def forward(ctx, src, group, *tensors):
        ctx.src = src
        ctx.group = group
        if not all(t.size() == tensors[0].size() for t in tensors):
            raise ValueError("scatter: the tensors must all have the same size")
        output = _C.zeros_like(tensors[0])
        if dist.get_rank(group=group) == src:
            dist.scatter(output, list(tensors), src, group=group)
        else:
            dist.scatter(output, None, src, group=group)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None) + _Gather.apply(ctx.src, ctx.group, grad_output)


class _Reduce(_Collective):
    @staticmethod
    def forward(ctx, src, op, group, tensor):
        ctx.src = src
        ctx.group = group
        tensor = tensor.clone()
        dist.reduce(tensor, src, op=op, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None, None) + (_Broadcast.apply(ctx.src, ctx.group, grad_output),)


class _Reduce_Scatter(_Collective):
    @staticmethod
    def forward(ctx, op, group, tensor, *input_tensor_list):
        ctx.group = group
        tensor = tensor.contiguous()
        input_tensor_list = tuple(t.contiguous() for t in input_tensor_list)
        dist.reduce_scatter(tensor, list(input_tensor_list), op=op, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None, None) + _AllGather.apply(ctx.group, grad_output)


class _AllGather(_Collective):
    @staticmethod
    def forward(ctx, group, tensor):
        tensor = tensor.contiguous()
        ctx.group = group
        out_tensor_list = [_C.empty_like(tensor) for _ in range(dist.get_world_size(group=group))]
        dist.all_gather(out_tensor_list, tensor, group=group)
        return tuple(out_tensor_list)

    @staticmethod
    def backward(ctx, *grad_outputs):
        # torch's non-NCCL path: all_to_all of the gradients, summed
        tensor_list = [_C.empty_like(t) for t in grad_outputs]
        gxs = _AlltoAll.apply(ctx.group, tensor_list, *grad_outputs)
        gx = _C.sum(_C.stack(gxs), dim=0)
        return (None, gx)


class _AlltoAll(_Collective):
    @staticmethod
    def forward(ctx, group, out_tensor_list, *tensors):
        ctx.group = group
        ctx.input_tensor_size_list = [
            tensors[i].size() for i in range(dist.get_world_size(group=group))
        ]
        tensors = tuple(t.contiguous() for t in tensors)
        dist.all_to_all(out_tensor_list, list(tensors), group=group)
        return tuple(out_tensor_list)

    @staticmethod
    def backward(ctx, *grad_outputs):
        tensor_list = [
            _C.empty(size, dtype=grad_outputs[0].dtype) for size in ctx.input_tensor_size_list
        ]
        return (None, None) + _AlltoAll.apply(ctx.group, tensor_list, *grad_outputs)


class _AlltoAllSingle(_Collective):
    @staticmethod
    def forward(ctx, group, output, output_split_sizes, input_split_sizes, input):
        ctx.group = group
        ctx.input_size = input.size()
        ctx.output_split_sizes = input_split_sizes
        ctx.input_split_sizes = output_split_sizes
        dist.all_to_all_single(
            output,
            input,
            output_split_sizes=output_split_sizes,
            input_split_sizes=input_split_sizes,
            group=group,
        )
        return output

    @staticmethod
    def backward(ctx, grad_output):
        tensor = _C.empty(ctx.input_size, dtype=grad_output.dtype)
        return (None, None, None, None) + (
            _AlltoAllSingle.apply(
                ctx.group,
                tensor,
                ctx.output_split_sizes,
                ctx.input_split_sizes,
                grad_output.contiguous(),
            ),
        )


class _AllReduce(_Collective):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.group = group
        ctx.op = op
        tensor = tensor.clone().contiguous()
        dist.all_reduce(tensor, op=op, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None) + (_AllReduce.apply(ctx.op, ctx.group, grad_output),)


class _CopyToParallel(_Collective):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        return tensor.clone()

    @staticmethod
    def backward(ctx, grad_output):
        return (None, _AllReduce.apply(ReduceOp.SUM, ctx.group, grad_output))


class _ReduceFromParallel(_Collective):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        tensor = tensor.clone().contiguous()
        dist.all_reduce(tensor, op=ReduceOp.SUM, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad_output):
        return (None, grad_output)
