# Written by tools/gen_stubs.py from the runtime, except the hand-written region
# below, which it keeps as it is: edit that here, and rerun the generator.
# fmt: off

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, overload

import ferrograd
from ferrograd import Tensor, _DeviceLike, _DTypeLike, _Number, _Shape, _Dims

from . import nn as nn

# ---- hand-written: kept as it is by tools/gen_stubs.py (edit here) ----

class ReduceOp:
    class RedOpType:
        name: str
        value: _int
        def __init__(self, name: str, code: _int) -> None: ...

    SUM: RedOpType
    AVG: RedOpType
    PRODUCT: RedOpType
    MIN: RedOpType
    MAX: RedOpType

class Work:
    def __init__(self, reqs: Any, group: Any, what: Any, finish: Any = ...) -> None: ...
    def wait(self, timeout: Any = ...) -> _bool: ...
    def is_completed(self) -> _bool: ...
    def is_success(self) -> _bool: ...
    def exception(self) -> Any: ...
    def result(self) -> Any: ...

def get_rank(group: Any = ...) -> _int: ...
def get_world_size(group: Any = ...) -> _int: ...
def is_available() -> _bool: ...
def is_initialized() -> _bool: ...
def is_mpi_available() -> _bool: ...
def recv(
    tensor: Tensor, src: Any = ..., group: Any = ..., tag: _int = ..., group_src: Any = ...
) -> _int: ...

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----

class Backend(str):
    UNDEFINED: str
    GLOO: str
    NCCL: str
    MPI: str

class DistBackendError(DistError): ...

class DistError(RuntimeError): ...

class GroupMember:
    WORLD: Any
    NON_GROUP_MEMBER: Any

class ProcessGroup:
    def __init__(self, comm: Any, ranks: Any, timeout: Any, backend: Any) -> None: ...
    def rank(self) -> Any: ...
    def size(self) -> Any: ...
    def dup_comm(self) -> Any: ...
    def name(self) -> Any: ...
    def runner(self, comm: Any) -> Any: ...

class group:
    WORLD: Any
    NON_GROUP_MEMBER: Any

def all_gather(tensor_list: Any, tensor: Tensor, group: Any = ..., async_op: Any = ...) -> Any: ...
def all_gather_into_tensor(
    output_tensor: Any,
    input_tensor: Any,
    group: Any = ...,
    async_op: Any = ...,
) -> Any: ...
def all_gather_object(object_list: Any, obj: object, group: Any = ...) -> Any: ...
def all_reduce(tensor: Tensor, op: Any = ..., group: Any = ..., async_op: Any = ...) -> Any: ...
def all_to_all(
    output_tensor_list: Any,
    input_tensor_list: Any,
    group: Any = ...,
    async_op: Any = ...,
) -> Any: ...
def all_to_all_single(
    output: Any,
    input: Tensor,
    output_split_sizes: Any = ...,
    input_split_sizes: Any = ...,
    group: Any = ...,
    async_op: Any = ...,
) -> Any: ...
def barrier(group: Any = ..., async_op: Any = ..., device_ids: Any = ...) -> Any: ...
def broadcast(
    tensor: Tensor,
    src: Tensor | None = ...,
    group: Any = ...,
    async_op: Any = ...,
    group_src: Any = ...,
) -> Any: ...
def broadcast_object_list(
    object_list: Any,
    src: Tensor | None = ...,
    group: Any = ...,
    device: _DeviceLike | None = ...,
    group_src: Any = ...,
) -> Any: ...
def destroy_process_group(group: Any = ...) -> Any: ...
def gather(
    tensor: Tensor,
    gather_list: Any = ...,
    dst: Any = ...,
    group: Any = ...,
    async_op: Any = ...,
    group_dst: Any = ...,
) -> Any: ...
def gather_object(
    obj: object,
    object_gather_list: Any = ...,
    dst: Any = ...,
    group: Any = ...,
    group_dst: Any = ...,
) -> Any: ...
def get_backend(group: Any = ...) -> Any: ...
def get_global_rank(group: Any, group_rank: Any) -> Any: ...
def get_group_rank(group: Any, global_rank: Any) -> Any: ...
def get_process_group_ranks(group: Any) -> Any: ...
def init_process_group(
    backend: Any = ...,
    init_method: Any = ...,
    timeout: Any = ...,
    world_size: Any = ...,
    rank: Any = ...,
    store: Any = ...,
    group_name: Any = ...,
    pg_options: Any = ...,
    device_id: Any = ...,
) -> Any: ...
def irecv(
    tensor: Tensor,
    src: Tensor | None = ...,
    group: Any = ...,
    tag: Any = ...,
    group_src: Any = ...,
) -> Any: ...
def isend(
    tensor: Tensor,
    dst: Any = ...,
    group: Any = ...,
    tag: Any = ...,
    group_dst: Any = ...,
) -> Any: ...
def new_group(
    ranks: Any = ...,
    timeout: Any = ...,
    backend: Any = ...,
    pg_options: Any = ...,
    use_local_synchronization: Any = ...,
    group_desc: Any = ...,
    device_id: Any = ...,
) -> Any: ...
def reduce(
    tensor: Tensor,
    dst: Any = ...,
    op: Any = ...,
    group: Any = ...,
    async_op: Any = ...,
    group_dst: Any = ...,
) -> Any: ...
def reduce_scatter(
    output: Any,
    input_list: Any,
    op: Any = ...,
    group: Any = ...,
    async_op: Any = ...,
) -> Any: ...
def reduce_scatter_tensor(
    output: Any,
    input: Tensor,
    op: Any = ...,
    group: Any = ...,
    async_op: Any = ...,
) -> Any: ...
def scatter(
    tensor: Tensor,
    scatter_list: Any = ...,
    src: Tensor | None = ...,
    group: Any = ...,
    async_op: Any = ...,
    group_src: Any = ...,
) -> Any: ...
def send(
    tensor: Tensor,
    dst: Any = ...,
    group: Any = ...,
    tag: Any = ...,
    group_dst: Any = ...,
) -> Any: ...
def gradcheck(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Tensor],
    *,
    eps: _float = ...,
    atol: _float = ...,
    rtol: _float = ...,
    n_directions: Any = ...,
    per_rank: Any = ...,
    replicated: Any = ...,
    replicated_loss: Any = ...,
    seed: _int = ...,
    group: Any = ...,
    raise_exception: Any = ...,
) -> Any: ...
