"""Regression checks of the differential fuzzer's mismatches, fourth part:
the categories left by the long run of seeds 990000-1089999 (see
test_fuzz_regressions.py).
"""

import math

import pytest

import ferrograd

from .common import run


def _sign(t):
    return [math.copysign(1.0, v) for v in t.flatten().tolist()]


def check_zero_sign_ties(lib):
    # minimum/maximum/clamp between 0.0 and -0.0 give self, as torch's scalar
    # loop (std::min/std::max) and its clamp with number bounds do (seeds
    # 1014573: 1 / minimum(-0.0, 0.0); 1002255: 3 / (-0.0).clamp(max=0)).
    # (torch's AVX2 body, in blocks of 16 float32 / 8 float64 of a
    # contiguous run, gives the other operand for minimum/maximum: not
    # checked, a property of its vector width.)
    for dt in ("float32", "float64"):
        ns = run(
            lib,
            f"p = torch.zeros(3, dtype=torch.{dt})\nn = -torch.zeros(3, dtype=torch.{dt})",
        )
        p, n = ns["p"], ns["n"]
        for got, want in [
            (lib.minimum(p, n), 1.0),
            (lib.minimum(n, p), -1.0),
            (lib.maximum(p, n), 1.0),
            (lib.maximum(n, p), -1.0),
            (p.clamp(min=-0.0), 1.0),
            (n.clamp(min=0.0), -1.0),
            (p.clamp(max=-0.0), 1.0),
            (n.clamp(max=0.0), -1.0),
            (n.clamp(0.0, 0.0), -1.0),
            (p.clamp(min=n), 1.0),
            (n.clamp(max=p), -1.0),
            (n.clamp(p, p), -1.0),
            (n.clone().clamp_(min=0.0), -1.0),
            (p.clone().clamp_(max=-0.0), 1.0),
        ]:
            assert _sign(got) == [want] * 3
    ns = run(
        lib,
        "t3 = torch.tensor(-0.0)\nt4 = torch.tensor(0.0)\n"
        "t10 = torch.reciprocal(torch.minimum(t4, t3))\n"
        "t9 = 3 / (-torch.tensor([0.0, 1.0], dtype=torch.float64)).clamp(min=None, max=0)",
    )
    assert ns["t10"].item() == math.inf
    assert ns["t9"].tolist() == [-math.inf, -3.0]


def check_min_max_dim_ties(lib):
    # min(dim)/max(dim)/argmin/argmax give the first of equal elements (-0.0
    # and 0.0 equal), on any layout; the value is that element's. (Seed
    # 991596 was no tie: torch's exp2 gave two different values, see
    # check_rounding_amplified.)
    x = lib.tensor([[1.0, -0.0, 0.0], [2.0, 0.0, -0.0], [1.0, -0.0, 5.0]], dtype=lib.float64)
    for t in (x, x.t().contiguous().t()):
        v, i = t.min(1)
        assert i.tolist() == [1, 1, 1] and _sign(v) == [-1.0, 1.0, -1.0]
        assert t.argmin(1).tolist() == [1, 1, 1]
        v, i = t.max(0)
        assert i.tolist() == [1, 0, 2] and v.tolist() == [2.0, 0.0, 5.0]
        assert t.argmax(0).tolist() == [1, 0, 2]
        v, i = t.t().min(0)
        assert i.tolist() == [1, 1, 1] and _sign(v) == [-1.0, 1.0, -1.0]


def check_rounding_amplified(lib):
    # Not a ferrograd bug (KNOWN "rounding_amplified", seeds 1074841,
    # 997655, 1073464, 991596): an operand one rounding away from torch's
    # (vectorised exp/exp2 within their documented 1 ulp, a sum in another
    # order) met an op with a jump. The ops with the jump are exact on equal
    # operands; the operands are within their kernels' bounds.
    ulp1 = math.ulp(1.0)
    x = lib.tensor([1.0 - 2.0**-24, 1.0, 2.0 - 2.0**-23], dtype=lib.float32)
    assert lib.floor(x).tolist() == [0.0, 1.0, 1.0]
    assert lib.log1p(lib.tensor([-1.0, -1.0 + ulp1], dtype=lib.float64)).tolist()[0] == -math.inf
    assert lib.rsqrt(lib.tensor([0.0, 4.0], dtype=lib.float64)).tolist() == [math.inf, 0.5]
    # exp2 (1 ulp): 2^-1.5 as the fuzzer's t3 (8 float64, torch's vector body)
    e = lib.exp2(lib.full((8,), -1.5, dtype=lib.float64)).tolist()
    assert all(abs(v - 2.0**-1.5) <= math.ulp(2.0**-1.5) for v in e)
    # softmax columns sum to 1 within a few float32 ulps (seed 1074841)
    s = lib.softmax(
        lib.tensor([[0.75, -0.5], [-0.25, -1.0], [1.0, 2.0], [-1.25, 1.5]], dtype=lib.float32),
        dim=-2,
    ).sum(0)
    assert all(abs(v - 1.0) <= 4 * 2.0**-24 for v in s.tolist())
    # var of a constant is 0 up to rounding (torch: ~3e-33, seed 1073464)
    v = lib.full((3, 4, 2), -1.5 / -3.375, dtype=lib.float64).var().item()
    assert 0.0 <= v < 1e-30


def check_sum_grad_layout(lib):
    # sum()'s backward is `grad.expand(sizes)` of the 0-dim grad: a stride 0
    # in every dim, size-1 dims too (seed 1059114: setitem of that gradient
    # into itself is then the same data, no overlap error); sum(dim)
    # unsqueezes first, and AccumulateGrad makes .grad dense
    src = """
t0 = torch.tensor([float('nan')], dtype=torch.float64, requires_grad=True)
t3, = torch.autograd.grad(t0.sum(), (t0,))
t5 = t3.expand(-1)
t10, = t3.split(1, 0)
t10[None, :] = t5
a = torch.ones(1, 1, requires_grad=True)
ga, = torch.autograd.grad(a.sum(), (a,))
gd, = torch.autograd.grad(a.sum(0).sum(), (a,))
ge, = torch.autograd.grad(a.sum(1).sum(), (a,))
b = torch.ones(1, requires_grad=True)
b.sum().backward()
"""
    ns = run(lib, src)
    assert ns["t3"].stride() == (0,) and ns["t10"].stride() == (0,)
    assert ns["ga"].stride() == (0, 0) and ns["gd"].stride() == (0, 0)
    assert ns["ge"].stride() == (0, 1)
    assert ns["b"].grad.stride() == (1,)


def check_index_put_dirty_alias(lib):
    # Not a bug (KNOWN "inplace_on_own_memory", seed 998951): Dirty.apply of
    # a view returns a tensor on the view's memory (torch: another tensor,
    # so its assert_no_overlap cannot see the very same tensor), and
    # index_put_ of it with that view as the values is torch's TooHard
    # layout: torch's result depends on its loop order; ferrograd reads the
    # values first
    src = """
t0 = torch.tensor([[[-1.25, 1.0]], [[1.0, -1.75]], [[1.0, -1.5]]], dtype=torch.float64).transpose(0, 2).requires_grad_()
t2 = t0.neg()
t3 = t2.diagonal(-1)
with torch.no_grad():
    t9 = Dirty.apply(t3)
t9.index_put_((torch.tensor([2, 0, 1]),), t3)
"""
    ns = run(lib, src)
    assert ns["t2"][0].tolist() == [[1.25, -1.0, -1.0]]
    if lib is ferrograd:
        assert ns["t2"][1].tolist() == [[5.25, 4.5, -3.0]]


def check_logsumexp_grad_strides(lib):
    # logsumexp's gradient is torch's `grad * (self - result).exp()`: the
    # broadcast grad, its first operand, orders the dims of the result
    # (seed 1043357), with and without create_graph
    src = """
t0 = torch.ones(4, 2, 3).transpose(2, 0).requires_grad_()
t6 = t0.logsumexp(2, keepdim=True)
t14, = torch.autograd.grad(torch.reciprocal(t6).sum(), (t0,), retain_graph=True)
t15, = torch.autograd.grad(torch.reciprocal(t6).sum(), (t0,), create_graph=True)
"""
    ns = run(lib, src)
    assert ns["t14"].tanh().stride() == (2, 1, 6)
    assert ns["t15"].tanh().stride() == (2, 1, 6)


def _mm_zero_sign(lib, dtype):
    dt = getattr(lib, dtype)
    out = []
    for m, k, n in [(130, 2, 2), (2, 2, 70), (130, 2, 130), (3, 3, 3), (100, 7, 100)]:
        out.append(_sign((-lib.zeros(m, k, dtype=dt)) @ lib.ones(k, n, dtype=dt))[0])
    a, b = -lib.zeros(2, 512, 1, dtype=dt), lib.ones(2, 1, 512, dtype=dt)
    out.append(_sign(lib.bmm(a, b))[0])
    out.append(_sign(a[0] @ b[0])[0])  # the outer product: the bare -0.0
    out.append(_sign(-lib.zeros(130, 2, dtype=dt) @ lib.ones(2, dtype=dt))[0])
    return out


def check_mm_zero_sign(lib):
    # products whose terms are all -0.0 sum to +0.0, as BLAS (which starts
    # from +0.0) gives torch, whichever kernel runs them (the gemm crate's
    # k <= 2 loop started from the first product: -0.0); mm of a column by a
    # row is the outer product, -0.0 in torch too
    for dtype in ("float32", "float64"):
        assert _mm_zero_sign(lib, dtype) == [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0, 1.0]


def check_expand_0d_grad_fresh(lib):
    # expand to a 0-dim shape: its gradient is torch's sum_to, grad.sum(), a
    # tensor of its own, so an in-place op on one returned gradient leaves
    # the other alone (seed 1151720)
    src = """
t1 = torch.tensor(-0.5, requires_grad=True)
t3 = torch.clamp(t1, None, 1)
t6 = torch.sign(t1).add(t3.expand(()))
t9, t10 = torch.autograd.grad(t6.sum(), (t3, t6))
t9.add_(t9)
"""
    ns = run(lib, src)
    assert ns["t9"].item() == 2.0 and ns["t10"].item() == 1.0


def check_grad_accumulate_layout(lib):
    # two gradients of one tensor summed by the engine: torch's InputBuffer
    # adds in place into the first one it owns (dense, its only reference)
    # and keeps that one's layout: here the transposed path's (seed 1159306)
    src = """
t0 = torch.tensor([[2.0, 2.0], [1.0, 1.25], [-0.25, -1.5], [-2.0, 0.75]], requires_grad=True)
t5 = torch.atan2(t0.var((1,)), t0.transpose(1, -2))
t7, = torch.autograd.grad(t5.sum(), (t0,))
"""
    assert run(lib, src)["t7"].stride() == (1, 4)


def check_index_put_view_out_alias(lib):
    # Not a bug (KNOWN "inplace_on_own_memory", seed 1176062): ViewOut.apply
    # returns a view of its input; index_put_ of that input into it, a
    # strided layout, is torch's TooHard case: ferrograd reads the values
    # first, torch's result depends on its loop order
    src = """
t0 = torch.tensor([0.5, 0.0, -2.0, 0.25, -0.75, 1.25, 0.5, 0.25], dtype=torch.float64)[::2]
t3 = ViewOut.apply(t0)
t3.index_put_((torch.tensor([2, 3, 1, 0]),), t0, accumulate=True)
"""
    ns = run(lib, src)
    assert ns["t0"].tolist()[2:] == [-0.25, -1.5]
    if lib is ferrograd:
        assert ns["t0"].tolist()[:2] == [1.0, -2.75]


def check_noop_squeeze_grad_is_the_gradient(lib):
    # squeeze() that drops no dim: its backward passes the gradient itself
    # on (torch's unsqueeze_to), so the gradients of the view and of its
    # base are one tensor: requires_grad_ on one shows on the other (seed
    # 7000691)
    src = """
t0 = torch.tensor([0.0, 1.0, -1.5, 0.0], requires_grad=True)
t1 = t0.squeeze()
t2, t3 = torch.autograd.grad(t1.sum(), (t1, t0), allow_unused=True)
t2.requires_grad_()
"""
    ns = run(lib, src)
    assert ns["t3"].requires_grad
    assert ns["t3"].data_ptr() == ns["t2"].data_ptr()
    assert ns["t3"].stride() == ns["t2"].stride()


def check_torch_zero_tensor_grad(lib):
    # Not a ferrograd bug (KNOWN "torch_zero_tensor_grad", seeds 93852 and
    # 91175): torch's backward of abs's gradient (sgn) is an efficient zero
    # tensor with no storage, which becomes t0.grad; reading it raises
    src = """
t0 = torch.tensor(2.0, requires_grad=True)
t1 = torch.sqrt(t0)
t2 = torch.abs(t1)
t5, = torch.autograd.grad(t2.sum(), (t1,), create_graph=True)
t5.backward(torch.ones_like(t5))
"""
    g = run(lib, src)["t0"].grad
    assert tuple(g.shape) == ()
    if lib is ferrograd:
        assert g.tolist() == 0.0
    else:
        with pytest.raises(RuntimeError, match="unallocated storage"):
            g.tolist()


def check_hook_on_view_before_inplace(lib):
    # A hook registered on a view, then the view modified in place (seed
    # 28149): torch's hook stays with the view's old grad_fn, which the
    # backward of the base (CopySlices) does not run, so it never fires
    src = """
t10 = torch.tensor([[0.75]], dtype=torch.float32).expand(4, 1).requires_grad_()
t11 = t10 ** 0.5
t12 = t11[::2]
t14 = t12.unflatten(1, (1, 1))
t14.register_hook(lambda g: g * 2)
t14.index_fill_(0, torch.tensor([1]), -1)
(t11 * t11).sum().backward()
"""
    g = run(lib, src)["t10"].grad.flatten().tolist()
    assert g == pytest.approx([1.0, 1.0, 0.0, 1.0], rel=1e-6)


def check_setitem_whole_tensor_writes_self(lib):
    # `t[...] = v`, `t[()] = v` and full slices select the tensor itself
    # (torch's applySlice returns self): the write is recorded on `t`
    # (CopyBackwards, or FillBackward3 for a 0-dim value of another shape),
    # not through a view (CopySlices), so a gradient through the fully
    # overwritten `t` is a constant (seeds 4847, 62541: requires_grad False
    # under create_graph)
    names = {}
    for key, index in (("e", "..."), ("u", "()"), ("f", ":"), ("n", "None"), ("r", "0")):
        ns = run(
            lib,
            f"a = torch.tensor([[1.0, 2.0]], requires_grad=True)\nt = a * 1\n"
            f"t[{index}] = torch.tensor(0.0)\nc = a * 1\nc[{index}] = torch.ones_like(c[{index}])",
        )
        names[key] = (ns["t"].grad_fn.name(), ns["c"].grad_fn.name())
    for key in "euf":
        assert names[key][0] == "FillBackward3"
        assert names[key][1].endswith("CopyBackwards")
    for key in "nr":
        assert all(n.endswith("CopySlices") for n in names[key])
    # only slices torch's applySlice skips (start 0 as written, step 1, stop
    # past the end) count: `t[0:-1]` of a 1-element dim and `t[1:-1]` of
    # an empty one are views (seeds 2924, and 2720 for None with an int)
    for shape, index in (((2, 1), "0:-1"), ((0,), "1:-1"), ((1, 1), "None, :, -1")):
        ns = run(
            lib,
            f"a = torch.ones({shape}, requires_grad=True)\nt = a * 1\nt[{index}] = torch.tensor(0.0)",
        )
        assert ns["t"].grad_fn.name().endswith("CopySlices"), index
    src = """
t0 = torch.tensor([2.0], dtype=torch.float32).expand(2).requires_grad_()
t2 = torch.tensor([0.25, 1.25], dtype=torch.float32, requires_grad=True)
t3 = torch.matmul(t0, t2)
t4 = -t3
t4[...] = torch.tensor(0, dtype=torch.int64, requires_grad=False)
t9 = torch.log_softmax(t4, dim=0)
t11, t12, t13 = torch.autograd.grad(t9.sum(), (t3, t4, t0), create_graph=True, allow_unused=True)
"""
    ns = run(lib, src)
    assert not ns["t11"].requires_grad and ns["t11"].tolist() == 0.0


def check_reduced_grad_view_rule(lib):
    # The engine reduces a broadcast gradient as torch's at::sum_to: a view
    # of the keepdim sum when leading dims are dropped (detach_() refuses
    # it, seed 15726), the plain sum for a 0-dim input, else the keepdim sum
    # itself
    pre = "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
    src = pre + "g, = torch.autograd.grad((x * torch.ones(2, 3)).sum(), x)"
    ns = run(lib, src)
    assert ns["g"]._is_view() and ns["g"].tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        run(lib, src + "\ng.detach_()")
    ns = run(lib, pre + "x.mul(torch.ones(2, 3)).sum().backward()")
    assert not ns["x"].grad._is_view()
    ns = run(
        lib,
        "s = torch.tensor(2.0, requires_grad=True)\n"
        "e = torch.ones(1, 3, requires_grad=True)\n"
        "gs, ge = torch.autograd.grad((s * e * torch.ones(2, 3)).sum(), (s, e))",
    )
    assert not ns["gs"]._is_view() and not ns["ge"]._is_view()
    assert ns["gs"].item() == 6.0 and ns["ge"].tolist() == [[4.0, 4.0, 4.0]]
