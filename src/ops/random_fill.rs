//! In-place random fills (`uniform_`, `normal_`, `bernoulli_`,
//! `exponential_`) and `bernoulli` from the default generator: the
//! samplers (torch's values, any generator) are in `tensor/sampling.rs`.

use crate::tensor::Tensor;
use crate::Result;

impl Tensor {
    /// Uniform samples in [from, to) (torch's values for the same seed).
    pub fn uniform_(&self, from: f64, to: f64) -> Result<()> {
        self.uniform_gen_(from, to, None)
    }
    /// Normal samples with mean `mean` and standard deviation `std`.
    pub fn normal_(&self, mean: f64, std: f64) -> Result<()> {
        self.normal_gen_(mean, std, None)
    }
    /// 1 with probability `p`, else 0 (any dtype).
    pub fn bernoulli_(&self, p: f64) -> Result<()> {
        self.bernoulli_scalar_gen_(p, None)
    }
    /// Exponential samples with rate `lambd`.
    pub fn exponential_(&self, lambd: f64) -> Result<()> {
        self.exponential_gen_(lambd, None)
    }
    /// 1 with probability `self[i]`, else 0, in self's dtype.
    pub fn bernoulli(&self) -> Result<Tensor> {
        self.bernoulli_gen(None)
    }
}
