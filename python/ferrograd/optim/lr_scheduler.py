"""torch.optim.lr_scheduler: StepLR, MultiStepLR, ExponentialLR,
CosineAnnealingLR, LinearLR, ConstantLR, LambdaLR, MultiplicativeLR and
ReduceLROnPlateau. The classes keep torch's bookkeeping (`last_epoch`,
`base_lrs`, `get_last_lr()`, `state_dict()`); every rate is computed by the
Rust rules of `src/optim/lr_schedule.rs`."""

import types
import warnings

from .. import _C
from .optimizer import Optimizer


class LRScheduler:
    _kind = None
    # The attributes that are the schedule's hyper-parameters.
    _hyper_names = ()

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        _C._optim.schedule_check(self._kind, self._hyper())  # before any change
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        "resuming scheduler with last_epoch >= 0."
                    )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self.step()

    def _store(self, args):
        """Sets the hyper-parameters from ``args``, the ``locals()`` of a
        subclass's ``__init__``."""
        for name in self._hyper_names:
            setattr(self, name, args[name])

    def _hyper(self):
        return {name: getattr(self, name) for name in self._hyper_names}

    def _factors(self):
        return [None] * len(self.optimizer.param_groups)

    def get_lr(self):
        hyper = self._hyper()
        return [
            _C._optim.next_lr(
                self._kind, hyper, self.last_epoch, self._step_count, group["lr"], base, factor
            )
            for group, base, factor in zip(
                self.optimizer.param_groups, self.base_lrs, self._factors()
            )
        ]

    def step(self, epoch=None):
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
        else:
            warnings.warn(
                "The epoch parameter in `scheduler.step()` was not necessary and is being "
                "deprecated where possible.",
                UserWarning,
                stacklevel=2,
            )
            self.last_epoch = epoch
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self):
        return self._last_lr

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


_LRScheduler = LRScheduler


class StepLR(LRScheduler):
    _kind = "step"
    _hyper_names = ("step_size", "gamma")

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self._store(locals())
        super().__init__(optimizer, last_epoch)


class MultiStepLR(LRScheduler):
    _kind = "multistep"
    _hyper_names = ("milestones", "gamma")

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        milestones = sorted(milestones)
        self._store(locals())
        super().__init__(optimizer, last_epoch)


class ExponentialLR(LRScheduler):
    _kind = "exponential"
    _hyper_names = ("gamma",)

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self._store(locals())
        super().__init__(optimizer, last_epoch)


class CosineAnnealingLR(LRScheduler):
    _kind = "cosine"
    _hyper_names = ("T_max", "eta_min")

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self._store(locals())
        super().__init__(optimizer, last_epoch)


class LinearLR(LRScheduler):
    _kind = "linear"
    _hyper_names = ("start_factor", "end_factor", "total_iters")

    def __init__(
        self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1
    ):
        self._store(locals())
        super().__init__(optimizer, last_epoch)


class ConstantLR(LRScheduler):
    _kind = "constant"
    _hyper_names = ("factor", "total_iters")

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        self._store(locals())
        super().__init__(optimizer, last_epoch)


class _FactorScheduler(LRScheduler):
    """A schedule driven by one user function per group (called here, as
    the user's code; the rate is computed in Rust)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        super().__init__(optimizer, last_epoch)

    def _factors(self):
        return [float(f(self.last_epoch)) for f in self.lr_lambdas]

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(f, types.FunctionType) else f.__dict__.copy()
            for f in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for f, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                f.__dict__.update(saved)


class LambdaLR(_FactorScheduler):
    _kind = "lambda"


class MultiplicativeLR(_FactorScheduler):
    _kind = "multiplicative"

    def _factors(self):
        if self.last_epoch > 0:
            return super()._factors()
        return [1.0] * len(self.lr_lambdas)


class ReduceLROnPlateau(LRScheduler):
    """Cuts the rate by `factor` once the metric given to `step(metric)` has
    not improved for `patience` epochs (then waits `cooldown` epochs)."""

    def __init__(
        self,
        optimizer,
        mode="min",
        factor=0.1,
        patience=10,
        threshold=1e-4,
        threshold_mode="rel",
        cooldown=0,
        min_lr=0,
        eps=1e-8,
    ):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise ValueError(f"expected {n} min_lrs, got {len(min_lr)}")
            self.min_lrs = list(min_lr)
        else:
            self.min_lrs = [min_lr] * n
        self.mode, self.factor, self.patience = mode, factor, patience
        self.threshold, self.threshold_mode = threshold, threshold_mode
        self.cooldown, self.eps = cooldown, eps
        self.cooldown_counter = 0
        self.best = self._rule().worst()
        self.num_bad_epochs = 0
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def _rule(self):
        return _C._optim.Plateau(
            self.mode, self.threshold_mode, self.threshold, self.factor, self.eps
        )

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def step(self, metrics, epoch=None):
        current = float(metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        rule = self._rule()
        if rule.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs):
                new_lr = rule.reduced(float(group["lr"]), min_lr)
                if new_lr is not None:
                    group["lr"] = new_lr
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


__all__ = [
    "LRScheduler",
    "StepLR",
    "MultiStepLR",
    "ExponentialLR",
    "CosineAnnealingLR",
    "LinearLR",
    "ConstantLR",
    "LambdaLR",
    "MultiplicativeLR",
    "ReduceLROnPlateau",
]
