"""ferrograd.distributed on 2 and 3 MPI ranks (loopback, oversubscribed).

Each test launches a script of this folder with
``python -m ferrograd.distributed.run -n N`` and checks that every rank
finished ("OK <rank>"). Skips without mpi4py; CI installs it
(scripts/test.sh).
"""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("mpi4py")

HERE = os.path.dirname(os.path.abspath(__file__))


def launch(script, n, *args, timeout=240, expect_ok=True):
    cmd = [
        sys.executable,
        "-m",
        "ferrograd.distributed.run",
        "-n",
        str(n),
        os.path.join(HERE, script),
        *args,
    ]
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, errors="replace")
    elapsed = time.monotonic() - start
    out = p.stdout + p.stderr
    if expect_ok:
        assert p.returncode == 0, out
        for r in range(n):
            assert f"OK {r}" in p.stdout, out
    return p, out, elapsed


@pytest.mark.parametrize("n", [2, 3])
def test_collectives(n):
    launch("mp_collectives.py", n)


@pytest.mark.parametrize("n", [2, 3])
def test_gradcheck_every_collective(n):
    _, out, _ = launch("mp_gradcheck.py", n)
    names = [line.split()[1] for line in out.splitlines() if line.startswith("GRADCHECK")]
    for want in [
        "all_reduce_sum",
        "all_reduce_avg",
        "all_gather",
        "reduce_scatter",
        "broadcast",
        "reduce",
        "all_to_all",
        "all_to_all_single",
        "all_to_all_single_uneven",
        "gather",
        "scatter",
        "user_gather_own_slice",
        "user_scaled_all_reduce",
        "two_collectives_in_branches",
        "copy_to_parallel_region_replicated",
        "megatron_replicated_loss",
        "replicated_loss_with_all_reduce_rejected",
        "wrong_convention_rejected",
    ]:
        assert want in names, out


@pytest.mark.parametrize("n", [2, 3])
def test_collectives_in_parallel_backward_branches_run_in_one_order(n):
    launch("mp_ordered.py", n)


def test_without_the_ordered_lane_the_ranks_disagree():
    p, out, _ = launch("mp_ordered.py", 2, "--unordered", expect_ok=False)
    assert p.returncode != 0 and "calls do not match" in out, out


@pytest.mark.parametrize(
    ("mode", "n"),
    [("forward", 2), ("forward", 3), ("backward", 3), ("timeout", 2), ("ddp", 2), ("exit", 3)],
)
def test_a_failing_rank_makes_the_others_fail_fast(mode, n):
    p, out, elapsed = launch("mp_fault.py", n, mode, expect_ok=False, timeout=120)
    assert p.returncode != 0, out
    survivors = range(n - 1)
    for r in survivors:
        assert f"CAUGHT {r} " in out, out
    if mode == "timeout":
        assert "timed out after 4.0 s" in out, out
    elif mode == "exit":
        assert f"rank(s) [{n - 1}] exited" in out, out
    else:
        assert "exploded on purpose" in out.split("CAUGHT 0 ", 1)[1], out
    assert elapsed < 60, elapsed


@pytest.mark.parametrize("n", [2, 3])
def test_distributed_data_parallel(n):
    launch("mp_ddp.py", n)


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("example", ["distributed_contrastive.py", "distributed_ddp_mlp.py"])
def test_examples_match_one_process(example, n):
    script = os.path.join(HERE, "..", "..", "..", "examples", example)
    _, out, _ = launch(script, n)
    assert "vs one process over the whole batch" in out, out


@pytest.mark.parametrize("n", [2, 3])
def test_differentiable_collectives_match_torch_gloo(n, tmp_path):
    """The same program on ferrograd and on torch (gloo): outputs and
    input gradients of every differentiable collective agree."""
    pytest.importorskip("torch")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    for lib in ("ferrograd", "torch"):
        launch("mp_torch_oracle.py", n, lib, str(tmp_path), port)
    for r in range(n):
        ours = json.loads((tmp_path / f"ferrograd.{r}.json").read_text())
        theirs = json.loads((tmp_path / f"torch.{r}.json").read_text())
        assert ours.keys() == theirs.keys()
        for name in ours:
            for part in ("out", "grad"):
                a, b = ours[name][part], theirs[name][part]
                assert (a is None) == (b is None), (name, part)
                if a is not None:
                    assert _close(a, b), (r, name, part, a, b)


def _close(a, b, tol=1e-12):
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) == len(b)
            and all(_close(x, y, tol) for x, y in zip(a, b))
        )
    return abs(a - b) <= tol * (1 + abs(b))


def test_launcher_flags():
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "ferrograd.distributed.run",
            "-n",
            "3",
            "--dry-run",
            "x.py",
            "--lr",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    line = p.stdout.strip()
    assert " -n 3 " in line and "--oversubscribe" in line and line.endswith("x.py --lr 1")
    if os.geteuid() == 0:
        assert "--allow-run-as-root" in line


def test_import_needs_no_mpi_until_init():
    code = "import sys, ferrograd.distributed as d; print(d.is_initialized(), 'mpi4py.MPI' in sys.modules)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.stdout.split() == ["False", "False"], p.stderr
