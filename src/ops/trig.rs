//! Inverse trigonometric and hyperbolic functions, angle conversion, atan2
//! and hypot (sin, cos, tan and tanh live with the other unary ops).
//! Integer and bool inputs compute in the default float dtype, as torch's.
//! asinh, acosh and atanh of float32 go through float64 (the float32
//! formulas lose up to ~20 ulp to cancellation near the ends).
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
//! | atan2   | grad * other / (self^2 + other^2)   | -grad * self / (self^2 + other^2)    | both   |
//! | hypot   | grad * self / result                | grad * other / result                | both, result |

use super::unary::{float_map, float_map2, Saves};
use crate::autograd::record;
use crate::kernels::unary::map1;
use crate::tensor::{DType, Tensor};
use crate::{bail, Result};
use std::f64::consts::PI;

/// `1 - x^2`.
fn one_minus_square(x: &Tensor) -> Result<Tensor> {
    x.mul(x)?.neg()?.add_scalar(1.0)
}

impl Tensor {
    /// d/dself = grad / sqrt(1 - self^2)
    pub fn asin(&self) -> Result<Tensor> {
        let rec = record("AsinBackward0", &[self]);
        let out = float_map!(self, |v| v.asin());
        self.unary_record(rec, out, Saves::Input, |g, s| {
            g.mul(&one_minus_square(&s.unwrap())?.rsqrt()?)
        })
    }
    /// d/dself = -grad / sqrt(1 - self^2)
    pub fn acos(&self) -> Result<Tensor> {
        let rec = record("AcosBackward0", &[self]);
        let out = float_map!(self, |v| v.acos());
        self.unary_record(rec, out, Saves::Input, |g, s| {
            g.mul(&one_minus_square(&s.unwrap())?.rsqrt()?)?.neg()
        })
    }
    /// d/dself = grad / (1 + self^2)
    pub fn atan(&self) -> Result<Tensor> {
        let rec = record("AtanBackward0", &[self]);
        let out = float_map!(self, |v| v.atan());
        self.unary_record(rec, out, Saves::Input, |g, s| {
            let s = s.unwrap();
            g.div(&s.mul(&s)?.add_scalar(1.0)?)
        })
    }
    /// d/dself = grad * cosh(self)
    pub fn sinh(&self) -> Result<Tensor> {
        let rec = record("SinhBackward0", &[self]);
        let out = float_map!(self, |v| v.sinh());
        self.unary_record(rec, out, Saves::Input, |g, s| g.mul(&s.unwrap().cosh()?))
    }
    /// d/dself = grad * sinh(self)
    pub fn cosh(&self) -> Result<Tensor> {
        let rec = record("CoshBackward0", &[self]);
        let out = float_map!(self, |v| v.cosh());
        self.unary_record(rec, out, Saves::Input, |g, s| g.mul(&s.unwrap().sinh()?))
    }
    /// d/dself = grad / sqrt(self^2 + 1)
    pub fn asinh(&self) -> Result<Tensor> {
        let rec = record("AsinhBackward0", &[self]);
        let out = float_map!(self, |v| (v as f64).asinh() as _);
        self.unary_record(rec, out, Saves::Input, |g, s| {
            let s = s.unwrap();
            g.mul(&s.mul(&s)?.add_scalar(1.0)?.rsqrt()?)
        })
    }
    /// d/dself = grad / sqrt(self^2 - 1)
    pub fn acosh(&self) -> Result<Tensor> {
        let rec = record("AcoshBackward0", &[self]);
        let out = float_map!(self, |v| (v as f64).acosh() as _);
        self.unary_record(rec, out, Saves::Input, |g, s| {
            let s = s.unwrap();
            g.mul(&s.mul(&s)?.sub_scalar(1.0)?.rsqrt()?)
        })
    }
    /// d/dself = grad / (1 - self^2)
    pub fn atanh(&self) -> Result<Tensor> {
        let rec = record("AtanhBackward0", &[self]);
        let out = float_map!(self, |v| (v as f64).atanh() as _);
        self.unary_record(rec, out, Saves::Input, |g, s| {
            g.div(&one_minus_square(&s.unwrap())?)
        })
    }
    /// Degrees to radians: `self * (pi / 180)`.
    pub fn deg2rad(&self) -> Result<Tensor> {
        self.scaled_angle("Deg2RadBackward0", PI / 180.0)
    }
    /// Radians to degrees: `self * (180 / pi)`.
    pub fn rad2deg(&self) -> Result<Tensor> {
        self.scaled_angle("Rad2DegBackward0", 180.0 / PI)
    }
    fn scaled_angle(&self, name: &'static str, c: f64) -> Result<Tensor> {
        let rec = record(name, &[self]);
        let x = match self.dtype().is_floating() {
            true => self.clone(),
            false => self.cast_raw(crate::tensor::dtype::default_float()),
        };
        let out = match x.dtype() {
            DType::F32 => {
                let c = c as f32;
                Tensor::from(map1::<f32, f32>(&x, move |v| v * c))
            }
            _ => Tensor::from(map1::<f64, f64>(&x, move |v| v * c)),
        };
        self.unary_record(rec, out, Saves::Nothing, move |g, _| g.mul_scalar(c))
    }

    /// The angle of the point (other, self): d/dself = grad * other / r^2,
    /// d/dother = -grad * self / r^2 with r^2 = self^2 + other^2.
    pub fn atan2(&self, other: &Tensor) -> Result<Tensor> {
        let rec = record("Atan2Backward0", &[self, other]);
        let out = float_map2!(self, other, |y, x| y.atan2(x));
        rec.save("self", self)
            .save("other", other)
            .finish(out, |c| {
                let (y, x, g) = (c.saved(0)?, c.saved(1)?, c.grad());
                let r2 = y.mul(&y)?.add(&x.mul(&x)?)?;
                let gr = g.div(&r2)?;
                let dy = if c.needs(0) { Some(gr.mul(&x)?) } else { None };
                let dx = if c.needs(1) {
                    Some(gr.mul(&y)?.neg()?)
                } else {
                    None
                };
                Ok(vec![dy, dx])
            })
    }
    /// `sqrt(self^2 + other^2)` without overflow: d/dself = grad * self /
    /// result, d/dother = grad * other / result. Floating inputs only.
    pub fn hypot(&self, other: &Tensor) -> Result<Tensor> {
        let dt = self.result_type(other);
        if !dt.is_floating() {
            let name = if dt == DType::Bool { "Bool" } else { "Long" };
            bail!(runtime, "\"hypot_cpu\" not implemented for '{name}'");
        }
        let rec = record("HypotBackward0", &[self, other]);
        let out = float_map2!(self, other, |x, y| x.hypot(y));
        rec.save("self", self)
            .save("other", other)
            .save_output("result", 0)
            .finish(out, |c| {
                let (g, r) = (c.grad(), c.saved(2)?);
                let gr = g.div(&r)?;
                let dx = if c.needs(0) {
                    Some(gr.mul(&c.saved(0)?)?)
                } else {
                    None
                };
                let dy = if c.needs(1) {
                    Some(gr.mul(&c.saved(1)?)?)
                } else {
                    None
                };
                Ok(vec![dx, dy])
            })
    }
}
