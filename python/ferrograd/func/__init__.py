"""ferrograd.func: torch.func's composable transforms (``grad``, ``vjp``,
``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``, ...) over the Rust
engine."""

from ._eager import (
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    vjp,
)
from ._module import (
    debug_unwrap,
    functional_call,
    replace_all_batch_norm_modules_,
    stack_module_state,
)
from ._vmap import vmap

__all__ = [
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "stack_module_state",
    "vjp",
    "vmap",
    "debug_unwrap",
    "replace_all_batch_norm_modules_",
]
