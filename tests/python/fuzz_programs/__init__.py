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

The package's modules: ``model`` (choosers, steps, programs, op lists),
``gen`` and ``gen_views`` (the generator), ``interpreter`` (custom Functions,
recorded states, ``run_program``), ``comparing`` (``all_mismatches``),
``known_mismatches`` (``KNOWN``, ``FIXED``, ``known``) and ``checks``
(``differential``, ``minimize``, finite differences). Every name is
importable from the package itself (``fuzz_programs.KNOWN``).
"""

from .checks import (
    Outcome,
    compare,
    differential,
    finite_difference_check,
    loss_of,
    minimize,
)
from .comparing import FIELDS, TOL, Mismatch, all_mismatches, diff_states
from .gen import Gen, programs, random_program
from .interpreter import Record, make_functions, run_program, tensor_state
from .known_mismatches import FIXED, GRAD_FN_NAMES, KNOWN, OVERLAP, Known, known
from .model import (
    BINARY,
    FLOATS,
    INPLACE_UNARY,
    INT_KEEPS,
    REDUCE,
    SMOOTH_BINARY,
    SMOOTH_INPLACE_UNARY,
    SMOOTH_REDUCE,
    SMOOTH_UNARY,
    UNARY,
    DrawChooser,
    Program,
    RandomChooser,
    Step,
    Var,
    broadcast,
    literal,
    numel,
    promote,
)

__all__ = [
    "BINARY",
    "FIELDS",
    "FIXED",
    "FLOATS",
    "GRAD_FN_NAMES",
    "INPLACE_UNARY",
    "INT_KEEPS",
    "KNOWN",
    "OVERLAP",
    "REDUCE",
    "SMOOTH_BINARY",
    "SMOOTH_INPLACE_UNARY",
    "SMOOTH_REDUCE",
    "SMOOTH_UNARY",
    "TOL",
    "UNARY",
    "DrawChooser",
    "Gen",
    "Known",
    "Mismatch",
    "Outcome",
    "Program",
    "RandomChooser",
    "Record",
    "Step",
    "Var",
    "all_mismatches",
    "broadcast",
    "compare",
    "diff_states",
    "differential",
    "finite_difference_check",
    "known",
    "literal",
    "loss_of",
    "make_functions",
    "minimize",
    "numel",
    "programs",
    "promote",
    "random_program",
    "run_program",
    "tensor_state",
]
