"""torch.optim.Adagrad; the rule is `src/optim/adagrad.rs`. As torch, it
creates every parameter's state when constructed."""

from .. import _C
from .optimizer import Optimizer


class Adagrad(Optimizer):
    _rule = "adagrad"
    _hyperparameters = (
        "lr lr_decay eps weight_decay initial_accumulator_value foreach maximize "
        "differentiable fused"
    )

    def __init__(
        self,
        params,
        lr=1e-2,
        lr_decay=0,
        weight_decay=0,
        initial_accumulator_value=0,
        eps=1e-10,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        fused=None,
    ):
        super().__init__(params, self._defaults(locals()))
        for group in self.param_groups:
            for p in group["params"]:
                _C._optim.init_state(self._rule, p, self.state[p], group)
