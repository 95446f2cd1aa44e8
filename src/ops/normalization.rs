//! The normalisation layers' functions and embedding lookup. layer_norm
//! runs as one kernel with its derivative stated below; the others are
//! composed of differentiable ops (mean, var, rsqrt, the affine ops,
//! index_select), so their gradients, of every order, follow:
//!
//! | op                     | value                                                      |
//! |------------------------|------------------------------------------------------------|
//! | layer_norm(x, shape)   | xhat = (x - mean) * rstd, rstd = 1 / sqrt(var + eps) over the trailing `shape` dims, then xhat * weight + bias |
//! | batch_norm(x) training | the same over every dim but 1 (channels); running stats += momentum * (batch - running), the variance unbiased |
//! | batch_norm(x) eval     | (x - running_mean) / sqrt(running_var + eps) * weight + bias |
//! | embedding(idx, weight) | weight's rows at idx; rows at `padding_idx` get no gradient |
//!
//! layer_norm's derivative (NativeLayerNormBackward0), means over the
//! normalised dims, `gw = grad * weight` (or grad):
//!
//! | input  | gradient                                                  |
//! |--------|-----------------------------------------------------------|
//! | x      | rstd * (gw - mean(gw) - xhat * mean(gw * xhat))           |
//! | weight | sum over the other dims of grad * xhat                    |
//! | bias   | sum over the other dims of grad                           |
//!
//! Written in differentiable ops; under create_graph, mean and rstd are
//! recomputed from x by ops so second derivatives see them depend on x.

use crate::autograd::no_grad;
use crate::{bail, DType, Result, Tensor};

/// `[1, C, 1, ...]` for an `ndim`-dim input: a per-channel tensor's shape.
fn channel_shape(c: usize, ndim: usize) -> Vec<i64> {
    let mut s = vec![1i64; ndim];
    s[1] = c as i64;
    s
}

impl Tensor {
    /// `nn.functional.group_norm`: the channels of `[N, C, *]` split into
    /// `num_groups` groups, each normalised over its channels and the
    /// trailing dims; then the per-channel affine.
    pub fn group_norm(
        &self,
        num_groups: i64,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        if self.ndim() < 2 {
            bail!(
                runtime,
                "Expected at least 2 dimensions for input tensor but received {}",
                self.ndim()
            );
        }
        let (n, c) = (self.shape()[0], self.shape()[1]);
        if num_groups <= 0 || c % num_groups as usize != 0 {
            bail!(
                runtime,
                "Expected number of channels in input to be divisible by num_groups, but got input of shape {:?} and num_groups={num_groups}",
                self.shape()
            );
        }
        for (name, t) in [("weight", weight), ("bias", bias)] {
            if let Some(t) = t {
                if t.shape() != [c] {
                    bail!(
                        runtime,
                        "Expected {name} to be a vector of size equal to the number of channels in input, but got {name} of shape {:?} and input of shape {:?}",
                        t.shape(),
                        self.shape()
                    );
                }
            }
        }
        let groups = self.reshape(&[n as i64, num_groups, -1])?;
        let mean = groups.mean_dims(&[2], true, None)?;
        let var = groups.var(&[2], 0.0, true)?;
        let y = groups
            .sub(&mean)?
            .mul(&var.add_scalar(eps)?.rsqrt()?)?
            .reshape(&super::to_i64(self.shape()))?;
        let mut affine = vec![1i64; self.ndim()];
        affine[1] = c as i64;
        let y = match weight {
            Some(w) => y.mul(&w.reshape(&affine)?)?,
            None => y,
        };
        match bias {
            Some(b) => y.add(&b.reshape(&affine)?),
            None => Ok(y),
        }
    }

    pub fn layer_norm(
        &self,
        normalized_shape: &[usize],
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        let (n, nd) = (normalized_shape.len(), self.ndim());
        if n == 0 || n > nd || self.shape()[nd - n..] != *normalized_shape {
            let dims: Vec<String> = normalized_shape.iter().map(|d| d.to_string()).collect();
            bail!(
                runtime,
                "Given normalized_shape={normalized_shape:?}, expected input with shape [*, {}], but got input of size{:?}",
                dims.join(", "),
                self.shape()
            );
        }
        for (name, t) in [("weight", weight), ("bias", bias)] {
            if let Some(t) = t {
                if t.shape() != normalized_shape {
                    bail!(
                        runtime,
                        "Expected {name} to be of same shape as normalized_shape, but got {name} of shape {:?} and normalized_shape = {normalized_shape:?}",
                        t.shape()
                    );
                }
            }
        }
        if !self.dtype().is_floating() {
            bail!(
                not_implemented,
                "\"LayerNormKernelImpl\" not implemented for '{}'",
                self.dtype().scalar_type_name()
            );
        }
        let dtype = self.dtype();
        for t in [weight, bias].into_iter().flatten() {
            if t.dtype() != dtype {
                bail!(
                    runtime,
                    "expected scalar type {} but found {}",
                    dtype.scalar_type_name(),
                    t.dtype().scalar_type_name()
                );
            }
        }
        let cols: usize = normalized_shape.iter().product();
        let rows = self.numel().checked_div(cols).unwrap_or(0);
        let mut inputs = vec![self];
        inputs.extend(weight);
        inputs.extend(bias);
        let rec = crate::autograd::record("NativeLayerNormBackward0", &inputs);
        let mut stat_shape = self.dims();
        stat_shape[nd - n..].iter_mut().for_each(|d| *d = 1);
        // float16/bfloat16 compute in float32: mean and rstd stay float32
        let (y, mean, rstd) = crate::dispatch_float!(dtype.compute(), T => {
            use crate::kernels::lanes::layer_norm_rows;
            let w = weight.map(|w| w.to_vec::<T>());
            let b = bias.map(|b| b.to_vec::<T>());
            let mut y = crate::tensor::pool::buffer::<T>(self.numel());
            let (mut m, mut r) = (vec![T::default(); rows], vec![T::default(); rows]);
            // The input read in place when contiguous (no copy).
            crate::kernels::copy::with_slice::<T, _>(self, |x| {
                layer_norm_rows(x, w.as_deref(), b.as_deref(), cols, eps, &mut y, &mut m, &mut r)
            })?;
            (
                Tensor::from_vec(y, self.shape())?,
                Tensor::from_vec(m, &stat_shape)?,
                Tensor::from_vec(r, &stat_shape)?,
            )
        });
        let y = y.try_cast_raw(dtype)?;
        let dims: Vec<i64> = ((nd - n) as i64..nd as i64).collect();
        let (has_w, has_b) = (weight.is_some(), bias.is_some());
        let mut rec = rec
            .save("input", self)
            .save("mean", &mean)
            .save("rstd", &rstd);
        if let Some(w) = weight {
            rec = rec.save("weight", w);
        }
        rec.finish(y, move |c| {
            let x = c.saved(0)?;
            if !crate::autograd::is_grad_enabled() {
                // No graph of the backward: one fused kernel.
                return layer_norm_backward_fused(c, &x, cols, dims.len(), has_w, has_b);
            }
            // Under create_graph: mean and rstd as functions of x, so second
            // derivatives see them depend on it.
            let mean = x.mean_dims(&dims, true, None)?;
            let rstd = x.var(&dims, 0.0, true)?.add_scalar(eps)?.rsqrt()?;
            let g = c.grad();
            let xhat = x.sub(&mean)?.mul(&rstd)?;
            let w = if has_w { Some(c.saved(3)?) } else { None };
            let gw = match &w {
                Some(w) => g.mul(w)?,
                None => g.clone(),
            };
            let mut grads = Vec::with_capacity(3);
            grads.push(if c.needs(0) {
                let a = gw.mean_dims(&dims, true, None)?;
                let b = gw.mul(&xhat)?.mean_dims(&dims, true, None)?;
                Some(gw.sub(&a)?.sub(&xhat.mul(&b)?)?.mul(&rstd)?)
            } else {
                None
            });
            if let Some(w) = &w {
                grads.push(if c.needs(1) {
                    Some(g.mul(&xhat)?.sum_to_size(w.shape())?)
                } else {
                    None
                });
            }
            if has_b {
                let i = grads.len();
                grads.push(if c.needs(i) {
                    let shape: Vec<usize> = x.shape()[x.ndim() - dims.len()..].to_vec();
                    Some(g.sum_to_size(&shape)?)
                } else {
                    None
                });
            }
            Ok(grads)
        })
    }

    /// `running_mean`/`running_var` are updated in place when training.
    #[allow(clippy::too_many_arguments)]
    pub fn batch_norm(
        &self,
        running_mean: Option<&Tensor>,
        running_var: Option<&Tensor>,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        training: bool,
        momentum: f64,
        eps: f64,
    ) -> Result<Tensor> {
        if self.ndim() < 2 {
            bail!(
                value,
                "Expected 2D or higher input to batch_norm (got {}D input)",
                self.ndim()
            );
        }
        let (c, nd) = (self.shape()[1], self.ndim());
        let per_channel = self.numel() / c.max(1);
        let shape = channel_shape(c, nd);
        let named = [
            ("running_mean", running_mean),
            ("running_var", running_var),
            ("weight", weight),
            ("bias", bias),
        ];
        for (name, t) in named {
            if let Some(t) = t.filter(|t| t.shape() != [c]) {
                bail!(
                    runtime,
                    "{name} should contain {c} elements not {}",
                    t.numel()
                );
            }
        }
        let (mean, var) = if training {
            if per_channel <= 1 {
                bail!(
                    value,
                    "Expected more than 1 value per channel when training, got input size {:?}",
                    self.shape()
                );
            }
            let dims: Vec<i64> = (0..nd as i64).filter(|&d| d != 1).collect();
            let mean = self.mean_dims(&dims, true, None)?;
            let var = self.var(&dims, 0.0, true)?;
            let _g = no_grad();
            let unbias = per_channel as f64 / (per_channel - 1) as f64;
            let update = |running: Option<&Tensor>, batch: Tensor| -> Result<()> {
                let Some(r) = running else { return Ok(()) };
                let batch = batch.reshape(&[c as i64])?.to_dtype(r.dtype())?;
                r.copy_(
                    &batch
                        .mul_scalar(momentum)?
                        .add(&r.mul_scalar(1.0 - momentum)?)?,
                )
            };
            update(running_mean, mean.detach())?;
            update(running_var, var.detach().mul_scalar(unbias)?)?;
            (mean, var)
        } else {
            let (Some(rm), Some(rv)) = (running_mean, running_var) else {
                bail!(
                    runtime,
                    "running_mean and running_var must be defined in evaluation mode"
                );
            };
            (rm.reshape(&shape)?, rv.reshape(&shape)?)
        };
        let y = self.sub(&mean)?.mul(&var.add_scalar(eps)?.rsqrt()?)?;
        let y = match weight {
            Some(w) => y.mul(&w.reshape(&shape)?)?,
            None => y,
        };
        match bias {
            Some(b) => y.add(&b.reshape(&shape)?),
            None => Ok(y),
        }
    }

    /// Rows of `weight` (`[V, D]`) at the integer `self`; the result has
    /// shape `self.shape + [D]`.
    pub fn embedding(&self, weight: &Tensor, padding_idx: Option<i64>) -> Result<Tensor> {
        if self.dtype() == DType::I32 {
            return self.long_index().embedding(weight, padding_idx);
        }
        if self.dtype() != DType::I64 {
            bail!(
                runtime,
                "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.{}Tensor instead (while checking arguments for embedding)",
                self.dtype().scalar_type_name()
            );
        }
        if weight.ndim() != 2 {
            bail!(runtime, "'weight' must be 2-D");
        }
        let mut shape = super::to_i64(self.shape());
        shape.push(weight.shape()[1] as i64);
        let rows = weight
            .index_select(0, &self.reshape(&[-1])?)?
            .reshape(&shape)?;
        let Some(mut pad) = padding_idx else {
            return Ok(rows);
        };
        let v = weight.shape()[0] as i64;
        if pad >= v || pad < -v {
            bail!(assertion, "Padding_idx must be within num_embeddings");
        }
        if pad < 0 {
            pad += v;
        }
        // The padding rows' values, cut off from the gradient.
        let at_pad = self
            .eq(&self.wrap_scalar(pad.into()))?
            .unsqueeze(-1)?
            .expand_as(&rows)?;
        Tensor::where_cond(&at_pad, &rows.detach(), &rows)
    }
}

/// nn.BatchNorm's forward around [`Tensor::batch_norm`]: in training with
/// running stats it counts the batch in `num_batches_tracked`, and with no
/// `momentum` it averages the batches cumulatively (factor 1/count).
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_module(
    input: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    num_batches_tracked: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    track_running_stats: bool,
    momentum: Option<f64>,
    eps: f64,
) -> Result<Tensor> {
    let mut factor = momentum.unwrap_or(0.0);
    if training && track_running_stats {
        if let Some(n) = num_batches_tracked {
            let _g = no_grad();
            n.add_(&n.wrap_scalar(1i64.into()))?;
            if momentum.is_none() {
                factor = 1.0 / n.item()?.to_f64();
            }
        }
    }
    let batch_stats = training || (running_mean.is_none() && running_var.is_none());
    let (rm, rv) = if !training || track_running_stats {
        (running_mean, running_var)
    } else {
        (None, None)
    };
    input.batch_norm(rm, rv, weight, bias, batch_stats, factor, eps)
}

/// NativeLayerNormBackward0's formulas (the table above) as one kernel
/// ([`crate::kernels::lanes::layer_norm_backward_rows`]), for a backward
/// that records no graph.
fn layer_norm_backward_fused(
    c: &crate::autograd::function::BackwardCtx<'_>,
    x: &Tensor,
    cols: usize,
    n_dims: usize,
    has_w: bool,
    has_b: bool,
) -> Result<Vec<Option<Tensor>>> {
    use crate::kernels::copy::with_slice;
    use crate::kernels::lanes::layer_norm_backward_rows;
    let (mean, rstd, g) = (c.saved(1)?, c.saved(2)?, c.grad().clone());
    let w = if has_w { Some(c.saved(3)?) } else { None };
    let b_at = 1 + usize::from(has_w);
    let (need_x, need_w, need_b) = (c.needs(0), has_w && c.needs(1), has_b && c.needs(b_at));
    let norm_shape: Vec<usize> = x.shape()[x.ndim() - n_dims..].to_vec();
    // One op event, as torch's `native_layer_norm_backward`.
    let _event = crate::autograd::profiler::op_range("NativeLayerNormBackwardBackward0", &[&g, x]);
    let (dx, dw, db) = crate::dispatch_float!(x.dtype().compute(), T => {
        let mut dx = need_x.then(|| crate::tensor::pool::buffer::<T>(x.numel()));
        let mut dw = need_w.then(|| vec![<T as crate::tensor::Element>::zero(); cols]);
        let mut db = need_b.then(|| vec![<T as crate::tensor::Element>::zero(); cols]);
        with_slice::<T, _>(x, |xs| {
            with_slice::<T, _>(&g, |gs| {
                with_slice::<T, _>(&mean, |ms| {
                    with_slice::<T, _>(&rstd, |rs| {
                        let mut run = |ws: Option<&[T]>| {
                            layer_norm_backward_rows(
                                xs,
                                gs,
                                ws,
                                ms,
                                rs,
                                cols,
                                dx.as_deref_mut(),
                                dw.as_deref_mut(),
                                db.as_deref_mut(),
                            )
                        };
                        match &w {
                            Some(w) => crate::buffer::pool::or_panic(with_slice::<T, _>(w, |ws| run(Some(ws)))),
                            None => run(None),
                        }
                    })
                })
            })
        })????; // (each level of `with_slice` may fail to copy)
        (
            dx.map(|v| Tensor::from_vec(v, x.shape())).transpose()?,
            dw.map(|v| Tensor::from_vec(v, &norm_shape)).transpose()?,
            db.map(|v| Tensor::from_vec(v, &norm_shape)).transpose()?,
        )
    });
    // (float16/bfloat16 gradients computed in float32, rounded once)
    let low = |t: Option<Tensor>| t.map(|t| t.try_cast_raw(x.dtype())).transpose();
    let mut grads = vec![low(dx)?];
    if has_w {
        grads.push(low(dw)?);
    }
    if has_b {
        grads.push(low(db)?);
    }
    Ok(grads)
}
