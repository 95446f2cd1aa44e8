"""sort, argsort, msort, topk and kthvalue: order (stable, NaN above every
number), namedtuple results, dtypes and errors, on ferrograd and (through
the `lib` fixture) torch. Gradients are checked in the op registry."""

import math

import pytest

NAN = math.nan


def test_sort_order(lib):
    x = lib.tensor([[3.0, 1.0, NAN, 2.0, 1.0], [0.0, -1.0, 5.0, 5.0, 2.0]])
    r = x.sort()
    assert type(r).__name__ == "sort" and r[0] is r.values
    assert r.indices.tolist() == [[1, 4, 3, 0, 2], [1, 0, 4, 2, 3]]  # stable, NaN last
    d = lib.sort(x, descending=True)
    assert d.indices.tolist() == [[2, 0, 3, 1, 4], [2, 3, 4, 0, 1]]  # NaN first
    assert lib.argsort(x, dim=0).tolist() == [[1, 1, 1, 0, 0], [0, 0, 0, 1, 1]]
    assert lib.msort(x)[0].tolist() == [0.0, -1.0, 5.0, 2.0, 1.0]
    assert x.sort(stable=True).indices.dtype == lib.int64


def test_sort_dtypes_and_scalars(lib):
    assert lib.tensor([3, 1, 2]).sort().values.tolist() == [1, 2, 3]
    assert lib.tensor([True, False]).sort().values.tolist() == [False, True]
    s = lib.tensor(5.0).sort()
    assert s.values.tolist() == 5.0 and s.indices.tolist() == 0


def test_topk_and_kthvalue(lib):
    x = lib.tensor([[3.0, 1.0, 2.0], [0.5, -1.0, 4.0]])
    t = x.topk(2)
    assert type(t).__name__ == "topk"
    assert t.values.tolist() == [[3.0, 2.0], [4.0, 0.5]] and t.indices.tolist() == [[0, 2], [2, 0]]
    assert lib.topk(x, 1, dim=0, largest=False).values.tolist() == [[0.5, -1.0, 2.0]]
    k = x.kthvalue(2)
    assert type(k).__name__ == "kthvalue"
    assert k.values.tolist() == [2.0, 0.5] and k.indices.tolist() == [2, 0]
    assert lib.kthvalue(x, 1, 0, True).values.tolist() == [[0.5, -1.0, 2.0]]
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        x.topk(4)
    with pytest.raises(RuntimeError, match="selected number k out of range for dimension 1"):
        x.kthvalue(0)


def test_gradient_flows_to_the_chosen_elements(lib):
    w = lib.tensor([[3.0, 1.0, 2.0], [0.5, -1.0, 4.0]], requires_grad=True)
    v, _ = w.topk(2)
    (v * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert w.grad.tolist() == [[1.0, 0.0, 2.0], [4.0, 0.0, 3.0]]


@pytest.mark.parametrize("k", [0, 1, 3, 32, 33, 500, 2000])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("data", ["ties", "sorted", "reversed", "nan"])
def test_topk_and_kthvalue_agree_with_the_stable_sort(k, largest, data):
    # topk selects (one pass for small k, a partial selection above); its
    # indices must be the stable sort's first k, ties and NaN included
    import ferrograd as fg

    n = 2000
    values = {
        "ties": [float((i * 7919) % 13) for i in range(n)],
        "sorted": [float(i) for i in range(n)],
        "reversed": [float(n - i) for i in range(n)],
        "nan": [NAN if i % 97 == 5 else float((i * 31) % 50) for i in range(n)],
    }[data]
    rows = [values, values[::-1]]
    x = fg.tensor(rows)

    def key(v):
        return (1, 0.0) if math.isnan(v) else (0, v)

    # Python's sorted is stable, also with reverse=True
    order = [sorted(range(n), key=lambda i: key(r[i]), reverse=largest) for r in rows]
    assert x.argsort(dim=1, descending=largest).tolist() == order
    t = x.topk(k, dim=1, largest=largest)
    assert t.indices.tolist() == [o[:k] for o in order]
    assert t.indices.shape == (2, k)
    c = x.t().topk(k, dim=0, largest=largest)
    assert c.indices.t().tolist() == [o[:k] for o in order]
    if k > 0 and not largest:
        kth = x.kthvalue(k, dim=1)
        assert kth.indices.tolist() == [o[k - 1] for o in order]
