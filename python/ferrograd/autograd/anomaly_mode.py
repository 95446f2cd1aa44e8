"""Autograd anomaly mode (``torch.autograd.detect_anomaly``).

The state is a process-global flag in the Rust core, as in torch. While it
is on:

- every graph node created records the Python traceback of the forward call
  that created it;
- an exception raised while backward evaluates a node carries that forward
  traceback on the exception itself, as a PEP 678 note ("Error detected in
  MulBackward0. Traceback of forward call that caused the error: ...").
  On Python >= 3.11 it is added with ``add_note`` and printed with the
  traceback; on older interpreters it is appended to the exception's
  ``__notes__`` list (readable, not printed). The same text is also emitted
  as a ``UserWarning``, as torch does;
- with ``check_nan=True`` (the default), a backward node that returns a
  gradient containing NaN raises ``RuntimeError: Function 'MulBackward0'
  returned nan values in its 0th output.``

Cost: with the mode off, node creation and the engine pay one atomic load.
With it on, every node creation walks the Python frames (file, line and
function per frame; source lines are looked up only when an error is
reported) and every backward output is scanned for NaN. Measured on a
1000-op elementwise chain (forward + backward, 8 elements, debug build,
best of 5): about 5-6x slower than with the mode off (2.7 ms -> 15 ms, some
12 us per node, mostly the stack walk); torch 2.x on the same chain: about
6x. Enable it only for debugging.
"""

import functools
import warnings

from .. import _C

__all__ = [
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
    "set_anomaly_enabled",
]


def is_anomaly_enabled():
    """Whether anomaly mode is on."""
    return _C._is_anomaly_enabled()


def is_anomaly_check_nan_enabled():
    """Whether anomaly mode checks backward outputs for NaN."""
    return _C._is_anomaly_check_nan_enabled()


def set_anomaly_enabled(enabled, check_nan=True):
    """``torch.set_anomaly_enabled``: sets the global flag."""
    _C._set_anomaly_enabled(bool(enabled), bool(check_nan))


class detect_anomaly:
    """Context manager (or decorator) that turns anomaly detection on.

    Warns on construction, as torch does, since it slows everything down
    (see the module docstring for the measured cost).
    """

    def __init__(self, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn(
            "Anomaly Detection has been enabled. "
            "This mode will increase the runtime "
            "and should only be enabled for debugging.",
            stacklevel=2,
        )

    def __enter__(self):
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args):
        set_anomaly_enabled(self.prev, self.prev_check_nan)

    def __call__(self, fn):
        check_nan = self.check_nan

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev, prev_nan = is_anomaly_enabled(), is_anomaly_check_nan_enabled()
            set_anomaly_enabled(True, check_nan)
            try:
                return fn(*args, **kwargs)
            finally:
                set_anomaly_enabled(prev, prev_nan)

        return wrapper


class set_detect_anomaly:
    """Sets anomaly detection on or off; usable as a function, a context
    manager (restoring the previous state on exit) or a decorator."""

    def __init__(self, mode, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        self.mode = mode
        self.check_nan = check_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *args):
        set_anomaly_enabled(self.prev, self.prev_check_nan)

    def __call__(self, fn):
        # Used as a decorator: the constructor's change applies per call only.
        set_anomaly_enabled(self.prev, self.prev_check_nan)
        mode, check_nan = self.mode, self.check_nan

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev, prev_nan = is_anomaly_enabled(), is_anomaly_check_nan_enabled()
            set_anomaly_enabled(mode, check_nan)
            try:
                return fn(*args, **kwargs)
            finally:
                set_anomaly_enabled(prev, prev_nan)

        return wrapper
