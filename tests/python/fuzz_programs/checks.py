# ruff: noqa: S102, BLE001, S110 - the interpreter execs generated programs and records every exception
"""A program run on both libraries (``differential``, ``compare``),
``minimize`` (deleting steps) and the finite-difference check of gradients
(ferrograd alone).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from .comparing import all_mismatches
from .interpreter import _compile, _functions, run_program
from .known_mismatches import known


@dataclass
class Outcome:
    mismatch: object = None  # the first mismatch that is not a known cosmetic one
    known: object = None  # the KNOWN entry it falls under, if any
    cosmetic: list = field(default_factory=list)  # known cosmetic ones passed over

    @property
    def new(self):
        return self.mismatch is not None and self.known is None


def compare(program, fe, th):
    out = Outcome()
    for m in all_mismatches(program, fe, th):
        k = known(program, m)
        if k is not None and k.cosmetic:
            out.cosmetic.append(k.name)
            continue
        out.mismatch, out.known = m, k
        break
    return out


def differential(program, ferrograd, torch):
    """Runs both and compares: an ``Outcome``."""
    return compare(program, run_program(ferrograd, program), run_program(torch, program))


def minimize(program, still_fails, max_rounds=6):
    """Shrinks ``program`` by deleting steps while ``still_fails(program)``."""
    steps = list(program.steps)
    for _ in range(max_rounds):
        changed = False
        chunk = max(len(steps) // 2, 1)
        while chunk >= 1:
            i = 0
            while i < len(steps):
                cand = steps[:i] + steps[i + chunk :]
                if cand and still_fails(replace(program, steps=cand)):
                    steps = cand
                    changed = True
                else:
                    i += chunk
            chunk //= 2
        if not changed:
            break
    return replace(program, steps=steps)


# ---------------------------------------------------------------------------
# finite differences (ferrograd alone)


def loss_of(lib, program):
    ns = {"torch": lib, **_functions(lib)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in program.steps:
            if step.kind == "backward":
                break
            try:
                exec(_compile(step.text()), ns)
            except Exception:
                pass
    loss = ns.get("loss")
    return None if loss is None else float(loss.item())


def finite_difference_check(lib, program, eps=1e-6):
    """For a smooth program: every leaf's ``.grad`` after its backward against
    central differences of the loss in the leaf's values. Returns a message
    on disagreement, else None."""
    ns = {"torch": lib, **_functions(lib)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in program.steps:
            try:
                exec(_compile(step.text()), ns)
            except Exception:
                if step.kind == "backward":
                    return None  # nothing to check
    leaf_steps = [
        (i, s)
        for i, s in enumerate(program.steps)
        if s.kind == "leaf"
        and s.values is not None
        and s.values.dtype == np.float64
        and s.outs[0] in ns
    ]
    for i, s in leaf_steps:
        t = ns[s.outs[0]]
        if not (isinstance(t, lib.Tensor) and t.is_leaf and t.requires_grad):
            continue
        g = t.grad
        ga = np.zeros(tuple(t.shape)) if g is None else np.asarray(g.tolist(), dtype=np.float64)
        # the leaf's own values live in the step's base array, maybe transposed/sliced/expanded
        base = s.values
        num = np.zeros(base.shape)
        for j in range(base.size):
            vals = []
            for sign in (1, -1):
                v = base.copy()
                v.reshape(-1)[j] += sign * eps
                steps = list(program.steps)
                steps[i] = replace(s, values=v)
                vals.append(loss_of(lib, replace(program, steps=steps)))
            if None in vals:
                return None
            num.reshape(-1)[j] = (vals[0] - vals[1]) / (2 * eps)
        # map the leaf's gradient back onto the base array's elements
        probe = lib.tensor(
            np.arange(base.size, dtype=np.float64).reshape(base.shape).tolist(), dtype=lib.float64
        )
        rest = s.code.split("@V@", 1)[1]
        layout = (
            ""
            if "requires_grad=" in rest
            else rest.split(")", 1)[1].replace(".requires_grad_()", "")
        )
        view = eval("probe" + layout, {"probe": probe, "torch": lib}) if layout else probe
        pos = np.asarray(view.tolist()).astype(np.int64)
        ana = np.zeros(base.size)
        np.add.at(ana, pos.reshape(-1), ga.reshape(-1))
        if not np.allclose(ana, num.reshape(-1), rtol=1e-5, atol=1e-6):
            return f"{s.outs[0]}: autograd {ana} vs finite differences {num.reshape(-1)}"
    return None
