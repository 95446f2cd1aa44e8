"""Graph-building workloads for the lifetime tests (test_graph_lifetime.py)
and the leak table (tools/leak_table.py), written against a library
argument (``ferrograd`` or ``torch``).

Each workload builds one small graph of one kind, optionally runs backward
through it, and returns a dict of the objects it wants watched (outputs,
intermediate tensors, tensors stored on a custom Function's ctx, ctx and
node objects). Everything else it made is dropped when it returns, so once
the caller drops the dict, every watched object must die at once, with the
cyclic garbage collector off.
"""

import contextlib


def _functions(lib):
    """The custom Functions of the workloads, made once per library."""
    cache = _functions.__dict__.setdefault("cache", {})
    if lib.__name__ in cache:
        return cache[lib.__name__]
    Function = lib.autograd.Function

    class SaveBoth(Function):
        """y = 2x, saving its input and its output."""

        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * (y / x.clamp(min=1e-3)).clamp(max=2.0).clamp(min=2.0)

    class AttrOut(Function):
        """y = x^2 with the output stored as a plain ctx attribute."""

        @staticmethod
        def forward(ctx, x):
            y = x * x
            ctx.out = y
            ctx.x = x
            return y

        @staticmethod
        def backward(ctx, g):
            # d(x^2)/dx = 2 out / x, written through the ctx attributes so
            # that double backward goes through the output too.
            return g * 2 * ctx.out / ctx.x

    class AttrInputs(Function):
        """x * w with both inputs (which need not be leaves) on ctx."""

        @staticmethod
        def forward(ctx, x, w):
            ctx.inp = x
            ctx.w = w
            return x * w

        @staticmethod
        def backward(ctx, g):
            return g * ctx.w, g * ctx.inp

    class AttrContainers(Function):
        """Two outputs; intermediates, outputs and views of outputs stored
        on ctx inside lists, tuples and dicts."""

        @staticmethod
        def forward(ctx, x):
            a = x.exp()
            b = a * 3
            tmp = x + 1
            ctx.tmp = [tmp, a, (b, a[0]), {"b": b, "nested": [a, tmp * 2]}]
            ctx.pair = (a, b)
            ctx.first = a[0]
            ctx.info = {"n": 2, "outs": {"a": a}}
            return a, b

        @staticmethod
        def backward(ctx, ga, gb):
            a = ctx.tmp[1]
            return ga * a + gb * ctx.tmp[3]["b"]

    class Dirty(Function):
        """Scales its (non-leaf) input in place and returns it."""

        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            ctx.x = x
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    fns = {
        "SaveBoth": SaveBoth,
        "AttrOut": AttrOut,
        "AttrInputs": AttrInputs,
        "AttrContainers": AttrContainers,
        "Dirty": Dirty,
    }
    cache[lib.__name__] = fns
    return fns


def _leaf(lib, n=8):
    return (lib.rand(n, dtype=lib.float64) + 0.5).requires_grad_(True)


def builtin(lib, backward=False):
    x = _leaf(lib)
    h = (x * 2).exp()
    y = (h * x).sin().sum()
    if backward:
        y.backward()
    return {"x": x, "h": h, "y": y, "y.grad_fn": y.grad_fn, "h.grad_fn": h.grad_fn}


def custom_saved(lib, backward=False):
    x = _leaf(lib)
    y = _functions(lib)["SaveBoth"].apply(x * 1)
    ctx = y.grad_fn
    z = y.exp().sum()
    if backward:
        z.backward()
    return {"y": y, "ctx": ctx, "z": z}


def ctx_out(lib, backward=False, retain_graph=False):
    x = _leaf(lib)
    y = _functions(lib)["AttrOut"].apply(x * 1)
    ctx = y.grad_fn
    z = y.sum()
    if backward:
        z.backward(retain_graph=retain_graph)
    return {"y": y, "ctx": ctx, "z": z}


def ctx_out_unwatched_ctx(lib, backward=False):
    """ctx.out = out, with nothing ever asking for ``y.grad_fn``."""
    x = _leaf(lib)
    y = _functions(lib)["AttrOut"].apply(x)
    z = (y * 3).sum()
    if backward:
        z.backward()
    return {"y": y, "z": z}


def ctx_inputs(lib, backward=False):
    a = _leaf(lib)
    x = a * 2  # a non-leaf input
    w = _leaf(lib)
    y = _functions(lib)["AttrInputs"].apply(x, w)
    ctx = y.grad_fn
    z = y.sum()
    if backward:
        z.backward()
    return {"x": x, "y": y, "ctx": ctx, "z": z}


def ctx_containers(lib, backward=False, retain_graph=False):
    x = _leaf(lib)
    a, b = _functions(lib)["AttrContainers"].apply(x * 1)
    ctx = a.grad_fn
    z = (a + b).sum()
    if backward:
        z.backward(retain_graph=retain_graph)
    return {"a": a, "b": b, "ctx": ctx, "z": z}


def ctx_dirty(lib, backward=False):
    x = _leaf(lib) * 1
    y = _functions(lib)["Dirty"].apply(x)
    ctx = y.grad_fn
    z = y.sum()
    if backward:
        z.backward()
    return {"x": x, "y": y, "ctx": ctx, "z": z}


def double_backward(lib):
    """autograd.grad with create_graph through a Function whose backward
    reads its output from ctx, then a second grad through that."""
    x = _leaf(lib)
    y = _functions(lib)["AttrOut"].apply(x * 1)
    (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
    (gg,) = lib.autograd.grad(g.sum(), x)
    return {"y": y, "g": g, "gg": gg, "ctx": y.grad_fn}


def mixed(lib, backward=False):
    """Built-in ops, custom Functions, hooks and saved tensors in one graph."""
    fns = _functions(lib)
    x = _leaf(lib)
    w = _leaf(lib)
    h = (x * w).tanh()
    h.register_hook(lambda g: g * 0.5)
    a, b = fns["AttrContainers"].apply(h)
    c = fns["AttrOut"].apply(a + w)
    d = fns["SaveBoth"].apply(c * b)
    d.grad_fn.register_prehook(lambda grads: None)
    c.grad_fn.register_hook(lambda gi, go: None)
    y = (d + h).sum()
    if backward:
        y.backward()
    return {"h": h, "a": a, "c": c, "d": d, "y": y, "ctx_a": a.grad_fn, "ctx_d": d.grad_fn}


def tensor_hooks(lib, backward=False):
    """Hooks on a leaf and on intermediates whose closures hold tensors of
    the graph that are not downstream of the hooked tensor."""
    x = _leaf(lib)
    w = _leaf(lib)
    scale = lib.ones(8, dtype=lib.float64)
    x.register_hook(lambda g: g * scale)
    h = x * w
    h.register_hook(lambda g: g + 0 * x.detach())
    y = h.exp()
    y.register_hook(lambda g: g * w.detach())
    z = y.sum()
    if backward:
        z.backward()
    return {"h": h, "y": y, "z": z}


def node_hooks(lib, backward=False):
    """grad_fn hooks and pre-hooks (built-in and custom nodes) whose
    closures hold leaves and earlier tensors of the graph."""
    x = _leaf(lib)
    h = x.exp()
    y = _functions(lib)["SaveBoth"].apply(h)
    seen = []
    h.grad_fn.register_hook(lambda gi, go: seen.append(x.shape))
    h.grad_fn.register_prehook(lambda go: None)
    y.grad_fn.register_hook(lambda gi, go: seen.append(h.shape))
    y.grad_fn.register_prehook(lambda go: seen.append(x.shape))
    z = y.sum()
    if backward:
        z.backward()
    return {"h": h, "y": y, "z": z, "ctx": y.grad_fn}


def grad_hooks(lib):
    """retain_grad, a post-accumulate-grad hook on a leaf and a multi-grad
    hook over two tensors of the graph.

    Known leak (Rust objects only, so weak references to the Python objects
    do not see it; tools/leak_table.py does): each tensor hook of
    register_multi_grad_hook holds the grad nodes of all the tensors
    strongly, its own node included (src/autograd/multi_grad_hook.rs)."""
    x = _leaf(lib)
    x.register_post_accumulate_grad_hook(lambda t: None)
    y = x * 2
    y.retain_grad()
    z = y.exp()
    lib.autograd.graph.register_multi_grad_hook((y, z), lambda grads: None)
    s = (z + y).sum()
    s.backward()
    return {"x": x, "y": y, "z": z, "s": s}


def create_graph(lib):
    """backward with create_graph (x.grad has a graph; torch warns that this
    makes a cycle between a leaf and its gradient, and leaks it).

    Known leak, as in torch (Rust objects only, invisible to weak
    references): leaf -> .grad -> its graph -> the leaf's AccumulateGrad ->
    the leaf (src/autograd/accumulate.rs holds its variable strongly)."""
    x = _leaf(lib)
    y = _functions(lib)["SaveBoth"].apply((x * x).exp())
    with warnings_off():
        y.sum().backward(create_graph=True)
    return {"x": x, "x.grad": x.grad, "y": y}


def saved_tensor_hooks(lib, backward=False):
    """Saved-tensor hooks that keep the tensor itself, a copy, or a handle
    into a list, around built-in ops and a custom Function."""
    store = []

    def pack_index(t):
        store.append(t)
        return len(store) - 1

    fns = _functions(lib)
    x = _leaf(lib)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        a = (x * 2).exp()
        b = fns["SaveBoth"].apply(a)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        c = (b * a).sin()
    with lib.autograd.graph.saved_tensors_hooks(pack_index, lambda i: store[i]):
        d = fns["SaveBoth"].apply(c).exp()
    z = d.sum()
    if backward:
        z.backward()
    return {"a": a, "b": b, "c": c, "d": d, "z": z, "ctx": b.grad_fn}


def retain_graph(lib):
    """Two backward passes with retain_graph=True, then the graph dropped."""
    fns = _functions(lib)
    x = _leaf(lib)
    a, b = fns["AttrContainers"].apply(x * 1)
    c = fns["AttrOut"].apply(a * b)
    z = fns["SaveBoth"].apply(c).sum()
    z.backward(retain_graph=True)
    z.backward(retain_graph=True)
    return {"a": a, "c": c, "z": z, "ctx_a": a.grad_fn, "ctx_c": c.grad_fn}


def anomaly(lib, backward=True):
    """A graph built and run under detect_anomaly (which records the
    forward traceback of every node)."""
    fns = _functions(lib)
    with warnings_off(), lib.autograd.detect_anomaly():
        x = _leaf(lib)
        a = fns["AttrOut"].apply(x * 1)
        y = fns["SaveBoth"].apply(a.exp())
        z = y.sum()
        if backward:
            z.backward()
    return {"a": a, "y": y, "z": z, "ctx": a.grad_fn}


def checkpoint(lib, use_reentrant=False, backward=True):
    fns = _functions(lib)
    w = _leaf(lib)

    def block(x):
        return fns["AttrOut"].apply((x * w).tanh()).exp()

    x = _leaf(lib)
    h = lib.utils.checkpoint.checkpoint(block, x, use_reentrant=use_reentrant)
    y = lib.utils.checkpoint.checkpoint(block, h, use_reentrant=use_reentrant)
    z = y.sum()
    if backward:
        z.backward()
    return {"h": h, "y": y, "z": z}


@contextlib.contextmanager
def warnings_off():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _named(f, **kw):
    def run(lib):
        return f(lib, **kw)

    run.__name__ = f.__name__ + "".join(f"[{k}={v}]" for k, v in kw.items())
    return run


# name -> workload(lib) -> {name: object to watch}
WORKLOADS = {
    "builtin": _named(builtin),
    "builtin+backward": _named(builtin, backward=True),
    "custom_saved": _named(custom_saved),
    "custom_saved+backward": _named(custom_saved, backward=True),
    "ctx.out": _named(ctx_out),
    "ctx.out+backward": _named(ctx_out, backward=True),
    "ctx.out+retain_graph": _named(ctx_out, backward=True, retain_graph=True),
    "ctx.out (grad_fn unused)": _named(ctx_out_unwatched_ctx),
    "ctx.out (grad_fn unused)+backward": _named(ctx_out_unwatched_ctx, backward=True),
    "ctx.inp": _named(ctx_inputs),
    "ctx.inp+backward": _named(ctx_inputs, backward=True),
    "ctx.tmp containers": _named(ctx_containers),
    "ctx.tmp containers+backward": _named(ctx_containers, backward=True),
    "ctx.tmp containers+retain_graph": _named(ctx_containers, backward=True, retain_graph=True),
    "mark_dirty + ctx.x": _named(ctx_dirty),
    "mark_dirty + ctx.x+backward": _named(ctx_dirty, backward=True),
    "double backward": _named(double_backward),
    "mixed": _named(mixed),
    "mixed+backward": _named(mixed, backward=True),
    "tensor hooks": _named(tensor_hooks),
    "tensor hooks+backward": _named(tensor_hooks, backward=True),
    "node hooks": _named(node_hooks),
    "node hooks+backward": _named(node_hooks, backward=True),
    "grad hooks (retain_grad, post-accumulate, multi-grad)": _named(grad_hooks),
    "backward(create_graph=True)": _named(create_graph),
    "saved-tensor hooks": _named(saved_tensor_hooks),
    "saved-tensor hooks+backward": _named(saved_tensor_hooks, backward=True),
    "retain_graph": _named(retain_graph),
    "anomaly": _named(anomaly, backward=False),
    "anomaly+backward": _named(anomaly),
    "checkpoint": _named(checkpoint, backward=False),
    "checkpoint+backward": _named(checkpoint),
    "checkpoint reentrant": _named(checkpoint, use_reentrant=True, backward=False),
    "checkpoint reentrant+backward": _named(checkpoint, use_reentrant=True),
}
