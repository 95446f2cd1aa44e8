//! Sorting: sort, argsort, msort, topk, kthvalue. The order is computed
//! here (stable; NaN above every number, as torch orders it); the values
//! are `gather`ed with it, so their gradient is gather's (grad scattered
//! back to where each value came from). Among equal values topk and
//! kthvalue take the first in order; torch's selection may pick another
//! of them (same values, other indices).

use crate::tensor::layout::wrap_dim;
use crate::tensor::{DType, Element, Tensor};
use crate::{bail, Result};
use std::cmp::Ordering;

/// Ascending order with NaN last (NaNs equal among themselves).
fn nan_last<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    #[allow(clippy::eq_op)]
    let (an, bn) = (a != a, b != b);
    match (an, bn) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(b).unwrap_or(Ordering::Equal),
    }
}

/// The stable order of each contiguous row of `n` values.
fn row_orders<T: Element + PartialOrd>(x: &Tensor, n: usize, descending: bool) -> Vec<i64> {
    let data = x.to_vec::<T>();
    let mut out = Vec::with_capacity(data.len());
    let mut idx: Vec<usize> = Vec::with_capacity(n);
    for row in data.chunks(n.max(1)) {
        idx.clear();
        idx.extend(0..row.len());
        match descending {
            false => idx.sort_by(|&a, &b| nan_last(&row[a], &row[b])),
            true => idx.sort_by(|&a, &b| nan_last(&row[b], &row[a])),
        }
        out.extend(idx.iter().map(|&i| i as i64));
    }
    out
}

impl Tensor {
    /// The indices that sort `self` along `dim` (stable).
    pub fn argsort(&self, dim: i64, descending: bool) -> Result<Tensor> {
        if self.ndim() == 0 {
            wrap_dim(dim, 1)?;
            return Ok(Tensor::zeros(&[], DType::I64));
        }
        let d = wrap_dim(dim, self.ndim())? as i64;
        let x = self.detach().movedim(&[d], &[-1])?.contiguous()?;
        let n = *x.shape().last().expect("ndim > 0");
        let order = crate::dispatch_all!(self.dtype(), T => row_orders::<T>(&x, n, descending));
        Tensor::from_vec(order, x.shape())?
            .movedim(&[-1], &[d])?
            .contiguous()
    }
    /// (values, indices) sorted along `dim`.
    pub fn sort(&self, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
        crate::autograd::check_history_first(&[self])?;
        let idx = self.argsort(dim, descending)?;
        if self.ndim() == 0 {
            return Ok((self.clone_tensor()?, idx));
        }
        Ok((self.gather(dim, &idx)?, idx))
    }
    /// The `k` largest (or smallest) values along `dim` and their indices,
    /// in sorted order.
    pub fn topk(&self, k: i64, dim: i64, largest: bool) -> Result<(Tensor, Tensor)> {
        crate::autograd::check_history_first(&[self])?;
        let size = if self.ndim() == 0 {
            wrap_dim(dim, 1)?;
            1
        } else {
            self.shape()[wrap_dim(dim, self.ndim())?] as i64
        };
        if k < 0 || k > size {
            bail!(runtime, "selected index k out of range");
        }
        let idx = self.argsort(dim, largest)?;
        if self.ndim() == 0 {
            return Ok((self.clone_tensor()?, idx));
        }
        let idx = idx.narrow(dim, 0, k as usize)?.contiguous()?;
        Ok((self.gather(dim, &idx)?, idx))
    }
    /// The `k`-th smallest value (1-based) along `dim` and its index.
    pub fn kthvalue(&self, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let d = wrap_dim(dim, self.ndim().max(1))?;
        let size = self.shape().get(d).copied().unwrap_or(1) as i64;
        if k < 1 || k > size {
            bail!(
                runtime,
                "kthvalue(): selected number k out of range for dimension {d}"
            );
        }
        if self.ndim() == 0 {
            return Ok((self.clone_tensor()?, Tensor::zeros(&[], DType::I64)));
        }
        let idx = self
            .argsort(dim, false)?
            .narrow(dim, k - 1, 1)?
            .contiguous()?;
        let values = self.gather(dim, &idx)?;
        match keepdim {
            true => Ok((values, idx)),
            false => Ok((values.squeeze_dim(dim)?, idx.squeeze_dim(dim)?)),
        }
    }
}
