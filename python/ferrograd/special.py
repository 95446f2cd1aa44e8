"""torch.special: the special functions (from the Rust extension), under torch's names and aliases."""

from . import _C

_S = _C._special

bessel_j0 = _S.bessel_j0
bessel_j1 = _S.bessel_j1
bessel_y0 = _S.bessel_y0
bessel_y1 = _S.bessel_y1
chebyshev_polynomial_t = _S.chebyshev_polynomial_t
chebyshev_polynomial_u = _S.chebyshev_polynomial_u
chebyshev_polynomial_v = _S.chebyshev_polynomial_v
chebyshev_polynomial_w = _S.chebyshev_polynomial_w
digamma = _C.digamma
entr = _S.entr
erf = _C.erf
erfc = _C.erfc
erfcx = _S.erfcx
erfinv = _C.erfinv
exp2 = _C.exp2
expit = _C.sigmoid
expm1 = _C.expm1
gammainc = _S.gammainc
gammaincc = _S.gammaincc
gammaln = _C.lgamma
hermite_polynomial_h = _S.hermite_polynomial_h
hermite_polynomial_he = _S.hermite_polynomial_he
i0 = _C.i0
i0e = _S.i0e
i1 = _S.i1
i1e = _S.i1e
laguerre_polynomial_l = _S.laguerre_polynomial_l
legendre_polynomial_p = _S.legendre_polynomial_p
log1p = _C.log1p
log_ndtr = _S.log_ndtr
log_softmax = _C.log_softmax
logit = _C.logit
logsumexp = _C.logsumexp
modified_bessel_i0 = _S.modified_bessel_i0
modified_bessel_i1 = _S.modified_bessel_i1
modified_bessel_k0 = _S.modified_bessel_k0
modified_bessel_k1 = _S.modified_bessel_k1
multigammaln = _S.multigammaln
ndtr = _S.ndtr
ndtri = _S.ndtri
polygamma = _C.polygamma
psi = _C.digamma
round = _C.round
scaled_modified_bessel_k0 = _S.scaled_modified_bessel_k0
scaled_modified_bessel_k1 = _S.scaled_modified_bessel_k1
shifted_chebyshev_polynomial_t = _S.shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u = _S.shifted_chebyshev_polynomial_u
shifted_chebyshev_polynomial_v = _S.shifted_chebyshev_polynomial_v
shifted_chebyshev_polynomial_w = _S.shifted_chebyshev_polynomial_w
sinc = _C.sinc
softmax = _C.softmax
spherical_bessel_j0 = _S.spherical_bessel_j0
xlog1py = _S.xlog1py
xlogy = _C.xlogy
zeta = _S.zeta

__all__ = [
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammainc",
    "gammaincc",
    "gammaln",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "sinc",
    "softmax",
    "spherical_bessel_j0",
    "xlog1py",
    "xlogy",
    "zeta",
]
