//! Arithmetic: add, sub, mul, div, neg.
//!
//! | op             | d/dself            | d/dother                   |
//! |----------------|--------------------|----------------------------|
//! | add            | grad               | grad                       |
//! | sub            | grad               | -grad                      |
//! | rsub(number)   | -grad              |                            |
//! | mul            | grad * other       | grad * self                |
//! | div            | grad / other       | -grad * self / other^2     |
//! | neg            | -grad              |                            |
//!
//! `number / tensor` is `tensor.reciprocal() * number`, as in torch.

use crate::autograd::record;
use crate::kernels::binary::map2;
use crate::kernels::unary::map1;
use crate::tensor::{DType, Scalar, Tensor};
use crate::{bail, Result};

/// Applies a numeric binary op in `dt`; bool operands compute in int64
/// and are cast back to bool.
macro_rules! numeric2 {
    ($a:expr, $b:expr, $dt:expr, |$x:ident, $y:ident| $e:expr) => {{
        let dt: DType = $dt;
        match dt {
            DType::F32 => map2::<f32, f32>($a, $b, |$x, $y| $e).map(Tensor::from),
            DType::F64 => map2::<f64, f64>($a, $b, |$x, $y| $e).map(Tensor::from),
            DType::I64 => map2::<i64, i64>($a, $b, |$x: i64, $y: i64| $e).map(Tensor::from),
            DType::Bool => {
                let (a, b) = ($a.cast_raw(DType::I64), $b.cast_raw(DType::I64));
                Ok(
                    Tensor::from(map2::<i64, i64>(&a, &b, |$x: i64, $y: i64| $e)?)
                        .cast_raw(DType::Bool),
                )
            }
        }
    }};
}

/// Both operands cast to the promoted dtype (no copy when already there).
fn promoted(a: &Tensor, b: &Tensor) -> (Tensor, Tensor, DType) {
    let dt = a.result_type(b);
    (a.cast_raw(dt), b.cast_raw(dt), dt)
}

/// `a - b`'s operands in the promoted dtype; bool operands are refused
/// with torch's messages.
fn sub_operands(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor, DType)> {
    let (x, y, dt) = promoted(a, b);
    if dt == DType::Bool {
        bail!(runtime, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.");
    }
    if a.dtype() == DType::Bool || b.dtype() == DType::Bool {
        bail!(runtime, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
    }
    Ok((x, y, dt))
}

impl Tensor {
    pub fn add(&self, other: &Tensor) -> Result<Tensor> {
        let (a, b, dt) = promoted(self, other);
        let rec = record("AddBackward0", &[self, other]);
        let out = numeric2!(&a, &b, dt, |x, y| x + y)?;
        rec.finish(out, |c| {
            Ok(vec![Some(c.grad().clone()), Some(c.grad().clone())])
        })
    }

    pub fn sub(&self, other: &Tensor) -> Result<Tensor> {
        let (a, b, dt) = sub_operands(self, other)?;
        let rec = record("SubBackward0", &[self, other]);
        let out = numeric2!(&a, &b, dt, |x, y| x - y)?;
        rec.finish(out, |c| {
            Ok(vec![Some(c.grad().clone()), Some(c.grad().neg()?)])
        })
    }

    /// `number - self`, the number wrapped as a 0-dim tensor (`wrap_scalar`):
    /// torch's `rsub(Tensor, Scalar)`, which `number - tensor` calls
    /// (RsubBackward1, differentiable in `self` only).
    pub fn rsub_scalar(&self, number: &Tensor) -> Result<Tensor> {
        let (a, b, dt) = sub_operands(number, self)?;
        let rec = record("RsubBackward1", &[self]);
        let out = numeric2!(&a, &b, dt, |x, y| x - y)?;
        rec.finish(out, |c| Ok(vec![Some(c.grad().neg()?)]))
    }

    /// `number / self`, the number wrapped as a 0-dim tensor: torch's
    /// `Tensor.__rtruediv__`, `self.reciprocal() * number` (MulBackward0
    /// over ReciprocalBackward0, rounded as torch rounds it).
    pub fn rdiv_scalar(&self, number: &Tensor) -> Result<Tensor> {
        self.reciprocal()?.mul(number)
    }

    pub fn mul(&self, other: &Tensor) -> Result<Tensor> {
        let (a, b, dt) = promoted(self, other);
        let rec = record("MulBackward0", &[self, other]);
        let out = numeric2!(&a, &b, dt, |x, y| x * y)?;
        rec.save("self", self)
            .save("other", other)
            .finish(out, |c| {
                let g = c.grad();
                let da = c.grad_for(0, || g.mul(&c.saved(1)?))?;
                let db = c.grad_for(1, || g.mul(&c.saved(0)?))?;
                Ok(vec![da, db])
            })
    }

    /// True division: integer operands give a float result.
    pub fn div(&self, other: &Tensor) -> Result<Tensor> {
        let dt = self.result_type(other).to_floating();
        let (a, b) = (self.cast_raw(dt), other.cast_raw(dt));
        let rec = record("DivBackward0", &[self, other]);
        let out =
            crate::dispatch_float!(dt, T => Tensor::from(map2::<T, T>(&a, &b, |x, y| x / y)?));
        rec.save("self", self)
            .save("other", other)
            .finish(out, |c| {
                let (g, other) = (c.grad(), c.saved(1)?);
                let da = c.grad_for(0, || g.div(&other))?;
                let db = if c.needs(1) {
                    let s = c.saved(0)?;
                    Some(g.neg()?.mul(&s)?.div(&other.mul(&other)?)?)
                } else {
                    None
                };
                Ok(vec![da, db])
            })
    }

    pub fn neg(&self) -> Result<Tensor> {
        let rec = record("NegBackward0", &[self]);
        let out = match self.dtype() {
            DType::F32 => Tensor::from(map1::<f32, f32>(self, |x| -x)),
            DType::F64 => Tensor::from(map1::<f64, f64>(self, |x| -x)),
            DType::I64 => Tensor::from(map1::<i64, i64>(self, |x| x.wrapping_neg())),
            DType::Bool => bail!(runtime, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."),
        };
        rec.finish(out, |c| Ok(vec![Some(c.grad().neg()?)]))
    }

    pub fn add_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.add(&self.wrap_scalar(s.into()))
    }
    pub fn sub_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.sub(&self.wrap_scalar(s.into()))
    }
    pub fn mul_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.mul(&self.wrap_scalar(s.into()))
    }
    pub fn div_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.div(&self.wrap_scalar(s.into()))
    }
}
