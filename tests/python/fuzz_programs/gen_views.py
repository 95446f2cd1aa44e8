"""The generator's view and in-place steps (a mixin of ``Gen``)."""

from __future__ import annotations

import numpy as np

from .model import FLOATS, INPLACE_UNARY, SMOOTH_INPLACE_UNARY, broadcast, literal, numel


class ViewInplaceSteps:
    """``Gen``'s view steps (``g_view``) and in-place steps (``g_inplace``)."""

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
