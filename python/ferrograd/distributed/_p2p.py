"""Point-to-point messages (send, recv and their non-blocking forms) and the
collectives on picklable objects."""

from __future__ import annotations

from ._common import _MPI
from ._failure import _wait_all
from ._process_groups import _group
from ._work import (
    _CODE_DTYPES,
    Work,
    _agree,
    _Buf,
    _check_tensor,
    _dtype_code,
    _meta,
    _padded,
    _root,
    _root_of,
    _shape_at,
    _ThreadWork,
)


def _header(t):
    import numpy as np

    shape = list(t.shape)
    row = [_dtype_code(t), len(shape), *_padded(shape), t.numel()]
    return np.asarray(row, dtype=np.int64)


def _tags(tag: int):
    if not isinstance(tag, int) or tag < 0:
        raise ValueError(f"tag must be a non-negative int, got {tag!r}")
    return 2 * tag, 2 * tag + 1


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Starts sending ``tensor`` to rank ``dst``; returns a Work."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if g is None:
        return None
    peer = _root_of(g, dst, group_dst, "dst")
    if peer == g.rank():
        raise ValueError(
            "Invalid destination rank: should not be the same as the rank of the current process."
        )
    htag, dtag = _tags(tag)
    head = _header(tensor)
    src = _Buf(tensor, read_only=True)
    reqs = [g.comm.Isend(head, dest=peer, tag=htag), g.comm.Isend(src.arr, dest=peer, tag=dtag)]

    def keep():
        return head, src

    return Work(reqs, g, "send", [keep])


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Sends ``tensor`` to rank ``dst`` (returns when the buffer may be reused)."""
    w = isend(tensor, dst, group, tag, group_dst)
    if w is not None:
        w.wait()


class _RecvWork(Work):
    """A receive: the header (dtype and shape) first, then the data from
    the same sender, checked against the receiving tensor."""

    def __init__(self, tensor, g, source, tag):
        MPI = _MPI()
        self._tensor = tensor
        self._dtag = _tags(tag)[1]
        self._head = _header(tensor) * 0
        self._status = MPI.Status()
        self._buf = _Buf(tensor)
        head_req = g.comm.Irecv(
            self._head, source=MPI.ANY_SOURCE if source is None else source, tag=_tags(tag)[0]
        )
        super().__init__([head_req], g, "recv", [])
        self._head_req = head_req
        self._data_req = None
        self.source_rank = None

    def _advance(self, block_for, limit):
        if self._data_req is None:
            if block_for:
                _wait_all(
                    [self._head_req], limit, "recv", status=self._status, ranks=self._group.ranks
                )
            elif not self._head_req.Test(self._status):
                return False
            peer = self._status.Get_source()
            mine = _header(self._tensor)
            if list(self._head) != list(mine):
                self._error = ValueError(
                    f"recv: rank {self._group.ranks[peer]} sent a tensor of dtype {_CODE_DTYPES.get(int(self._head[0]))} "
                    f"shape {_shape_at(self._head, 2)}, but the receiving tensor "
                    f"is {self._tensor.dtype} {list(self._tensor.shape)}"
                )
                # take the data off the wire into a scratch buffer
                import numpy as np

                scratch = np.empty(int(self._head[-1]) * 8, dtype=np.uint8)
                self._group.comm.Recv(scratch, source=peer, tag=self._dtag)
                raise self._error
            self.source_rank = peer
            self._data_req = self._group.comm.Irecv(self._buf.arr, source=peer, tag=self._dtag)
            self._reqs = [self._data_req]
            self._finish.append(self._buf.finish)
        return True

    def wait(self, timeout=None) -> bool:
        if self._done:
            return True
        self._advance(True, self._limit(timeout))
        return super().wait(timeout)

    def is_completed(self) -> bool:
        if self._done or self._error is not None:
            return True
        if not self._advance(False, 0):
            return False
        return super().is_completed()

    def _source_rank(self):
        return self.source_rank


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Starts receiving into ``tensor`` from rank ``src`` (any rank when
    None); returns a Work."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if g is None:
        return None
    peer = group_src if group_src is not None else (None if src is None else _root(g, src, "src"))
    return _RecvWork(tensor, g, peer, tag)


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into ``tensor`` from rank ``src`` (any rank when None);
    returns the sender's global rank."""
    w = irecv(tensor, src, group, tag, group_src)
    if w is None:
        return -1
    w.wait()
    return w._group.ranks[w.source_rank]


# ---------------------------------------------------------------------------
# picklable objects
# ---------------------------------------------------------------------------


def _object_call(g, what, fn):
    """Runs mpi4py's pickling collective ``fn`` on the runner thread and
    waits for it (peer failures and the timeout raise); returns its value."""
    box = []
    w = _ThreadWork(g.runner(g.comm).submit(lambda: box.append(fn())), g, what)
    w.wait()
    return box[0]


def all_gather_object(object_list, obj, group=None):
    """Fills ``object_list`` (one slot per rank) with every rank's ``obj``
    (picklable)."""
    g = _group(group)
    if g is None:
        return
    if not isinstance(object_list, list) or len(object_list) != g.size():
        raise ValueError(f"all_gather_object: object_list must be a list of {g.size()} entries")
    _agree(g, _meta("all_gather", None), "all_gather_object")
    object_list[:] = _object_call(g, "all_gather_object", lambda: g.comm.allgather(obj))


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replaces the entries of ``object_list`` by those of rank ``src``."""
    g = _group(group)
    if g is None:
        return
    root = _root_of(g, src, group_src, "src", default=0)
    if not isinstance(object_list, list):
        raise TypeError("broadcast_object_list: object_list must be a list")
    _agree(g, _meta("broadcast", None, root=root, extra=len(object_list)), "broadcast_object_list")
    mine = object_list if g.rank() == root else None
    object_list[:] = _object_call(g, "broadcast_object_list", lambda: g.comm.bcast(mine, root=root))


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Rank ``dst`` receives every rank's ``obj`` into ``object_gather_list``."""
    g = _group(group)
    if g is None:
        return
    root = _root_of(g, dst, group_dst, "dst", default=0)
    if g.rank() == root and (
        not isinstance(object_gather_list, list) or len(object_gather_list) != g.size()
    ):
        raise ValueError(
            f"gather_object: object_gather_list must be a list of {g.size()} entries on dst"
        )
    _agree(g, _meta("gather", None, root=root), "gather_object")
    got = _object_call(g, "gather_object", lambda: g.comm.gather(obj, root=root))
    if g.rank() == root:
        object_gather_list[:] = got
