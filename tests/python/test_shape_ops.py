"""flip, roll, repeat/tile, tril/triu, diagonal/diag/trace, movedim and
swapaxes: values, view semantics and errors, run on ferrograd and (through
the `lib` fixture) on torch. Gradients are checked in the op registry."""

import pytest

from helpers import vals


def test_flip_and_roll(lib):
    x = lib.arange(6.0).reshape(2, 3)
    assert vals(x.flip(0)) == [[3.0, 4.0, 5.0], [0.0, 1.0, 2.0]]
    assert vals(x.flip(0, 1)) == vals(lib.flip(x, [0, 1])) == [[5.0, 4.0, 3.0], [2.0, 1.0, 0.0]]
    assert vals(x.flip(dims=(-1,))) == [[2.0, 1.0, 0.0], [5.0, 4.0, 3.0]]
    assert vals(x.roll(1)) == [[5.0, 0.0, 1.0], [2.0, 3.0, 4.0]]  # flattened
    assert vals(x.roll(-1, 1)) == [[1.0, 2.0, 0.0], [4.0, 5.0, 3.0]]
    assert vals(lib.roll(x, (1, 4), (0, 1))) == [[5.0, 3.0, 4.0], [2.0, 0.0, 1.0]]
    with pytest.raises(RuntimeError, match="appears multiple times"):
        x.flip(0, 0)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        x.roll((1,), (0, 1))


def test_repeat_and_tile(lib):
    m = lib.tensor([[1, 2], [3, 4]])
    assert vals(m.repeat(1, 2)) == [[1, 2, 1, 2], [3, 4, 3, 4]]
    assert list(m.repeat(3, 1, 2).shape) == [3, 2, 4]
    assert vals(lib.tensor([1, 2]).repeat(2)) == [1, 2, 1, 2]
    assert list(m.repeat(0, 1).shape) == [0, 2]
    assert vals(m.tile(2)) == [[1, 2, 1, 2], [3, 4, 3, 4]]  # dims padded on the left
    assert list(lib.tile(m, (2, 1, 1)).shape) == [2, 2, 2]
    with pytest.raises(RuntimeError, match="can not be smaller"):
        m.repeat(2)


def test_triangles(lib):
    m = lib.ones(3, 3)
    assert vals(m.tril()) == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert vals(lib.triu(m, 1)) == [[0, 1, 1], [0, 0, 1], [0, 0, 0]]
    assert vals(m.tril(-1)) == [[0, 0, 0], [1, 0, 0], [1, 1, 0]]
    assert vals(lib.ones(2, 2, 3).triu()[1]) == [[1, 1, 1], [0, 1, 1]]
    b = lib.ones(2, 2, dtype=lib.bool)
    assert vals(b.tril()) == [[True, False], [True, True]]
    x = lib.ones(2, 2)
    v = x._version
    assert x.triu_() is x and vals(x) == [[1, 1], [0, 1]] and x._version == v + 1
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        lib.ones(3).tril()


def test_diagonal_is_a_view(lib):
    m = lib.arange(12.0).reshape(3, 4).clone()
    d = m.diagonal()
    assert vals(d) == [0.0, 5.0, 10.0] and d._base is not None
    assert vals(m.diagonal(1)) == [1.0, 6.0, 11.0] and vals(m.diagonal(-1)) == [4.0, 9.0]
    assert vals(m.diagonal(5)) == []
    d.mul_(-1)  # writes through to m
    assert vals(m[1]) == [4.0, -5.0, 6.0, 7.0]
    x = lib.arange(24.0).reshape(2, 3, 4)
    assert vals(x.diagonal(0, 1, 2)) == [[0.0, 5.0, 10.0], [12.0, 17.0, 22.0]]
    assert list(lib.diagonal(x, offset=1, dim1=0, dim2=2).shape) == [3, 2]
    with pytest.raises(RuntimeError, match="cannot be identical"):
        m.diagonal(0, 1, 1)


def test_diagonal_view_gradients(lib):
    # In place through the diagonal view: the base's gradient sees it.
    w = lib.ones(3, 3, requires_grad=True)
    m = w * 1
    m.diagonal().mul_(3)
    (g,) = lib.autograd.grad(m.sum(), w)
    assert vals(g) == [[3, 1, 1], [1, 3, 1], [1, 1, 3]]


def test_diag_and_trace(lib):
    v = lib.tensor([1.0, 2.0])
    assert vals(lib.diag(v)) == [[1.0, 0.0], [0.0, 2.0]]
    assert vals(v.diag(1)) == [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]
    m = lib.arange(9.0).reshape(3, 3)
    d = lib.diag(m, -1)
    assert vals(d) == [3.0, 7.0] and d._base is None  # a copy
    assert vals(m.trace()) == 12.0 and vals(lib.trace(lib.ones(2, 3))) == 2.0
    with pytest.raises(RuntimeError, match="1D or 2D"):
        lib.diag(lib.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match="expected a matrix"):
        lib.ones(3).trace()


def test_movedim_and_swapaxes(lib):
    x = lib.zeros(2, 3, 4)
    assert list(x.movedim(0, 2).shape) == [3, 4, 2]
    assert list(lib.movedim(x, (0, 1), (2, 0)).shape) == [3, 4, 2]
    assert list(lib.moveaxis(x, -1, 0).shape) == [4, 2, 3]
    assert list(x.swapaxes(0, 2).shape) == [4, 3, 2] and list(lib.swapdims(x, 0, 1).shape) == [
        3,
        2,
        4,
    ]
    y = lib.arange(6.0).reshape(2, 3)
    assert vals(y.movedim(1, 0)) == vals(y.t())
    with pytest.raises(RuntimeError, match="repeated dim in `source`"):
        x.movedim((0, 0), (1, 2))


@pytest.mark.parametrize(
    "shape, perm",
    [
        ((3, 4, 5), (0, 2, 1)),  # last two dims transposed: tiled copy
        ((17, 33), (1, 0)),
        ((2, 3, 40, 37), (0, 1, 3, 2)),
        ((3, 5, 7), (1, 2, 0)),
        ((64, 3, 50), (1, 0, 2)),  # rows kept: row-by-row copy
        ((4, 6, 5), (2, 0, 1)),  # neither: element by element
        ((0, 3), (1, 0)),
    ],
)
def test_contiguous_copies_of_permutations(shape, perm):
    import numpy as np

    import ferrograd

    a = np.arange(int(np.prod(shape))).reshape(shape)
    for dtype in (np.float32, np.float64, np.int64, np.bool_):
        x = ferrograd.tensor(a.astype(dtype)).permute(*perm)
        assert not x.is_contiguous() or 0 in shape
        assert np.array_equal(x.contiguous().numpy(), a.astype(dtype).transpose(perm))
        # a cast copy takes the same paths
        assert np.array_equal(
            x.double().numpy(), a.astype(dtype).transpose(perm).astype(np.float64)
        )


def test_contiguous_copy_of_an_empty_view_with_an_offset():
    import ferrograd

    x = ferrograd.arange(24.0).reshape(2, 3, 4)
    for v in (x[1:, 2:, 4:], x[1:, 1:, :0].permute(1, 0, 2), x[1:, 2:, 4:].transpose(1, 2)):
        assert v.numel() == 0
        assert v.contiguous().shape == v.shape and v.contiguous().tolist() == v.tolist()
