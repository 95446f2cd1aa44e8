"""torch.autograd.functional: vjp, jvp, jacobian, hessian, vhp and hvp.

Each function orchestrates ``autograd.grad`` calls of the Rust engine (jvp and
hvp use the double-backward trick, as torch does); nothing is differentiated
here. ``vectorize=True`` (reverse mode) runs all rows of the Jacobian in one
engine call with ``is_grads_batched=True``. ``strategy="forward-mode"``
runs on ``ferrograd.autograd.forward_ad`` when it exists.
"""

from __future__ import annotations

import ferrograd as torch

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# Utility functions (torch's, verbatim where possible)


def _as_tuple_nocheck(x):
    if isinstance(x, tuple):
        return x
    elif isinstance(x, list):
        return tuple(x)
    else:
        return (x,)


def _as_tuple(inp, arg_name=None, fn_name=None):
    # Ensures that inp is a tuple of Tensors; returns whether the original inp
    # was a tuple and the tupled version of the input.
    if arg_name is None and fn_name is None:
        return _as_tuple_nocheck(inp)

    is_inp_tuple = True
    if not isinstance(inp, tuple):
        inp = (inp,)
        is_inp_tuple = False

    for i, el in enumerate(inp):
        if not isinstance(el, torch.Tensor):
            if is_inp_tuple:
                raise TypeError(
                    f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                    f"Tensors but the value at index {i} has type {type(el)}."
                )
            else:
                raise TypeError(
                    f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                    f"Tensors but the given {arg_name} has type {type(el)}."
                )

    return is_inp_tuple, inp


def _tuple_postprocess(res, to_unpack):
    # Unpacks a potentially nested tuple of Tensors. to_unpack is a bool or a
    # pair of bools (outer, inner).
    if isinstance(to_unpack, tuple):
        if len(to_unpack) != 2:
            raise AssertionError("Expected to_unpack tuple to have exactly 2 elements")
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    else:
        if not to_unpack:
            res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    # Always new Tensor objects, so that the inputs given as arguments can be
    # told apart from the same tensors captured by the user function.
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    # Do not return Tensors with history when the user did not ask for it.
    if isinstance(inputs[0], torch.Tensor):
        if not create_graph:
            return tuple(inp.detach() for inp in inputs)
        else:
            return inputs
    else:
        return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        else:
            raise RuntimeError("The given v should contain a single Tensor.")

    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = ""
            if is_other_tuple:
                prepend = f"Entry {idx} in "
            raise RuntimeError(
                f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}."
            )


def _check_requires_grad(inputs, input_type, strict):
    # The checks that raise torch's errors in strict mode.
    if not strict:
        return

    if input_type not in ["outputs", "grad_inputs", "jacobian", "hessian"]:
        raise RuntimeError("Invalid input_type to _check_requires_grad")
    for i, inp in enumerate(inputs):
        if inp is None:
            # This can only be reached for grad_inputs.
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}."
                " This is not allowed in strict mode."
            )
        if not inp.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(
                    f"The hessian of the user-provided function with respect to input {i}"
                    " is independent of the input. This is not allowed in strict mode."
                    " You should ensure that your function is thrice differentiable and that"
                    " the hessian depends on the inputs."
                )
            elif input_type == "jacobian":
                raise RuntimeError(
                    "While computing the hessian, found that the jacobian of the user-provided"
                    f" function with respect to input {i} is independent of the input. This is"
                    " not allowed in strict mode. You should ensure that your function is twice"
                    " differentiable and that the jacobian depends on the inputs (this would be"
                    " violated by a linear function for example)."
                )
            elif input_type == "grad_inputs":
                raise RuntimeError(
                    f"The gradient with respect to input {i} is independent of the inputs of the"
                    " user-provided function. This is not allowed in strict mode."
                )
            else:
                raise RuntimeError(
                    f"Output {i} of the user-provided function does not require gradients."
                    " The outputs must be computed in a differentiable manner from the input"
                    " when running in strict mode."
                )


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    # autograd.grad that accepts None (or non-differentiable) outputs and skips them.
    if not isinstance(outputs, tuple):
        raise AssertionError("Expected outputs to be a tuple")
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    if not isinstance(grad_outputs, tuple):
        raise AssertionError("Expected grad_outputs to be a tuple")
    if len(outputs) != len(grad_outputs):
        raise AssertionError(
            f"Expected outputs and grad_outputs to have the same length, "
            f"but got {len(outputs)} and {len(grad_outputs)}"
        )

    new_outputs = ()
    new_grad_outputs = ()
    for out, grad_out in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs += (out,)
            new_grad_outputs += (grad_out,)

    if len(new_outputs) == 0:
        # No differentiable output: no need to call the engine.
        return (None,) * len(inputs)
    return torch.autograd.grad(
        new_outputs,
        inputs,
        new_grad_outputs,
        allow_unused=True,
        create_graph=create_graph,
        retain_graph=retain_graph,
    )


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    # Replaces None gradients by zeros, or raises in strict mode.
    if stage not in ["back", "back_trick", "double_back", "double_back_trick"]:
        raise RuntimeError(f"Invalid stage argument '{stage}' to _fill_in_zeros")

    res = ()
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                if stage == "back":
                    raise RuntimeError(
                        "The output of the user-provided function is independent of "
                        f"input {i}. This is not allowed in strict mode."
                    )
                elif stage == "back_trick":
                    raise RuntimeError(
                        f"The gradient with respect to the input is independent of entry {i}"
                        " in the grad_outputs when using the double backward trick to compute"
                        " forward mode gradients. This is not allowed in strict mode."
                    )
                elif stage == "double_back":
                    raise RuntimeError(
                        "The jacobian of the user-provided function is independent of "
                        f"input {i}. This is not allowed in strict mode."
                    )
                else:
                    raise RuntimeError(
                        "The hessian of the user-provided function is independent of "
                        f"entry {i} in the grad_jacobian. This is not allowed in strict "
                        "mode as it prevents from using the double backward trick to "
                        "replace forward mode AD."
                    )

            grads_i = torch.zeros_like(refs[i])
        else:
            if strict and create_graph and not grads_i.requires_grad:
                if "double" not in stage:
                    raise RuntimeError(
                        "The jacobian of the user-provided function is independent of "
                        f"input {i}. This is not allowed in strict mode when create_graph=True."
                    )
                else:
                    raise RuntimeError(
                        "The hessian of the user-provided function is independent of "
                        f"input {i}. This is not allowed in strict mode when create_graph=True."
                    )

        res += (grads_i,)

    return res


# Shared steps of vjp, jvp, vhp and hvp


_V_NONE_FOR_INPUT_MSG = (
    "The vector v can only be None if the input to the user-provided function "
    "is a single Tensor with a single element."
)


def _preprocess_inputs(inputs, fn_name, create_graph):
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    return is_inputs_tuple, _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)


def _preprocess_v(v, fn_name, create_graph, other, is_other_tuple, none_msg):
    # ``v`` checked against ``other`` (outputs for vjp, inputs otherwise); a
    # missing ``v`` is allowed only when ``other`` is a single one-element Tensor.
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, other, is_other_tuple)
    elif len(other) != 1 or other[0].nelement() != 1:
        raise RuntimeError(none_msg)
    return v


def _call_func(func, inputs, fn_name, strict):
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    return is_outputs_tuple, outputs


def _check_single_element(is_outputs_tuple, outputs, fn_name):
    if is_outputs_tuple or not isinstance(outputs[0], torch.Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")

    if outputs[0].nelement() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn_name} should contain a single "
            "element"
        )


def _scalar_func_jacobian(func, inputs, v, create_graph, strict, fn_name):
    # vhp and hvp: the preprocessed inputs and v, the single scalar output and
    # its gradient built with create_graph=True. Call under enable_grad.
    is_inputs_tuple, inputs = _preprocess_inputs(inputs, fn_name, create_graph)
    v = _preprocess_v(v, fn_name, create_graph, inputs, is_inputs_tuple, _V_NONE_FOR_INPUT_MSG)
    is_outputs_tuple, outputs = _call_func(func, inputs, fn_name, strict)
    _check_single_element(is_outputs_tuple, outputs, fn_name)
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac


def _final_grad(outputs, inputs, v, refs, strict, create_graph, stage):
    # The last backward, with graph only when create_graph asks for it.
    enable_grad = True if create_graph else torch.is_grad_enabled()
    with torch.set_grad_enabled(enable_grad):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        return _fill_in_zeros(grad_res, refs, strict, create_graph, stage)


def _postprocess(outputs, is_outputs_tuple, res, is_res_tuple, create_graph):
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(res, is_res_tuple)


# Public API


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    r"""Compute the dot product between a vector ``v`` and the Jacobian of the
    given function at the point given by the inputs.

    Returns ``(func_output, vjp)``; ``vjp`` has the nesting of ``inputs``.
    """
    with torch.enable_grad():
        is_inputs_tuple, inputs = _preprocess_inputs(inputs, "vjp", create_graph)
        is_outputs_tuple, outputs = _call_func(func, inputs, "vjp", strict)
        v = _preprocess_v(
            v,
            "vjp",
            create_graph,
            outputs,
            is_outputs_tuple,
            "The vector v can only be None if the user-provided function returns "
            "a single Tensor with a single element.",
        )

    vjp = _final_grad(outputs, inputs, v, inputs, strict, create_graph, "back")
    return _postprocess(outputs, is_outputs_tuple, vjp, is_inputs_tuple, create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    r"""Compute the dot product between the Jacobian of the given function at
    the point given by the inputs and a vector ``v``, with the double-backward
    trick (as torch does).

    Returns ``(func_output, jvp)``; ``jvp`` has the nesting of the outputs.
    """
    with torch.enable_grad():
        is_inputs_tuple, inputs = _preprocess_inputs(inputs, "jvp", create_graph)
        v = _preprocess_v(v, "jvp", create_graph, inputs, is_inputs_tuple, _V_NONE_FOR_INPUT_MSG)
        is_outputs_tuple, outputs = _call_func(func, inputs, "jvp", strict)
        # The backward is linear in grad_outputs, whose value does not matter:
        # it only must not contain inf or nan.
        grad_outputs = tuple(torch.zeros_like(out, requires_grad=True) for out in outputs)

        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)

    jvp = _final_grad(grad_inputs, grad_outputs, v, outputs, strict, create_graph, "back_trick")
    return _postprocess(outputs, is_outputs_tuple, jvp, is_outputs_tuple, create_graph)


def _forward_ad():
    try:
        from . import forward_ad
    except ImportError:
        return None
    return forward_ad


def _jacfwd(func, inputs, strict=False, vectorize=False):
    if strict:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` "
            'and `strategy="forward-mode"` are not supported together (yet). '
            "Please either set `strict=False` or "
            '`strategy="reverse-mode"`.'
        )
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
            "only implemented for `vectorize=True`."
        )
    fwAD = _forward_ad()
    if fwAD is None:
        raise NotImplementedError(
            'torch.autograd.functional.jacobian: strategy="forward-mode" needs forward-mode '
            "AD (ferrograd.autograd.forward_ad), which is not available yet in ferrograd. "
            'Use strategy="reverse-mode".'
        )

    # One forward-mode pass per input element (torch vmaps over these): the
    # tangent is that element's standard basis vector.
    input_numels = tuple(inp.numel() for inp in inputs)
    is_outputs_tuple = None
    primal_outs = None
    columns = None  # columns[out][in]: list of flattened output tangents
    for in_idx, inp in enumerate(inputs):
        for k in range(input_numels[in_idx]):
            with fwAD.dual_level():
                dual_inputs = []
                for m, x in enumerate(inputs):
                    t = torch.zeros(x.numel(), dtype=x.dtype)
                    if m == in_idx:
                        t[k] = 1.0
                    dual_inputs.append(fwAD.make_dual(x, t.view_as(x)))
                _is_outputs_tuple, dual_outputs = _as_tuple(func(*dual_inputs), "outputs")
                primals = []
                jv = []
                for dual_out in dual_outputs:
                    primal, tangent = fwAD.unpack_dual(dual_out)
                    primals.append(primal)
                    jv.append(torch.zeros_like(primal) if tangent is None else tangent)
            if columns is None:
                is_outputs_tuple = _is_outputs_tuple
                primal_outs = primals
                columns = [[[] for _ in inputs] for _ in primals]
            for o, t in enumerate(jv):
                columns[o][in_idx].append(t.reshape(-1))

    # Lists, not tuples, exactly as torch's forward-mode jacobian returns them.
    jacobian_output_input = []
    for o, out in enumerate(primal_outs):
        per_input = []
        for in_idx, inp in enumerate(inputs):
            cols = columns[o][in_idx]
            if cols and out.numel():
                jac = torch.stack(cols, -1)
            else:
                jac = torch.zeros((out.numel(), inp.numel()), dtype=out.dtype)
            per_input.append(jac.reshape(tuple(out.shape) + tuple(inp.shape)))
        jacobian_output_input.append(per_input)
    return _tuple_postprocess(jacobian_output_input, (is_outputs_tuple, is_inputs_tuple))


def jacobian(
    func,
    inputs,
    create_graph=False,
    strict=False,
    vectorize=False,
    strategy="reverse-mode",
):
    r"""Compute the Jacobian of a given function.

    Returns a Tensor for a single input and output, a tuple of Tensors when one
    of them is a tuple, and a tuple of tuples (``J[i][j]``: output ``i``, input
    ``j``) when both are. ``vectorize=True`` computes all rows of an output
    in one batched engine call (``is_grads_batched``).
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` "
                'and `strategy="forward-mode"` are not supported together (yet). '
                "Please either set `create_graph=False` or "
                '`strategy="reverse-mode"`.'
            )
        return _jacfwd(func, inputs, strict, vectorize)

    with torch.enable_grad():
        is_inputs_tuple, inputs = _preprocess_inputs(inputs, "jacobian", create_graph)
        is_outputs_tuple, outputs = _call_func(func, inputs, "jacobian", strict)

        if vectorize and strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` "
                "and `vectorized=True` are not supported together. "
                "Please either set `strict=False` or "
                "`vectorize=False`."
            )
        if vectorize:
            # All rows of each output in one engine call (is_grads_batched).
            jacobian = ()
            for out in outputs:
                n = out.nelement()
                basis = torch.eye(n, dtype=out.dtype).view((n,) + tuple(out.shape))
                vjs = (
                    (None,) * len(inputs)
                    if n == 0
                    else torch.autograd.grad(
                        (out,),
                        inputs,
                        (basis,),
                        retain_graph=True,
                        create_graph=create_graph,
                        allow_unused=True,
                        is_grads_batched=True,
                    )
                )
                jacobian += (
                    tuple(
                        (
                            vj
                            if vj is not None
                            else torch.zeros((n,) + tuple(inp.shape), dtype=inp.dtype)
                        ).view(tuple(out.size()) + tuple(inp.size()))
                        for vj, inp in zip(vjs, inputs)
                    ),
                )
            jacobian = _grad_postprocess(jacobian, create_graph)
            return _tuple_postprocess(jacobian, (is_outputs_tuple, is_inputs_tuple))

        jacobian = ()

        for i, out in enumerate(outputs):
            jac_i = tuple([] for _ in range(len(inputs)))
            flat_out = out.reshape(-1)
            for j in range(out.nelement()):
                vj = _autograd_grad(
                    (flat_out[j],),
                    inputs,
                    retain_graph=True,
                    create_graph=create_graph,
                )

                for el_idx, (jac_i_el, vj_el, inp_el) in enumerate(zip(jac_i, vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            msg = (
                                "The jacobian of the user-provided function is "
                                f"independent of input {i}. This is not allowed in "
                                "strict mode when create_graph=True."
                            )
                            raise RuntimeError(msg)
                        jac_i_el.append(vj_el)
                    else:
                        if strict:
                            msg = (
                                f"Output {i} of the user-provided function is "
                                f"independent of input {el_idx}. This is not allowed in "
                                "strict mode."
                            )
                            raise RuntimeError(msg)
                        jac_i_el.append(torch.zeros_like(inp_el))

            jacobian += (
                tuple(
                    _stack_rows(jac_i_el, inputs[el_idx]).view(
                        tuple(out.size()) + tuple(inputs[el_idx].size())
                    )
                    for (el_idx, jac_i_el) in enumerate(jac_i)
                ),
            )

        jacobian = _grad_postprocess(jacobian, create_graph)

        return _tuple_postprocess(jacobian, (is_outputs_tuple, is_inputs_tuple))


def _stack_rows(rows, inp):
    if rows:
        return torch.stack(rows, dim=0)
    # An output with no elements: an empty Jacobian.
    return torch.zeros((0,) + tuple(inp.shape), dtype=inp.dtype)


def hessian(
    func,
    inputs,
    create_graph=False,
    strict=False,
    vectorize=False,
    outer_jacobian_strategy="reverse-mode",
):
    r"""Compute the Hessian of a given scalar function.

    Returns a Tensor for a single input, else a tuple of tuples where ``H[i][j]``
    is the Hessian with respect to inputs ``i`` and ``j``.
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in (
        "forward-mode",
        "reverse-mode",
    ):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        is_out_tuple, t_out = _call_func(func, inp, "hessian", strict)
        _check_single_element(is_out_tuple, t_out, "hessian")
        return t_out[0].squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            # _grad_preprocess requires create_graph=True and input to require_grad
            # or else the input will be detached
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(
        jac_func,
        inputs,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    r"""Compute the dot product between vector ``v`` and the Hessian of a given
    scalar function at a specified point. Returns ``(func_output, vhp)``."""
    with torch.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _scalar_func_jacobian(
            func, inputs, v, create_graph, strict, "vhp"
        )

    vhp = _final_grad(jac, inputs, v, inputs, strict, create_graph, "double_back")
    return _postprocess(outputs, is_outputs_tuple, vhp, is_inputs_tuple, create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    r"""Compute the dot product between the scalar function's Hessian and a
    vector ``v`` at a specified point (double-backward trick, as torch does).
    Returns ``(func_output, hvp)``."""
    with torch.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _scalar_func_jacobian(
            func, inputs, v, create_graph, strict, "hvp"
        )
        grad_jac = tuple(torch.zeros_like(inp, requires_grad=True) for inp in inputs)

        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)

    hvp = _final_grad(double_back, grad_jac, v, inputs, strict, create_graph, "double_back_trick")
    return _postprocess(outputs, is_outputs_tuple, hvp, is_inputs_tuple, create_graph)
