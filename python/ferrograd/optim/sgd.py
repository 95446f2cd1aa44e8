"""torch.optim.SGD; the rule is `src/optim/sgd.rs`."""

from .optimizer import Optimizer


class SGD(Optimizer):
    _rule = "sgd"
    _hyperparameters = (
        "lr momentum dampening weight_decay nesterov maximize foreach differentiable fused"
    )

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
        super().__init__(params, self._defaults(locals()))
