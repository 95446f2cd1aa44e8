"""einsum: equations (explicit and implicit output, ellipsis, repeated
labels, spaces, broadcasting), the list form and torch's errors, run on
ferrograd and (through the `lib` fixture) on torch, plus a seeded
comparison with torch. Gradients are checked in the op registry."""

import numpy as np
import pytest

import ferrograd as fg


def arr(lib, *shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape)
    return lib.tensor(a.tolist(), dtype=lib.float64)


def close(t, want):
    np.testing.assert_allclose(np.asarray(t.tolist()), want, rtol=1e-12, atol=1e-12)


def test_equations(lib):
    a, b = arr(lib, 2, 3, seed=1), arr(lib, 3, 4, seed=2)
    na, nb = np.asarray(a.tolist()), np.asarray(b.tolist())
    close(lib.einsum("ij,jk->ik", a, b), na @ nb)
    close(lib.einsum("ij,jk", a, b), na @ nb)  # implicit output: i, k
    close(lib.einsum("ij,jk", [a, b]), na @ nb)  # operands as one list
    close(lib.einsum(" i j , j k -> k i ", a, b), (na @ nb).T)
    close(lib.einsum("ji", a), na.T)  # implicit output is sorted: i, j
    close(lib.einsum("ij->", a), na.sum())
    sq = arr(lib, 3, 3, seed=3)
    close(lib.einsum("ii", sq), np.trace(np.asarray(sq.tolist())))
    close(lib.einsum("ii->i", sq), np.diag(np.asarray(sq.tolist())))
    x = arr(lib, 2, 3, 4, seed=4)
    nx = np.asarray(x.tolist())
    close(lib.einsum("...ij->...ji", x), nx.transpose(0, 2, 1))
    close(lib.einsum("b...,b...->b", x, x), (nx * nx).sum((1, 2)))
    # Uppercase labels sort before lowercase in the implicit output.
    close(lib.einsum("aB", a), na.T)
    # A size-1 dim broadcasts against its label's size.
    close(
        lib.einsum("i,i->i", lib.ones(1, dtype=lib.float64), lib.ones(3, dtype=lib.float64)),
        np.ones(3),
    )


def test_errors(lib):
    a = lib.ones(2, 3)
    cases = [
        (lambda: lib.einsum("ij,jk->ik", a), "fewer operands"),
        (lambda: lib.einsum("ij->i", a, a), "more operands"),
        (
            lambda: lib.einsum("ijk", a),
            r"number of subscripts in the equation \(3\) does not match",
        ),
        (lambda: lib.einsum("ij->kk", a), "output subscript k does not appear"),
        (lambda: lib.einsum("ij->ii", a), "output subscript i appears more than once"),
        (lambda: lib.einsum("i.j", a), "not part of any ellipsis"),
        (lambda: lib.einsum("ij,ij", a, lib.ones(3, 3)), "subscript i has size 3 for operand 1"),
        (lambda: lib.einsum("ii", a), "repeated for operand"),
    ]
    for f, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            f()


def test_against_torch_random(torch):
    rng = np.random.default_rng(11)
    specs = [
        ("bij,bjk->bik", (3, 2, 4), (3, 4, 5)),
        ("ij,kj->ik", (4, 6), (5, 6)),
        ("i,i->", (7,), (7,)),
        ("abc,cd->dba", (2, 3, 4), (4, 5)),
        ("...k,k->...", (2, 3, 4), (4,)),
    ]
    for eq, s1, s2 in specs:
        x, y = rng.standard_normal(s1), rng.standard_normal(s2)
        want = torch.einsum(eq, torch.from_numpy(x), torch.from_numpy(y)).numpy()
        got = fg.einsum(eq, fg.from_numpy(x), fg.from_numpy(y)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=eq)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    want = torch.einsum("ij,kj", torch.from_numpy(x), torch.from_numpy(x)).numpy()
    got = fg.einsum("ij,kj", fg.from_numpy(x), fg.from_numpy(x))
    assert got.dtype == fg.float32
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)
