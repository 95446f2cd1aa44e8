//! `torch.special`'s functions that torch's top level lacks (or has under
//! another name): the gamma family, erfcx, the normal distribution, the
//! Bessel functions, entr, logit, xlog1py, zeta, the incomplete gamma
//! functions and the orthogonal polynomials; lgamma, digamma and i0 are
//! torch top-level ops with in-place forms and so rows of the unary table
//! (`special_more_ops!`). Scalar kernels: `kernels::special_math`.
//!
//! | op              | d/dself                                       |
//! |-----------------|-----------------------------------------------|
//! | lgamma          | grad * digamma(x)                             |
//! | digamma         | grad * polygamma(1, x)                        |
//! | polygamma(n, x) | grad * polygamma(n + 1, x)                    |
//! | i0              | grad * i1(x)                                  |
//! | i0e             | grad * (i1e(x) - sgn(x) i0e(x))               |
//! | i1              | grad * (i0(x) - i1(x) / x), 1/2 at 0          |
//! | i1e             | grad * (i0e(x) - i1e(x) (sgn(x) + 1/x)), 1/2 at 0 |
//! | erfcx           | grad * (2 x erfcx(x) - 2/sqrt(pi))            |
//! | ndtr            | grad * exp(-x^2/2) / sqrt(2 pi)               |
//! | ndtri           | grad * sqrt(2 pi) exp(ndtri(x)^2 / 2)         |
//! | log_ndtr        | grad * exp(-x^2/2 - log_ndtr(x)) / sqrt(2 pi) |
//! | entr            | grad * -(1 + ln x)                            |
//! | xlog1py         | xlog1py(grad, y) (0 where x = 0, y <= -1); grad x / (1 + y) |
//! | zeta(x, q)      | x: not implemented (as torch); q: -grad x zeta(x + 1, q) |
//! | gammainc(a, x)  | a: not implemented; x: grad exp((a-1) ln x - x - lgamma(a)) |
//!
//! The Bessel functions J/Y/K, spherical_bessel_j0 and the polynomials have
//! no derivative in torch: their backward raises torch's error.

use super::unary::{define_unary_float_ops, float_map, float_map2};
use crate::autograd::record;
use crate::kernels::special_math::{self as sm, Poly, ViaF64};
use crate::tensor::{DType, Scalar, Tensor};
use crate::{bail, Error, Result};
use std::f64::consts::PI;

const SQRT_2PI: f64 = 2.506_628_274_631_000_5;

fn not_differentiable(name: &str) -> Error {
    Error::runtime(format!("the derivative for '{name}' is not implemented."))
}

/// The torch top-level ops of this family (see `unary.rs` for the grammar).
macro_rules! special_more_ops {
    ($then:ident) => {
        $then! {
            /// The log of the absolute value of the gamma function.
            lgamma, lgamma_ []: "LgammaBackward0", each(|v| v.via(sm::lgamma)), Input, pos,
                |g, x| g.mul(&x.digamma()?);
            /// The logarithmic derivative of the gamma function.
            digamma, digamma_ []: "DigammaBackward0", each(|v| v.via(sm::digamma)), Input, pos,
                |g, x| g.mul(&x.polygamma(1)?);
            /// The modified Bessel function of the first kind of order 0.
            i0, i0_ []: "I0Backward0", each(|v| v.via(sm::i0)), Input, normal,
                |g, x| g.mul(&x.special_i1()?);
        }
    };
}
#[cfg_attr(not(feature = "python"), allow(unused_imports))]
pub(crate) use special_more_ops;

special_more_ops!(define_unary_float_ops);

/// Unary special functions recorded with a derivative written from the
/// saved input `x` and result `r` (`Err` for torch's non-differentiable
/// ones).
macro_rules! special_unary {
    ($( $(#[doc = $doc:literal])* $name:ident: $node:literal, $f:path,
        |$g:ident, $x:ident, $r:ident| $der:expr; )*) => {
        impl Tensor {
            $(
                $(#[doc = $doc])*
                pub fn $name(&self) -> Result<Tensor> {
                    let rec = record($node, &[self]);
                    let out = float_map!(self, |v| v.via($f));
                    rec.save("self", self).save_output("result", 0).finish(out, |c| {
                        let ($g, $x, $r) = (c.grad(), c.saved(0)?, c.saved(1)?);
                        let _ = (&$g, &$x, &$r);
                        Ok(vec![Some($der?)])
                    })
                }
            )*
        }
    };
}

fn half_at_zero(x: &Tensor, v: Tensor) -> Result<Tensor> {
    let half = Tensor::full(&[], Scalar::Float(0.5), v.dtype());
    Tensor::where_cond(&x.eq_scalar(0)?, &half, &v)
}

special_unary! {
    /// `exp(x^2) erfc(x)`.
    special_erfcx: "SpecialErfcxBackward0", sm::erfcx,
        |g, x, r| g.mul(&x.mul(&r)?.mul_scalar(2.0)?.sub_scalar(2.0 / PI.sqrt())?);
    /// The standard normal CDF.
    special_ndtr: "SpecialNdtrBackward0", sm::ndtr,
        |g, x, r| g.mul(&x.mul(&x)?.mul_scalar(-0.5)?.exp()?.div_scalar(SQRT_2PI)?);
    /// The inverse of the standard normal CDF.
    special_ndtri: "SpecialNdtriBackward0", sm::ndtri,
        |g, x, r| g.mul(&r.mul(&r)?.mul_scalar(0.5)?.exp()?.mul_scalar(SQRT_2PI)?);
    /// log of the standard normal CDF.
    special_log_ndtr: "SpecialLogNdtrBackward0", sm::log_ndtr,
        |g, x, r| g.mul(&x.mul(&x)?.mul_scalar(-0.5)?.sub(&r)?.exp()?.div_scalar(SQRT_2PI)?);
    /// `-x ln x`.
    special_entr: "SpecialEntrBackward0", sm::entr,
        |g, x, r| g.mul(&x.log()?.add_scalar(1.0)?.neg()?);
    /// `e^{-|x|} I0(x)`.
    special_i0e: "SpecialI0EBackward0", sm::i0e,
        |g, x, r| g.mul(&x.special_i1e()?.sub(&x.sign()?.mul(&r)?)?);
    /// The modified Bessel function of the first kind of order 1.
    special_i1: "SpecialI1Backward0", sm::i1,
        |g, x, r| g.mul(&half_at_zero(&x, x.i0()?.sub(&r.div(&x)?)?)?);
    /// `e^{-|x|} I1(x)`.
    special_i1e: "SpecialI1EBackward0", sm::i1e,
        |g, x, r| g.mul(&half_at_zero(&x, x.special_i0e()?.sub(&r.mul(&x.sign()?.add(&x.reciprocal()?)?)?)?)?);
    /// The Bessel function of the first kind of order 0.
    special_bessel_j0: "SpecialBesselJ0Backward0", sm::j0,
        |g, x, r| Err::<Tensor, _>(not_differentiable("special_bessel_j0"));
    /// The Bessel function of the first kind of order 1.
    special_bessel_j1: "SpecialBesselJ1Backward0", sm::j1,
        |g, x, r| Err::<Tensor, _>(not_differentiable("special_bessel_j1"));
    /// The Bessel function of the second kind of order 0.
    special_bessel_y0: "SpecialBesselY0Backward0", sm::y0,
        |g, x, r| Err::<Tensor, _>(not_differentiable("special_bessel_y0"));
    /// The Bessel function of the second kind of order 1.
    special_bessel_y1: "SpecialBesselY1Backward0", sm::y1,
        |g, x, r| Err::<Tensor, _>(not_differentiable("special_bessel_y1"));
    /// The modified Bessel function of the first kind of order 0.
    special_modified_bessel_i0: "SpecialModifiedBesselI0Backward0", sm::i0,
        |g, x, r| Err::<Tensor, _>(not_differentiable("special_modified_bessel_i0"));
    /// The modified Bessel function of the first kind of order 1.
    special_modified_bessel_i1: "SpecialModifiedBesselI1Backward0", sm::i1,
        |g, x, r| Err::<Tensor, _>(not_differentiable("special_modified_bessel_i1"));
    /// The modified Bessel function of the second kind of order 0.
    special_modified_bessel_k0: "SpecialModifiedBesselK0Backward0", sm::k0,
        |g, x, r| Err::<Tensor, _>(not_differentiable("special_modified_bessel_k0"));
    /// The modified Bessel function of the second kind of order 1.
    special_modified_bessel_k1: "SpecialModifiedBesselK1Backward0", sm::k1,
        |g, x, r| Err::<Tensor, _>(not_differentiable("special_modified_bessel_k1"));
    /// `e^x K0(x)`.
    special_scaled_modified_bessel_k0: "SpecialScaledModifiedBesselK0Backward0", sm::k0e,
        |g, x, r| Err::<Tensor, _>(not_differentiable("special_scaled_modified_bessel_k0"));
    /// `e^x K1(x)`.
    special_scaled_modified_bessel_k1: "SpecialScaledModifiedBesselK1Backward0", sm::k1e,
        |g, x, r| Err::<Tensor, _>(not_differentiable("special_scaled_modified_bessel_k1"));
    /// The spherical Bessel function of the first kind of order 0, sin(x)/x.
    special_spherical_bessel_j0: "SpecialSphericalBesselJ0Backward0", sm::spherical_j0,
        |g, x, r| Err::<Tensor, _>(not_differentiable("special_spherical_bessel_j0"));
}

/// The scalar kernel of a polynomial family.
fn poly_fn(kind: Poly) -> fn(f64, f64) -> f64 {
    match kind {
        Poly::ChebyshevT => |x, n| sm::poly_eval(Poly::ChebyshevT, x, n),
        Poly::ChebyshevU => |x, n| sm::poly_eval(Poly::ChebyshevU, x, n),
        Poly::ChebyshevV => |x, n| sm::poly_eval(Poly::ChebyshevV, x, n),
        Poly::ChebyshevW => |x, n| sm::poly_eval(Poly::ChebyshevW, x, n),
        Poly::HermiteH => |x, n| sm::poly_eval(Poly::HermiteH, x, n),
        Poly::HermiteHe => |x, n| sm::poly_eval(Poly::HermiteHe, x, n),
        Poly::LaguerreL => |x, n| sm::poly_eval(Poly::LaguerreL, x, n),
        Poly::LegendreP => |x, n| sm::poly_eval(Poly::LegendreP, x, n),
    }
}

impl Tensor {
    /// `torch.polygamma(n, x)`: the n-th derivative of digamma.
    pub fn polygamma(&self, n: i64) -> Result<Tensor> {
        if n < 0 {
            bail!(runtime, "polygamma(n, x) does not support negative n.");
        }
        let rec = record("PolygammaBackward0", &[self]);
        let out = float_map!(self, |v| v.via_dyn(&|x| sm::polygamma(n, x)));
        rec.save("self", self).finish(out, move |c| {
            Ok(vec![Some(c.grad().mul(&c.saved(0)?.polygamma(n + 1)?)?)])
        })
    }

    /// `torch.mvlgamma(x, p)` (`special.multigammaln`): `sum_i lgamma(x -
    /// i/2) + p (p-1)/4 ln(pi)` (torch 2.13 no longer checks x > (p-1)/2).
    pub fn mvlgamma(&self, p: i64) -> Result<Tensor> {
        if p < 1 {
            bail!(runtime, "p has to be greater than or equal to 1");
        }
        if !self.dtype().is_floating() {
            bail!(
                runtime,
                "mvlgamma is not implemented for {}",
                self.dtype().scalar_type_name()
            );
        }
        let steps = Tensor::arange(Scalar::Int(0), Scalar::Int(p), Scalar::Int(1), self.dtype())?
            .mul_scalar(-0.5)?;
        let c = p as f64 * (p as f64 - 1.0) / 4.0 * PI.ln();
        self.unsqueeze(-1)?
            .add(&steps)?
            .lgamma()?
            .sum_dims(&[-1], false, None)?
            .add_scalar(c)
    }

    /// `torch.logit(x, eps)`: `log(x / (1 - x))`, x clamped to `[eps, 1 -
    /// eps]` first when `eps` is given.
    pub fn logit(&self, eps: Option<f64>) -> Result<Tensor> {
        let x = match eps {
            Some(e) => self.clamp(Some(Scalar::Float(e)), Some(Scalar::Float(1.0 - e)))?,
            None => self.clone(),
        };
        let x = if x.dtype().is_floating() {
            x
        } else {
            x.to_dtype(crate::tensor::dtype::default_float())?
        };
        x.log()?.sub(&x.neg()?.log1p()?)
    }

    /// `special.xlog1py(x, y)`: `x * log1p(y)`, 0 where x is 0 (unless y
    /// is NaN).
    pub fn special_xlog1py(&self, other: &Tensor) -> Result<Tensor> {
        let rec = record("SpecialXlog1PyBackward0", &[self, other]);
        let out = float_map2!(self, other, |x, y| {
            if y.is_nan() {
                y
            } else if x == 0.0 {
                0.0
            } else {
                x * y.ln_1p()
            }
        });
        rec.save("self", self)
            .save("other", other)
            .finish(out, |c| {
                let (x, y, g) = (c.saved(0)?, c.saved(1)?, c.grad());
                let dx = c.grad_for(0, || {
                    let undefined = x.eq_scalar(0)?.logical_and(&y.le_scalar(-1)?)?;
                    g.special_xlog1py(&y)?
                        .masked_fill_scalar(&undefined, Scalar::Int(0))
                })?;
                let dy = c.grad_for(1, || g.mul(&x)?.div(&y.add_scalar(1.0)?))?;
                Ok(vec![dx, dy])
            })
    }

    /// `special.zeta(x, q)`: the Hurwitz zeta function.
    pub fn special_zeta(&self, q: &Tensor) -> Result<Tensor> {
        let rec = record("SpecialZetaBackward0", &[self, q]);
        let out = float_map2!(self, q, |a, b| a.via2(b, sm::zeta));
        rec.save("self", self).save("other", q).finish(out, |c| {
            if c.needs(0) {
                return Err(not_differentiable("special_zeta"));
            }
            let (x, q, g) = (c.saved(0)?, c.saved(1)?, c.grad());
            let dq = g
                .mul(&x.neg()?)?
                .mul(&x.add_scalar(1.0)?.special_zeta(&q)?)?;
            Ok(vec![None, Some(dq)])
        })
    }

    /// `special.gammainc(a, x)` (`upper`: `gammaincc`): the regularized
    /// incomplete gamma functions.
    pub fn special_gammainc(&self, x: &Tensor, upper: bool) -> Result<Tensor> {
        let node = if upper {
            "IgammacBackward0"
        } else {
            "IgammaBackward0"
        };
        let rec = record(node, &[self, x]);
        let out = match upper {
            false => float_map2!(self, x, |a, b| a.via2(b, sm::gammainc)),
            true => float_map2!(self, x, |a, b| a.via2(b, sm::gammaincc)),
        };
        rec.save("self", self)
            .save("other", x)
            .finish(out, move |c| {
                if c.needs(0) {
                    return Err(not_differentiable(if upper {
                        "igammac: input"
                    } else {
                        "igamma: input"
                    }));
                }
                let (a, x, g) = (c.saved(0)?, c.saved(1)?, c.grad());
                let dens = a
                    .sub_scalar(1.0)?
                    .mul(&x.log()?)?
                    .sub(&x)?
                    .sub(&a.lgamma()?)?
                    .exp()?;
                let dx = g.mul(&dens)?;
                Ok(vec![None, Some(if upper { dx.neg()? } else { dx })])
            })
    }

    /// The orthogonal polynomial `kind` of degree `n` at `self`.
    pub fn special_polynomial(&self, n: &Tensor, kind: Poly, name: &'static str) -> Result<Tensor> {
        let rec = record(name, &[self, n]);
        let f = poly_fn(kind);
        let out = float_map2!(self, n, |x, k| x.via2(k, f));
        rec.finish(out, move |_| Err(not_differentiable(name)))
    }
}
