//! In-place random fills (`uniform_`, `normal_`, `bernoulli_`,
//! `exponential_`) and `bernoulli`: samples from the global generator
//! (`manual_seed`), written in with `copy_`, so torch's in-place checks
//! apply (a leaf that requires grad must be filled under no_grad).

use crate::error::cpp_double;
use crate::tensor::{DType, Tensor};
use crate::{bail, Result};

fn float_only(t: &Tensor, kernel: &str) -> Result<()> {
    if !t.dtype().is_floating() {
        bail!(
            not_implemented,
            "\"{kernel}\" not implemented for '{}'",
            t.dtype().scalar_type_name()
        );
    }
    Ok(())
}

impl Tensor {
    /// Uniform samples in [from, to).
    pub fn uniform_(&self, from: f64, to: f64) -> Result<()> {
        float_only(self, "check_uniform_bounds")?;
        if from > to {
            bail!(
                runtime,
                "uniform_ expects to return a [from, to) range, but found from={} > to={}",
                cpp_double(from),
                cpp_double(to)
            );
        }
        let u = Tensor::rand(self.shape(), DType::F64)?;
        self.copy_(&u.mul_scalar(to - from)?.add_scalar(from)?)
    }
    /// Normal samples with mean `mean` and standard deviation `std`.
    pub fn normal_(&self, mean: f64, std: f64) -> Result<()> {
        float_only(self, "normal_kernel_cpu")?;
        if std < 0.0 {
            bail!(
                runtime,
                "normal expects std >= 0.0, but found std {}",
                cpp_double(std)
            );
        }
        let z = Tensor::randn(self.shape(), DType::F64)?;
        self.copy_(&z.mul_scalar(std)?.add_scalar(mean)?)
    }
    /// 1 with probability `p`, else 0 (any dtype).
    pub fn bernoulli_(&self, p: f64) -> Result<()> {
        if !(0.0..=1.0).contains(&p) {
            bail!(
                runtime,
                "bernoulli_ expects p to be in [0, 1], but got p={}",
                cpp_double(p)
            );
        }
        let u = Tensor::rand(self.shape(), DType::F64)?;
        self.copy_(&u.lt_scalar(p)?)
    }
    /// Exponential samples with rate `lambd`.
    pub fn exponential_(&self, lambd: f64) -> Result<()> {
        if !self.dtype().is_floating() {
            bail!(
                runtime,
                "Exponential distribution is a continuous probability distribution. dtype must be a floating point but you specified {}",
                self.dtype().scalar_type_name()
            );
        }
        if lambd <= 0.0 {
            bail!(
                runtime,
                "exponential_ expects lambda > 0.0, but found lambda={}",
                cpp_double(lambd)
            );
        }
        let u = Tensor::rand(self.shape(), DType::F64)?;
        // -log(1 - u) / lambd, with u in [0, 1).
        self.copy_(&u.neg()?.log1p()?.mul_scalar(-1.0 / lambd)?)
    }
    /// 1 with probability `self[i]`, else 0, in self's dtype.
    pub fn bernoulli(&self) -> Result<Tensor> {
        float_only(self, "bernoulli_tensor_cpu_p_")?;
        let bad = self.lt_scalar(0)?.logical_or(&self.gt_scalar(1)?)?;
        if bad.any(None, false)?.item()?.to_f64() != 0.0 {
            bail!(
                runtime,
                "Expected p_in >= 0 && p_in <= 1 to be true, but got false."
            );
        }
        let u = Tensor::rand(self.shape(), self.dtype())?;
        u.lt(&self.detach())?.to_dtype(self.dtype())
    }
}
