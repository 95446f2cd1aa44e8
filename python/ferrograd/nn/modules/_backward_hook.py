"""Module backward hooks (`register_full_backward_hook` and
`register_full_backward_pre_hook`), as torch builds them: the module's
tensor inputs and outputs pass through identity Functions whose backward
sees the gradients (w.r.t. the outputs, then w.r.t. the inputs) and hands
them to the hooks. The engine does the graph work; this is glue."""

import warnings

from ... import Tensor
from ...autograd import Function
from ..._C import is_grad_enabled


class _Identity(Function):
    @staticmethod
    def forward(ctx, on_grads, *tensors):
        ctx.on_grads = on_grads
        ctx.set_materialize_grads(False)
        outs = tuple(t.view_as(t) for t in tensors)
        ctx.mark_non_differentiable(*(o for o, t in zip(outs, tensors) if not t.requires_grad))
        return outs

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.on_grads(grads))


def _through(on_grads, values, positions):
    """`values` with the tensors at `positions` passed through _Identity."""
    wrapped = _Identity.apply(on_grads, *(values[i] for i in positions))
    if isinstance(wrapped, Tensor):
        wrapped = (wrapped,)
    values = list(values)
    for i, t in zip(positions, wrapped):
        values[i] = t
    return values


def _as_tuple(result, expected, what):
    result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if len(result) != expected:
        raise RuntimeError(
            f"Backward hook returned an invalid number of {what}, got {len(result)}, "
            f"but expected {expected}"
        )
    return result


class BackwardHook:
    """One call's hook state: the gradients w.r.t. the outputs, kept until
    the gradients w.r.t. the inputs arrive."""

    def __init__(self, module, pre_hooks, hooks):
        self.module = module
        self.pre_hooks = list(pre_hooks.values())
        self.hooks = list(hooks.values())
        self.grad_outputs = None
        self.n_inputs = 0
        self.inputs_require_grad = False

    def setup_inputs(self, args):
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.n_inputs = len(positions)
        self.inputs_require_grad = is_grad_enabled() and any(
            args[i].requires_grad for i in positions
        )
        if not self.inputs_require_grad or not self.hooks:
            return args
        return tuple(_through(self._input_grads, args, positions))

    def setup_outputs(self, result):
        single = isinstance(result, Tensor)
        outs = (result,) if single else result
        if not isinstance(outs, tuple) or not is_grad_enabled():
            return result
        positions = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
        if not positions:
            return result
        outs = _through(self._output_grads, outs, positions)
        return outs[0] if single else tuple(outs)

    def _output_grads(self, grads):
        for hook in self.pre_hooks:
            result = hook(self.module, grads)
            if result is not None:
                grads = _as_tuple(result, len(grads), "grad_output")
        self.grad_outputs = grads
        if not self.inputs_require_grad and self.hooks:
            # No gradient flows to the inputs: the hooks run now, without one.
            warnings.warn(
                "Full backward hook is firing when gradients are computed with respect to "
                "module outputs since no inputs require gradients.",
                stacklevel=2,
            )
            for hook in self.hooks:
                if hook(self.module, (None,) * self.n_inputs, grads) is not None:
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient "
                        "should always return None or None for all gradients."
                    )
        return grads

    def _input_grads(self, grads):
        for hook in self.hooks:
            result = hook(self.module, grads, self.grad_outputs)
            if result is not None:
                grads = _as_tuple(result, len(grads), "grad_input")
        return grads
