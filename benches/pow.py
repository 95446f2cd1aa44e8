"""pow (tensor and scalar exponents, scalar base) and norm(p=3) of ferrograd
against torch, float32 and float64, 1000x1000, forward and forward +
backward: both libraries in one process, interleaved (ferrograd, torch,
ferrograd, ..., with a pause before each sample so the other library's
spinning workers park), median of the repeats; the ratio is ferrograd's
time over torch's (lower is better).

    PYTHONPATH=python python benches/pow.py [--repeats 5] [--only a.pow(b)]
"""

import statistics

from bench_lib.interleaved import per_call, setup
from bench_lib.threads import set_thread_env

THREADS = "2"
set_thread_env(THREADS)

import ferrograd as fg
import numpy as np
import torch

# (name, op on the library and the tensors a (positive), b)
OPS = [
    ("a.pow(b)", lambda L, a, b: a.pow(b)),
    ("a.pow(2.5)", lambda L, a, b: a.pow(2.5)),
    ("2.5 ** a", lambda L, a, b: 2.5**a),
    ("norm(p=3)", lambda L, a, b: L.norm(b, p=3)),
]


def main():
    args = setup(fg, torch, THREADS, 1000, 5, lambda a: f"{a.n}x{a.n}")
    print(f"{'op':11s} {'dtype':8s} {'pass':7s} {'fg ms':>8s} {'torch ms':>9s} {'ratio':>6s}")
    only = set(args.only.split(",")) - {""}
    rng = np.random.default_rng(0)
    shape = (args.n, args.n)
    a_np = rng.uniform(0.1, 3.0, shape)
    b_np = rng.uniform(-3.0, 3.0, shape)
    for name, op in OPS:
        if only and name not in only:
            continue
        for dtype in ("float32", "float64"):
            libs = {}
            for key, L in (("fg", fg), ("torch", torch)):
                a = L.tensor(a_np.astype(dtype), requires_grad=True)
                b = L.tensor(b_np.astype(dtype), requires_grad=True)
                libs[key] = (L, a, b)
            # a check that both compute the same thing
            got = op(*libs["fg"]).detach().numpy()
            want = op(*libs["torch"]).detach().numpy()
            # norm: torch sums float32 in float32
            tol = (1e-3 if name.startswith("norm") else 1e-5) if dtype == "float32" else 1e-12
            np.testing.assert_allclose(got, want, rtol=tol, err_msg=name)

            def fwd(key, libs=libs, op=op):
                L, a, b = libs[key]
                with L.no_grad():
                    op(L, a, b)

            def fwd_bwd(key, libs=libs, op=op):
                L, a, b = libs[key]
                a.grad = None
                b.grad = None
                op(L, a, b).sum().backward()

            for label, run in (("fwd", fwd), ("fwd+bwd", fwd_bwd)):
                times = {"fg": [], "torch": []}
                for _ in range(args.repeats):
                    for key in ("fg", "torch"):
                        times[key].append(
                            per_call(lambda run=run, key=key: run(key), args.calls, args.pause)
                        )
                f, t = statistics.median(times["fg"]), statistics.median(times["torch"])
                print(
                    f"{name:11s} {dtype:8s} {label:7s} {f * 1e3:8.3f} {t * 1e3:9.3f} {f / t:6.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
