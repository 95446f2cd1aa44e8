"""save/load of checkpoints (state dicts, optimizer states, tensors and
Parameters), and weights_only refusing other globals; on ferrograd and
(through `lib`) torch. ferrograd's files are plain pickle, torch's a zip."""

import importlib
import io
import pickle

import pytest


def test_checkpoint_round_trip(lib, tmp_path):
    nn = importlib.import_module(lib.__name__ + ".nn")
    optim = importlib.import_module(lib.__name__ + ".optim")
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = optim.Adam(model.parameters(), lr=0.1)
    model(lib.ones(2, 3)).sum().backward()
    opt.step()
    path = tmp_path / "ck.pt"
    lib.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 3}, path)
    ck = lib.load(path)
    assert ck["epoch"] == 3 and list(ck["model"])[:2] == ["0.weight", "0.bias"]
    twin = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    assert repr(twin.load_state_dict(ck["model"])) == "<All keys matched successfully>"
    x = lib.linspace(-1, 1, 6).reshape(2, 3)
    assert (twin(x) - model(x)).abs().max().item() == 0.0
    opt2 = optim.Adam(twin.parameters(), lr=0.5)
    opt2.load_state_dict(ck["opt"])
    assert opt2.param_groups[0]["lr"] == 0.1
    assert sorted(opt2.state[twin[0].weight]) == ["exp_avg", "exp_avg_sq", "step"]


def test_tensors_and_parameters_to_file_objects(lib):
    nn = importlib.import_module(lib.__name__ + ".nn")
    buf = io.BytesIO()
    lib.save([lib.arange(3.0), nn.Parameter(lib.ones(2)), lib.tensor([1, 2])], buf)
    buf.seek(0)
    a, p, i = lib.load(buf)
    assert a.tolist() == [0.0, 1.0, 2.0] and i.dtype == lib.int64
    assert type(p) is nn.Parameter and p.requires_grad


class _Evil:
    def __reduce__(self):
        return (print, ("this must not run",))


def test_weights_only_refuses_other_globals(lib, capsys):
    buf = io.BytesIO()
    lib.save(_Evil(), buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        lib.load(buf)
    assert capsys.readouterr().out == ""
    buf.seek(0)
    lib.load(buf, weights_only=False)
    assert "this must not run" in capsys.readouterr().out
