//! Differentiable ops, one file per family. Each op computes its value with
//! a kernel and states its derivative once, next to it, with
//! `autograd::record(...).finish(out, |ctx| ...)`. Gradients are written in
//! ferrograd ops, so they are differentiable themselves.

pub mod activation;
pub mod addmm;
pub mod arith;
pub mod batching;
pub mod combine;
pub mod compare;
pub mod conv;
pub mod convert;
pub mod decomp;
pub mod decomp_grad;
pub mod decomp_more;
pub mod dropout;
pub mod einsum;
pub mod encode;
pub mod index;
pub mod inplace;
pub mod interpolate;
pub mod join;
pub mod linalg;
pub mod loss;
pub mod lu;
pub mod nan;
pub mod normalization;
pub mod pad;
pub mod pointwise;
pub mod pool;
pub mod random_fill;
pub mod reduce;
pub mod rounding;
pub mod shape;
pub mod softmax;
pub mod sort;
pub mod special;
pub mod special_more;
pub mod table;
pub mod ternary;
pub mod trig;
pub mod unary;
pub mod view;

use crate::tensor::{dtype::result_type, DType, Scalar, Tensor};

/// A shape (or dims) as the signed sizes the view ops take.
pub(crate) fn to_i64(shape: &[usize]) -> Vec<i64> {
    shape.iter().map(|&d| d as i64).collect()
}

impl Tensor {
    /// torch.result_type(self, other).
    pub fn result_type(&self, other: &Tensor) -> DType {
        result_type(
            self.dtype(),
            self.ndim() == 0,
            other.dtype(),
            other.ndim() == 0,
        )
    }
    /// A Python number as a 0-dim operand for `self ⊕ value`: a "wrapped
    /// number" whose dtype follows torch's scalar promotion. A bool stays a
    /// bool tensor (the lowest category, so the result dtype is the same),
    /// as torch wraps it, so that `x - True` is refused as torch does.
    pub fn wrap_scalar(&self, value: Scalar) -> Tensor {
        if let Scalar::Bool(_) = value {
            return Tensor::scalar(value, DType::Bool);
        }
        let dt = crate::tensor::dtype::result_type_scalar(self.dtype(), value);
        // beside a dimensioned float16/bfloat16 tensor a number stays at
        // float64 precision (it does not promote, being 0-dim): kernels read
        // it into float32 unrounded, as torch's CPU scalars
        let dt = if dt.is_reduced_float() && self.ndim() > 0 {
            DType::F64
        } else {
            dt
        };
        Tensor::scalar(value, dt)
    }
}
