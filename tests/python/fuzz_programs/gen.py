"""The program generator (``Gen``), ``random_program`` and the hypothesis
strategy ``programs``. The view and in-place steps: gen_views.py.
"""

from __future__ import annotations

import numpy as np

from .gen_views import ViewInplaceSteps
from .model import (
    BINARY,
    FLOATS,
    INT_KEEPS,
    REDUCE,
    SMOOTH_BINARY,
    SMOOTH_REDUCE,
    SMOOTH_UNARY,
    UNARY,
    DrawChooser,
    Program,
    RandomChooser,
    Step,
    Var,
    broadcast,
    numel,
    promote,
)


class Gen(ViewInplaceSteps):
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
