"""tensordot, kron, cross, diff, take_along_dim, rot90, meshgrid, the
*stack family, atleast_nd, broadcast_to, nan_to_num, nansum, nanmean,
count_nonzero and linalg.vector_norm: values and errors on ferrograd and
(through `lib`) torch. Gradients are in the op registry."""

import math

import pytest


def test_products(lib):
    a = lib.arange(6.0).reshape(2, 3)
    b = lib.arange(12.0).reshape(3, 4)
    assert lib.tensordot(a, b, dims=1).tolist() == (a @ b).tolist()
    x, y = lib.arange(24.0).reshape(2, 3, 4), lib.arange(12.0).reshape(3, 4)
    assert lib.tensordot(x, y, dims=([1, 2], [0, 1])).tolist() == [506.0, 1298.0]
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        lib.tensordot(a, b, dims=([0], [0]))
    k = lib.kron(lib.tensor([[1.0, 2.0], [3.0, 4.0]]), lib.tensor([[0.0, 1.0], [1.0, 0.0]]))
    assert k.tolist() == [[0, 1, 0, 2], [1, 0, 2, 0], [0, 3, 0, 4], [3, 0, 4, 0]]
    assert lib.kron(lib.tensor([1.0, 2.0]), lib.ones(2, 2)).shape == (2, 4)
    u = lib.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    v = lib.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert lib.linalg.cross(u, v).tolist() == [[0, 0, 1], [1, 0, 0]]
    assert lib.cross(u, v, dim=1).tolist() == u.cross(v, dim=1).tolist()
    with pytest.raises(RuntimeError, match="must have length 3"):
        lib.linalg.cross(lib.ones(2), lib.ones(2))


def test_differences_and_gathers(lib):
    x = lib.tensor([1.0, 4.0, 9.0, 16.0])
    assert lib.diff(x).tolist() == [3.0, 5.0, 7.0]
    assert x.diff(n=2).tolist() == [2.0, 2.0]
    both = lib.diff(x, prepend=lib.tensor([0.0]), append=lib.tensor([20.0, 21.0]))
    assert both.tolist() == [1.0, 3.0, 5.0, 7.0, 4.0, 1.0]
    assert lib.diff(lib.arange(6.0).reshape(2, 3), dim=0).tolist() == [[3.0, 3.0, 3.0]]
    t = lib.tensor([[10.0, 30.0, 20.0], [60.0, 40.0, 50.0]])
    assert lib.take_along_dim(t, lib.tensor([[2], [0]]), dim=1).tolist() == [[20.0], [60.0]]
    assert t.take_along_dim(lib.tensor([5, 0])).tolist() == [50.0, 10.0]
    m = lib.arange(4.0).reshape(2, 2)
    assert lib.rot90(m).tolist() == [[1.0, 3.0], [0.0, 2.0]]
    assert lib.rot90(m, 2).tolist() == [[3.0, 2.0], [1.0, 0.0]]
    assert lib.rot90(m, -1).tolist() == m.rot90(1, [1, 0]).tolist() == [[2.0, 0.0], [3.0, 1.0]]
    with pytest.raises(RuntimeError, match="expected total rotation dims == 2"):
        lib.rot90(m, 1, [0])


def test_grids_and_stacks(lib):
    gx, gy = lib.meshgrid(lib.tensor([1.0, 2.0, 3.0]), lib.tensor([4.0, 5.0]), indexing="ij")
    assert gx.tolist() == [[1, 1], [2, 2], [3, 3]] and gy.tolist() == [[4, 5], [4, 5], [4, 5]]
    gx, gy = lib.meshgrid(lib.tensor([1.0, 2.0, 3.0]), lib.tensor([4.0, 5.0]), indexing="xy")
    assert gx.tolist() == [[1, 2, 3], [1, 2, 3]] and gy.tolist() == [[4, 4, 4], [5, 5, 5]]
    with pytest.warns(UserWarning, match="indexing argument"):
        lib.meshgrid(lib.ones(2), lib.ones(3))
    assert lib.atleast_2d(lib.tensor(1.0)).shape == (1, 1)
    assert lib.atleast_3d(lib.ones(2)).shape == (1, 2, 1)
    assert [t.shape for t in lib.atleast_1d(lib.tensor(1.0), lib.ones(2))] == [(1,), (2,)]
    assert lib.vstack([lib.ones(2), lib.zeros(2)]).tolist() == [[1, 1], [0, 0]]
    assert lib.hstack([lib.ones(2), lib.zeros(3)]).tolist() == [1, 1, 0, 0, 0]
    assert lib.hstack([lib.ones(2, 1), lib.zeros(2, 2)]).shape == (2, 3)
    assert lib.dstack([lib.ones(2), lib.zeros(2)]).shape == (1, 2, 2)
    assert lib.column_stack([lib.ones(2), lib.zeros(2, 2)]).tolist() == [[1, 0, 0], [1, 0, 0]]
    assert lib.broadcast_to(lib.tensor([1.0, 2.0]), (3, 2)).tolist() == [[1, 2]] * 3


def test_nan_aware(lib):
    z = lib.tensor([math.nan, math.inf, -math.inf, 1.5])
    big = lib.finfo(lib.float32).max if hasattr(lib, "finfo") else 3.4028234663852886e38
    assert lib.nan_to_num(z).tolist() == [0.0, big, -big, 1.5]
    assert z.nan_to_num(nan=-1.0, posinf=9.0, neginf=-9.0).tolist() == [-1.0, 9.0, -9.0, 1.5]
    assert lib.nan_to_num(lib.tensor([1, 2])).tolist() == [1, 2]
    q = lib.tensor([1.0, math.nan, 3.0], requires_grad=True)
    q.nan_to_num().sum().backward()
    assert q.grad.tolist() == [1.0, 0.0, 1.0]
    q.grad = None
    total = lib.nansum(q)
    total.backward()
    assert total.item() == 4.0 and q.grad.tolist() == [1.0, 0.0, 1.0]
    means = lib.nanmean(lib.tensor([[1.0, math.nan], [3.0, 4.0]]), dim=1)
    assert means.tolist() == [1.0, 3.5]
    assert lib.count_nonzero(lib.tensor([[0, 1], [2, 0]]), dim=0).tolist() == [1, 1]
    assert lib.count_nonzero(lib.tensor([0.0, 1.0, 2.0])).item() == 2
    assert lib.linalg.vector_norm(lib.tensor([3.0, 4.0])).item() == 5.0
    assert lib.linalg.vector_norm(lib.tensor([[3.0, 4.0]]), ord=1, dim=1).tolist() == [7.0]


def test_repeat_interleave_and_spread_mean(lib):
    x = lib.tensor([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])
    assert lib.repeat_interleave(lib.tensor([1, 2, 3]), 2).tolist() == [1, 1, 2, 2, 3, 3]
    assert x.repeat_interleave(lib.tensor([1, 2]), dim=0).tolist() == [
        [1.0, 2.0, 4.0],
        [3.0, 5.0, 9.0],
        [3.0, 5.0, 9.0],
    ]
    assert lib.repeat_interleave(lib.tensor(5.0), 3).tolist() == [5.0] * 3
    with pytest.raises(RuntimeError, match="repeats must have the same size"):
        x.repeat_interleave(lib.tensor([1, 2, 3]), dim=0)
    with pytest.raises(RuntimeError, match="Repeats must be non-negative"):
        x.repeat_interleave(-1)
    v, m = lib.var_mean(x, dim=1)
    assert v.tolist() == pytest.approx([7 / 3, 9.333333], rel=1e-5)
    assert m.tolist() == pytest.approx([7 / 3, 17 / 3])
    s, m = lib.std_mean(x, 0, keepdim=True, correction=0)
    assert s.tolist() == [[1.0, 1.5, 2.5]] and m.shape == (1, 3)
