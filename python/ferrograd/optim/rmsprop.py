"""torch.optim.RMSprop; the rule is `src/optim/rmsprop.rs`."""

from .optimizer import Optimizer


class RMSprop(Optimizer):
    _rule = "rmsprop"
    _hyperparameters = (
        "lr momentum alpha eps centered weight_decay capturable foreach maximize differentiable"
    )

    def __init__(
        self,
        params,
        lr=1e-2,
        alpha=0.99,
        eps=1e-8,
        weight_decay=0,
        momentum=0,
        centered=False,
        capturable=False,
        foreach=None,
        maximize=False,
        differentiable=False,
    ):
        super().__init__(params, self._defaults(locals()))
