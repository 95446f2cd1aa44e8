"""The documentation site (mkdocs.yml, docs/) builds and says true things.

* ``mkdocs build --strict`` succeeds: no broken internal link or anchor, no
  page missing from the nav or the nav naming a missing page. A control
  build checks that this configuration does fail on each of those.
* Every entry of the generated API reference (docs/hooks/api.py) names an
  object that resolves in the runtime package, and every name of the
  documented modules' ``__all__`` has an entry.
* Every guide snippet marked runnable runs. Convention: a fenced ```python
  block directly preceded by the line ``<!-- runnable -->``. The runnable
  snippets of one page run in order, in one namespace, in a fresh
  interpreter (so a snippet may use what an earlier one defined, and a page
  that changes the thread count changes no other test's).

Skips when mkdocs is not installed (scripts/test.sh installs it).
"""

import html.parser
import importlib
import os
import re
import subprocess
import sys
import textwrap
import types

import pytest

mkdocs = pytest.importorskip("mkdocs")
yaml = pytest.importorskip("yaml")

import ferrograd

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOCS = os.path.join(ROOT, "docs")
CONFIG = os.path.join(ROOT, "mkdocs.yml")
MARKER = "<!-- runnable -->"

# The pages the hook generates, with the module or class each documents.
REFERENCE = {
    "reference/ferrograd.md": "ferrograd",
    "reference/ferrograd.Tensor.md": "ferrograd.Tensor",
    "reference/ferrograd.nn.md": "ferrograd.nn",
    "reference/ferrograd.nn.functional.md": "ferrograd.nn.functional",
    "reference/ferrograd.optim.md": "ferrograd.optim",
    "reference/ferrograd.autograd.md": "ferrograd.autograd",
}


def _env():
    """The environment for subprocesses: they import the ferrograd this test
    imported (the installed wheel, or the source tree on PYTHONPATH)."""
    env = dict(os.environ)
    where = os.path.dirname(os.path.dirname(os.path.abspath(ferrograd.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([where] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def _build(config, out):
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", config, "-d", str(out)],
        cwd=os.path.dirname(config),
        env=_env(),
        capture_output=True,
        check=False,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    r = _build(CONFIG, out)
    assert r.returncode == 0, f"mkdocs build --strict failed:\n{r.stdout}\n{r.stderr}"
    return out


def _html_path(site, md_path):
    # use_directory_urls: guides/rust.md -> guides/rust/index.html
    stem = md_path[: -len(".md")]
    if os.path.basename(stem) == "index":
        return os.path.join(site, os.path.dirname(stem), "index.html")
    return os.path.join(site, stem, "index.html")


def _nav_pages(nav):
    for item in nav:
        if isinstance(item, str):
            yield item
        else:
            for v in item.values():
                if isinstance(v, list):
                    yield from _nav_pages(v)
                else:
                    yield v


def _config():
    with open(CONFIG, encoding="utf-8") as f:
        # mkdocs.yml may use !ENV / !relative tags; this one needs none.
        return yaml.safe_load(f)


def test_site_builds_with_every_nav_page(site):
    pages = list(_nav_pages(_config()["nav"]))
    assert set(REFERENCE) <= set(pages)
    for page in pages:
        path = _html_path(site, page)
        assert os.path.isfile(path), f"{page} was not built ({path})"
    # The generated pages are not checked in: the hook made them.
    for page in REFERENCE:
        assert not os.path.exists(os.path.join(DOCS, page)), page


@pytest.mark.parametrize(
    "broken",
    [
        pytest.param("[a page](no-such-page.md)", id="link"),
        pytest.param("[an anchor](other.md#no-such-anchor)", id="anchor"),
        pytest.param(None, id="nav-missing-page"),
        pytest.param("", id="page-not-in-nav"),
    ],
)
def test_strict_build_fails_on_broken_references(tmp_path, broken):
    """The site's own validation settings turn each kind of broken reference
    into a failed build (a control: the real build passing means something)."""
    cfg = _config()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[other](other.md#real)\n")
    (docs / "other.md").write_text("# Other\n\n## Real\n")
    nav = [{"Home": "index.md"}, {"Other": "other.md"}]
    if broken is None:
        nav.append({"Gone": "gone.md"})
    elif broken == "":
        (docs / "extra.md").write_text("# Extra\n")
    else:
        (docs / "index.md").write_text(f"# Home\n\n{broken}\n")
    small = {
        "site_name": "control",
        "docs_dir": "docs",
        "nav": nav,
        "markdown_extensions": cfg["markdown_extensions"],
        "validation": cfg["validation"],
    }
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(small))
    failed = _build(str(tmp_path / "mkdocs.yml"), tmp_path / "broken-site")
    assert failed.returncode != 0, f"strict build passed with a broken reference:\n{failed.stderr}"
    # Fixed, the same site builds: the failure was the broken reference.
    (docs / "index.md").write_text("# Home\n\n[other](other.md#real)\n")
    if broken is None:
        small["nav"] = nav[:2]
    elif broken == "":
        (docs / "extra.md").unlink()
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(small))
    fixed = _build(str(tmp_path / "mkdocs.yml"), tmp_path / "fixed-site")
    assert fixed.returncode == 0, fixed.stderr


class _Ids(html.parser.HTMLParser):
    """Collects the ids of API entries (headings with class api-entry)."""

    def __init__(self):
        super().__init__()
        self.entries = []
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if re.fullmatch(r"h[1-6]", tag) and "api-entry" in (a.get("class") or "").split():
            self.entries.append(a["id"])


def _entries(site, page):
    p = _Ids()
    with open(_html_path(site, page), encoding="utf-8") as f:
        p.feed(f.read())
    return p


def _resolve(dotted):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(dotted)


def test_api_reference_names_resolve(site):
    total = 0
    for page, owner in REFERENCE.items():
        found = _entries(site, page)
        assert owner in found.ids, f"{page} has no #{owner} anchor"
        assert found.entries, f"{page} documents nothing"
        assert len(set(found.entries)) == len(found.entries), f"{page}: duplicate ids"
        for dotted in found.entries:
            assert dotted.startswith(owner + "."), (page, dotted)
            try:
                _resolve(dotted)
            except (ImportError, AttributeError) as e:
                pytest.fail(f"{page}: {dotted} does not resolve in the runtime package: {e}")
        total += len(found.entries)
    assert total > 500  # the whole surface, not a sample


def _own(obj):
    """Whether a public name of a module is ferrograd's (not a third-party
    module or class it happens to import)."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__.startswith("ferrograd")
    owner = getattr(obj, "__module__", None)
    return not isinstance(owner, str) or owner.startswith(("ferrograd", "builtins"))


def test_api_reference_covers_public_names(site):
    """Every name a documented module exports (``__all__``, else its public
    names) and every public Tensor attribute has an entry."""
    for page, owner in REFERENCE.items():
        obj = _resolve(owner)
        ids = set(_entries(site, page).entries)
        if isinstance(obj, type):
            expected = [n for n in vars(obj) if not n.startswith("_")]
        elif hasattr(obj, "__all__"):
            expected = list(obj.__all__)
        else:
            expected = [n for n in dir(obj) if not n.startswith("_") and _own(getattr(obj, n))]
        missing = [n for n in expected if f"{owner}.{n}" not in ids]
        assert not missing, f"{page} lacks {missing[:20]}"


def _runnable_snippets(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    snippets = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == MARKER:
            j = i + 1
            assert j < len(lines) and lines[j].startswith("```python"), (
                f"{path}:{i + 1}: {MARKER} must directly precede a ```python block"
            )
            k = j + 1
            while not lines[k].startswith("```"):
                k += 1
            snippets.append((j + 2, "\n".join(lines[j + 1 : k])))
            i = k
        i += 1
    return snippets


def _guide_pages():
    pages = []
    for dirpath, _, files in os.walk(DOCS):
        for f in sorted(files):
            if f.endswith(".md"):
                pages.append(os.path.relpath(os.path.join(dirpath, f), DOCS))
    return sorted(pages)


def test_runnable_snippets_exist():
    counts = {p: len(_runnable_snippets(os.path.join(DOCS, p))) for p in _guide_pages()}
    assert sum(counts.values()) >= 10, counts
    for guide in ("guides/custom-functions.md", "guides/parallel-backward.md"):
        assert counts[guide] > 0, f"{guide} has no runnable snippet"


@pytest.mark.parametrize(
    "page", [p for p in _guide_pages() if _runnable_snippets(os.path.join(DOCS, p))]
)
def test_runnable_snippets_run(page, tmp_path):
    path = os.path.join(DOCS, page)
    snippets = _runnable_snippets(path)
    # One program: each snippet compiled under its own file:line name, so a
    # failure points at the snippet in the page.
    program = ["import sys", "__ns = {'__name__': '__main__'}"]
    for line, code in snippets:
        src = textwrap.dedent(code)
        program.append(f"exec(compile({src!r}, {f'{page}:{line}'!r}, 'exec'), __ns)")
    program.append("print('all snippets ran')")
    script = tmp_path / "snippets.py"
    script.write_text("\n".join(program) + "\n")
    r = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        check=False,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and "all snippets ran" in r.stdout, (
        f"a runnable snippet of {page} failed:\n{r.stdout}\n{r.stderr}"
    )


def test_mkdocs_pinned_in_test_script():
    with open(os.path.join(ROOT, "scripts", "test.sh"), encoding="utf-8") as f:
        script = f.read()
    assert re.search(r'"mkdocs==\d+\.\d+\.\d+"', script), "scripts/test.sh must install mkdocs"
