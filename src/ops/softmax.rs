//! Softmax family, computed stably (the lane maximum is subtracted first).
//! `y` is the op's result; sums run over `dim` with keepdim.
//!
//! | op          | d/dself                         |
//! |-------------|---------------------------------|
//! | softmax     | y * (grad - sum(grad * y))      |
//! | log_softmax | grad - exp(y) * sum(grad)       |

use crate::autograd::record;
use crate::kernels::lanes::{LogSoftmax, Softmax};
use crate::kernels::reduce::along_dim;
use crate::ops::reduce::exp_d;
use crate::tensor::layout::wrap_dim;
use crate::tensor::{DType, Tensor};
use crate::{bail, dispatch_float, Result};

impl Tensor {
    /// The input of a softmax-family op: cast to `dtype` first if given.
    fn softmax_input(&self, dtype: Option<DType>, kernel: &str) -> Result<Tensor> {
        let x = match dtype {
            Some(dt) => self.to_dtype(dt)?,
            None => self.clone(),
        };
        if !x.dtype().is_floating() {
            bail!(
                runtime,
                "\"{}\" not implemented for '{}'",
                kernel,
                x.dtype().scalar_type_name()
            );
        }
        Ok(x)
    }

    /// `exp(x) / sum(exp(x))` along `dim`.
    pub fn softmax(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let x = self.softmax_input(dtype, "softmax_lastdim_kernel_impl")?;
        let d = wrap_dim(dim, x.ndim())?;
        let rec = record("SoftmaxBackward0", &[&x]);
        let out = dispatch_float!(x.dtype(), T => along_dim::<T, T, _>(&x, d, &Softmax, None));
        let dims = [d as i64];
        rec.save_output("result", 0).finish(out, move |c| {
            let (g, y) = (c.grad(), c.saved(0)?);
            let s = g.mul(&y)?.sum_dims(&dims, true, None)?;
            Ok(vec![Some(y.mul(&g.sub(&s)?)?)])
        })
    }

    /// `x - log(sum(exp(x)))` along `dim`.
    pub fn log_softmax(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let x = self.softmax_input(dtype, "log_softmax_lastdim_kernel_impl")?;
        let d = wrap_dim(dim, x.ndim())?;
        let rec = record("LogSoftmaxBackward0", &[&x]);
        let out = dispatch_float!(x.dtype(), T => along_dim::<T, T, _>(&x, d, &LogSoftmax, None));
        let dims = [d as i64];
        rec.save_output("result", 0).finish(out, move |c| {
            let (g, y) = (c.grad(), c.saved(0)?);
            let s = g.sum_dims(&dims, true, None)?;
            Ok(vec![Some(g.sub(&exp_d(&y)?.mul(&s)?)?)])
        })
    }
}
