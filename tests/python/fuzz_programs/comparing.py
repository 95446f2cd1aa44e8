"""Comparing two runs' records: tolerances, ``diff_states`` and
``all_mismatches``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

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
    # an operand of the step, as last recorded, differed within the tolerance
    # (rounding: the kernels' ulps), not bit for bit
    operand_rounding: bool = False

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


def _rounding_differs(a, b):
    """Whether two states' float values (their gradients' too) differ, within
    the tolerance since no mismatch was reported (-0.0 and 0.0 are equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        x, y = a.get("values"), b.get("values")
        if (
            a.get("dtype") in TOL
            and a.get("dtype") == b.get("dtype")
            and isinstance(x, np.ndarray)
            and isinstance(y, np.ndarray)
            and x.shape == y.shape
            and not np.array_equal(x, y, equal_nan=True)
        ):
            return True
        return _rounding_differs(a.get("grad"), b.get("grad"))
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return any(_rounding_differs(x, y) for x, y in zip(a, b))
    return False


def all_mismatches(program, fe, th):
    """Yields the differences between ferrograd's and torch's records, in
    program order (after an exception mismatch the runs have diverged, so
    nothing later is compared)."""
    # float64 tolerances only when no float32 value is involved (an integer
    # operand of a float op computes in float32 too)
    f64 = "float32" not in program.source() and not _has_float32(th)
    failed = False
    last = {}  # name -> (ferrograd's state, torch's) as last recorded
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
                    operand_rounding=any(
                        _rounding_differs(*last[o])
                        for o in set(re.findall(r"\bt\d+\b", step.text())) - set(step.outs)
                        if o in last
                    ),
                )
        last.update((n, (a.states[n], b.states[n])) for n in b.states if n in a.states)
