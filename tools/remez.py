"""Minimax (Remez exchange) polynomial fits in mpmath, for the constants in
src/kernels/unary/vmath. Run: python tools/vmath_fit.py (which imports this)."""

import mpmath as mp

mp.mp.dps = 50


def remez(f, w, a, b, n, basis=None, iters=40, grid=3000, tol=1e-4, verbose=False):
    """Coefficients c[0..n) minimising max |w(x) (f(x) - sum c_k basis(k, x))|
    over [a, b] (basis defaults to x^k). Returns (coefficients, max weighted
    error)."""
    a, b = mp.mpf(a), mp.mpf(b)
    if basis is None:
        basis = lambda k, x: x**k
    m = n + 1
    xs = [(a + b) / 2 - (b - a) / 2 * mp.cos(mp.pi * i / (m - 1)) for i in range(m)]
    # dense grid, Chebyshev-clustered at the ends
    G = [(a + b) / 2 - (b - a) / 2 * mp.cos(mp.pi * (i + 0.5) / grid) for i in range(grid)]
    G = [a] + G + [b]
    fG = [f(x) for x in G]
    wG = [w(x) for x in G]
    bG = [[basis(k, x) for k in range(n)] for x in G]
    best = None
    for it in range(iters):
        A = mp.matrix(m, m)
        rhs = mp.matrix(m, 1)
        for i, x in enumerate(xs):
            for k in range(n):
                A[i, k] = basis(k, x)
            A[i, n] = (-1) ** i / w(x)
            rhs[i] = f(x)
        sol = mp.lu_solve(A, rhs)
        c = [sol[k] for k in range(n)]
        E = abs(sol[n])
        err = [wG[j] * (fG[j] - mp.fsum(c[k] * bG[j][k] for k in range(n))) for j in range(len(G))]
        # extrema of each run of one sign
        ext = []
        j = 0
        while j < len(G):
            s = mp.sign(err[j])
            best_j = j
            while j < len(G) and mp.sign(err[j]) == s:
                if abs(err[j]) > abs(err[best_j]):
                    best_j = j
                j += 1
            ext.append(best_j)
        emax = max(abs(e) for e in err)
        if best is None or emax < best[1]:
            best = (c, emax)
        if verbose:
            print(it, mp.nstr(E, 5), mp.nstr(emax, 5), len(ext))
        if len(ext) < m:
            break
        # choose m consecutive extrema holding the largest
        jmax = max(range(len(ext)), key=lambda i: abs(err[ext[i]]))
        lo = min(max(0, jmax - m // 2), len(ext) - m)
        # prefer the window with the largest minimum
        cands = []
        for s in range(0, len(ext) - m + 1):
            if s <= jmax < s + m:
                cands.append((min(abs(err[ext[i]]) for i in range(s, s + m)), s))
        lo = max(cands)[1] if cands else lo
        xs = [G[ext[i]] for i in range(lo, lo + m)]
        if emax / E - 1 < tol:
            break
    return best


def hexf(v):
    return float(v).hex()
