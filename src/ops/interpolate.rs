//! `nn.functional.interpolate`'s resampling of the trailing spatial dims of
//! `[N, C, *spatial]`, one dim at a time, composed of differentiable ops:
//! - nearest / nearest-exact: `index_select` of each output position's
//!   source (ATen's `nearest_idx` and its exact variant, in float32 for a
//!   float32 input as ATen computes them);
//! - linear (bilinear, trilinear): the two neighbours' `index_select`s
//!   weighted by `1 - lambda` and `lambda` (ATen's
//!   `area_pixel_compute_source_index`);
//! - area: adaptive average pooling.
//!
//! The gradient follows from `index_select`'s (an index_add).

use crate::tensor::DType;
use crate::{bail, Result, Tensor};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterpMode {
    Nearest,
    NearestExact,
    /// linear, bilinear or trilinear, by the input's rank.
    Linear,
    Area,
}

/// ATen's `area_pixel_compute_scale`: the source step per output step.
fn pixel_scale(input: usize, out: usize, align_corners: bool, scale: Option<f64>) -> f64 {
    if align_corners {
        if out > 1 {
            (input as f64 - 1.0) / (out as f64 - 1.0)
        } else {
            0.0
        }
    } else {
        match scale {
            Some(s) if s > 0.0 => 1.0 / s,
            _ => input as f64 / out as f64,
        }
    }
}

/// Rounds like the dtype ATen computes in (float32 for float32 input).
fn in_precision(v: f64, dtype: DType) -> f64 {
    if dtype == DType::F32 {
        v as f32 as f64
    } else {
        v
    }
}

impl Tensor {
    /// Resamples the last `out.len()` dims to sizes `out`; `scales` are the
    /// user's scale factors when the sizes came from them (they, not the
    /// size ratio, set the source positions, as in torch).
    pub fn interpolate(
        &self,
        out: &[usize],
        scales: Option<&[f64]>,
        mode: InterpMode,
        align_corners: bool,
    ) -> Result<Tensor> {
        let s = out.len();
        if s == 0 || self.ndim() != s + 2 {
            bail!(
                runtime,
                "interpolate: expected a {}-D input for {s} output sizes, but got input of size {:?}",
                s + 2,
                self.shape()
            );
        }
        if !self.dtype().is_floating() {
            bail!(
                not_implemented,
                "\"upsample\" not implemented for '{}'",
                self.dtype().scalar_type_name()
            );
        }
        if out.contains(&0) {
            bail!(
                runtime,
                "Input and output sizes should be greater than 0, but got input {:?} and output {out:?}",
                &self.shape()[2..]
            );
        }
        if mode == InterpMode::Area {
            let sizes: Vec<Option<i64>> = out.iter().map(|&o| Some(o as i64)).collect();
            return self.adaptive_avg_pool(s, &sizes);
        }
        let dt = self.dtype();
        let mut y = self.clone();
        for (d, &o) in out.iter().enumerate() {
            let dim = d + 2;
            let n = self.shape()[dim];
            let scale = scales.map(|v| v[d]);
            if mode != InterpMode::Linear {
                let step = in_precision(pixel_scale(n, o, false, scale), dt);
                let src: Vec<i64> = (0..o)
                    .map(|j| {
                        let shift = if mode == InterpMode::NearestExact {
                            0.5
                        } else {
                            0.0
                        };
                        let p = in_precision((j as f64 + shift) * step, dt).floor() as i64;
                        p.min(n as i64 - 1)
                    })
                    .collect();
                y = y.index_select(dim as i64, &Tensor::from_vec(src, &[o])?)?;
                continue;
            }
            let step = in_precision(pixel_scale(n, o, align_corners, scale), dt);
            let (mut lo, mut hi) = (Vec::with_capacity(o), Vec::with_capacity(o));
            let (mut w_lo, mut w_hi) = (Vec::with_capacity(o), Vec::with_capacity(o));
            for j in 0..o {
                let src = if align_corners {
                    in_precision(step * j as f64, dt)
                } else {
                    in_precision(step * (j as f64 + 0.5) - 0.5, dt).max(0.0)
                };
                let i0 = (src as i64).min(n as i64 - 1);
                let i1 = if i0 < n as i64 - 1 { i0 + 1 } else { i0 };
                let lambda = in_precision(src - i0 as f64, dt).clamp(0.0, 1.0);
                lo.push(i0);
                hi.push(i1);
                w_hi.push(lambda);
                w_lo.push(in_precision(1.0 - lambda, dt));
            }
            // Weights shaped to broadcast along `dim`.
            let mut wshape = vec![1usize; self.ndim()];
            wshape[dim] = o;
            let weights = |w: Vec<f64>| Tensor::from_vec(w, &wshape)?.to_dtype(dt);
            let a = y.index_select(dim as i64, &Tensor::from_vec(lo, &[o])?)?;
            let b = y.index_select(dim as i64, &Tensor::from_vec(hi, &[o])?)?;
            y = a.mul(&weights(w_lo)?)?.add(&b.mul(&weights(w_hi)?)?)?;
        }
        Ok(y)
    }
}
