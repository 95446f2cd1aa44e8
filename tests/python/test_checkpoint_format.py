"""`save`/`load` in torch's zip checkpoint format, both ways.

`data/torch_checkpoint.pt` was written by torch 2.13 (`torch.save` of a
dict holding a state dict with float32 (and a strided view sharing its
storage), float64, int64, bool, float16 tensors and a Parameter), so the
torch-to-ferrograd direction is tested without torch installed too."""

import io
import os
import pickle
import zipfile

import pytest

import ferrograd as fg

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_FILE = os.path.join(HERE, "data", "torch_checkpoint.pt")


def test_loads_a_checkpoint_written_by_torch():
    ck = fg.load(TORCH_FILE)
    assert ck["epoch"] == 3 and ck["name"] == "tiny"
    sd = ck["state"]
    assert list(sd) == ["weight", "weight_t", "bias", "steps", "mask", "half", "param"]
    w = sd["weight"]
    assert w.dtype == fg.float32 and w.tolist() == (fg.arange(12.0).reshape(3, 4) / 4).tolist()
    v = sd["weight_t"]
    assert v.shape == (3, 3) and v.stride() == (1, 4) and v.storage_offset() == 1
    assert v.tolist() == w.t()[1:].tolist()
    v[0, 0] = 100.0  # the view shares the storage, as in torch
    assert w[0, 1].item() == 100.0
    assert sd["bias"].dtype == fg.float64 and sd["bias"].tolist() == [0.5, -1.25, 3.0]
    assert sd["steps"].dtype == fg.int64 and sd["steps"].shape == () and sd["steps"].item() == 7
    assert sd["mask"].tolist() == [True, False, True]
    assert sd["half"].dtype == fg.float16 and sd["half"].tolist() == [1.5, -2.0, 65504.0]
    p = sd["param"]
    assert isinstance(p, fg.nn.Parameter) and p.requires_grad and p.tolist() == [1.0, 2.0]


def test_round_trip_and_archive_layout(tmp_path):
    x = fg.arange(12.0).reshape(3, 4)
    obj = {
        "a": x,
        "view": x[1:, ::2],
        "p": fg.nn.Parameter(fg.ones(2)),
        "i": fg.tensor([1, -2]),
        "b": fg.tensor([True]),
        "d": fg.zeros(2, dtype=fg.float64),
        "nested": [1, 2.5, "s", (None, b"raw")],
    }
    path = tmp_path / "ck.pt"
    fg.save(obj, path)
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        assert {"ck/data.pkl", "ck/byteorder", "ck/version", "ck/data/0"} <= names
        assert z.read("ck/byteorder") == b"little"
        # x and its view share one storage: 12 float32s
        assert len(z.read("ck/data/0")) == 48
    back = fg.load(path)
    assert back["a"].tolist() == x.tolist()
    assert back["view"].tolist() == x[1:, ::2].tolist() and back["view"].stride() == (4, 2)
    back["view"][0, 0] = -1.0
    assert back["a"][1, 0].item() == -1.0
    assert isinstance(back["p"], fg.nn.Parameter) and back["p"].requires_grad
    assert back["i"].tolist() == [1, -2] and back["b"].tolist() == [True]
    assert back["d"].dtype == fg.float64
    assert back["nested"] == [1, 2.5, "s", (None, b"raw")]


def test_file_objects_and_module_state_dicts():
    m = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.ReLU(), fg.nn.Linear(4, 2))
    buf = io.BytesIO()
    fg.save(m.state_dict(), buf)
    buf.seek(0)
    sd = fg.load(buf)
    m2 = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.ReLU(), fg.nn.Linear(4, 2))
    m2.load_state_dict(sd)
    x = fg.randn(5, 3)
    assert m2(x).tolist() == m(x).tolist()


def test_weights_only_refuses_code():
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo should-not-run",))

    buf = io.BytesIO()
    fg.save({"x": Evil()}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        fg.load(buf)


def test_old_plain_pickle_files_still_load(tmp_path):
    path = tmp_path / "old.pt"
    fg.save({"w": fg.ones(2)}, path, _use_new_zipfile_serialization=False)
    assert not zipfile.is_zipfile(path)
    assert fg.load(path)["w"].tolist() == [1.0, 1.0]


def test_bad_archives():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("x/other", b"")
    buf.seek(0)
    with pytest.raises(RuntimeError, match="data.pkl"):
        fg.load(buf)


# ----- with torch -----


def test_torch_loads_ferrograd_checkpoints(torch, tmp_path):
    m = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.ReLU(), fg.nn.Linear(4, 2))
    x = fg.arange(12.0).reshape(3, 4)
    path = tmp_path / "f.pt"
    fg.save({"model": m.state_dict(), "x": x, "xt": x.t(), "p": fg.nn.Parameter(fg.ones(2))}, path)
    ck = torch.load(path)  # weights_only=True in torch
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    tm.load_state_dict(ck["model"])
    inp = [[0.5, -1.0, 2.0]]
    assert tm(torch.tensor(inp)).tolist() == m(fg.tensor(inp)).tolist()
    assert ck["xt"].stride() == (1, 4)
    assert ck["xt"].untyped_storage().data_ptr() == ck["x"].untyped_storage().data_ptr()
    assert isinstance(ck["p"], torch.nn.Parameter)


def test_ferrograd_loads_torch_checkpoints(torch, tmp_path):
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
    tm(torch.ones(1, 3)).sum().backward()
    opt.step()
    path = tmp_path / "t.pt"
    torch.save({"model": tm.state_dict(), "optim": opt.state_dict()}, path)
    ck = fg.load(path)
    m = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.Tanh(), fg.nn.Linear(4, 2))
    m.load_state_dict(ck["model"])
    inp = [[0.5, -1.0, 2.0]]
    assert m(fg.tensor(inp)).tolist()[0] == pytest.approx(
        tm(torch.tensor(inp)).tolist()[0], abs=1e-6
    )
    mom = ck["optim"]["state"][0]["momentum_buffer"]
    assert mom.tolist() == opt.state_dict()["state"][0]["momentum_buffer"].tolist()


# ----- safetensors -----


def _hand_made_safetensors():
    """A file built by hand from the format's spec: an 8-byte header
    length, the JSON header, then the raw little-endian data."""
    import json
    import struct

    data = (
        struct.pack("<4f", 1.0, -2.0, 3.5, 0.25)
        + struct.pack("<2q", 7, -9)
        + struct.pack("<2e", 1.5, -0.5)
    )
    header = {
        "__metadata__": {"format": "pt"},
        "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
        "n": {"dtype": "I64", "shape": [2], "data_offsets": [16, 32]},
        "h": {"dtype": "F16", "shape": [2], "data_offsets": [32, 36]},
    }
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def test_safetensors_reads_the_format(tmp_path):
    from ferrograd.utils import safetensors

    path = tmp_path / "m.safetensors"
    path.write_bytes(_hand_made_safetensors())
    d = safetensors.load_file(path)
    assert sorted(d) == ["h", "n", "w"]
    assert d["w"].dtype == fg.float32 and d["w"].tolist() == [[1.0, -2.0], [3.5, 0.25]]
    assert d["n"].tolist() == [7, -9]
    assert d["h"].dtype == fg.float16 and d["h"].tolist() == [1.5, -0.5]
    assert safetensors.load_metadata(path) == {"format": "pt"}


def test_safetensors_round_trip(tmp_path):
    import json
    import struct

    from ferrograd.utils import safetensors

    x = fg.arange(6.0).reshape(2, 3)
    tensors = {
        "x_t": x.t(),
        "i": fg.tensor([1, 2]),
        "b": fg.tensor([True, False]),
        "d": fg.ones(1, dtype=fg.float64),
    }
    path = tmp_path / "out.safetensors"
    safetensors.save_file(tensors, path, metadata={"who": "ferrograd"})
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    assert header["x_t"]["dtype"] == "F32" and header["x_t"]["shape"] == [3, 2]
    assert header["b"]["dtype"] == "BOOL" and header["__metadata__"] == {"who": "ferrograd"}
    back = safetensors.load_file(path)
    assert back["x_t"].tolist() == x.t().tolist()  # written contiguous
    assert back["i"].tolist() == [1, 2] and back["b"].tolist() == [True, False]
    assert back["d"].dtype == fg.float64
    assert safetensors.load(safetensors.save({"a": fg.zeros(0)}))["a"].shape == (0,)
    with pytest.raises(TypeError):
        safetensors.save({"a": [1, 2]})
    with pytest.raises(RuntimeError):
        safetensors.load(b"\x00" * 4)
