//! Casts, copies, broadcasting helpers.

use crate::autograd::record;
use crate::kernels::copy::{contiguous_as, copy_as};
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::{DType, Tensor};
use crate::{bail, dispatch_all, Result};

impl Tensor {
    /// Values cast to `dtype` (torch's `.to(dtype)`); returns `self` if
    /// already of that dtype.
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let rec = record("ToCopyBackward0", &[self]);
        let out = self.try_cast_raw(dtype)?;
        if !dtype.is_floating() {
            return Ok(out);
        }
        let from = self.dtype();
        rec.finish(out, move |c| Ok(vec![Some(c.grad().to_dtype(from)?)]))
    }
    /// `self` cast to `dtype` without history (a contiguous copy unless the
    /// dtype already matches).
    pub fn cast_raw(&self, dtype: DType) -> Tensor {
        crate::buffer::pool::or_panic(self.try_cast_raw(dtype))
    }
    /// [`Tensor::cast_raw`], failing with torch's out-of-memory error when
    /// the system refuses the copy's memory.
    pub fn try_cast_raw(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        Ok(dispatch_all!(dtype, T => Tensor::from(copy_as::<T>(self)?)))
    }
    /// `f` run on `self` loaded into float32 when `self` is float16 or
    /// bfloat16 (torch's opmath: the kernel computes in float32, a raw cast
    /// outside the graph), its result rounded back to `self`'s dtype; other
    /// dtypes go straight to `f`.
    pub(crate) fn in_compute_dtype(
        &self,
        f: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let dt = self.dtype();
        if !dt.is_reduced_float() {
            return f(self);
        }
        f(&self.try_cast_raw(DType::F32)?)?.try_cast_raw(dt)
    }
    /// `f` of `self` cast to float32, its floating results cast back to
    /// `self`'s dtype, both casts recorded (`ToCopyBackward0`): for the
    /// composite ops that run on float16/bfloat16 through float32 kernels.
    pub(crate) fn through_float32(
        &self,
        f: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let out = f(&self.to_dtype(DType::F32)?)?;
        match out.dtype() {
            DType::F32 => out.to_dtype(self.dtype()),
            _ => Ok(out),
        }
    }
    /// A copy with its own memory (torch's `clone()`), laid out as torch's
    /// `preserve_format`: `self`'s strides when dense, else dense in
    /// `self`'s memory order.
    pub fn clone_tensor(&self) -> Result<Tensor> {
        let rec = record("CloneBackward0", &[self]);
        let out = dispatch_all!(self.dtype(), T => Tensor::from(copy_as::<T>(self)?));
        rec.finish(out, |c| Ok(vec![Some(c.grad().clone())]))
    }
    /// A contiguous copy with its own memory (torch's
    /// `clone(memory_format=torch.contiguous_format)`).
    pub fn clone_contiguous(&self) -> Result<Tensor> {
        let rec = record("CloneBackward0", &[self]);
        let out = dispatch_all!(self.dtype(), T => Tensor::from(contiguous_as::<T>(self)?));
        rec.finish(out, |c| Ok(vec![Some(c.grad().clone())]))
    }
    /// `self` if contiguous, else a contiguous copy (recorded as torch
    /// records it, a `CloneBackward0`).
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        let rec = record("CloneBackward0", &[self]);
        let out = dispatch_all!(self.dtype(), T => Tensor::from(contiguous_as::<T>(self)?));
        rec.finish(out, |c| Ok(vec![Some(c.grad().clone())]))
    }
    /// A zero-copy broadcast view with no history (for kernels).
    pub(crate) fn broadcast_to_raw(&self, shape: &[usize]) -> Result<Tensor> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        Ok(self.alias_with_layout(self.layout().expand(shape)?))
    }
    /// Sums dims so the result has `shape` (the reverse of broadcasting).
    pub fn sum_to_size(&self, shape: &[usize]) -> Result<Tensor> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        if !broadcast_shapes(shape, self.shape()).is_ok_and(|b| b.as_slice() == self.shape()) {
            bail!(
                runtime,
                "size {{{:?}}} is not expandable to size {{{:?}}}.",
                shape,
                self.shape()
            );
        }
        let lead = self.ndim() - shape.len();
        let dims: Vec<i64> = (0..self.ndim())
            .filter(|&i| i < lead || (shape[i - lead] == 1 && self.shape()[i] != 1))
            .map(|i| i as i64)
            .collect();
        // As torch's at::sum_to: a 0-d target is the plain sum; dropped
        // leading dims make the result a view of the keepdim sum; otherwise
        // it is the keepdim sum itself.
        if shape.is_empty() {
            return self.sum();
        }
        let summed = if dims.is_empty() {
            self.clone()
        } else {
            self.sum_dims(&dims, true, None)?
        };
        if lead == 0 {
            return Ok(summed);
        }
        let target: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        summed.view(&target)
    }
}
