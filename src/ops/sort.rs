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

/// Up to this many, the first `k` of a long row are found in one pass.
const FEW: usize = 32;

/// The first `k` indices of each contiguous row of `n` values in stable
/// sorted order. (value, index) pairs compared by value, then index, are
/// totally ordered the way a stable sort leaves them, so a partial
/// selection (`k < n`) gives the same indices as the full sort, without
/// it. Rows are split over the threads (each row's result does not depend
/// on the split).
fn row_orders<T: Element + PartialOrd>(
    x: &Tensor,
    n: usize,
    k: usize,
    descending: bool,
) -> Result<Vec<i64>> {
    let data = x.try_to_vec::<T>()?;
    let rows = data.len().checked_div(n).unwrap_or(0);
    let mut out = crate::buffer::pool::try_buffer::<i64>(rows * k)?;
    if k == 0 {
        return Ok(out);
    }
    let cmp = |a: &(T, usize), b: &(T, usize)| {
        let by_value = match descending {
            false => nan_last(&a.0, &b.0),
            true => nan_last(&b.0, &a.0),
        };
        by_value.then(a.1.cmp(&b.1))
    };
    // about 4096 compared elements per part
    let min_len = (4096 / n.max(1)).max(1) * k;
    crate::parallel::for_each_chunk_mut_aligned(&mut out, min_len, k, |start, chunk| {
        let mut pairs: Vec<(T, usize)> = Vec::with_capacity(n);
        for (r, o) in chunk.chunks_mut(k).enumerate() {
            let row = &data[(start / k + r) * n..][..n];
            pairs.clear();
            if k <= FEW && k * 64 <= n {
                // one pass keeping the best k in order: most elements lose
                // one comparison against the k-th
                for (i, &v) in row.iter().enumerate() {
                    let c = (v, i);
                    if pairs.len() == k {
                        if cmp(&c, &pairs[k - 1]) != Ordering::Less {
                            continue;
                        }
                        pairs.pop();
                    }
                    let at = pairs.partition_point(|p| cmp(p, &c) == Ordering::Less);
                    pairs.insert(at, c);
                }
            } else {
                pairs.extend(row.iter().copied().zip(0..));
                if k < n {
                    pairs.select_nth_unstable_by(k - 1, cmp);
                }
                pairs[..k].sort_unstable_by(cmp);
            }
            for (slot, p) in o.iter_mut().zip(&pairs) {
                *slot = p.1 as i64;
            }
        }
    });
    Ok(out)
}

impl Tensor {
    /// The indices that sort `self` along `dim` (stable).
    pub fn argsort(&self, dim: i64, descending: bool) -> Result<Tensor> {
        if self.ndim() == 0 {
            wrap_dim(dim, 1)?;
            return Ok(Tensor::zeros(&[], DType::I64));
        }
        let n = self.shape()[wrap_dim(dim, self.ndim())?];
        self.first_in_order(dim, n, descending)
    }
    /// The indices of the first `k` elements along `dim` in stable sorted
    /// order (`self.ndim() > 0`, `k <= size`).
    fn first_in_order(&self, dim: i64, k: usize, descending: bool) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim())? as i64;
        let x = self.detach().movedim(&[d], &[-1])?.contiguous()?;
        let n = *x.shape().last().expect("ndim > 0");
        let order = crate::dispatch_all!(self.dtype(), T => row_orders::<T>(&x, n, k, descending)?);
        let mut shape = x.shape().to_vec();
        *shape.last_mut().expect("ndim > 0") = k;
        Tensor::from_vec(order, &shape)?
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
        if self.ndim() == 0 {
            return Ok((self.clone_tensor()?, self.argsort(dim, largest)?));
        }
        let idx = self.first_in_order(dim, k as usize, largest)?;
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
            .first_in_order(dim, k as usize, false)?
            .narrow(dim, k - 1, 1)?
            .contiguous()?;
        let values = self.gather(dim, &idx)?;
        match keepdim {
            true => Ok((values, idx)),
            false => Ok((values.squeeze_dim(dim)?, idx.squeeze_dim(dim)?)),
        }
    }
}
