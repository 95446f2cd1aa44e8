"""The tables tools/gen_stubs.py writes the stubs from: the stubbed modules
(``MODULES``), the extension's namespaces, the stub header, parameter types by
name (``PARAM_TYPES``, ``INIT_TYPES``), return types by function name
(``RETURNS``, ``NONE_RETURNS``) and the special methods a class stub shows.
"""

from __future__ import annotations

import re

# The modules that get a stub, in the order they are written. A class or
# function is defined in the deepest of these that contains the module it was
# defined in; every other module re-exports it from there.
MODULES = [
    "ferrograd",
    "ferrograd.return_types",
    "ferrograd.linalg",
    "ferrograd.random",
    "ferrograd.serialization",
    "ferrograd.special",
    "ferrograd.nn",
    "ferrograd.nn.functional",
    "ferrograd.nn.init",
    "ferrograd.nn.utils",
    "ferrograd.nn.parameter",
    "ferrograd.nn.modules",
    "ferrograd.nn.parallel",
    "ferrograd.optim",
    "ferrograd.optim.lr_scheduler",
    "ferrograd.autograd",
    "ferrograd.autograd.function",
    "ferrograd.autograd.grad_mode",
    "ferrograd.autograd.anomaly_mode",
    "ferrograd.autograd.forward_ad",
    "ferrograd.autograd.functional",
    "ferrograd.autograd.gradcheck",
    "ferrograd.autograd.graph",
    "ferrograd.autograd.profiler",
    "ferrograd.utils",
    "ferrograd.utils.checkpoint",
    "ferrograd.func",
    "ferrograd.utils.dlpack",
    "ferrograd.utils.safetensors",
    "ferrograd.distributed",
    "ferrograd.distributed.nn",
    "ferrograd.distributed.nn.functional",
    "ferrograd.amp",
    "ferrograd.amp.autocast_mode",
    "ferrograd.cpu",
    "ferrograd.cpu.amp",
]

# The extension's namespaces and the module whose stub defines their functions.
C_NAMESPACES = {
    "": "ferrograd",
    "_nn": "ferrograd.nn.functional",
    "_init": "ferrograd.nn.init",
    "_linalg": "ferrograd.linalg",
    "_special": "ferrograd.special",
}

# Every stub starts with these; names a stub does not use cost nothing.
HEADER = """\
# Written by tools/gen_stubs.py from the runtime, except the hand-written region
# below, which it keeps as it is: edit that here, and rerun the generator.
# fmt: off

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, overload

import ferrograd
from ferrograd import Tensor, _DeviceLike, _DTypeLike, _Number, _Shape, _Dims
"""

# Parameter name -> type, for every function and method without a hand-written
# stub. A parameter whose default is None also accepts None.
_SIZE = "_int | Sequence[_int]"
_TENSORS = [
    "input", "tensor", "a", "b", "mat", "mat1", "mat2", "vec", "vec1", "vec2", "tensor1",
    "tensor2", "target", "src", "mask", "indices", "condition", "batch1", "batch2", "x",
    "running_mean", "running_var", "pos_weight", "array", "end", "exponent", "values", "grad",
    "gradient", "source_tensor", "ndarray", "new_state", "param", "weight", "bias", "tangent",
    "primal", "grad_output",
]  # fmt: skip
PARAM_TYPES = {
    **{name: "Tensor" for name in _TENSORS},
    "other": "Tensor | _Number",
    "value": "Tensor | _Number",
    "fill_value": "Tensor | _Number",
    "min": "Tensor | _Number",
    "max": "Tensor | _Number",
    "alpha": "_Number",
    "beta": "_Number",
    "val": "_Number",
    "index": "Tensor",
    "dim": "_Dims",
    "dims": "_Dims",
    "shape": "_Shape",
    "size": "_Shape",
    "sizes": "_Shape",
    "output_size": _SIZE,
    "kernel_size": _SIZE,
    "stride": _SIZE,
    "padding": "_int | Sequence[_int] | str",
    "dilation": _SIZE,
    "output_padding": _SIZE,
    "normalized_shape": _SIZE,
    "pad": "Sequence[_int]",
    "shifts": _SIZE,
    "repeats": "Tensor | _int",
    "split_size_or_sections": _SIZE,
    "split_size": "_int",
    "split_sizes": "Sequence[_int]",
    "source": "Tensor",  # index_add/index_copy (movedim's is hand-written)
    "destination": _SIZE,
    "tensors": "Sequence[Tensor]",
    "inputs": "Tensor | Sequence[Tensor]",
    "outputs": "Tensor | Sequence[Tensor]",
    "grad_outputs": "Tensor | Sequence[Tensor]",
    "grad_tensors": "Tensor | Sequence[Tensor]",
    "grad_variables": "Tensor | Sequence[Tensor]",
    "operands": "Tensor",
    "parameters": "Tensor | Iterable[Tensor]",
    "params": "Iterable[Tensor] | Iterable[dict[str, Any]]",
    "dtype": "_DTypeLike",
    "device": "_DeviceLike",
    "layout": "object",
    "memory_format": "object",
    "generator": "Any",
    "num_samples": "_int",
    "replacement": "_bool",
    "seed": "_int",
    "manual_seed": "Generator",
    "set_state": "Generator",
    "get_state": "Tensor",
    "get_rng_state": "Tensor",
    "data": "Any",
    "obj": "object",
    "memo": "dict[Any, Any]",
    "format_spec": "str",
    "hook": "Callable[..., Any]",
    "fn": "Callable[..., Any]",
    "func": "Callable[..., Any]",
    "function": "Callable[..., Any]",
    "nonlinearity": "str",
    "mode": "str",
    "reduction": "str",
    "rounding_mode": "str",
    "approximate": "str",
    "equation": "str",
    "indexing": "str",
    "name": "str",
    "profile": "str",
    "ord": "_float",
    "reduce": "Any",
    "unbiased": "_bool",
    "correction": "_Number",
    "size_average": "_bool",
    "key": "Any",
    "copy": "_bool",
    "context": "Any",
    "kwargs": "Any",
    "args": "Any",
    "scale_factor": "_float | Sequence[_float]",
    "scale_factors": "Sequence[_float]",
    "lr": "_float | Tensor",
    "betas": "tuple[_float, _float]",
    "threshold": "_float",
    "mean": "_float",
    "std": "_float",
    "lambd": "_float",
    "low": "_int",
    "high": "_int",
    "low_or_high": "_int",
    "start": "_Number",
    "step": "_Number",
    "steps": "_int",
    "precision": "_int",
    "edgeitems": "_int",
    "linewidth": "_int",
    "sci_mode": "_bool",
    "num_batches_tracked": "Tensor",
    "clip_value": "_float",
    "max_norm": "_float",
    "norm_type": "_float",
    "foreach": "_bool",
    "gain": "_float",
    "nan": "_float",
    "posinf": "_float",
    "neginf": "_float",
    "_protocol": "Any",
    "p": "_float",
    "out": "Tensor",
    "v": "Tensor | Sequence[Tensor]",
    "padding_mode": "str",
    "sort_by": "str",
    "path": "str",
    "row_limit": "_int",
    "nondet_tol": "_float",
    "state_dict": "Mapping[str, Any]",
}
for _n in (
    "keepdim inplace ceil_mode return_indices count_include_pad training descending stable "
    "largest sorted equal_nan accumulate requires_grad pin_memory retain_graph create_graph "
    "only_inputs allow_unused is_grads_batched materialize_grads sparse_grad as_tuple "
    "non_blocking batched align_corners track_running_stats scale_grad_by_freq sparse "
    "error_if_nonfinite return_scalar force affine elementwise_affine bias_ strict enabled "
    "check_nan vectorize use_reentrant record_shapes with_stack profile_memory use_cuda "
    "group_by_input_shape preserve_rng_state "
).split():
    PARAM_TYPES[_n] = "_bool"
for _n in (
    "diagonal k n offset dim0 dim1 dim2 axis axis0 axis1 groups chunks start_dim end_dim length "
    "num_classes padding_idx ignore_index decimals divisor_override m d num_groups "
    "in_features out_features in_channels out_channels num_features num_embeddings "
    "embedding_dim "
).split():
    PARAM_TYPES[_n] = "_int"
for _n in "nesterov maximize differentiable fused amsgrad capturable centered".split():
    PARAM_TYPES[_n] = "_bool"
for _n in "dampening weight_decay lr_decay initial_accumulator_value".split():
    PARAM_TYPES[_n] = "_float"
for _n in "eps momentum negative_slope min_val max_val delta label_smoothing rtol atol".split():
    PARAM_TYPES[_n] = "_float"

# Constructor parameters whose type differs from PARAM_TYPES'.
INIT_TYPES = {
    "bias": "_bool",
    "weight": "Tensor",
    "optimizer": "Optimizer",
    "last_epoch": "_int",
    "step_size": "_int",
    "gamma": "_float",
    "milestones": "Sequence[_int]",
    "T_max": "_int",
    "eta_min": "_float",
    "factor": "_float",
    "total_iters": "_int",
    "start_factor": "_float",
    "end_factor": "_float",
    "lr_lambda": "Callable[[_int], _float] | Sequence[Callable[[_int], _float]]",
    "patience": "_int",
    "threshold_mode": "str",
    "cooldown": "_int",
    "min_lr": "_float | Sequence[_float]",
    "dim": "_int",
    "start_dim": "_int",
    "end_dim": "_int",
    "num_parameters": "_int",
    "init": "_float",
    "beta": "_float",
    "min": "_float",
    "max": "_float",
    "alpha": "_float",
    "value": "_float",
    "size": "_int | Sequence[_int]",
    "p": "_float",
    "out": "Tensor",
    "v": "Tensor | Sequence[Tensor]",
    "padding_mode": "str",
    "sort_by": "str",
    "path": "str",
    "row_limit": "_int",
    "nondet_tol": "_float",
    "state_dict": "Mapping[str, Any]",
}

# Function or method name -> return type, where it is not a Tensor.
RETURNS = {
    "solve_ex": "ferrograd.return_types.linalg_solve_ex",
    "inv_ex": "ferrograd.return_types.linalg_inv_ex",
    "cholesky_ex": "ferrograd.return_types.linalg_cholesky_ex",
    "slogdet": "Any",  # a named tuple (linalg_slogdet or slogdet by namespace)
    "qr": "Any",  # a named tuple (linalg_qr or qr by namespace)
    "svd": "Any",  # a named tuple (linalg_svd or svd by namespace)
    "eigh": "ferrograd.return_types.linalg_eigh",
    "lstsq": "ferrograd.return_types.linalg_lstsq",
    "triangular_solve": "Any",  # return_types.triangular_solve
    "dim": "_int",
    "ndimension": "_int",
    "numel": "_int",
    "nelement": "_int",
    "element_size": "_int",
    "get_num_threads": "_int",
    "initial_seed": "_int",
    "seed": "_int",
    "data_ptr": "_int",
    "storage_offset": "_int",
    "get_device": "_int",
    "is_tensor": "_bool",
    "equal": "_bool",
    "allclose": "_bool",
    "is_contiguous": "_bool",
    "is_floating_point": "_bool",
    "is_grad_enabled": "_bool",
    "is_inference_mode_enabled": "_bool",
    "is_anomaly_enabled": "_bool",
    "is_anomaly_check_nan_enabled": "_bool",
    "is_set_to": "_bool",
    "is_nonzero": "_bool",
    "is_same_size": "_bool",
    "calculate_gain": "_float",
    "get_default_dtype": "ferrograd.dtype",
    "tolist": "Any",
    "item": "_Number",
    "split": "tuple[Tensor, ...]",
    "chunk": "tuple[Tensor, ...]",
    "unbind": "tuple[Tensor, ...]",
    "meshgrid": "tuple[Tensor, ...]",
    "var_mean": "tuple[Tensor, Tensor]",
    "std_mean": "tuple[Tensor, Tensor]",
    "get_printoptions": "dict[str, Any]",
    "grad": "tuple[Tensor, ...]",
    "__repr__": "str",
    "__str__": "str",
    "__hash__": "_int",
    "__len__": "_int",
    "__bool__": "_bool",
    "__float__": "_float",
    "__int__": "_int",
    "__index__": "_int",
    "__format__": "str",
    "__iter__": "Iterator[Tensor]",
    "__contains__": "_bool",
    "forward": "Tensor",
    "__reduce__": "tuple[Any, ...]",
    "__reduce_ex__": "tuple[Any, ...]",
    "__getstate__": "Any",
}
NONE_RETURNS = {
    "backward",
    "set_num_threads",
    "set_default_dtype",
    "set_printoptions",
    "set_rng_state",
    "retain_grad",
    "__setitem__",
    "__delitem__",
    "__init__",
    "__setattr__",
    "__delattr__",
}
# The special methods a generated class stub shows (other dunders come from object).
_DUNDER_METHODS = {
    "__init__", "__call__", "__enter__", "__exit__", "__iter__", "__next__", "__len__",
    "__getitem__", "__setitem__", "__delitem__", "__contains__", "__getattr__", "__setattr__",
    "__delattr__", "__bool__", "__float__", "__int__", "__index__", "__array__", "__format__",
    "__deepcopy__", "__reduce_ex__", "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__",
    "__isub__", "__mul__", "__rmul__", "__imul__", "__truediv__", "__rtruediv__", "__itruediv__",
    "__floordiv__", "__rfloordiv__", "__ifloordiv__", "__mod__", "__rmod__", "__imod__",
    "__pow__", "__rpow__", "__ipow__", "__matmul__", "__rmatmul__", "__and__", "__rand__",
    "__iand__", "__or__", "__ror__", "__ior__", "__xor__", "__rxor__", "__ixor__", "__neg__",
    "__pos__", "__abs__", "__invert__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__", "__array_wrap__",
}  # fmt: skip
_BINARY_DUNDERS = {
    n for n in _DUNDER_METHODS if re.fullmatch(r"__[ri]?(add|sub|mul|truediv|floordiv|mod|pow|"
                                               r"matmul|and|or|xor)__", n)
}  # fmt: skip
_COMPARE_DUNDERS = {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"}
