//! `one_hot` (integer class indices to indicator vectors; no gradient) and
//! `normalize` (`x / max(||x||_p, eps)` along a dim, composed of norm,
//! clamp_min and div, so its gradient follows).

use crate::{bail, DType, Result, Tensor};

impl Tensor {
    /// `out[..., c] = (self[...] == c)` as int64, with `num_classes` classes
    /// (-1: one more than the largest index).
    pub fn one_hot(&self, num_classes: i64) -> Result<Tensor> {
        if self.dtype() != DType::I64 {
            bail!(
                runtime,
                "one_hot is only applicable to index tensor of type LongTensor."
            );
        }
        let idx = self.to_vec::<i64>();
        if idx.iter().any(|&i| i < 0) {
            bail!(runtime, "Class values must be non-negative.");
        }
        let classes = if num_classes == -1 {
            match idx.iter().max() {
                Some(&m) => m + 1,
                None => bail!(
                    runtime,
                    "Can not infer total number of classes from empty tensor."
                ),
            }
        } else if num_classes < -1 {
            bail!(
                runtime,
                "num_classes should be -1 or a non-negative integer"
            );
        } else {
            if idx.iter().any(|&i| i >= num_classes) {
                bail!(runtime, "Class values must be smaller than num_classes.");
            }
            num_classes
        } as usize;
        let mut out = vec![0i64; idx.len() * classes];
        for (row, &i) in idx.iter().enumerate() {
            out[row * classes + i as usize] = 1;
        }
        let mut shape = self.shape().to_vec();
        shape.push(classes);
        Tensor::from_vec(out, &shape)
    }

    /// `self / max(||self||_p, eps)` along `dim`.
    pub fn normalize(&self, p: f64, dim: i64, eps: f64) -> Result<Tensor> {
        let norm = self.norm(p, &[dim], true, None)?.clamp_min(eps)?;
        self.div(&norm.expand_as(self)?)
    }
}
