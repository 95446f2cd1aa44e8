//! `nn.functional.pad`: `pad` lists (before, after) amounts for the last
//! dim first, then the one before it, and so on. Every mode is composed of
//! differentiable ops, so the gradient (the padded region's gradient
//! dropped, or summed back onto the source elements) follows:
//! - constant: `cat` with blocks of `value` (negative amounts `narrow`);
//! - reflect, replicate, circular: `index_select` with the source index of
//!   each output position (mirrored without the edge, clamped, wrapped).

use crate::tensor::{DType, Scalar};
use crate::{bail, Result, Tensor};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PadMode {
    Constant,
    Reflect,
    Replicate,
    Circular,
}

impl PadMode {
    pub fn parse(mode: &str) -> Result<PadMode> {
        Ok(match mode {
            "constant" => PadMode::Constant,
            "reflect" => PadMode::Reflect,
            "replicate" => PadMode::Replicate,
            "circular" => PadMode::Circular,
            _ => bail!(value, "Unrecognised padding mode {mode}"),
        })
    }
}

/// The source position of output position `o` of a dim of size `n` padded
/// by `before` (for the index modes).
fn source(mode: PadMode, o: i64, before: i64, n: i64) -> i64 {
    let i = o - before;
    match mode {
        PadMode::Replicate => i.clamp(0, n - 1),
        PadMode::Circular => i.rem_euclid(n),
        _ => {
            // reflect: mirror about the edges, not repeating them
            let period = 2 * (n - 1);
            let r = i.rem_euclid(period.max(1));
            if r < n {
                r
            } else {
                period - r
            }
        }
    }
}

impl Tensor {
    pub fn pad(&self, pad: &[i64], mode: PadMode, value: Option<f64>) -> Result<Tensor> {
        if !pad.len().is_multiple_of(2) {
            bail!(runtime, "Padding length must be divisible by 2");
        }
        if pad.len() > 2 * self.ndim() {
            bail!(
                runtime,
                "Padding length should be less than or equal to two times the input dimension but got padding length {} and input of dimension {}",
                pad.len(),
                self.ndim()
            );
        }
        if mode != PadMode::Constant && value.is_some_and(|v| v != 0.0) {
            bail!(
                runtime,
                "Padding mode \"{}\" doesn't take in value argument",
                format!("{mode:?}").to_lowercase()
            );
        }
        let mut out = self.clone();
        for (k, pair) in pad.chunks(2).enumerate() {
            let dim = self.ndim() - 1 - k;
            let (before, after) = (pair[0], pair[1]);
            out = match mode {
                PadMode::Constant => pad_constant(&out, dim, before, after, value.unwrap_or(0.0))?,
                _ => pad_indexed(&out, dim, before, after, mode)?,
            };
        }
        Ok(out)
    }
}

fn pad_constant(x: &Tensor, dim: usize, before: i64, after: i64, value: f64) -> Result<Tensor> {
    let n = x.shape()[dim] as i64;
    let (start, keep) = (before.min(0).abs(), n + before.min(0) + after.min(0));
    if keep < 0 {
        bail!(
            runtime,
            "The input size {n}, plus negative padding {} and {} resulted in a negative output size, which is invalid. Check dimension {dim} of your input.",
            before.min(0),
            after.min(0)
        );
    }
    let core = x.narrow(dim as i64, start, keep as usize)?;
    let block = |len: i64| {
        let mut shape = x.shape().to_vec();
        shape[dim] = len as usize;
        let fill: Scalar = if x.dtype() == DType::Bool {
            (value != 0.0).into()
        } else if x.dtype().is_floating() {
            value.into()
        } else {
            (value as i64).into()
        };
        Tensor::full(&shape, fill, x.dtype())
    };
    let mut parts = Vec::with_capacity(3);
    if before > 0 {
        parts.push(block(before));
    }
    parts.push(core);
    if after > 0 {
        parts.push(block(after));
    }
    if parts.len() == 1 {
        return Ok(parts.pop().expect("one part"));
    }
    Tensor::cat(&parts, dim as i64)
}

fn pad_indexed(x: &Tensor, dim: usize, before: i64, after: i64, mode: PadMode) -> Result<Tensor> {
    let n = x.shape()[dim] as i64;
    let too_big = match mode {
        PadMode::Reflect => before >= n || after >= n,
        PadMode::Circular => before > n || after > n,
        _ => n == 0,
    };
    if too_big || before < 0 && mode != PadMode::Circular || after < 0 && mode != PadMode::Circular
    {
        if mode == PadMode::Replicate && n == 0 {
            bail!(
                runtime,
                "padding size should be less than the corresponding input dimension"
            );
        }
        bail!(
            runtime,
            "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding ({before}, {after}) at dimension {dim} of input {:?}",
            x.shape()
        );
    }
    let len = n + before + after;
    let index: Vec<i64> = (0..len).map(|o| source(mode, o, before, n)).collect();
    x.index_select(dim as i64, &Tensor::from_vec(index, &[len as usize])?)
}
