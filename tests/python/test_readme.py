"""The README's Python example runs on ferrograd as written."""

import os
import re

import numpy as np

import ferrograd
from helpers import require, to_numpy

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def readme_python_blocks():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_example_runs(capsys):
    blocks = readme_python_blocks()
    assert blocks, "README.md has no python example"
    assert "import ferrograd as torch" in blocks[0]
    require(ferrograd, "tanh", "Tensor.__matmul__", "Tensor.pow")
    scope = {}
    exec(compile(blocks[0], "README.md", "exec"), scope)
    x, gg, w = scope["x"], scope["gg"], scope["w"]
    np.testing.assert_allclose(to_numpy(gg), 6 * to_numpy(x), rtol=1e-5)
    assert w.grad is not None and tuple(w.grad.shape) == (3, 1)
    assert capsys.readouterr().out
