"""The type stubs (python/ferrograd/**/*.pyi) against the runtime: every public
name is stubbed, nothing is stubbed that the runtime lacks, the checked-in
stubs are what tools/gen_stubs.py writes now, and mypy --strict accepts them,
a typed smoke test (tests/typing/smoke.py) and the examples (examples/*.py)."""

import ast
import glob
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

import ferrograd

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "python")


def _generator():
    spec = importlib.util.spec_from_file_location(
        "_ferrograd_gen_stubs", os.path.join(ROOT, "tools", "gen_stubs.py")
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


GEN = _generator()


def _stub_tree(module):
    path = GEN._stub_path(module)
    with open(path) as f:
        return ast.parse(f.read(), path)


def _top_level(tree):
    """Names a stub binds at top level (defs, classes, annotations, imports)."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                names.add(a.asname or a.name.split(".")[0])
    return names


def _exported(tree):
    """Public names a stub exports: its definitions and `import x as x` re-exports."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname for a in node.names if a.asname and a.asname == a.name)
    return {n for n in names if not n.startswith("_")}


def _class(tree, name):
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise AssertionError(f"no class {name}")


def _runtime(module):
    if module == "ferrograd.return_types":
        return ferrograd._C.return_types
    return importlib.import_module(module)


def test_all_names_resolve():
    for name in ferrograd.__all__:
        assert hasattr(ferrograd, name), name
    assert len(set(ferrograd.__all__)) == len(ferrograd.__all__)


def test_public_names_are_in_all():
    """Nothing public is left out of __all__: every name reachable as
    ferrograd.X without a leading underscore (submodules included)."""
    # A fresh interpreter: other tests import submodules (ferrograd.demo)
    # that `import ferrograd` alone does not bind.
    code = "import ferrograd; print(' '.join(n for n in dir(ferrograd) if n[0] != '_'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    public = set(out.stdout.split())
    assert public - set(ferrograd.__all__) == set()
    extension = {n for n in dir(ferrograd._C) if not n.startswith("_")}
    assert extension <= set(ferrograd.__all__)


@pytest.mark.parametrize("module", GEN.MODULES)
def test_module_stub_matches_runtime(module):
    tree = _stub_tree(module)
    mod = _runtime(module)
    names = set(GEN._public_names(module))
    stubbed = _exported(tree)
    assert names - stubbed == set(), f"{module}: not stubbed"
    assert stubbed - names == set(), f"{module}: stubbed but not in the runtime's __all__"
    for name in names:
        assert hasattr(mod, name), f"{module}.{name}"
    assert "__getattr__" not in _top_level(tree), "no module-level Any fallback"


def test_tensor_stub_matches_runtime():
    tensor = _class(_stub_tree("ferrograd"), "Tensor")
    members = set()
    for node in tensor.body:
        if isinstance(node, ast.FunctionDef):
            members.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            members.add(node.target.id)
    assert "__getattr__" not in members, "no Tensor-level Any fallback"
    runtime = {n for n in dir(ferrograd.Tensor) if not n.startswith("_")}
    assert runtime - members == set(), "Tensor attributes without a stub"
    stubbed_public = {n for n in members if not n.startswith("_")}
    assert stubbed_public - runtime == set(), "stubbed Tensor attributes the runtime lacks"
    for name in members:
        assert hasattr(ferrograd.Tensor, name), f"Tensor.{name}"


# Classes whose instances take any attribute at runtime (an instance __dict__),
# which a stub says with __getattr__/__setattr__.
STUB_ONLY_GETATTR = {("ferrograd.autograd.function", "FunctionCtx")}


def test_stubbed_class_methods_exist():
    """Methods stubbed on a class exist on the runtime class (attributes set in
    __init__, such as Linear.weight, are annotations and not checked here)."""
    for module in GEN.MODULES:
        mod = _runtime(module)
        for node in _stub_tree(module).body:
            if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                continue
            cls = getattr(mod, node.name)
            for item in node.body:
                if not isinstance(item, ast.FunctionDef) or item.name == "__new__":
                    continue
                if (module, node.name) in STUB_ONLY_GETATTR and item.name in (
                    "__getattr__",
                    "__setattr__",
                ):
                    continue
                assert hasattr(cls, item.name), f"{module}.{node.name}.{item.name}"


def test_stubs_are_up_to_date():
    """The checked-in stubs are what the generator writes from this build
    (rerun `python tools/gen_stubs.py` after changing the bindings)."""
    files = GEN.render_all()
    stale = []
    for path, text in files.items():
        with open(path) as f:
            if f.read() != text:
                stale.append(os.path.relpath(path, ROOT))
    assert stale == [], f"out of date (rerun python tools/gen_stubs.py): {stale}"


def test_mypy_strict(tmp_path):
    """mypy --strict accepts the stubs themselves, the typed smoke test and
    every Python example (one run: numpy's stubs are slow to load)."""
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed")
    # The stubs alone, without the .py files beside them, so that mypy checks
    # exactly these (the source tree's, the ones under test).
    pkg = tmp_path / "pkg"
    for module in GEN.MODULES:
        path = GEN._stub_path(module)
        dest = pkg / os.path.relpath(path, SRC)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, dest)
    (pkg / "ferrograd" / "py.typed").write_text("")
    examples = sorted(glob.glob(os.path.join(ROOT, "examples", "*.py")))
    cmd = [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--python-version",
        "3.9",
        "--cache-dir",
        str(tmp_path / "mypy-cache"),
        str(pkg / "ferrograd"),
        os.path.join(ROOT, "tests", "typing", "smoke.py"),
        *examples,
    ]
    env = dict(os.environ, MYPYPATH=str(pkg))
    r = subprocess.run(cmd, cwd=str(tmp_path), env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    n = len(GEN.MODULES) + 1 + len(examples)
    assert f"Success: no issues found in {n} source files" in r.stdout, r.stdout


def test_smoke_runs():
    """The typed smoke test is real code: it runs."""
    spec = importlib.util.spec_from_file_location(
        "_ferrograd_typing_smoke", os.path.join(ROOT, "tests", "typing", "smoke.py")
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main()
