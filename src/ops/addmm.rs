//! `beta * input + alpha * product` for the matrix products (addmm, addmv,
//! baddbmm, addbmm), and `inner`/`vdot`: composed of the products of
//! `linalg` and pointwise ops, so their gradients are those ops'. With
//! `beta == 0`, `input` is ignored (its NaN and inf too), as in torch.

use crate::tensor::{Scalar, Tensor};
use crate::{bail, Result};

/// A coefficient (alpha, beta, value) as torch applies it: truncated to an
/// integer when every operand is an integer tensor, so the result keeps
/// their dtype.
pub(crate) fn integral_coefficient(c: Scalar, operands: &[&Tensor]) -> Scalar {
    match c {
        Scalar::Float(f) if operands.iter().all(|t| t.dtype().is_integral()) => {
            Scalar::Int(f as i64)
        }
        other => other,
    }
}

/// `beta * input + alpha * product`.
pub(crate) fn combine(
    input: &Tensor,
    product: Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    let beta = integral_coefficient(beta, &[input, &product]);
    let alpha = integral_coefficient(alpha, &[input, &product]);
    let p = match alpha.to_f64() {
        1.0 => product,
        _ => product.mul(&product.wrap_scalar(alpha))?,
    };
    match beta.to_f64() {
        0.0 => {
            // Broadcast shape only: input's values are not read.
            let shape: Vec<i64> =
                crate::tensor::layout::broadcast_shapes(input.shape(), p.shape())?
                    .iter()
                    .map(|&d| d as i64)
                    .collect();
            p.expand(&shape)?.contiguous()
        }
        1.0 => input.add(&p),
        _ => input.mul(&input.wrap_scalar(beta))?.add(&p),
    }
}

impl Tensor {
    /// `beta * self + alpha * (mat1 @ mat2)` for 2-D mat1, mat2.
    pub fn addmm(
        &self,
        mat1: &Tensor,
        mat2: &Tensor,
        beta: Scalar,
        alpha: Scalar,
    ) -> Result<Tensor> {
        if let Some(v) = crate::autograd::autocast::lowered(&[self, mat1, mat2])? {
            return v[0].addmm(&v[1], &v[2], beta, alpha);
        }
        combine(self, mat1.mm(mat2)?, beta, alpha)
    }
    /// `beta * self + alpha * (mat @ vec)`.
    pub fn addmv(&self, mat: &Tensor, vec: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
        combine(self, mat.mv(vec)?, beta, alpha)
    }
    /// `beta * self + alpha * bmm(batch1, batch2)`.
    pub fn baddbmm(
        &self,
        batch1: &Tensor,
        batch2: &Tensor,
        beta: Scalar,
        alpha: Scalar,
    ) -> Result<Tensor> {
        if let Some(v) = crate::autograd::autocast::lowered(&[self, batch1, batch2])? {
            return v[0].baddbmm(&v[1], &v[2], beta, alpha);
        }
        combine(self, batch1.bmm(batch2)?, beta, alpha)
    }
    /// `beta * self + alpha * sum_b(batch1[b] @ batch2[b])`.
    pub fn addbmm(
        &self,
        batch1: &Tensor,
        batch2: &Tensor,
        beta: Scalar,
        alpha: Scalar,
    ) -> Result<Tensor> {
        if let Some(v) = crate::autograd::autocast::lowered(&[self, batch1, batch2])? {
            return v[0].addbmm(&v[1], &v[2], beta, alpha);
        }
        combine(
            self,
            {
                let p = batch1.bmm(batch2)?;
                let dt = p.dtype();
                p.sum_dims(&[0], false, Some(dt))?
            },
            beta,
            alpha,
        )
    }
    /// The sum over the last dim of every pair of rows: shape
    /// `self.shape[:-1] + other.shape[:-1]`.
    pub fn inner(&self, other: &Tensor) -> Result<Tensor> {
        if self.ndim() == 0 || other.ndim() == 0 {
            return self.mul(other);
        }
        let (k1, k2) = (
            self.shape()[self.ndim() - 1],
            other.shape()[other.ndim() - 1],
        );
        if k1 != k2 {
            bail!(runtime, "inner() the last dimension must match on both input tensors but got shapes {:?} and {:?}", self.shape(), other.shape());
        }
        let out: Vec<i64> = self.shape()[..self.ndim() - 1]
            .iter()
            .chain(&other.shape()[..other.ndim() - 1])
            .map(|&d| d as i64)
            .collect();
        let a = self.reshape(&[-1, k1 as i64])?;
        let b = other.reshape(&[-1, k2 as i64])?;
        a.mm(&b.t()?)?.reshape(&out)
    }
    /// `dot` (for real tensors the conjugate changes nothing).
    pub fn vdot(&self, other: &Tensor) -> Result<Tensor> {
        self.dot(other)
    }
}
