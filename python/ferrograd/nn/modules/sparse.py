"""Embedding: a lookup table of learnable rows."""

from ... import _C
from .. import functional as F
from ..parameter import Parameter
from ._op_module import _OpModule


class Embedding(_OpModule, op=F.embedding):
    _args = ("weight", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse")

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
        _weight=None,
        _freeze=False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            if padding_idx < 0:
                padding_idx += num_embeddings
        self._store(locals())  # padding_idx ... sparse (no weight yet)
        if _weight is None:
            weight = _C.empty((num_embeddings, embedding_dim), device=device, dtype=dtype)
            self.weight = Parameter(weight, requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError(
                    "Shape of weight does not match num_embeddings and embedding_dim"
                )
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self):
        _C._init.normal_(self.weight)
        if self.padding_idx is not None:
            _C._init.zeros_(self.weight.data[self.padding_idx])

    def extra_repr(self):
        # torch's: the arguments that differ from their defaults.
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, **kwargs):
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, _weight=embeddings, _freeze=freeze, **kwargs)
