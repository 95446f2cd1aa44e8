"""copy.deepcopy and pickle of tensors, on ferrograd and (through the `lib`
fixture) torch."""

import copy
import pickle

import pytest


def test_deepcopy_copies_values_grad_and_attributes(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    x.grad = lib.tensor([3.0, 4.0])
    x.tag = {"name": "w"}
    d = copy.deepcopy(x)
    assert d is not x and d.tolist() == [1.0, 2.0] and d.data_ptr() != x.data_ptr()
    assert d.requires_grad and d.is_leaf
    assert d.grad.tolist() == [3.0, 4.0] and d.grad is not x.grad
    assert d.tag == {"name": "w"} and d.tag is not x.tag
    d.data.add_(1)
    assert x.tolist() == [1.0, 2.0]


def test_deepcopy_keeps_views_sharing_one_copy(lib):
    b = lib.arange(6.0)
    v = b[2:4]
    nb, nv = copy.deepcopy([b, v])
    nv[0] = 100.0
    assert nb.tolist() == [0.0, 1.0, 100.0, 3.0, 4.0, 5.0]
    assert b.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert nv.storage_offset() == 2 and nv._base is None
    m = {}
    assert copy.deepcopy(b, m) is copy.deepcopy(b, m)


def test_deepcopy_refuses_non_leaves(lib):
    y = lib.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(y)


@pytest.mark.parametrize(
    "make",
    [
        lambda L: L.tensor([True, False]),
        lambda L: L.tensor([[1, -2], [3, 4]]),
        lambda L: L.tensor([1.5, -2.5], dtype=L.float64),
        lambda L: L.arange(12.0).reshape(3, 4).t(),
        lambda L: L.tensor(7.0),
        lambda L: L.ones(0, 3),
    ],
)
def test_pickle_round_trip(lib, make):
    t = make(lib)
    r = pickle.loads(pickle.dumps(t))
    assert r.dtype == t.dtype and r.shape == t.shape and r.tolist() == t.tolist()


def test_pickle_keeps_requires_grad_not_grad(lib):
    x = lib.ones(2, requires_grad=True)
    x.grad = lib.ones(2)
    r = pickle.loads(pickle.dumps(x))
    assert r.requires_grad and r.is_leaf and r.grad is None
    y = pickle.loads(pickle.dumps(x * 2))
    assert y.requires_grad and y.is_leaf and y.tolist() == [2.0, 2.0]
