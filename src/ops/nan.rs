//! NaN-aware ops: nan_to_num (d/dself = grad where self is finite, else 0),
//! nansum and nanmean (NaNs count as absent: zero gradient), and
//! count_nonzero.

use super::activation::{piecewise_backward, Slope};
use super::unary::Saves;
use crate::autograd::record;
use crate::kernels::unary::map1;
use crate::tensor::DType;
use crate::{bail, Result, Tensor};
use std::sync::Arc;

/// `v` with NaN and the infinities replaced.
macro_rules! replace {
    ($v:expr, $nan:expr, $posinf:expr, $neginf:expr) => {{
        let v = $v;
        if v.is_nan() {
            $nan
        } else if v.is_infinite() && v > 0.0 {
            $posinf
        } else if v.is_infinite() {
            $neginf
        } else {
            v
        }
    }};
}

impl Tensor {
    /// NaN, +inf and -inf replaced (by default 0 and the dtype's largest
    /// and lowest finite values); integers and bools are returned as is.
    pub fn nan_to_num(&self, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> Result<Tensor> {
        if !self.dtype().is_floating() {
            return self.clone_tensor();
        }
        let rec = record("NanToNumBackward0", &[self]);
        let out = match self.dtype() {
            low @ (DType::F16 | DType::BF16) => {
                // in float32, the defaults the low dtype's own limits
                let (hi, lo) = match low {
                    DType::F16 => (half::f16::MAX.to_f64(), half::f16::MIN.to_f64()),
                    _ => (half::bf16::MAX.to_f64(), half::bf16::MIN.to_f64()),
                };
                let (n, p, m) = (
                    nan as f32,
                    posinf.unwrap_or(hi) as f32,
                    neginf.unwrap_or(lo) as f32,
                );
                let x = self.try_cast_raw(DType::F32)?;
                Tensor::from(map1::<f32, f32>(&x, move |v| replace!(v, n, p, m)))
                    .try_cast_raw(low)?
            }
            DType::F32 => {
                let (n, p, m) = (
                    nan as f32,
                    posinf.map_or(f32::MAX, |v| v as f32),
                    neginf.map_or(f32::MIN, |v| v as f32),
                );
                Tensor::from(map1::<f32, f32>(self, move |v| replace!(v, n, p, m)))
            }
            _ => {
                let (p, m) = (posinf.unwrap_or(f64::MAX), neginf.unwrap_or(f64::MIN));
                Tensor::from(map1::<f64, f64>(self, move |v| replace!(v, nan, p, m)))
            }
        };
        let finite: Slope = Arc::new(|x: &Tensor| x.isfinite()?.to_dtype(x.dtype()));
        self.unary_record(rec, out, Saves::Input, move |g, x| {
            piecewise_backward(g, &x.unwrap(), "NanToNumBackwardBackward0", finite.clone())
        })
    }

    /// Sum over `dims` (all when empty) with NaNs counted as zero.
    pub fn nansum(&self, dims: &[i64], keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
        // (torch checks its dims in order: a repeat before one out of range)
        crate::ops::reduce::reduce_dims_in_order(dims, self.ndim())?;
        self.without_nans()?.sum_dims(dims, keepdim, dtype)
    }

    /// Mean over `dims` of the values that are not NaN.
    pub fn nanmean(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        if !self.dtype().is_floating() {
            bail!(
                runtime,
                "nanmean(): expected input to have floating point or complex dtype but got {}",
                self.dtype().scalar_type_name()
            );
        }
        let count = self
            .isnan()?
            .logical_not()?
            .sum_dims(dims, keepdim, Some(self.dtype()))?;
        self.nansum(dims, keepdim, None)?.div(&count)
    }

    /// How many elements over `dims` (all when empty) are not zero (int64).
    pub fn count_nonzero(&self, dims: &[i64]) -> Result<Tensor> {
        self.ne_scalar(0)?.sum_dims(dims, false, Some(DType::I64))
    }

    fn without_nans(&self) -> Result<Tensor> {
        if !self.dtype().is_floating() {
            return Ok(self.clone());
        }
        Tensor::where_cond(&self.isnan()?, &self.zeros_like(), self)
    }
}
