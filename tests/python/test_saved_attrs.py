"""Non-tensor saved arguments of built-in nodes (torch's `_saved_dim`,
`_saved_keepdim`, `_saved_self_sym_sizes`, ...): the same names and values
as torch's, including torch's way of showing negative ints (as unsigned
64-bit numbers). Run on ferrograd and torch (the `lib` fixture)."""

import pytest

U = 2**64  # torch shows a negative int64 attribute v as v + 2**64

CASES = {
    "sum_dim": (
        lambda L, x: x.sum(1),
        {"dim": (1,), "keepdim": False, "self_sym_sizes": (2, 3, 4)},
    ),
    "sum_neg": (
        lambda L, x: x.sum(-1),
        {"dim": (U - 1,), "keepdim": False, "self_sym_sizes": (2, 3, 4)},
    ),
    "sum_all": (lambda L, x: x.sum(), {"self_sym_sizes": (2, 3, 4)}),
    "mean_dim": (
        lambda L, x: x.mean((0, 1), keepdim=True),
        {"dim": (0, 1), "keepdim": True, "self_sym_numel": 24, "self_sym_sizes": (2, 3, 4)},
    ),
    "softmax": (lambda L, x: x.softmax(1), {"dim": 1}),
    "log_softmax": (lambda L, x: x.log_softmax(-1), {"dim": U - 1}),
    "cat": (lambda L, x: L.cat([x, x], 1), {"dim": 1}),
    "transpose": (lambda L, x: x.transpose(0, 2), {"dim0": 0, "dim1": 2}),
    "view": (lambda L, x: x.view(6, 4), {"self_sym_sizes": (2, 3, 4)}),
    "unsqueeze": (lambda L, x: x.unsqueeze(1), {"dim": 1}),
    "expand": (lambda L, x: x[:, :1].expand(2, 5, 4), {"self_sym_sizes": (2, 1, 4)}),
    "permute": (lambda L, x: x.permute(2, 0, -2), {"dims": (2, 0, U - 2)}),
    "pow": (lambda L, x: x.pow(2.5), {"exponent": 2.5}),
    "add_alpha": (lambda L, x: x.add(x, alpha=2), {"alpha": 2}),
    "leaky_relu": (lambda L, x: L.nn.functional.leaky_relu(x, 0.2), {"negative_slope": 0.2}),
    "amax": (lambda L, x: x.amax(1), {"dim": (1,), "keepdim": False}),
    "select": (lambda L, x: x[:, -1], {"dim": 1, "index": U - 1, "self_sym_sizes": (2, 3, 4)}),
    "narrow": (
        lambda L, x: x.narrow(1, 0, 2),
        {"dim": 1, "end": 2, "self_sym_sizes": (2, 3, 4), "start": 0, "step": 1},
    ),
    "slice_open": (
        lambda L, x: x[:, 1:],
        {"dim": 1, "end": 2**63 - 1, "self_sym_sizes": (2, 3, 4), "start": 1, "step": 1},
    ),
    "gelu_tanh": (
        lambda L, x: L.nn.functional.gelu(x, approximate="tanh"),
        {"approximate": "tanh"},
    ),
    "index_select": (
        lambda L, x: x.index_select(1, L.tensor([0])),
        {"dim": 1, "self_sym_sizes": (2, 3, 4)},
    ),
    "gather": (
        lambda L, x: x.gather(1, L.zeros(2, 1, 4, dtype=L.long)),
        {"dim": 1, "sparse_grad": False},
    ),
    "cumsum": (lambda L, x: x.cumsum(1), {"dim": 1}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_saved_attributes(lib, name):
    op, want = CASES[name]
    x = lib.randn(2, 3, 4, requires_grad=True)
    fn = op(lib, x).grad_fn
    got = {
        a[len("_saved_") :]: getattr(fn, a)
        for a in dir(fn)
        if a.startswith("_saved_") and not isinstance(getattr(fn, a), lib.Tensor)
    }
    assert got == want
