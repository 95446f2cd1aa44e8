# ruff: noqa: S102, BLE001, S110 - the interpreter execs generated programs and records every exception
"""Differential fuzzer: random autograd programs run on ferrograd and on torch.

A *program* is a list of steps, each one line (or a ``with`` block) of Python
written against a module named ``torch``: leaves, unary/binary ops with
broadcasting, reductions, views, in-place ops, custom Functions, hooks,
``no_grad`` blocks, ``backward`` and ``autograd.grad``. The same source runs
with ``torch`` bound to ferrograd and to torch (``run_program``); after each
step the interpreter records the exception type (or the state of what the
step made: dtype, shape, values, ``requires_grad``, ``is_leaf``, the
``grad_fn`` class name, ``_version``, strides) and, after in-place ops and
backward calls, the state and ``.grad`` of every tensor alive.
``compare_traces`` reports the first difference. A failing program prints as
the Python it is (``Program.source``), so a mismatch is its own reproducer.

Generation goes through a *chooser* (``int``/``choice``/``chance``): a
``random.Random`` one for the long run (``tools/fuzz_long.py``, fast) or one
drawing from hypothesis (``programs()``), which then shrinks a failing program.
``minimize`` shrinks by deleting steps, without hypothesis.

The generator keeps a model of the shapes and dtypes in the pool so most steps
are valid; it also makes invalid ones on purpose (bad dims, out-of-range
indices, non-broadcastable operands) since exception types are compared too.
Leaf values are small multiples of 1/4 so that sums and products are exact in
float32 and values land exactly on the kinks of abs/relu/clamp/max (ties),
where torch's gradient conventions are tested. Areas left out on purpose:
``scatter_``/``index_put_``/``index_copy_`` with duplicate indices (the result
depends on write order, undefined in torch), ``sort``/``topk`` ties, random
factories and ``empty``.

``KNOWN`` lists the mismatches already reported, each matched narrowly (torch's
message, the op) and each with a strict-xfail test in
``test_fuzz_regressions.py``; when one is fixed, that test XPASSes and the
entry goes.
"""

from __future__ import annotations

import math
import random
import re
import warnings
from dataclasses import dataclass, field, replace

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


class Gen:
    """Builds one program from a chooser, keeping a model of the pool."""

    def __init__(self, ch, smooth=False, max_steps=24):
        self.ch = ch
        self.smooth = smooth
        self.max_steps = max_steps
        self.vars = []
        self.steps = []
        self.n = 0
        self.hooks = 0

    # -- model ------------------------------------------------------------
    def fresh(self):
        name = f"t{self.n}"
        self.n += 1
        return name

    def emit(self, code, outs=(), kind="", op="", full=False, values=None, no_grad=False):
        if no_grad:
            code = "with torch.no_grad():\n    " + code.replace("\n", "\n    ")
            for v in outs:
                v.rg = False
        self.steps.append(Step(code, tuple(v.name for v in outs), kind, op, full, values))
        self.vars.extend(outs)
        return outs

    def pick(self, pred=None, recent=0.6):
        cands = [v for v in self.vars if v.shape is not None and (pred is None or pred(v))]
        if not cands:
            return None
        if self.ch.chance(recent):
            cands = cands[-4:]
        return self.ch.choice(cands)

    def pick_float(self, rg=None):
        v = None
        if not self.smooth and self.ch.chance(0.1):
            v = self.pick()
        if v is None:
            v = self.pick(lambda v: v.dtype in FLOATS and (rg is None or v.rg == rg))
        if v is None:
            v = self.leaf()
        return v

    def out(self, shape, dtype, rg, base=None):
        name = self.fresh()
        return Var(name, shape, dtype, rg and dtype in FLOATS, base or name)

    def maybe_no_grad(self):
        return not self.smooth and self.ch.chance(0.08)

    # -- leaves -----------------------------------------------------------
    def rand_shape(self):
        ch = self.ch
        if self.smooth:
            nd = ch.choice([1, 2, 0, 3])
            sizes = [ch.choice([2, 3, 1]) for _ in range(nd)]
        else:
            nd = ch.choice([2, 1, 0, 3, 2, 4])
            sizes = [ch.choice([2, 3, 1, 4, 0]) if ch.chance(0.97) else 0 for _ in range(nd)]
            sizes = [s if s != 0 or ch.chance(0.15) else 2 for s in sizes]
        while numel(sizes) > (12 if self.smooth else 24):
            sizes[sizes.index(max(sizes))] -= 1
        return tuple(sizes)

    def values(self, shape, dtype):
        rng = np.random.default_rng(self.ch.int(0, 2**20))
        if dtype == "int64":
            return rng.integers(-3, 6, size=shape)
        if self.smooth:
            return rng.uniform(-1.5, 1.5, size=shape)
        v = rng.integers(-8, 9, size=shape) / 4.0
        if v.size and self.ch.chance(0.04):
            flat = v.reshape(-1)
            flat[rng.integers(0, flat.size)] = self.ch.choice(
                [float("nan"), float("inf"), -float("inf")]
            )
        return v

    def leaf(self, shape=None, dtype=None, rg=None):
        ch = self.ch
        if shape is None:
            shape = self.rand_shape()
        if dtype is None:
            dtype = (
                "float64"
                if self.smooth
                else ch.choice(["float32", "float64", "int64", "float32", "float64"])
            )
        if rg is None:
            rg = self.smooth or (dtype in FLOATS and ch.chance(0.7))
            if not rg and dtype == "int64" and ch.chance(0.05):
                rg = True  # torch raises: only floating point tensors can require gradients
        v = self.out(shape, dtype, rg)
        dt = f"dtype=torch.{dtype}"
        if numel(shape) == 0:
            code = f"{v.name} = torch.zeros({shape}, {dt}, requires_grad={rg})"
            self.emit(code, [v], "leaf", "zeros")
            return v
        layout = ch.choice(["plain", "plain", "t", "slice", "expand"])
        if layout == "t" and len(shape) >= 2:
            d0, d1 = ch.int(0, len(shape) - 1), ch.int(0, len(shape) - 1)
            base = list(shape)
            base[d0], base[d1] = base[d1], base[d0]
            vals = self.values(tuple(base), dtype)
            code = f"torch.tensor(@V@, {dt}).transpose({d0}, {d1})"
        elif layout == "slice" and len(shape) >= 1:
            base = (2 * shape[0],) + shape[1:]
            vals = self.values(base, dtype)
            code = f"torch.tensor(@V@, {dt})[::2]"
        elif layout == "expand" and any(s > 1 for s in shape):
            base = tuple(1 if s > 1 and ch.chance(0.5) else s for s in shape)
            if base == shape:
                base = tuple(min(s, 1) for s in shape)
            vals = self.values(base, dtype)
            code = f"torch.tensor(@V@, {dt}).expand{shape if len(shape) > 1 else '(' + str(shape[0]) + ')'}"
        else:
            vals = self.values(shape, dtype)
            code = f"torch.tensor(@V@, {dt}, requires_grad={rg})"
            self.emit(f"{v.name} = {code}", [v], "leaf", "tensor", values=vals)
            return v
        if rg:
            code += ".requires_grad_()"
        self.emit(f"{v.name} = {code}", [v], "leaf", layout, values=vals)
        return v

    def partner(self, shape, to=False, float_only=False, base=None):
        """A var broadcastable with ``shape`` (``to``: broadcastable *to* it),
        an existing one or a new leaf; sometimes one sharing ``base``."""
        ch = self.ch

        def ok(v):
            if float_only and v.dtype not in FLOATS:
                return False
            b = broadcast(v.shape, shape)
            return b is not None and (not to or b == shape)

        if base is not None and ch.chance(0.3):
            v = self.pick(lambda v: v.base == base and ok(v), recent=0)
            if v is not None:
                return v
        if ch.chance(0.5):
            v = self.pick(ok, recent=0.3)
            if v is not None:
                return v
        if ch.chance(0.05) and not self.smooth:
            return self.leaf()  # anything, maybe not broadcastable
        nd = ch.int(0, len(shape))
        sub = list(shape[len(shape) - nd :])
        sub = [1 if ch.chance(0.3) else s for s in sub]
        if not to and ch.chance(0.2) and len(sub) < 4:
            sub = [ch.choice([2, 3])] + sub
            if len(sub) <= len(shape):
                sub[0] = shape[len(shape) - len(sub)] if ch.chance(0.5) else 1
        dtype = "float64" if self.smooth else None
        if float_only and dtype is None:
            dtype = ch.choice(["float32", "float64"])
        return self.leaf(tuple(sub), dtype)

    # -- index helpers ----------------------------------------------------
    def dim(self, nd, extra=0):
        """A dim for a tensor of ``nd`` dims (``extra``: unsqueeze's one more),
        rarely out of range."""
        n = max(nd + extra, 1)
        if not self.smooth and self.ch.chance(0.03):
            return self.ch.choice([n, -n - 1])
        return self.ch.int(-n, n - 1)

    def norm_dim(self, d, nd):
        n = max(nd, 1)
        return d % n if -n <= d < n else None

    def basic_index(self, shape):
        """``(index source, result shape)`` for basic indexing."""
        ch = self.ch
        parts, out = [], []
        nidx = ch.int(1, max(len(shape), 1))
        for d in range(min(nidx, len(shape))):
            n = shape[d]
            k = ch.int(0, 5)
            if k == 1 and n > 0:
                i = ch.int(-n, n - 1) if ch.chance(0.97) else n
                parts.append(str(i))
            elif k == 2:
                a, b = ch.int(-n - 1, n + 1), ch.int(-n - 1, n + 1)
                parts.append(f"{a}:{b}")
                out.append(len(range(n)[a:b]))
            elif k == 3:
                parts.append("::2")
                out.append(len(range(n)[::2]))
            elif k == 4:
                a, c = ch.int(0, n), ch.int(1, 3)
                parts.append(f"{a}::{c}")
                out.append(len(range(n)[a::c]))
            elif k == 5:
                parts.append("None")
                out.append(1)
                parts.append(":")
                out.append(n)
            else:
                parts.append(":")
                out.append(n)
        if not shape and ch.chance(0.5):
            parts.append("None")
            out.append(1)
        out += list(shape[min(nidx, len(shape)) :])
        if not parts:
            parts = ["..."]
        return ", ".join(parts), tuple(out)

    def factor_shape(self, n):
        ch = self.ch
        if n == 0:
            return (ch.choice([0, -1]), ch.choice([2, 3]))
        fs = []
        m = n
        for p in (2, 3, 5, 7, 11, 13, 17, 19, 23):
            while m % p == 0:
                fs.append(p)
                m //= p
        if m > 1:
            fs.append(m)
        k = ch.int(1, 3)
        dims = [1] * k
        for f in fs:
            dims[ch.int(0, k - 1)] *= f
        if ch.chance(0.2):
            dims.insert(ch.int(0, len(dims)), 1)
        if ch.chance(0.3):
            dims[ch.int(0, len(dims) - 1)] = -1
        if not self.smooth and ch.chance(0.03):
            dims[0] += 1  # wrong element count
        return tuple(dims)

    @staticmethod
    def resolve(dims, n):
        dims = list(dims)
        if -1 in dims:
            rest = numel([d for d in dims if d != -1])
            if rest == 0 or n % rest:
                return None
            dims[dims.index(-1)] = n // rest
        return tuple(dims) if numel(dims) == n else None

    # -- steps ------------------------------------------------------------
    def g_unary(self):
        ch = self.ch
        a = self.pick_float()
        ng = self.maybe_no_grad()
        k = ch.int(0, 9)
        dtype = a.dtype
        shape = a.shape
        if k <= 3:
            op = ch.choice(SMOOTH_UNARY if self.smooth else UNARY)
            if op == "relu":
                expr = ch.choice(
                    [
                        f"{a.name}.relu()",
                        f"torch.relu({a.name})",
                        f"torch.nn.functional.relu({a.name})",
                    ]
                )
            else:
                expr = f"{a.name}.{op}()" if ch.chance(0.5) else f"torch.{op}({a.name})"
            if dtype not in FLOATS and op not in INT_KEEPS:
                dtype = "float32"
            if dtype == "bool" and op in ("neg",):
                shape = None
        elif k <= 6:
            op = "scalar"
            c = ch.choice(["2", "0.5", "-1.5", "3", "1"])
            expr = ch.choice(
                [
                    f"{a.name} * {c}",
                    f"{a.name} + {c}",
                    f"{c} - {a.name}",
                    f"{a.name} / {c}",
                    f"-{a.name}",
                ]
                + (
                    []
                    if self.smooth
                    else [f"{a.name} ** 2", f"{a.name} ** 3", f"{a.name} ** 0.5", f"{c} / {a.name}"]
                )
            )
            if dtype not in FLOATS and ("." in c or "/" in expr or "0.5" in expr):
                dtype = "float32"
        elif k == 7 and not self.smooth:
            op = "clamp"
            lo, hi = ch.choice(["-0.5", "0", "0.25", "None"]), ch.choice(["1", "0.5", "0", "None"])
            expr = (
                f"{a.name}.clamp(min={lo}, max={hi})"
                if ch.chance(0.7)
                else f"torch.clamp({a.name}, {lo}, {hi})"
            )
        else:
            op = ch.choice(["softmax", "log_softmax", "cumsum"])
            d = self.dim(len(shape))
            expr = f"{a.name}.{op}({d})" if ch.chance(0.7) else f"torch.{op}({a.name}, dim={d})"
            if self.norm_dim(d, len(shape)) is None:
                shape = None
            if dtype not in FLOATS:
                dtype = "int64" if op == "cumsum" else "float32"
        v = self.out(shape, dtype, a.rg)
        self.emit(f"{v.name} = {expr}", [v], "unary", op, no_grad=ng)

    def g_binary(self):
        ch = self.ch
        a = self.pick_float()
        ops = SMOOTH_BINARY if self.smooth else BINARY + ["matmul"]
        op = ch.choice(ops)
        ng = self.maybe_no_grad()
        if op == "matmul":
            if len(a.shape) not in (1, 2) or 0 in a.shape:
                return self.g_unary()
            k = a.shape[-1]
            bshape = ch.choice([(k,), (k, ch.choice([1, 2, 3]))])
            if ch.chance(0.03):
                bshape = (k + 1,)
            b = (
                self.partner(bshape, to=True)
                if False
                else self.leaf(bshape, a.dtype if a.dtype in FLOATS else None)
            )
            shape = a.shape[:-1] + bshape[1:]
            expr = ch.choice([f"{a.name} @ {b.name}", f"torch.matmul({a.name}, {b.name})"])
            if len(a.shape) == 2 and len(bshape) == 2 and ch.chance(0.3):
                expr = f"{a.name}.mm({b.name})"
            v = self.out(shape, promote(a.dtype, b.dtype), a.rg or b.rg)
            self.emit(f"{v.name} = {expr}", [v], "binary", op, no_grad=ng)
            return
        b = self.partner(a.shape, float_only=self.smooth)
        shape = broadcast(a.shape, b.shape)
        dtype = promote(a.dtype, b.dtype)
        x, y = (a.name, b.name) if ch.chance(0.7) else (b.name, a.name)
        sym = {
            "add": "+",
            "sub": "-",
            "mul": "*",
            "div": "/",
            "pow": "**",
            "gt": ">",
            "lt": "<",
            "eq": "==",
        }
        if op == "where":
            expr = f"torch.where({x} > 0, {x}, {y})"
        elif op in sym and ch.chance(0.4):
            expr = f"{x} {sym[op]} {y}"
        elif op in ("add", "sub") and ch.chance(0.3):
            expr = f"torch.{op}({x}, {y}, alpha={ch.choice(['2', '-0.5'])})"
        elif ch.chance(0.5):
            expr = f"{x}.{op}({y})"
        else:
            expr = f"torch.{op}({x}, {y})"
        if op in ("gt", "lt", "eq"):
            dtype = "bool"
        elif op in ("div", "atan2") and dtype not in FLOATS:
            dtype = "float32"
        v = self.out(shape, dtype, a.rg or b.rg)
        self.emit(f"{v.name} = {expr}", [v], "binary", op, no_grad=ng)

    def g_reduce(self):
        ch = self.ch
        a = self.pick_float()
        op = ch.choice(SMOOTH_REDUCE if self.smooth else REDUCE)
        ng = self.maybe_no_grad()
        nd = len(a.shape)
        form = ch.int(0, 2)
        if op == "logsumexp" and form == 0:
            form = 1
        keep = ch.chance(0.3)
        dtype = a.dtype if op in ("sum", "amax", "amin", "prod", "max", "min") else "float32"
        if a.dtype in FLOATS:
            dtype = a.dtype
        if op in ("sum", "prod") and a.dtype == "bool":
            dtype = "int64"
        if form == 0:
            v = self.out((), dtype, a.rg)
            self.emit(f"{v.name} = {a.name}.{op}()", [v], "reduce", op, no_grad=ng)
            return
        if form == 2 and op not in ("max", "min", "prod"):
            k = ch.int(1, max(nd, 1))
            dims = [self.dim(nd) for _ in range(k)]
            nds = [self.norm_dim(d, nd) for d in dims]
            dim_src = "(" + ", ".join(map(str, dims)) + ("," if k == 1 else "") + ")"
        else:
            d = self.dim(nd)
            dims, nds, dim_src = [d], [self.norm_dim(d, nd)], str(d)
        if None in nds or len(set(nds)) != len(nds):
            shape = None
        elif nd == 0:
            shape = ()
        else:
            shape = tuple((1 if keep else None) if i in nds else s for i, s in enumerate(a.shape))
            shape = tuple(s for s in shape if s is not None)
        kw = ", keepdim=True" if keep else ""
        if op in ("max", "min"):
            v = self.out(shape, dtype, a.rg)
            i = self.out(shape, "int64", False)
            expr = (
                f"{a.name}.{op}({dim_src}{kw})"
                if ch.chance(0.6)
                else f"torch.{op}({a.name}, {dim_src}{kw})"
            )
            self.emit(f"{v.name}, {i.name} = {expr}", [v, i], "reduce", op + "_dim", no_grad=ng)
            return
        if op == "norm":
            expr = f"{a.name}.norm(dim={dim_src}{kw})"
        else:
            expr = (
                f"{a.name}.{op}({dim_src}{kw})"
                if ch.chance(0.6)
                else f"torch.{op}({a.name}, {dim_src}{kw})"
            )
        v = self.out(shape, dtype, a.rg)
        self.emit(f"{v.name} = {expr}", [v], "reduce", op, no_grad=ng)

    def g_view(self):
        ch = self.ch
        a = self.pick_float() if ch.chance(0.9) else (self.pick() or self.leaf())
        ng = self.maybe_no_grad()
        s, nd = a.shape, len(a.shape)
        ops = [
            "view", "reshape", "transpose", "permute", "narrow", "select", "getitem",
            "unsqueeze", "squeeze", "expand", "unbind", "split", "chunk", "flatten",
            "movedim", "t", "diagonal", "detach", "contiguous", "clone", "mT", "index",
        ]  # fmt: skip
        if not self.smooth:
            ops += ["unflatten", "mask"]
        else:
            # finite differences see through detach(), autograd does not
            ops.remove("detach")
        op = ch.choice(ops)
        n = a.name

        shape = None
        if op in ("view", "reshape"):
            dims = self.factor_shape(numel(s))
            shape = self.resolve(dims, numel(s))
            expr = (
                f"{n}.{op}({', '.join(map(str, dims))})" if ch.chance(0.7) else f"{n}.{op}({dims})"
            )
            if op == "reshape" and ch.chance(0.2):
                expr = f"torch.reshape({n}, {dims})"
        elif op == "transpose":
            d0, d1 = self.dim(nd), self.dim(nd)
            expr = f"{n}.transpose({d0}, {d1})"
            if None not in (self.norm_dim(d0, nd), self.norm_dim(d1, nd)) and nd > 0:
                sl = list(s)
                i, j = self.norm_dim(d0, nd), self.norm_dim(d1, nd)
                sl[i], sl[j] = sl[j], sl[i]
                shape = tuple(sl)
            elif nd == 0 and d0 in (0, -1) and d1 in (0, -1):
                shape = ()
        elif op == "permute":
            perm = list(range(nd))
            self.shuffle(perm)
            if perm and ch.chance(0.2):
                perm = [p - nd for p in perm]
            if ch.chance(0.03):
                perm = perm + [nd]  # wrong number of dims
                shape = None
            else:
                shape = tuple(s[p] for p in perm)
            expr = f"{n}.permute({', '.join(map(str, perm))})" if perm else f"{n}.permute()"
            if ch.chance(0.3):
                expr = f"torch.permute({n}, {tuple(perm)})"
        elif op == "narrow" and nd > 0:
            d = self.dim(nd)
            dd = self.norm_dim(d, nd)
            size = s[dd] if dd is not None else 2
            st = ch.int(0, size)
            ln = ch.int(0, size - st) if ch.chance(0.95) else size - st + 1
            expr = f"{n}.narrow({d}, {st}, {ln})"
            if dd is not None and st + ln <= size:
                shape = s[:dd] + (ln,) + s[dd + 1 :]
        elif op == "select" and nd > 0:
            d = self.dim(nd)
            dd = self.norm_dim(d, nd)
            size = s[dd] if dd is not None else 1
            i = ch.int(-size, size - 1) if size > 0 and ch.chance(0.95) else size
            expr = f"{n}.select({d}, {i})"
            if dd is not None and -size <= i < size:
                shape = s[:dd] + s[dd + 1 :]
        elif op == "getitem":
            idx, shape = self.basic_index(s)
            expr = f"{n}[{idx}]"
        elif op == "index" and nd > 0 and s[0] > 0:
            k = ch.int(1, 3)
            idx = [ch.int(-s[0], s[0] - 1) for _ in range(k)]
            expr = f"{n}[{idx}]" if ch.chance(0.5) else f"{n}[torch.tensor({idx})]"
            shape = (k,) + s[1:]
            if ch.chance(0.3):
                expr = f"{n}.index_select(0, torch.tensor({[i % s[0] for i in idx]}))"
        elif op == "mask":
            expr = f"{n}[{n} > 0]"
            shape = None
        elif op == "unsqueeze":
            d = self.dim(nd, 1)
            expr = f"{n}.unsqueeze({d})"
            dd = d % (nd + 1) if -(nd + 1) <= d <= nd else None
            if dd is not None:
                shape = s[:dd] + (1,) + s[dd:]
        elif op == "squeeze":
            if ch.chance(0.5) or nd == 0:
                expr = f"{n}.squeeze()"
                shape = tuple(x for x in s if x != 1)
            else:
                d = self.dim(nd)
                dd = self.norm_dim(d, nd)
                expr = f"{n}.squeeze({d})"
                if dd is not None:
                    shape = s[:dd] + s[dd + 1 :] if s[dd] == 1 else s
        elif op == "expand":
            new = [x if x != 1 or ch.chance(0.5) else ch.choice([2, 3]) for x in s]
            new = [-1 if ch.chance(0.2) else x for x in new]
            if ch.chance(0.3):
                new = [ch.choice([2, 1])] + new
            if ch.chance(0.03) and new and s:
                new[-1] = s[-1] + 1  # not expandable
            expr = f"{n}.expand({', '.join(map(str, new))})" if new else f"{n}.expand(())"
            lead = len(new) - nd
            full = [(s[i - lead] if x == -1 and i >= lead else x) for i, x in enumerate(new)]
            if broadcast(s, tuple(full)) == tuple(full) and -1 not in full:
                shape = tuple(full)
        elif op in ("unbind", "split", "chunk") and nd > 0:
            d = self.dim(nd)
            dd = self.norm_dim(d, nd)
            size = s[dd] if dd is not None else 0
            if op == "unbind":
                expr = f"{n}.unbind({d})"
                cnt = size
                pieces = [None] * size
            elif op == "split":
                k = ch.int(1, 3)
                expr = f"{n}.split({k}, {d})" if ch.chance(0.7) else f"torch.split({n}, {k}, {d})"
                cnt = max(-(-size // k), 1)
                pieces = [min(k, size - i * k) for i in range(cnt)] if size else [0]
                cnt = len(pieces)
            else:
                k = ch.int(1, 3)
                expr = f"{n}.chunk({k}, {d})"
                if size == 0:
                    pieces = [0] * k
                else:
                    per = -(-size // k)
                    pieces = [min(per, size - i * per) for i in range(-(-size // per))]
                cnt = len(pieces)
            if dd is None or cnt == 0 or cnt > 4:
                v = self.out(None, a.dtype, a.rg)
                self.emit(f"{v.name} = {expr}", [v], "view", op, no_grad=ng)
                return
            outs = []
            for p in pieces:
                sh = s[:dd] + s[dd + 1 :] if op == "unbind" else s[:dd] + (p,) + s[dd + 1 :]
                outs.append(self.out(sh, a.dtype, a.rg, a.base))
            lhs = ", ".join(o.name for o in outs) + ("," if len(outs) == 1 else "")
            self.emit(f"{lhs} = {expr}", outs, "view", op, no_grad=ng)
            return
        elif op == "flatten":
            if ch.chance(0.5) or nd < 2:
                expr = f"{n}.flatten()"
                shape = (numel(s),)
            else:
                a0 = ch.int(0, nd - 1)
                a1 = ch.int(a0, nd - 1)
                expr = f"{n}.flatten({a0}, {a1})"
                shape = s[:a0] + (numel(s[a0 : a1 + 1]),) + s[a1 + 1 :]
        elif op == "unflatten" and nd > 0:
            d = ch.int(0, nd - 1)
            dims = self.factor_shape(s[d]) if s[d] else (1, 0)
            r = self.resolve(dims, s[d])
            expr = f"{n}.unflatten({d}, {dims})"
            shape = s[:d] + r + s[d + 1 :] if r else None
        elif op == "movedim" and nd > 0:
            src, dst = ch.int(0, nd - 1), ch.int(0, nd - 1)
            expr = (
                f"{n}.movedim({src}, {dst})"
                if ch.chance(0.7)
                else f"torch.movedim({n}, {src}, {dst})"
            )
            sl = list(s)
            x = sl.pop(src)
            sl.insert(dst, x)
            shape = tuple(sl)
        elif op == "t":
            expr = f"{n}.t()"
            shape = s[::-1] if nd <= 2 else None
        elif op == "mT" and nd >= 2:
            expr = f"{n}.mT"
            shape = s[:-2] + (s[-1], s[-2])
        elif op == "diagonal" and nd >= 2:
            off = ch.choice([0, 0, 1, -1])
            expr = f"{n}.diagonal({off})" if off else f"{n}.diagonal()"
            m = max(min(s[0] + min(off, 0), s[1] - max(off, 0)), 0)
            shape = s[2:] + (m,)
        elif op in ("detach", "contiguous", "clone"):
            expr = f"{n}.{op}()"
            shape = s
        else:
            return self.g_unary()
        rg = a.rg and op != "detach"
        base = a.base if op not in ("clone", "index", "mask") else None
        v = self.out(shape, a.dtype, rg, base)
        self.emit(f"{v.name} = {expr}", [v], "view", op, no_grad=ng)

    def shuffle(self, xs):
        for i in range(len(xs) - 1, 0, -1):
            j = self.ch.int(0, i)
            xs[i], xs[j] = xs[j], xs[i]

    def g_inplace(self):
        ch = self.ch
        if self.smooth:
            a = self.pick(lambda v: not (v.rg and v.name == v.base and self.is_leaf_name(v.name)))
            if a is None:
                return self.g_unary()
        else:
            # not into gradients: whether torch's backward hands out one buffer for two
            # gradients (a cumsum of one element returns its input) is not part of its contract
            a = (
                self.pick(lambda v: v.dtype in FLOATS and not v.grad)
                if ch.chance(0.9)
                else self.pick(lambda v: not v.grad)
            )
            a = a or self.leaf()
        ng = self.maybe_no_grad()
        s, n = a.shape, a.name
        ops = [
            "binary",
            "binary",
            "copy_",
            "unary",
            "setitem",
            "setitem",
            "masked_fill_",
            "index_put_",
            "scatter_",
        ]
        if not self.smooth:
            ops += [ch.choice(["index_add_", "index_fill_", "index_copy_"]), "scatter_add_"]
        op = ch.choice(ops)
        full_base = a.base
        rg = a.rg
        if op == "binary":
            o = ch.choice(
                ["add_", "sub_", "mul_", "div_"] if not self.smooth else ["add_", "sub_", "mul_"]
            )
            if ch.chance(0.3):
                c = ch.choice(["2", "0.5", "-1.5"])
                expr = (
                    f"{n}.{o}({c})"
                    if ch.chance(0.7)
                    else f"{n} { {'add_': '+=', 'sub_': '-=', 'mul_': '*=', 'div_': '/='}[o] } {c}"
                )
            else:
                b = self.partner(s, to=True, float_only=self.smooth, base=a.base)
                rg = rg or b.rg
                if o in ("add_", "sub_") and ch.chance(0.3):
                    expr = f"{n}.{o}({b.name}, alpha=2)"
                elif ch.chance(0.3):
                    expr = f"{n} { {'add_': '+=', 'sub_': '-=', 'mul_': '*=', 'div_': '/='}[o] } {b.name}"
                else:
                    expr = f"{n}.{o}({b.name})"
            op = o
        elif op == "copy_":
            b = self.partner(s, to=True, float_only=self.smooth, base=a.base)
            rg = rg or b.rg
            expr = f"{n}.copy_({b.name})"
        elif op == "unary":
            o = ch.choice(SMOOTH_INPLACE_UNARY if self.smooth else INPLACE_UNARY)
            args = {
                "fill_": ch.choice(["1.5", "0", "-2"]),
                "clamp_": ch.choice(["-0.5, 0.75", "min=0", "max=0.5"]),
            }
            expr = f"{n}.{o}({args.get(o, '')})"
            op = o
            if o == "fill_" and ch.chance(0.2):
                b = self.leaf((), rg=ch.chance(0.5))
                expr = f"{n}.fill_({b.name})"
                rg = rg or b.rg
        elif op == "setitem":
            idx, shape = self.basic_index(s)
            if ch.chance(0.3) and s and s[0] > 0:
                k = ch.int(1, s[0])
                rows = list(range(s[0]))
                self.shuffle(rows)
                idx, shape = str(rows[:k]), (k,) + s[1:]
            if ch.chance(0.4):
                expr = f"{n}[{idx}] = {ch.choice(['0.5', '-1', '2'])}"
            else:
                b = self.partner(shape, to=True, float_only=self.smooth, base=a.base)
                rg = rg or b.rg
                expr = f"{n}[{idx}] = {b.name}"
        elif op == "masked_fill_":
            m = self.partner(s, to=True, base=a.base)
            expr = f"{n}.masked_fill_({m.name} > 0, {ch.choice(['0.5', '-1', '0'])})"
        elif op in ("index_put_", "index_add_", "index_copy_", "index_fill_") and s and s[0] > 0:
            k = ch.int(1, s[0])
            rows = list(range(s[0]))
            self.shuffle(rows)
            rows = rows[:k]
            acc = op == "index_put_" and ch.chance(0.5)
            if acc or op == "index_add_":
                rows = [ch.int(0, s[0] - 1) for _ in range(k)]  # duplicates: summed, defined
            if op == "index_fill_":
                expr = f"{n}.index_fill_(0, torch.tensor({rows}), {ch.choice(['0.5', '-1'])})"
            else:
                b = self.partner((k,) + s[1:], to=op == "index_put_", float_only=True, base=a.base)
                if op != "index_put_" and b.shape != (k,) + s[1:]:
                    b = self.leaf((k,) + s[1:], a.dtype if a.dtype in FLOATS else None)
                rg = rg or b.rg
                if op == "index_put_":
                    expr = f"{n}.index_put_((torch.tensor({rows}),), {b.name}" + (
                        ", accumulate=True)" if acc else ")"
                    )
                else:
                    expr = f"{n}.{op}(0, torch.tensor({rows}), {b.name})"
        elif op in ("scatter_", "scatter_add_") and s and 0 not in s:
            d = ch.int(0, len(s) - 1)
            ish = list(s)
            ish[d] = ch.int(1, s[d])
            ish = tuple(ish)
            cols = []
            for _ in range(numel(ish) // ish[d]):
                rows = list(range(s[d]))
                if op == "scatter_":
                    self.shuffle(rows)  # distinct targets along d: no write-order dependence
                    cols.append(rows[: ish[d]])
                else:
                    cols.append([ch.int(0, s[d] - 1) for _ in range(ish[d])])
            # cols[j] lists the indices along d for the j-th position of the other dims
            idx = np.array(cols, dtype=np.int64).reshape((-1, ish[d]))
            moved = idx.reshape(tuple(x for i, x in enumerate(ish) if i != d) + (ish[d],))
            idx = np.moveaxis(moved, -1, d)
            if op == "scatter_" and ch.chance(0.3):
                expr = (
                    f"{n}.scatter_({d}, torch.tensor({literal(idx)}), {ch.choice(['0.5', '-2'])})"
                )
            else:
                # never a view of the target: torch reads the source while writing (no overlap
                # check for scatter), so the result would depend on its loop order
                b = self.partner(ish, to=False, float_only=True)
                if b.shape != ish or b.base == a.base:
                    b = self.leaf(ish, a.dtype if a.dtype in FLOATS else None)
                rg = rg or b.rg
                expr = f"{n}.{op}({d}, torch.tensor({literal(idx)}), {b.name})"
        else:
            return self.g_unary()
        self.emit(expr, [], "inplace", op, full=True, no_grad=ng)
        if not ng:
            for v in self.vars:
                if v.base == full_base and rg and v.dtype in FLOATS:
                    v.rg = True

    def is_leaf_name(self, name):
        return any(st.outs == (name,) and st.kind == "leaf" for st in self.steps)

    def g_custom(self):
        ch = self.ch
        a = self.pick_float()
        fns = ["Square", "Scale", "TwoOut", "Dirty", "ViewOut", "Square"]
        if not self.smooth:
            fns += ["NonDiff", "TooMany", "SaveOut"]
        f = ch.choice(fns)
        ng = self.maybe_no_grad()
        if f == "TwoOut":
            u, w = self.out(a.shape, a.dtype, a.rg), self.out(a.shape, a.dtype, a.rg)
            self.emit(
                f"{u.name}, {w.name} = TwoOut.apply({a.name})", [u, w], "custom", f, no_grad=ng
            )
            return
        if f == "Dirty":
            if self.smooth and self.is_leaf_name(a.name):
                return self.g_unary()
            v = self.out(a.shape, a.dtype, a.rg, a.base)
            self.emit(f"{v.name} = Dirty.apply({a.name})", [v], "custom", f, full=True, no_grad=ng)
            return
        args = f"{a.name}, {ch.choice(['2.0', '-0.5'])}" if f == "Scale" else a.name
        shape = (numel(a.shape),) if f == "ViewOut" else a.shape
        v = self.out(shape, a.dtype, a.rg and f != "NonDiff", a.base if f == "ViewOut" else None)
        self.emit(f"{v.name} = {f}.apply({args})", [v], "custom", f, no_grad=ng)

    def g_autograd(self):
        """Hooks, retain_grad, requires_grad_, detach_, .grad resets and reads."""
        ch = self.ch
        a = self.pick_float()
        op = ch.choice(
            [
                "hook",
                "hook",
                "retain_grad",
                "requires_grad_",
                "detach_",
                "grad_none",
                "grad_read",
                "data",
            ]
        )
        n = a.name
        if op == "hook":
            self.hooks += 1
            expr = ch.choice(
                [
                    f"{n}.register_hook(lambda g: g * 2)",
                    f"{n}.register_hook(lambda g: None)",
                    f"h{self.hooks} = {n}.register_hook(lambda g: g + 1)\nh{self.hooks}.remove()",
                ]
            )
            self.emit(expr, [], "hook", op)
        elif op == "retain_grad":
            self.emit(f"{n}.retain_grad()", [], "hook", op)
        elif op == "requires_grad_":
            flag = ch.choice(["", "False"])
            self.emit(f"{n}.requires_grad_({flag})", [], "autograd", op, full=True)
            if a.dtype in FLOATS:
                a.rg = flag == "" or a.rg
        elif op == "detach_":
            self.emit(f"{n}.detach_()", [], "autograd", op, full=True)
            a.rg = False
        elif op == "grad_none":
            self.emit(f"{n}.grad = None", [], "autograd", op, full=True)
        elif op == "data":
            v = self.out(a.shape, a.dtype, False, a.base)
            self.emit(f"{v.name} = {n}.data", [v], "autograd", op)
        else:
            v = self.out(a.shape, a.dtype, False)
            v.grad = True
            self.emit(f"{v.name} = {n}.grad", [v], "autograd", op)

    def g_backward(self):
        ch = self.ch
        a = self.pick_float(rg=True) if ch.chance(0.9) else self.pick_float()
        n = a.name
        r = ", retain_graph=True" if ch.chance(0.4) else ""
        k = ch.int(0, 5)
        if k == 0:
            self.emit(f"{n}.sum().backward({r[2:]})", [], "backward", "sum", full=True)
        elif k == 1:
            self.emit(
                f"{n}.backward({'torch.ones_like(' + n + ')' if ch.chance(0.7) else ''}{r})",
                [],
                "backward",
                "ones",
                full=True,
            )
        elif k == 2:
            self.emit(f"({n} * {n}).sum().backward({r[2:]})", [], "backward", "square", full=True)
        else:
            cands = [v for v in self.vars if v.rg and v.shape is not None]
            inputs = []
            for _ in range(ch.int(1, 3)):
                if cands:
                    inputs.append(ch.choice(cands))
            if ch.chance(0.02):
                inputs = []
            cg = ch.chance(0.2)
            kw = (
                r
                + (", create_graph=True" if cg else "")
                + (", allow_unused=True" if ch.chance(0.5) else "")
            )
            outs = [self.out(v.shape, v.dtype, cg) for v in inputs]
            for o in outs:
                o.grad = True
            lhs = ", ".join(o.name for o in outs) + ("," if len(outs) == 1 else "")
            ins = "(" + ", ".join(v.name for v in inputs) + ("," if len(inputs) == 1 else "") + ")"
            if len(inputs) == 1 and ch.chance(0.3):
                ins = inputs[0].name
            call = f"torch.autograd.grad({n}.sum(), {ins}{kw})"
            self.emit(f"{lhs} = {call}" if outs else call, outs, "backward", "grad", full=True)

    # -- whole programs ---------------------------------------------------
    def program(self):
        ch = self.ch
        for _ in range(ch.int(1, 2 if self.smooth else 3)):
            self.leaf()
        nsteps = ch.int(1, self.max_steps)
        gens = [
            (self.g_unary, 5), (self.g_binary, 5), (self.g_reduce, 3), (self.g_view, 6),
            (self.g_inplace, 5), (self.g_custom, 2), (self.leaf, 2),
        ]  # fmt: skip
        if not self.smooth:
            gens += [(self.g_autograd, 2), (self.g_backward, 2)]
        table = [g for g, w in gens for _ in range(w)]
        while len(self.steps) < nsteps:
            ch.choice(table)()
        if self.smooth:
            self.final_loss()
        elif ch.chance(0.7):
            self.g_backward()
        return Program(self.steps, self.smooth)

    def final_loss(self):
        """The one backward of a smooth program: the loss is a weighted sum
        of every var that requires grad (weights drawn, so that gradients
        have no symmetric zeros); a term whose var was never bound is
        skipped (its step raises NameError, the same on every run)."""
        rng = np.random.default_rng(self.ch.int(0, 2**20))
        self.steps.append(
            Step("loss = torch.zeros((), dtype=torch.float64)", ("loss",), "loss", "loss")
        )
        for v in self.vars:
            if v.rg and v.dtype in FLOATS and v.shape is not None:
                w = rng.uniform(0.5, 1.5, size=v.shape)
                code = f"loss = loss + ({v.name} * torch.tensor(@V@, dtype=torch.float64)).sum()"
                self.steps.append(Step(code, ("loss",), "loss", "loss", values=w))
        self.steps.append(Step("loss.backward()", (), "backward", "loss", full=True))


def random_program(seed, smooth=False, max_steps=24):
    return Gen(RandomChooser(seed), smooth, max_steps).program()


def programs(smooth=False, max_steps=24):
    """Hypothesis strategy of programs."""
    from hypothesis import strategies as st

    @st.composite
    def build(draw):
        return Gen(DrawChooser(draw), smooth, max_steps).program()

    return build()


# ---------------------------------------------------------------------------
# custom Functions, written once for both libraries


def make_functions(lib):
    Function = lib.autograd.Function

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    class Scale(Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    class TwoOut(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2, x.sin()

        @staticmethod
        def backward(ctx, ga, gb):
            (x,) = ctx.saved_tensors
            return ga * 2 + gb * x.cos()

    class Dirty(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(3)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    class ViewOut(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.shape = x.shape
            return x.view(-1)

        @staticmethod
        def backward(ctx, g):
            return g.reshape(ctx.shape)

    class NonDiff(Function):
        @staticmethod
        def forward(ctx, x):
            out = x.floor()
            ctx.mark_non_differentiable(out)
            return out

        @staticmethod
        def backward(ctx, g):
            return None

    class TooMany(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    class SaveOut(Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    return {
        "Square": Square, "Scale": Scale, "TwoOut": TwoOut, "Dirty": Dirty, "ViewOut": ViewOut,
        "NonDiff": NonDiff, "TooMany": TooMany, "SaveOut": SaveOut,
    }  # fmt: skip


# ---------------------------------------------------------------------------
# the interpreter

_CODE = {}


def _compile(src):
    c = _CODE.get(src)
    if c is None:
        c = compile(src, "<fuzz>", "exec")
        if len(_CODE) > 20000:
            _CODE.clear()
        _CODE[src] = c
    return c


_FUNCS = {}


def _functions(lib):
    f = _FUNCS.get(lib.__name__)
    if f is None:
        f = _FUNCS[lib.__name__] = make_functions(lib)
    return f


def _dtype(t):
    return str(t.dtype).rsplit(".", 1)[-1]


def _is_leaf(t):
    """``t.is_leaf``; like ``grad_fn`` it raises (on both libraries) for a
    multi-output view whose base was modified in place."""
    try:
        return t.is_leaf
    except Exception as e:
        return f"<raises {type(e).__name__}>"


def tensor_state(lib, t, with_grad=False, grad=False, v0=0, stride=True):
    """What is compared of a value a step made. ``_version`` is counted from
    ``v0``, the version the tensor had when the program bound it: the count
    an op's fresh output starts at is torch's business (a 1-d matmul squeezes
    its result in place), the bumps after it are not. ``grad``: a gradient,
    whose version and graph (create_graph) depend on how the backward
    formulas are written, so only its values, dtype, shape and flags count."""
    if t is None:
        return None
    if isinstance(t, (tuple, list)):
        return tuple(tensor_state(lib, x, with_grad, grad) for x in t)
    if not isinstance(t, lib.Tensor):
        return ("py", type(t).__name__, t if isinstance(t, (int, float, bool, str)) else repr(t))
    dtype = _dtype(t)
    shape = tuple(t.shape)
    vals = np.asarray(t.detach().tolist(), dtype=np.float64 if dtype in FLOATS else None)
    if numel(shape) > 0 and stride:
        stride = tuple(st if sz > 1 else None for st, sz in zip(t.stride(), shape))
    else:
        stride = None
    try:
        gf = t.grad_fn
    except Exception as e:  # a restricted view (multi-output, no_grad) whose base was modified
        gf = None
        gf_err = f"<raises {type(e).__name__}>"
    else:
        gf_err = None
    st = {
        "dtype": dtype,
        "shape": shape,
        "values": vals,
        "requires_grad": t.requires_grad,
        "is_leaf": _is_leaf(t),
        "grad_fn": gf_err or (None if gf is None else "<graph>" if grad else type(gf).__name__),
        "_version": None if grad else t._version - v0,
        "stride": stride,
    }
    if with_grad:
        st["grad"] = tensor_state(lib, t.grad, grad=True)
    return st


@dataclass
class Record:
    status: str  # ok / raise / skip (a name it needs was never bound)
    error: str = ""  # exception type name
    message: str = ""
    states: dict = field(default_factory=dict)
    atomic: str = ""  # after a raise: what the failed step changed, if anything


def _tensors(lib, ns):
    return {k: v for k, v in ns.items() if k[:1] == "t" and isinstance(v, lib.Tensor)}


def _snapshot(lib, ns):
    return {
        k: (_dtype(v), tuple(v.shape), np.asarray(v.detach().tolist()), v._version)
        for k, v in _tensors(lib, ns).items()
    }


def _changed(before, after):
    for k, (dt, sh, vals, ver) in before.items():
        if k not in after:
            continue
        dt2, sh2, vals2, ver2 = after[k]
        if sh != sh2 or dt != dt2 or ver != ver2 or not np.array_equal(vals, vals2, equal_nan=True):
            return f"{k} changed (version {ver} -> {ver2})"
    return ""


def run_program(lib, program, check_atomic=False):
    """Runs ``program`` with ``torch`` bound to ``lib``; returns one Record per step."""
    ns = {"torch": lib, **_functions(lib)}
    records = []
    grads = set()  # names bound to gradients
    returned = (
        set()
    )  # names bound by autograd.grad: torch returns what the backward formulas made, any layout
    v0 = {}  # name -> _version when bound
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in program.steps:
            before = _snapshot(lib, ns) if check_atomic and step.kind != "custom" else None
            try:
                exec(_compile(step.text()), ns)
            except NameError as e:
                records.append(Record("skip", "NameError", str(e)))
                continue
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:
                rec = Record("raise", type(e).__name__, str(e).split("\n")[0][:300])
                if before is not None and step.kind != "backward":
                    rec.atomic = _changed(before, _snapshot(lib, ns))
                records.append(rec)
                continue
            rec = Record("ok")
            if step.op in ("grad", "grad_read"):
                grads.update(step.outs)
            if step.op == "grad":
                returned.update(step.outs)
            try:
                for name in step.outs:
                    t = ns.get(name)
                    if name not in v0 and isinstance(t, lib.Tensor):
                        v0[name] = t._version
                    rec.states[name] = tensor_state(
                        lib, t, False, name in grads, v0.get(name, 0), name not in returned
                    )
                if step.full:
                    for name, t in _tensors(lib, ns).items():
                        rec.states[name] = tensor_state(
                            lib, t, True, name in grads, v0.get(name, 0), name not in returned
                        )
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:
                rec = Record("raise", "state:" + type(e).__name__, str(e).split("\n")[0][:300])
            records.append(rec)
    return records


# ---------------------------------------------------------------------------
# comparing

TOL = {"float32": (2e-4, 2e-5), "float64": (1e-9, 1e-11)}


def _close(a, b, dtype, f64_only=False):
    if a.shape != b.shape:
        return False
    if dtype not in TOL:
        return np.array_equal(a, b)
    # a float64 value computed from float32 ones carries float32 rounding
    rtol, atol = TOL[dtype if f64_only else "float32"]
    fin = np.abs(b[np.isfinite(b)])
    scale = max(1.0, float(fin.max())) if fin.size else 1.0
    return bool(np.allclose(a, b, rtol=rtol, atol=atol * scale * 10, equal_nan=True))


FIELDS = (
    "dtype",
    "shape",
    "values",
    "requires_grad",
    "is_leaf",
    "grad_fn",
    "_version",
    "stride",
    "grad",
)


def diff_states(a, b, path="", f64=False):
    """Yields every difference between two states as ``(path, a, b)``
    (``f64``: the program has no float32, so float64 tolerances apply)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for f in FIELDS:
            x, y = a.get(f), b.get(f)
            p = f"{path}.{f}"
            if f == "values":
                if a["dtype"] == b["dtype"] and not _close(x, y, a["dtype"], f64):
                    yield (p, _short(x), _short(y))
            elif f == "grad":
                yield from diff_states(x, y, p, f64)
            elif x != y:
                yield (p, x, y)
                if f == "shape":
                    return
        return
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and a[:1] != ("py",):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from diff_states(x, y, f"{path}[{i}]", f64)
        return
    if isinstance(a, tuple) and isinstance(b, tuple) and a[:2] == b[:2] == ("py", "float"):
        if not _close(np.array(a[2]), np.array(b[2]), "float32"):
            yield (path, a, b)
        return
    same = type(a) is type(b) and not isinstance(a, dict) and bool(a == b)
    if not same:
        yield (path, _short(a), _short(b))


def _short(x):
    if isinstance(x, np.ndarray):
        return np.array2string(x, precision=6, threshold=20)
    if isinstance(x, dict):
        return {
            k: _short(v)
            for k, v in x.items()
            if k in ("dtype", "shape", "grad_fn", "requires_grad")
        }
    return x


@dataclass
class Mismatch:
    step: int
    code: str
    kind: str
    op: str
    what: str  # exception / values / grad_fn / ...
    ferrograd: object
    torch: object
    torch_message: str = ""
    ferrograd_message: str = ""
    path: str = ""  # which tensor and field: 't3.grad_fn', 't1.grad.values'
    after_failed_backward: bool = False  # a backward call raised earlier (on both)
    dtype: str = ""  # of the tensor that differs

    @property
    def category(self):
        return f"{self.kind}:{self.op}:{self.what}"

    def __str__(self):
        where = f" ({self.path})" if self.path else ""
        s = f"step {self.step} `{self.code}`: {self.what}{where}: ferrograd {self.ferrograd!r} vs torch {self.torch!r}"
        if self.torch_message or self.ferrograd_message:
            s += f"\n  torch says: {self.torch_message}\n  ferrograd says: {self.ferrograd_message}"
        return s


def _has_float32(records):
    """Whether any tensor state recorded in ``records`` is float32."""

    def walk(st):
        if isinstance(st, dict):
            return st.get("dtype") == "float32" or walk(st.get("grad"))
        if isinstance(st, tuple):
            return any(walk(x) for x in st)
        return False

    return any(walk(st) for r in records if r.status == "ok" for st in r.states.values())


def all_mismatches(program, fe, th):
    """Yields the differences between ferrograd's and torch's records, in
    program order (after an exception mismatch the runs have diverged, so
    nothing later is compared)."""
    # float64 tolerances only when no float32 value is involved (an integer
    # operand of a float op computes in float32 too)
    f64 = "float32" not in program.source() and not _has_float32(th)
    failed = False
    for i, (step, a, b) in enumerate(zip(program.steps, fe, th)):
        if a.status != b.status or a.error != b.error:
            ea = a.error if a.status != "ok" else "no error"
            eb = b.error if b.status != "ok" else "no error"
            yield Mismatch(
                i, step.text(), step.kind, step.op, "exception", ea, eb, b.message, a.message
            )
            return
        if a.status != "ok":
            failed = failed or (step.kind == "backward" and a.status == "raise")
            continue
        for name in b.states:
            if name not in a.states:
                yield Mismatch(i, step.text(), step.kind, step.op, "missing", None, name)
                continue
            for path, x, y in diff_states(a.states[name], b.states[name], name, f64):
                what = path.split(".", 1)[1] if "." in path else path
                what = what.split("[")[0]
                dt = b.states[name].get("dtype", "") if isinstance(b.states[name], dict) else ""
                yield Mismatch(
                    i,
                    step.text(),
                    step.kind,
                    step.op,
                    what,
                    x,
                    y,
                    path=path,
                    after_failed_backward=failed,
                    dtype=dt,
                )


# ---------------------------------------------------------------------------
# known, reported mismatches (each one a strict xfail in test_fuzz_regressions.py)


@dataclass
class Known:
    name: str
    reason: str
    match: object  # (program, mismatch) -> bool
    cosmetic: bool = False  # only a name differs: keep comparing past it

    def __call__(self, program, m):
        try:
            return bool(self.match(program, m))
        except Exception:
            return False


OVERLAP = r"refer to a single memory location|refers to a single memory location|overlap"


def _torch_raised(pattern):
    rx = re.compile(pattern)
    return lambda p, m: (
        m.what == "exception" and m.ferrograd == "no error" and bool(rx.search(m.torch_message))
    )


def _ferrograd_raised(pattern):
    rx = re.compile(pattern)
    return lambda p, m: (
        m.what == "exception" and m.torch == "no error" and bool(rx.search(m.ferrograd_message))
    )


def _target(m):
    """The tensor an in-place step writes: ``t3`` of ``t3.add_(...)``/``t3[...] = ...``."""
    return re.split(r"[.\[ ]", m.code.split("\n")[-1].strip(), maxsplit=1)[0]


_VIEWS = (
    r"view|reshape|transpose|permute|narrow|select|unsqueeze|squeeze|expand|flatten|movedim|t|"
    r"diagonal|mT|unflatten|detach|data|chunk|split|unbind|requires_grad_|view_as|expand_as"
)
# `t3 = t2.view(..)`, `t3 = t2[..]` or `t3 = torch.permute(t2, ..)`: group 1 or 2 is t2
_VIEW_RHS = re.compile(
    rf"^(?:(t\d+)(?:\.(?:{_VIEWS})\b|\[(?!torch\.tensor|\[))|torch\.(?:{_VIEWS})\((t\d+)\b)"
)


def _memory_root(src, name):
    """The tensor whose memory ``name`` views, following view assignments
    (``t2 = t0.transpose(..)``, ``t3 = t2[::2]``) back through the program."""
    defs = {}
    for line in src.split("\n"):
        # `t2 = ...`, and the outputs of a multi-output view `t3, t4 = t1.chunk(2)`
        m = re.match(r"^((?:t\d+, )*t\d+),? = (.*)$", line.strip())
        if m:
            for out in m.group(1).split(", "):
                defs[out] = m.group(2)
    seen = set()
    while name in defs and name not in seen:
        seen.add(name)
        m = _VIEW_RHS.match(defs[name])
        if not m:
            break
        name = m.group(1) or m.group(2)
    return name


def _inplace_on_own_memory(p, m):
    """An in-place op (or setitem) whose operand views the target's memory
    with other strides: where torch's overlap check cannot decide (its
    ``MemOverlapStatus::TooHard``: neither layout dense) it lets the op run,
    and the result depends on the order its loop visits elements;
    ferrograd reads the operand before writing (as if it were a copy)."""
    if m.kind != "inplace" or not m.what.startswith("values"):
        return False
    step = m.code.split("\n")[-1].strip()
    target = _target(m)
    operands = set(re.findall(r"\b(t\d+)\b", step)) - {target}
    src = p.source()
    root = _memory_root(src, target)
    return any(_memory_root(src, o) == root for o in operands)


# (ferrograd's node name, torch's) for the same op: torch names the overload
GRAD_FN_NAMES = {
    ("CloneBackward0", "CopyBackwards"),  # copy_
    ("CopySlices", "FillBackward3"),  # x[:] = scalar over the whole tensor
    ("CopySlices", "CopyBackwards"),  # x[:] = y over the whole tensor
}


def _grad_fn_name(p, m):
    if m.what != "grad_fn":
        return False
    # an in-place op with a wider other operand: ferrograd computes, then casts back (one more node)
    return (m.ferrograd, m.torch) in GRAD_FN_NAMES or (
        m.ferrograd == "ToCopyBackward0" and m.torch != m.ferrograd
    )


KNOWN = [
    Known(
        "restricted_view_base_modified",
        "reading a restricted view (multi-output, no_grad, custom Function) after its base was modified in place: torch raises RuntimeError",
        _torch_raised(r"its base or another view of its base has been modified inplace"),
    ),
    Known(
        "restricted_view_error_order",
        "an op with a bad argument on such a restricted view: torch raises the view's error (while collecting "
        "the op's edges, before its kernel checks anything), ferrograd the argument's (its ops record after checking)",
        lambda p, m: (
            m.what == "exception"
            and m.ferrograd != "no error"
            and "its base or another view of its base has been modified inplace" in m.torch_message
        ),
    ),
    Known(
        "binary_view_error_order",
        "the same for a binary/ternary op (add, mul, where, pow, maximum, clamp, ...) with non-broadcastable "
        "operands: ferrograd's broadcast check runs before the view's (src/ops/arith.rs, pointwise.rs need "
        "autograd::check_history_first before it)",
        lambda p, m: (
            m.what == "exception"
            and m.kind in ("binary", "inplace")
            and m.ferrograd != "no error"
            and "its base or another view of its base has been modified inplace" in m.torch_message
        ),
    ),
    Known(
        "index_put_expanded_recorded",
        "index_put_ (accumulate) into an expanded tensor while recording: torch writes the indexed elements "
        "(a deprecation warning), ferrograd's recorded in-place path writes a whole result and refuses the "
        "expanded target",
        lambda p, m: (
            m.what == "exception"
            and m.op == "index_put_"
            and m.torch == "no error"
            and "more than one element of the written-to tensor" in m.ferrograd_message
        ),
    ),
    # -- being fixed now (overlap checks, view + in-place rules, max with NaN, unflatten, grad's inputs)
    Known(
        "overlap",
        "in-place write overlapping an input or itself: torch raises RuntimeError",
        _torch_raised(OVERLAP),
    ),
    Known(
        "overlap_too_strict",
        "fill_/zero_ on an expanded tensor, x[None] = x: torch allows them, ferrograd raises the overlap error",
        lambda p, m: _ferrograd_raised(OVERLAP)(p, m),
    ),
    Known(
        "multi_output_view_inplace",
        "in-place on a view returned by unbind/split/chunk: torch raises RuntimeError",
        _torch_raised(r"output of a function that returns multiple views"),
    ),
    Known(
        "no_grad_view_inplace",
        "in-place with grad mode on a view made under no_grad: torch raises RuntimeError",
        _torch_raised(
            r"was created in no_grad mode|created inside a custom Function|in inference mode"
        ),
    ),
    Known(
        "no_grad_view_requires_grad",
        "a view made under no_grad of a tensor that requires grad: torch says requires_grad=True",
        lambda p, m: (
            (
                (m.kind == "view" or m.op == "ViewOut")
                and m.what == "requires_grad"
                and m.code.startswith("with torch.no_grad()")
            )
            or (
                m.what == "exception"
                and "can't retain_grad" in m.ferrograd_message
                and "no_grad" in p.source()
            )
        ),
    ),
    Known(
        "unflatten_missing",
        "Tensor.unflatten is missing",
        lambda p, m: (
            ".unflatten(" in m.code and m.what == "exception" and m.ferrograd == "AttributeError"
        ),
    ),
    Known(
        "grad_empty_inputs",
        "autograd.grad with empty inputs does not raise",
        lambda p, m: "autograd.grad(" in m.code and ", ()" in m.code and m.what == "exception",
    ),
    # -- reported by the fuzzer
    Known(
        "view_regen",
        "after an in-place op on a base or view, the other views keep their old grad_fn/requires_grad "
        "(torch regenerates them: AsStridedBackward0, requires_grad=True)",
        lambda p, m: (
            (m.kind in ("inplace", "custom") or m.op == "requires_grad_")
            and m.what in ("grad_fn", "requires_grad", "is_leaf")
            and (
                m.torch == "AsStridedBackward0"
                or (m.what != "grad_fn" and m.path.split(".")[0] != _target(m))
            )
        ),
    ),
    Known(
        "flatten_returns_self",
        "flatten() of a 0-d/1-d tensor: torch returns the tensor itself (a leaf), ferrograd a ViewBackward0 view",
        lambda p, m: (
            (m.op == "flatten" and m.what in ("is_leaf", "grad_fn"))
            or (m.what.startswith("grad") and ".flatten()" in p.source())
            # a new view reads its input's grad_fn, which raises for a stale restricted view
            or (m.op == "flatten" and m.what == "exception" and m.torch == "no error")
        ),
    ),
    Known(
        "transpose_0d_panic",
        "t()/transpose(0, 0) of a 0-d tensor panics (torch returns the 0-d tensor)",
        lambda p, m: (
            m.what == "exception" and m.ferrograd == "PanicException" and m.op in ("t", "transpose")
        ),
    ),
    Known(
        "inplace_drops_requires_grad",
        "copy_/fill_/zero_ into a tensor that requires grad: ferrograd drops requires_grad (and fill_(t) t's gradient)",
        lambda p, m: (
            m.kind == "inplace"
            and m.what in ("requires_grad", "grad_fn", "is_leaf")
            and m.path.split(".")[0] == _target(m)
            and (m.op in ("copy_", "fill_", "zero_") or m.ferrograd is False)
        ),
    ),
    Known(
        "nonfloat_target_requires_grad",
        "writing a float that requires grad into an int64 (torch: requires_grad=True, a quirk) or bool tensor "
        "(ferrograd: requires_grad=True)",
        lambda p, m: m.kind == "inplace" and m.what == "requires_grad" and m.dtype not in FLOATS,
    ),
    Known(
        "dirty_view_of_leaf",
        "a custom Function's mark_dirty on a view of a leaf that requires grad: torch raises RuntimeError",
        lambda p, m: m.op == "Dirty" and _torch_raised(r"view of a leaf Variable")(p, m),
    ),
    Known(
        "dirty_version",
        "mark_dirty: torch bumps the input's _version once more after the forward (2 for one in-place op)",
        lambda p, m: m.what == "_version" and any(s.op == "Dirty" for s in p.steps[: m.step + 1]),
    ),
    Known(
        "requires_grad_false_after_use",
        "leaf.requires_grad_(False)/detach_() after it was used: torch's backward leaves its .grad alone",
        lambda p, m: (
            m.what == "grad"
            and ("requires_grad_(False)" in p.source() or ".detach_()" in p.source())
        ),
    ),
    Known(
        "permute_wrong_len",
        "permute with the wrong number of dims: torch raises RuntimeError, ferrograd IndexError",
        lambda p, m: (
            m.what == "exception"
            and m.op == "permute"
            and m.torch == "RuntimeError"
            and m.ferrograd == "IndexError"
        ),
    ),
    Known(
        "none_argument",
        "an op given None (a .grad that was never set): another exception type than torch's",
        lambda p, m: (
            m.what == "exception"
            and ("'None'" in m.ferrograd_message or "NoneType" in m.torch_message)
        ),
    ),
    Known(
        "contiguous_empty",
        "contiguous() of an empty contiguous tensor: torch returns the tensor itself",
        lambda p, m: m.op == "contiguous" and m.what in ("is_leaf", "grad_fn"),
    ),
    Known(
        "inf_grad_nan",
        "a gradient torch computes as inf comes out NaN (an inf times a zero mask somewhere)",
        lambda p, m: (
            m.what.endswith("values") and "nan" in str(m.ferrograd) and "inf" in str(m.torch)
        ),
    ),
    Known(
        "expanded_grad",
        "a .grad stored expanded (stride 0, e.g. of mean/sum/where); torch's .grad is dense",
        lambda p, m: (
            m.what.endswith("stride") and m.kind == "backward" and 0 in (m.ferrograd or ())
        ),
    ),
    Known(
        "max_nan_grad",
        "gradient of max/maximum/amax with a NaN operand differs",
        lambda p, m: (
            "values" in m.what and "nan" in p.source() and re.search(r"max|min", p.source())
        ),
    ),
    Known(
        "atan2_origin_grad",
        "gradient of atan2 at (0, 0): torch gives 0, ferrograd NaN",
        lambda p, m: "values" in m.what and "atan2" in p.source() and "nan" in str(m.ferrograd),
    ),
    Known(
        "saved_output_modified",
        "an op's saved output modified in place (prod() then x[...] = v): torch's backward raises, ferrograd's does not",
        _torch_raised(r"modified by an inplace operation"),
    ),
    Known(
        "second_backward_lenient",
        "backward through a freed graph (no retain_graph): torch raises RuntimeError in some graphs ferrograd runs",
        _torch_raised(r"backward through the graph a second time"),
    ),
    Known(
        "int_float_alpha",
        "add/sub of integer tensors with a float alpha: torch raises RuntimeError",
        _torch_raised(
            r"For integral input tensors, argument alpha must not be a floating point number"
        ),
    ),
    Known(
        "spurious_view_rebase",
        "in-place on matmul's 1-d result or on detach() of a view: ferrograd rebases it as a view (AsStridedBackward0), "
        "torch records the op (its result is no differentiable view)",
        lambda p, m: (
            m.what == "grad_fn"
            and m.torch != m.ferrograd
            and (
                m.ferrograd == "AsStridedBackward0"
                or (m.ferrograd == "CopySlices" and ".detach()" in p.source())
            )
        ),
    ),
    Known(
        "error_precedence",
        "amax over a repeated dim of an empty tensor: torch reports the empty dim (IndexError) first",
        lambda p, m: (
            m.what == "exception"
            and m.torch == "IndexError"
            and "appears multiple times" in m.ferrograd_message
        ),
    ),
    Known(
        "empty_split_panic",
        "split/chunk of an empty tensor, atan2 backward on empty: a Rust panic ('range start index ... out of range')",
        lambda p, m: (
            m.what == "exception"
            and m.ferrograd in ("PanicException", "RuntimeError")
            and "out of range for slice" in m.ferrograd_message
        ),
    ),
    Known(
        "inplace_on_own_memory",
        "an in-place op whose operand is another view of the written memory, in a layout torch's overlap "
        "check cannot decide (TooHard): torch's result depends on its loop order, ferrograd reads the operand "
        "first; undefined behaviour in torch, not a ferrograd bug",
        _inplace_on_own_memory,
    ),
    Known(
        "failed_backward_partial_grads",
        "a backward that raised (on both) had already accumulated some .grad in torch (its engine ran "
        "AccumulateGrad before the failing node); what a failed backward leaves behind is not specified",
        lambda p, m: m.after_failed_backward and m.what.startswith("grad"),
    ),
    Known(
        "std_zero_grad",
        "gradient of std()/var where the std is 0: torch gives 0, ferrograd NaN",
        lambda p, m: (
            "values" in m.what
            and re.search(r"\.std\(|\.var\(|torch\.std|torch\.var", p.source())
            and "nan" in str(m.ferrograd)
        ),
    ),
    Known(
        "index_output_strides",
        "advanced indexing of a permuted tensor: torch's result keeps the input's memory order, ferrograd's is contiguous",
        lambda p, m: m.what == "stride" and m.op in ("index", "mask"),
    ),
    Known(
        "torch_internal_assert",
        "torch fails an internal assert (a torch bug: e.g. retain_grad() on a custom Function's second "
        "output, then an in-place op on it); ferrograd runs the program",
        lambda p, m: m.what == "exception" and "INTERNAL ASSERT FAILED" in m.torch_message,
    ),
    Known(
        "torch_bool_backward",
        "torch's backward negates a bool operand that needs no gradient (atan2(bool, x): its formula "
        "computes -self for x's gradient) and raises; ferrograd does not touch it",
        lambda p, m: (
            m.what == "exception"
            and m.ferrograd == "no error"
            and m.kind in ("backward", "autograd")
            and "on a bool tensor is not supported" in m.torch_message
        ),
    ),
    Known(
        "float_to_int_nan",
        "a NaN or out-of-range float written into an int64 tensor: undefined behaviour in torch (x86 "
        "gives INT64_MIN), ferrograd converts as Rust's `as` does (NaN to 0, saturating)",
        lambda p, m: (
            m.what.endswith("values")
            and m.dtype == "int64"
            and "-9223372036854775808" in str(m.torch)
        ),
    ),
    Known(
        "grad_fn_names",
        "grad_fn class named after another overload than torch's",
        _grad_fn_name,
        cosmetic=True,
    ),
    Known(
        "index_ops_missing",
        "Tensor.index_add_/index_copy_/index_fill_ are missing",
        lambda p, m: (
            m.op in ("index_add_", "index_copy_", "index_fill_") and m.ferrograd == "AttributeError"
        ),
    ),
    Known(
        "sub_bool",
        "subtraction with a bool tensor: torch raises RuntimeError",
        _torch_raised(r"Subtraction, the `-` operator, with a bool tensor"),
    ),
    Known(
        "permute_no_dims",
        "permute() without dims: torch raises TypeError",
        lambda p, m: (
            m.what == "exception"
            and m.op == "permute"
            and m.torch == "TypeError"
            and "permute()" in m.code
        ),
    ),
    Known(
        "detach_view",
        "detach_() of a view: torch raises RuntimeError",
        _torch_raised(r"Can't detach views in-place"),
    ),
    Known(
        "not_implemented_dtype",
        "an op without a kernel for a dtype: torch raises NotImplementedError, ferrograd RuntimeError",
        lambda p, m: (
            m.what == "exception"
            and m.torch == "NotImplementedError"
            and m.ferrograd == "RuntimeError"
        ),
    ),
]


# fixed meanwhile (their tests in test_fuzz_regressions.py now pass and stay as regressions)
FIXED = {
    "overlap",
    "multi_output_view_inplace",
    "no_grad_view_inplace",
    "unflatten_missing",
    "grad_empty_inputs",
    "overlap_too_strict",
    "no_grad_view_requires_grad",
    "max_nan_grad",
    "view_regen",
    "transpose_0d_panic",
    "inplace_drops_requires_grad",
    "empty_split_panic",
    "permute_wrong_len",
    "atan2_origin_grad",
    "int_float_alpha",
    "std_zero_grad",
    "sub_bool",
    "permute_no_dims",
    "detach_view",
    "restricted_view_base_modified",
    "nonfloat_target_requires_grad",
    "dirty_view_of_leaf",
    "dirty_version",
    "requires_grad_false_after_use",
    "expanded_grad",
    "spurious_view_rebase",
    "none_argument",
    "error_precedence",
    "index_output_strides",
    "index_ops_missing",
    "not_implemented_dtype",
    "flatten_returns_self",
    "contiguous_empty",
    "inf_grad_nan",
    "restricted_view_error_order",
    "binary_view_error_order",
    "index_put_expanded_recorded",
}
KNOWN = [k for k in KNOWN if k.name not in FIXED]


def known(program, m):
    """The KNOWN entry this mismatch falls under, or None."""
    if m is None:
        return None
    for k in KNOWN:
        if k(program, m):
            return k
    return None


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
