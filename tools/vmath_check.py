"""Measures the float64 vmath functions against mpmath: reads the
`x f(x)` files that the ignored test `dump_for_mpmath` writes and prints
each function's largest error in ulps of the exact value.

    VMATH_DUMP=/tmp cargo test --release --lib dump_for_mpmath -- --ignored
    python tools/vmath_check.py /tmp
"""

import os
import sys

import mpmath as mp

mp.mp.dps = 40

EXACT = {
    "exp": mp.exp,
    "expm1": mp.expm1,
    "ln": mp.log,
    "ln1p": mp.log1p,
    "log2": lambda x: mp.log(x, 2),
    "log10": mp.log10,
    "tanh": mp.tanh,
    "sigmoid": lambda x: 1 / (1 + mp.exp(-x)),
    "silu": lambda x: x / (1 + mp.exp(-x)),
    "erf": mp.erf,
    "sin": mp.sin,
    "cos": mp.cos,
    "tan": mp.tan,
    "sin_big": mp.sin,
    "cos_big": mp.cos,
}


def ulp(v):
    """The float64 ulp at |v| (subnormal spacing below 2^-1022)."""
    v = abs(v)
    if v == 0:
        return mp.ldexp(1, -1074)
    e = int(mp.frexp(v)[1]) - 1  # v = m 2^(e+1), m in [0.5, 1)
    return mp.ldexp(1, max(e - 52, -1074))


def main(d):
    for name, f in EXACT.items():
        path = os.path.join(d, f"vmath_{name}.txt")
        if not os.path.exists(path):
            continue
        worst, at, n = mp.mpf(0), None, 0
        with open(path) as fh:
            for line in fh:
                a, b = line.split()
                x, got = float(a), float(b)
                t = f(mp.mpf(x))
                err = abs(mp.mpf(got) - t) / ulp(t)
                n += 1
                if err > worst:
                    worst, at = err, x
        print(f"{name:8s} {float(worst):6.3f} ulp max over {n} inputs (at x = {at!r})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp")
