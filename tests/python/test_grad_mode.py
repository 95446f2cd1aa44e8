"""Grad-mode context managers and decorators: no_grad, enable_grad,
set_grad_enabled, inference_mode; thread locality; torch parity."""

import threading
import warnings

import pytest

import ferrograd as fg
from ferrograd.autograd import grad_mode


@pytest.fixture(autouse=True)
def _reset_mode():
    fg._C._set_grad_enabled(True)
    fg._C._set_inference_mode(False)
    yield
    fg._C._set_grad_enabled(True)
    fg._C._set_inference_mode(False)


def leaf():
    return fg.tensor([1.0, 2.0], requires_grad=True)


def test_no_grad_context():
    x = leaf()
    with fg.no_grad():
        assert not fg.is_grad_enabled()
        y = x * 2
        # factory functions still honour requires_grad=True
        z = fg.ones(2, requires_grad=True)
    assert fg.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.is_leaf
    assert (x * 2).requires_grad


def test_no_grad_enter_returns_none_and_restores_on_exception():
    with fg.no_grad() as v:
        assert v is None
    with pytest.raises(ValueError):
        with fg.no_grad():
            raise ValueError("boom")
    assert fg.is_grad_enabled()


def test_nesting_restores_previous_state():
    with fg.no_grad():
        with fg.enable_grad():
            assert fg.is_grad_enabled()
            assert (leaf() * 2).requires_grad
            with fg.no_grad():
                assert not fg.is_grad_enabled()
            assert fg.is_grad_enabled()
        assert not fg.is_grad_enabled()
    assert fg.is_grad_enabled()


def test_same_instance_reused():
    ng = fg.no_grad()
    for _ in range(2):
        with ng:
            assert not fg.is_grad_enabled()
        assert fg.is_grad_enabled()


@pytest.mark.parametrize("bare", [True, False])
def test_no_grad_decorator(bare):
    def f(x):
        """doc"""
        return x * 2, fg.is_grad_enabled()

    g = fg.no_grad(f) if bare else fg.no_grad()(f)
    y, enabled = g(leaf())
    assert not enabled and not y.requires_grad
    assert fg.is_grad_enabled()
    assert g.__name__ == "f" and g.__doc__ == "doc"


@pytest.mark.parametrize("bare", [True, False])
def test_enable_grad_decorator(bare):
    def f(x):
        return x * 2

    g = fg.enable_grad(f) if bare else fg.enable_grad()(f)
    with fg.no_grad():
        y = g(leaf())
        assert not fg.is_grad_enabled()
    assert y.requires_grad


def test_decorated_method():
    class M:
        @fg.no_grad()
        def run(self, x):
            return x * 3

        @fg.no_grad
        def run_bare(self, x):
            return x * 3

    m = M()
    assert not m.run(leaf()).requires_grad
    assert not m.run_bare(leaf()).requires_grad


def test_decorated_generator_runs_each_step_in_mode():
    @fg.no_grad()
    def gen():
        for _ in range(3):
            yield fg.is_grad_enabled()

    seen = []
    for v in gen():
        seen.append(v)
        assert fg.is_grad_enabled()  # the caller's mode between steps
    assert seen == [False, False, False]

    @fg.enable_grad()
    def gen2():
        got = yield fg.is_grad_enabled()
        yield got, fg.is_grad_enabled()
        return "done"

    with fg.no_grad():
        g = gen2()
        assert next(g) is True
        assert g.send("x") == ("x", True)
        assert not fg.is_grad_enabled()
        with pytest.raises(StopIteration) as stop:
            next(g)
        assert stop.value.value == "done"


def test_decorated_generator_throw_and_close():
    log = []

    @fg.no_grad()
    def gen():
        try:
            yield 1
        except KeyError:
            log.append(("caught", fg.is_grad_enabled()))
            yield 2
        finally:
            log.append(("finally", fg.is_grad_enabled()))

    g = gen()
    assert next(g) == 1
    assert g.throw(KeyError()) == 2
    g.close()
    assert log == [("caught", False), ("finally", False)]
    assert fg.is_grad_enabled()


def test_decorating_a_class_warns():
    class C:
        def __init__(self):
            self.enabled = fg.is_grad_enabled()

    with pytest.warns(FutureWarning):
        Wrapped = fg.no_grad()(C)
    assert Wrapped().enabled is False


def test_set_grad_enabled_function_form():
    r = fg.set_grad_enabled(False)
    assert not fg.is_grad_enabled()
    assert repr(r) == "ferrograd.autograd.grad_mode.set_grad_enabled(mode=False)"
    fg.set_grad_enabled(True)
    assert fg.is_grad_enabled()


def test_set_grad_enabled_context():
    x = leaf()
    for mode in [False, True]:
        with fg.set_grad_enabled(mode):
            assert fg.is_grad_enabled() is mode
            assert (x * 2).requires_grad is mode
        assert fg.is_grad_enabled()
    with fg.no_grad():
        with fg.set_grad_enabled(True):
            assert fg.is_grad_enabled()
        assert not fg.is_grad_enabled()


def test_set_grad_enabled_decorator_restores_at_decoration():
    @fg.set_grad_enabled(False)
    def f():
        return fg.is_grad_enabled()

    assert fg.is_grad_enabled()  # decorating does not leave the mode set
    assert f() is False
    assert fg.is_grad_enabled()


def test_inference_mode():
    x = leaf()
    with fg.inference_mode():
        assert fg.is_inference_mode_enabled() and not fg.is_grad_enabled()
        assert not (x * 2).requires_grad
        with fg.enable_grad():
            assert fg.is_grad_enabled() and fg.is_inference_mode_enabled()
        with fg.inference_mode(False):
            assert fg.is_grad_enabled() and not fg.is_inference_mode_enabled()
        assert fg.is_inference_mode_enabled() and not fg.is_grad_enabled()
    assert not fg.is_inference_mode_enabled() and fg.is_grad_enabled()
    with fg.no_grad():
        with fg.inference_mode(False):
            # like torch: inference_mode(False) enables grad mode
            assert fg.is_grad_enabled()
        assert not fg.is_grad_enabled()
    assert fg.inference_mode(mode=False).mode is False


def test_inference_mode_decorators():
    def f():
        return fg.is_inference_mode_enabled(), fg.is_grad_enabled()

    assert fg.inference_mode(f)() == (True, False)  # bare
    assert fg.inference_mode()(f)() == (True, False)
    with fg.no_grad():
        assert fg.inference_mode(False)(f)() == (False, True)
    assert f() == (False, True)


def test_classes_are_exported_everywhere():
    assert fg.no_grad is fg.autograd.no_grad is grad_mode.no_grad
    assert fg.enable_grad is fg.autograd.enable_grad
    assert fg.set_grad_enabled is fg.autograd.set_grad_enabled
    assert fg.inference_mode is fg.autograd.inference_mode
    assert isinstance(fg.no_grad(), grad_mode.no_grad)


# ---------------------------------------------------------------------------
# threads
# ---------------------------------------------------------------------------


def _in_thread(fn):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_new_thread_starts_with_defaults():
    with fg.no_grad():
        with fg.inference_mode():
            assert _in_thread(lambda: (fg.is_grad_enabled(), fg.is_inference_mode_enabled())) == (
                True,
                False,
            )
            assert not fg.is_grad_enabled()


def test_mode_set_in_thread_does_not_leak():
    def body():
        fg.set_grad_enabled(False)
        return fg.is_grad_enabled()

    assert _in_thread(body) is False
    assert fg.is_grad_enabled()


def test_threads_interleaved_are_independent():
    n = 4
    barrier = threading.Barrier(n)
    results = [None] * n
    x = leaf()

    def worker(i):
        mode = i % 2 == 0
        ctx = fg.enable_grad() if mode else fg.no_grad()
        with ctx:
            barrier.wait()  # every thread is inside its block now
            ok = []
            for _ in range(50):
                ok.append(fg.is_grad_enabled() is mode and (x * 2).requires_grad is mode)
            barrier.wait()
            results[i] = all(ok)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    with fg.no_grad():  # the main thread's mode is irrelevant to the workers
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == [True] * n
    assert fg.is_grad_enabled()


def test_decorated_function_in_threads():
    @fg.no_grad()
    def f():
        return fg.is_grad_enabled()

    assert _in_thread(f) is False
    assert _in_thread(fg.is_grad_enabled) is True


# ---------------------------------------------------------------------------
# parity with torch
# ---------------------------------------------------------------------------

SCENARIOS = [
    "with M.no_grad():\n    r.append(M.is_grad_enabled())",
    "with M.no_grad():\n    with M.enable_grad():\n        r.append(M.is_grad_enabled())",
    "with M.set_grad_enabled(False):\n    r.append(M.is_grad_enabled())\nr.append(M.is_grad_enabled())",
    "M.set_grad_enabled(False)\nr.append(M.is_grad_enabled())\nM.set_grad_enabled(True)",
    "with M.inference_mode():\n    r.append((M.is_grad_enabled(), M.is_inference_mode_enabled()))",
    "with M.no_grad():\n    with M.inference_mode(False):\n        r.append(M.is_grad_enabled())",
    "with M.inference_mode():\n    with M.inference_mode(False):\n"
    "        r.append((M.is_grad_enabled(), M.is_inference_mode_enabled()))",
    "with M.inference_mode():\n    with M.enable_grad():\n"
    "        r.append((M.is_grad_enabled(), M.is_inference_mode_enabled()))",
    "f = M.set_grad_enabled(False)(lambda: M.is_grad_enabled())\n"
    "r.append(M.is_grad_enabled())\nr.append(f())",
    "f = M.no_grad(lambda: M.is_grad_enabled())\nr.append(f())",
    "f = M.inference_mode(lambda: M.is_inference_mode_enabled())\nr.append(f())",
    "x = M.ones(2, requires_grad=True)\nwith M.no_grad():\n    y = x * 2\n"
    "    z = M.ones(2, requires_grad=True)\nr.append((y.requires_grad, z.requires_grad))",
    "r.append(str(M.set_grad_enabled(False)).split('.')[-1])\nM.set_grad_enabled(True)",
]


@pytest.mark.parametrize("code", SCENARIOS)
def test_matches_torch(code, torch):
    results = []
    for mod in (torch, fg):
        r = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(code, {"M": mod, "r": r})
        results.append(r)
        assert mod.is_grad_enabled()
    assert results[0] == results[1]
