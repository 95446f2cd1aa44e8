"""Anomaly detection: detect_anomaly / set_detect_anomaly, forward tracebacks
on backward errors, the NaN check."""

import warnings

import pytest

import ferrograd
from ferrograd import autograd


def _quiet_detect(check_nan=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return autograd.detect_anomaly(check_nan=check_nan)


def test_flags_and_context_managers():
    assert not autograd.is_anomaly_enabled()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        cm = autograd.detect_anomaly()
    assert not autograd.is_anomaly_enabled()  # only on enter
    with cm:
        assert autograd.is_anomaly_enabled()
        assert autograd.is_anomaly_check_nan_enabled()
        with autograd.set_detect_anomaly(False):
            assert not autograd.is_anomaly_enabled()
        assert autograd.is_anomaly_enabled()
    assert not autograd.is_anomaly_enabled()
    with _quiet_detect(check_nan=False):
        assert autograd.is_anomaly_enabled()
        assert not autograd.is_anomaly_check_nan_enabled()
    assert autograd.is_anomaly_check_nan_enabled()
    # set_detect_anomaly also works as a plain call
    prev = autograd.set_detect_anomaly(True, check_nan=False)
    assert autograd.is_anomaly_enabled() and not autograd.is_anomaly_check_nan_enabled()
    autograd.set_detect_anomaly(False)
    assert not autograd.is_anomaly_enabled()
    del prev
    # torch-level aliases
    assert ferrograd.is_anomaly_enabled is autograd.is_anomaly_enabled
    ferrograd.set_anomaly_enabled(True)
    assert ferrograd.is_anomaly_enabled()
    ferrograd.set_anomaly_enabled(False)
    assert not ferrograd.is_anomaly_enabled()


def test_decorators():
    @_quiet_detect(check_nan=False)
    def f():
        return autograd.is_anomaly_enabled(), autograd.is_anomaly_check_nan_enabled()

    @autograd.set_detect_anomaly(True)
    def g():
        return autograd.is_anomaly_enabled()

    assert not autograd.is_anomaly_enabled()  # decorating changes nothing
    assert f() == (True, False)
    assert g() is True
    assert not autograd.is_anomaly_enabled()
    assert autograd.is_anomaly_check_nan_enabled()


def test_restores_on_exception():
    with pytest.raises(KeyError):
        with _quiet_detect():
            raise KeyError("x")
    assert not autograd.is_anomaly_enabled()


def _nan_backward():
    x = ferrograd.tensor([0.0, 1.0], requires_grad=True)
    z = (x / x).sum()  # marker: forward line
    return z


def test_nan_check_message_and_forward_traceback():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with autograd.detect_anomaly():
            z = _nan_backward()
            with pytest.raises(RuntimeError) as info:
                z.backward()
    msg = str(info.value)
    assert msg == "Function 'DivBackward0' returned nan values in its 1th output."
    notes = getattr(info.value, "__notes__", [])
    assert len(notes) == 1
    assert notes[0].startswith(
        "Error detected in DivBackward0. Traceback of forward call that caused the error:"
    )
    assert "z = (x / x).sum()  # marker: forward line" in notes[0]
    assert "_nan_backward" in notes[0]
    texts = [str(x.message) for x in w]
    assert any(
        t.startswith("Error detected in DivBackward0. Traceback of forward call") for t in texts
    )


def test_nan_check_matches_torch(torch):
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly():
            with pytest.raises(RuntimeError) as expected:
                (x / x).sum().backward()
        with autograd.detect_anomaly():
            with pytest.raises(RuntimeError) as got:
                _nan_backward().backward()
    assert str(got.value) == str(expected.value)


def test_no_nan_check_when_disabled_or_check_nan_false():
    z = _nan_backward()
    z.backward()  # no anomaly mode: NaN passes silently, as in torch
    with _quiet_detect(check_nan=False):
        z = _nan_backward()
        z.backward()
    x = ferrograd.tensor([0.0, 1.0], requires_grad=True)
    with _quiet_detect():
        (x * 2).sum().backward()  # no NaN: fine
    assert x.grad.tolist() == [2.0, 2.0]


def test_nan_only_in_forward_is_not_reported():
    x = ferrograd.tensor([float("nan"), 1.0], requires_grad=True)
    with _quiet_detect():
        (x + 1).sum().backward()  # gradients have no NaN
    assert x.grad.tolist() == [1.0, 1.0]


class _Boom(autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise ValueError("boom in backward")


def test_custom_function_error_keeps_type_and_gets_note():
    x = ferrograd.ones(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with autograd.detect_anomaly():
            y = _Boom.apply(x)  # marker: boom forward
            with pytest.raises(ValueError, match="boom in backward") as info:
                y.sum().backward()
    notes = getattr(info.value, "__notes__", [])
    assert len(notes) == 1
    assert "Error detected in" in notes[0]
    assert "y = _Boom.apply(x)  # marker: boom forward" in notes[0]
    assert any("Error detected in" in str(m.message) for m in w)


def test_error_without_anomaly_has_no_note():
    x = ferrograd.ones(3, requires_grad=True)
    y = _Boom.apply(x)
    with pytest.raises(ValueError) as info:
        y.sum().backward()
    assert not getattr(info.value, "__notes__", [])


def test_graph_built_before_enabling_says_no_forward_info():
    x = ferrograd.tensor([0.0, 1.0], requires_grad=True)
    z = (x / x).sum()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        with autograd.detect_anomaly():
            with pytest.raises(RuntimeError, match="returned nan values") as info:
                z.backward()
    notes = getattr(info.value, "__notes__", [])
    assert notes and "No forward pass information available" in notes[0]


def test_wide_graph_nan_in_parallel_backward():
    # Many independent branches: the backward runs on several threads; the
    # failing node's note still names its own forward line.
    x = ferrograd.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autograd.detect_anomaly():
            parts = [(x * float(i + 1)).exp() for i in range(16)]
            bad = x.sqrt()  # marker: sqrt branch
            total = sum(p.sum() for p in parts) + bad.sum() * 0.0
            with pytest.raises(RuntimeError, match="returned nan values") as info:
                total.backward()
    notes = getattr(info.value, "__notes__", [])
    assert notes and "Error detected in" in notes[0]
