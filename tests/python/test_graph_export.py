"""ferrograd.autograd.graph.to_dot / render: DOT export of a backward graph."""

import os
import re
import shutil

import pytest

import ferrograd as fg
from ferrograd.autograd import graph


def parse_dot(text):
    """Node labels by id and the edge list of DOT text from to_dot."""
    assert text.startswith("digraph {") and text.rstrip().endswith("}")
    nodes = {}
    edges = []
    for line in text.splitlines()[1:-1]:
        line = line.strip()
        m = re.fullmatch(r"(\w+) -> (\w+)(?: \[.*\])?", line)
        if m:
            edges.append((m.group(1), m.group(2)))
            continue
        m = re.fullmatch(r'(\w+) \[label="((?:[^"\\]|\\.)*)"(.*)\]', line)
        if m:
            nodes[m.group(1)] = (m.group(2).replace("\\n", "\n"), m.group(3))
    for a, b in edges:
        assert a in nodes and b in nodes, (a, b)
    return nodes, edges


def build():
    w = fg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = fg.tensor([0.5, -0.5], requires_grad=True)
    x = fg.tensor([[1.0, 1.0]])
    y = (x.matmul(w) + b).exp().sum()
    return w, b, y


def by_label(nodes, label):
    return [k for k, (lab, _) in nodes.items() if lab.split("\n")[0] == label]


def test_to_dot_nodes_and_edges():
    w, b, y = build()
    nodes, edges = parse_dot(graph.to_dot(y, params={"weight": w, "bias": b}))
    names = sorted(lab.split("\n")[0] for lab, _ in nodes.values())
    for n in ["SumBackward0", "ExpBackward0", "AddBackward0", "MmBackward0", "weight", "bias"]:
        assert any(x.startswith(n) for x in names), (n, names)
    (wid,) = by_label(nodes, "weight")
    (bid,) = by_label(nodes, "bias")
    assert nodes[wid][0] == "weight\n(2, 2)"
    assert nodes[bid][0] == "bias\n(2,)"
    assert "lightblue" in nodes[wid][1]
    (sid,) = by_label(nodes, "SumBackward0")
    (eid,) = by_label(nodes, "ExpBackward0")
    (aid,) = by_label(nodes, "AddBackward0")
    assert (eid, sid) in edges
    assert (aid, eid) in edges
    assert (bid, aid) in edges
    # the output node, fed by the root grad_fn
    outs = [k for k, (_, attrs) in nodes.items() if "darkolivegreen1" in attrs]
    assert len(outs) == 1 and (sid, outs[0]) in edges
    assert nodes[outs[0]][0] == "()"


def test_to_dot_matches_graph_structure():
    w, b, y = build()
    nodes, edges = parse_dot(graph.to_dot(y))
    # one DOT node per graph node reachable through next_functions, plus the output
    seen, stack = set(), [y.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        stack.extend(f for f, _ in n.next_functions)
    assert len(nodes) == len(seen) + 1
    assert len(edges) == sum(sum(f is not None for f, _ in n.next_functions) for n in seen) + 1


def test_to_dot_show_saved():
    a = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = fg.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    y = (a * c).sum()
    plain, _ = parse_dot(graph.to_dot(y))
    nodes, edges = parse_dot(graph.to_dot(y, show_saved=True))
    saved = {lab for lab, attrs in nodes.values() if "orange" in attrs}
    assert saved == {"self\n(3,)", "other\n(1, 3)"}
    assert len(nodes) == len(plain) + 2
    (mid,) = by_label(nodes, "MulBackward0")
    saved_ids = [k for k, (_, attrs) in nodes.items() if "orange" in attrs]
    for s in saved_ids:
        assert (s, mid) in edges


def test_to_dot_shared_subgraph_once():
    a = fg.tensor([1.0, 2.0], requires_grad=True)
    h = a.exp()
    y = (h * h + h).sum()
    nodes, _ = parse_dot(graph.to_dot(y, params={"a": a}))
    assert len(by_label(nodes, "ExpBackward0")) == 1
    assert len(by_label(nodes, "a")) == 1


def test_to_dot_sequence_and_errors():
    a = fg.tensor([1.0, 2.0], requires_grad=True)
    y1, y2 = a.exp(), a.sin()
    nodes, _ = parse_dot(graph.to_dot([y1, y2]))
    outs = [k for k, (_, attrs) in nodes.items() if "darkolivegreen1" in attrs]
    assert len(outs) == 2
    with pytest.raises(TypeError):
        graph.to_dot(3)
    # a tensor without history: just the output box
    nodes, edges = parse_dot(graph.to_dot(fg.tensor([1.0])))
    assert len(nodes) == 1 and edges == []


def test_to_dot_like_torch_structure(torch):

    def names(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        y = (a * b + a.exp()).sum()
        out, seen, stack = [], set(), [y.grad_fn]
        while stack:
            n = stack.pop()
            if n is None or n in seen:
                continue
            seen.add(n)
            out.append(n.name())
            stack.extend(f for f, _ in n.next_functions)
        return sorted(out), y

    ref, _ = names(torch)
    mine, y = names(fg)
    assert mine == ref
    nodes, _ = parse_dot(graph.to_dot(y))
    dot_names = sorted(
        lab.split("\n")[0] for lab, attrs in nodes.values() if "lightblue" not in attrs
    )
    assert sorted(n for n in ref if "AccumulateGrad" not in n) == [
        n for n in dot_names if n != "()" and not n.startswith("(")
    ]


def test_render(tmp_path):
    a = fg.tensor([1.0, 2.0], requires_grad=True)
    y = a.exp().sum()
    out = tmp_path / "g.svg"
    if shutil.which("dot") is None:
        with pytest.raises(
            RuntimeError, match="Graphviz's `dot` executable, which is not installed"
        ):
            graph.render(y, out)
        assert not out.exists()
    else:
        assert graph.render(graph.to_dot(y), out) == out
        assert "<svg" in out.read_text()


def test_render_without_dot(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeError, match="not installed"):
        graph.render("digraph {}", tmp_path / "x.svg")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
@pytest.mark.parametrize("fmt,signature", [("svg", b"<svg"), ("png", b"\x89PNG\r\n\x1a\n")])
def test_render_with_real_dot(tmp_path, fmt, signature):
    a = fg.tensor([1.0, 2.0], requires_grad=True)
    b = fg.tensor([3.0, 4.0], requires_grad=True)
    y = (a * b).exp().sum()
    out = tmp_path / f"g.{fmt}"
    assert graph.render(y, out, format=fmt) == out
    data = out.read_bytes()
    if fmt == "png":
        assert data.startswith(signature)
    else:
        assert signature in data
        text = data.decode()
        # every node of the graph is drawn
        for name in ["SumBackward0", "ExpBackward0", "MulBackward0"]:
            assert name in text


def _fake_dot(tmp_path, body):
    """A `dot` script first on PATH: it logs its arguments and runs `body`."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "dot"
    exe.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > "{tmp_path}/args.txt"\n'
        # the DOT file (an argument not starting with -) as given
        'for a in "$@"; do case "$a" in *.dot) cp "$a" "'
        + str(tmp_path)
        + '/in.dot";; esac; done\n'
        + body
    )
    exe.chmod(0o755)
    return bindir


def test_render_invokes_dot(tmp_path, monkeypatch):
    # writes "fake <format>" to the path after -o
    body = (
        'fmt=""; out=""; prev=""\n'
        'for a in "$@"; do\n'
        '  case "$a" in -T*) fmt="${a#-T}";; esac\n'
        '  if [ "$prev" = "-o" ]; then out="$a"; fi\n'
        '  prev="$a"\n'
        "done\n"
        'printf "fake %s" "$fmt" > "$out"\n'
    )
    bindir = _fake_dot(tmp_path, body)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    a = fg.tensor([1.0, 2.0], requires_grad=True)
    y = a.exp().sum()
    out = tmp_path / "out.png"
    assert graph.render(y, out, format="png") == out
    assert out.read_text() == "fake png"
    args = (tmp_path / "args.txt").read_text().split("\n")[:-1]
    assert args[0] == "-Tpng"
    assert args[1].endswith(".dot")
    assert args[2:] == ["-o", str(out)]
    # dot got the graph's DOT text; the temporary file is gone afterwards
    assert (tmp_path / "in.dot").read_text() == graph.to_dot(y)
    assert not os.path.exists(args[1])


def test_render_dot_failure(tmp_path, monkeypatch):
    bindir = _fake_dot(tmp_path, 'echo "Error: syntax error in line 1" >&2\nexit 1\n')
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "bad.svg"
    with pytest.raises(RuntimeError, match="^dot failed: Error: syntax error in line 1$"):
        graph.render("digraph { bad", out)
    assert not out.exists()
    args = (tmp_path / "args.txt").read_text().split("\n")[:-1]
    assert args[0] == "-Tsvg"
