"""torch.nn.utils: gradient clipping (Rust, `src/nn/clip.rs`) and the
parameter <-> vector conversions."""

from ... import Tensor, _C
from ..._C import cat

clip_grad_norm_ = _C._nn.clip_grad_norm_
clip_grad_value_ = _C._nn.clip_grad_value_


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of clip_grad_norm_ (as in torch)."""
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def parameters_to_vector(parameters):
    """The parameters flattened and joined into one vector."""
    return cat([p.view(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Points each parameter's data at its slice of `vec` (as torch does:
    the parameters then share `vec`'s memory)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    start = 0
    for p in parameters:
        n = p.numel()
        p.data = vec[start : start + n].view_as(p).data
        start += n


__all__ = [
    "clip_grad_norm_",
    "clip_grad_norm",
    "clip_grad_value_",
    "parameters_to_vector",
    "vector_to_parameters",
]
