"""functional_call and stack_module_state (torch.func's module helpers).
Parameter swapping only; no math here."""

from .. import _C

__all__ = [
    "functional_call",
    "stack_module_state",
    "replace_all_batch_norm_modules_",
    "debug_unwrap",
]


def _owner(module, name):
    parts = name.split(".")
    for p in parts[:-1]:
        module = getattr(module, p)
    return module, parts[-1]


def functional_call(
    module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False
):
    """Calls ``module(*args, **kwargs)`` with its parameters and buffers
    replaced by the tensors named in ``parameter_and_buffer_dicts`` (a dict
    or a sequence of dicts), restoring them afterwards."""
    if isinstance(parameter_and_buffer_dicts, dict):
        mapping = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        mapping = {}
        for d in parameter_and_buffer_dicts:
            for k, v in d.items():
                if k in mapping:
                    raise ValueError(
                        f"{k} appeared in multiple dictionaries; behavior of functional call "
                        "is ambiguous"
                    )
                mapping[k] = v
    else:
        raise ValueError(
            f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
            f"but got {type(parameter_and_buffer_dicts)}"
        )
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    kwargs = kwargs or {}
    known = dict(module.named_parameters(remove_duplicate=False))
    known.update(dict(module.named_buffers(remove_duplicate=False)))
    if strict:
        missing = sorted(set(known) - set(mapping))
        unexpected = sorted(set(mapping) - set(known))
        if missing or unexpected:
            raise RuntimeError(
                f"Error(s) in reparametrizing for {type(module).__name__}: missing {missing}, unexpected {unexpected}"
            )
    if tie_weights:
        # A tensor shared by several names follows the one that was given.
        by_id = {}
        for k, v in known.items():
            by_id.setdefault(id(v), []).append(k)
        for names in by_id.values():
            given = [n for n in names if n in mapping]
            if given:
                for n in names:
                    mapping.setdefault(n, mapping[given[0]])
    saved = []
    try:
        for name, value in mapping.items():
            owner, leaf = _owner(module, name)
            for table in ("_parameters", "_buffers"):
                d = owner.__dict__.get(table)
                if d is not None and leaf in d:
                    saved.append((d, leaf, d[leaf]))
                    d[leaf] = value
                    break
            else:
                saved.append((owner.__dict__, leaf, owner.__dict__.get(leaf, _MISSING)))
                owner.__dict__[leaf] = value
        return module(*args, **kwargs)
    finally:
        for d, leaf, old in reversed(saved):
            if old is _MISSING:
                del d[leaf]
            else:
                d[leaf] = old


_MISSING = object()


def stack_module_state(models):
    """``(params, buffers)``: each parameter and buffer of the models stacked
    along a new leading dim (for ``vmap`` over an ensemble)."""
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    first = type(models[0])
    if not all(type(m) is first for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named):
        names = [n for n, _ in named(models[0])]
        out = {}
        for n in names:
            ts = [dict(named(m))[n] for m in models]
            out[n] = _C.stack([t.detach() for t in ts])
        return out

    params = stacked(lambda m: m.named_parameters())
    for n, p in params.items():
        p.requires_grad_(dict(models[0].named_parameters())[n].requires_grad)
    buffers = stacked(lambda m: m.named_buffers())
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """In place: every BatchNorm module under ``root`` stops tracking running
    statistics (``running_mean``/``running_var``/``num_batches_tracked``
    become None), as torch.func needs for vmapping over batch norm."""
    from ..nn.modules.normalization import _BatchNorm

    for m in root.modules():
        if isinstance(m, _BatchNorm) and m.track_running_stats:
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root


def debug_unwrap(tensor, *, recurse=True):
    """The tensor under the transforms' wrappers. ferrograd's transforms do
    not wrap tensors (each level works on ordinary tensors), so this is
    ``tensor`` itself."""
    del recurse
    return tensor
