# ruff: noqa: S102, BLE001 - run() execs the snippets and reports every exception
"""Helpers of the fuzzer's regression checks: ``run`` (a snippet with ``torch``
bound to a library), ``raises`` and ``name`` (a grad_fn's class name)."""

import fuzz_programs as fp


def run(lib, src):
    """Executes ``src`` with ``torch`` bound to ``lib`` (and the fuzzer's custom
    Functions); a Rust panic (a BaseException) becomes an AssertionError."""
    ns = {"torch": lib, **fp.make_functions(lib)}
    try:
        exec(src, ns)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:
        if isinstance(e, Exception):
            raise
        raise AssertionError(f"crashed: {type(e).__name__}: {e}") from None
    return ns


def raises(lib, src, exc):
    try:
        run(lib, src)
    except exc:
        return
    except Exception as e:
        raise AssertionError(
            f"raised {type(e).__name__}, torch raises {exc.__name__}: {e}"
        ) from None
    raise AssertionError(f"no error; torch raises {exc.__name__}")


def name(t):
    return type(t.grad_fn).__name__ if t.grad_fn is not None else None
