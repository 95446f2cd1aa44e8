"""The Optimizer base: parameter groups, per-parameter state, zero_grad,
state_dict and load_state_dict, as in torch.optim.Optimizer."""

import copy
from collections import defaultdict

from .. import Tensor, _C
from ..autograd.grad_mode import enable_grad


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    def __init__(self, params, defaults):
        if defaults.get("differentiable"):
            raise NotImplementedError("ferrograd: differentiable optimizers are not supported")
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of "
                f"Tensors or dicts, but got {params.type()}"
            )
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self):
        return {
            "defaults": self.defaults,
            "state": self.state,
            "param_groups": self.param_groups,
        }

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but "
                "the ordering of tensors in sets will change between runs. Please use a list instead."
            )
        else:
            param_group["params"] = list(params)
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is "
                    + type(param).__name__
                )
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization parameter {name}"
                )
            param_group.setdefault(name, default)
        self._check_group(param_group)
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # The name of the Rust update rule (`_C._optim`) a subclass runs.
    _rule = None
    # The names of a subclass's hyperparameters (its __init__'s arguments but
    # params), space-separated, in the order its param_groups list them.
    _hyperparameters = ""

    def _defaults(self, args):
        """The defaults dict from a subclass __init__'s ``locals()``."""
        return {name: args[name] for name in self._hyperparameters.split()}

    def _check_group(self, group):
        _C._optim.check(self._rule, group)

    def zero_grad(self, set_to_none=True):
        params = [p for group in self.param_groups for p in group["params"]]
        _C._optim.zero_grad(params, set_to_none)

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if params:
                self._update_group(group, params)
        return loss

    def _update_group(self, group, params):
        _C._optim.step(self._rule, params, [self.state[p] for p in params], group)
        for p in params:
            if not self.state[p]:
                del self.state[p]  # rules without state (plain SGD) keep none

    def state_dict(self):
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        # As torch: the groups are copied, the state tensors are taken over.
        groups, saved_groups = self.param_groups, copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        by_index = {
            i: p for g, s in zip(groups, saved_groups) for i, p in zip(s["params"], g["params"])
        }
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k not in by_index:
                state[k] = v
                continue
            p = by_index[k]
            state[p] = {
                key: value.to(dtype=p.dtype)
                if isinstance(value, Tensor) and key != "step" and p.is_floating_point()
                else value
                for key, value in v.items()
            }
        new_groups = []
        for g, s in zip(groups, saved_groups):
            s["params"] = g["params"]
            new_groups.append(s)
        self.__setstate__({"state": state, "param_groups": new_groups})
