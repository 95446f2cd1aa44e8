"""torch.optim.SGD; the rule is `src/optim/sgd.rs`."""

from .. import _C
from .optimizer import Optimizer

_HYPER = ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize")


class SGD(Optimizer):
    def __init__(
        self,
        params,
        lr=1e-3,
        momentum=0,
        dampening=0,
        weight_decay=0,
        nesterov=False,
        *,
        maximize=False,
        foreach=None,
        differentiable=False,
        fused=None,
    ):
        if differentiable:
            raise NotImplementedError("ferrograd: differentiable optimizers are not supported")
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
            foreach=foreach,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)

    def _check_group(self, group):
        _C._optim.sgd_check(**{k: group[k] for k in _HYPER})

    def _update_group(self, group, params):
        momentum = group["momentum"] != 0
        buffers = [self.state[p].get("momentum_buffer") if momentum else None for p in params]
        buffers = _C._optim.sgd_step(
            params, [p.grad for p in params], buffers, **{k: group[k] for k in _HYPER}
        )
        if momentum:
            for p, buf in zip(params, buffers):
                self.state[p]["momentum_buffer"] = buf
