//! Dropout (ATen's `_dropout_impl`, the CPU path): in training, each
//! element is kept with probability 1 - p and scaled by 1 / (1 - p):
//! `out = input * noise`, `noise = bernoulli(1 - p) / (1 - p)`, so the
//! gradient is `grad * noise` (MulBackward0). Outside training it is the
//! identity. Feature (channel-wise) dropout draws one noise value per
//! channel and broadcasts it over the channel's elements.

use crate::autograd::no_grad;
use crate::{bail, Result, Tensor};

impl Tensor {
    /// The noise `out = input * noise` multiplies by (None: the identity):
    /// of `self`'s shape, or of `shape` (broadcast over `self`) when given.
    fn dropout_noise(
        &self,
        p: f64,
        train: bool,
        shape: Option<&[usize]>,
    ) -> Result<Option<Tensor>> {
        if !(0.0..=1.0).contains(&p) {
            bail!(
                value,
                "dropout probability has to be between 0 and 1, but got {p:?}"
            );
        }
        if !train || self.numel() == 0 {
            return Ok(None);
        }
        if !self.dtype().is_floating() {
            bail!(
                runtime,
                "result type Float can't be cast to the desired output type {}",
                self.dtype().scalar_type_name()
            );
        }
        let _g = no_grad();
        let noise = match shape {
            Some(s) => Tensor::zeros(s, self.dtype()),
            None => self.zeros_like(),
        };
        if p < 1.0 {
            noise.bernoulli_(1.0 - p)?;
            noise.div_(&noise.wrap_scalar((1.0 - p).into()))?;
        }
        Ok(Some(noise))
    }

    pub fn dropout(&self, p: f64, train: bool) -> Result<Tensor> {
        match self.dropout_noise(p, train, None)? {
            Some(noise) => self.mul(&noise),
            None => Ok(self.clone()),
        }
    }

    pub fn dropout_(&self, p: f64, train: bool) -> Result<()> {
        match self.dropout_noise(p, train, None)? {
            Some(noise) => self.mul_(&noise),
            None => Ok(()),
        }
    }

    /// The shape of feature dropout's noise: the batch and channel dims
    /// (`batched`) or the channel dim, then ones.
    fn feature_shape(&self, batched: bool) -> Vec<usize> {
        let keep = if batched { 2 } else { 1 };
        let mut shape = self.shape().to_vec();
        for d in shape.iter_mut().skip(keep) {
            *d = 1;
        }
        shape
    }

    /// Channel-wise dropout: whole channels zeroed with probability `p`.
    pub fn feature_dropout(&self, p: f64, train: bool, batched: bool) -> Result<Tensor> {
        let shape = self.feature_shape(batched);
        match self.dropout_noise(p, train, Some(&shape))? {
            Some(noise) => self.mul(&noise),
            None => Ok(self.clone()),
        }
    }

    pub fn feature_dropout_(&self, p: f64, train: bool, batched: bool) -> Result<()> {
        let shape = self.feature_shape(batched);
        match self.dropout_noise(p, train, Some(&shape))? {
            Some(noise) => self.mul_(&noise),
            None => Ok(()),
        }
    }
}
