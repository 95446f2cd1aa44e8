"""torch.autograd.gradcheck: finite differences against the engine's gradients.

``gradcheck`` compares the Jacobians of ``func`` computed by central
differences with the ones the autograd engine gives (``autograd.grad`` with
one-hot upstream gradients, or forward-mode AD when ``check_forward_ad``);
``gradgradcheck`` runs ``gradcheck`` on the function's vector-Jacobian
product to check double backward. Differentiation is the engine's: this module
only perturbs inputs, calls ``autograd.grad`` and compares.

Numerical perturbations are applied to fresh copies of the inputs (torch
perturbs ``input.data`` in place, which ferrograd does not expose), so a
function must use the tensors it is given, as torch's docs require anyway.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import ferrograd as torch

# The Jacobians live in ``_gradcheck_jacobians``; GradcheckError and torch's
# FAILED_NONDET_MSG are importable from here, as in torch.
from ._gradcheck_jacobians import (
    FAILED_NONDET_MSG,  # noqa: F401
    GradcheckError,
    _all,
    _allclose,
    _as_tuple,
    _central_difference,
    _check_analytical_jacobian_attributes,
    _differentiable_outputs,
    _dual_inputs,
    _get_analytical_jacobian,
    _get_analytical_jacobian_forward_ad,
    _get_inp_tensors,
    _get_numerical_jacobian,
    _is_float_or_complex_tensor,
    _is_tensor,
    _iter_tensors,
    _max_abs_diff,
    _one_hots,
    _require_forward_ad,
    _vjp_jacobians,
)

__all__ = [
    "gradcheck",
    "gradgradcheck",
    "GradcheckError",
    "get_numerical_jacobian",
    "get_analytical_jacobian",
]


def _vmap_unavailable(option):
    raise NotImplementedError(
        f"gradcheck: {option}=True needs vmap (batched gradients), which is not available "
        "yet in ferrograd. Call gradcheck with "
        f"{option}=False."
    )


def _deprecated(name):
    warnings.warn(
        f"`{name}` was part of PyTorch's private API and not "
        "meant to be exposed. We are deprecating it and it will be removed "
        "in a future version of PyTorch. If you have a specific use for "
        "this or feature request for this to be a stable API, please file "
        "us an issue at https://github.com/pytorch/pytorch/issues/new",
        FutureWarning,
        stacklevel=3,
    )


def get_numerical_jacobian(fn, inputs, target=None, eps=1e-3, grad_out=1.0):
    """Deprecated torch API: numerical Jacobians of ``fn(inputs)``'s first output."""
    _deprecated("get_numerical_jacobian")
    if grad_out != 1.0:
        raise ValueError(
            "Expected grad_out to be 1.0. get_numerical_jacobian no longer "
            "supports values of grad_out != 1.0."
        )
    if target is not None:
        raise NotImplementedError("get_numerical_jacobian: target is not supported in ferrograd")
    inputs = _as_tuple(inputs)

    def fn_pack_inps(*inps):
        return fn(inps)

    jacobians = _get_numerical_jacobian(fn_pack_inps, inputs, None, eps)
    return tuple(j[0] for j in jacobians)


def get_analytical_jacobian(inputs, output, nondet_tol=0.0, grad_out=1.0):
    """Deprecated torch API: (jacobians, reentrant, sizes_ok, types_ok)."""
    _deprecated("get_analytical_jacobian")
    if grad_out != 1.0:
        raise ValueError(
            "Expected grad_out to be 1.0. get_analytical_jacobian no longer "
            "supports values of grad_out != 1.0."
        )
    diff_inputs = list(_iter_tensors(inputs, True))
    jacobians, reentrant, sizes_ok, types_ok = _vjp_jacobians(
        output, diff_inputs, list(_one_hots(output)), nondet_tol
    )
    return tuple(jacobians), reentrant, sizes_ok, types_ok


# ----------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------


def _test_undefined_forward_mode(func, outputs, inputs):
    fwAD = _require_forward_ad("check_forward_ad=True")
    _, inp_tensors = _get_inp_tensors(inputs)
    _, all_u = _make_vectors(inp_tensors, outputs, use_forward_ad=True)
    tangents = [u.to(inp.dtype) for u, inp in zip(all_u, inp_tensors)]
    with fwAD.dual_level():
        dual_inputs, tensor_indices = _dual_inputs(fwAD, inputs, tangents)
        for idx in tensor_indices:
            inp = inputs[idx]
            saved = dual_inputs[idx]
            # Case 1: a materialized zero tangent.
            dual_inputs[idx] = fwAD.make_dual(inp.detach(), torch.zeros_like(inp))
            outs1 = [o for o in _as_tuple(func(*dual_inputs)) if _is_float_or_complex_tensor(o)]
            # Case 2: no tangent at all (a plain tensor).
            dual_inputs[idx] = inp.detach()
            outs2 = [o for o in _as_tuple(func(*dual_inputs)) if _is_float_or_complex_tensor(o)]
            dual_inputs[idx] = saved
            for index_o, (d_o1, d_o2) in enumerate(zip(outs1, outs2)):
                _, res1 = fwAD.unpack_dual(d_o1)
                _, res2 = fwAD.unpack_dual(d_o2)
                if res1 is not None and res2 is not None and not _allclose(res1, res2, 1e-5, 1e-8):
                    raise GradcheckError(
                        f"Mismatch in tangent values for output with index: {index_o} when "
                        f"input: {inp} has an undefined tangent value.  Got: {res1} but "
                        f"expected: {res2}"
                    )
    return True


def _check_inputs(tupled_inputs):
    any_input_requiring_grad = False
    for idx, inp in enumerate(tupled_inputs):
        if _is_tensor(inp) and inp.requires_grad:
            if inp.dtype != torch.float64:
                warnings.warn(
                    f"Input #{idx} requires gradient and "
                    "is not a double precision floating point or complex. "
                    "This check will likely fail if all the inputs are "
                    "not of double precision floating point or complex. ",
                    stacklevel=3,
                )
            if not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.shape)):
                raise RuntimeError(
                    f"The {idx}th input has a dimension with stride 0. gradcheck only "
                    "supports inputs that are non-overlapping to be able to "
                    "compute the numerical gradients correctly. You should call "
                    ".contiguous on the input before passing it to gradcheck."
                )
            any_input_requiring_grad = True
    if not any_input_requiring_grad:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, "
            "but none of them have requires_grad=True."
        )
    return True


def _check_no_differentiable_outputs(func, inputs, func_out, eps):
    # With no differentiable output the numerical gradient must be zero.
    for jacobians in _get_numerical_jacobian(func, inputs, func_out, eps=eps):
        for jacobian in jacobians:
            if jacobian.numel() and not _all(jacobian == 0):
                raise GradcheckError("Numerical gradient for function expected to be zero")
    return True


def _check_no_differentiable_outputs_fast(func, inputs, inputs_indices, all_u, eps, nondet_tol):
    for inp_idx, u in zip(inputs_indices, all_u):
        for jvp in _numerical_jvp(func, inputs, inp_idx, u, eps):
            if jvp is None or jvp.numel() == 0:
                continue
            if float(jvp.abs().max()) > nondet_tol:
                raise GradcheckError("Numerical gradient for function expected to be zero")
    return True


def _test_backward_mul_by_grad_output(outputs, inputs, masked):
    diff_input_list = list(_iter_tensors(inputs, True))
    if not diff_input_list:
        raise GradcheckError("no Tensors requiring grad found in input")
    grads_input = torch.autograd.grad(
        outputs, diff_input_list, [torch.zeros_like(o) for o in outputs], allow_unused=True
    )
    for gi, di in zip(grads_input, diff_input_list):
        if gi is None:
            continue
        if masked:
            if not _allclose(gi, torch.zeros_like(gi), 1e-5, 1e-8):
                raise GradcheckError("backward not multiplied by grad_output")
        elif not _all(gi == 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype != di.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi.device != di.device:
            raise GradcheckError("grad is incorrect device")
        if gi.shape != di.shape:
            raise GradcheckError("grad is incorrect size")
    return True


def _undefined_grad_function():
    """torch._C._functions.UndefinedGrad(): identity whose backward sends an
    undefined gradient to the node that made its input."""
    from .function import Function

    class UndefinedGrad(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            return None

    return UndefinedGrad.apply


def _test_undefined_backward_mode(func, outputs, inputs):
    """Backward must cope with undefined output gradients and give zero (or
    no) input gradients."""
    diff_input_list = list(_iter_tensors(inputs, True))
    if not diff_input_list:
        raise GradcheckError("no Tensors requiring grad found in input")

    def warn_bc_breaking():
        warnings.warn(
            "Backwards compatibility: New undefined gradient support checking "
            "feature is enabled by default, but it may break existing callers "
            "of this function. If this is true for you, you can call this "
            'function with "check_undefined_grad=False" to disable the feature',
            stacklevel=2,
        )

    def check_undefined_grad_support(output_to_check):
        if not output_to_check:
            return True
        grads_output = [torch.zeros_like(o) for o in output_to_check]
        try:
            grads_input = torch.autograd.grad(
                output_to_check, diff_input_list, grads_output, allow_unused=True
            )
        except RuntimeError as e:
            warn_bc_breaking()
            raise GradcheckError(
                "Expected backward function to handle undefined output grads. "
                'Please look at "Notes about undefined output gradients" in '
                '"tools/autograd/derivatives.yaml"'
            ) from e
        for gi in grads_input:
            if gi is not None and not _all(gi == 0):
                warn_bc_breaking()
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads "
                    'are undefined or zero. Please look at "Notes about undefined output '
                    'gradients" in "tools/autograd/derivatives.yaml"'
                )
        return True

    undefined = _undefined_grad_function()
    # All backward functions must work when every output grad is undefined.
    outputs_to_check = [
        [undefined(o) for o in _differentiable_outputs(func(*inputs)) if _is_tensor(o)]
    ]
    # With several outputs, undefine one at a time.
    if len(outputs_to_check[0]) > 1:
        for undef_grad_idx in range(len(outputs)):
            output_to_check = _differentiable_outputs(func(*inputs))
            outputs_to_check.append(
                [
                    undefined(o) if idx == undef_grad_idx else o
                    for idx, o in enumerate(output_to_check)
                ]
            )
    return all(check_undefined_grad_support(o) for o in outputs_to_check)


def _get_notallclose_msg(analytical, numerical, output_idx, input_idx, is_forward_ad=False):
    mode = "computed with forward mode " if is_forward_ad else ""
    return (
        f"Jacobian {mode}mismatch for output {output_idx:d} with respect to input {input_idx:d},\n"
        f"numerical:{numerical}\nanalytical:{analytical}\n"
    )


def _transpose(matrix_of_tensors):
    return list(zip(*matrix_of_tensors))


# ----------------------------------------------------------------------------
# Slow mode: full Jacobians
# ----------------------------------------------------------------------------


class _Check(NamedTuple):
    """What the slow and fast modes compare: ``func`` at ``inputs`` (its result
    ``func_out`` and differentiable ``outputs``) and the tolerances."""

    func: Any
    func_out: Any
    inputs: tuple
    outputs: tuple
    eps: float
    rtol: float
    atol: float
    check_grad_dtypes: bool
    nondet_tol: float


def _slow_gradcheck(check, *, use_forward_ad=False):
    func, func_out, tupled_inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol = check
    func_out = _as_tuple(func_out)
    if not outputs:
        return _check_no_differentiable_outputs(func, tupled_inputs, func_out, eps)
    numerical = _transpose(_get_numerical_jacobian(func, tupled_inputs, func_out, eps=eps))
    float_outs = [o for o in func_out if _is_float_or_complex_tensor(o)]
    numerical = [nj for o, nj in zip(float_outs, numerical) if o.requires_grad]
    if use_forward_ad:
        analytical_forward = _get_analytical_jacobian_forward_ad(
            func, tupled_inputs, func_out, check_grad_dtypes=check_grad_dtypes
        )
        for i, n_per_out in enumerate(numerical):
            for j, n in enumerate(n_per_out):
                a = analytical_forward[j][i]
                if not _allclose(a, n, rtol, atol):
                    raise GradcheckError(_get_notallclose_msg(a, n, i, j, is_forward_ad=True))
    else:
        for i, o in enumerate(outputs):
            analytical = _check_analytical_jacobian_attributes(
                tupled_inputs, o, nondet_tol, check_grad_dtypes
            )
            for j, (a, n) in enumerate(zip(analytical, numerical[i])):
                if not _allclose(a, n, rtol, atol):
                    raise GradcheckError(_get_notallclose_msg(a, n, i, j))
    return True


# ----------------------------------------------------------------------------
# Fast mode: random projections u^T J v
# ----------------------------------------------------------------------------


def _vec_like(x):
    """A random non-negative unit vector with x.numel() entries."""
    vec = torch.rand(x.numel(), dtype=torch.float64).to(x.dtype)
    norm = vec.norm()
    return vec / norm if x.numel() else vec


def _make_vectors(inp_tensors, outputs, *, use_forward_ad):
    # A private, fixed-seed stream that leaves the user's RNG state alone.
    with torch.random.fork_rng():
        torch.manual_seed(67280421310721)
        all_u = [_vec_like(inp) for inp in inp_tensors]
        all_v = None if use_forward_ad else [_vec_like(out) for out in outputs]
    return all_v, all_u


def _numerical_jvp(func, inputs, input_idx, u, eps):
    """Central difference of ``func`` along ``u`` at input ``input_idx``:
    (f(x + eps u) - f(x - eps u)) / (2 eps), one flattened tensor per output."""
    d = u.reshape(inputs[input_idx].shape) * eps
    return _central_difference(func, inputs, input_idx, -d, d, eps, eps)


def _dot(u, v):
    return (u * v).sum()


def _get_numerical_vJu(fn, inputs, inp_indices, func_out, all_u, all_v, eps):
    reduced = []
    func_out = _as_tuple(func_out)
    for inp_idx, u in zip(inp_indices, all_u):
        all_Ju = _numerical_jvp(fn, inputs, inp_idx, u, eps)
        filtered = [Ju for Ju, o in zip(all_Ju, func_out) if _is_float_or_complex_tensor(o)]
        if all_v is not None:
            reduced.append([_dot(v, Ju) for v, Ju in zip(all_v, filtered)])
        else:
            reduced.append(filtered)
    return reduced


def _get_analytical_vJu_backward_mode(inputs, outputs, nondet_tol, check_grad_dtypes, all_v, all_u):
    reduced = []
    for output, v in zip(outputs, all_v):
        all_vJ = _check_analytical_jacobian_attributes(
            inputs, output, nondet_tol, check_grad_dtypes, fast_mode=True, v=v
        )
        reduced.append([_dot(vJ.reshape(-1), u) for vJ, u in zip(all_vJ, all_u)])
    return reduced


def _adjusted_atol(atol, u, v):
    # Comparing v^T A u with v^T B u: elementwise atol scales by sum(u) * sum(v).
    sum_v = 1.0 if v is None else float(v.sum())
    return atol * float(u.sum()) * sum_v


FAST_FAIL_SLOW_OK_MSG = """
Fast gradcheck failed but element-wise differences are small. This means that the
test might've passed in slow_mode!

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck:

If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `fast_mode=False` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_fast_mode=False`
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_fast_mode=False`
""".strip()


def _run_slow_mode_and_get_error(
    func, tupled_inputs, outputs, input_idx, output_idx, rtol, atol, eps, is_forward_ad
):
    slow_numerical = _get_numerical_jacobian(func, tupled_inputs, outputs, eps=eps)[input_idx][
        output_idx
    ]
    if is_forward_ad:
        diff_idx = [i for i, t in enumerate(tupled_inputs) if _is_tensor(t) and t.requires_grad]

        def new_fn(inp):
            new_inputs = list(tupled_inputs)
            new_inputs[diff_idx[input_idx]] = inp
            return _as_tuple(func(*new_inputs))[output_idx]

        slow_analytical = _get_analytical_jacobian_forward_ad(
            new_fn, (tupled_inputs[diff_idx[input_idx]],), (outputs[output_idx],)
        )[0][0]
    else:
        slow_analytical = _get_analytical_jacobian(tupled_inputs, outputs, input_idx, output_idx)
    slow_max_diff = _max_abs_diff(slow_numerical, slow_analytical)
    slow_allclose = _allclose(slow_analytical, slow_numerical, rtol, atol)
    msg = (
        "\nThe above quantities relating the numerical and analytical jacobians are computed \n"
        "in fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for more background \n"
        "about fast mode. Below, we recompute numerical and analytical jacobians in slow mode:\n\n"
        f"Numerical:\n {slow_numerical}\n"
        f"Analytical:\n{slow_analytical}\n\n"
        f"The max per-element difference (slow mode) is: {slow_max_diff}.\n"
    )
    if slow_allclose:
        msg += FAST_FAIL_SLOW_OK_MSG
    return msg


def _fast_gradcheck(check, *, use_forward_ad=False):
    func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol = check
    # See https://github.com/pytorch/pytorch/issues/53876: v^T (J u) by finite
    # differences against (v^T J) u from the engine.
    inp_tensors_idx, inp_tensors = _get_inp_tensors(inputs)
    all_v, all_u = _make_vectors(inp_tensors, outputs, use_forward_ad=use_forward_ad)
    numerical_vJu = _get_numerical_vJu(func, inputs, inp_tensors_idx, func_out, all_u, all_v, eps)
    if use_forward_ad:
        analytical_vJu = _get_analytical_jacobian_forward_ad(
            func, inputs, _as_tuple(func_out), all_u=all_u, check_grad_dtypes=check_grad_dtypes
        )
    else:
        if not outputs:
            _check_no_differentiable_outputs_fast(
                func, inputs, inp_tensors_idx, all_u, eps, nondet_tol
            )
        analytical_vJu = _get_analytical_vJu_backward_mode(
            inputs, outputs, nondet_tol, check_grad_dtypes, all_v, all_u
        )
    for i, all_numerical_for_input_i in enumerate(numerical_vJu):
        for j, n in enumerate(all_numerical_for_input_i):
            a = analytical_vJu[i][j] if use_forward_ad else analytical_vJu[j][i]
            updated_atol = _adjusted_atol(atol, all_u[i], all_v[j] if all_v else None)
            if not _allclose(a, n, rtol, updated_atol):
                jacobians_str = _run_slow_mode_and_get_error(
                    func, inputs, outputs, i, j, rtol, atol, eps, use_forward_ad
                )
                raise GradcheckError(
                    _get_notallclose_msg(a, n, j, i, use_forward_ad) + jacobians_str
                )
    return True


# ----------------------------------------------------------------------------
# Entry points
# ----------------------------------------------------------------------------


def gradcheck(
    func,
    inputs,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked=None,
) -> bool:
    r"""Check gradients computed via small finite differences against analytical
    gradients wrt tensors in :attr:`inputs` that are of floating point type
    and with ``requires_grad=True`` (torch.autograd.gradcheck).

    The analytical side is the autograd engine (``autograd.grad``, or forward-mode
    AD with ``check_forward_ad=True``); ``fast_mode=True`` compares random
    projections ``v^T J u`` instead of full Jacobians. Returns ``True`` when all
    checks pass; raises :class:`GradcheckError` (or returns ``False`` when
    ``raise_exception=False``) otherwise.
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError(
            "Expected at least one of check_forward_ad or check_backward_ad to be True"
        )
    if check_batched_grad and not check_backward_ad:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_backward_ad to be True"
        )
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError(
            "Setting check_batched_forward_grad=True requires check_forward_ad to be True"
        )
    try:
        # Unsupported options fail before any work is done.
        if check_batched_forward_grad:
            _vmap_unavailable("check_batched_forward_grad")
        if check_forward_ad:
            _require_forward_ad("gradcheck with check_forward_ad=True")

        tupled_inputs = _as_tuple(inputs)
        _check_inputs(tupled_inputs)

        func_out = func(*tupled_inputs)
        outputs = _differentiable_outputs(func_out)

        gradcheck_fn = _fast_gradcheck if fast_mode else _slow_gradcheck
        check = _Check(
            func, func_out, tupled_inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol
        )
        if check_backward_ad:
            gradcheck_fn(check)
        if check_forward_ad:
            gradcheck_fn(check, use_forward_ad=True)
            if check_undefined_grad:
                _test_undefined_forward_mode(func, outputs, tupled_inputs)
        if check_backward_ad:
            _test_backward_mul_by_grad_output(outputs, tupled_inputs, masked)
            if check_undefined_grad:
                _test_undefined_backward_mode(func, outputs, tupled_inputs)
            if check_batched_grad:
                _test_batched_grad(func, tupled_inputs, atol, rtol)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _test_batched_grad(func, inputs, atol, rtol):
    """``autograd.grad(..., is_grads_batched=True)`` over two random
    grad_outputs must equal the two unbatched vjps."""
    outputs = _differentiable_outputs(func(*inputs))
    diff = [x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        gos = torch.stack([_make_grad_output(out, False).detach() for _ in range(2)])
        rows = [
            torch.autograd.grad(out, diff, go, retain_graph=True, allow_unused=True) for go in gos
        ]
        batched = torch.autograd.grad(
            out, diff, gos, retain_graph=True, allow_unused=True, is_grads_batched=True
        )
        for j, got in enumerate(batched):
            per = [r[j] for r in rows]
            if got is None and all(p is None for p in per):
                continue
            want = torch.stack([p if p is not None else torch.zeros_like(diff[j]) for p in per])
            if got is None or not torch.allclose(got, want, rtol, atol):
                raise GradcheckError(
                    f"While computing batched gradients for output {i} and input {j}, got: "
                    f"{got}\nExpected (the per-sample gradients stacked): {want}"
                )


def _make_grad_output(x, noncontiguous):
    """torch.testing.make_tensor(x.shape, low=-1, high=1, requires_grad=True,
    noncontiguous=...): uniform in [-1, 1)."""
    dtype = x.dtype if x.is_floating_point() else torch.float64
    shape = tuple(x.shape)
    with torch.no_grad():
        if noncontiguous and x.numel() > 1:
            # Every other element of a buffer twice as long in the last dim.
            t = (torch.rand(shape + (2,), dtype=dtype) * 2 - 1).select(-1, 0)
        else:
            t = torch.rand(shape, dtype=dtype) * 2 - 1
    return t.detach().requires_grad_(True)


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    r"""Check gradients of gradients computed via small finite differences
    against analytical gradients wrt tensors in :attr:`inputs` and
    :attr:`grad_outputs` (torch.autograd.gradgradcheck): runs :func:`gradcheck`
    on the vector-Jacobian product of ``func`` built with ``create_graph=True``.
    Random ``grad_outputs`` (uniform in [-1, 1)) are drawn when none are given.
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError(
            "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True"
        )
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_undefined_grad=True requires check_rev_over_rev to be True"
        )
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_rev_over_rev to be True"
        )
    tupled_inputs = _as_tuple(inputs)

    if grad_outputs is None:
        outputs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = tuple(
            _make_grad_output(x, gen_non_contig_grad_outputs) for x in outputs
        )
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)

    num_outputs = len(tupled_grad_outputs)

    diff_input_args_indices = {
        i for i, x in enumerate(tupled_inputs) if _is_tensor(x) and x.requires_grad
    }
    diff_grad_output_indices = {i for i, x in enumerate(tupled_grad_outputs) if x.requires_grad}

    def new_func(*args):
        input_args = tuple(
            x.requires_grad_() if i in diff_input_args_indices else x
            for i, x in enumerate(args[:-num_outputs])
        )
        outputs = _differentiable_outputs(func(*input_args))
        grad_outputs = tuple(
            x.requires_grad_() if i in diff_grad_output_indices else x
            for i, x in enumerate(args[-num_outputs:])
        )
        diff_input_args = tuple(x for i, x in enumerate(input_args) if i in diff_input_args_indices)
        grad_inputs = torch.autograd.grad(
            outputs, diff_input_args, grad_outputs, create_graph=True, allow_unused=True
        )
        return tuple(g for g in grad_inputs if g is not None)

    return gradcheck(
        new_func,
        tupled_inputs + tupled_grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        fast_mode=fast_mode,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        masked=masked,
    )
