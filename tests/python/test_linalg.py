"""torch.linalg beyond the registry's gradient checks: errors (type and
message, on ferrograd and torch alike), info outputs, named-tuple results,
float32, empty and non-finite input, batches split over threads (bitwise the
same for any thread count)."""

import numpy as np
import pytest

import ferrograd


def _t(lib, a, dtype="float64"):
    return lib.tensor(np.asarray(a), dtype=getattr(lib, dtype))


SINGULAR = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]


def _raises(fn, exc_type, match):
    with pytest.raises(exc_type) as info:
        fn()
    assert str(info.value) == match, str(info.value)
    return info.value


def test_singular_input_raises_linalg_error(lib):
    a = _t(lib, np.zeros((3, 3)))
    err = _raises(
        lambda: lib.linalg.solve(a, _t(lib, np.ones((3, 1)))),
        lib.linalg.LinAlgError,
        "torch.linalg.solve: The solver failed because the input matrix is singular.",
    )
    assert isinstance(err, RuntimeError)
    batch = _t(lib, np.stack([np.eye(3), np.zeros((3, 3))]))
    _raises(
        lambda: lib.linalg.inv(batch),
        lib.linalg.LinAlgError,
        "linalg.inv: (Batch element 1): The diagonal element 1 is zero, the inversion could "
        "not be completed because the input matrix is singular.",
    )
    _raises(
        lambda: lib.inverse(a),
        lib.linalg.LinAlgError,
        "linalg.inv: The diagonal element 1 is zero, the inversion could not be completed "
        "because the input matrix is singular.",
    )


def test_non_positive_definite_raises(lib):
    a = _t(lib, np.stack([np.eye(3), -np.eye(3)]))
    _raises(
        lambda: lib.linalg.cholesky(a),
        lib.linalg.LinAlgError,
        "linalg.cholesky: (Batch element 1): The factorization could not be completed because "
        "the input is not positive-definite (the leading minor of order 1 is not "
        "positive-definite).",
    )
    l, info = lib.linalg.cholesky_ex(a)
    assert info.tolist() == [0, 1]


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda lib: lib.linalg.inv(lib.ones(2, 3)),
            "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices",
        ),
        (
            lambda lib: lib.linalg.det(lib.ones(3)),
            "linalg.det: The input tensor A must have at least 2 dimensions.",
        ),
        (
            lambda lib: lib.linalg.det(lib.ones(3, 3, dtype=lib.int64)),
            "linalg.det: Expected a floating point or complex tensor as input. Got Long",
        ),
        (
            lambda lib: lib.linalg.solve(lib.eye(3), lib.ones(4, 1)),
            "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x1)",
        ),
        (
            lambda lib: lib.linalg.solve(lib.eye(3), lib.ones(3, dtype=lib.float64)),
            "linalg.solve: Expected A and B to have the same dtype, but found A of type Float "
            "and B of type Double instead",
        ),
        (
            lambda lib: lib.linalg.qr(lib.ones(3, 3), mode="x"),
            "qr received unrecognized mode 'x' but expected one of 'reduced' (default), 'r', "
            "or 'complete'",
        ),
        (
            lambda lib: lib.linalg.lstsq(lib.eye(3), lib.ones(4, 2)),
            "torch.linalg.lstsq: input.size(-2) should match other.size(-2)",
        ),
        (
            lambda lib: lib.linalg.matrix_power(lib.ones(2, 3), 2),
            "linalg.matrix_power: A must be batches of square matrices, but they are 2 by 3 "
            "matrices",
        ),
    ],
)
def test_bad_input_errors(lib, call, message):
    _raises(lambda: call(lib), RuntimeError, message)


def test_qr_mode_r_has_no_gradient(lib):
    a = _t(lib, np.random.default_rng(0).standard_normal((3, 3))).requires_grad_()
    q, r = lib.linalg.qr(a, mode="r")
    assert q.numel() == 0
    with pytest.raises(RuntimeError, match="mode='r'"):
        r.sum().backward()


def test_info_outputs_and_named_tuples():
    a = ferrograd.tensor(np.stack([np.eye(3), np.array(SINGULAR)]))
    x, info = ferrograd.linalg.solve_ex(a, ferrograd.ones(2, 3, 1, dtype=ferrograd.float64))
    assert info.tolist() == [0, 3]
    r = ferrograd.linalg.inv_ex(a)
    assert r.info.tolist() == [0, 3] and r.inverse.shape == (2, 3, 3)
    sign, logabs = ferrograd.linalg.slogdet(a)
    assert sign.tolist() == [1.0, 0.0] and logabs[1].item() == float("-inf")
    assert ferrograd.linalg.det(a).tolist() == [1.0, 0.0]
    u, s, vh = ferrograd.linalg.svd(ferrograd.eye(3, 2))
    assert (u.shape, s.shape, vh.shape) == ((3, 3), (2,), (2, 2))
    assert type(ferrograd.linalg.svd(ferrograd.eye(2))).__name__ == "linalg_svd"
    res = ferrograd.linalg.lstsq(ferrograd.eye(3), ferrograd.ones(3, 2))
    assert res.rank.item() == 3 and res.residuals.numel() == 0


def test_float32_matches_float64():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 5, 5)) + 5 * np.eye(5)
    b = rng.standard_normal((4, 5, 2))
    for f in [
        lambda L, x, y: L.linalg.solve(x, y),
        lambda L, x, y: L.linalg.inv(x),
        lambda L, x, y: L.linalg.det(x),
        lambda L, x, y: L.linalg.cholesky(x @ x.mT),
        lambda L, x, y: L.linalg.svdvals(x),
        lambda L, x, y: L.linalg.eigvalsh(x + x.mT),
        lambda L, x, y: L.linalg.matrix_exp(x * 0.1),
    ]:
        r32 = f(
            ferrograd,
            ferrograd.tensor(a, dtype=ferrograd.float32),
            ferrograd.tensor(b, dtype=ferrograd.float32),
        )
        r64 = f(ferrograd, ferrograd.tensor(a), ferrograd.tensor(b))
        assert r32.dtype == ferrograd.float32
        np.testing.assert_allclose(r32.numpy(), r64.numpy(), rtol=2e-4, atol=1e-4)


def test_batches_are_bitwise_the_same_for_any_thread_count():
    rng = np.random.default_rng(2)
    a = ferrograd.tensor(rng.standard_normal((64, 32, 32)))
    spd = a @ a.mT + ferrograd.eye(32, dtype=ferrograd.float64)
    fns = [
        lambda: ferrograd.linalg.cholesky(spd),
        lambda: ferrograd.linalg.solve(a, spd),
        lambda: ferrograd.linalg.inv(a),
        lambda: ferrograd.linalg.qr(a).Q,
        lambda: ferrograd.linalg.svd(a).U,
        lambda: ferrograd.linalg.eigh(spd).eigenvectors,
    ]
    before = ferrograd.get_num_threads()
    try:
        runs = []
        for n in (1, 2, 3):
            ferrograd.set_num_threads(n)
            runs.append([f().numpy() for f in fns])
    finally:
        ferrograd.set_num_threads(before)
    for other in runs[1:]:
        for x, y in zip(runs[0], other):
            assert np.array_equal(x, y)


def test_empty_and_non_finite_input_do_not_crash():
    e = ferrograd.zeros(0, 3, 3, dtype=ferrograd.float64)
    assert ferrograd.linalg.inv(e).shape == (0, 3, 3)
    assert ferrograd.linalg.det(ferrograd.zeros(2, 0, 0)).tolist() == [1.0, 1.0]
    nan = ferrograd.full((3, 3), float("nan"), dtype=ferrograd.float64)
    for f in [ferrograd.linalg.det, ferrograd.linalg.svdvals, ferrograd.linalg.eigvalsh]:
        try:
            f(nan)
        except RuntimeError:
            pass


def test_matrix_rank_and_aliases(lib):
    a = _t(lib, SINGULAR)
    assert lib.linalg.matrix_rank(a).item() == 2
    assert lib.linalg.matrix_rank(a, hermitian=True).item() in (2, 3)
    x = _t(lib, np.random.default_rng(3).standard_normal((3, 3)) + 3 * np.eye(3))
    np.testing.assert_allclose(lib.det(x).item(), lib.linalg.det(x).item())
    np.testing.assert_allclose(lib.logdet(x @ x.mT).item(), lib.linalg.slogdet(x @ x.mT)[1].item())
    np.testing.assert_allclose(lib.slogdet(x)[1].item(), lib.linalg.slogdet(x)[1].item())
