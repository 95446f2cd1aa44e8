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

class kthvalue(tuple[Tensor, Tensor]):
    @property
    def values(self) -> Tensor: ...
    @property
    def indices(self) -> Tensor: ...

class max(tuple[Tensor, Tensor]):
    @property
    def values(self) -> Tensor: ...
    @property
    def indices(self) -> Tensor: ...

class min(tuple[Tensor, Tensor]):
    @property
    def values(self) -> Tensor: ...
    @property
    def indices(self) -> Tensor: ...

class sort(tuple[Tensor, Tensor]):
    @property
    def values(self) -> Tensor: ...
    @property
    def indices(self) -> Tensor: ...

class topk(tuple[Tensor, Tensor]):
    @property
    def values(self) -> Tensor: ...
    @property
    def indices(self) -> Tensor: ...

# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----

class linalg_cholesky_ex(tuple[Any, ...]):
    L: Any
    info: Any

class linalg_eigh(tuple[Any, ...]):
    eigenvalues: Any
    eigenvectors: Any

class linalg_inv_ex(tuple[Any, ...]):
    inverse: Any
    info: Any

class linalg_lstsq(tuple[Any, ...]):
    solution: Any
    residuals: Any
    rank: Any
    singular_values: Any

class linalg_lu(tuple[Any, ...]):
    P: Any
    L: Any
    U: Any

class linalg_lu_factor(tuple[Any, ...]):
    LU: Any
    pivots: Any

class linalg_lu_factor_ex(tuple[Any, ...]):
    LU: Any
    pivots: Any
    info: Any

class linalg_qr(tuple[Any, ...]):
    Q: Any
    R: Any

class linalg_slogdet(tuple[Any, ...]):
    sign: Any
    logabsdet: Any

class linalg_solve_ex(tuple[Any, ...]):
    result: Any
    info: Any

class linalg_svd(tuple[Any, ...]):
    U: Any
    S: Any
    Vh: Any

class lu_unpack(tuple[Any, ...]):
    P: Any
    L: Any
    U: Any

class qr(tuple[Any, ...]):
    Q: Any
    R: Any

class slogdet(tuple[Any, ...]):
    sign: Any
    logabsdet: Any

class svd(tuple[Any, ...]):
    U: Any
    S: Any
    V: Any

class triangular_solve(tuple[Any, ...]):
    solution: Any
    cloned_coefficient: Any
