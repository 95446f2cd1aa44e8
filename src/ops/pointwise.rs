//! Binary and ternary pointwise ops: pow, maximum/minimum, clamp, where.
//! All broadcast and promote like torch (comparisons, logical and bitwise
//! ops are in `compare.rs`).
//!
//! | op                        | d/dself                                         | d/dother                                       |
//! |---------------------------|-------------------------------------------------|------------------------------------------------|
//! | pow(self, e: Tensor)      | where(e == 0, 0, grad * e * self^(e-1))         | grad * where(self == 0 & e >= 0, 0, result * log(self)) |
//! | pow(self, e: Scalar)      | e == 0 ? 0 : grad * e * self^(e-1)              |                                                |
//! | pow(b: Scalar, e)         |                                                 | grad * result * log(b); 0 where b == 0 & e >= 0 |
//! | maximum(self, other)      | grad * (self > other ? 1 : self == other ? ½ : self < other ? 0 : 1) | same with self and other swapped |
//! | minimum(self, other)      | as maximum with < and > exchanged               |                                                |
//! | clamp(self, min, max)     | where(min <= self <= max, grad, 0)              | min: where(self < min & min < max, grad, 0); max: where(self > max \| max < min, grad, 0) |
//! | where(cond, self, other)  | where(cond, grad, 0)                            | where(cond, 0, grad)                           |

use crate::autograd::record;
use crate::kernels::binary::{int_map2, map2, map3};
use crate::kernels::unary::{apply1_inplace, f, int_map1, ipow, map1, vmath};
use crate::kernels::vmap;
use crate::tensor::{DType, Element, Float, Scalar, Tensor};
use crate::{bail, dispatch_all, Result};

/// torch's `result_type` over tensors and wrapped numbers (Python scalars):
/// dimensioned tensors outrank 0-dim tensors, which outrank wrapped
/// numbers, unless a lower class is of a higher category
/// (bool < integral < floating).
pub fn result_type_of(tensors: &[&Tensor], scalars: &[Scalar]) -> DType {
    fn upd(acc: Option<DType>, d: DType) -> Option<DType> {
        Some(acc.map_or(d, |a| DType::promote(a, d)))
    }
    let (mut dim, mut zero, mut wrapped) = (None, None, None);
    for t in tensors {
        if t.ndim() == 0 {
            zero = upd(zero, t.dtype());
        } else {
            dim = upd(dim, t.dtype());
        }
    }
    for s in scalars {
        wrapped = upd(wrapped, s.dtype());
    }
    // ATen's combine_categories(higher, lower).
    fn combine(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
        match (higher, lower) {
            (Some(h), _) if h.is_floating() => Some(h),
            (Some(h), Some(l)) if h == DType::Bool || l.is_floating() => Some(DType::promote(h, l)),
            (Some(h), _) => Some(h),
            (None, l) => l,
        }
    }
    combine(dim, combine(zero, wrapped)).unwrap_or(DType::F32)
}

/// A 0-dim zero of `dt` (broadcasts against anything).
fn zero(dt: DType) -> Tensor {
    Tensor::scalar(Scalar::Int(0), dt)
}

/// `grad` where `mask`, else 0.
fn masked_grad(mask: &Tensor, g: &Tensor) -> Result<Tensor> {
    Tensor::where_cond(mask, g, &zero(g.dtype()))
}

fn scalar_i64(s: Scalar) -> i64 {
    match s {
        Scalar::Bool(b) => b as i64,
        Scalar::Int(i) => i,
        Scalar::Float(v) => v as i64,
    }
}

/// Elementwise max (or min) in dtype `dt` of already cast operands; floats
/// propagate NaN, bools are `or` (or `and`).
fn max_min_raw(a: &Tensor, b: &Tensor, dt: DType, is_max: bool) -> Result<Tensor> {
    if dt.is_reduced_float() {
        // exact in float32 (max and min pick a value), rounded back losslessly
        return max_min_raw(a, b, DType::F32, is_max)?.try_cast_raw(dt);
    }
    let (a, b) = (a.cast_raw(dt), b.cast_raw(dt));
    Ok(match (dt, is_max) {
        (DType::F32, true) => Tensor::from(map2::<f32, f32>(&a, &b, |x, y| x.max_val(y))?),
        (DType::F32, false) => Tensor::from(map2::<f32, f32>(&a, &b, |x, y| x.min_val(y))?),
        (DType::F64, true) => Tensor::from(map2::<f64, f64>(&a, &b, |x, y| x.max_val(y))?),
        (DType::F64, false) => Tensor::from(map2::<f64, f64>(&a, &b, |x, y| x.min_val(y))?),
        (DType::Bool, true) => Tensor::from(map2::<bool, bool>(&a, &b, |x, y| x | y)?),
        (DType::Bool, false) => Tensor::from(map2::<bool, bool>(&a, &b, |x, y| x & y)?),
        (int, _) => crate::dispatch_ints!(int, T => Tensor::from(if is_max {
            map2::<T, T>(&a, &b, |x, y| x.max(y))?
        } else {
            map2::<T, T>(&a, &b, |x, y| x.min(y))?
        })),
    })
}

/// torch's gradient of maximum/minimum for operand `x` (the other is `y`):
/// `grad` where `x` wins, half of it on a tie, and 0 where `x` loses (a 0
/// written, not `grad * 0`, so an inf or NaN gradient does not reach the
/// losing side); where a NaN makes neither win, both get `grad`. One pass.
fn max_min_grad(x: &Tensor, y: &Tensor, g: &Tensor, is_max: bool) -> Result<Tensor> {
    fn go<T: Element, G: Float>(
        x: &Tensor,
        y: &Tensor,
        g: &Tensor,
        is_max: bool,
    ) -> Result<Tensor> {
        let half = G::from_f64(0.5);
        map3::<T, T, G, G>(x, y, g, move |x, y, g| {
            let lose = if is_max { x < y } else { x > y };
            if lose {
                G::zero()
            } else if x == y {
                g * half
            } else {
                g
            }
        })
        .map(Tensor::from)
    }
    let reduced = x.dtype().is_reduced_float() || y.dtype().is_reduced_float();
    if crate::autograd::is_grad_enabled() || reduced || g.dtype().is_reduced_float() {
        // create_graph (and float16/bfloat16): the same selection as ops,
        // differentiable in `g`.
        let lose = if is_max { x.lt(y)? } else { x.gt(y)? };
        let tie = Tensor::where_cond(&x.eq(y)?, &g.mul_scalar(0.5)?, g)?;
        return Tensor::where_cond(&lose, &zero(g.dtype()), &tie);
    }
    let dt = x.result_type(y);
    let (x, y) = (x.cast_raw(dt), y.cast_raw(dt));
    dispatch_all!(dt, T => crate::dispatch_float!(g.dtype(), G => go::<T, G>(&x, &y, g, is_max)))
}

impl Tensor {
    // ----- pow -----

    /// `self ** exponent`, both tensors.
    /// d/dself = where(e == 0, 0, grad * e * self^(e-1));
    /// d/dexponent = grad * where(self == 0 & e >= 0, 0, result * log(self)).
    pub fn pow(&self, exponent: &Tensor) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self, exponent])?;
        let dt = self.result_type(exponent);
        let (a, b) = (self.cast_raw(dt.compute()), exponent.cast_raw(dt.compute()));
        let rec = record("PowBackward1", &[self, exponent]);
        let out = match dt.compute() {
            DType::F32 => Tensor::from(vmap::map2_simd::<f32, vmath::Pow>(&a, &b)?),
            DType::F64 => Tensor::from(vmap::map2_simd::<f64, vmath::Pow>(&a, &b)?),
            DType::Bool => bail!(not_implemented, "\"pow\" not implemented for 'Bool'"),
            _ => Tensor::from(int_map2(&a, &b, ipow)?),
        }
        .try_cast_raw(dt)?;
        rec.save("self", self)
            .save("exponent", exponent)
            .save_output("result", 0)
            .finish(out, |c| {
                let (x, e, g) = (c.saved(0)?, c.saved(1)?, c.grad());
                let dx = if c.needs(0) {
                    let v = g.mul(&e.mul(&x.pow(&e.sub_scalar(1)?)?)?)?;
                    Some(Tensor::where_cond(&e.eq_scalar(0)?, &zero(v.dtype()), &v)?)
                } else {
                    None
                };
                let de = if c.needs(1) {
                    let r = c.saved(2)?;
                    let v = r.mul(&x.to_dtype(r.dtype())?.log()?)?;
                    let at_zero = x.eq_scalar(0)?.logical_and(&e.ge_scalar(0)?)?;
                    Some(g.mul(&Tensor::where_cond(&at_zero, &zero(v.dtype()), &v)?)?)
                } else {
                    None
                };
                Ok(vec![dx, de])
            })
    }

    /// `self ** exponent` for a Python-number exponent.
    /// d/dself = exponent == 0 ? 0 : grad * exponent * self^(exponent-1).
    pub fn pow_scalar(&self, exponent: impl Into<Scalar>) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let e: Scalar = exponent.into();
        let dt = crate::tensor::dtype::result_type_scalar(self.dtype(), e);
        let x = self.cast_raw(dt.compute());
        let rec = record("PowBackward0", &[self]).attr("exponent", e);
        let out = match dt.compute() {
            DType::F32 | DType::F64 if !f::pow_has_shortcut(e.to_f64()) => {
                let ev = e.to_f64();
                match dt.compute() {
                    DType::F32 => Tensor::from(vmap::map1_with(&x, vmath::PowBy(ev as f32))?),
                    _ => Tensor::from(vmap::map1_with(&x, vmath::PowBy(ev))?),
                }
            }
            DType::F32 => {
                let ev = e.to_f64();
                Tensor::from(map1::<f32, f32>(&x, move |v| f::pow_scalar(v, ev)))
            }
            DType::F64 => {
                let ev = e.to_f64();
                Tensor::from(map1::<f64, f64>(&x, move |v| f::pow_scalar(v, ev)))
            }
            _ => {
                let ei = scalar_i64(e);
                if ei < 0 {
                    bail!(
                        runtime,
                        "Integers to negative integer powers are not allowed."
                    );
                }
                let r = Tensor::from(map1::<i64, i64>(&x.cast_raw(DType::I64), move |v| {
                    ipow(v, ei)
                }));
                r.cast_raw(dt)
            }
        }
        .try_cast_raw(dt)?;
        rec.save("self", self).finish(out, move |c| {
            let g = c.grad();
            if e.to_f64() == 0.0 {
                return Ok(vec![Some(g.zeros_like())]);
            }
            let em1 = match e {
                Scalar::Float(v) => Scalar::Float(v - 1.0),
                other => Scalar::Int(scalar_i64(other) - 1),
            };
            let x = c.saved(0)?;
            Ok(vec![Some(g.mul(&x.pow_scalar(em1)?.mul_scalar(e)?)?)])
        })
    }

    /// `base ** exponent` for a Python-number base.
    /// d/dexponent = grad * result * log(base) (0 where base == 0 and
    /// exponent >= 0).
    pub fn scalar_pow(base: impl Into<Scalar>, exponent: &Tensor) -> Result<Tensor> {
        crate::autograd::check_history_first(&[exponent])?;
        let b: Scalar = base.into();
        let dt = crate::tensor::dtype::result_type_scalar(exponent.dtype(), b);
        let e = exponent.cast_raw(dt.compute());
        let rec = record("PowBackward2", &[exponent]);
        let out = match dt.compute() {
            DType::F32 => {
                let bv = b.to_f64() as f32;
                Tensor::from(vmap::map1_with(&e, vmath::PowOf(bv))?)
            }
            DType::F64 => {
                let bv = b.to_f64();
                Tensor::from(vmap::map1_with(&e, vmath::PowOf(bv))?)
            }
            DType::Bool => bail!(not_implemented, "\"pow\" not implemented for 'Bool'"),
            _ => {
                let bv = scalar_i64(b);
                Tensor::from(int_map1(&e, move |v| ipow(bv, v)))
            }
        }
        .try_cast_raw(dt)?;
        rec.save("exponent", exponent)
            .save_output("result", 0)
            .finish(out, move |c| {
                let (g, r) = (c.grad(), c.saved(1)?);
                let v = r.mul_scalar(b.to_f64().ln())?;
                let v = if b.to_f64() == 0.0 {
                    let e = c.saved(0)?;
                    Tensor::where_cond(&e.ge_scalar(0)?, &zero(v.dtype()), &v)?
                } else {
                    v
                };
                Ok(vec![Some(g.mul(&v)?)])
            })
    }

    pub fn pow_(&self, exponent: &Tensor) -> Result<()> {
        self.apply_inplace("pow_", &[exponent], |s| s.pow(exponent))
    }
    pub fn pow_scalar_(&self, exponent: impl Into<Scalar>) -> Result<()> {
        let e: Scalar = exponent.into();
        let ev = e.to_f64();
        let fp = self.dtype().is_floating();
        let done = self.try_fast_inplace("pow_", fp, |t| match t.dtype() {
            DType::F32 if !f::pow_has_shortcut(ev) => vmap::apply1_with(t, vmath::PowBy(ev as f32)),
            DType::F32 => apply1_inplace::<f32>(t, move |v| f::pow_scalar(v, ev)),
            _ if !f::pow_has_shortcut(ev) => vmap::apply1_with(t, vmath::PowBy(ev)),
            _ => apply1_inplace::<f64>(t, move |v| f::pow_scalar(v, ev)),
        })?;
        if done {
            return Ok(());
        }
        self.apply_inplace("pow_", &[], |s| s.pow_scalar(e))
    }

    // ----- maximum / minimum -----

    /// Elementwise maximum (NaN propagates). Ties split the gradient in half.
    pub fn maximum(&self, other: &Tensor) -> Result<Tensor> {
        self.max_min(other, true)
    }
    /// Elementwise minimum (NaN propagates). Ties split the gradient in half.
    pub fn minimum(&self, other: &Tensor) -> Result<Tensor> {
        self.max_min(other, false)
    }
    fn max_min(&self, other: &Tensor, is_max: bool) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self, other])?;
        let dt = self.result_type(other);
        let name = if is_max {
            "MaximumBackward0"
        } else {
            "MinimumBackward0"
        };
        let rec = record(name, &[self, other]);
        let out = max_min_raw(self, other, dt, is_max)?;
        rec.save("self", self)
            .save("other", other)
            .finish(out, move |c| {
                let (a, b, g) = (c.saved(0)?, c.saved(1)?, c.grad());
                let da = c.grad_for(0, || max_min_grad(&a, &b, g, is_max))?;
                let db = c.grad_for(1, || max_min_grad(&b, &a, g, is_max))?;
                Ok(vec![da, db])
            })
    }

    // ----- clamp -----

    /// Clamps to `[min, max]` (either bound optional, not both). A NaN bound
    /// gives NaN. d/dself = where(min <= self <= max, grad, 0).
    pub fn clamp(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
        self.clamp_scalars(min, max, "ClampBackward1")
    }
    pub fn clamp_min(&self, min: impl Into<Scalar>) -> Result<Tensor> {
        self.clamp_scalars(Some(min.into()), None, "ClampMinBackward0")
    }
    pub fn clamp_max(&self, max: impl Into<Scalar>) -> Result<Tensor> {
        self.clamp_scalars(None, Some(max.into()), "ClampMaxBackward0")
    }
    /// `clip` is `clamp`.
    pub fn clip(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
        self.clamp(min, max)
    }

    fn clamp_scalars(
        &self,
        min: Option<Scalar>,
        max: Option<Scalar>,
        name: &'static str,
    ) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        if min.is_none() && max.is_none() {
            bail!(
                runtime,
                "torch.clamp: At least one of 'min' or 'max' must not be None"
            );
        }
        let bounds: Vec<Scalar> = min.iter().chain(max.iter()).copied().collect();
        let dt = result_type_of(&[self], &bounds);
        for b in &bounds {
            b.checked_to(dt)?;
        }
        let x = self.cast_raw(dt.compute());
        let rec = record(name, &[self]);
        let out = match dt.compute() {
            DType::F32 => {
                let lo = min.map_or(f32::NEG_INFINITY, |m| m.to_f64() as f32);
                let hi = max.map_or(f32::INFINITY, |m| m.to_f64() as f32);
                Tensor::from(map1::<f32, f32>(&x, move |v| f::clamp(v, lo, hi)))
            }
            DType::F64 => {
                let lo = min.map_or(f64::NEG_INFINITY, |m| m.to_f64());
                let hi = max.map_or(f64::INFINITY, |m| m.to_f64());
                Tensor::from(map1::<f64, f64>(&x, move |v| f::clamp(v, lo, hi)))
            }
            DType::Bool => bail!(
                not_implemented,
                "\"clamp_scalar_cpu\" not implemented for 'Bool'"
            ),
            _ => {
                let lo = min.map_or(i64::MIN, scalar_i64);
                let hi = max.map_or(i64::MAX, scalar_i64);
                Tensor::from(int_map1(&x, move |v| v.max(lo).min(hi)))
            }
        }
        .try_cast_raw(dt)?;
        rec.save("self", self).finish(out, move |c| {
            let (x, g) = (c.saved(0)?, c.grad());
            let lo = min.map_or(f64::NEG_INFINITY, |m| m.to_f64());
            let hi = max.map_or(f64::INFINITY, |m| m.to_f64());
            let inside = match x.dtype() {
                DType::F32 => {
                    let (lo, hi) = (lo as f32, hi as f32);
                    Tensor::from(map1::<f32, bool>(&x, move |v| v >= lo && v <= hi))
                }
                _ => Tensor::from(map1::<f64, bool>(&x.cast_raw(DType::F64), move |v| {
                    v >= lo && v <= hi
                })),
            };
            Ok(vec![Some(masked_grad(&inside, g)?)])
        })
    }

    /// Clamps to tensor bounds (broadcast; either optional, not both).
    /// d/dself = where(min <= self <= max, grad, 0);
    /// d/dmin = where(self < min & min < max, grad, 0);
    /// d/dmax = where(self > max | max < min, grad, 0)
    /// (with one bound: where(self < min, ...) / where(self > max, ...)).
    pub fn clamp_tensor(&self, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
        self.clamp_tensors(min, max, "ClampBackward0")
    }
    pub fn clamp_min_tensor(&self, min: &Tensor) -> Result<Tensor> {
        self.clamp_tensors(Some(min), None, "ClampMinBackward1")
    }
    pub fn clamp_max_tensor(&self, max: &Tensor) -> Result<Tensor> {
        self.clamp_tensors(None, Some(max), "ClampMaxBackward1")
    }

    fn clamp_tensors(
        &self,
        min: Option<&Tensor>,
        max: Option<&Tensor>,
        name: &'static str,
    ) -> Result<Tensor> {
        let mut all = vec![self];
        all.extend(min);
        all.extend(max);
        crate::autograd::check_history_first(&all)?;
        if all.len() == 1 {
            bail!(
                runtime,
                "torch.clamp: At least one of 'min' or 'max' must not be None"
            );
        }
        let dt = result_type_of(&all, &[]);
        if dt == DType::Bool {
            bail!(not_implemented, "\"clamp_cpu\" not implemented for 'Bool'");
        }
        let rec = record(name, &all);
        let mut out = self.cast_raw(dt);
        if let Some(lo) = min {
            out = max_min_raw(&out, lo, dt, true)?;
        }
        if let Some(hi) = max {
            out = max_min_raw(&out, hi, dt, false)?;
        }
        let (has_min, has_max) = (min.is_some(), max.is_some());
        let placeholder = Tensor::scalar(Scalar::Int(0), dt);
        let lo = min.cloned().unwrap_or_else(|| placeholder.clone());
        let hi = max.cloned().unwrap_or(placeholder);
        rec.save("self", self)
            .save("min", &lo)
            .save("max", &hi)
            .finish(out, move |c| {
                let (x, lo, hi, g) = (c.saved(0)?, c.saved(1)?, c.saved(2)?, c.grad());
                let mut grads = Vec::new();
                if c.needs(0) {
                    let inside = match (has_min, has_max) {
                        (true, true) => x.ge(&lo)?.logical_and(&x.le(&hi)?)?,
                        (true, false) => x.ge(&lo)?,
                        _ => x.le(&hi)?,
                    };
                    grads.push(Some(masked_grad(&inside, g)?));
                } else {
                    grads.push(None);
                }
                if has_min {
                    grads.push(if c.needs(1) {
                        let below = x.lt(&lo)?;
                        let m = if has_max {
                            below.logical_and(&lo.lt(&hi)?)?
                        } else {
                            below
                        };
                        Some(masked_grad(&m, g)?)
                    } else {
                        None
                    });
                }
                if has_max {
                    let i = grads.len();
                    grads.push(if c.needs(i) {
                        let above = x.gt(&hi)?;
                        let m = if has_min {
                            above.logical_or(&hi.lt(&lo)?)?
                        } else {
                            above
                        };
                        Some(masked_grad(&m, g)?)
                    } else {
                        None
                    });
                }
                Ok(grads)
            })
    }

    pub fn clamp_(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<()> {
        if min.is_none() && max.is_none() {
            return self.clamp(min, max).map(|_| ());
        }
        // torch's clamp_(Scalar) names the output type by its C++ name
        let bounds: Vec<Scalar> = min.iter().chain(max.iter()).copied().collect();
        let dt = result_type_of(&[self], &bounds);
        if dt.category() > self.dtype().category() {
            bail!(
                runtime,
                "result type {} can't be cast to the desired output type {}",
                dt.scalar_type_name(),
                self.dtype().cpp_type_name()
            );
        }
        let fp = self.dtype().is_floating();
        let done = self.try_fast_inplace("clamp_", fp, |t| match t.dtype() {
            DType::F32 => {
                let lo = min.map_or(f32::NEG_INFINITY, |m| m.to_f64() as f32);
                let hi = max.map_or(f32::INFINITY, |m| m.to_f64() as f32);
                apply1_inplace::<f32>(t, move |v| f::clamp(v, lo, hi))
            }
            _ => {
                let lo = min.map_or(f64::NEG_INFINITY, |m| m.to_f64());
                let hi = max.map_or(f64::INFINITY, |m| m.to_f64());
                apply1_inplace::<f64>(t, move |v| f::clamp(v, lo, hi))
            }
        })?;
        if done {
            return Ok(());
        }
        self.apply_inplace("clamp_", &[], |s| s.clamp(min, max))
    }
    pub fn clamp_min_(&self, min: impl Into<Scalar>) -> Result<()> {
        self.clamp_(Some(min.into()), None)
    }
    pub fn clamp_max_(&self, max: impl Into<Scalar>) -> Result<()> {
        self.clamp_(None, Some(max.into()))
    }
    pub fn clip_(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<()> {
        self.clamp_(min, max)
    }
    pub fn clamp_tensor_(&self, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<()> {
        let others: Vec<&Tensor> = min.iter().chain(max.iter()).copied().collect();
        self.apply_inplace("clamp_", &others, |s| s.clamp_tensor(min, max))
    }

    // ----- where -----

    /// `x` where `cond`, else `y` (broadcast over all three; `cond` must be
    /// bool). d/dx = where(cond, grad, 0); d/dy = where(cond, 0, grad).
    pub fn where_cond(cond: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor> {
        crate::autograd::check_history_first(&[x, y])?;
        if cond.dtype() != DType::Bool {
            bail!(
                runtime,
                "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
                cond.dtype().scalar_type_name()
            );
        }
        let dt = x.result_type(y);
        let (a, b) = (x.cast_raw(dt), y.cast_raw(dt));
        let rec = record("WhereBackward0", &[x, y]);
        let out = dispatch_all!(dt, T => Tensor::from(map3::<bool, T, T, T>(cond, &a, &b, |c, p, q| if c { p } else { q })?));
        rec.save("condition", cond).finish(out, |c| {
            let (cond, g) = (c.saved(0)?, c.grad());
            let z = zero(g.dtype());
            let dx = c.grad_for(0, || Tensor::where_cond(&cond, g, &z))?;
            let dy = c.grad_for(1, || Tensor::where_cond(&cond, &z, g))?;
            Ok(vec![dx, dy])
        })
    }
}
