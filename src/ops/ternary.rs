//! Three-operand pointwise ops: lerp, addcmul, addcdiv. The value is
//! computed in ATen's order, in one pass over the operands where they
//! share a floating dtype (else by the ops it is made of: the same
//! roundings), and recorded as one node.
//!
//! | op                         | d/dself         | d/dend or d/dtensor1     | d/dweight or d/dtensor2          |
//! |----------------------------|-----------------|--------------------------|----------------------------------|
//! | lerp(self, end, w)         | grad * (1 - w)  | grad * w                 | grad * (end - self)              |
//! | addcmul(self, t1, t2, v)   | grad            | grad * v * t2            | grad * v * t1                    |
//! | addcdiv(self, t1, t2, v)   | grad            | grad * v / t2            | -grad * v * t1 / t2^2            |

use crate::autograd::{no_grad, record};
use crate::kernels::binary::{map2, map3};
use crate::tensor::{DType, Element, Scalar, Tensor};
use crate::{bail, Result};

/// `f(a[i], b[i], c[i])` in one pass, broadcast, where the three share a
/// floating dtype; `None` otherwise.
fn fused3(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    f32f: impl Fn(f32, f32, f32) -> f32 + Sync + Send,
    f64f: impl Fn(f64, f64, f64) -> f64 + Sync + Send,
) -> Option<Result<Tensor>> {
    let dt = a.dtype();
    if b.dtype() != dt || c.dtype() != dt {
        return None;
    }
    match dt {
        DType::F32 => Some(map3(a, b, c, f32f).map(Tensor::from)),
        DType::F64 => Some(map3(a, b, c, f64f).map(Tensor::from)),
        _ => None,
    }
}

/// lerp of one element: `s + w (e - s)` where |w| < 0.5, else
/// `e - (e - s)(1 - w)` (ATen's two forms).
#[inline(always)]
fn lerp_of<T: Element + crate::tensor::Float>(s: T, e: T, w: T) -> T {
    let d = e - s;
    if w.abs() < T::from_f64(0.5) {
        s + d * w
    } else {
        e - d * (T::from_f64(1.0) - w)
    }
}

impl Tensor {
    /// lerp's value in `self`'s dtype (float32 or float64), no history.
    fn lerp_value(&self, end: &Tensor, weight: &Weight) -> Result<Tensor> {
        Ok(match weight {
            Weight::Scalar(w) => {
                // ATen's two forms, the factor rounded to the dtype
                let near_end = w.abs() >= 0.5;
                let f = if near_end { 1.0 - w } else { *w };
                match self.dtype() {
                    DType::F32 => {
                        let f = f as f32;
                        Tensor::from(map2::<f32, f32>(self, end, move |s, e| match near_end {
                            true => e - (e - s) * f,
                            false => s + (e - s) * f,
                        })?)
                    }
                    _ => Tensor::from(map2::<f64, f64>(self, end, move |s, e| match near_end {
                        true => e - (e - s) * f,
                        false => s + (e - s) * f,
                    })?),
                }
            }
            Weight::Tensor(w) => fused3(self, end, w, lerp_of::<f32>, lerp_of::<f64>)
                .expect("lerp's operands share a floating dtype (checked above)")?,
        })
    }
}

/// The lerp weight: a Python number or a tensor.
#[derive(Clone)]
pub enum Weight {
    Scalar(f64),
    Tensor(Tensor),
}

impl Tensor {
    /// `self + weight * (end - self)`, or `end - (end - self) * (1 - weight)`
    /// where |weight| >= 0.5 (ATen's two forms, exact at both ends).
    pub fn lerp(&self, end: &Tensor, weight: &Weight) -> Result<Tensor> {
        match weight_tensor(weight) {
            Some(w) => crate::autograd::check_history_first(&[self, end, w])?,
            None => crate::autograd::check_history_first(&[self, end])?,
        }
        if !self.dtype().is_floating() {
            let t = if self.dtype() == DType::Bool {
                "Bool"
            } else {
                "Long"
            };
            bail!(
                not_implemented,
                "\"lerp_kernel_scalar\" not implemented for '{t}'"
            );
        }
        for (what, t) in [("end", Some(end)), ("weight", weight_tensor(weight))] {
            if let Some(t) = t {
                if t.dtype() != self.dtype() {
                    bail!(
                        runtime,
                        "expected dtype {} for `{what}` but got dtype {}",
                        self.dtype().cpp_type_name(),
                        t.dtype().cpp_type_name()
                    );
                }
            }
        }
        let out = if self.dtype().is_reduced_float() {
            // float16/bfloat16: in float32, rounded back
            let f32_of = |t: &Tensor| t.try_cast_raw(DType::F32);
            let w = match weight {
                Weight::Scalar(w) => Weight::Scalar(*w),
                Weight::Tensor(w) => Weight::Tensor(f32_of(w)?),
            };
            let _g = crate::autograd::no_grad();
            f32_of(&self.detach())?
                .lerp(&f32_of(&end.detach())?, &w)?
                .try_cast_raw(self.dtype())?
        } else {
            self.lerp_value(end, weight)?
        };
        match weight {
            Weight::Scalar(w) => {
                let w = *w;
                record("LerpBackward0", &[self, end]).finish(out, move |c| {
                    let g = c.grad();
                    let ds = c.grad_for(0, || g.mul_scalar(1.0 - w))?;
                    let de = c.grad_for(1, || g.mul_scalar(w))?;
                    Ok(vec![ds, de])
                })
            }
            Weight::Tensor(w) => record("LerpBackward1", &[self, end, w])
                .save("self", self)
                .save("end", end)
                .save("weight", w)
                .finish(out, |c| {
                    let (g, w) = (c.grad(), c.saved(2)?);
                    let ds = c.grad_for(0, || g.mul(&w.neg()?.add_scalar(1.0)?))?;
                    let de = if c.needs(1) { Some(g.mul(&w)?) } else { None };
                    let dw = c.grad_for(2, || g.mul(&c.saved(1)?.sub(&c.saved(0)?)?))?;
                    Ok(vec![ds, de, dw])
                }),
        }
    }

    /// `self + value * tensor1 * tensor2`.
    pub fn addcmul(&self, tensor1: &Tensor, tensor2: &Tensor, value: Scalar) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self, tensor1, tensor2])?;
        let value = crate::ops::addmm::integral_coefficient(value, &[self, tensor1, tensor2]);
        let v = value.to_f64();
        let fused = fused3(
            self,
            tensor1,
            tensor2,
            move |s, a, b| s + a * (v as f32) * b,
            move |s, a, b| s + a * v * b,
        );
        let out = match fused {
            Some(out) => out?,
            None => {
                let _g = no_grad();
                let (t1, t2) = (tensor1.detach(), tensor2.detach());
                let scaled = t1.mul(&t1.wrap_scalar(value))?.mul(&t2)?;
                self.detach().add(&scaled)?
            }
        };
        record("AddcmulBackward0", &[self, tensor1, tensor2])
            .save("tensor1", tensor1)
            .save("tensor2", tensor2)
            .finish(out, move |c| {
                let g = c.grad();
                let d1 = c.grad_for(1, || g.mul(&c.saved(1)?)?.mul_scalar(v))?;
                let d2 = c.grad_for(2, || g.mul(&c.saved(0)?)?.mul_scalar(v))?;
                Ok(vec![Some(g.clone()), d1, d2])
            })
    }

    /// `self + value * tensor1 / tensor2` (floating operands only).
    pub fn addcdiv(&self, tensor1: &Tensor, tensor2: &Tensor, value: Scalar) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self, tensor1, tensor2])?;
        if !tensor1.dtype().is_floating() && !tensor2.dtype().is_floating() {
            bail!(runtime, "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.");
        }
        let v = value.to_f64();
        let fused = fused3(
            self,
            tensor1,
            tensor2,
            move |s, a, b| s + a * (v as f32) / b,
            move |s, a, b| s + a * v / b,
        );
        let out = match fused {
            Some(out) => out?,
            None => {
                let _g = no_grad();
                let (t1, t2) = (tensor1.detach(), tensor2.detach());
                let scaled = t1.mul(&t1.wrap_scalar(value))?.div(&t2)?;
                self.detach().add(&scaled)?
            }
        };
        record("AddcdivBackward0", &[self, tensor1, tensor2])
            .save("tensor1", tensor1)
            .save("tensor2", tensor2)
            .finish(out, move |c| {
                let (g, t2) = (c.grad(), c.saved(1)?);
                let d1 = c.grad_for(1, || g.div(&t2)?.mul_scalar(v))?;
                let d2 = if c.needs(2) {
                    let t1 = c.saved(0)?;
                    Some(g.mul(&t1)?.div(&t2.mul(&t2)?)?.mul_scalar(-v)?)
                } else {
                    None
                };
                Ok(vec![Some(g.clone()), d1, d2])
            })
    }

    pub fn lerp_(&self, end: &Tensor, weight: &Weight) -> Result<()> {
        let mut others = vec![end];
        if let Weight::Tensor(w) = weight {
            others.push(w);
        }
        self.apply_inplace("lerp_", &others, |s| s.lerp(end, weight))
    }
    pub fn addcmul_(&self, tensor1: &Tensor, tensor2: &Tensor, value: Scalar) -> Result<()> {
        self.apply_inplace("addcmul_", &[tensor1, tensor2], |s| {
            s.addcmul(tensor1, tensor2, value)
        })
    }
    pub fn addcdiv_(&self, tensor1: &Tensor, tensor2: &Tensor, value: Scalar) -> Result<()> {
        self.apply_inplace("addcdiv_", &[tensor1, tensor2], |s| {
            s.addcdiv(tensor1, tensor2, value)
        })
    }
}

fn weight_tensor(w: &Weight) -> Option<&Tensor> {
    match w {
        Weight::Tensor(t) => Some(t),
        Weight::Scalar(_) => None,
    }
}
