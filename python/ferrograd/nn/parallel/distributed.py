"""DistributedDataParallel over ferrograd.distributed (torch's DDP).

* Construction: every rank must hold the same parameters (shapes and
  dtypes are compared across ranks); rank 0's parameters and buffers are
  broadcast to the others.
* Buckets: the parameters in reverse registration order (roughly the order
  backward produces their gradients), cut into buckets of about
  ``bucket_cap_mb`` (25 MB), one flat buffer per bucket.
* Backward: a post-accumulate-grad hook per parameter copies its ``.grad``
  into the bucket; a full bucket starts an asynchronous all-reduce while the
  backward keeps running. Buckets start in bucket order on every rank
  (a bucket that is full waits for the buckets before it), never in the order
  they happen to fill, so the ranks' collectives always pair up. When the
  last bucket has started, the hook waits for all of them, divides by the
  world size and copies the averages back into ``.grad``: ``backward()``
  returns with averaged gradients.
* ``no_sync()``: gradients accumulate locally, the next backward outside it
  all-reduces the accumulated gradients.
* ``find_unused_parameters=True``: a multi-grad hook over the parameters
  learns, once per backward, which parameters got no gradient; they count
  as ready (zeros in the bucket), so the buckets holding them still go.
  Without it, a parameter that gets no gradient leaves the reduction
  unfinished and the next forward raises torch's error.

The all-reduces run on a communicator of their own (``ProcessGroup.dup_comm``)
so that they never pair with a collective the model itself issues.
"""

from __future__ import annotations

import threading
import zlib
from contextlib import contextmanager

from ... import _C
from ...autograd.grad_mode import no_grad
from ...autograd.graph import register_multi_grad_hook
from ...distributed import distributed_c10d as dist
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class _Bucket:
    def __init__(self, index, ids, params, dtype):
        self.index = index
        self.ids = ids
        self.params = params
        self.offsets = []
        total = 0
        for p in params:
            self.offsets.append(total)
            total += p.numel()
        self.flat = _C.zeros((total,), dtype=dtype)
        self.pending = len(params)
        self.work = None


class DistributedDataParallel(Module):
    """Wraps ``module`` for data-parallel training (torch's DDP): same
    constructor arguments; CPU only (``device_ids`` must be None)."""

    def __init__(
        self,
        module,
        device_ids=None,
        output_device=None,
        dim=0,
        broadcast_buffers=True,
        process_group=None,
        bucket_cap_mb=None,
        find_unused_parameters=False,
        check_reduction=False,
        gradient_as_bucket_view=False,
        static_graph=False,
        init_sync=True,
        **kwargs,
    ):
        super().__init__()
        if device_ids:
            raise ValueError(
                "DistributedDataParallel on ferrograd runs on CPU: device_ids must be None"
            )
        if not isinstance(module, Module):
            raise TypeError(
                f"DistributedDataParallel expects a Module, got {type(module).__name__}"
            )
        self.module = module
        self.process_group = dist._group(process_group)
        if self.process_group is None:
            raise ValueError("DistributedDataParallel: this rank is not a member of process_group")
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self._params = [p for p in module.parameters() if p.requires_grad]
        if not self._params:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient."
            )
        self._check_same_model()
        # DDP's communicator: made here, by every rank together (MPI_Comm_dup
        # is collective: made lazily in a hook it could wait for a rank that
        # never gets there)
        self._comm = self.process_group.dup_comm()
        if init_sync:
            with no_grad():
                for t in list(module.parameters()) + list(module.buffers()):
                    dist.broadcast(
                        t.detach(), self.process_group.ranks[0], group=self.process_group
                    )
        self._build_buckets()
        self._lock = threading.Lock()
        self._started = False
        self._reset()
        self._expect_reduction = False
        self._handles = [
            p.register_post_accumulate_grad_hook(self._make_hook(i))
            for i, p in enumerate(self._params)
        ]
        if find_unused_parameters:
            self._handles.append(
                register_multi_grad_hook(self._params, self._mark_unused, mode="all")
            )

    # -- set-up -------------------------------------------------------------

    def _check_same_model(self):
        import numpy as np

        g = self.process_group
        desc = ";".join(f"{tuple(p.shape)}:{p.dtype}" for p in self._params)
        mine = np.asarray(
            [len(self._params), sum(p.numel() for p in self._params), zlib.crc32(desc.encode())],
            dtype=np.int64,
        )
        every = np.empty((g.size(), 3), dtype=np.int64)
        dist._wait_all([g.comm.Iallgather(mine, every)], g.timeout, "DistributedDataParallel")
        for r in range(g.size()):
            if not np.array_equal(every[r], every[0]):
                raise RuntimeError(
                    "DDP expects same model across all ranks, but Rank "
                    f"{g.ranks[0]} has {int(every[0][0])} params ({int(every[0][1])} elements), while rank "
                    f"{g.ranks[r]} has inconsistent {int(every[r][0])} params ({int(every[r][1])} elements)."
                )

    def _build_buckets(self):
        """Reverse registration order, cut at ``bucket_bytes_cap`` and at
        dtype changes."""
        self._buckets = []
        self._where = [None] * len(self._params)
        current, size, dtype = [], 0, None
        order = list(range(len(self._params)))[::-1]

        def close():
            if current:
                b = _Bucket(
                    len(self._buckets), list(current), [self._params[i] for i in current], dtype
                )
                for k, i in enumerate(current):
                    self._where[i] = (b.index, k)
                self._buckets.append(b)

        for i in order:
            p = self._params[i]
            nbytes = p.numel() * p.element_size()
            if current and (p.dtype != dtype or size + nbytes > self.bucket_bytes_cap):
                close()
                current, size = [], 0
            dtype = p.dtype
            current.append(i)
            size += nbytes
        close()

    def _reset(self):
        self._ready = [[False] * len(b.params) for b in self._buckets]
        for b in self._buckets:
            b.pending = len(b.params)
            b.work = None
        self._next = 0
        self._launched = 0
        self._started = False

    # -- backward -----------------------------------------------------------

    def _make_hook(self, i):
        def hook(param):
            if self.require_backward_grad_sync and self._expect_reduction:
                self._ready_param(i, param.grad)
            return None

        return hook

    def _mark_unused(self, grads):
        if not (self.require_backward_grad_sync and self._expect_reduction):
            return
        for i, g in enumerate(grads):
            if g is None:
                self._ready_param(i, None)

    def _ready_param(self, i, grad):
        bi, k = self._where[i]
        b = self._buckets[bi]
        view = b.flat[b.offsets[k] : b.offsets[k] + self._params[i].numel()]
        with no_grad():
            if grad is None:
                view.zero_()
            else:
                view.copy_(grad.reshape(-1))
        finished = False
        with self._lock:
            self._started = True
            if self._ready[bi][k]:
                return
            self._ready[bi][k] = True
            b.pending -= 1
            # launch in bucket order only
            while self._next < len(self._buckets) and self._buckets[self._next].pending == 0:
                nb = self._buckets[self._next]
                nb.work = dist._all_reduce_unchecked(
                    nb.flat,
                    dist.ReduceOp.SUM,
                    self.process_group,
                    self._comm,
                    True,
                )
                self._next += 1
            finished = self._next == len(self._buckets) and self._launched == 0
            if finished:
                self._launched = 1
        if finished:
            self._finalize()

    def _finalize(self):
        n = self.process_group.size()
        for b in self._buckets:
            b.work.wait()
        used = None
        if self.find_unused_parameters:
            # which parameters some rank used: those get the average as
            # their .grad even where unused; the rest keep None (torch)
            used = _C.tensor([p.grad is not None for p in self._params], dtype=_C.int64)
            dist._all_reduce_unchecked(
                used, dist.ReduceOp.MAX, self.process_group, self._comm, False
            )
            used = used.tolist()
        with no_grad():
            for b in self._buckets:
                b.flat.div_(n)
                for i, p, off in zip(b.ids, b.params, b.offsets):
                    piece = b.flat[off : off + p.numel()].view(p.shape)
                    if p.grad is not None:
                        p.grad.copy_(piece)
                    elif used is not None and used[i]:
                        p.grad = piece.clone()
        self._expect_reduction = False

    # -- forward ------------------------------------------------------------

    def forward(self, *inputs, **kwargs):
        # torch's check: a backward reduced some buckets but not all
        if self._expect_reduction and self._started and self.require_backward_grad_sync:
            missing = [i for i, b in enumerate(self._ready) for k, r in enumerate(b) if not r]
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. "
                "This error indicates that your module has parameters that were not used in producing loss. "
                "You can enable unused parameter detection by passing the keyword argument "
                "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by "
                "making sure all `forward` function outputs participate in calculating loss. "
                f"({len(missing)} parameter(s) got no gradient.)"
            )
        if self.broadcast_buffers:
            bufs = list(self.module.buffers())
            if bufs:
                with no_grad():
                    for t in bufs:
                        dist.broadcast(
                            t.detach(), self.process_group.ranks[0], group=self.process_group
                        )
        if _C.is_grad_enabled() and self.require_backward_grad_sync:
            if not self._expect_reduction:
                self._reset()
            self._expect_reduction = True
        else:
            self._expect_reduction = False
        return self.module(*inputs, **kwargs)

    @contextmanager
    def no_sync(self):
        """Gradients accumulate locally inside; the first backward after it
        all-reduces them."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def __getstate__(self):
        raise RuntimeError("DistributedDataParallel cannot be pickled")
