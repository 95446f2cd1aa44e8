"""Failures: this rank reports its own failure to the peers, notices theirs
(and their exits), and waits for MPI requests in a loop that raises
``DistBackendError`` on either or on the timeout.

The failure state (``_control``, ``_peer_failure``, ``_peer_exits``) lives
here only: the other modules read it as ``_failure._control`` etc."""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import traceback

from ._common import _MPI, DistBackendError

# A peer's failure report, once one arrived: (rank, message).
_peer_failure: tuple[int, str] | None = None
_control = None  # MPI communicator for failure reports
_lock = threading.Lock()
_CONTROL_TAG = 7001
_ACK_TAG = 7002
_EXIT_TAG = 7003
# Peers whose program ended (world rank -> when this rank learnt it).
_peer_exits: dict = {}
# How long a wait goes on after learning that a peer of its group exited:
# the peer may have finished this very collective before leaving.
_EXIT_GRACE_S = 1.0
# Whether a polling wait may give its core away between tests.
_YIELD = hasattr(os, "sched_yield")


def _install_failure_reporting():
    previous = sys.excepthook

    def hook(kind, value, tb):
        try:
            previous(kind, value, tb)
            sys.stderr.flush()
        finally:
            _report_failure("".join(traceback.format_exception_only(kind, value)).strip())

    sys.excepthook = hook
    atexit.register(_at_exit)


def _report_failure(message: str):
    """Tells every peer that this rank failed (unless it failed because a
    peer did), waits a moment for them to notice, then aborts the job so
    that nobody waits in MPI_Finalize for a rank that left."""
    if _control is None:
        return
    MPI = _MPI()
    me = _control.Get_rank()
    n = _control.Get_size()
    if _peer_failure is None:
        reqs = _send_to_peers(f"rank {me} failed: {message}", _CONTROL_TAG)
        deadline = time.monotonic() + 5.0
        acks = 0
        # a peer acknowledges once it has reported the failure (or failed
        # on its own, reporting that to us)
        # (ranks that have exited cannot)
        while acks < n - 1 - len(_peer_exits) and time.monotonic() < deadline:
            if _control.Iprobe(source=MPI.ANY_SOURCE, tag=_ACK_TAG):
                _control.recv(source=MPI.ANY_SOURCE, tag=_ACK_TAG)
                acks += 1
            elif _control.Iprobe(source=MPI.ANY_SOURCE, tag=_CONTROL_TAG):
                _control.recv(source=MPI.ANY_SOURCE, tag=_CONTROL_TAG)
                acks += 1
            else:
                time.sleep(0.01)
        del reqs
    else:
        # failed because of a peer: acknowledge that this rank has reported
        # its error, then let the failed rank end the job (it aborts once
        # every rank has acknowledged); abort ourselves if it does not
        try:
            _control.send("ack", dest=_peer_failure[0], tag=_ACK_TAG)
        except Exception:
            pass
        sys.stderr.flush()
        sys.stdout.flush()
        time.sleep(10.0)
    MPI.COMM_WORLD.Abort(1)


def _at_exit():
    if _control is not None and _peer_failure is None:
        try:
            _poll_failure()
        except DistBackendError:
            pass
    if _peer_failure is not None and _control is not None:
        # leaving after a peer failed (the error was caught): acknowledge
        # and abort instead of blocking in MPI_Finalize
        _report_failure("")
    if _control is not None:
        # leaving normally (or by sys.exit) without destroy_process_group:
        # tell the peers, so that one waiting for this rank in a collective
        # fails instead of waiting for its timeout
        MPI = _MPI()
        MPI.Request.Waitall(_send_to_peers(_control.Get_rank(), _EXIT_TAG))


def _send_to_peers(obj, tag: int):
    """Starts sending ``obj`` on the control communicator to every other
    rank; returns the requests."""
    me = _control.Get_rank()
    return [_control.isend(obj, dest=p, tag=tag) for p in range(_control.Get_size()) if p != me]


def _poll_failure(ranks=None):
    """Raises if a peer has reported a failure, or (``ranks``: the world
    ranks of the group being waited for) if one of them exited a while ago."""
    global _peer_failure
    if _peer_failure is None and _control is not None:
        MPI = _MPI()
        with _lock:
            if _peer_failure is None and _control.Iprobe(source=MPI.ANY_SOURCE, tag=_CONTROL_TAG):
                status = MPI.Status()
                text = _control.recv(source=MPI.ANY_SOURCE, tag=_CONTROL_TAG, status=status)
                _peer_failure = (status.Get_source(), text)
            while _control.Iprobe(source=MPI.ANY_SOURCE, tag=_EXIT_TAG):
                who = _control.recv(source=MPI.ANY_SOURCE, tag=_EXIT_TAG)
                _peer_exits.setdefault(who, time.monotonic())
    if _peer_failure is not None:
        raise DistBackendError(
            f"a peer failed ({_peer_failure[1]}); this collective cannot complete"
        )
    if ranks is not None and _peer_exits:
        now = time.monotonic()
        gone = sorted(r for r in ranks if r in _peer_exits and now - _peer_exits[r] > _EXIT_GRACE_S)
        if gone:
            raise DistBackendError(
                f"rank(s) {gone} exited (their program ended) while this rank waits for them "
                "in a collective; this collective cannot complete"
            )


def _wait_all(reqs, timeout: float, what: str, status=None, ranks=None):
    """Waits for MPI requests, polling: a peer's failure or the timeout
    raise DistBackendError instead of waiting forever. With ``status``,
    ``reqs`` is one request whose completion status is written there."""
    MPI = _MPI()
    reqs = [r for r in reqs if r is not None]
    if not reqs:
        return

    def test():
        if status is not None:
            return reqs[0].Test(status)
        return MPI.Request.Testall(reqs)

    if test():
        return
    start = time.monotonic()
    spins = 0
    pause = 0.0
    while True:
        # MPI progresses the operation inside Test: spin on it (as MPI's own
        # blocking wait does; mpi4py releases the GIL inside every MPI call,
        # so other Python threads run meanwhile) for the first second, then
        # back off to short sleeps
        if test():
            return
        spins += 1
        if spins % 256 == 0:
            _poll_failure(ranks)
            elapsed = time.monotonic() - start
            if elapsed > timeout:
                raise _timed_out(what, timeout)
            if elapsed > 1.0:
                pause = min(max(pause * 1.5, 2e-5), 1e-3)
        if pause:
            time.sleep(pause)
        elif _YIELD:
            # give the core away between tests: with more ranks than free
            # cores a rank that spins holds the core its peer needs
            os.sched_yield()


def _timed_out(what: str, timeout: float) -> DistBackendError:
    return DistBackendError(
        f"{what} timed out after {timeout:.1f} s waiting for the other ranks "
        "(a peer may be stuck, or running a different collective)"
    )
