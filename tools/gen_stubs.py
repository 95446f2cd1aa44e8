"""Writes ferrograd's type stubs (python/ferrograd/**/*.pyi) from the runtime.

    python tools/gen_stubs.py            # rewrite the stubs and __init__.py's _C block
    python tools/gen_stubs.py --check    # exit 1 if anything is out of date

Every public module of the package gets a stub listing the names in its
``__all__``. A function's parameters come from its runtime signature (the
``__text_signature__`` PyO3 writes for the extension's functions and Tensor
methods, ``inspect.signature`` for Python functions); their types from
PARAM_TYPES (by parameter name) and return types from RETURNS (by function
name), Tensor for the extension's ops; these tables are in tools/stub_tables.py.

What cannot be generated (overloads, classes, exact types, type aliases) is
written by hand once, in the checked-in stub itself, between the lines
HAND_BEGIN and HAND_END below: the generator reads that region back and keeps
it as it is (a comment belongs to the statement right below it), and a name
defined there is not generated. A hand-written class gets the generated
members it does not define itself, after its GENERATED_MEMBERS line (rewritten
on each run). Names re-exported from another stubbed module become
``from module import name as name``.

The ``from ._C import (...)`` block of python/ferrograd/__init__.py (the
extension's public names, part of ``ferrograd.__all__``) is rewritten from
``dir(_C)`` too, so a new op is exported and stubbed by one run.

tests/python/test_stubs.py checks that the checked-in stubs equal a fresh run.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import re
import sys
import types
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG_DIR = os.path.join(ROOT, "python")

# The hand-written region of a checked-in stub, and the line inside a
# hand-written class after which its generated members follow.
HAND_BEGIN = "# ---- hand-written: kept as it is by tools/gen_stubs.py (edit here) ----"
HAND_END = "# ---- generated: rewritten by tools/gen_stubs.py from the runtime ----"
GENERATED_MEMBERS = "    # ---- generated members ----"

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:  # loaded by file (tests/python/test_stubs.py): stub_tables beside it
    sys.path.insert(0, _HERE)

# The tables (modules, parameter and return types by name) are in stub_tables.py.
from stub_tables import (  # noqa: E402
    _BINARY_DUNDERS,
    _COMPARE_DUNDERS,
    _DUNDER_METHODS,
    C_NAMESPACES,
    HEADER,
    INIT_TYPES,
    MODULES,
    NONE_RETURNS,
    PARAM_TYPES,
    RETURNS,
)


@dataclass
class Stub:
    """One stub file: its header, its definitions by name, and re-exports."""

    module: str
    path: str
    header: list[str] = field(default_factory=list)
    defs: dict[str, str] = field(default_factory=dict)
    reexports: dict[str, list[str]] = field(default_factory=dict)
    submodules: list[str] = field(default_factory=list)


def _import_ferrograd():
    if importlib.util.find_spec("ferrograd") is None:
        sys.path.insert(0, PKG_DIR)  # the source tree (its _C links to the dev build)
    import ferrograd

    for m in MODULES:
        if m != "ferrograd.return_types":
            importlib.import_module(m)
    return ferrograd


def _module_obj(name):
    import ferrograd

    if name == "ferrograd.return_types":
        return ferrograd._C.return_types
    return sys.modules[name]


def _public_names(name):
    mod = _module_obj(name)
    if name == "ferrograd.return_types":
        return sorted(n for n in dir(mod) if not n.startswith("_"))
    if name == "ferrograd":
        # The extension's names as dir(_C) has them now: the __init__.py block
        # that exports them is rewritten by this same run.
        own = [n for n in mod.__all__ if n not in mod._C_EXPORTS]
        return own + _c_exports()
    return list(mod.__all__)


def _c_exports():
    import ferrograd

    return sorted(n for n in dir(ferrograd._C) if not n.startswith("_"))


def _c_home(obj):
    """The stubbed module that defines an extension function, or None."""
    import ferrograd

    c = ferrograd._C
    for ns, home in C_NAMESPACES.items():
        space = getattr(c, ns) if ns else c
        for n in dir(space):
            if not n.startswith("_") and getattr(space, n) is obj:
                return home, n
    return None


def _home(obj, here, name):
    """The module whose stub defines `obj` (exported as `name` from `here`)."""
    if isinstance(obj, types.ModuleType):
        return None
    if isinstance(obj, types.BuiltinFunctionType):
        found = _c_home(obj)
        if found and found[0] in MODULES and name in _public_names(found[0]):
            return found[0]
        return here
    mod = getattr(obj, "__module__", None)
    if mod == "ferrograd._C" or mod == "ferrograd.return_types":
        mod = "ferrograd" if mod == "ferrograd._C" else mod
    if not isinstance(mod, str) or not mod.startswith("ferrograd"):
        return here
    best = None
    for m in MODULES:
        if (mod == m or mod.startswith(m + ".")) and (best is None or len(m) > len(best)):
            if name in _public_names(m):
                best = m
    return best or here


# ---------------------------------------------------------------- signatures


def _signature(obj):
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def _param_type(fname, p):
    if p.kind is p.VAR_KEYWORD:
        return "Any"
    t = INIT_TYPES.get(p.name) if fname == "__init__" else None
    if t is None:
        t = PARAM_TYPES.get(p.name)
    if t is None:
        t = "Any"
    if p.kind is p.VAR_POSITIONAL:
        if p.name in ("shape", "size", "sizes", "dims"):
            return "_int | Sequence[_int]"
        if p.name in ("tensors", "operands"):
            return "Tensor"
        return "Any"
    if p.default is None and t not in ("Any", "None", "object") and "None" not in t:
        t = t + " | None"
    if fname in _BINARY_DUNDERS or fname in _COMPARE_DUNDERS:
        t = "Any"
    return t


def _render_params(fname, sig, method):
    out = []
    params = list(sig.parameters.values())
    if method:
        if params and params[0].kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            first = params.pop(0)
            out.append(first.name if first.name in ("self", "cls") else "self")
        else:
            out.append("self")
    seen_posonly = False
    star_done = False
    for i, p in enumerate(params):
        if p.kind is p.POSITIONAL_ONLY:
            seen_posonly = True
        elif seen_posonly:
            out.append("/")
            seen_posonly = False
        if p.kind is p.KEYWORD_ONLY and not star_done:
            out.append("*")
            star_done = True
        if p.kind is p.VAR_POSITIONAL:
            star_done = True
        if p.name == "mod" and fname in ("__pow__", "__rpow__"):
            continue  # pow(x, y, mod) is not a tensor op; keeps ** and **= compatible
        t = _param_type(fname, p)
        prefix = "*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else ""
        s = f"{prefix}{p.name}: {t}"
        if p.default is not p.empty:
            s += " = ..."
        out.append(s)
    if seen_posonly:
        out.append("/")
    return out


def _def(name, params, ret, indent="", decorators=()):
    lines = [f"{indent}@{d}" for d in decorators]
    # Tensor comparisons are elementwise: not object's `-> bool`.
    ignore = "  # type: ignore[override]" if name in ("__eq__", "__ne__") and ret != "Any" else ""
    one = f"{indent}def {name}({', '.join(params)}) -> {ret}: ...{ignore}"
    if len(one) <= 100:
        return "\n".join(lines + [one])
    inner = "".join(f"{indent}    {p},\n" for p in params)
    return "\n".join(
        lines
        + [
            f"{indent}def {name}(  {ignore.strip()}\n{inner}{indent}) -> {ret}: ..."
            if ignore
            else f"{indent}def {name}(\n{inner}{indent}) -> {ret}: ..."
        ]
    )


def _return_type(name, default):
    if name in NONE_RETURNS:
        return "None"
    if name in RETURNS:
        return RETURNS[name]
    if name.startswith("is_") or name in _COMPARE_DUNDERS and default == "Tensor":
        return "Tensor" if default == "Tensor" else "_bool"
    return default


def _function(name, obj, default_ret, indent="", method=False, decorators=()):
    sig = _signature(obj)
    if sig is None:
        params = (["self"] if method else []) + ["*args: Any", "**kwargs: Any"]
    else:
        params = _render_params(name, sig, method)
    return _def(name, params, _return_type(name, default_ret), indent, decorators)


# ----------------------------------------------------------------- classes


def _base_name(base, stub, imports):
    if base is object:
        return None
    mod = base.__module__
    if mod == "builtins":
        generic = {list: "[Any]", dict: "[Any, Any]", tuple: "[Any, ...]", set: "[Any]"}
        return base.__qualname__ + generic.get(base, "")
    if not mod.startswith("ferrograd"):
        imports.add(f"import {mod}")
        return f"{mod}.{base.__qualname__}"
    home = _home(base, stub.module, base.__name__)
    if home and home.startswith("ferrograd"):
        if home != stub.module:
            imports.add(f"from {home} import {base.__name__}")
        return base.__name__
    imports.add(f"import {mod}")
    return f"{mod}.{base.__qualname__}"


def _public_base(base, stub):
    """Whether `base` can be named in a stub (else its members are inlined)."""
    if base.__module__ == "builtins":
        return True
    if base.__name__.startswith("_"):
        return False
    if not base.__module__.startswith("ferrograd"):
        return True
    home = _home(base, stub.module, base.__name__)
    return home in MODULES and base.__name__ in _public_names(home)


def _bases(cls, stub):
    """`cls`'s nameable bases, and the private ones whose members it shows."""
    public, inlined = [], []
    for b in cls.__bases__:
        if b is object:
            continue
        if _public_base(b, stub):
            public.append(b)
        else:
            inlined.append(b)
            more_public, more_inlined = _bases(b, stub)
            public += [x for x in more_public if x not in public]
            inlined += more_inlined
    return public, inlined


def _class_members(cls, ext, skip, stub):
    """Generated member stubs of `cls` (those not in `skip`), by name."""
    members = {}
    # A hand-written class (skip non-empty) shows only its own members.
    _, inlined = _bases(cls, stub) if not skip else ([], [])
    for klass in [cls] + inlined:
        for name, m in _own_members(klass, ext, skip).items():
            members.setdefault(name, m)
    return members


def _own_members(cls, ext, skip):
    members = {}
    # An extension class's attributes come in an order that can change from
    # one process to the next (PyO3 collects getters in a hash map): sorted.
    items = sorted(vars(cls).items()) if ext else vars(cls).items()
    for name, val in items:
        if name in skip:
            continue
        if name.startswith("_") and name not in _DUNDER_METHODS:
            continue
        if name in ("__init__",) and ext:
            continue  # the extension's __init__ takes *args: stubbed by hand
        default = "Tensor" if ext and cls.__name__ == "Tensor" else "Any"
        if isinstance(val, staticmethod):
            members[name] = _function(name, val.__func__, default, "    ", False, ["staticmethod"])
        elif isinstance(val, classmethod):
            members[name] = _function(name, val.__func__, default, "    ", True, ["classmethod"])
        elif isinstance(val, property) or type(val).__name__ == "getset_descriptor":
            members[name] = f"    @property\n    def {name}(self) -> Any: ..."
        elif callable(val):
            members[name] = _function(name, val, default, "    ", True)
        else:
            members[name] = f"    {name}: {_value_type(val)}"
    return members


def _class(name, cls, stub, imports, overlay_src=None, overlay_members=()):
    import ferrograd

    ext = getattr(ferrograd._C, cls.__name__, None) is cls  # an extension class
    if overlay_src is not None:
        body = overlay_src
        extra = _class_members(cls, ext, set(overlay_members), stub)
        if extra:
            body = body.rstrip("\n")
            last = body.splitlines()[-1]
            if last.startswith("class ") and last.endswith(": ..."):  # an empty body
                body = body[: -len(" ...")]
            generated = "\n".join(extra[k] for k in sorted(extra))
            body = body + "\n" + GENERATED_MEMBERS + "\n" + generated
        return body
    public, _ = _bases(cls, stub)
    bases = [b for b in (_base_name(b, stub, imports) for b in public) if b]
    head = f"class {name}({', '.join(bases)}):" if bases else f"class {name}:"
    members = _class_members(cls, ext, set(), stub)
    if not members:
        return head + " ..."
    return head + "\n" + "\n".join(members[k] for k in members)


# ------------------------------------------------------------------ overlay


@dataclass
class Overlay:
    header: list[str]
    defs: dict[str, str]
    class_members: dict[str, list[str]]


def _stmt_name(node):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        t = node.targets[0]
        if isinstance(t, ast.Name):
            return t.id
    return None


def _segment(lines, node):
    start = node.lineno
    if getattr(node, "decorator_list", None):
        start = min(d.lineno for d in node.decorator_list)
    # Comment lines directly above belong to the statement.
    while start > 1 and lines[start - 2].lstrip().startswith("#"):
        start -= 1
    return "\n".join(lines[start - 1 : node.end_lineno])


def _hand_written(path):
    """The hand-written region of the stub at `path` (its classes without their
    generated members), or None where the stub has none."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        lines = f.read().splitlines()
    if HAND_BEGIN not in lines:
        return None
    region = lines[lines.index(HAND_BEGIN) + 1 : lines.index(HAND_END)]
    out, skipping = [], False
    for line in region:
        if line == GENERATED_MEMBERS:
            skipping = True
            if out[-1].startswith("class ") and out[-1].endswith(":"):
                out[-1] += " ..."  # nothing but generated members
            continue
        if skipping and (line.startswith(" ") or not line):
            continue
        skipping = False
        out.append(line)
    return "\n".join(out) + "\n"


def _read_overlay(stub_path):
    src = _hand_written(stub_path)
    if src is None:
        return Overlay([], {}, {})
    lines = src.splitlines()
    tree = ast.parse(src)
    header, defs, members = [], {}, {}
    for node in tree.body:
        name = _stmt_name(node)
        seg = _segment(lines, node)
        if isinstance(node, (ast.Import, ast.ImportFrom)) or name is None:
            header.append(seg)
        elif name.startswith("_"):
            header.append(seg)  # private helpers (type aliases, TypeVars), __version__
        else:
            defs[name] = defs[name] + "\n" + seg if name in defs else seg  # overloads
            if isinstance(node, ast.ClassDef):
                members[name] = [n for n in (_stmt_name(b) for b in node.body) if n]
    return Overlay(header, defs, members)


# ------------------------------------------------------------------- render


def _stub_path(module):
    parts = module.split(".")
    pkg = os.path.join(PKG_DIR, *parts)
    if os.path.isdir(pkg):
        return os.path.join(pkg, "__init__.pyi")
    return os.path.join(PKG_DIR, *parts[:-1], parts[-1] + ".pyi")


def render_module(module):
    path = _stub_path(module)
    overlay = _read_overlay(path)
    mod = _module_obj(module)
    stub = Stub(module, path)
    imports = set()
    ext_ops = module in C_NAMESPACES.values()
    for name in _public_names(module):
        obj = getattr(mod, name) if hasattr(mod, name) else getattr(mod._C, name)
        if isinstance(obj, types.ModuleType):
            target = obj.__name__
            if target == "return_types":
                target = "ferrograd.return_types"
            parent, _, leaf = target.rpartition(".")
            if parent == module and leaf == name:
                stub.submodules.append(name)
            else:
                stub.reexports.setdefault(parent, []).append(f"{leaf} as {name}")
            continue
        home = _home(obj, module, name)
        if home != module:
            if name in overlay.defs:
                raise SystemExit(f"{path}: hand-written {name} belongs in the stub of {home}")
            stub.reexports.setdefault(home, []).append(f"{name} as {name}")
            continue
        if name in overlay.defs and not isinstance(obj, type):
            stub.defs[name] = overlay.defs[name]
        elif isinstance(obj, type):
            stub.defs[name] = _class(
                name,
                obj,
                stub,
                imports,
                overlay.defs.get(name),
                overlay.class_members.get(name, ()),
            )
        elif callable(obj):
            default = "Tensor" if ext_ops or isinstance(obj, types.BuiltinFunctionType) else "Any"
            stub.defs[name] = _function(name, obj, default)
        else:
            stub.defs[name] = f"{name}: {_value_type(obj)}"
    extra = sorted(set(overlay.defs) - set(_public_names(module)))
    if extra:
        raise SystemExit(f"{path}: hand-written stubs {extra} that {module}.__all__ lacks")
    return _assemble(stub, overlay, imports)


def _value_type(obj):
    t = type(obj)
    if t in (bool, int, float):
        return "_" + t.__name__
    if t in (str, bytes):
        return t.__name__
    if t.__module__ == "builtins":
        return "Any"
    if t.__module__.startswith("ferrograd"):
        return f"ferrograd.{t.__name__}"
    return "Any"


def _assemble(stub, overlay, imports):
    out = [HEADER]
    if stub.module == "ferrograd":
        out[0] = out[0].replace("\nimport ferrograd\nfrom ferrograd import Tensor, _DeviceLike"
                                ", _DTypeLike, _Number, _Shape, _Dims\n", "\n")  # fmt: skip
        out[0] = out[0].replace("ferrograd.dtype", "dtype")
    extra = sorted(imports)
    if extra:
        out.append("\n".join(extra) + "\n")
    if stub.submodules:
        # Only a package (an __init__.pyi) has submodules.
        out.append("".join(f"from . import {n} as {n}\n" for n in stub.submodules))
    if stub.reexports:
        lines = []
        for mod in sorted(stub.reexports):
            for item in sorted(stub.reexports[mod]):
                lines.append(f"from {mod} import {item}\n")
        out.append("".join(lines))
    # No __all__: a stub's exported names are its public definitions and its
    # `import x as x` re-exports (tests/python/test_stubs.py checks them
    # against the runtime's __all__), so the list is not written twice.
    hand = {n: d for n, d in stub.defs.items() if n in overlay.defs}
    out.append(HAND_BEGIN + "\n")
    if overlay.header:
        out.append("\n".join(overlay.header) + "\n")
    _append_defs(out, hand.values())
    out.append(HAND_END + "\n")
    _append_defs(out, [d for n, d in stub.defs.items() if n not in hand])
    text = "\n".join(out)
    if stub.module == "ferrograd":
        text = text.replace("-> ferrograd.dtype", "-> dtype").replace(
            ": ferrograd.dtype", ": dtype"
        )
    return text


def _append_defs(out, defs):
    """Classes first, a blank line after each, then the functions."""
    defs = list(defs)
    classes = [d for d in defs if d.lstrip("@#").startswith("class ") or "\nclass " in d]
    funcs = [d for d in defs if d not in classes]
    for c in classes:
        out.append(c + "\n")
    if funcs:
        out.append("\n".join(funcs) + "\n")


def render_all():
    """{path: text} for every stub, and the new text of ferrograd/__init__.py."""
    _import_ferrograd()
    files = {_stub_path(m): render_module(m) for m in MODULES}
    init = os.path.join(PKG_DIR, "ferrograd", "__init__.py")
    files[init] = render_init(init)
    return files


_BLOCK = re.compile(
    r"(# BEGIN _C exports \(generated by tools/gen_stubs.py\)\n).*?(# END _C exports\n)", re.S
)


def render_init(path):
    import ferrograd

    names = _c_exports()
    body = (
        "from ._C import (  # noqa: F401\n"
        + "".join(f"    {n},\n" for n in names)
        + ")\n\n_C_EXPORTS = [\n"
        + "".join(f'    "{n}",\n' for n in names)
        + "]\n"
    )
    with open(path) as f:
        src = f.read()
    if not _BLOCK.search(src):
        raise SystemExit(f"{path}: no '# BEGIN _C exports' block")
    return _BLOCK.sub(lambda m: m.group(1) + body + m.group(2), src)


def main(argv):
    check = "--check" in argv
    files = render_all()
    stale = []
    for path, text in files.items():
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            stale.append(os.path.relpath(path, ROOT))
            if not check:
                with open(path, "w") as f:
                    f.write(text)
    verb = "out of date" if check else "written"
    for p in stale:
        print(f"{verb}: {p}")
    if check and stale:
        print("rerun: python tools/gen_stubs.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
