//! Softmax family, computed stably (the lane maximum is subtracted first).
//! `y` is the op's result; sums run over `dim` with keepdim.
//!
//! | op          | d/dself                         |
//! |-------------|---------------------------------|
//! | softmax     | y * (grad - sum(grad * y))      |
//! | log_softmax | grad - exp(y) * sum(grad)       |

use crate::autograd::record;
use crate::kernels::lanes::{softmax_backward_dim, softmax_backward_rows, LogSoftmax, Softmax};
use crate::kernels::reduce::along_dim;
use crate::ops::reduce::exp_d;
use crate::tensor::layout::wrap_dim;
use crate::tensor::{DType, Tensor};
use crate::{bail, dispatch_float, Result};

impl Tensor {
    /// The input of a softmax-family op (cast to `dtype` first if given)
    /// and its wrapped dim, checked in torch's order: the view's history,
    /// the dim, then whether `op`'s kernel takes the dtype.
    fn softmax_input(&self, dim: i64, dtype: Option<DType>, op: &str) -> Result<(Tensor, usize)> {
        let x = match dtype {
            Some(dt) => self.to_dtype(dt)?,
            None => self.clone(),
        };
        crate::autograd::check_history_first(&[self])?;
        let d = wrap_dim(dim, x.ndim())?;
        // torch returns an empty input's (empty) result before it picks a
        // kernel, whatever the dtype
        if !x.dtype().is_floating() && x.numel() > 0 {
            let last = if d + 1 >= x.ndim() { "_lastdim" } else { "" };
            bail!(
                not_implemented,
                "\"{}{}_kernel_impl\" not implemented for '{}'",
                op,
                last,
                x.dtype().scalar_type_name()
            );
        }
        Ok((x, d))
    }

    /// `exp(x) / sum(exp(x))` along `dim`.
    pub fn softmax(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let (x, d) = self.softmax_input(dim, dtype, "softmax")?;
        if !x.dtype().is_floating() {
            return Ok(Tensor::zeros(x.shape(), x.dtype()));
        }
        let rec = record("SoftmaxBackward0", &[&x]).attr("dim", dim);
        let out = x.in_compute_dtype(|x| {
            Ok(dispatch_float!(x.dtype(), T => Tensor::from(along_dim::<T, T, _>(x, d, &Softmax, None)?)))
        })?;
        let dims = [d as i64];
        rec.save_output("result", 0).finish(out, move |c| {
            let (g, y) = (c.grad(), c.saved(0)?);
            if let Some(dx) = backward_fused(g, &y, d, false)? {
                return Ok(vec![Some(dx)]);
            }
            let s = g.mul(&y)?.sum_dims(&dims, true, None)?;
            Ok(vec![Some(y.mul(&g.sub(&s)?)?)])
        })
    }

    /// `x - log(sum(exp(x)))` along `dim`.
    pub fn log_softmax(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let (x, d) = self.softmax_input(dim, dtype, "log_softmax")?;
        if !x.dtype().is_floating() {
            return Ok(Tensor::zeros(x.shape(), x.dtype()));
        }
        let rec = record("LogSoftmaxBackward0", &[&x]).attr("dim", dim);
        let out = x.in_compute_dtype(|x| {
            Ok(dispatch_float!(x.dtype(), T => Tensor::from(along_dim::<T, T, _>(x, d, &LogSoftmax, None)?)))
        })?;
        let dims = [d as i64];
        rec.save_output("result", 0).finish(out, move |c| {
            let (g, y) = (c.grad(), c.saved(0)?);
            if let Some(dx) = backward_fused(g, &y, d, true)? {
                return Ok(vec![Some(dx)]);
            }
            let s = g.sum_dims(&dims, true, None)?;
            Ok(vec![Some(g.sub(&exp_d(&y)?.mul(&s)?)?)])
        })
    }
}

/// The table's backward (of log_softmax with `log`) as one kernel
/// ([`softmax_backward_rows`] along the last dim, [`softmax_backward_dim`]
/// along another) when it records no graph; None otherwise (the formulas
/// above then run as ops).
fn backward_fused(g: &Tensor, y: &Tensor, d: usize, log: bool) -> Result<Option<Tensor>> {
    use crate::kernels::copy::with_slice;
    if crate::autograd::is_grad_enabled()
        || y.ndim() == 0
        || g.dtype() != y.dtype()
        || y.dtype().is_reduced_float()
        || g.shape() != y.shape()
    {
        return Ok(None);
    }
    let cols = y.shape()[d];
    let outer: usize = y.shape()[..d].iter().product();
    let inner: usize = y.shape()[d + 1..].iter().product();
    // One op event, as torch's `_softmax_backward_data` / `_log_softmax_backward_data`.
    let name = if log {
        "LogSoftmaxBackwardDataBackward0"
    } else {
        "SoftmaxBackwardDataBackward0"
    };
    let _event = crate::autograd::profiler::op_range(name, &[g, y]);
    let dx = dispatch_float!(y.dtype(), T => {
        let mut dx = crate::tensor::pool::buffer::<T>(y.numel());
        with_slice::<T, _>(g, |gs| {
            with_slice::<T, _>(y, |ys| match inner {
                1 => softmax_backward_rows(gs, ys, cols, log, &mut dx),
                _ => softmax_backward_dim(gs, ys, [outer, cols, inner], log, &mut dx),
            })
        })??;
        Tensor::from_vec(dx, y.shape())?
    });
    Ok(Some(dx))
}
