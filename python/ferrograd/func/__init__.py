"""ferrograd.func: torch.func's composable transforms (``grad``, ``vjp``,
``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``, ...) over the Rust
engine."""

from ._eager import (  # noqa: F401
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    vjp,
)
from ._module import functional_call, stack_module_state  # noqa: F401
from ._vmap import vmap  # noqa: F401

__all__ = [
    "grad",
    "grad_and_value",
    "vjp",
    "jvp",
    "linearize",
    "jacrev",
    "jacfwd",
    "hessian",
    "functional_call",
    "stack_module_state",
    "vmap",
]
