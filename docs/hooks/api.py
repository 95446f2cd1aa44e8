"""MkDocs hook: generates the API reference from the installed ferrograd.

Registered under ``hooks:`` in mkdocs.yml. At build time it imports
ferrograd (whichever one ``import ferrograd`` finds: the installed wheel, or
the source tree with ``PYTHONPATH=python``) and adds one page per entry of
``PAGES`` to the site. Nothing it writes is checked in.

For each page:

* names: the module's ``__all__`` when it has one, else its public names
  (no leading underscore) that the module defines or re-exports; for a
  class (``ferrograd.Tensor``), its public attributes;
* signatures: ``inspect.signature`` of the runtime object (built-in functions
  of the Rust extension carry a ``__text_signature__``), else the signature
  written in the type stubs (``*.pyi`` next to the module), else none;
* docstrings: the runtime object's, else the stub's.

Every entry's heading carries the dotted name as its HTML id
(``#ferrograd.nn.Linear``), which guides link to and which
tests/python/test_docs.py resolves against the runtime package.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
import types

# (page path under docs/, dotted name of the module or class, title)
PAGES = [
    ("reference/ferrograd.md", "ferrograd", "ferrograd"),
    ("reference/ferrograd.Tensor.md", "ferrograd.Tensor", "ferrograd.Tensor"),
    ("reference/ferrograd.nn.md", "ferrograd.nn", "ferrograd.nn"),
    ("reference/ferrograd.nn.functional.md", "ferrograd.nn.functional", "ferrograd.nn.functional"),
    ("reference/ferrograd.optim.md", "ferrograd.optim", "ferrograd.optim"),
    ("reference/ferrograd.autograd.md", "ferrograd.autograd", "ferrograd.autograd"),
    ("reference/ferrograd.distributed.md", "ferrograd.distributed", "ferrograd.distributed"),
]

# Submodules documented as sections of their parent's page (their own names).
SUBSECTIONS = {
    "ferrograd": ["ferrograd.func"],
    "ferrograd.optim": ["ferrograd.optim.lr_scheduler"],
    "ferrograd.distributed": ["ferrograd.distributed.nn.functional"],
    "ferrograd.nn": ["ferrograd.nn.parallel"],
    "ferrograd.autograd": [
        "ferrograd.autograd.forward_ad",
        "ferrograd.autograd.functional",
        "ferrograd.autograd.graph",
        "ferrograd.autograd.profiler",
    ],
}

# Members that every object has; never listed.
_SKIP = {"mro"}


# ----- resolving names ---------------------------------------------------------


def resolve(dotted: str):
    """The runtime object named ``dotted`` (``ferrograd.nn.Linear.forward``):
    the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    obj = None
    i = len(parts)
    while i > 0:
        try:
            obj = importlib.import_module(".".join(parts[:i]))
            break
        except ImportError:
            i -= 1
    if obj is None:
        raise ImportError(f"no module in {dotted!r}")
    for p in parts[i:]:
        obj = getattr(obj, p)
    return obj


def page_of(dotted: str) -> str | None:
    """The generated page that documents ``dotted`` (a module or class of
    ``PAGES``, or a name on one of them)."""
    best = None
    for path, name, _ in PAGES:
        inside = dotted == name or dotted.startswith(name + ".")
        if inside and (best is None or len(name) > len(best[1])):
            best = (path, name)
    return best[0] if best else None


# ----- stubs ------------------------------------------------------------------


def _stub_path(module) -> str | None:
    f = getattr(module, "__file__", None)
    if not f:
        return None
    cand = os.path.splitext(f)[0] + ".pyi"  # package/__init__.pyi, module.pyi
    return cand if os.path.exists(cand) else None


class Stubs:
    """Signatures and docstrings written in a module's ``.pyi`` file, by
    qualified name within the module (``exp``, ``Tensor.add``)."""

    def __init__(self, module):
        self.sigs: dict[str, list[str]] = {}
        self.docs: dict[str, str] = {}
        path = _stub_path(module)
        if path:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), filename=path)
            self._walk(tree.body, "")

    @staticmethod
    def _clean(text: str) -> str:
        return text.replace("builtins.", "")

    def _walk(self, body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + node.name
                decorators = {ast.unparse(d) for d in node.decorator_list}
                if "property" in decorators:
                    ret = f" -> {ast.unparse(node.returns)}" if node.returns else ""
                    self.sigs.setdefault(name, []).append(self._clean(f"property{ret}"))
                elif not any(d.endswith(".setter") for d in decorators):
                    args = ast.unparse(node.args)
                    ret = f" -> {ast.unparse(node.returns)}" if node.returns else ""
                    self.sigs.setdefault(name, []).append(self._clean(f"({args}){ret}"))
                doc = ast.get_docstring(node)
                if doc:
                    self.docs.setdefault(name, doc)
            elif isinstance(node, ast.ClassDef):
                name = prefix + node.name
                doc = ast.get_docstring(node)
                if doc:
                    self.docs.setdefault(name, doc)
                self._walk(node.body, name + ".")


# ----- collecting names -------------------------------------------------------


def module_names(module) -> list[str]:
    """``__all__`` when present, else the public names the module defines or
    re-exports from ferrograd (not third-party modules it imports)."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return sorted(dict.fromkeys(names), key=_sort_key)
    out = []
    for n in dir(module):
        if n.startswith("_"):
            continue
        obj = getattr(module, n)
        if isinstance(obj, types.ModuleType):
            if not obj.__name__.startswith("ferrograd"):
                continue
        else:
            owner = getattr(obj, "__module__", None)
            foreign = isinstance(owner, str) and not owner.startswith("ferrograd")
            if foreign and not _is_ferrograd_builtin(obj):
                continue
        out.append(n)
    return sorted(out, key=_sort_key)


def _is_ferrograd_builtin(obj) -> bool:
    # Built-ins of the extension report __module__ ferrograd._C or None.
    return isinstance(obj, (types.BuiltinFunctionType,)) or type(obj).__module__ in (
        "ferrograd._C",
        "builtins",
    )


def _sort_key(n: str):
    return (n.lower(), n)


def class_members(cls) -> list[tuple[str, object]]:
    """Public attributes a class defines itself or gets from private bases
    (``_C._FunctionBase``), not those of public bases (listed on their own)."""
    seen = {}
    for klass in cls.__mro__:
        # Members from the first public base on are documented with that base.
        if klass is object or (klass is not cls and not klass.__name__.startswith("_")):
            break
        for n, v in vars(klass).items():
            if n.startswith("_") or n in seen or n in _SKIP:
                continue
            seen[n] = v
    return sorted(seen.items(), key=lambda kv: _sort_key(kv[0]))


# ----- rendering --------------------------------------------------------------


def _fence(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}\n"


def _runtime_signature(obj) -> str | None:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return None


def _kind(obj) -> str:
    if isinstance(obj, types.ModuleType):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if isinstance(obj, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
        return "attribute"
    if isinstance(obj, (staticmethod, classmethod)):
        return "method"
    if callable(obj):
        return "function"
    return "value"


def _doc(obj, raw, stubs: Stubs, qual: str) -> str:
    doc = None
    if isinstance(raw, (staticmethod, classmethod)):
        raw = raw.__func__
    for cand in (raw, obj):
        d = getattr(cand, "__doc__", None)
        # A class's own docstring, not one inherited from its metaclass or type.
        own = not inspect.isclass(cand) or "__doc__" in vars(cand)
        if isinstance(d, str) and d.strip() and own:
            doc = d
            break
    if doc is None:
        doc = stubs.docs.get(qual)
    return inspect.cleandoc(doc) if doc else ""


def _is_generic_doc(doc: str) -> bool:
    # Docstrings the interpreter supplies for builtins (object.__init__ and
    # friends, descriptors without a doc) say nothing about ferrograd.
    return doc.startswith(("Initialize self.", "Create and return a new object."))


def _link(path: str, anchor: str | None = None) -> str:
    """A link from one generated page to another (all live in reference/)."""
    target = os.path.basename(path)
    return f"{target}#{anchor}" if anchor else target


def render_entry(level: int, dotted: str, short: str, obj, raw, stubs: Stubs, qual: str) -> str:
    kind = _kind(raw if raw is not None else obj)
    lines = [f"{'#' * level} `{short}` {{ #{dotted} .api-entry }}\n"]
    if kind == "module":
        if dotted in _PAGE_PATHS:
            lines.append(f"*module*: see [{dotted}]({_link(_PAGE_PATHS[dotted])}).\n")
        else:
            lines.append(f"*module* `{obj.__name__}`\n")
            if obj.__doc__:
                lines.append(_doc_block(inspect.cleandoc(obj.__doc__)))
        return "\n".join(lines)
    sig = None
    if kind in ("function", "method", "class", "staticmethod"):
        sig = _runtime_signature(obj)
        if sig is None and qual in stubs.sigs:
            sig = stubs.sigs[qual][0]
    elif kind == "attribute" and qual in stubs.sigs:
        sig = stubs.sigs[qual][0]
    if kind == "function" and "." in qual:
        kind = "method"
    if isinstance(raw, staticmethod):
        kind = "staticmethod"
    label = {"value": f"*{type(obj).__name__}*"}.get(kind, f"*{kind}*")
    if kind == "class":
        bases = _public_bases(obj)
        if bases:
            label += " — bases: " + ", ".join(_ref(b) for b in bases)
    lines.append(label + "\n")
    if sig is not None:
        name = short.rsplit(".", 1)[-1]
        if sig.startswith("property"):
            ann = sig[len("property -> ") :] if sig.startswith("property -> ") else None
            lines.append(_fence(f"{name}: {ann}" if ann else name, "python"))
        else:
            lines.append(_fence(f"{name}{sig}", "python"))
    elif kind == "value":
        lines.append(_fence(f"{short.rsplit('.', 1)[-1]} = {obj!r}", "python"))
    doc = _doc(obj, raw, stubs, qual)
    if doc and not _is_generic_doc(doc):
        lines.append(_doc_block(doc))
    return "\n".join(lines)


def _public_bases(cls) -> list:
    """The direct bases, each private one replaced by its nearest public
    ancestors (``LogSoftmax(_OpModule)`` shows ``Module``)."""
    out = []
    for b in cls.__bases__:
        if b is object:
            continue
        if b.__name__.startswith("_"):
            out += _public_bases(b)
        else:
            out.append(b)
    return list(dict.fromkeys(out))


def _ref(cls) -> str:
    dotted = f"{cls.__module__}.{cls.__qualname__}"
    # Prefer the public path that documents it (ferrograd.nn.Module, not
    # ferrograd.nn.modules.module.Module).
    for path, name, _ in PAGES:
        try:
            mod = resolve(name)
        except (ImportError, AttributeError):
            continue
        exported = isinstance(mod, types.ModuleType) and getattr(mod, cls.__name__, None) is cls
        if exported and cls.__name__ in module_names(mod):
            return f"[`{cls.__name__}`]({_link(path, name + '.' + cls.__name__)})"
    return f"`{dotted}`"


_RST_ROLE = re.compile(r":(?:class|func|meth|attr|mod|obj):`~?([^`]+)`")


def _doc_block(doc: str) -> str:
    """A docstring as Markdown: RST roles and double backticks become code,
    everything else is kept as written."""
    doc = _RST_ROLE.sub(r"`\1`", doc)
    doc = doc.replace("``", "`")
    return doc + "\n"


def render_module(dotted: str, title: str, level: int = 1) -> tuple[str, list[str]]:
    module = resolve(dotted)
    stubs = Stubs(module)
    names = module_names(module)
    out = []
    if level == 1:
        out.append(f"# {title} {{ #{dotted} }}\n")
        out.append(_GENERATED_NOTE)
    else:
        out.append(f"{'#' * level} `{dotted}` {{ #{dotted} .api-entry }}\n")
    if module.__doc__:
        out.append(_doc_block(inspect.cleandoc(module.__doc__)))
    documented = []
    groups = {"module": [], "class": [], "function": [], "value": [], "attribute": []}
    for n in names:
        obj = getattr(module, n)
        groups.setdefault(_kind(obj), []).append((n, obj))
    titles = [
        ("class", "Classes"),
        ("function", "Functions"),
        ("value", "Constants and dtypes"),
        ("module", "Submodules"),
    ]
    for kind, heading in titles:
        entries = groups.get(kind) or []
        if not entries:
            continue
        out.append(f"{'#' * (level + 1)} {heading}\n")
        for n, obj in entries:
            full = f"{dotted}.{n}"
            documented.append(full)
            if kind == "class" and page_of(full) == page_of(dotted) and full not in _PAGE_NAMES:
                out.append(render_entry(level + 2, full, n, obj, obj, stubs, n))
                for m, raw in class_members(obj):
                    member = getattr(obj, m, raw)
                    mfull = f"{full}.{m}"
                    documented.append(mfull)
                    out.append(
                        render_entry(level + 3, mfull, f"{n}.{m}", member, raw, stubs, f"{n}.{m}")
                    )
            elif full in _PAGE_NAMES:
                out.append(f"{'#' * (level + 2)} `{n}` {{ #{full} .api-entry }}\n")
                out.append(f"Documented on its own page: [{full}]({_link(_PAGE_PATHS[full])}).\n")
            elif full in SUBSECTIONS.get(dotted, []):
                out.append(f"- [`{n}`](#{full}): documented below.\n")
            else:
                out.append(render_entry(level + 2, full, n, obj, obj, stubs, n))
    return "\n".join(out), documented


def render_class(dotted: str, title: str) -> tuple[str, list[str]]:
    cls = resolve(dotted)
    module = importlib.import_module(dotted.rsplit(".", 1)[0])
    stubs = Stubs(module)
    name = dotted.rsplit(".", 1)[1]
    out = [f"# {title} {{ #{dotted} }}\n", _GENERATED_NOTE]
    sig = _runtime_signature(cls)
    if sig:
        out.append(_fence(f"{name}{sig}", "python"))
    doc = _doc(cls, cls, stubs, name)
    if doc:
        out.append(_doc_block(doc))
    members = class_members(cls)
    groups = {"method": [], "attribute": []}
    for m, raw in members:
        kind = _kind(raw)
        groups["attribute" if kind in ("attribute", "value") else "method"].append((m, raw))
    documented = []
    for key, heading in (("attribute", "Attributes"), ("method", "Methods")):
        if not groups[key]:
            continue
        out.append(f"## {heading}\n")
        for m, raw in groups[key]:
            member = getattr(cls, m, raw)
            full = f"{dotted}.{m}"
            documented.append(full)
            out.append(render_entry(3, full, m, member, raw, stubs, f"{name}.{m}"))
    return "\n".join(out), documented


_GENERATED_NOTE = (
    "!!! note\n"
    "    Generated at build time from the installed package (`docs/hooks/api.py`): "
    "names, signatures and docstrings as the runtime reports them. The API mirrors "
    "PyTorch's under the same names; where an entry has no docstring, torch's "
    "documentation of the same name describes it.\n"
)

_PAGE_NAMES = {p[1] for p in PAGES}
_PAGE_PATHS = {p[1]: p[0] for p in PAGES}


def render(dotted: str, title: str) -> tuple[str, list[str]]:
    obj = resolve(dotted)
    if inspect.isclass(obj):
        return render_class(dotted, title)
    text, names = render_module(dotted, title)
    for sub in SUBSECTIONS.get(dotted, []):
        sub_text, sub_names = render_module(sub, sub, level=2)
        text += "\n" + sub_text
        names += [sub] + sub_names
    return text, names


def generate() -> dict[str, tuple[str, list[str]]]:
    """Every generated page: path -> (markdown, documented dotted names)."""
    return {path: render(dotted, title) for path, dotted, title in PAGES}


# ----- mkdocs events ----------------------------------------------------------


def on_files(files, config, **kwargs):
    from mkdocs.structure.files import File

    for path, (text, _) in generate().items():
        existing = files.get_file_from_path(path)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, path, content=text))
    return files
