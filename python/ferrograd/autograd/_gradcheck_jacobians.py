"""The Jacobians that gradcheck compares (``ferrograd.autograd.gradcheck``):
numerical ones by central differences, analytical ones from the engine
(``autograd.grad`` with one-hot upstream gradients, or forward-mode AD), and the
small helpers both sides use. Nothing is differentiated here.
"""

from __future__ import annotations

import collections.abc
from itertools import product

import ferrograd as torch

from .functional import _as_tuple_nocheck as _as_tuple
from .functional import _forward_ad


class GradcheckError(RuntimeError):
    r"""Error raised by :func:`gradcheck` and :func:`gradgradcheck`."""

    # Public as ``ferrograd.autograd.gradcheck.GradcheckError``, as in torch.
    __module__ = "ferrograd.autograd.gradcheck"


# ----------------------------------------------------------------------------
# Small helpers
# ----------------------------------------------------------------------------


def _is_tensor(x):
    return isinstance(x, torch.Tensor)


def _is_float_or_complex_tensor(obj):
    return _is_tensor(obj) and obj.is_floating_point()


def _differentiable_outputs(x):
    return tuple(o for o in _as_tuple(x) if o.requires_grad)


def _iter_tensors(x, only_requiring_grad=False):
    if _is_tensor(x):
        if x.requires_grad or not only_requiring_grad:
            yield x
    elif isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
        for elem in x:
            yield from _iter_tensors(elem, only_requiring_grad)


def _get_inp_tensors(tupled_inputs):
    pairs = [(i, t) for i, t in enumerate(tupled_inputs) if _is_tensor(t) and t.requires_grad]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _require_forward_ad(what):
    fw = _forward_ad()
    if fw is None:
        raise NotImplementedError(
            f"{what} requires forward-mode AD (ferrograd.autograd.forward_ad), "
            "which is not available yet in ferrograd."
        )
    return fw


def _allclose(a, b, rtol, atol):
    """torch.allclose: |a - b| <= atol + rtol * |b| everywhere."""
    if a.numel() == 0:
        return True
    a = a.to(torch.float64)
    b = b.to(torch.float64)
    return _all((a - b).abs() <= atol + rtol * b.abs())


def _all(mask):
    """Tensor.all() of a bool tensor."""
    return int(mask.sum()) == mask.numel()


def _max_abs_diff(a, b):
    if a.numel() == 0:
        return 0.0
    return float((a.to(torch.float64) - b.to(torch.float64)).abs().max())


def _stack(vectors, length, dim, dtype):
    """1-d tensors of ``length`` elements stacked along ``dim`` (0: as rows, 1: as
    columns), or zeros of that shape when there are none or they are empty."""
    if vectors and length:
        return torch.stack(vectors, dim)
    shape = (len(vectors), length) if dim == 0 else (length, len(vectors))
    return torch.zeros(shape, dtype=dtype)


# ----------------------------------------------------------------------------
# Numerical Jacobians (central differences)
# ----------------------------------------------------------------------------


def _perturbed(inputs, input_idx, delta):
    """The inputs with ``inputs[input_idx]`` replaced by a copy plus ``delta``
    (a tensor of its shape, or ``(index, value)`` for one element)."""
    x = inputs[input_idx]
    with torch.no_grad():
        p = x.detach().clone()
        if isinstance(delta, tuple):
            idx, step = delta
            if idx == ():
                p.add_(step)
            else:
                p[idx] = p[idx] + step
        else:
            p.add_(delta.reshape(p.shape).to(p.dtype))
    if x.requires_grad:
        p.requires_grad_(True)
    return tuple(p if i == input_idx else a for i, a in enumerate(inputs))


def _run(fn, inputs):
    return tuple(o.detach().clone() if _is_tensor(o) else o for o in _as_tuple(fn(*inputs)))


def _check_outputs_same_dtype_and_shape(output1, output2, eps, idx=None):
    on_index = f"on index {idx} " if idx is not None else ""
    if output1.shape != output2.shape:
        raise AssertionError(
            f"Expected `func` to return outputs with the same shape"
            f" when inputs are perturbed {on_index}by {eps}, but got:"
            f" shapes {output1.shape} and {output2.shape}."
        )
    if output1.dtype != output2.dtype:
        raise AssertionError(
            f"Expected `func` to return outputs with the same dtype"
            f" when inputs are perturbed {on_index}by {eps}, but got:"
            f" dtypes {output1.dtype} and {output2.dtype}."
        )


def _central_difference(fn, inputs, input_idx, delta_minus, delta_plus, norm, eps, idx=None):
    """(f(x + d) - f(x - d)) / (2 |d|), flattened, one per output."""
    outa = _run(fn, _perturbed(inputs, input_idx, delta_minus))
    outb = _run(fn, _perturbed(inputs, input_idx, delta_plus))
    res = []
    for a, b in zip(outa, outb):
        if not _is_tensor(a):
            res.append(None)
            continue
        _check_outputs_same_dtype_and_shape(a, b, eps, idx)
        res.append(((b - a) / (2 * norm)).detach().reshape(-1))
    return res


def _numerical_jacobian_wrt_input(fn, inputs, input_idx, outputs, eps):
    """One (input.numel(), output.numel()) Jacobian per float output."""
    x = inputs[input_idx]
    if not x.requires_grad:
        raise AssertionError("Expected input to have requires_grad=True")
    float_outs = [o for o in outputs if _is_float_or_complex_tensor(o)]
    rows = []  # rows[k][j]: d output_j / d x_k, flattened
    for idx in product(*[range(m) for m in x.shape]):
        cols = _central_difference(fn, inputs, input_idx, (idx, -eps), (idx, eps), eps, eps, idx)
        rows.append([c for c, o in zip(cols, outputs) if _is_float_or_complex_tensor(o)])
    return tuple(
        _stack([r[j].to(o.dtype) for r in rows], o.numel(), 0, o.dtype)
        for j, o in enumerate(float_outs)
    )


def _get_numerical_jacobian(fn, inputs, outputs=None, eps=1e-3):
    """Jacobians of ``fn`` per differentiable input (outer) and float output."""
    if outputs is None:
        outputs = _as_tuple(fn(*_as_tuple(inputs)))
    return [
        _numerical_jacobian_wrt_input(fn, inputs, i, outputs, eps)
        for i, a in enumerate(inputs)
        if _is_tensor(a) and a.requires_grad
    ]


# ----------------------------------------------------------------------------
# Analytical Jacobians (the engine's vector-Jacobian products)
# ----------------------------------------------------------------------------

FAILED_NONDET_MSG = """\n
NOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_nondet_tol=<tol>`.
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_nondet_tol=<tol>`
"""


def _vjp_rows(output, diff_inputs, grad_outputs):
    """For each grad_output, autograd.grad of ``output`` (graph retained):
    rows[i][k] is the k-th VJP for input i (None when unused)."""
    rows = [[] for _ in diff_inputs]
    for g in grad_outputs:
        grads = torch.autograd.grad(output, diff_inputs, g, retain_graph=True, allow_unused=True)
        for i, d in enumerate(grads):
            rows[i].append(d.clone() if _is_tensor(d) else None)
    return rows


def _one_hots(output):
    n = output.numel()
    for j in range(n):
        e = torch.zeros(n, dtype=output.dtype)
        e[j] = 1.0
        yield e.reshape(output.shape)


def _stack_and_check(rows, diff_inputs):
    """(jacobians (in_numel, len(vjps)) per input, sizes_ok, types_ok)."""
    jacobians = []
    sizes_ok = True
    types_ok = True
    for inp, vjps in zip(diff_inputs, rows):
        cols = []
        for t in vjps:
            if t is not None and t.shape != inp.shape:
                sizes_ok = False
            elif t is not None and t.dtype != inp.dtype:
                types_ok = False
            if t is None:
                cols.append(torch.zeros(inp.numel(), dtype=inp.dtype))
            else:
                if t.numel() != inp.numel():
                    raise GradcheckError("Analytical gradient has incorrect size")
                cols.append(t.detach().reshape(-1).to(inp.dtype))
        jacobians.append(_stack(cols, inp.numel(), 1, inp.dtype))
    return jacobians, sizes_ok, types_ok


def _vjp_jacobians(output, diff_inputs, grads, nondet_tol):
    """(jacobians, reentrant, sizes_ok, types_ok): the VJPs of ``output`` for
    ``grads`` stacked per input, everything twice to detect non-determinism
    ("reentrancy")."""
    rows1 = _vjp_rows(output, diff_inputs, grads)
    rows2 = _vjp_rows(output, diff_inputs, grads)
    jacobians1, sizes_ok, types_ok = _stack_and_check(rows1, diff_inputs)
    jacobians2, _, _ = _stack_and_check(rows2, diff_inputs)
    reentrant = all(
        j1.numel() == 0 or _max_abs_diff(j1, j2) <= nondet_tol
        for j1, j2 in zip(jacobians1, jacobians2)
    )
    return jacobians1, reentrant, sizes_ok, types_ok


def _check_analytical_jacobian_attributes(
    inputs, output, nondet_tol, check_grad_dtypes, fast_mode=False, v=None
):
    diff_inputs = list(_iter_tensors(inputs, True))
    if fast_mode:
        grads = [v.reshape(output.shape)]
    else:
        grads = list(_one_hots(output))
    jacobians1, reentrant, sizes_ok, types_ok = _vjp_jacobians(
        output, diff_inputs, grads, nondet_tol
    )
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with "
            "same input and grad_output multiple times gives different values, "
            "although analytical gradient matches numerical gradient."
            f"The tolerance for nondeterminism was {nondet_tol}." + FAILED_NONDET_MSG
        )
    return jacobians1


def _get_analytical_jacobian(inputs, outputs, input_idx, output_idx):
    jacobians = _check_analytical_jacobian_attributes(
        inputs, outputs[output_idx], nondet_tol=float("inf"), check_grad_dtypes=False
    )
    return jacobians[input_idx]


# ----------------------------------------------------------------------------
# Forward-mode Jacobians (used when ferrograd.autograd.forward_ad exists)
# ----------------------------------------------------------------------------


def _dual_inputs(fwAD, inputs, tangents):
    """The inputs with the k-th differentiable one made a dual with tangent
    ``tangents[k]`` (inside a dual level), and the indices of those."""
    dual_inputs = []
    indices = []
    for i, inp in enumerate(inputs):
        if _is_tensor(inp) and inp.requires_grad:
            inp = fwAD.make_dual(inp.detach(), tangents[len(indices)].reshape(inp.shape))
            indices.append(i)
        dual_inputs.append(inp)
    return dual_inputs, indices


def _forward_ad_outputs(fwAD, fn, inputs, tangents, check_grad_dtypes):
    """Runs ``fn`` on duals of the differentiable inputs with the given
    tangents; returns the output tangents (flattened; zeros when None)."""
    with fwAD.dual_level():
        dual_inputs, _ = _dual_inputs(fwAD, inputs, tangents)
        raw_outputs = _as_tuple(fn(*dual_inputs))
        res = []
        for d_o in raw_outputs:
            if not _is_float_or_complex_tensor(d_o):
                continue
            val, tan = fwAD.unpack_dual(d_o)
            if check_grad_dtypes and tan is not None and tan.dtype != val.dtype:
                raise GradcheckError("Forward AD gradient has dtype mismatch.")
            if tan is None:
                res.append(torch.zeros(val.numel(), dtype=val.dtype))
            else:
                res.append(tan.detach().reshape(-1).clone())
        return res


def _get_analytical_jacobian_forward_ad(
    fn, inputs, outputs, *, check_grad_dtypes=False, all_u=None
):
    """jacobians[i][j]: Jacobian of float output j w.r.t. differentiable input i,
    shape (in_numel, out_numel), or (out_numel,) for ``J u`` when ``all_u``."""
    fwAD = _require_forward_ad("check_forward_ad=True")
    tensor_inputs = [i for i in inputs if _is_tensor(i) and i.requires_grad]
    float_outs = [o for o in outputs if _is_float_or_complex_tensor(o)]
    jacobians = []
    for i, inp in enumerate(tensor_inputs):

        def tangents_with(t, i=i):
            return [
                t if k == i else torch.zeros(x.numel(), dtype=x.dtype)
                for k, x in enumerate(tensor_inputs)
            ]

        if all_u:
            u = all_u[i].to(inp.dtype)
            jacobians.append(
                tuple(_forward_ad_outputs(fwAD, fn, inputs, tangents_with(u), check_grad_dtypes))
            )
            continue
        cols = [[] for _ in float_outs]
        for e in _one_hots(torch.zeros(inp.numel(), dtype=inp.dtype)):
            outs = _forward_ad_outputs(fwAD, fn, inputs, tangents_with(e), check_grad_dtypes)
            for j, t in enumerate(outs):
                cols[j].append(t)
        jacobians.append(tuple(_stack(c, o.numel(), 0, o.dtype) for c, o in zip(cols, float_outs)))
    return jacobians
