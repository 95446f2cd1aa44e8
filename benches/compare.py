"""Side-by-side benchmark of ferrograd against torch (and numpy for kernels).

Each workload is a function of the library module ``L`` that uses only the
torch-compatible tensor + autograd API, so the same code runs on ferrograd and
on torch. The libraries run in the same process, interleaved (ferrograd,
torch, [numpy,] ferrograd, torch, ...), several repeats; the table shows the
median time per iteration and the ratio ferrograd/torch (lower is better).

    python benches/compare.py                    # full run, 2 threads
    python benches/compare.py --quick            # smoke test
    python benches/compare.py --only add,matmul --json out.json
    python benches/compare.py --wheel dist/ferrograd-0.1.0-*.whl

Benchmark a release build (an installed wheel, or ``_C.so`` pointing at
``target/release``): the script prints which extension it loaded and warns on
a debug build.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional


def _early_threads(argv) -> int:
    """Reads --threads from argv before numpy/torch are imported, so BLAS
    and OpenMP pools are sized from the start."""
    for i, arg in enumerate(argv):
        if arg == "--threads" and i + 1 < len(argv):
            return int(argv[i + 1])
        if arg.startswith("--threads="):
            return int(arg.split("=", 1)[1])
    return 2


if __name__ == "__main__":
    _n = str(_early_threads(sys.argv))
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _n

import numpy as np  # noqa: E402

FLOAT32 = np.float32


# ----------------------------------------------------------------------------
# Workload definitions
# ----------------------------------------------------------------------------


@dataclass
class Case:
    """One prepared workload for one library: ``run()`` does one iteration;
    ``result()`` returns numpy arrays to cross-check libraries (after one
    ``run()`` on fresh data)."""

    run: Callable[[], Any]
    result: Optional[Callable[[], list]] = None


@dataclass
class Workload:
    name: str
    title: str
    make: Callable  # make(L, quick) -> Case
    make_numpy: Optional[Callable] = None  # make_numpy(np, quick) -> Case
    ops: Optional[Callable[[bool], int]] = None  # ops per iteration (per-op time)
    nbytes: Optional[Callable[[bool], float]] = None  # bytes per iteration (GB/s)
    flops: Optional[Callable[[bool], float]] = None  # flops per iteration (GFLOP/s)
    note: str = ""


def _rng(seed=0):
    return np.random.default_rng(seed)


def _t(L, arr, requires_grad=False):
    """A float32 (or int64) tensor of library L from a numpy array, so every
    library starts from the same data."""
    t = L.from_numpy(np.ascontiguousarray(arr))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _np(t):
    return t.detach().numpy().copy()


# 1. per-op overhead without grad -------------------------------------------


def make_add(L, quick):
    r = _rng()
    a = _t(L, r.standard_normal(16, dtype=FLOAT32))
    b = _t(L, r.standard_normal(16, dtype=FLOAT32))
    out = {}

    def run():
        out["y"] = a + b

    return Case(run, lambda: [_np(out["y"])])


def make_add_numpy(np_, quick):
    r = _rng()
    a = r.standard_normal(16, dtype=FLOAT32)
    b = r.standard_normal(16, dtype=FLOAT32)
    out = {}

    def run():
        out["y"] = a + b

    return Case(run, lambda: [out["y"]])


# 2. per-op overhead with grad ------------------------------------------------


def make_add_grad(L, quick):
    r = _rng()
    a = _t(L, r.standard_normal(16, dtype=FLOAT32), True)
    b = _t(L, r.standard_normal(16, dtype=FLOAT32), True)

    def run():
        a.grad = None
        b.grad = None
        (a * b + a).sum().backward()

    return Case(run, lambda: [_np(a.grad), _np(b.grad)])


# 3. deep chain -----------------------------------------------------------------


def _chain_len(quick):
    return 300 if quick else 1000


def make_chain(L, quick):
    r = _rng()
    n = _chain_len(quick)
    x = _t(L, r.standard_normal(16, dtype=FLOAT32), True)
    w = _t(L, 1.0 + 0.01 * r.standard_normal(16, dtype=FLOAT32), True)
    b = _t(L, 0.01 * r.standard_normal(16, dtype=FLOAT32), True)

    def run():
        for p in (x, w, b):
            p.grad = None
        h = x
        for i in range(n):
            k = i % 3
            if k == 0:
                h = h * w
            elif k == 1:
                h = h + b
            else:
                h = h.tanh()
        h.sum().backward()

    return Case(run, lambda: [_np(x.grad), _np(w.grad), _np(b.grad)])


# 4. wide graph -----------------------------------------------------------------


def _wide_shape(quick):
    # (branches, depth, size)
    return (8, 10, 64) if quick else (32, 10, 256)


def make_wide(L, quick):
    r = _rng()
    nb, depth, n = _wide_shape(quick)
    scale = 1.0 / math.sqrt(n)
    xs = [_t(L, r.standard_normal((n, n), dtype=FLOAT32)) for _ in range(nb)]
    ws = [
        [_t(L, scale * r.standard_normal((n, n), dtype=FLOAT32), True) for _ in range(depth)]
        for _ in range(nb)
    ]

    def run():
        for branch in ws:
            for w in branch:
                w.grad = None
        sums = []
        for x, branch in zip(xs, ws):
            h = x
            for w in branch:
                h = (h @ w).tanh()
            sums.append(h.sum())
        L.stack(sums).sum().backward()

    return Case(run, lambda: [_np(ws[0][0].grad), _np(ws[-1][-1].grad)])


def _wide_flops(quick):
    nb, depth, n = _wide_shape(quick)
    return nb * depth * 3 * 2.0 * n**3  # forward + two backward matmuls


# 5. big elementwise -------------------------------------------------------------


def _big_n(quick):
    return 1_000_000 if quick else 10_000_000


def make_elementwise(L, quick):
    r = _rng()
    n = _big_n(quick)
    x = _t(L, r.standard_normal(n, dtype=FLOAT32))
    w = _t(L, r.standard_normal(n, dtype=FLOAT32), True)
    b = _t(L, r.standard_normal(n, dtype=FLOAT32), True)

    def run():
        w.grad = None
        b.grad = None
        ((x * w + b).tanh()).sum().backward()

    return Case(run, lambda: [_np(w.grad), _np(b.grad)])


def make_elementwise_numpy(np_, quick):
    """The same computation with a hand-written gradient (the floor an eager
    library can reach without fusing)."""
    r = _rng()
    n = _big_n(quick)
    x = r.standard_normal(n, dtype=FLOAT32)
    w = r.standard_normal(n, dtype=FLOAT32)
    b = r.standard_normal(n, dtype=FLOAT32)
    out = {}

    def run():
        y = np.tanh(x * w + b)
        out["s"] = y.sum()
        gb = 1.0 - y * y
        out["gw"] = gb * x
        out["gb"] = gb

    return Case(run, lambda: [out["gw"], out["gb"]])


def _elementwise_bytes(quick):
    # Traffic of the unfused eager ops, 4 bytes per element: forward mul (3N),
    # add (3N), tanh (2N), sum (N); backward tanh' (3N) and grad_w = g * x (3N).
    return 15 * 4.0 * _big_n(quick)


# 6. matmul ----------------------------------------------------------------------


def _mm_n(quick):
    return 256 if quick else 1024


def make_matmul(L, quick):
    r = _rng()
    n = _mm_n(quick)
    a = _t(L, r.standard_normal((n, n), dtype=FLOAT32), True)
    b = _t(L, r.standard_normal((n, n), dtype=FLOAT32), True)

    def run():
        a.grad = None
        b.grad = None
        (a @ b).sum().backward()

    return Case(run, lambda: [_np(a.grad), _np(b.grad)])


def make_matmul_numpy(np_, quick):
    r = _rng()
    n = _mm_n(quick)
    a = r.standard_normal((n, n), dtype=FLOAT32)
    b = r.standard_normal((n, n), dtype=FLOAT32)
    g = np.ones((n, n), dtype=FLOAT32)
    out = {}

    def run():
        out["c"] = a @ b
        out["ga"] = g @ b.T
        out["gb"] = a.T @ g

    return Case(run, lambda: [out["ga"], out["gb"]])


def _mm_flops(quick):
    return 3 * 2.0 * _mm_n(quick) ** 3


# 7. MLP training step --------------------------------------------------------------


def _mlp_dims(quick):
    return (64, [784, 512, 512, 10]) if quick else (256, [784, 512, 512, 10])


def make_mlp(L, quick):
    r = _rng()
    batch, dims = _mlp_dims(quick)
    x = _t(L, r.standard_normal((batch, dims[0]), dtype=FLOAT32))
    y = _t(L, r.integers(0, dims[-1], size=batch, dtype=np.int64))
    params = []
    for fan_in, fan_out in zip(dims[:-1], dims[1:]):
        bound = 1.0 / math.sqrt(fan_in)
        params.append(_t(L, r.uniform(-bound, bound, (fan_in, fan_out)).astype(FLOAT32), True))
        params.append(_t(L, r.uniform(-bound, bound, fan_out).astype(FLOAT32), True))
    lr = 0.01
    out = {}

    def run():
        h = x
        nlayers = len(params) // 2
        for i in range(nlayers):
            h = h @ params[2 * i] + params[2 * i + 1]
            if i < nlayers - 1:
                h = h.relu()
        logp = h.log_softmax(dim=1)
        loss = -logp.gather(1, y.unsqueeze(1)).mean()
        loss.backward()
        with L.no_grad():
            for p in params:
                p -= lr * p.grad
                p.grad = None
        out["loss"] = loss

    return Case(run, lambda: [_np(out["loss"])] + [_np(p) for p in params])


def _mlp_flops(quick):
    batch, dims = _mlp_dims(quick)
    return sum(3 * 2.0 * batch * i * o for i, o in zip(dims[:-1], dims[1:]))


# 8. custom Python Function -----------------------------------------------------------


def _scale_fn(L):
    class Scale(L.autograd.Function):
        """y = c * x, saving x (the typical ctx traffic of a custom Function)."""

        @staticmethod
        def forward(ctx, x, c):
            ctx.save_for_backward(x)
            ctx.c = c
            return x * c

        @staticmethod
        def backward(ctx, grad):
            (_x,) = ctx.saved_tensors
            return grad * ctx.c, None

    return Scale


def make_custom_fn(L, quick):
    Scale = _scale_fn(L)
    x = _t(L, _rng().standard_normal(16, dtype=FLOAT32), True)

    def run():
        x.grad = None
        Scale.apply(x, 2.0).sum().backward()

    return Case(run, lambda: [_np(x.grad)])


def make_custom_chain(L, quick):
    Scale = _scale_fn(L)
    n = _chain_len(quick)
    x = _t(L, _rng().standard_normal(16, dtype=FLOAT32), True)

    def run():
        x.grad = None
        h = x
        for i in range(n):
            h = Scale.apply(h, 1.001 if i % 2 else 0.999)
        h.sum().backward()

    return Case(run, lambda: [_np(x.grad)])


# 9. Hessian-vector product -------------------------------------------------------------


def make_hvp(L, quick):
    r = _rng()
    batch, d, hdim = 64, 64, 64
    x = _t(L, r.standard_normal((batch, d), dtype=FLOAT32))
    target = _t(L, r.standard_normal((batch, 1), dtype=FLOAT32))
    shapes = [(d, hdim), (hdim,), (hdim, 1), (1,)]
    params = [_t(L, (0.2 * r.standard_normal(s)).astype(FLOAT32), True) for s in shapes]
    vs = [_t(L, r.standard_normal(s, dtype=FLOAT32)) for s in shapes]
    out = {}

    def run():
        w1, b1, w2, b2 = params
        pred = (x @ w1 + b1).tanh() @ w2 + b2
        loss = (pred - target).pow(2).mean()
        grads = L.autograd.grad(loss, params, create_graph=True)
        dot = sum((g * v).sum() for g, v in zip(grads, vs))
        out["hv"] = L.autograd.grad(dot, params)

    return Case(run, lambda: [_np(h) for h in out["hv"]])


def make_jacobian(L, quick):
    """Issue 4: autograd.functional.jacobian of a 64 -> 64 function
    (reverse mode, one vjp per output row)."""
    r = _rng()
    n = 64
    x = _t(L, r.standard_normal(n, dtype=FLOAT32))
    w = _t(L, (r.standard_normal((n, n)) / 8).astype(FLOAT32))
    out = {}

    def f(v):
        return (w @ v).tanh() * v

    def run():
        out["j"] = L.autograd.functional.jacobian(f, x)

    return Case(run, lambda: [_np(out["j"])])


WORKLOADS = {
    w.name: w
    for w in [
        Workload("add", "1. a + b, 16 elem, no grad", make_add, make_add_numpy),
        Workload("add_grad", "2. (a*b+a).sum().backward(), 16 elem", make_add_grad),
        Workload(
            "chain",
            "3. chain of mul/add/tanh, 16 elem, fwd+bwd",
            make_chain,
            ops=_chain_len,
            note="time per op",
        ),
        Workload(
            "wide",
            "4. 32 branches x 10 (256x256 matmul+tanh), bwd",
            make_wide,
            flops=_wide_flops,
        ),
        Workload(
            "elementwise",
            "5. tanh(x*w+b).sum().backward(), 10M f32",
            make_elementwise,
            make_elementwise_numpy,
            nbytes=_elementwise_bytes,
        ),
        Workload(
            "matmul",
            "6. matmul 1024x1024 f32 fwd+bwd",
            make_matmul,
            make_matmul_numpy,
            flops=_mm_flops,
        ),
        Workload("mlp", "7. MLP 784-512-512-10 SGD step, batch 256", make_mlp, flops=_mlp_flops),
        Workload("custom_fn", "8a. custom Function apply+backward, 16 elem", make_custom_fn),
        Workload(
            "custom_chain",
            "8b. chain of custom Functions, fwd+bwd",
            make_custom_chain,
            ops=_chain_len,
            note="time per op",
        ),
        Workload("hvp", "9. HVP by double backward, 64-64-1 tanh MLP", make_hvp),
        Workload("jacobian", "jacobian of a 64->64 function (issue 4)", make_jacobian),
    ]
}


# ----------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------


def _time_n(fn, number):
    gc_was = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        return time.perf_counter() - t0
    finally:
        if gc_was:
            gc.enable()


def _calibrate(fn, target):
    """Warms fn up and returns how many calls make a sample of ~target s."""
    fn()
    number = 1
    while True:
        dt = _time_n(fn, number)
        if dt >= 0.2 * target or number >= 1_000_000:
            return max(1, int(round(number * target / max(dt, 1e-9))))
        number *= 10 if dt < 0.02 * target else 2


def _compare_results(ref, other):
    """Largest relative error between two lists of arrays."""
    worst = 0.0
    for a, b in zip(ref, other):
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            return float("inf")
        scale = max(np.abs(a).max(initial=0.0), 1e-6)
        worst = max(worst, float(np.abs(a - b).max(initial=0.0) / scale))
    return worst


def bench_workload(wl, libs, quick=False, repeats=7, target=0.25, check=True, pause=0.02):
    """Runs one workload on each library in ``libs`` (name -> module; the
    name "numpy" uses the workload's numpy version), interleaved.

    Returns a dict: {lib: {"median_s", "min_s", "samples", "number", ...}
    or {"error": str}}, plus "ratio" (ferrograd/torch) and "check".
    """
    cases = {}
    results: dict[str, Any] = {}
    for name, mod in libs.items():
        try:
            if name == "numpy":
                if wl.make_numpy is None:
                    continue
                cases[name] = wl.make_numpy(mod, quick)
            else:
                cases[name] = wl.make(mod, quick)
        except Exception as e:  # noqa: BLE001 - recorded in the table
            results[name] = {"error": f"{type(e).__name__}: {e}"}

    # Correctness cross-check on fresh data: one iteration each.
    outputs = {}
    for name, case in list(cases.items()):
        try:
            case.run()
            if check and case.result is not None:
                outputs[name] = case.result()
        except Exception as e:  # noqa: BLE001
            results[name] = {"error": f"{type(e).__name__}: {e}"}
            del cases[name]
    check_info = {}
    ref = outputs.get("torch", outputs.get("numpy"))
    if ref is not None and "ferrograd" in outputs:
        check_info["max_rel_err"] = _compare_results(ref, outputs["ferrograd"])
        check_info["ok"] = check_info["max_rel_err"] < 1e-3
        check_info["against"] = "torch" if "torch" in outputs else "numpy"

    numbers = {}
    for name, case in list(cases.items()):
        try:
            numbers[name] = _calibrate(case.run, target)
        except Exception as e:  # noqa: BLE001
            results[name] = {"error": f"{type(e).__name__}: {e}"}
            del cases[name]

    samples = {name: [] for name in cases}

    def sample(name):
        gc.collect()
        time.sleep(pause)  # lets the other library's idle workers park
        try:
            samples[name].append(_time_n(cases[name].run, numbers[name]) / numbers[name])
        except Exception as e:  # noqa: BLE001
            results[name] = {"error": f"{type(e).__name__}: {e}"}
            del cases[name]

    # ferrograd and torch interleaved; numpy (a reference floor) after them,
    # so OpenBLAS's spinning workers never overlap a ferrograd/torch sample.
    for _ in range(repeats):
        for name in [n for n in cases if n != "numpy"]:
            if name in cases:
                sample(name)
    if "numpy" in cases:
        for _ in range(repeats):
            if "numpy" in cases:
                sample("numpy")
        time.sleep(0.2)
    for name in cases:
        med = statistics.median(samples[name])
        res = {
            "median_s": med,
            "min_s": min(samples[name]),
            "samples": samples[name],
            "number": numbers[name],
        }
        if wl.ops is not None:
            res["per_op_s"] = med / wl.ops(quick)
        if wl.nbytes is not None:
            res["gbps"] = wl.nbytes(quick) / med / 1e9
        if wl.flops is not None:
            res["gflops"] = wl.flops(quick) / med / 1e9
        results[name] = res
    cases.clear()
    gc.collect()

    fg, th = results.get("ferrograd", {}), results.get("torch", {})
    ratio = None
    pair_ratios = None
    if "median_s" in fg and "median_s" in th:
        ratio = fg["median_s"] / th["median_s"]
        # Sample i of each library ran back to back: their ratio is free of
        # the machine's slower drifts, so the spread of these ratios shows
        # how much the headline ratio (of the medians) can move by chance.
        pair_ratios = sorted(a / b for a, b in zip(fg["samples"], th["samples"]))
    return {
        "title": wl.title,
        "results": results,
        "ratio": ratio,
        "pair_ratios": pair_ratios,
        "check": check_info,
    }


# ----------------------------------------------------------------------------
# Physical-limit probes
# ----------------------------------------------------------------------------


def _best_of(fn, reps):
    fn()
    return min(_time_n(fn, 1) for _ in range(reps))


def probe_bandwidth(quick, torch=None, fg=None):
    n = (8 if quick else 64) * 1024 * 1024 // 8 * 4  # float64 elements
    reps = 3 if quick else 7
    a = np.zeros(n)
    b = np.ones(n)
    c = np.full(n, 2.0)
    s = 3.0
    out = {"array_mb": n * 8 / 1e6}
    # STREAM's convention: copy moves 2 arrays, triad 3 (no write-allocate).
    out["numpy_copy_gbps"] = 2 * 8 * n / _best_of(lambda: np.copyto(a, b), reps) / 1e9

    def triad():
        np.multiply(c, s, out=a)
        np.add(a, b, out=a)

    out["numpy_triad_gbps"] = 3 * 8 * n / _best_of(triad, reps) / 1e9
    if torch is not None:
        ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)
        out["torch_copy_gbps"] = 2 * 8 * n / _best_of(lambda: ta.copy_(tb), reps) / 1e9
        out["torch_triad_gbps"] = (
            3 * 8 * n / _best_of(lambda: torch.add(tb, tc, alpha=s, out=ta), reps) / 1e9
        )
    if fg is not None:
        fa, fb = fg.from_numpy(a), fg.from_numpy(b)
        out["ferrograd_copy_gbps"] = 2 * 8 * n / _best_of(lambda: fa.copy_(fb), reps) / 1e9
    out["limit_gbps"] = max(v for k, v in out.items() if k.endswith("_gbps"))
    return out


def probe_gemm(quick, torch=None, fg=None):
    """Best achieved float32 GEMM rate (2 n^3 / time, best of a few) of
    numpy, torch and ferrograd itself: the achieved peak of this machine."""
    n = 512 if quick else 2048
    reps = 3 if quick else 5
    r = _rng()
    a = r.standard_normal((n, n), dtype=FLOAT32)
    b = r.standard_normal((n, n), dtype=FLOAT32)
    flops = 2.0 * n**3
    out = {"n": n, "numpy_gflops": flops / _best_of(lambda: a @ b, reps) / 1e9}
    time.sleep(0.2)  # OpenBLAS workers spin a while after a call
    for name, mod in (("torch", torch), ("ferrograd", fg)):
        if mod is not None:
            ta, tb = mod.from_numpy(a), mod.from_numpy(b)
            out[f"{name}_gflops"] = flops / _best_of(lambda: ta @ tb, reps) / 1e9
    out["limit_gflops"] = max(v for k, v in out.items() if k.endswith("_gflops"))
    return out


# ----------------------------------------------------------------------------
# Fresh-process measurements: import time and peak RSS
# ----------------------------------------------------------------------------


def _child_env(fg_module):
    env = dict(os.environ)
    if fg_module is not None:
        pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(fg_module.__file__)))
        env["PYTHONPATH"] = pkg_root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def measure_import(lib, env, runs):
    code = (
        "import time; t0 = time.perf_counter(); import {0}; print(time.perf_counter() - t0)".format(
            lib
        )
    )
    times = []
    for i in range(runs + 1):
        p = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        if i > 0:  # the first run warms the file cache
            times.append(float(p.stdout.strip().splitlines()[-1]))
    return {"median_s": statistics.median(times), "samples": times}


def _peak_rss_mb():
    """Peak resident set size of this process, in MB.

    Linux keeps ``getrusage().ru_maxrss`` across ``execve``, so a child
    spawned by a large parent reports the parent's peak; ``VmHWM`` in
    /proc/self/status belongs to the new address space only, so it is used
    where it exists, with getrusage as the fallback.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child_rss(lib, quick, threads):
    """Child-process entry: import lib, run the MLP workload, print RSS (MB)."""
    mod = __import__(lib)
    mod.set_num_threads(threads)
    after_import = _peak_rss_mb()
    case = make_mlp(mod, quick)
    for _ in range(5):
        case.run()
    peak = _peak_rss_mb()
    print(json.dumps({"import_rss_mb": after_import, "peak_rss_mb": peak}))


def measure_rss(lib, env, quick, threads):
    args = [sys.executable, os.path.abspath(__file__), "--_child-rss", lib]
    args += ["--threads", str(threads)] + (["--quick"] if quick else [])
    p = subprocess.run(args, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------
# Machine description
# ----------------------------------------------------------------------------


def machine_info(threads, fg, torch):
    cpu = platform.processor() or platform.machine()
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    simd = [f for f in ("avx2", "fma", "avx512f") if f in flags]
    info = {
        "cpu": cpu,
        "simd": simd,
        "logical_cpus": os.cpu_count(),
        "threads": threads,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "loadavg_start": list(os.getloadavg()),
    }
    if hasattr(os, "sched_getaffinity"):
        info["usable_cpus"] = len(os.sched_getaffinity(0))
    if fg is not None:
        so = os.path.realpath(fg._C.__file__)
        info["ferrograd"] = getattr(fg, "__version__", "?")
        info["ferrograd_ext"] = so
        info["ferrograd_build"] = "debug" if "/debug/" in so else "release"
        info["ferrograd_threads"] = fg.get_num_threads()
    if torch is not None:
        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    return info


# ----------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------


def _fmt_time(s):
    if s is None:
        return "-"
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.3f} s"


def _cell(res, wl_ops):
    if res is None:
        return "-"
    if "error" in res:
        return "ERROR"
    t = res.get("per_op_s") if wl_ops else res["median_s"]
    return _fmt_time(t)


def _extra(res, probes):
    if not res or "error" in res:
        return ""
    parts = []
    if "gbps" in res:
        s = f"{res['gbps']:.1f} GB/s"
        lim = probes.get("bandwidth", {}).get("limit_gbps")
        if lim:
            s += f" ({100 * res['gbps'] / lim:.0f}% bw)"
        parts.append(s)
    if "gflops" in res:
        s = f"{res['gflops']:.1f} GFLOP/s"
        lim = probes.get("gemm", {}).get("limit_gflops")
        if lim:
            s += f" ({100 * res['gflops'] / lim:.0f}% peak)"
        parts.append(s)
    return ", ".join(parts)


# Issue 6's targets for the ratio ferrograd/torch (same run, median).
TARGETS = {
    "add": 0.35,
    "add_grad": 0.35,
    "chain": 0.5,
    "wide": 0.7,
    "elementwise": 1.0,
    "matmul": 1.2,
    "mlp": 1.0,
    "custom_fn": 0.5,
    "custom_chain": 0.5,
    "hvp": 0.7,
    "import": 0.1,
    "rss": 0.5,
}


def _pairs_cell(pairs):
    """The range of the per-repeat ratios (see ``bench_workload``)."""
    if not pairs:
        return ""
    return f"{pairs[0]:.2f}-{pairs[-1]:.2f}"


def _target_cell(name, ratio):
    t = TARGETS.get(name)
    if t is None or ratio is None:
        return ""
    return f"<= {t:g} " + ("ok" if ratio <= t else "MISS")


def fresh_process_ratios(report):
    """Ratios ferrograd/torch of the fresh-process measurements."""
    out = {}
    fp = report.get("fresh_process", {})
    imp = fp.get("import", {})
    if "ferrograd" in imp and "torch" in imp:
        out["import"] = imp["ferrograd"]["median_s"] / imp["torch"]["median_s"]
    rss = fp.get("rss", {})
    if "peak_rss_mb" in rss.get("ferrograd", {}) and "peak_rss_mb" in rss.get("torch", {}):
        out["rss"] = rss["ferrograd"]["peak_rss_mb"] / rss["torch"]["peak_rss_mb"]
    return out


def format_table(report):
    header = (
        "workload",
        "ferrograd",
        "torch",
        "numpy",
        "fg/torch",
        "pairs",
        "target",
        "ferrograd rate",
    )
    rows = [header]
    errors = []
    probes = report.get("probes", {})
    for name, w in report["workloads"].items():
        res = w["results"]
        per_op = WORKLOADS[name].ops is not None
        title = w["title"] + (" (per op)" if per_op else "")
        ratio = f"{w['ratio']:.2f}" if w["ratio"] is not None else "-"
        chk = w.get("check", {})
        if chk and not chk.get("ok", True):
            ratio += " MISMATCH"
        rows.append(
            (
                title,
                _cell(res.get("ferrograd"), per_op),
                _cell(res.get("torch"), per_op),
                _cell(res.get("numpy"), per_op),
                ratio,
                _pairs_cell(w.get("pair_ratios")),
                _target_cell(name, w["ratio"]),
                _extra(res.get("ferrograd"), probes),
            )
        )
        for lib, r in res.items():
            if "error" in r:
                errors.append(f"{name} [{lib}]: {r['error']}")
    fp = report.get("fresh_process", {})
    ratios = fresh_process_ratios(report)
    imp = fp.get("import", {})
    if imp:
        fgi, thi = imp.get("ferrograd"), imp.get("torch")
        r = ratios.get("import")
        rows.append(
            (
                "10a. import time (fresh process)",
                _fmt_time(fgi["median_s"]) if fgi else "-",
                _fmt_time(thi["median_s"]) if thi else "-",
                "",
                f"{r:.3f}" if r is not None else "-",
                "",
                _target_cell("import", r),
                "",
            )
        )
    rss = fp.get("rss", {})
    if rss:

        def mb(r):
            return f"{r['peak_rss_mb']:.0f} MB" if "peak_rss_mb" in r else "-"

        r = ratios.get("rss")
        rows.append(
            (
                "10b. peak RSS of the MLP step (fresh process)",
                mb(rss.get("ferrograd", {})),
                mb(rss.get("torch", {})),
                "",
                f"{r:.2f}" if r is not None else "-",
                "",
                _target_cell("rss", r),
                "",
            )
        )
        for lib, r in rss.items():
            if "error" in r:
                errors.append(f"rss [{lib}]: {r['error']}")
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for i, r in enumerate(rows):
        cells = [c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths))]
        lines.append("| " + " | ".join(cells) + " |")
        if i == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    out = "\n".join(lines)
    if errors:
        out += "\n\nErrors:\n" + "\n".join("  " + e for e in errors)
    return out


def format_header(report):
    m = report["machine"]
    lines = [
        f"CPU: {m['cpu']} ({', '.join(m['simd']) or 'no AVX2'}), "
        f"{m['logical_cpus']} logical CPUs"
        + (f", {m['usable_cpus']} usable" if "usable_cpus" in m else ""),
        f"threads: {m['threads']} (ferrograd.get_num_threads()={m.get('ferrograd_threads', '-')}, "
        f"torch.get_num_threads()={m.get('torch_threads', '-')})",
        f"python {m['python']}, numpy {m['numpy']}, torch {m.get('torch', '-')}, "
        f"ferrograd {m.get('ferrograd', '-')} [{m.get('ferrograd_build', '-')}: "
        f"{m.get('ferrograd_ext', '-')}]",
        f"load average: start {m['loadavg_start']}, end {m.get('loadavg_end', '-')}",
        f"repeats: {report['config']['repeats']}, median per iteration; quick={report['config']['quick']}; "
        "fg/torch: ratio of the medians; pairs: range of the ratios of back-to-back samples",
    ]
    p = report.get("probes", {})
    if "bandwidth" in p:
        bw = p["bandwidth"]
        lines.append(
            "memory bandwidth: "
            + ", ".join(f"{k[:-5]} {v:.1f} GB/s" for k, v in bw.items() if k.endswith("_gbps"))
        )
    if "gemm" in p:
        g = p["gemm"]
        lines.append(
            f"GEMM {g['n']}x{g['n']} f32: "
            + ", ".join(f"{k[:-7]} {v:.1f} GFLOP/s" for k, v in g.items() if k.endswith("_gflops"))
        )
    if "wheel" in report:
        w = report["wheel"]
        lines.append(f"wheel: {os.path.basename(w['path'])} = {w['mb']:.2f} MB (target < 10 MB)")
    return "\n".join(lines)


# ----------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------


def _import_libs(no_torch=False):
    libs = {}
    import ferrograd

    libs["ferrograd"] = ferrograd
    if not no_torch:
        try:
            import torch

            libs["torch"] = torch
        except ImportError:
            pass
    return libs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, smaller sizes")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default=None, help="comma-separated workload names")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--json", default=None, metavar="PATH")
    ap.add_argument("--wheel", default=None, metavar="PATH", help="report this wheel's size")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-probes", action="store_true")
    ap.add_argument("--no-subprocess", action="store_true", help="skip import time / RSS")
    ap.add_argument("--list", action="store_true", help="list workload names")
    ap.add_argument("--_child-rss", dest="child_rss", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.list:
        for name, wl in WORKLOADS.items():
            print(f"{name:14s} {wl.title}")
        print(f"{'import':14s} 10a. import time (fresh process)")
        print(f"{'rss':14s} 10b. peak RSS of the MLP step (fresh process)")
        print(f"{'probes':14s} memory bandwidth and GEMM probes")
        return 0
    if args.child_rss:
        _child_rss(args.child_rss, args.quick, args.threads)
        return 0

    names = list(WORKLOADS) + ["import", "rss", "probes"]
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in WORKLOADS and n not in ("import", "rss", "probes")]
        if unknown:
            ap.error(f"unknown workload(s): {', '.join(unknown)} (see --list)")

    libs = _import_libs(args.no_torch)
    fg, torch = libs["ferrograd"], libs.get("torch")
    fg.set_num_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    repeats = args.repeats or (3 if args.quick else 7)
    target = 0.05 if args.quick else 0.25

    report = {
        "machine": machine_info(args.threads, fg, torch),
        "config": {"quick": args.quick, "repeats": repeats, "sample_target_s": target},
        "workloads": {},
        "probes": {},
        "fresh_process": {},
    }
    if report["machine"].get("ferrograd_build") == "debug":
        print("WARNING: ferrograd is a debug build; numbers are meaningless.", file=sys.stderr)
    print(format_header(report), flush=True)

    if "probes" in names and not args.no_probes:
        report["probes"]["bandwidth"] = probe_bandwidth(args.quick, torch, fg)
        report["probes"]["gemm"] = probe_gemm(args.quick, torch, fg)

    run_libs = dict(libs)
    run_libs["numpy"] = np
    for name in names:
        if name not in WORKLOADS:
            continue
        res = bench_workload(WORKLOADS[name], run_libs, args.quick, repeats, target)
        report["workloads"][name] = res
        r = res["results"]
        print(
            f"  {name}: "
            + ", ".join(
                f"{lib} {_fmt_time(v.get('median_s')) if 'error' not in v else 'ERROR'}"
                for lib, v in r.items()
            )
            + (f", ratio {res['ratio']:.2f}" if res["ratio"] is not None else ""),
            flush=True,
        )

    if not args.no_subprocess:
        env = _child_env(fg)
        sub_libs = ["ferrograd"] + (["torch"] if torch is not None else [])
        if "import" in names:
            runs = 3 if args.quick else 7
            report["fresh_process"]["import"] = {
                lib: measure_import(lib, env, runs) for lib in sub_libs
            }
        if "rss" in names:
            report["fresh_process"]["rss"] = {
                lib: measure_rss(lib, env, args.quick, args.threads) for lib in sub_libs
            }

    if args.wheel:
        report["wheel"] = {"path": args.wheel, "mb": os.path.getsize(args.wheel) / 1e6}
    report["machine"]["loadavg_end"] = list(os.getloadavg())
    report["fresh_process"]["ratios"] = fresh_process_ratios(report)

    print()
    print(format_header(report))
    print()
    print(format_table(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
        print(f"\nJSON written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
