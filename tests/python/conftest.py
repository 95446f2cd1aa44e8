"""Shared pytest setup for ferrograd's Python tests.

* Puts this directory on ``sys.path`` so tests can import ``op_registry`` and
  ``helpers`` whatever pytest's import mode.
* ``lib`` fixture: the library under test, parametrized over ``ferrograd`` and
  (when installed) ``torch``. Engine and error tests run on both, so torch
  validates the tests themselves: a test that fails on torch is a wrong test.
* ``FERROGRAD_EXPECT_INSTALLED=1`` (set by ``scripts/test.sh``) makes the
  session fail unless ferrograd was imported from an installed wheel rather
  than the source tree.
"""

import importlib
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import ferrograd  # noqa: E402


def _torch():
    try:
        return importlib.import_module("torch")
    except ImportError:
        return None


def pytest_report_header(config):
    t = _torch()
    return [
        f"ferrograd: {ferrograd.__file__}",
        f"torch oracle: {t.__version__ if t else 'not installed (oracle tests skip)'}",
    ]


def pytest_sessionstart(session):
    if os.environ.get("FERROGRAD_EXPECT_INSTALLED") == "1":
        src = os.path.normpath(os.path.join(HERE, "..", "..", "python"))
        where = os.path.normpath(os.path.dirname(os.path.dirname(ferrograd.__file__)))
        if where == src or "site-packages" not in ferrograd.__file__:
            raise pytest.UsageError(
                f"ferrograd imported from {ferrograd.__file__}, not from an installed wheel"
            )


@pytest.fixture(params=["ferrograd", "torch"])
def lib(request):
    """The library under test; the torch run is skipped when torch is absent."""
    if request.param == "torch":
        return pytest.importorskip("torch")
    return ferrograd


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.fixture
def restore_threads():
    """Restores ferrograd's thread count after a test that changes it."""
    n = ferrograd.get_num_threads()
    yield
    ferrograd.set_num_threads(n)


@pytest.fixture
def at_threads(restore_threads):
    """``at_threads(n, f)``: runs ``f()`` with ferrograd at ``n`` threads
    (the count is restored after the test)."""

    def run(n, f):
        ferrograd.set_num_threads(n)
        return f()

    return run
