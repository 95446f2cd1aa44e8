"""A cross-process gradient check for code that calls collectives.

Every rank calls ``gradcheck(func, inputs)`` with its own inputs. The
function checked is the *global* one,

    F(x_0, ..., x_{n-1}) = sum over ranks r of L_r,
    L_r = sum_k <func(x_r)_k, w_{r,k}>       (fixed random weights w),

the objective of data-parallel training (a sum of per-rank losses). Its
gradient with respect to rank r's inputs is what ``backward`` on rank r
must produce, collectives' backward formulas included. For random global
directions v = (v_0, ..., v_{n-1}), and for directions that move one
rank's inputs only, the check compares

    numeric:  (F(x + eps v) - F(x - eps v)) / (2 eps)     (central difference)
    analytic: sum over r of <dF/dx_r, v_r>                  (VJPs, summed)

Both are all-reduced, so every rank reaches the same verdict (and raises
the same ``GradcheckError``). Inputs that are the same on every rank and
meant as one variable (a replicated parameter) are named in
``replicated``: they move by the same direction on every rank and their
gradient is the one every rank holds.

``replicated_loss=True`` checks the other convention (tensor parallelism):
every rank computes the *same* loss from replicated outputs, and the
objective is that one loss, F = L (the ranks' weights w are then equal too,
and F is the mean of the ranks' identical losses).
"""

from __future__ import annotations

import warnings

from .. import _C
from ..autograd import grad as _grad
from ..autograd.gradcheck import GradcheckError
from ..autograd.grad_mode import no_grad
from ..random import fork_rng
from . import distributed_c10d as dist

__all__ = ["gradcheck"]


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _loss(outputs, weights):
    total = None
    for o, w in zip(outputs, weights):
        if w is None:
            continue
        term = (o * w).sum()
        total = term if total is None else total + term
    return total


def _global(value, group):
    """The sum over ranks of a 0-d float64 tensor, as a Python float."""
    t = value.detach().reshape(1).to(_C.float64).clone()
    dist.all_reduce(t, group=group)
    return t.item()


def gradcheck(
    func,
    inputs,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    n_directions: int = 3,
    per_rank: bool = True,
    replicated=(),
    replicated_loss: bool = False,
    seed: int = 0,
    group=None,
    raise_exception: bool = True,
) -> bool:
    """Checks the gradients of ``func`` across all ranks of ``group``.

    ``func`` takes this rank's ``inputs`` (tensors; those with
    ``requires_grad`` are checked, float64 recommended) and returns a tensor
    or a tuple of tensors; it may call collectives and differentiable
    collectives (``ferrograd.distributed.nn.functional``) and custom
    Functions that do. Every rank must call ``gradcheck`` together.

    Directions: ``n_directions`` random global directions, plus (with
    ``per_rank``) one per rank that moves only that rank's inputs.
    ``replicated``: indices of inputs that hold one variable replicated on
    every rank. ``replicated_loss``: the outputs are replicated and the
    objective is their one loss, not the sum over ranks. Returns True, or raises ``GradcheckError`` on every rank
    (False with ``raise_exception=False``).
    """
    g = dist._group(group)
    if g is None:
        return True
    inputs = _as_tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, _C.Tensor) and x.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    for i in diff:
        if inputs[i].dtype != _C.float64:
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point. "
                "The check is likely to fail for lack of precision.",
                stacklevel=2,
            )
    replicated = set(replicated)
    rank, n = g.rank(), g.size()

    # Fixed random weights for the outputs and directions for the inputs,
    # the same on every run; ``replicated`` inputs get one direction for
    # all ranks, the others one per rank.
    with fork_rng():
        outputs = _as_tuple(func(*inputs))
        _C.manual_seed(seed * 7919 + (0 if replicated_loss else 1000003 * (rank + 1)))
        weights = [
            _C.randn(o.shape, dtype=o.dtype)
            if isinstance(o, _C.Tensor) and o.is_floating_point()
            else None
            for o in outputs
        ]
        directions = []
        for d in range(n_directions):
            vs = []
            for i in diff:
                _C.manual_seed(
                    seed * 7919 + 31 * d + 7 * i + (0 if i in replicated else 1000003 * (rank + 1))
                )
                vs.append(_C.randn(inputs[i].shape, dtype=inputs[i].dtype))
            directions.append((f"random direction {d}", vs))
        if per_rank and n > 1:
            for r in range(n):
                vs = []
                for i in diff:
                    _C.manual_seed(seed * 7919 + 97 * r + 7 * i + 5)
                    v = _C.randn(inputs[i].shape, dtype=inputs[i].dtype)
                    vs.append(v if (r == rank and i not in replicated) else v * 0.0)
                directions.append((f"direction moving only rank {g.ranks[r]}'s inputs", vs))

    loss = _loss(outputs, weights)
    if loss is None:
        raise ValueError("gradcheck: func returned no floating point tensor")
    grads = _grad(loss, [inputs[i] for i in diff], allow_unused=True)

    def evaluate(vs, step):
        moved = list(inputs)
        for i, v in zip(diff, vs):
            moved[i] = inputs[i].detach() + v * step
        with no_grad():
            out = _as_tuple(func(*moved))
            value = _loss(out, weights)
        return _global(value, group) / (n if replicated_loss else 1)

    failures = []
    for label, vs in directions:
        local = _C.zeros((), dtype=_C.float64)
        for i, gr, v in zip(diff, grads, vs):
            if gr is None:
                continue
            dot = (gr.to(_C.float64) * v.to(_C.float64)).sum()
            # a replicated input's gradient is held by every rank: count it once
            local = local + (dot * (1.0 / n) if i in replicated else dot)
        analytic = _global(local, group)
        numeric = (evaluate(vs, eps) - evaluate(vs, -eps)) / (2 * eps)
        if abs(analytic - numeric) > atol + rtol * abs(numeric):
            failures.append(f"{label}: numerical {numeric!r}, analytical {analytic!r}")
    if failures:
        if raise_exception:
            raise GradcheckError(
                f"Cross-process gradcheck failed on {n} ranks (global sum of per-rank losses):\n"
                + "\n".join(failures)
            )
        return False
    return True
