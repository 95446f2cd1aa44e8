"""index_add / index_copy / index_fill (functions, methods, in-place forms).

Every case runs on ferrograd and on torch (the ``torch`` fixture skips
without it) and compares values, dtypes, strides, exception types and
messages; gradients are checked in float64 against finite differences
(ferrograd's gradcheck) and against torch's.
"""

import numpy as np
import pytest

import ferrograd


def arr(lib, a, dtype="float32"):
    return lib.tensor(np.asarray(a).tolist(), dtype=getattr(lib, dtype))


def outcome(fn, lib):
    """``fn(lib)``'s result as comparable data, or (exception type, message)."""
    try:
        r = fn(lib)
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return ("raises", type(e).__name__, str(e).split("\n")[0])
    rs = r if isinstance(r, tuple) else (r,)
    out = []
    for t in rs:
        if isinstance(t, (lib.Tensor,)):
            out.append(
                (
                    t.tolist(),
                    str(t.dtype).split(".")[-1],
                    tuple(t.shape),
                    t.stride() if t.numel() > 1 else None,
                )
            )
        else:
            out.append(t)
    return tuple(out)


def same_as_torch(torch, fn):
    """Equal outcomes; float values to rounding (torch fuses ``self + alpha *
    source`` into one multiply-add where its vector units do)."""
    ours, theirs = outcome(fn, ferrograd), outcome(fn, torch)
    msg = f"ferrograd {ours}\n    torch {theirs}"
    if ours[0] == "raises" or theirs[0] == "raises":
        assert ours == theirs, msg
        return
    assert len(ours) == len(theirs), msg
    for a, b in zip(ours, theirs):
        assert a[1:] == b[1:], msg
        if a[1].startswith("float"):
            np.testing.assert_allclose(np.array(a[0]), np.array(b[0]), rtol=1e-6, err_msg=msg)
        else:
            assert a[0] == b[0], msg


# ---- forward values ------------------------------------------------------------------------

RNG = np.random.default_rng(0)
X34 = RNG.standard_normal((3, 4)).round(2)
S24 = RNG.standard_normal((2, 4)).round(2)
S33 = RNG.standard_normal((3, 3)).round(2)
X234 = RNG.standard_normal((2, 3, 4)).round(2)
S34 = RNG.standard_normal((3, 4))

VALUE_CASES = {
    "add_dim0": lambda L: arr(L, X34).index_add(0, arr(L, [2, 0], "int64"), arr(L, S24)),
    "add_repeated": lambda L: arr(L, X34).index_add(0, arr(L, [1, 1], "int64"), arr(L, S24)),
    "add_last_dim": lambda L: arr(L, X34).index_add(1, arr(L, [3, 3, 0], "int64"), arr(L, S33)),
    "add_negative_dim": lambda L: arr(L, X34).index_add(
        -1, arr(L, [3, 1, 0], "int64"), arr(L, S33)
    ),
    "add_middle_dim": lambda L: arr(L, X234).index_add(
        1, arr(L, [2, 0, 2], "int64"), arr(L, X234[:, ::-1]), alpha=2
    ),
    "add_alpha_float": lambda L: arr(L, X34).index_add(
        0, arr(L, [0, 2], "int64"), arr(L, S24), alpha=-1.5
    ),
    "add_alpha_tensor": lambda L: arr(L, X34).index_add(
        0, arr(L, [0, 2], "int64"), arr(L, S24), alpha=L.tensor(2.0)
    ),
    "add_alpha_bool": lambda L: arr(L, X34).index_add(
        0, arr(L, [0, 2], "int64"), arr(L, S24), alpha=True
    ),
    "add_int64": lambda L: arr(L, [[1, 2], [3, 4]], "int64").index_add(
        1, arr(L, [1, 1], "int64"), arr(L, [[5, 6], [7, 8]], "int64"), alpha=3
    ),
    "add_int64_float_alpha": lambda L: arr(L, [1, 2, 3], "int64").index_add(
        0, arr(L, [0], "int64"), arr(L, [5], "int64"), alpha=-2.5
    ),
    "add_bool": lambda L: arr(L, [False, False, True], "bool").index_add(
        0, arr(L, [0, 0], "int64"), arr(L, [True, False], "bool")
    ),
    "add_bool_alpha0": lambda L: arr(L, [False, False], "bool").index_add(
        0, arr(L, [0], "int64"), arr(L, [True], "bool"), alpha=0
    ),
    "add_float64": lambda L: arr(L, X34, "float64").index_add(
        0, arr(L, [1], "int64"), arr(L, S24[:1], "float64")
    ),
    "add_0d_index": lambda L: arr(L, X34).index_add(0, L.tensor(1), arr(L, S24[:1])),
    "add_0d_self": lambda L: L.tensor(1.5).index_add(0, arr(L, [0], "int64"), L.tensor(2.0)),
    "add_0d_self_0d_index": lambda L: L.tensor(1.5).index_add(-1, L.tensor(0), L.tensor(2.0)),
    "add_1d": lambda L: arr(L, [1.0, 2.0, 3.0]).index_add(
        0, arr(L, [2, 0, 2], "int64"), arr(L, [1.0, 10.0, 100.0])
    ),
    "add_strided_self": lambda L: (
        arr(L, X34).t().index_add(0, arr(L, [3, 0], "int64"), arr(L, S33[:2]))
    ),
    "add_strided_source": lambda L: arr(L, X34).index_add(
        1, arr(L, [0, 1, 2], "int64"), arr(L, S33).t()
    ),
    "add_sliced_self": lambda L: arr(L, X234)[:, ::2].index_add(
        2, arr(L, [0, 3], "int64"), arr(L, X234[:, ::2, :2])
    ),
    "add_empty_index": lambda L: arr(L, X34).index_add(
        0, arr(L, np.zeros(0, np.int64), "int64"), L.zeros(0, 4)
    ),
    "add_empty_self": lambda L: L.zeros(0, 4).index_add(0, arr(L, [7], "int64"), L.ones(1, 4)),
    "add_function": lambda L: L.index_add(
        arr(L, X34), 1, arr(L, [2], "int64"), arr(L, S33[:, :1]), alpha=3
    ),
    "add_keywords": lambda L: arr(L, X34).index_add(
        dim=0, index=arr(L, [1], "int64"), source=arr(L, S24[:1])
    ),
    "copy_dim0": lambda L: arr(L, X34).index_copy(0, arr(L, [2, 0], "int64"), arr(L, S24)),
    "copy_repeated_last_wins": lambda L: arr(L, X34).index_copy(
        0, arr(L, [1, 1], "int64"), arr(L, S24)
    ),
    "copy_last_dim": lambda L: arr(L, X34).index_copy(-1, arr(L, [3, 1, 0], "int64"), arr(L, S33)),
    "copy_middle_dim": lambda L: arr(L, X234, "float64").index_copy(
        1, arr(L, [2, 0], "int64"), arr(L, X234[:, :2], "float64")
    ),
    "copy_int64": lambda L: arr(L, [[1, 2], [3, 4]], "int64").index_copy(
        1, arr(L, [1], "int64"), arr(L, [[5], [7]], "int64")
    ),
    "copy_bool": lambda L: arr(L, [False, True], "bool").index_copy(
        0, arr(L, [1], "int64"), arr(L, [False], "bool")
    ),
    "copy_strided": lambda L: (
        arr(L, X34).t().index_copy(1, arr(L, [2, 0], "int64"), arr(L, S24).t())
    ),
    "copy_0d_index": lambda L: arr(L, X34).index_copy(1, L.tensor(3), arr(L, S33[:, :1])),
    "copy_0d_source": lambda L: arr(L, [1.0, 2.0, 3.0]).index_copy(
        0, arr(L, [1], "int64"), L.tensor(9.0)
    ),
    "copy_0d_self": lambda L: L.tensor(1.0).index_copy(
        0, arr(L, [0, 0], "int64"), arr(L, [2.0, 3.0])
    ),
    "copy_0d_both": lambda L: L.tensor(1.0).index_copy(0, L.tensor(0), L.tensor(2.0)),
    "copy_empty_slices": lambda L: L.zeros(2, 0).index_copy(0, arr(L, [5], "int64"), L.zeros(1, 0)),
    "copy_function": lambda L: L.index_copy(arr(L, X34), 0, arr(L, [1], "int64"), arr(L, S24[:1])),
    "fill_scalar": lambda L: arr(L, X34).index_fill(0, arr(L, [2, 0, 2], "int64"), 5.0),
    "fill_negative_index": lambda L: arr(L, X34).index_fill(1, arr(L, [-1, 3, -4], "int64"), -2.5),
    "fill_negative_dim": lambda L: arr(L, X234).index_fill(-2, arr(L, [1], "int64"), 1),
    "fill_tensor_value": lambda L: arr(L, X34).index_fill(0, arr(L, [1], "int64"), L.tensor(5.0)),
    "fill_int_tensor_value": lambda L: arr(L, X34).index_fill(0, arr(L, [1], "int64"), L.tensor(5)),
    "fill_double_tensor_value": lambda L: arr(L, X34).index_fill(
        0, arr(L, [1], "int64"), L.tensor(0.1, dtype=L.float64)
    ),
    "fill_bool_value": lambda L: arr(L, X34).index_fill(0, arr(L, [1], "int64"), True),
    "fill_int64": lambda L: arr(L, [1, 2, 3], "int64").index_fill(0, arr(L, [0, 2], "int64"), -2.7),
    "fill_bool": lambda L: arr(L, [False, True], "bool").index_fill(0, arr(L, [0], "int64"), 2.5),
    "fill_0d_index": lambda L: arr(L, X34).index_fill(1, L.tensor(2), 0.5),
    "fill_0d_self": lambda L: L.tensor(1.0).index_fill(0, arr(L, [0, -1], "int64"), 2.0),
    "fill_0d_self_empty_index": lambda L: L.tensor(1.0).index_fill(
        0, arr(L, np.zeros(0, np.int64), "int64"), 2.0
    ),
    "fill_keeps_strides": lambda L: (
        arr(L, X234).permute(2, 0, 1).index_fill(0, arr(L, [1], "int64"), 7.0)
    ),
    "fill_sliced_is_dense": lambda L: arr(L, X34)[::2].index_fill(0, arr(L, [1], "int64"), 7.0),
    "fill_expanded_is_dense": lambda L: (
        arr(L, X34[:1]).expand(3, 4).index_fill(1, arr(L, [1], "int64"), 7.0)
    ),
    "fill_empty_slices": lambda L: L.zeros(2, 0).index_fill(0, arr(L, [5], "int64"), 1.0),
    "fill_function": lambda L: L.index_fill(arr(L, X34), 1, arr(L, [0], "int64"), L.tensor(-1.0)),
}


@pytest.mark.parametrize("case", sorted(VALUE_CASES))
def test_values_match_torch(torch, case):
    same_as_torch(torch, VALUE_CASES[case])


# ---- argument checks: torch's exception types and messages, in torch's order --------------

ERROR_CASES = {
    "add_dim_out_of_range": lambda L: L.zeros(3, 4).index_add(
        2, arr(L, [0], "int64"), L.ones(1, 4)
    ),
    "add_dim_0d": lambda L: L.tensor(1.0).index_add(1, L.tensor(0), L.tensor(2.0)),
    "add_index_2d": lambda L: L.zeros(3, 4).index_add(
        0, arr(L, [[0, 2]], "float32"), L.ones(2, 5, dtype=L.int64)
    ),
    "add_index_float": lambda L: L.zeros(3, 4).index_add(0, arr(L, [0.0]), L.ones(1, 4)),
    "add_index_bool": lambda L: L.zeros(3, 4).index_add(0, arr(L, [True], "bool"), L.ones(1, 4)),
    "add_dtypes": lambda L: L.zeros(3, 4).index_add(
        0, arr(L, [0], "int64"), L.ones(1, 4, dtype=L.float64)
    ),
    "add_dim_past_source": lambda L: L.zeros(3, 4).index_add(1, arr(L, [0], "int64"), L.ones(2)),
    "add_dim_past_0d_source": lambda L: L.zeros(3, 4).index_add(
        1, arr(L, [0, 1], "int64"), L.tensor(1.0)
    ),
    "add_count_0d_source": lambda L: L.zeros(3, 4).index_add(
        0, arr(L, [0, 1], "int64"), L.tensor(1.0)
    ),
    "add_count": lambda L: L.zeros(3, 4).index_add(0, arr(L, [0, 1, 2], "int64"), L.ones(2, 4)),
    "add_shape": lambda L: L.zeros(3, 4).index_add(0, arr(L, [0, 1], "int64"), L.ones(2, 3)),
    "add_shape_0d_self": lambda L: L.tensor(1.0).index_add(0, arr(L, [0], "int64"), L.ones(1)),
    "add_shape_0d_source": lambda L: L.zeros(3).index_add(0, arr(L, [0], "int64"), L.tensor(2.0)),
    "add_index_high_first_dim": lambda L: L.zeros(3, 4).index_add(
        0, arr(L, [0, 5], "int64"), L.ones(2, 4)
    ),
    "add_index_negative_last_dim": lambda L: L.zeros(3, 4).index_add(
        1, arr(L, [-1], "int64"), L.ones(3, 1)
    ),
    "add_index_high_alpha": lambda L: L.zeros(3, 4).index_add(
        0, arr(L, [5], "int64"), L.ones(1, 4), alpha=2
    ),
    "add_index_high_int_alpha": lambda L: L.zeros(3, 4, dtype=L.int64).index_add(
        0, arr(L, [5], "int64"), L.ones(1, 4, dtype=L.int64), alpha=1.5
    ),
    "add_index_high_bool_alpha": lambda L: L.zeros(3, 4, dtype=L.bool).index_add(
        0, arr(L, [5], "int64"), L.ones(1, 4, dtype=L.bool), alpha=2
    ),
    "add_index_high_middle_dim": lambda L: L.zeros(2, 3, 4).index_add(
        1, arr(L, [3], "int64"), L.ones(2, 1, 4)
    ),
    "add_index_high_1d": lambda L: L.zeros(3).index_add(0, arr(L, [3], "int64"), L.ones(1)),
    "add_index_negative_1d": lambda L: L.zeros(3).index_add(0, arr(L, [-1], "int64"), L.ones(1)),
    "add_index_high_0d": lambda L: L.tensor(1.0).index_add(0, arr(L, [1], "int64"), L.tensor(1.0)),
    "add_alpha_overflow": lambda L: L.zeros(3).index_add(
        0, arr(L, [0], "int64"), L.ones(1), alpha=1e300
    ),
    "add_alpha_nan_int": lambda L: L.zeros(3, dtype=L.int64).index_add(
        0, arr(L, [0], "int64"), L.ones(1, dtype=L.int64), alpha=float("nan")
    ),
    "add_alpha_str": lambda L: L.zeros(3).index_add(0, arr(L, [0], "int64"), L.ones(1), alpha="a"),
    "add_source_number": lambda L: L.zeros(3).index_add(0, arr(L, [0], "int64"), 2.0),
    "add_index_list": lambda L: L.zeros(3).index_add(0, [0], L.ones(1)),
    "add_dim_float": lambda L: L.zeros(3).index_add(0.0, arr(L, [0], "int64"), L.ones(1)),
    "copy_dim_out_of_range": lambda L: L.zeros(3, 4).index_copy(
        2, arr(L, [0], "float32"), L.zeros(2, 5)
    ),
    "copy_index_2d": lambda L: L.zeros(3, 4).index_copy(
        0, arr(L, [[0, 1]], "float32"), L.zeros(2, 4, dtype=L.int64)
    ),
    "copy_0d_source_count": lambda L: L.zeros(3).index_copy(
        0, arr(L, [0, 1], "int64"), L.tensor(2.0)
    ),
    "copy_0d_source_empty_index": lambda L: L.tensor(1.0).index_copy(
        0, arr(L, np.zeros(0, np.int64), "int64"), L.tensor(2.0)
    ),
    "copy_ndim": lambda L: L.zeros(3, 1).index_copy(0, arr(L, [0], "int64"), L.ones(1)),
    "copy_index_float": lambda L: L.zeros(3, 4).index_copy(0, arr(L, [0.0]), L.ones(1, 4)),
    "copy_dtypes": lambda L: L.zeros(3, 4).index_copy(
        0, arr(L, [0], "int64"), L.ones(1, 4, dtype=L.int64)
    ),
    "copy_slice_shapes": lambda L: L.zeros(2, 3, 4).index_copy(
        1, arr(L, [0], "int64"), L.zeros(3, 1, 5)
    ),
    "copy_slice_shapes_0d_self": lambda L: L.tensor(1.0).index_copy(
        0, arr(L, [0], "int64"), L.ones(1, 1)
    ),
    "copy_slice_shapes_0d_source": lambda L: L.zeros(3, 1).index_copy(
        1, arr(L, [0], "int64"), L.tensor(2.0)
    ),
    "copy_count": lambda L: L.zeros(2, 3).index_copy(0, arr(L, [1, 0], "int64"), L.zeros(3, 3)),
    "copy_index_high": lambda L: L.zeros(3, 4).index_copy(0, arr(L, [3, 0], "int64"), L.ones(2, 4)),
    "copy_index_negative": lambda L: L.zeros(3, 4).index_copy(
        1, arr(L, [-1], "int64"), L.ones(3, 1)
    ),
    "copy_index_high_0d": lambda L: L.tensor(1.0).index_copy(0, arr(L, [1], "int64"), L.ones(1)),
    "copy_source_none": lambda L: L.zeros(3).index_copy(0, arr(L, [0], "int64"), None),
    "fill_value_1d": lambda L: L.zeros(3, 4).index_fill(5, arr(L, [[0]], "float32"), L.ones(1)),
    "fill_index_float": lambda L: L.zeros(3, 4).index_fill(5, arr(L, [0.0]), 1.0),
    "fill_dim": lambda L: L.zeros(3, 4).index_fill(2, arr(L, [[0]], "int64"), 1.0),
    "fill_index_2d": lambda L: L.zeros(3, 4).index_fill(0, arr(L, [[0]], "int64"), 1.0),
    "fill_index_high": lambda L: L.zeros(3, 4).index_fill(0, arr(L, [0, 3], "int64"), 1.0),
    "fill_index_low": lambda L: L.zeros(3, 4).index_fill(1, arr(L, [-5], "int64"), 1.0),
    "fill_index_high_0d": lambda L: L.tensor(1.0).index_fill(0, arr(L, [1], "int64"), 1.0),
    "fill_value_overflow": lambda L: L.zeros(3).index_fill(0, arr(L, [0], "int64"), 1e300),
    "fill_value_overflow_tensor": lambda L: L.zeros(3).index_fill(
        0, arr(L, [0], "int64"), L.tensor(1e300, dtype=L.float64)
    ),
    "fill_value_inf_int": lambda L: L.zeros(3, dtype=L.int64).index_fill(
        0, arr(L, [0], "int64"), float("inf")
    ),
    "fill_value_big_int": lambda L: L.zeros(3, dtype=L.int64).index_fill(
        0, arr(L, [0], "int64"), 9.3e18
    ),
    "fill_value_none": lambda L: L.zeros(3).index_fill(0, arr(L, [0], "int64"), None),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_errors_match_torch(torch, case):
    ours, theirs = outcome(ERROR_CASES[case], ferrograd), outcome(ERROR_CASES[case], torch)
    assert theirs[0] == "raises", theirs
    if theirs[1] == "TypeError":
        # argument parsing: torch's wording is its own
        assert ours[:2] == theirs[:2], f"ferrograd {ours}\n    torch {theirs}"
    else:
        assert ours == theirs, f"ferrograd {ours}\n    torch {theirs}"


# ---- in-place forms -------------------------------------------------------------------------


def inplace_cases(L):
    i = arr(L, [2, 0], "int64")
    return {
        "index_add_": lambda x: x.index_add_(0, i, arr(L, S24), alpha=0.5),
        "index_copy_": lambda x: x.index_copy_(0, i, arr(L, S24)),
        "index_fill_": lambda x: x.index_fill_(0, i, -3.0),
        "index_fill_tensor": lambda x: x.index_fill_(0, i, L.tensor(-3.0)),
    }


@pytest.mark.parametrize("op", ["index_add_", "index_copy_", "index_fill_", "index_fill_tensor"])
def test_inplace_writes_self_and_views(torch, op):
    def run(L):
        base = arr(L, np.concatenate([X34, X34]).T.copy())  # (4, 6)
        x = base.t()[::2]  # a strided (3, 4) view of base
        r = inplace_cases(L)[op](x)
        assert r is x
        return x.tolist(), base.tolist(), x._version, base._version

    assert run(ferrograd) == run(torch)


@pytest.mark.parametrize("op", ["index_add_", "index_copy_", "index_fill_"])
def test_inplace_0d(torch, op):
    def run(L):
        x = L.tensor(1.0)
        i = arr(L, [0], "int64")
        f = {
            "index_add_": lambda: x.index_add_(0, i, L.tensor(2.0)),
            "index_copy_": lambda: x.index_copy_(0, i, L.tensor(2.0)),
            "index_fill_": lambda: x.index_fill_(-1, i, 2.0),
        }[op]
        return f() is x, x.item(), x._version

    assert run(ferrograd) == run(torch)


def test_failing_inplace_changes_nothing(torch):
    # torch may have written the slices before a bad index; ferrograd checks
    # every index first
    def run(L):
        out = []
        for f in (
            lambda x: x.index_add_(0, arr(L, [0, 9], "int64"), L.ones(2, 4)),
            lambda x: x.index_add_(0, arr(L, [0, 9], "int64"), L.ones(2, 4), alpha=2),
            lambda x: x.index_copy_(0, arr(L, [0, 9], "int64"), L.ones(2, 4)),
            lambda x: x.index_fill_(0, arr(L, [0, 9], "int64"), 1.0),
            lambda x: x.index_add_(0, arr(L, [0, 1], "int64"), L.ones(2, 3)),
        ):
            x = arr(L, X34)
            try:
                f(x)
            except (RuntimeError, IndexError) as e:
                out.append((type(e).__name__, x.tolist(), x._version))
        return out

    ours, theirs = run(ferrograd), run(torch)
    assert [o[0] for o in ours] == [t[0] for t in theirs]
    assert all(o[1] == arr(ferrograd, X34).tolist() and o[2] == 0 for o in ours)


@pytest.mark.parametrize(
    "src",
    [
        "b = torch.zeros(3, 4)\nb.index_add_(0, torch.tensor([0]), b[:1])",
        "b = torch.zeros(3, 4)\nb.index_copy_(0, torch.tensor([0]), b[1:2])",
        "b = torch.zeros(3, dtype=torch.int64)\nb.index_add_(0, b[:1], b[1:2])",
        "b = torch.zeros(3, dtype=torch.int64)\nb.index_fill_(0, b[:1], 2)",
        "b = torch.zeros(1, 4).expand(3, 4)\nb.index_add_(0, torch.tensor([0]), torch.ones(1, 4))",
        "b = torch.zeros(1, 4).expand(3, 4)\nb.index_copy_(0, torch.tensor([0]), torch.ones(1, 4))",
        # a value read from self and an expanded self are fine for index_fill_
        "b = torch.zeros(3, 4)\nb.index_fill_(1, torch.tensor([0]), b[0, 0])",
        "x = torch.ones(3, requires_grad=True)\nx.index_fill_(0, torch.tensor([0]), 2.0)",
        "x = torch.ones(3, requires_grad=True)\nx[:2].index_add_(0, torch.tensor([0]), torch.ones(1))",
        "x = torch.ones(3, requires_grad=True)\ny = x.exp()\ny.index_copy_(0, torch.tensor([0]), torch.ones(1))\ny.sum().backward()",
        "x = torch.ones(2, 2, requires_grad=True) * 1\na, b = x.unbind(0)\na.index_fill_(0, torch.tensor([0]), 0.0)",
    ],
)
def test_inplace_checks_match_torch(torch, src):
    def run(L):
        ns = {"torch": L}
        try:
            exec(src, ns)  # noqa: S102
        except Exception as e:  # noqa: BLE001
            # (ferrograd's version-counter message names the in-place op too)
            return type(e).__name__, str(e).split("\n")[0][:150]
        return "ok", ns["b"].tolist() if "b" in ns else None

    assert run(ferrograd) == run(torch)


def test_index_fill_expanded_self(torch):
    def run(L):
        b = L.zeros(1, 4).expand(3, 4)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b.index_fill_(1, L.tensor([1]), 2.0)
        return b.tolist()

    assert run(ferrograd) == run(torch)


# ---- gradients ------------------------------------------------------------------------------


def f64(L, a, rg=True):
    return L.tensor(np.asarray(a, dtype=np.float64).tolist(), dtype=L.float64, requires_grad=rg)


GRAD_CASES = {
    "add": lambda L, x, s: L.index_add(x, 0, L.tensor([2, 0, 2]), s, alpha=1.5),
    "add_dim1_strided": lambda L, x, s: x.index_add(1, L.tensor([3, 3, 0]), s.t()[:3].t()),
    "add_0d": lambda L, x, s: x[0, 0].index_add(0, L.tensor([0]), s[0, 0]),
    "copy": lambda L, x, s: x.index_copy(0, L.tensor([2, 0, 1]), s),
    "copy_dim1_strided": lambda L, x, s: x.t().index_copy(1, L.tensor([2, 0]), s[:2].t()),
    "copy_0d_source": lambda L, x, s: x[0].index_copy(0, L.tensor([1]), s[1, 2]),
    "fill": lambda L, x, s: x.index_fill(1, L.tensor([1, -1]), 2.0) * s,
    "fill_tensor_value": lambda L, x, s: x.index_fill(1, L.tensor([1, 1, 3]), s[0, 0]) * s,
    "fill_0d": lambda L, x, s: x[1, 1].index_fill(0, L.tensor(0), s[2, 3]),
    "inplace": lambda L, x, s: _inplace_chain(L, x, s),
}


def _inplace_chain(L, x, s):
    z = x * 1
    z.index_add_(0, L.tensor([1, 1]), s[:2], alpha=-2)
    z.t().index_copy_(0, L.tensor([0]), s[2:, 1:])
    z.index_fill_(1, L.tensor([3]), s[0, 1])
    return z * z


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradcheck(case):
    fn = GRAD_CASES[case]
    x, s = f64(ferrograd, X34), f64(ferrograd, S34)
    assert ferrograd.autograd.gradcheck(lambda x, s: fn(ferrograd, x, s), (x, s))
    assert ferrograd.autograd.gradgradcheck(lambda x, s: fn(ferrograd, x, s), (x, s))


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradients_match_torch(torch, case):
    def run(L):
        x, s = f64(L, X34), f64(L, S34)
        y = GRAD_CASES[case](L, x, s)
        g = f64(L, np.arange(y.numel()).reshape(tuple(y.shape)) / 7.0 - 1, rg=False)
        gx, gs = L.autograd.grad(y, (x, s), g, allow_unused=True)
        return y.tolist(), [None if t is None else t.tolist() for t in (gx, gs)]

    ours, theirs = run(ferrograd), run(torch)
    np.testing.assert_allclose(np.array(ours[0]), np.array(theirs[0]), rtol=1e-12)
    for a, b in zip(ours[1], theirs[1]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-12)


def test_copy_repeated_index_gradients_match_torch(torch):
    # torch's source gradient is grad.index_select(dim, index): every source
    # slice gets the gradient of its target, the overwritten ones too
    def run(L):
        x, s = f64(L, X34), f64(L, S24)
        y = x.index_copy(0, L.tensor([1, 1]), s)
        return [t.tolist() for t in L.autograd.grad((y * y).sum(), (x, s))]

    assert run(ferrograd) == run(torch)


def test_grad_fn_names_match_torch(torch):
    def run(L):
        x, s, v = f64(L, X34), f64(L, S24), f64(L, 2.0)
        i = L.tensor([0, 2])
        ys = [
            x.index_add(0, i, s),
            x.index_copy(0, i, s),
            x.index_fill(0, i, 1.0),
            x.index_fill(0, i, v),
            f64(L, X34, rg=False).index_fill(0, i, v),
            f64(L, X34, rg=False).index_add(0, i, s),
        ]
        z = x * 1
        z.index_add_(0, i, s)
        ys.append(z)
        return [
            (type(y.grad_fn).__name__, [type(f).__name__ for f, _ in y.grad_fn.next_functions])
            for y in ys
        ]

    assert run(ferrograd) == run(torch)


def test_inf_gradient_through_index_ops_matches_torch(torch):
    def run(L):
        x = f64(L, [1.0, 2.0, 3.0])
        s = f64(L, [4.0, 5.0])
        g = L.tensor([float("inf"), 1.0, -float("inf")], dtype=L.float64)
        out = []
        for f in (
            lambda: x.index_add(0, L.tensor([0, 2]), s),
            lambda: x.index_copy(0, L.tensor([0, 2]), s),
            lambda: x.index_fill(0, L.tensor([1]), s[0]),
        ):
            out.append([t.tolist() for t in L.autograd.grad(f(), (x, s), g, allow_unused=True)])
        return out

    assert run(ferrograd) == run(torch)


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_slice_writes_match_numpy_at_every_thread_count(dim, dtype):
    # index_add_ / index_copy_ / index_put_((idx,), v, accumulate=True) on a
    # contiguous target run whole slices at a time, split over the threads by
    # leading positions (dim 2 here), destination positions (dim 1) or
    # columns (dim 0): each must equal numpy's add.at / assignment (repeated
    # indices included) at 1, 2 and 3 threads, bitwise.
    rng = np.random.default_rng(dim)
    shape = [6, 300, 70]
    shape[dim] = 50
    n = 400  # more indices than positions: every position repeats
    index = rng.integers(0, 50, n)
    src_shape = list(shape)
    src_shape[dim] = n
    base = rng.standard_normal(shape) * 10
    src = rng.standard_normal(src_shape) * 10
    if dtype == "int64":
        base, src = base.astype(np.int64), src.astype(np.int64)
    else:
        base, src = base.astype(dtype), src.astype(dtype)
    want_add = base.copy()
    sl = [slice(None)] * 3
    sl[dim] = index
    np.add.at(want_add, tuple(sl), src)
    # index_copy_ with repeated indices: the last write wins, as in numpy.
    want_copy = base.copy()
    want_copy[tuple(sl)] = src
    threads = ferrograd.get_num_threads()
    try:
        for t in (1, 2, 3):
            ferrograd.set_num_threads(t)
            idx = ferrograd.from_numpy(index)
            x = ferrograd.from_numpy(base.copy())
            x.index_add_(dim, idx, ferrograd.from_numpy(src))
            got = x.numpy()
            if dtype == "int64":
                np.testing.assert_array_equal(got, want_add)
            else:
                np.testing.assert_allclose(got, want_add, rtol=1e-5, atol=1e-4)
            if t == 1:
                first = got.copy()
            np.testing.assert_array_equal(got, first)  # same sums at every count
            y = ferrograd.from_numpy(base.copy())
            y.index_copy_(dim, idx, ferrograd.from_numpy(src))
            np.testing.assert_array_equal(y.numpy(), want_copy)
            if dim == 0:
                z = ferrograd.from_numpy(base.copy())
                z.index_put_((idx,), ferrograd.from_numpy(src), accumulate=True)
                np.testing.assert_array_equal(z.numpy(), got)
    finally:
        ferrograd.set_num_threads(threads)


@pytest.mark.parametrize(
    "shape,dim,n", [((0, 5), 1, 3), ((3, 0), 0, 2), ((4, 5, 0), 1, 3), ((0,), 0, 0)]
)
def test_slice_writes_into_empty_targets(shape, dim, n):
    # Zero-size leading, indexed or trailing dims: nothing to write, no error.
    size = shape[dim]
    idx = (
        ferrograd.zeros(n, dtype=ferrograd.int64)
        if size
        else ferrograd.zeros(0, dtype=ferrograd.int64)
    )
    src_shape = list(shape)
    src_shape[dim] = idx.numel()
    for op in ("index_add_", "index_copy_"):
        x = ferrograd.zeros(*shape)
        getattr(x, op)(dim, idx, ferrograd.ones(*src_shape))
        assert x.shape == shape and x.numel() == 0
    g = ferrograd.zeros(*shape, requires_grad=True)
    g.index_select(dim, idx).sum().backward()
    assert g.grad.shape == shape
