//! Logarithms and exponentials in other bases, the error function family,
//! xlogy and logaddexp. Integer and bool inputs compute in the default
//! float dtype, as torch's (logaddexp takes floating inputs only).
//!
//! | op         | d/dself                                | d/dother                      | saves  |
//! |------------|----------------------------------------|-------------------------------|--------|
//! | log2       | grad / (self * ln 2)                   |                               | self   |
//! | log10      | grad / (self * ln 10)                  |                               | self   |
//! | exp2       | grad * result * ln 2                   |                               | result |
//! | erf        | grad * 2/sqrt(pi) * exp(-self^2)       |                               | self   |
//! | erfc       | -grad * 2/sqrt(pi) * exp(-self^2)      |                               | self   |
//! | erfinv     | grad * sqrt(pi)/2 * exp(result^2)      |                               | result |
//! | xlogy      | xlogy(grad, other), 0 where self = 0 and other <= 0 | grad * self / other | both |
//! | logaddexp  | grad / (1 + exp(other - self))         | grad / (1 + exp(self - other)) | both  |
//! | logaddexp2 | grad / (1 + 2^(other - self))          | grad / (1 + 2^(self - other)) | both   |

use super::arith::define_binary_ops;
use super::unary::{define_unary_float_ops, float_map2_simd};
use crate::autograd::record;
use crate::kernels::unary::vmath;
use crate::kernels::vmap;
use crate::tensor::{DType, Scalar, Tensor};
use crate::{bail, Result};
use std::f64::consts::{LN_10, LN_2, PI};

/// The inverse error function: a rational first guess (Giles, 2010),
/// refined by two Newton steps on `erf` in float64. ±1 give ±inf; outside
/// [-1, 1], NaN.
pub fn erfinv_f64(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return y * f64::INFINITY;
    }
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let mut x = if w < 5.0 {
        let w = w - 2.5;
        let mut p = 2.810_226_36e-08;
        for c in [
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ] {
            p = c + p * w;
        }
        p * y
    } else {
        let w = w.sqrt() - 3.0;
        let mut p = -0.000_200_214_257;
        for c in [
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ] {
            p = c + p * w;
        }
        p * y
    };
    for _ in 0..2 {
        let err = crate::kernels::math::erf_f64(x) - y;
        x -= err / (2.0 / PI.sqrt() * (-x * x).exp());
    }
    x
}

/// `x * log(y)`, 0 where x is 0 (unless y is NaN), as ATen's xlogy.
macro_rules! xlogy {
    ($x:expr, $y:expr) => {{
        let (x, y) = ($x, $y);
        if y.is_nan() {
            y
        } else if x == 0.0 {
            0.0
        } else {
            x * y.ln()
        }
    }};
}

/// d/dself of xlogy: `xlogy(grad, other)`, 0 where self = 0 and other
/// <= 0 (the derivative along self = 0; torch's choice, pytorch#80770).
fn xlogy_slope(g: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let undefined = x.eq_scalar(0)?.logical_and(&y.le_scalar(0)?)?;
    g.xlogy(y)?.masked_fill_scalar(&undefined, Scalar::Int(0))
}

/// xlogy (see `arith.rs` for the table's grammar).
macro_rules! special_binary_ops {
    ($then:ident) => {
        $then! {
            /// `self * log(other)`, 0 where self is 0 (unless other is NaN).
            xlogy, xlogy_ []: "XlogyBackward0", float(), |a, b| xlogy!(a, b), normal pos,
                Inputs |g, x, y, _r| xlogy_slope(g, &x()?, &y()?), g.mul(&x()?)?.div(&y()?);
                py plain [];
        }
    };
}
#[cfg_attr(not(feature = "python"), allow(unused_imports))]
pub(crate) use special_binary_ops;

special_binary_ops!(define_binary_ops);

/// Logarithms and exponentials in other bases and the error functions (see
/// `unary.rs` for the table's grammar).
macro_rules! special_unary_ops {
    ($then:ident) => {
        $then! {
            /// The base-2 logarithm of each element.
            log2, log2_ []: "Log2Backward0", simd(vmath::Log2), Input, pos,
                |g, x| g.div(&x.mul_scalar(LN_2)?);
            /// The base-10 logarithm of each element.
            log10, log10_ []: "Log10Backward0", simd(vmath::Log10), Input, pos,
                |g, x| g.div(&x.mul_scalar(LN_10)?);
            /// 2^x.
            exp2, exp2_ []: "Exp2Backward0", simd(vmath::Exp2), Output, normal,
                |g, r| g.mul(&r.mul_scalar(LN_2)?);
            /// The error function.
            erf, erf_ []: "ErfBackward0", simd(vmath::Erf), Input, normal,
                |g, x| g.mul(&erf_slope(x)?);
            /// 1 - erf(x), accurate where erf is near 1.
            erfc, erfc_ []: "ErfcBackward0", each(|v| erfc_of(v)), Input, normal,
                |g, x| g.mul(&erf_slope(x)?)?.neg();
            /// The inverse error function (NaN outside [-1, 1]).
            erfinv, erfinv_ []: "ErfinvBackward0", each(|v| erfinv_of(v)), Output, unit,
                |g, r| g.mul(&r.mul(r)?.exp()?.mul_scalar(PI.sqrt() / 2.0)?);
        }
    };
}
#[cfg_attr(not(feature = "python"), allow(unused_imports))]
pub(crate) use special_unary_ops;

special_unary_ops!(define_unary_float_ops);

impl Tensor {
    /// `log(exp(self) + exp(other))`.
    pub fn logaddexp(&self, other: &Tensor) -> Result<Tensor> {
        self.logaddexp_base(other, false)
    }
    /// `log2(2^self + 2^other)`.
    pub fn logaddexp2(&self, other: &Tensor) -> Result<Tensor> {
        self.logaddexp_base(other, true)
    }
    fn logaddexp_base(&self, other: &Tensor, base2: bool) -> Result<Tensor> {
        let dt = self.result_type(other);
        let (name, kernel) = match base2 {
            false => ("LogaddexpBackward0", "logaddexp_cpu"),
            true => ("Logaddexp2Backward0", "logaddexp2_cpu"),
        };
        if !dt.is_floating() {
            let t = if dt == DType::Bool { "Bool" } else { "Long" };
            bail!(not_implemented, "\"{kernel}\" not implemented for '{t}'");
        }
        let rec = record(name, &[self, other]);
        let out = match base2 {
            false => float_map2_simd!(self, other, vmath::LogAddExp),
            true => float_map2_simd!(self, other, vmath::LogAddExp2),
        };
        rec.save("self", self)
            .save("other", other)
            .finish(out, move |c| {
                let (a, b, g) = (c.saved(0)?, c.saved(1)?, c.grad());
                // d/da = 1 / (1 + base^(b - a)).
                let share = |x: &Tensor, y: &Tensor| -> Result<Tensor> {
                    let d = y.sub(x)?;
                    let p = if base2 { d.exp2()? } else { d.exp()? };
                    g.div(&p.add_scalar(1.0)?)
                };
                let da = c.grad_for(0, || share(&a, &b))?;
                let db = c.grad_for(1, || share(&b, &a))?;
                Ok(vec![da, db])
            })
    }
}

/// 2/sqrt(pi) * exp(-x^2), the slope of erf.
fn erf_slope(x: &Tensor) -> Result<Tensor> {
    x.mul(x)?.neg()?.exp()?.mul_scalar(2.0 / PI.sqrt())
}

/// The functions here of either float type that `Float` lacks (erfc is
/// libm's, accurate where erf is near 1).
trait Special: Copy {
    fn erfc_(self) -> Self;
    fn erfinv_(self) -> Self;
}
impl Special for f32 {
    fn erfc_(self) -> Self {
        libm::erfcf(self)
    }
    fn erfinv_(self) -> Self {
        erfinv_f64(self as f64) as f32
    }
}
impl Special for f64 {
    fn erfc_(self) -> Self {
        libm::erfc(self)
    }
    fn erfinv_(self) -> Self {
        erfinv_f64(self)
    }
}
fn erfc_of<T: Special>(v: T) -> T {
    v.erfc_()
}
fn erfinv_of<T: Special>(v: T) -> T {
    v.erfinv_()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfinv_inverts_erf() {
        for &x in &[-3.0, -1.2, -0.5, -1e-9, 0.0, 0.3, 0.9, 2.5, 4.0] {
            let y = crate::kernels::math::erf_f64(x);
            if y.abs() < 1.0 {
                // A rounding of y moves x by up to eps / erf'(x).
                let slope = 2.0 / PI.sqrt() * (-x * x).exp();
                let tol = 1e-13 + 2.0 * f64::EPSILON / slope;
                assert!((erfinv_f64(y) - x).abs() <= tol, "{x}");
            }
        }
        assert_eq!(erfinv_f64(1.0), f64::INFINITY);
        assert!(erfinv_f64(1.5).is_nan());
    }
}
