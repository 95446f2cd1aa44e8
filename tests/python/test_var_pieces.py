"""var/std over long lanes: computed in pieces (split over threads) and
combined in order, so the result is bitwise the same at 1 and 2 threads and
matches numpy's float64 variance, including lanes with a large mean."""

import numpy as np
import pytest

import ferrograd as fg


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 7, 16384, 16385, 100003])
@pytest.mark.parametrize("correction", [0, 1])
def test_var_over_a_long_lane(dtype, n, correction, at_threads):
    rng = np.random.default_rng(n)
    data = (rng.standard_normal(n) * 3 + 1000).astype(dtype)  # large mean
    x = fg.tensor(data)
    got = [at_threads(t, lambda: x.var(correction=correction)).item() for t in (1, 2)]
    assert np.array_equal(got[0], got[1], equal_nan=True)  # bitwise, NaN for n=1, ddof=1
    if n - correction <= 0:
        assert np.isnan(got[0]) or np.isinf(got[0])
        return
    want = np.var(data.astype(np.float64), ddof=correction)
    assert got[0] == pytest.approx(want, rel=1e-5 if dtype == "float32" else 1e-12)
    s = at_threads(2, lambda: x.std(correction=correction)).item()
    assert s == pytest.approx(np.sqrt(want), rel=1e-5 if dtype == "float32" else 1e-12)


def test_var_over_dims_matches_numpy():
    rng = np.random.default_rng(3)
    data = rng.standard_normal((30, 40, 50))
    x = fg.tensor(data)
    for dims in [(0,), (1,), (2,), (0, 2)]:
        np.testing.assert_allclose(
            x.var(dim=dims).numpy(), np.var(data, axis=dims, ddof=1), rtol=1e-12
        )
    assert np.isnan(fg.tensor([]).var().item())
