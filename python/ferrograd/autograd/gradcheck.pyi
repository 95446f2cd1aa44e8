# Written by tools/gen_stubs.py from the runtime, except the hand-written region
# below, which it keeps as it is: edit that here, and rerun the generator.
# fmt: off

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, overload

import ferrograd
from ferrograd import Tensor, _DeviceLike, _DTypeLike, _Number, _Shape, _Dims

# ---- hand-written: kept as it is by tools/gen_stubs.py (edit here) ----

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----

class GradcheckError(RuntimeError): ...

def gradcheck(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Tensor],
    *,
    eps: _float = ...,
    atol: _float = ...,
    rtol: _float = ...,
    raise_exception: Any = ...,
    nondet_tol: _float = ...,
    check_undefined_grad: Any = ...,
    check_grad_dtypes: Any = ...,
    check_batched_grad: Any = ...,
    check_batched_forward_grad: Any = ...,
    check_forward_ad: Any = ...,
    check_backward_ad: Any = ...,
    fast_mode: Any = ...,
    masked: Any = ...,
) -> Any: ...
def gradgradcheck(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor] | None = ...,
    *,
    eps: _float = ...,
    atol: _float = ...,
    rtol: _float = ...,
    gen_non_contig_grad_outputs: Any = ...,
    raise_exception: Any = ...,
    nondet_tol: _float = ...,
    check_undefined_grad: Any = ...,
    check_grad_dtypes: Any = ...,
    check_batched_grad: Any = ...,
    check_fwd_over_rev: Any = ...,
    check_rev_over_rev: Any = ...,
    fast_mode: Any = ...,
    masked: Any = ...,
) -> Any: ...
def get_numerical_jacobian(
    fn: Callable[..., Any],
    inputs: Tensor | Sequence[Tensor],
    target: Tensor | None = ...,
    eps: _float = ...,
    grad_out: Any = ...,
) -> Any: ...
def get_analytical_jacobian(
    inputs: Tensor | Sequence[Tensor],
    output: Any,
    nondet_tol: _float = ...,
    grad_out: Any = ...,
) -> Any: ...
