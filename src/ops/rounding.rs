//! Rounding, and the divisions that round: floor, ceil, round, trunc, frac,
//! remainder, fmod, and div with a rounding mode (floor_divide is
//! `div(rounding_mode="floor")`). Values follow ATen's CPU kernels.
//!
//! | op                      | d/dself | d/dother                                  |
//! |-------------------------|---------|-------------------------------------------|
//! | floor, ceil, round, trunc | 0     |                                           |
//! | frac                    | grad    |                                           |
//! | remainder               | grad    | -grad * div(self, other, "floor")         |
//! | fmod                    | grad    | -grad * div(self, other, "trunc")         |
//! | div "floor" / "trunc"   | grad * 0 | grad * 0                                 |
//!
//! Integer operands stay integers (Python's floor semantics for `floor` and
//! `remainder`, C's truncation for `trunc` and `fmod`); an integer divisor
//! of zero is an error, as in torch. Bool operands are rejected.

use crate::autograd::record;
use crate::kernels::binary::{int_map2, map2};
use crate::kernels::unary::map1;
use crate::tensor::{DType, Scalar, Tensor};
use crate::{bail, Error, Result};

/// How `div` rounds its quotient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundingMode {
    /// Toward zero.
    Trunc,
    /// Toward negative infinity (Python's `//`).
    Floor,
}

impl RoundingMode {
    /// torch's `rounding_mode=` argument: None (true division), "trunc" or
    /// "floor".
    pub fn parse(mode: Option<&str>) -> Result<Option<RoundingMode>> {
        match mode {
            None => Ok(None),
            Some("trunc") => Ok(Some(RoundingMode::Trunc)),
            Some("floor") => Ok(Some(RoundingMode::Floor)),
            Some(other) => Err(Error::runtime(format!(
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{other}'"
            ))),
        }
    }
}

/// `a // b` for floats as ATen computes it: from `fmod`, so that
/// `a == b * floor_div(a, b) + remainder(a, b)` holds as closely as it can.
macro_rules! float_floor_div {
    ($a:expr, $b:expr) => {{
        let (a, b) = ($a, $b);
        if b == 0.0 {
            a / b
        } else {
            let m = a % b;
            let mut div = (a - m) / b;
            if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
                div -= 1.0;
            }
            if div != 0.0 {
                let f = div.floor();
                if div - f > 0.5 {
                    f + 1.0
                } else {
                    f
                }
            } else {
                // A zero with the quotient's sign (|a / b| < 1 here, finite).
                (a / b) * 0.0
            }
        }
    }};
}

/// `remainder` for floats: `fmod`, moved into the divisor's sign.
macro_rules! float_remainder {
    ($a:expr, $b:expr) => {{
        let (a, b) = ($a, $b);
        let m = a % b;
        if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
            m + b
        } else {
            m
        }
    }};
}

/// Python's `//` and `%` on integers of one width (floor division, and the
/// remainder with the divisor's sign), wrapping as torch's kernels do.
macro_rules! int_floor_ops {
    ($floor_div:ident, $remainder:ident, $t:ty) => {
        #[inline(always)]
        fn $floor_div(a: $t, b: $t) -> $t {
            let q = a.wrapping_div(b);
            if (a.wrapping_rem(b) != 0) && ((a < 0) != (b < 0)) {
                q.wrapping_sub(1)
            } else {
                q
            }
        }

        // Branch-free: with random signs a branch mispredicts half the
        // time. The divisor is added where the remainder is non-zero and
        // its sign differs from the divisor's.
        #[inline(always)]
        fn $remainder(a: $t, b: $t) -> $t {
            let m = a.wrapping_rem(b);
            m.wrapping_add(b & -(((m != 0) & ((m ^ b) < 0)) as $t))
        }
    };
}
int_floor_ops!(int_floor_div, int_remainder, i64);
// Integers of 32 bits or fewer divide in 32 bits: a 64-bit division costs
// about twice as much.
int_floor_ops!(narrow_floor_div, narrow_remainder, i32);

/// The kernels of one rounding division, per dtype.
#[derive(Clone, Copy)]
enum DivKind {
    Remainder,
    Fmod,
    Floor,
    Trunc,
}

impl DivKind {
    /// ATen's kernel name in its "not implemented for 'Bool'" error.
    fn kernel_name(self) -> &'static str {
        match self {
            DivKind::Remainder => "remainder_cpu",
            DivKind::Fmod => "fmod_cpu",
            DivKind::Floor => "div_floor_cpu",
            DivKind::Trunc => "div_trunc_cpu",
        }
    }
}

/// `kind(a, b)` elementwise with broadcasting, in the promoted dtype.
fn divide(a: &Tensor, b: &Tensor, kind: DivKind) -> Result<Tensor> {
    let dt = a.result_type(b);
    if dt.is_reduced_float() {
        // float16/bfloat16: in float32, rounded back
        let (x, y) = (a.try_cast_raw(DType::F32)?, b.try_cast_raw(DType::F32)?);
        return divide(&x, &y, kind)?.try_cast_raw(dt);
    }
    let (x, y) = (a.cast_raw(dt), b.cast_raw(dt));
    match dt {
        DType::F32 => map2::<f32, f32>(&x, &y, move |p, q| match kind {
            DivKind::Remainder => float_remainder!(p, q),
            DivKind::Fmod => p % q,
            DivKind::Floor => float_floor_div!(p, q),
            DivKind::Trunc => (p / q).trunc(),
        })
        .map(Tensor::from),
        DType::F64 => map2::<f64, f64>(&x, &y, move |p, q| match kind {
            DivKind::Remainder => float_remainder!(p, q),
            DivKind::Fmod => p % q,
            DivKind::Floor => float_floor_div!(p, q),
            DivKind::Trunc => (p / q).trunc(),
        })
        .map(Tensor::from),
        DType::Bool => bail!(
            not_implemented,
            "\"{}\" not implemented for 'Bool'",
            kind.kernel_name()
        ),
        _ => {
            if y.eq_scalar(0)?.any(None, false)?.item()?.to_f64() != 0.0 {
                bail!(runtime, "ZeroDivisionError");
            }
            macro_rules! divide_with {
                ($f:expr) => {
                    int_map2(&x, &y, $f).map(Tensor::from)
                };
            }
            match (kind, dt == DType::I64) {
                (DivKind::Remainder, true) => divide_with!(int_remainder),
                (DivKind::Fmod, true) => divide_with!(i64::wrapping_rem),
                (DivKind::Floor, true) => divide_with!(int_floor_div),
                (DivKind::Trunc, true) => divide_with!(i64::wrapping_div),
                (DivKind::Remainder, false) => {
                    divide_with!(|p, q| narrow_remainder(p as i32, q as i32) as i64)
                }
                (DivKind::Fmod, false) => {
                    divide_with!(|p, q| (p as i32).wrapping_rem(q as i32) as i64)
                }
                (DivKind::Floor, false) => {
                    divide_with!(|p, q| narrow_floor_div(p as i32, q as i32) as i64)
                }
                (DivKind::Trunc, false) => {
                    divide_with!(|p, q| (p as i32).wrapping_div(q as i32) as i64)
                }
            }
        }
    }
}

/// A rounding function of floats; integers pass through unchanged.
macro_rules! round_like {
    ($x:expr, $name:literal, |$v:ident| $e:expr) => {{
        let x: &Tensor = $x;
        match x.dtype() {
            DType::F32 => Tensor::from(map1::<f32, f32>(x, |$v: f32| $e)),
            DType::F64 => Tensor::from(map1::<f64, f64>(x, |$v: f64| $e)),
            DType::Bool => bail!(not_implemented, "\"{}\" not implemented for 'Bool'", $name),
            dt if dt.is_reduced_float() => Tensor::from(map1::<f32, f32>(
                &*x.try_cast_raw(DType::F32)?,
                |$v: f32| $e,
            ))
            .try_cast_raw(dt)?,
            _ => Tensor::from($crate::kernels::unary::int_map1(x, |v| v)),
        }
    }};
}

impl Tensor {
    /// A rounding op: zero derivative.
    fn rounded(&self, name: &'static str, out: Tensor) -> Result<Tensor> {
        record(name, &[self]).finish(out, |c| Ok(vec![Some(c.grad().zeros_like())]))
    }

    pub fn floor(&self) -> Result<Tensor> {
        let out = round_like!(self, "floor_vml_cpu", |v| v.floor());
        self.rounded("FloorBackward0", out)
    }
    pub fn ceil(&self) -> Result<Tensor> {
        let out = round_like!(self, "ceil_vml_cpu", |v| v.ceil());
        self.rounded("CeilBackward0", out)
    }
    pub fn trunc(&self) -> Result<Tensor> {
        let out = round_like!(self, "trunc_vml_cpu", |v| v.trunc());
        self.rounded("TruncBackward0", out)
    }
    /// Rounds half to even, to `decimals` decimal places (negative: to
    /// tens, hundreds...), as torch: `x * 10^d`, rounded, divided back.
    pub fn round(&self, decimals: i64) -> Result<Tensor> {
        if decimals == 0 {
            let out = round_like!(self, "round_vml_cpu", |v| v.round_ties_even());
            return self.rounded("RoundBackward0", out);
        }
        let neg = decimals < 0;
        let p = 10f64.powi(decimals.unsigned_abs().min(400) as i32);
        let out = self.in_compute_dtype(|x| {
            Ok(match x.dtype() {
                DType::F32 => {
                    let p = p as f32;
                    Tensor::from(map1::<f32, f32>(x, move |v| match neg {
                        false => (v * p).round_ties_even() / p,
                        true => (v / p).round_ties_even() * p,
                    }))
                }
                DType::F64 => Tensor::from(map1::<f64, f64>(x, move |v| match neg {
                    false => (v * p).round_ties_even() / p,
                    true => (v / p).round_ties_even() * p,
                })),
                dt => bail!(
                    not_implemented,
                    "\"round_cpu\" not implemented for '{}'",
                    dt.scalar_type_name()
                ),
            })
        })?;
        self.rounded("RoundBackward1", out)
    }
    /// `self - trunc(self)`, keeping the sign; d/dself = grad.
    pub fn frac(&self) -> Result<Tensor> {
        let out = self.in_compute_dtype(|x| {
            Ok(match x.dtype() {
                DType::F32 => Tensor::from(map1::<f32, f32>(x, |v| v - v.trunc())),
                DType::F64 => Tensor::from(map1::<f64, f64>(x, |v| v - v.trunc())),
                dt => bail!(
                    not_implemented,
                    "\"frac_cpu\" not implemented for '{}'",
                    dt.scalar_type_name()
                ),
            })
        })?;
        record("FracBackward0", &[self]).finish(out, |c| Ok(vec![Some(c.grad().clone())]))
    }

    /// Python's `%`: the remainder with the divisor's sign.
    pub fn remainder(&self, other: &Tensor) -> Result<Tensor> {
        let out = divide(self, other, DivKind::Remainder)?;
        self.remainder_record("RemainderBackward1", other, out, RoundingMode::Floor)
    }
    /// `remainder` by a Python number: d/dself = grad.
    pub fn remainder_scalar(&self, other: Scalar) -> Result<Tensor> {
        let out = divide(self, &self.wrap_scalar(other), DivKind::Remainder)?;
        record("RemainderBackward0", &[self]).finish(out, |c| Ok(vec![Some(c.grad().clone())]))
    }
    /// `fmod` by a Python number: d/dself = grad.
    pub fn fmod_scalar(&self, other: Scalar) -> Result<Tensor> {
        let out = divide(self, &self.wrap_scalar(other), DivKind::Fmod)?;
        record("FmodBackward0", &[self]).finish(out, |c| Ok(vec![Some(c.grad().clone())]))
    }
    /// C's `fmod`: the remainder with the dividend's sign.
    pub fn fmod(&self, other: &Tensor) -> Result<Tensor> {
        let out = divide(self, other, DivKind::Fmod)?;
        self.remainder_record("FmodBackward1", other, out, RoundingMode::Trunc)
    }
    /// `self - other * div(self, other, mode)`: d/dself = grad,
    /// d/dother = -grad * div(self, other, mode).
    fn remainder_record(
        &self,
        name: &'static str,
        other: &Tensor,
        out: Tensor,
        mode: RoundingMode,
    ) -> Result<Tensor> {
        record(name, &[self, other])
            .save("self", self)
            .save("other", other)
            .finish(out, move |c| {
                let g = c.grad();
                let db = if c.needs(1) {
                    let q = c.saved(0)?.div_rounding(&c.saved(1)?, Some(mode))?;
                    Some(g.mul(&q)?.neg()?)
                } else {
                    None
                };
                Ok(vec![Some(g.clone()), db])
            })
    }

    /// `torch.div(self, other, rounding_mode=mode)`: true division when
    /// `mode` is None; else the rounded quotient in the promoted dtype (so
    /// integers stay integers), whose derivative is `grad * 0`.
    pub fn div_rounding(&self, other: &Tensor, mode: Option<RoundingMode>) -> Result<Tensor> {
        let kind = match mode {
            None => return self.div(other),
            Some(RoundingMode::Floor) => DivKind::Floor,
            Some(RoundingMode::Trunc) => DivKind::Trunc,
        };
        let out = divide(self, other, kind)?;
        record("DivBackward2", &[self, other]).finish(out, |c| {
            let z = c.grad().mul_scalar(0.0)?;
            Ok(vec![Some(z.clone()), Some(z)])
        })
    }
    /// Python's `//`: `div(self, other, rounding_mode="floor")`.
    pub fn floor_divide(&self, other: &Tensor) -> Result<Tensor> {
        self.div_rounding(other, Some(RoundingMode::Floor))
    }

    // ----- in place -----

    pub fn floor_(&self) -> Result<()> {
        self.apply_inplace("floor_", &[], |s| s.floor())
    }
    pub fn ceil_(&self) -> Result<()> {
        self.apply_inplace("ceil_", &[], |s| s.ceil())
    }
    pub fn trunc_(&self) -> Result<()> {
        self.apply_inplace("trunc_", &[], |s| s.trunc())
    }
    pub fn round_(&self, decimals: i64) -> Result<()> {
        self.apply_inplace("round_", &[], |s| s.round(decimals))
    }
    pub fn frac_(&self) -> Result<()> {
        self.apply_inplace("frac_", &[], |s| s.frac())
    }
    pub fn remainder_(&self, other: &Tensor) -> Result<()> {
        self.apply_inplace("remainder_", &[other], |s| s.remainder(other))
    }
    pub fn fmod_(&self, other: &Tensor) -> Result<()> {
        self.apply_inplace("fmod_", &[other], |s| s.fmod(other))
    }
    pub fn div_rounding_(&self, other: &Tensor, mode: Option<RoundingMode>) -> Result<()> {
        self.apply_inplace("div_", &[other], |s| s.div_rounding(other, mode))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_floor_div_matches_aten() {
        let f = |a: f64, b: f64| -> f64 { float_floor_div!(a, b) };
        assert_eq!(f(5.5, 2.0), 2.0);
        assert_eq!(f(-5.5, 2.0), -3.0);
        assert_eq!(f(3.0, -2.0), -2.0);
        assert!(f(-0.0, 3.0).is_sign_negative());
        assert_eq!(f(1.0, 0.0), f64::INFINITY);
        assert!(f(0.0, 0.0).is_nan());
        assert_eq!(int_floor_div(-7, 2), -4);
        assert_eq!(int_remainder(-7, 2), 1);
        assert_eq!(int_remainder(7, -2), -1);
        let r = |a: f64, b: f64| -> f64 { float_remainder!(a, b) };
        assert_eq!(r(-5.5, 2.0), 0.5);
        assert_eq!(r(-3.5, f64::INFINITY), f64::INFINITY);
    }
}
