"""The fuzzer's program model: choosers (random or hypothesis), steps,
programs, the generator's view of a variable, shape/dtype rules and the op
lists.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np

FLOATS = ("float32", "float64")

# ---------------------------------------------------------------------------
# choosers


class RandomChooser:
    """Draws from ``random.Random(seed)``: fast, no shrinking."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def int(self, lo, hi):
        return self.r.randint(lo, hi)

    def choice(self, seq):
        return seq[self.r.randrange(len(seq))]

    def chance(self, p):
        return self.r.random() < p


class DrawChooser:
    """Draws through hypothesis's ``draw``; every choice shrinks towards the
    first option, ``chance`` towards False (the optional thing not done)."""

    def __init__(self, draw):
        from hypothesis import strategies as st

        self.draw = draw
        self.st = st

    def int(self, lo, hi):
        return self.draw(self.st.integers(lo, hi))

    def choice(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def chance(self, p):
        return self.int(0, 999) >= round((1 - p) * 1000)


# ---------------------------------------------------------------------------
# programs


@dataclass
class Step:
    code: str  # Python; '@V@' stands for the literal of ``values``
    outs: tuple = ()  # names the step binds
    kind: str = ""  # leaf/unary/binary/reduce/view/inplace/custom/hook/backward/...
    op: str = ""
    full: bool = False  # record every tensor (and its .grad) afterwards
    values: object = None  # numpy array of a leaf's values

    def text(self):
        if self.values is None:
            return self.code
        return self.code.replace("@V@", literal(self.values))


@dataclass
class Program:
    steps: list
    smooth: bool = False  # float64, smooth ops only, one final backward

    def source(self):
        return "\n".join(s.text() for s in self.steps)

    def __repr__(self):
        return "Program(<<<\n" + self.source() + "\n>>>)"


def literal(a):
    a = np.asarray(a)
    if a.ndim == 0:
        v = a.item()
        if isinstance(v, float):
            if math.isnan(v):
                return "float('nan')"
            if math.isinf(v):
                return "float('inf')" if v > 0 else "-float('inf')"
            return repr(v)
        return repr(v)
    return "[" + ", ".join(literal(x) for x in a) + "]"


@dataclass
class Var:
    name: str
    shape: tuple  # None when value dependent
    dtype: str
    rg: bool
    base: str  # name of the root tensor whose memory this one views
    grad: bool = False  # a gradient (from autograd.grad or .grad)


def numel(shape):
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def broadcast(a, b):
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and x != 1 and y != 1:
            return None
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def promote(a, b):
    order = ["bool", "int64", "float32", "float64"]
    return max(a, b, key=order.index)


UNARY = [
    "neg", "exp", "tanh", "sigmoid", "sin", "cos", "abs", "relu", "sqrt", "log",
    "square", "reciprocal", "sign", "floor", "log1p", "expm1", "rsqrt", "erf",
    "atan", "exp2",
]  # fmt: skip
# not sinc: it is 0 at integers only up to rounding, and leaf values hit integers, so
# a mask or sign taken of it would compare rounding (its accuracy is tested elsewhere)
SMOOTH_UNARY = ["neg", "exp", "tanh", "sigmoid", "sin", "cos", "square", "atan", "erf"]
INT_KEEPS = {"neg", "abs", "relu", "square", "sign", "floor"}  # ops that keep an int dtype
BINARY = [
    "add",
    "sub",
    "mul",
    "div",
    "maximum",
    "minimum",
    "pow",
    "atan2",
    "gt",
    "lt",
    "eq",
    "where",
]
SMOOTH_BINARY = ["add", "sub", "mul"]
REDUCE = ["sum", "mean", "amax", "amin", "prod", "max", "min", "norm", "logsumexp", "var", "std"]
SMOOTH_REDUCE = ["sum", "mean", "prod", "logsumexp"]
INPLACE_UNARY = ["zero_", "fill_", "clamp_", "relu_", "neg_", "exp_", "tanh_", "sigmoid_", "abs_"]
SMOOTH_INPLACE_UNARY = ["zero_", "fill_", "neg_", "tanh_", "sigmoid_"]
