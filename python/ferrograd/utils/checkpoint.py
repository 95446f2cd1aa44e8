"""torch.utils.checkpoint: trade compute for memory by not keeping a
function's intermediate results for the backward pass, and recomputing
them (with the random state the forward saw) when the backward needs them.

- ``use_reentrant=False`` (torch's recommendation): the forward runs with
  saved-tensor hooks that keep only a position for each saved tensor; the
  first unpack reruns the function and hands out the recomputed ones.
- ``use_reentrant=True``: a custom Function whose forward runs without
  grad and whose backward reruns the function and backpropagates through
  it (parameters it uses get their gradients from that inner backward).

Both are bookkeeping around the engine: the saved-tensor hooks and the
custom Function are the engine's own mechanisms."""

import warnings

from .. import Tensor, autograd, random
from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.graph import saved_tensors_hooks


def _detached(args):
    """Tensors detached (keeping requires_grad), everything else as is."""
    return tuple(
        a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a for a in args
    )


class _Rerun:
    """Reruns the function with the random state of the first run."""

    def __init__(self, function, preserve_rng_state):
        self.function = function
        self.rng_state = random.get_rng_state() if preserve_rng_state else None

    def __call__(self, *args, **kwargs):
        with random.fork_rng(enabled=self.rng_state is not None):
            if self.rng_state is not None:
                random.set_rng_state(self.rng_state)
            with enable_grad():
                return self.function(*args, **kwargs)


class CheckpointFunction(autograd.Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.rerun = _Rerun(run_function, preserve_rng_state)
        ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.other_args = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_positions))
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        args = list(ctx.other_args)
        for i, t in zip(ctx.tensor_positions, ctx.saved_tensors):
            args[i] = t
        inputs = _detached(args)
        outputs = ctx.rerun(*inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [
            (o, g)
            for o, g in zip(outputs, grads)
            if isinstance(o, Tensor) and o.requires_grad and g is not None
        ]
        if not pairs:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(a.grad if isinstance(a, Tensor) else None for a in inputs)


def _checkpoint_without_reentrant(function, preserve_rng_state, args, kwargs):
    rerun = _Rerun(function, preserve_rng_state)
    recomputed = []
    done = []
    packed = [0]

    def pack(tensor):
        position = packed[0]
        packed[0] += 1
        return position

    def keep(tensor):
        recomputed.append(tensor)

    def unpack(position):
        if not done:
            with saved_tensors_hooks(keep, lambda _: None):
                rerun(*_detached(args), **kwargs)
            done.append(True)
        if position >= len(recomputed):
            raise RuntimeError(
                "torch.utils.checkpoint: the recomputed forward saved fewer tensors than "
                "the original one; the checkpointed function must be deterministic"
            )
        return recomputed[position]

    with saved_tensors_hooks(pack, unpack):
        return function(*args, **kwargs)


def checkpoint(
    function,
    *args,
    use_reentrant=None,
    preserve_rng_state=True,
    determinism_check="default",
    debug=False,
    early_stop=True,
    context_fn=None,
    **kwargs,
):
    """torch.utils.checkpoint.checkpoint."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "use_reentrant=False is recommended, but if you need to preserve the current "
            "default behavior, you can pass use_reentrant=True.",
            stacklevel=2,
        )
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    return _checkpoint_without_reentrant(function, preserve_rng_state, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Runs a Sequential (or list of modules) in `segments` checkpointed
    chunks; the last chunk runs normally, as in torch."""
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)
    size = len(functions) // segments

    def run(start, end):
        def forward(x):
            for f in functions[start : end + 1]:
                x = f(x)
            return x

        return forward

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, **kwargs)
    return run(end + 1, len(functions) - 1)(input)


__all__ = [
    "checkpoint",
    "checkpoint_sequential",
    "CheckpointFunction",
]
