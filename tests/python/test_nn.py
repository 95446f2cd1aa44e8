"""nn.Parameter, nn.Module and the layers, losses, init and dropout, on
ferrograd and (through the `lib` fixture) torch; plus a training run that
must match torch's step for step."""

import copy
import importlib
import math
import pickle

import numpy as np
import pytest

import ferrograd


def nn_of(lib):
    return importlib.import_module(lib.__name__ + ".nn")


def make_net(lib):
    nn = nn_of(lib)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.act = nn.Tanh()
            self.fc2 = nn.Linear(8, 3)
            self.register_buffer("scale", lib.tensor(2.0))

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x))) * self.scale

    net = Net()
    rng = np.random.default_rng(0)
    with lib.no_grad():
        for p in net.parameters():
            p.copy_(lib.tensor(0.5 * rng.standard_normal(tuple(p.shape)), dtype=p.dtype))
    return net


def test_parameter(lib):
    nn = nn_of(lib)
    t = lib.ones(2)
    p = nn.Parameter(t)
    assert isinstance(p, nn.Parameter) and isinstance(p, lib.Tensor)
    assert p.requires_grad and p.is_leaf and not t.requires_grad
    assert p.data_ptr() == t.data_ptr()
    assert type(p * 2) is lib.Tensor and type(p.detach()) is lib.Tensor
    assert repr(p).startswith("Parameter containing:\ntensor([1., 1.]")
    assert not nn.Parameter(t, requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    d = copy.deepcopy(p)
    assert type(d) is nn.Parameter and d.data_ptr() != p.data_ptr() and d.requires_grad
    r = pickle.loads(pickle.dumps(p))
    assert type(r) is nn.Parameter and r.tolist() == [1.0, 1.0] and r.requires_grad


def test_registration_and_walking(lib):
    nn = nn_of(lib)
    net = make_net(lib)
    names = [n for n, _ in net.named_parameters()]
    assert names == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [n for n, _ in net.named_buffers()] == ["scale"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "fc2"]
    assert net.get_submodule("fc2") is net.fc2 and net.get_parameter("fc1.bias") is net.fc1.bias
    assert len(list(net.parameters(recurse=False))) == 0
    # Shared modules and parameters are listed once.
    shared = nn.Linear(2, 2)
    seq = nn.Sequential(shared, shared)
    assert len(list(seq.parameters())) == 2 and len(list(seq.modules())) == 2
    # Assignment rules.
    with pytest.raises(TypeError, match="cannot assign .* as parameter 'weight'"):
        net.fc1.weight = lib.ones(8, 4)
    net.fc1.bias = None
    assert [n for n, _ in net.fc1.named_parameters()] == ["weight"]
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        net.nope
    del net.act
    assert [n for n, _ in net.named_children()] == ["fc1", "fc2"]

    class Early(nn.Module):
        def __init__(self):
            self.x = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_repr(lib):
    nn = nn_of(lib)
    seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Dropout(0.25), nn.LogSoftmax(dim=1))
    assert repr(seq) == (
        "Sequential(\n"
        "  (0): Linear(in_features=3, out_features=4, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Dropout(p=0.25, inplace=False)\n"
        "  (3): LogSoftmax(dim=1)\n"
        ")"
    )


def test_training_matches_torch(torch):
    def run(lib):
        optim = importlib.import_module(lib.__name__ + ".optim")
        net = make_net(lib)
        rng = np.random.default_rng(1)
        x = lib.tensor(rng.standard_normal((16, 4)), dtype=lib.float32)
        y = lib.tensor(rng.integers(0, 3, 16))
        opt = optim.Adam(net.parameters(), lr=0.01)
        loss_fn = nn_of(lib).CrossEntropyLoss()
        losses = []
        for _ in range(20):
            opt.zero_grad()
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().numpy().copy() for p in net.parameters()]

    (fl, fp), (tl, tp) = run(ferrograd), run(torch)
    assert fl == pytest.approx(tl, rel=1e-5)
    for a, b in zip(fp, tp):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_state_dict_round_trip(lib):
    nn = nn_of(lib)
    net = make_net(lib)
    sd = net.state_dict()
    assert list(sd) == ["scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert not sd["fc1.weight"].requires_grad
    assert sd["fc1.weight"].data_ptr() == net.fc1.weight.data_ptr()
    other = make_net(lib)
    with lib.no_grad():
        for p in other.parameters():
            p.zero_()
    result = other.load_state_dict(sd)
    assert repr(result) == "<All keys matched successfully>"
    x = lib.ones(2, 4)
    assert (other(x) - net(x)).abs().max().item() == 0.0
    with pytest.raises(RuntimeError, match=r"Missing key(.|\n)*size mismatch for fc1.weight"):
        other.load_state_dict({"fc1.weight": lib.zeros(3, 3)})
    partial = {k: v for k, v in sd.items() if k != "scale"}
    partial["extra"] = lib.ones(1)
    result = other.load_state_dict(partial, strict=False)
    assert result.missing_keys == ["scale"] and result.unexpected_keys == ["extra"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "scale"'):
        other.load_state_dict({k: v for k, v in sd.items() if k != "scale"})
    # A module with non-persistent buffers leaves them out.
    m = nn.Module()
    m.register_buffer("kept", lib.ones(1))
    m.register_buffer("temp", lib.ones(1), persistent=False)
    assert list(m.state_dict()) == ["kept"]


def test_deepcopy_pickle_and_dtype(lib):
    net = make_net(lib)
    twin = copy.deepcopy(net)
    assert twin.fc1.weight is not net.fc1.weight
    assert (twin.fc1.weight == net.fc1.weight).all().item()
    seq = nn_of(lib).Sequential(nn_of(lib).Linear(2, 3))
    restored = pickle.loads(pickle.dumps(seq))
    assert type(restored[0].bias).__name__ == "Parameter" and restored[0].bias.requires_grad
    assert restored[0].weight.tolist() == seq[0].weight.tolist()
    w = net.fc1.weight
    net.double()
    assert net.fc1.weight is w and w.dtype == lib.float64 and net.scale.dtype == lib.float64
    net.to(lib.float32)
    assert w.dtype == lib.float32
    with pytest.raises(TypeError, match="only accepts floating point"):
        net.to(lib.int64)


def test_modes_grads_and_hooks(lib):
    nn = nn_of(lib)
    net = make_net(lib)
    assert net.training and net.eval() is net and not net.fc1.training
    net.train()
    assert net.fc2.training
    net(lib.ones(1, 4)).sum().backward()
    assert net.fc1.weight.grad is not None
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    seen = []
    seq = nn.Sequential(nn.Linear(2, 2))
    pre = seq.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    post = seq.register_forward_hook(lambda m, args, out: seen.append(out.shape) or out + 1)
    out = seq(lib.ones(3, 2))
    assert seen == [(3, 2)] and (out - seq[0].bias - 1).abs().max().item() < 1e-6
    pre.remove()
    post.remove()
    seq(lib.ones(3, 2))
    assert len(seen) == 1
    assert seq.apply(lambda m: seen.append(type(m).__name__)) is seq
    assert seen[1:] == ["Linear", "Sequential"]


def test_containers(lib):
    nn = nn_of(lib)
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and len(seq[1:]) == 2
    assert seq(lib.ones(4, 2)).shape == (4, 1)
    seq.append(nn.Sigmoid())
    del seq[1]
    assert [type(m).__name__ for m in seq] == ["Linear", "Linear", "Sigmoid"]
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    ml.append(nn.Tanh())
    assert len(ml) == 4 and len(list(ml.parameters())) == 6 and isinstance(ml[-1], nn.Tanh)
    md = nn.ModuleDict({"a": nn.Linear(1, 2), "b": nn.ReLU()})
    assert list(md.keys()) == ["a", "b"] and "a" in md and len(list(md.parameters())) == 2
    pl = nn.ParameterList([lib.ones(2), nn.Parameter(lib.zeros(3))])
    assert len(pl) == 2 and type(pl[0]).__name__ == "Parameter" and pl[0].requires_grad
    assert len(list(pl.parameters())) == 2


@pytest.mark.parametrize(
    "name,args,fn",
    [
        ("ReLU", (), lambda F, x: F.relu(x)),
        ("Tanh", (), lambda F, x: F.tanh(x)),
        ("Sigmoid", (), lambda F, x: F.sigmoid(x)),
        ("SiLU", (), lambda F, x: F.silu(x)),
        ("GELU", ("tanh",), lambda F, x: F.gelu(x, approximate="tanh")),
        ("Softplus", (2.0, 10.0), lambda F, x: F.softplus(x, 2.0, 10.0)),
        ("Softmax", (1,), lambda F, x: F.softmax(x, 1)),
        ("LogSoftmax", (0,), lambda F, x: F.log_softmax(x, 0)),
        ("Flatten", (0,), lambda F, x: x.flatten()),
        ("LeakyReLU", (0.2,), lambda F, x: F.leaky_relu(x, 0.2)),
        ("Hardtanh", (-0.5, 1.5), lambda F, x: F.hardtanh(x, -0.5, 1.5)),
        ("ReLU6", (), lambda F, x: F.relu6(x)),
        ("ELU", (0.5,), lambda F, x: F.elu(x, 0.5)),
        ("CELU", (0.5,), lambda F, x: F.celu(x, 0.5)),
        ("SELU", (), lambda F, x: F.selu(x)),
        ("LogSigmoid", (), lambda F, x: F.logsigmoid(x)),
        ("Identity", (), lambda F, x: x),
    ],
)
def test_activation_modules(lib, name, args, fn):
    nn = nn_of(lib)
    x = lib.tensor([[-1.0, 0.5], [2.0, -3.0]])
    assert getattr(nn, name)(*args)(x).tolist() == fn(nn.functional, x).tolist()


def test_inplace_activations_keep_autograd(lib):
    F = nn_of(lib).functional
    for op in (
        lambda y: F.leaky_relu(y, 0.1, inplace=True),
        lambda y: F.hardtanh(y, -0.5, 0.5, inplace=True),
        lambda y: F.elu(y, 2.0, inplace=True),
    ):
        z = lib.tensor([-1.0, 0.25, 2.0], dtype=lib.float64, requires_grad=True)
        y = z * 1
        assert op(y) is y
        y.sum().backward()
        w = lib.tensor([-1.0, 0.25, 2.0], dtype=lib.float64, requires_grad=True)
        fresh = op(w * 1)
        assert y.tolist() == fresh.tolist()
        (g,) = lib.autograd.grad(fresh.sum(), w)
        assert z.grad.tolist() == g.tolist()


def test_one_hot(lib):
    F = nn_of(lib).functional
    assert F.one_hot(lib.tensor([0, 2, 1]), 4).tolist() == [
        [1, 0, 0, 0],
        [0, 0, 1, 0],
        [0, 1, 0, 0],
    ]
    h = F.one_hot(lib.tensor([[1], [3]]))
    assert h.shape == (2, 1, 4) and h.dtype == lib.int64
    with pytest.raises(RuntimeError, match="only applicable to index tensor"):
        F.one_hot(lib.tensor([1.0]))
    with pytest.raises(RuntimeError, match="non-negative"):
        F.one_hot(lib.tensor([-1]))
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(lib.tensor([3]), 2)


def test_pad_values_and_errors(lib):
    F = nn_of(lib).functional
    a = lib.arange(6.0).reshape(1, 2, 3)
    assert F.pad(a, (1, 1), value=9.0).tolist() == [[[9, 0, 1, 2, 9], [9, 3, 4, 5, 9]]]
    assert F.pad(a, (2, 2), mode="reflect").tolist()[0][0] == [2, 1, 0, 1, 2, 1, 0]
    assert F.pad(a, (2, 1), mode="replicate").tolist()[0][1] == [3, 3, 3, 4, 5, 5]
    assert F.pad(a, (1, 2), mode="circular").tolist()[0][0] == [2, 0, 1, 2, 0, 1]
    assert F.pad(a, (-1, 0, 1, 0)).tolist() == [[[0, 0], [1, 2], [4, 5]]]
    assert F.pad(lib.tensor([[1, 2]]), (1, 0), value=7).tolist() == [[7, 1, 2]]
    with pytest.raises(RuntimeError, match="divisible by 2"):
        F.pad(a, (1,))
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        F.pad(a, (3, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="less than or equal to two times"):
        F.pad(a, (1,) * 8)


def test_inplace_relu_and_silu(lib):
    F = nn_of(lib).functional
    x = lib.tensor([-1.0, 2.0])
    assert F.relu(x, inplace=True) is x and x.tolist() == [0.0, 2.0]
    y = lib.tensor([-1.0, 2.0])
    assert nn_of(lib).SiLU(inplace=True)(y) is y and y[0].item() < 0


@pytest.mark.parametrize(
    "name,kw,fn",
    [
        ("MSELoss", {}, "mse_loss"),
        ("L1Loss", {"reduction": "sum"}, "l1_loss"),
        ("SmoothL1Loss", {"beta": 0.5}, "smooth_l1_loss"),
        ("HuberLoss", {"delta": 0.5}, "huber_loss"),
        ("BCEWithLogitsLoss", {}, "binary_cross_entropy_with_logits"),
    ],
)
def test_regression_loss_modules(lib, name, kw, fn):
    nn = nn_of(lib)
    x = lib.tensor([[0.2, -1.0], [3.0, 0.5]])
    y = lib.tensor([[0.0, 1.0], [1.0, 0.0]])
    want = getattr(nn.functional, fn)(x, y, **kw)
    assert getattr(nn, name)(**kw)(x, y).item() == pytest.approx(want.item())


def test_classification_loss_modules(lib):
    nn = nn_of(lib)
    logits = lib.tensor([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]])
    target = lib.tensor([1, 2])
    w = lib.tensor([1.0, 2.0, 0.5])
    ce = nn.CrossEntropyLoss(weight=w, label_smoothing=0.1)
    assert ce(logits, target).item() == pytest.approx(
        nn.functional.cross_entropy(logits, target, weight=w, label_smoothing=0.1).item()
    )
    assert [n for n, _ in ce.named_buffers()] == ["weight"]
    nll = nn.NLLLoss(ignore_index=2, reduction="sum")
    lp = logits.log_softmax(1)
    assert nll(lp, target).item() == pytest.approx(-lp[0, 1].item())
    assert nn.MSELoss(size_average=False).reduction == "sum"
    assert nn.BCELoss(reduce=False).reduction == "none"
    p = lib.tensor([0.25, 0.75])
    assert nn.BCELoss()(p, lib.tensor([0.0, 1.0])).item() == pytest.approx(-math.log(0.75))


def test_linear_init_range(lib):
    nn = nn_of(lib)
    lib.manual_seed(0)
    lin = nn.Linear(64, 300)
    bound = 1 / math.sqrt(64)
    for t in (lin.weight, lin.bias):
        assert t.abs().max().item() <= bound and t.abs().max().item() > 0.9 * bound
    assert lin.weight.shape == (300, 64) and lin.bias.shape == (300,)
    assert nn.Linear(2, 3, bias=False).bias is None
    assert nn.Linear(2, 3, dtype=lib.float64).weight.dtype == lib.float64


def test_init_functions(lib):
    init = nn_of(lib).init
    lib.manual_seed(0)
    w = lib.empty(400, 300)
    assert init.xavier_uniform_(w) is w
    a = math.sqrt(6 / 700)
    assert w.abs().max().item() <= a and w.abs().max().item() > 0.99 * a
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert w.std().item() == pytest.approx(math.sqrt(2 / 400), rel=0.02)
    init.kaiming_uniform_(w, a=0.0, nonlinearity="relu")
    bound = math.sqrt(2) * math.sqrt(3 / 300)
    assert w.abs().max().item() <= bound and w.abs().max().item() > 0.99 * bound
    init.xavier_normal_(w, gain=2.0)
    assert w.std().item() == pytest.approx(2 * math.sqrt(2 / 700), rel=0.02)
    init.trunc_normal_(w, mean=1.0, std=2.0, a=0.0, b=3.0)
    assert w.min().item() >= 0.0 and w.max().item() <= 3.0
    init.normal_(w, 3.0, 0.5)
    assert w.mean().item() == pytest.approx(3.0, abs=0.01)
    init.uniform_(w, -2, -1)
    assert -2 <= w.min().item() and w.max().item() < -1
    init.constant_(w, 0.5)
    assert w.min().item() == 0.5 and w.max().item() == 0.5
    e = init.eye_(lib.empty(2, 3))
    assert e.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    assert init.zeros_(lib.ones(2)).tolist() == [0.0, 0.0]
    assert init.ones_(lib.zeros(2)).tolist() == [1.0, 1.0]
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init._calculate_fan_in_and_fan_out(lib.empty(3, 4, 5)) == (20, 15)
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("cosine")
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(lib.empty(3))
    with pytest.raises(ValueError, match="Mode fan_mid not supported"):
        init.kaiming_uniform_(w, mode="fan_mid")
    p = nn_of(lib).Parameter(lib.zeros(2, 2))
    init.ones_(p)  # a leaf that requires grad, filled without history
    assert p.is_leaf and p.grad_fn is None and p.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_dropout(lib):
    nn = nn_of(lib)
    F = nn.functional
    lib.manual_seed(0)
    x = lib.full((20000,), 2.0, requires_grad=True)
    y = F.dropout(x, 0.25)
    kept = y != 0
    assert (y[kept] - 2.0 / 0.75).abs().max().item() < 1e-6
    assert kept.float().mean().item() == pytest.approx(0.75, abs=0.015)
    y.sum().backward()
    assert ((x.grad - y / 2.0).abs().max().item()) < 1e-6
    assert F.dropout(x, 0.5, training=False).tolist() == x.tolist()
    assert F.dropout(lib.ones(4), 0.0).tolist() == [1.0] * 4
    assert F.dropout(lib.ones(4), 1.0).tolist() == [0.0] * 4
    z = lib.ones(1000)
    assert F.dropout(z, 0.5, inplace=True) is z and (z == 0).any().item()
    d = nn.Dropout(0.5)
    d.eval()
    assert d(lib.ones(3)).tolist() == [1.0] * 3
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.dropout(lib.ones(2), 1.5)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.Dropout(-0.1)


def test_dropout_gradcheck(lib):
    # Reseeding before each call fixes the mask, so the function is smooth.
    F = nn_of(lib).functional
    x = lib.tensor(np.linspace(-1, 1, 12).reshape(3, 4), dtype=lib.float64, requires_grad=True)

    def f(x):
        lib.manual_seed(3)
        return F.dropout(x, 0.4)

    assert lib.autograd.gradcheck(f, (x,))
    assert lib.autograd.gradgradcheck(f, (x,))


def test_clip_grad_norm_and_value(lib):
    U = nn_of(lib).utils

    def params():
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([[3.0], [4.0]], dtype=lib.float64, requires_grad=True)
        a.grad = lib.tensor([3.0, 4.0])
        b.grad = lib.tensor([[12.0], [0.0]], dtype=lib.float64)
        return a, b

    a, b = params()
    total = U.clip_grad_norm_([a, b], 1.0)
    assert total.item() == 13.0 and total.dtype == lib.float64
    assert a.grad.tolist() == pytest.approx([3 / 13, 4 / 13], rel=1e-6)
    assert b.grad.flatten().tolist() == pytest.approx([12 / 13, 0.0], rel=1e-6)
    a, b = params()
    assert U.clip_grad_norm_([a, b], 100.0, norm_type="inf").item() == 12.0
    assert a.grad.tolist() == [3.0, 4.0]
    a, b = params()
    assert U.clip_grad_norm_(a, 3.5, norm_type=1).item() == 7.0
    assert a.grad.tolist() == pytest.approx([1.5, 2.0], rel=1e-6)
    a, b = params()
    U.clip_grad_value_([a, b], 3.5)
    assert a.grad.tolist() == [3.0, 3.5] and b.grad.tolist() == [[3.5], [0.0]]
    assert U.clip_grad_norm_([lib.ones(2, requires_grad=True)], 1.0).item() == 0.0
    a, b = params()
    a.grad[0] = float("nan")
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        U.clip_grad_norm_([a, b], 1.0, error_if_nonfinite=True)


def test_parameters_vector_round_trip(lib):
    U = nn_of(lib).utils
    p1 = lib.ones(2, 2, requires_grad=True)
    p2 = lib.zeros(3, requires_grad=True)
    assert U.parameters_to_vector([p1, p2]).tolist() == [1.0] * 4 + [0.0] * 3
    v = lib.arange(7.0)
    U.vector_to_parameters(v, [p1, p2])
    assert p1.tolist() == [[0.0, 1.0], [2.0, 3.0]] and p2.tolist() == [4.0, 5.0, 6.0]
    assert p1.requires_grad and p1.is_leaf
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        U.vector_to_parameters([1.0], [p1])


def test_layer_norm_module(lib):
    nn = nn_of(lib)
    ln = nn.LayerNorm([3, 4])
    assert repr(ln) == "LayerNorm((3, 4), eps=1e-05, elementwise_affine=True, bias=True)"
    assert [tuple(p.shape) for p in ln.parameters()] == [(3, 4), (3, 4)]
    x = lib.linspace(-2, 3, 24).reshape(2, 3, 4)
    y = ln(x)
    assert y.mean(dim=(1, 2)).abs().max().item() < 1e-6
    assert (y.var(dim=(1, 2), unbiased=False) - 1).abs().max().item() < 1e-4
    assert repr(nn.LayerNorm(4, elementwise_affine=False)).endswith("bias=False)")
    assert list(nn.LayerNorm(4, bias=False).named_parameters())[0][0] == "weight"
    with pytest.raises(RuntimeError, match=r"expected input with shape \[\*, 4\]"):
        nn.functional.layer_norm(lib.ones(2, 3), (4,))


def test_batch_norm_modules(lib):
    nn = nn_of(lib)
    bn = nn.BatchNorm1d(3).double()
    x = lib.linspace(-1, 2, 30, dtype=lib.float64).reshape(10, 3)
    y = bn(x)
    assert y.mean(0).abs().max().item() < 1e-12
    # Running stats moved a tenth of the way to the batch's (unbiased var).
    assert bn.running_mean.tolist() == pytest.approx((0.1 * x.mean(0)).tolist())
    assert bn.running_var.tolist() == pytest.approx((0.9 + 0.1 * x.var(0)).tolist())
    assert bn.num_batches_tracked.item() == 1
    assert sorted(bn.state_dict()) == [
        "bias",
        "num_batches_tracked",
        "running_mean",
        "running_var",
        "weight",
    ]
    bn.eval()
    want = (x - bn.running_mean) / (bn.running_var + 1e-5).sqrt()
    assert (bn(x) - want).abs().max().item() < 1e-12
    cumulative = nn.BatchNorm2d(2, momentum=None)
    batches = [lib.linspace(0, i + 1, 36).reshape(2, 2, 3, 3) for i in range(3)]
    for b in batches:
        cumulative(b)
    means = [b.mean(dim=(0, 2, 3)) for b in batches]
    assert cumulative.running_mean.tolist() == pytest.approx(
        ((means[0] + means[1] + means[2]) / 3).tolist(), rel=1e-5
    )
    assert cumulative.num_batches_tracked.item() == 3
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.BatchNorm1d(3)(lib.ones(2, 3, 4, 5))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        nn.BatchNorm1d(3)(lib.ones(1, 3))
    plain = nn.BatchNorm1d(3, affine=False, track_running_stats=False)
    assert list(plain.parameters()) == [] and plain.running_mean is None
    assert plain(x.float()).shape == (10, 3)


def test_embedding_module(lib):
    nn = nn_of(lib)
    e = nn.Embedding(10, 3, padding_idx=-1)
    assert repr(e) == "Embedding(10, 3, padding_idx=9)"
    assert e.weight[9].tolist() == [0.0, 0.0, 0.0]
    idx = lib.tensor([[1, 9, 1], [0, 2, 9]])
    out = e(idx)
    assert out.shape == (2, 3, 3) and out[0, 0].tolist() == e.weight[1].tolist()
    out.sum().backward()
    assert e.weight.grad[1].tolist() == [2.0] * 3 and e.weight.grad[0].tolist() == [1.0] * 3
    assert e.weight.grad[9].tolist() == [0.0] * 3  # the padding row learns nothing
    pre = nn.Embedding.from_pretrained(lib.arange(6.0).reshape(3, 2))
    assert pre(lib.tensor([2, 0])).tolist() == [[4.0, 5.0], [0.0, 1.0]]
    assert not pre.weight.requires_grad
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types"):
        nn.functional.embedding(lib.tensor([1.0]), lib.ones(3, 2))
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)


def test_module_backward_hooks(lib):
    nn = nn_of(lib)
    lin = nn.Linear(3, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]]))
    log = []
    pre = lin.register_full_backward_pre_hook(lambda m, go: log.append(("pre", go[0].tolist())))
    full = lin.register_full_backward_hook(
        lambda m, gi, go: log.append(("full", gi[0].tolist(), go[0].tolist()))
    )
    x = lib.tensor([[1.0, -1.0, 2.0]], requires_grad=True)
    (lin(x) * lib.tensor([[2.0, 3.0]])).sum().backward()
    assert log == [("pre", [[2.0, 3.0]]), ("full", [[-1.0, 5.5, 6.0]], [[2.0, 3.0]])]
    pre.remove()
    full.remove()
    # Without an input that requires grad, the hook fires with None.
    seen = []
    handle = lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go[0].tolist())))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        lin(lib.ones(1, 3)).sum().backward()
    assert seen == [((None,), [[1.0, 1.0]])]
    handle.remove()
    # Hooks may replace the gradients.
    lin.register_full_backward_pre_hook(lambda m, go: (lib.ones_like(go[0]),))
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0] * 10,))
    x.grad = None
    (lin(x) * 5).sum().backward()
    assert x.grad.tolist() == [[0.0, 25.0, 30.0]]
    # Order through a Sequential: last module first.
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    names = []
    for m in seq:
        m.register_full_backward_hook(lambda m, gi, go: names.append(type(m).__name__))
    seq(lib.ones(1, 2, requires_grad=True)).sum().backward()
    assert names == ["ReLU", "Linear"]
    bad = nn.Linear(1, 1)
    bad.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 2, but expected 1"):
        bad(lib.ones(1, 1, requires_grad=True)).sum().backward()


def test_failed_load_state_dict_changes_nothing():
    # torch copies the entries that fit before raising; ferrograd checks
    # everything first (bad input changes nothing).
    net = make_net(ferrograd)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    sd = {k: v.clone() + 1 for k, v in before.items()}
    sd["fc2.bias"] = ferrograd.zeros(5)
    with pytest.raises(RuntimeError, match="size mismatch for fc2.bias"):
        net.load_state_dict(sd)
    for k, v in net.state_dict().items():
        assert v.tolist() == before[k].tolist()


def test_group_norm(lib):
    nn = nn_of(lib)
    F = importlib.import_module(lib.__name__ + ".nn.functional")
    x = lib.arange(24, dtype=lib.float64).reshape(2, 4, 3)
    y = F.group_norm(x, 2)
    # each (sample, group) block of 2 channels x 3 is normalised on its own
    block = y[0, :2].reshape(-1)
    assert abs(block.mean().item()) < 1e-12
    assert abs(block.var(unbiased=False).item() - 1.0) < 1e-4
    m = nn.GroupNorm(2, 4)
    assert m.weight.tolist() == [1.0] * 4 and m.bias.tolist() == [0.0] * 4
    assert repr(m) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    assert list(nn.GroupNorm(2, 4, affine=False).state_dict()) == []
    assert lib.allclose(m(x.float()), y.float())
    with pytest.raises(ValueError, match="must be divisible by num_groups"):
        nn.GroupNorm(2, 3)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(x[:, :3], 2)
    with pytest.raises(RuntimeError, match="Expected weight to be a vector"):
        F.group_norm(x, 2, lib.ones(3, dtype=lib.float64))


@pytest.mark.parametrize(
    "fn, shape, per",
    [
        ("dropout1d", (4, 8, 5), 2),
        ("dropout1d", (32, 5), 1),
        ("dropout2d", (4, 8, 2, 2), 2),
        ("dropout3d", (4, 8, 2, 2, 2), 2),
        ("dropout3d", (32, 2, 2, 2), 1),
    ],
)
def test_channel_dropout(lib, fn, shape, per):
    nn = nn_of(lib)
    F = importlib.import_module(lib.__name__ + ".nn.functional")
    lib.manual_seed(0)
    y = getattr(F, fn)(lib.ones(*shape), 0.5)
    channels = y.reshape(int(np.prod(shape[:per])), -1)
    # whole channels are dropped or kept (and scaled by 1 / (1 - p))
    assert all(set(row) in ({0.0}, {2.0}) for row in channels.tolist())
    assert set(y.flatten().tolist()) == {0.0, 2.0}
    assert lib.equal(getattr(F, fn)(lib.ones(*shape), 0.5, training=False), lib.ones(*shape))
    x = lib.ones(*shape)
    assert getattr(F, fn)(x, 0.5, inplace=True) is x
    assert repr(nn.Dropout2d(0.3)) == "Dropout2d(p=0.3, inplace=False)"
    with pytest.raises(ValueError, match="between 0 and 1"):
        getattr(F, fn)(lib.ones(*shape), 1.5)
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        F.dropout1d(lib.ones(2, 2, 2, 2))
