"""torch.optim.Adam and AdamW; the rule is `src/optim/adam.rs`."""

from .. import _C
from .optimizer import Optimizer

_HYPER = ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "decoupled_weight_decay")


class Adam(Optimizer):
    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        amsgrad=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
        fused=None,
        decoupled_weight_decay=False,
    ):
        if differentiable:
            raise NotImplementedError("ferrograd: differentiable optimizers are not supported")
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
        )
        super().__init__(params, defaults)

    def _check_group(self, group):
        _C._optim.adam_check(**{k: group[k] for k in _HYPER})

    def _update_group(self, group, params):
        amsgrad = group["amsgrad"]
        for p in params:
            state = self.state[p]
            if not state:
                step, avg, avg_sq, max_sq = _C._optim.adam_init_state(p, amsgrad)
                state.update(step=step, exp_avg=avg, exp_avg_sq=avg_sq)
                if amsgrad:
                    state["max_exp_avg_sq"] = max_sq
        states = [self.state[p] for p in params]
        _C._optim.adam_step(
            params,
            [p.grad for p in params],
            [s["step"] for s in states],
            [s["exp_avg"] for s in states],
            [s["exp_avg_sq"] for s in states],
            [s.get("max_exp_avg_sq") for s in states],
            **{k: group[k] for k in _HYPER},
        )


class AdamW(Adam):
    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=1e-2,
        amsgrad=False,
        *,
        maximize=False,
        foreach=None,
        capturable=False,
        differentiable=False,
        fused=None,
    ):
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )
