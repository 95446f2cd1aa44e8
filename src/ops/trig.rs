//! Inverse trigonometric and hyperbolic functions, angle conversion, atan2
//! and hypot (sin, cos, tan and tanh live with the other unary ops).
//! Integer and bool inputs compute in the default float dtype, as torch's.
//! asinh, acosh and atanh are fdlibm's forms on the vmath logs; float32
//! goes through float64 (the float32 formulas lose up to ~20 ulp to
//! cancellation near the ends).
//!
//! | op      | d/dself                             | d/dother                             | saves  |
//! |---------|-------------------------------------|--------------------------------------|--------|
//! | asin    | grad / sqrt(1 - self^2)             |                                      | self   |
//! | acos    | -grad / sqrt(1 - self^2)            |                                      | self   |
//! | atan    | grad / (1 + self^2)                 |                                      | self   |
//! | sinh    | grad * cosh(self)                   |                                      | self   |
//! | cosh    | grad * sinh(self)                   |                                      | self   |
//! | asinh   | grad / sqrt(self^2 + 1)             |                                      | self   |
//! | acosh   | grad / sqrt(self^2 - 1)             |                                      | self   |
//! | atanh   | grad / (1 - self^2)                 |                                      | self   |
//! | deg2rad | grad * pi / 180                     |                                      |        |
//! | rad2deg | grad * 180 / pi                     |                                      |        |
//!
//! atan2 and hypot are a binary table (`trig_binary_ops!`, see `arith.rs`).

use super::arith::define_binary_ops;
use super::unary::{define_unary_float_ops, Saves};
use crate::autograd::record;
use crate::kernels::unary::{map1, vmath};
use crate::tensor::{DType, Scalar, Tensor};
use crate::{bail, Result};
use std::f64::consts::PI;

/// `1 - x^2`.
fn one_minus_square(x: &Tensor) -> Result<Tensor> {
    x.mul(x)?.neg()?.add_scalar(1.0)
}

/// Inverse trigonometric and hyperbolic functions (see `unary.rs` for the
/// table's grammar).
macro_rules! trig_ops {
    ($then:ident) => {
        $then! {
            /// The arcsine of each element.
            asin, asin_ [arcsin, arcsin_]: "AsinBackward0", simd(vmath::Asin), Input, unit,
                |g, x| g.mul(&one_minus_square(x)?.rsqrt()?);
            /// The arccosine of each element.
            acos, acos_ [arccos, arccos_]: "AcosBackward0", simd(vmath::Acos), Input, unit,
                |g, x| g.mul(&one_minus_square(x)?.rsqrt()?)?.neg();
            /// The arctangent of each element.
            atan, atan_ [arctan, arctan_]: "AtanBackward0", simd(vmath::Atan), Input, normal,
                |g, x| g.div(&x.mul(x)?.add_scalar(1.0)?);
            /// The hyperbolic sine of each element.
            sinh, sinh_ []: "SinhBackward0", simd(vmath::Sinh), Input, normal,
                |g, x| g.mul(&x.cosh()?);
            /// The hyperbolic cosine of each element.
            cosh, cosh_ []: "CoshBackward0", simd(vmath::Cosh), Input, normal,
                |g, x| g.mul(&x.sinh()?);
            /// The inverse hyperbolic sine of each element.
            asinh, asinh_ [arcsinh, arcsinh_]: "AsinhBackward0",
                simd(vmath::Asinh), Input, normal,
                |g, x| g.mul(&x.mul(x)?.add_scalar(1.0)?.rsqrt()?);
            /// The inverse hyperbolic cosine of each element.
            acosh, acosh_ [arccosh, arccosh_]: "AcoshBackward0",
                simd(vmath::Acosh), Input, gt1,
                |g, x| g.mul(&x.mul(x)?.sub_scalar(1.0)?.rsqrt()?);
            /// The inverse hyperbolic tangent of each element.
            atanh, atanh_ [arctanh, arctanh_]: "AtanhBackward0",
                simd(vmath::Atanh), Input, unit,
                |g, x| g.div(&one_minus_square(x)?);
        }
    };
}
#[cfg_attr(not(feature = "python"), allow(unused_imports))]
pub(crate) use trig_ops;

trig_ops!(define_unary_float_ops);

impl Tensor {
    /// Degrees to radians: `self * (pi / 180)`.
    pub fn deg2rad(&self) -> Result<Tensor> {
        self.scaled_angle("Deg2RadBackward0", PI / 180.0)
    }
    /// Radians to degrees: `self * (180 / pi)`.
    pub fn rad2deg(&self) -> Result<Tensor> {
        self.scaled_angle("Rad2DegBackward0", 180.0 / PI)
    }
    /// `deg2rad` in place.
    pub fn deg2rad_(&self) -> Result<()> {
        self.apply_inplace("deg2rad_", &[], |t| t.deg2rad())
    }
    /// `rad2deg` in place.
    pub fn rad2deg_(&self) -> Result<()> {
        self.apply_inplace("rad2deg_", &[], |t| t.rad2deg())
    }
    fn scaled_angle(&self, name: &'static str, c: f64) -> Result<Tensor> {
        let rec = record(name, &[self]);
        let x = match self.dtype().is_floating() {
            true => self.clone(),
            false => self.cast_raw(crate::tensor::dtype::default_float()),
        };
        let out = x.in_compute_dtype(|x| {
            Ok(match x.dtype() {
                DType::F32 => {
                    let c = c as f32;
                    Tensor::from(map1::<f32, f32>(x, move |v| v * c))
                }
                _ => Tensor::from(map1::<f64, f64>(x, move |v| v * c)),
            })
        })?;
        self.unary_record(rec, out, Saves::Nothing, move |g, _| g.mul_scalar(c))
    }
}

/// `g * (1 / (self^2 + other^2))`, the reciprocal 0 at the origin (torch's:
/// not NaN there, but a NaN `g` stays NaN).
fn atan2_share(g: &Tensor, y: &Tensor, x: &Tensor) -> Result<Tensor> {
    let r2 = y.mul(y)?.add(&x.mul(x)?)?;
    let recip = r2
        .reciprocal()?
        .masked_fill_scalar(&r2.eq_scalar(0)?, Scalar::Int(0))?;
    g.mul(&recip)
}

/// torch's refusal of integer operands in hypot.
fn hypot_check(a: &Tensor, b: &Tensor) -> Result<()> {
    let dt = a.result_type(b);
    if !dt.is_floating() {
        let name = if dt == DType::Bool { "Bool" } else { "Long" };
        bail!(
            not_implemented,
            "\"hypot_cpu\" not implemented for '{name}'"
        );
    }
    Ok(())
}

/// atan2 and hypot (see `arith.rs` for the table's grammar).
macro_rules! trig_binary_ops {
    ($then:ident) => {
        $then! {
            /// The angle of the point (other, self) in radians, in (-pi, pi].
            atan2, atan2_ [arctan2, arctan2_]: "Atan2Backward0", float(), |a, b| vmath::BinaryMethods::vatan2(a, b),
                away away,
                Inputs |g, y, x, _r| atan2_share(g, &y()?, &x()?)?.mul(&x()?),
                    atan2_share(g, &y()?, &x()?)?.mul(&y()?)?.neg();
                py tensor [];
            /// `sqrt(self^2 + other^2)`, without overflow. Floating operands only.
            hypot, hypot_ []: "HypotBackward0", float(hypot_check), |a, b| vmath::BinaryMethods::vhypot(a, b),
                away away,
                InputsResult |g, x, y, r| g.div(&r()?)?.mul(&x()?), g.div(&r()?)?.mul(&y()?);
                py tensor [];
        }
    };
}
#[cfg_attr(not(feature = "python"), allow(unused_imports))]
pub(crate) use trig_binary_ops;

trig_binary_ops!(define_binary_ops);
