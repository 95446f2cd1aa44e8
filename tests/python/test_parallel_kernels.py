"""Data-parallel kernels: big inputs (split over threads) give numpy's
values, bit for bit the same for every thread count."""

import numpy as np
import pytest

import ferrograd as fg


@pytest.fixture
def threads():
    before = fg.get_num_threads()
    yield
    fg.set_num_threads(before)


def _t(a, requires_grad=False):
    return fg.tensor(a, requires_grad=requires_grad)


def _all_thread_counts(run):
    outs = []
    for n in (1, 2, 3):
        fg.set_num_threads(n)
        outs.append([np.asarray(o) for o in run()])
    for other in outs[1:]:
        for p, q in zip(outs[0], other):
            assert np.array_equal(p, q)
    return outs[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_broadcast_rows_match_numpy(threads, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 257)).astype(dtype)
    row = rng.standard_normal(257).astype(dtype)
    col = rng.standard_normal((300, 1)).astype(dtype)
    at = a.T.copy()  # read through a transposed view below

    def run():
        A, R, C = _t(a), _t(row), _t(col)
        return [
            (A + R).numpy(),
            (R - A).numpy(),
            (A * C).numpy(),
            (C / A).numpy(),
            (C + R).numpy(),
            (_t(at).t() * R).numpy(),
        ]

    got = _all_thread_counts(run)
    want = [a + row, row - a, a * col, col / a, col + row, at.T * row]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_elementwise_and_reductions_match_numpy(threads):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((400, 300)).astype(np.float32)
    y = rng.standard_normal((400, 300)).astype(np.float32)

    def run():
        X, Y = _t(x), _t(y)
        return [
            (X * Y).numpy(),
            (X - 0.5).numpy(),
            X.tanh().numpy(),
            X.exp().numpy(),
            X.relu().numpy(),
            X.sum(0).numpy(),
            X.sum(1).numpy(),
            X.reshape(-1).sum().numpy(),
            X.softmax(1).numpy(),
            X.softmax(0).numpy(),
            X.amax(1).numpy(),
            X.cumsum(1).numpy(),
            X.clone().numpy(),
        ]

    got = _all_thread_counts(run)
    e = np.exp(x - x.max(1, keepdims=True))
    e0 = np.exp(x - x.max(0, keepdims=True))
    want = [
        x * y,
        x - np.float32(0.5),
        np.tanh(x),
        np.exp(x),
        np.maximum(x, 0),
        x.sum(0),
        x.sum(1),
        x.sum(),
        e / e.sum(1, keepdims=True),
        e0 / e0.sum(0, keepdims=True),
        x.max(1),
        np.cumsum(x, 1),
        x,
    ]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-4)


def test_inplace_and_backward_match_numpy(threads):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((512, 200)).astype(np.float32)
    b = rng.standard_normal(200).astype(np.float32)

    def run():
        X = _t(x)
        X.mul_(2.0)
        X.add_(_t(b))
        X.tanh_()
        W = _t(x, requires_grad=True)
        B = _t(b, requires_grad=True)
        ((W * 3.0 + B).sigmoid()).sum().backward()
        return [X.numpy(), W.grad.numpy(), B.grad.numpy()]

    got = _all_thread_counts(run)
    s = 1 / (1 + np.exp(-(3 * x + b)))
    want = [np.tanh(2 * x + b), 3 * s * (1 - s), (s * (1 - s)).sum(0)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_big_float32_matmul_and_its_gradients_match_numpy(threads):
    # Big enough for the own float32 GEMM kernel; odd sizes, a transposed
    # operand, and the backward's transposed products.
    r = np.random.default_rng(5)
    a = r.standard_normal((131, 300), dtype=np.float32)
    bt = r.standard_normal((77, 300), dtype=np.float32)
    g = r.standard_normal((131, 77), dtype=np.float32)

    def run():
        x = _t(a, requires_grad=True)
        w = _t(bt, requires_grad=True)
        y = x @ w.t()
        y.backward(_t(g))
        return y.detach(), x.grad, w.grad

    y, gx, gw = _all_thread_counts(run)
    a64, b64, g64 = a.astype(np.float64), bt.T.astype(np.float64), g.astype(np.float64)
    tol = dict(rtol=0, atol=1e-4 * 300)
    np.testing.assert_allclose(y, a64 @ b64, **tol)
    np.testing.assert_allclose(gx, g64 @ b64.T, **tol)
    np.testing.assert_allclose(gw, (a64.T @ g64).T, **tol)


@pytest.mark.parametrize(
    "layout",
    ["contig", "transposed", "stepped", "row_mask", "col_mask", "self_mask", "expanded"],
)
def test_masked_fill_on_every_layout(threads, layout):
    # masked_fill runs through the iteration layer (split over threads,
    # the mask broadcast or strided); numpy's values for every thread count.
    rng = np.random.default_rng(5)
    a = rng.standard_normal((300, 400)).astype(np.float32)
    m = rng.standard_normal((300, 400)) > 0

    def run():
        x = fg.tensor(a)
        mask = fg.tensor(m)
        if layout == "transposed":
            x, mask, want = x.t(), mask.t(), np.where(m.T, 7.0, a.T)
        elif layout == "stepped":
            x, mask, want = x[:, ::3], mask[::1, ::3], np.where(m[:, ::3], 7.0, a[:, ::3])
        elif layout == "row_mask":
            mask, want = mask[0], np.where(m[0], 7.0, a)
        elif layout == "col_mask":
            mask, want = mask[:, :1], np.where(m[:, :1], 7.0, a)
        elif layout == "expanded":
            # torch allows (deprecated) masked_fill_ of an expanded tensor
            base = fg.tensor(a[0])
            x = base.expand(300, 400)
            mask = fg.tensor(m[:, :1] & m[:1, :])
            x.masked_fill_(mask, 7.0)
            return [base.numpy(), np.where(m[0, :] & m[:, 0].any(), 7.0, a[0]).astype(np.float32)]
        elif layout == "self_mask":
            x = fg.tensor(m)
            mask, want = x, np.where(m, False, m)
            x.masked_fill_(mask, False)
            return [x.numpy(), want]
        else:
            want = np.where(m, 7.0, a)
        out = x.masked_fill(mask, 7.0)
        x.masked_fill_(mask, 7.0)
        return [out.numpy(), x.numpy(), want.astype(out.numpy().dtype)]

    outs = _all_thread_counts(run)
    for got in outs[:-1]:
        assert np.array_equal(got, outs[-1])
