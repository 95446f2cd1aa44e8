# ruff: noqa: BLE001 - a known mismatch matcher treats any failure to match as no match
"""Known, reported mismatches (``KNOWN``, each one a strict xfail in
test_fuzz_regressions.py), the ones fixed meanwhile (``FIXED``) and
``known``, which names the entry a mismatch matches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .model import FLOATS

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
# `t3 = t2.view(..)`, `t3 = t2[..]` or `t3 = torch.permute(t2, ..)`: group 1 or 2 is t2;
# `t3 = Dirty.apply(t2)` (t2 modified in place and returned: torch's output is another
# tensor on t2's memory when t2 is a view) or `t3 = ViewOut.apply(t2)` (a view): group 3
_VIEW_RHS = re.compile(
    rf"^(?:(t\d+)(?:\.(?:{_VIEWS})\b|\[(?!torch\.tensor|\[))|torch\.(?:{_VIEWS})\((t\d+)\b"
    r"|(?:Dirty|ViewOut)\.apply\((t\d+)\))"
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
        name = m.group(1) or m.group(2) or m.group(3)
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


# ops that turn a last-bit difference of an operand into another value: a pole,
# a jump or a choice between (near) ties
AMPLIFIERS = {
    "floor", "sign", "reciprocal", "rsqrt", "log", "log1p", "sqrt", "scalar", "div", "pow",
    "atan2", "gt", "lt", "eq", "where", "min", "max", "min_dim", "max_dim", "div_", "pow_",
    "NonDiff",  # a custom Function whose forward is floor
}  # fmt: skip


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
        "torch_zero_tensor_grad",
        "torch's double backward through abs (sgn's derivative) gives a .grad that is an efficient "
        "zero tensor without storage, whose tolist() raises; ferrograd's is a tensor of zeros",
        lambda p, m: (
            m.what == "exception"
            and m.ferrograd == "no error"
            and "unallocated storage" in m.torch_message
        ),
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
        "rounding_amplified",
        "an op with a pole or a jump (floor at an integer, log1p at -1, rsqrt and reciprocal at 0, a "
        "comparison, the index of min/max between near ties) whose operand differs from torch's by "
        "rounding only (bits within the tolerance: a vectorised kernel's documented ulps, a sum in "
        "another order; torch itself rounds a vectorised body and a scalar tail differently): the "
        "jump turns the last bit into a different value; not a wrong result of this op",
        lambda p, m: m.what.endswith("values") and m.op in AMPLIFIERS and m.operand_rounding,
    ),
    Known(
        "grad_accumulate_layout",
        "a tensor's gradients from two paths summed by the engine: torch's InputBuffer adds in place into "
        "the first buffer it solely owns (dense) and keeps its layout; ferrograd's sum is laid out as a new "
        "tensor (strides only, values equal)",
        lambda p, m: (
            m.what == "stride"
            and "autograd.grad(" in p.source()
            and any(
                re.search(rf"\b{o}\b.*= torch\.autograd\.grad\(", line)
                for o in set(re.findall(r"\bt\d+\b", m.code.split("=", 1)[-1]))
                for line in p.source().split("\n")
            )
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
