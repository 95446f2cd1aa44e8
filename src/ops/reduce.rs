//! Reductions.
//!
//! | op   | backward                                          |
//! |------|---------------------------------------------------|
//! | sum  | grad (unsqueezed at reduced dims) expanded to self |
//! | mean | sum's backward / count                            |

use crate::autograd::record;
use crate::kernels::reduce::{reduce, sum_slice};
use crate::tensor::layout::wrap_dim;
use crate::tensor::{DType, Tensor};
use crate::Result;

/// Normalizes a dim list: wrapped, sorted, unique; empty means all dims.
pub fn reduce_dims(dims: &[i64], ndim: usize) -> Result<Vec<usize>> {
    if dims.is_empty() {
        return Ok((0..ndim).collect());
    }
    let mut out: Vec<usize> = dims
        .iter()
        .map(|&d| wrap_dim(d, ndim))
        .collect::<Result<_>>()?;
    out.sort_unstable();
    let n = out.len();
    out.dedup();
    if out.len() != n {
        crate::bail!(
            runtime,
            "dim {} appears multiple times in the list of dims",
            dims[0]
        );
    }
    Ok(out)
}

impl Tensor {
    /// Re-inserts reduced dims (as size 1) into a reduction's gradient so it
    /// broadcasts against the input.
    pub(crate) fn unsqueeze_reduced(&self, dims: &[usize], keepdim: bool) -> Result<Tensor> {
        if keepdim {
            return Ok(self.clone());
        }
        let mut g = self.clone();
        for &d in dims {
            g = g.unsqueeze(d as i64)?;
        }
        Ok(g)
    }

    /// Sum over all elements.
    pub fn sum(&self) -> Result<Tensor> {
        self.sum_dims(&[], false, None)
    }
    /// Sum over `dims` (all dims when empty). Integer and bool inputs sum to
    /// int64 unless `dtype` says otherwise.
    pub fn sum_dims(&self, dims: &[i64], keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
        let rd = reduce_dims(dims, self.ndim())?;
        let dt = dtype.unwrap_or(if self.dtype().is_floating() {
            self.dtype()
        } else {
            DType::I64
        });
        let x = self.cast_raw(dt);
        let out = match dt {
            DType::F32 => reduce::<f32, f32>(&x, &rd, keepdim, sum_slice),
            DType::F64 => reduce::<f64, f64>(&x, &rd, keepdim, sum_slice),
            DType::I64 => reduce::<i64, i64>(&x, &rd, keepdim, |v| v.iter().sum()),
            DType::Bool => {
                reduce::<i64, i64>(&x.cast_raw(DType::I64), &rd, keepdim, |v| v.iter().sum())
                    .cast_raw(DType::Bool)
            }
        };
        let shape = self.dims();
        Ok(record("SumBackward1", &[self]).finish(out, move |c| {
            let g = c.grad().unsqueeze_reduced(&rd, keepdim)?;
            let shape: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
            Ok(vec![Some(g.expand(&shape)?)])
        }))
    }
    pub fn mean(&self) -> Result<Tensor> {
        self.mean_dims(&[], false, None)
    }
    pub fn mean_dims(&self, dims: &[i64], keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
        let dt = dtype.unwrap_or(self.dtype());
        if !dt.is_floating() {
            crate::bail!(
                runtime,
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                match dt {
                    DType::I64 => "Long",
                    _ => "Bool",
                }
            );
        }
        let rd = reduce_dims(dims, self.ndim())?;
        let count: usize = rd.iter().map(|&d| self.shape()[d]).product();
        self.to_dtype(dt)?
            .sum_dims(dims, keepdim, None)?
            .div_scalar(count as f64)
    }
}
