"""Thread counts for the benchmark scripts, set before numpy/torch load.

Imports only the standard library: a script calls ``set_thread_env`` (under
``if __name__ == "__main__"``) before it imports numpy or torch.
"""

import os

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def early_threads(argv) -> int:
    """Reads --threads from argv before numpy/torch are imported, so BLAS
    and OpenMP pools are sized from the start."""
    for i, arg in enumerate(argv):
        if arg == "--threads" and i + 1 < len(argv):
            return int(argv[i + 1])
        if arg.startswith("--threads="):
            return int(arg.split("=", 1)[1])
    return 2


def set_thread_env(n) -> None:
    """Sets the OpenMP, OpenBLAS and MKL thread variables to ``n``."""
    for var in THREAD_VARS:
        os.environ[var] = str(n)
