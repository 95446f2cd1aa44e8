"""Derives the constants of src/kernels/unary/vmath (minimax polynomials by
Remez exchange in mpmath, and the split constants of the argument
reductions) and prints them as Rust. Run with a Python that has mpmath:

    python tools/vmath_fit.py > /tmp/constants.rs

The printed values are pasted into vmath/f32.rs and vmath/f64.rs; each
polynomial's comment there names its interval and its fitted error."""

import numpy as np
from remez import remez, mp

tiny = mp.mpf("1e-25")


def q_expm1(r):  # (e^r - 1 - r - r^2/2) / r^3
    if abs(r) < mp.mpf("1e-12"):
        return mp.mpf(1) / 6 + r / 24 + r * r / 120
    return (mp.exp(r) - 1 - r - r * r / 2) / r**3


def g_log(z):  # R(z) / z with R = 2 atanh(s) / s - 2, z = s^2
    if z < tiny:
        return mp.mpf(2) / 3 + 2 * z / 5
    s = mp.sqrt(z)
    return (2 * mp.atanh(s) / s - 2) / z


def s_sin(z):  # (sin r - r) / r^3, z = r^2
    if z < tiny:
        return -mp.mpf(1) / 6 + z / 120
    r = mp.sqrt(z)
    return (mp.sin(r) - r) / r**3


def c_cos(z):  # (cos r - 1 + r^2/2) / r^4, z = r^2
    if z < tiny:
        return mp.mpf(1) / 24 - z / 720
    r = mp.sqrt(z)
    return (mp.cos(r) - 1 + z / 2) / z**2


def p_erf(z):  # erf(x) / x, z = x^2
    if z < tiny:
        return 2 / mp.sqrt(mp.pi) * (1 - z / 3)
    r = mp.sqrt(z)
    return mp.erf(r) / r


def e_erfc(x):  # e^(x^2) erfc(x)
    return mp.erfc(x) * mp.exp(x * x)


def w_erfc(x):  # an error of E costs e^-x^2 E'err in erf = 1 - e^-x^2 E
    return mp.exp(-x * x) / mp.erf(x)


def rel(f):
    return lambda x: 1 / abs(f(x))


def round_to(v, bits):
    with mp.workprec(bits):
        return float(+mp.mpf(v))


def lit(v, bits):
    if bits == 24:
        return repr(np.float32(v)).replace("np.float32(", "").rstrip(")")
    return repr(float(v))


def show(name, coeffs, err, bits, what):
    ty = "f32" if bits == 24 else "f64"
    print(f"/// {what}; max weighted error 2^{float(mp.log(err, 2)):.1f}.")
    print(f"const {name}: [{ty}; {len(coeffs)}] = [")
    for c in coeffs:
        print(f"    {lit(round_to(c, bits), bits)},")
    print("];")


def fit(name, f, w, a, b, n, bits, what, center=None):
    basis = None
    if center is not None:
        c0 = mp.mpf(center)
        basis = lambda k, x: (x - c0) ** k
    c, e = remez(f, w, a, b, n, basis=basis, grid=1500)
    show(name, c, e, bits, what)


def split(v, parts, bits, first_bits=None):
    out, rest = [], mp.mpf(v)
    for i in range(parts):
        p = round_to(rest, first_bits if (i == 0 and first_bits) else bits)
        out.append(p)
        rest -= mp.mpf(p)
    return out


if __name__ == "__main__":
    pi2 = mp.pi / 2
    print("// float64")
    print("// pi/2 in three parts:", [repr(v) for v in split(pi2, 3, 53)])
    print("// ln 2 in two parts (exp):", [repr(v) for v in split(mp.log(2), 2, 53)])
    print("// ln 2, 32-bit high part (log):", [repr(v) for v in split(mp.log(2), 2, 53, 32)])
    print("// log10(2), 32-bit high part:", [repr(v) for v in split(mp.log10(2), 2, 53, 32)])
    fit(
        "EXPM1_Q",
        q_expm1,
        rel(q_expm1),
        -0.3466,
        0.3466,
        10,
        53,
        "(e^r - 1 - r - r^2/2) / r^3 on |r| <= 0.3466, relative",
    )
    fit(
        "LOG_R",
        g_log,
        rel(g_log),
        0,
        0.02944,
        7,
        53,
        "(2 atanh(s) / s - 2) / s^2 in z = s^2 <= 0.02944, relative",
    )
    fit(
        "SIN_S",
        s_sin,
        rel(s_sin),
        0,
        0.617,
        6,
        53,
        "(sin r - r) / r^3 in z = r^2 <= 0.617, relative",
    )
    fit(
        "COS_C",
        c_cos,
        rel(c_cos),
        0,
        0.617,
        6,
        53,
        "(cos r - 1 + r^2/2) / r^4 in z = r^2 <= 0.617, relative",
    )
    fit(
        "ERF_P",
        p_erf,
        rel(p_erf),
        0,
        mp.mpf(0.875) ** 2,
        11,
        53,
        "erf(x) / x in z = x^2 <= 0.875^2, relative",
    )
    fit(
        "ERFC_E",
        e_erfc,
        w_erfc,
        0.875,
        6,
        22,
        53,
        "e^(x^2) erfc(x) in powers of x - 3.4375 on [0.875, 6], error in erf",
        center=3.4375,
    )
    print("// float32")
    print("// pi/2 in three parts:", [lit(v, 24) for v in split(pi2, 3, 24)])
    print("// log10(2), 12-bit high part:", [lit(v, 24) for v in split(mp.log10(2), 2, 24, 12)])
    fit(
        "EXPM1_Q",
        q_expm1,
        rel(q_expm1),
        -0.3466,
        0.3466,
        5,
        24,
        "(e^r - 1 - r - r^2/2) / r^3 on |r| <= 0.3466, relative",
    )
    fit(
        "SIN_S",
        s_sin,
        rel(s_sin),
        0,
        0.617,
        3,
        24,
        "(sin r - r) / r^3 in z = r^2 <= 0.617, relative",
    )
    fit(
        "COS_C",
        c_cos,
        rel(c_cos),
        0,
        0.617,
        3,
        24,
        "(cos r - 1 + r^2/2) / r^4 in z = r^2 <= 0.617, relative",
    )
    fit(
        "ERF_P",
        p_erf,
        rel(p_erf),
        0,
        mp.mpf(0.875) ** 2,
        7,
        24,
        "erf(x) / x in z = x^2 <= 0.875^2, relative",
    )
    fit(
        "ERFC_E",
        e_erfc,
        w_erfc,
        0.875,
        4,
        10,
        24,
        "e^(x^2) erfc(x) in powers of x - 2.4375 on [0.875, 4], error in erf",
        center=2.4375,
    )
