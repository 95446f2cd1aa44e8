//! `nn.functional`'s linear layer and losses, composed of differentiable
//! ops (so every order of gradient comes from theirs), with torch's
//! argument checks and reductions.
//!
//! | loss                     | per element (d = input - target)                             |
//! |--------------------------|--------------------------------------------------------------|
//! | mse_loss                 | d^2                                                          |
//! | l1_loss                  | abs(d)                                                       |
//! | smooth_l1_loss(beta)     | 0.5 d^2 / beta where abs(d) < beta, else abs(d) - 0.5 beta   |
//! | huber_loss(delta)        | 0.5 d^2 where abs(d) < delta, else delta (abs(d) - 0.5 delta) |
//! | binary_cross_entropy     | -w (t max(log x, -100) + (1 - t) max(log(1 - x), -100))      |
//! | bce_with_logits          | w ((1 - t) x + (1 + (p - 1) t) softplus(-x))                 |
//! | nll_loss                 | -w[t] input[t], mean divided by the sum of the w[t]          |
//! | cross_entropy            | nll_loss(log_softmax(input)), or -sum(t log_softmax(input))  |

use crate::autograd::autocast;
use crate::tensor::{DType, Scalar, Tensor};
use crate::{bail, Result};

/// How a loss reduces its per-element values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    None,
    Mean,
    Sum,
}

impl Reduction {
    pub fn parse(s: &str) -> Result<Reduction> {
        match s {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            _ => bail!(value, "{s} is not a valid value for reduction"),
        }
    }
    fn apply(self, t: Tensor) -> Result<Tensor> {
        match self {
            Reduction::None => Ok(t),
            Reduction::Mean => t.mean(),
            Reduction::Sum => t.sum(),
        }
    }
}

/// `input @ weight^T + bias`.
pub fn linear(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    let all: Vec<&Tensor> = [input, weight].into_iter().chain(bias).collect();
    if let Some(v) = autocast::lowered(&all)? {
        return linear(&v[0], &v[1], bias.map(|_| &v[2]));
    }
    let w = match weight.ndim() {
        2 => weight.t()?,
        _ => weight.clone(),
    };
    let out = input.matmul(&w)?;
    match bias {
        Some(b) => out.add(b),
        None => Ok(out),
    }
}

pub fn mse_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    if let Some(v) = autocast::widened(&[input, target])? {
        return mse_loss(&v[0], &v[1], reduction);
    }
    reduction.apply(input.sub(target)?.square()?)
}

pub fn l1_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    if let Some(v) = autocast::widened(&[input, target])? {
        return l1_loss(&v[0], &v[1], reduction);
    }
    reduction.apply(input.sub(target)?.abs()?)
}

/// Quadratic below `threshold`, linear above: `quad_scale * d^2` and
/// `lin_scale * (abs(d) - 0.5 * threshold)`.
fn quadratic_then_linear(
    d: &Tensor,
    threshold: f64,
    quad_scale: f64,
    lin_scale: f64,
) -> Result<Tensor> {
    let a = d.abs()?;
    let quad = d.square()?.mul_scalar(quad_scale)?;
    let lin = a.sub_scalar(0.5 * threshold)?.mul_scalar(lin_scale)?;
    Tensor::where_cond(&a.lt_scalar(threshold)?, &quad, &lin)
}

pub fn smooth_l1_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    beta: f64,
) -> Result<Tensor> {
    if let Some(v) = autocast::widened(&[input, target])? {
        return smooth_l1_loss(&v[0], &v[1], reduction, beta);
    }
    if beta < 0.0 {
        bail!(
            runtime,
            "smooth_l1_loss does not support negative values for beta."
        );
    }
    if beta == 0.0 {
        return l1_loss(input, target, reduction);
    }
    let d = input.sub(target)?;
    reduction.apply(quadratic_then_linear(&d, beta, 0.5 / beta, 1.0)?)
}

pub fn huber_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    delta: f64,
) -> Result<Tensor> {
    if let Some(v) = autocast::widened(&[input, target])? {
        return huber_loss(&v[0], &v[1], reduction, delta);
    }
    if delta <= 0.0 {
        bail!(
            runtime,
            "huber_loss does not support non-positive values for delta."
        );
    }
    let d = input.sub(target)?;
    reduction.apply(quadratic_then_linear(&d, delta, 0.5, delta)?)
}

/// The loss times `weight`, which is read in the loss's dtype (torch's
/// kernels cast it: a float64 weight keeps a float32 loss float32).
fn weighted(loss: Tensor, weight: Option<&Tensor>) -> Result<Tensor> {
    match weight {
        Some(w) => loss.mul(&w.to_dtype(loss.dtype())?),
        None => Ok(loss),
    }
}

pub fn binary_cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    if let Some(v) = autocast::widened(&[input, target])? {
        return binary_cross_entropy(&v[0], &v[1], weight, reduction);
    }
    if input.shape() != target.shape() {
        bail!(value, "Using a target size ({:?}) that is different to the input size ({:?}) is deprecated. Please ensure they have the same size.", target.shape(), input.shape());
    }
    let outside = input.lt_scalar(0)?.logical_or(&input.gt_scalar(1)?)?;
    if outside.any(None, false)?.item()?.to_f64() != 0.0 {
        bail!(runtime, "all elements of input should be between 0 and 1");
    }
    let log_x = input.log()?.clamp_min(-100.0)?;
    let log_1mx = input.neg()?.add_scalar(1.0)?.log()?.clamp_min(-100.0)?;
    let one_minus_t = target.neg()?.add_scalar(1.0)?;
    let loss = target
        .mul(&log_x)?
        .add(&one_minus_t.mul(&log_1mx)?)?
        .neg()?;
    reduction.apply(weighted(loss, weight)?)
}

pub fn binary_cross_entropy_with_logits(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
    pos_weight: Option<&Tensor>,
) -> Result<Tensor> {
    if let Some(v) = autocast::widened(&[input, target])? {
        return binary_cross_entropy_with_logits(&v[0], &v[1], weight, reduction, pos_weight);
    }
    if input.shape() != target.shape() {
        bail!(
            value,
            "Target size ({:?}) must be the same as input size ({:?})",
            target.shape(),
            input.shape()
        );
    }
    // softplus(-x) = -log(sigmoid(x)), whose slope is right at x = 0 too.
    let sp = input.neg()?.softplus(1.0, 20.0)?;
    let one_minus_t = target.neg()?.add_scalar(1.0)?;
    let log_term = match pos_weight {
        Some(p) => target
            .mul(&p.to_dtype(input.dtype())?.sub_scalar(1.0)?)?
            .add_scalar(1.0)?
            .mul(&sp)?,
        None => sp,
    };
    let loss = one_minus_t.mul(input)?.add(&log_term)?;
    reduction.apply(weighted(loss, weight)?)
}

/// The class dim of an input: 1, or 0 for a single sample of shape (C).
fn class_dim(input: &Tensor) -> usize {
    usize::from(input.ndim() >= 2)
}

/// Checks `target` against `input` for nll_loss / cross_entropy.
fn check_target(input: &Tensor, target: &Tensor) -> Result<()> {
    if target.dtype() != DType::I64 {
        bail!(
            runtime,
            "expected target dtype to be Long or Byte, but got {}",
            target.dtype().scalar_type_name()
        );
    }
    if input.ndim() == 0
        || input.ndim() > 1 && target.ndim() != input.ndim() - 1
        || input.ndim() == 1 && target.ndim() > 1
    {
        bail!(
            runtime,
            "Expected input to have one more dimension than target, got input {:?} and target {:?}",
            input.shape(),
            target.shape()
        );
    }
    if input.ndim() >= 2 && input.shape()[0] != target.shape()[0] {
        bail!(
            value,
            "Expected input batch_size ({}) to match target batch_size ({}).",
            input.shape()[0],
            target.shape()[0]
        );
    }
    if input.ndim() > 2 && input.shape()[2..] != target.shape()[1..] {
        bail!(
            runtime,
            "size mismatch (got input: {:?}, target: {:?})",
            input.shape(),
            target.shape()
        );
    }
    Ok(())
}

/// `-w[t] * input[t]` per target (zero where ignored), and the weights
/// `w[t]` (zero where ignored), both of the target's shape.
fn picked(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
) -> Result<(Tensor, Tensor)> {
    let cd = class_dim(input);
    let classes = input.shape()[cd] as i64;
    let ignored = target.eq_scalar(ignore_index)?;
    let safe = target.masked_fill_scalar(&ignored, Scalar::Int(0))?;
    let bad = safe.lt_scalar(0)?.logical_or(&safe.ge_scalar(classes)?)?;
    if bad.any(None, false)?.item()?.to_f64() != 0.0 {
        let vals = safe.to_vec::<i64>();
        let flags = bad.to_vec::<bool>();
        let t = vals
            .iter()
            .zip(&flags)
            .find(|(_, &f)| f)
            .map(|(v, _)| *v)
            .unwrap_or(0);
        bail!(index, "Target {t} is out of bounds.");
    }
    let x = if input.ndim() == 1 {
        input.unsqueeze(0)?
    } else {
        input.clone()
    };
    let s = if input.ndim() == 1 {
        safe.reshape(&[1])?
    } else {
        safe.clone()
    };
    let mut chosen = x.gather(1, &s.unsqueeze(1)?)?.squeeze_dim(1)?;
    if input.ndim() == 1 {
        chosen = chosen.reshape(&[])?;
    }
    let keep = ignored.logical_not()?.to_dtype(input.dtype())?;
    let w = match weight {
        Some(w) => {
            let flat = safe.reshape(&[-1])?;
            w.index_select(0, &flat)?
                .reshape(&safe.dims().iter().map(|&d| d as i64).collect::<Vec<_>>())?
                .mul(&keep)?
        }
        None => keep,
    };
    Ok((chosen.mul(&w)?.neg()?, w))
}

fn reduce_weighted(loss: Tensor, w: &Tensor, reduction: Reduction) -> Result<Tensor> {
    match reduction {
        Reduction::None => Ok(loss),
        Reduction::Sum => loss.sum(),
        Reduction::Mean => loss.sum()?.div(&w.sum()?),
    }
}

pub fn nll_loss(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
) -> Result<Tensor> {
    if let Some(v) = autocast::widened(&[input, target])? {
        return nll_loss(&v[0], &v[1], weight, ignore_index, reduction);
    }
    check_target(input, target)?;
    let (loss, w) = picked(input, target, weight, ignore_index)?;
    reduce_weighted(loss, &w, reduction)
}

pub fn cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    label_smoothing: f64,
) -> Result<Tensor> {
    if let Some(v) = autocast::widened(&[input, target])? {
        return cross_entropy(
            &v[0],
            &v[1],
            weight,
            ignore_index,
            reduction,
            label_smoothing,
        );
    }
    if !(0.0..=1.0).contains(&label_smoothing) {
        bail!(
            runtime,
            "label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}"
        );
    }
    let cd = class_dim(input);
    let logp = input.log_softmax(cd as i64, None)?;
    let classes = input.shape().get(cd).copied().unwrap_or(1) as f64;
    // Class weights broadcast along the class dim.
    let class_w = |w: &Tensor| -> Result<Tensor> {
        let mut shape = vec![1i64; input.ndim()];
        shape[cd] = -1;
        w.reshape(&shape)
    };
    if target.dtype().is_floating() {
        // Class probabilities.
        if target.shape() != input.shape() {
            bail!(
                runtime,
                "Expected target size {:?}, got {:?}",
                input.shape(),
                target.shape()
            );
        }
        let t = match label_smoothing {
            0.0 => target.clone(),
            e => target.mul_scalar(1.0 - e)?.add_scalar(e / classes)?,
        };
        let mut prod = logp.mul(&t)?;
        if let Some(w) = weight {
            prod = prod.mul(&class_w(w)?)?;
        }
        let loss = prod.sum_dims(&[cd as i64], false, None)?.neg()?;
        return match reduction {
            Reduction::Mean if input.ndim() >= 2 => loss.sum()?.div_scalar(
                input.shape()[0] as f64 * input.shape()[2..].iter().product::<usize>() as f64,
            ),
            r => r.apply(loss),
        };
    }
    check_target(input, target)?;
    let (nll, w) = picked(&logp, target, weight, ignore_index)?;
    if label_smoothing == 0.0 {
        return reduce_weighted(nll, &w, reduction);
    }
    let e = label_smoothing;
    let mut lw = logp.clone();
    if let Some(wt) = weight {
        lw = lw.mul(&class_w(wt)?)?;
    }
    let keep = target.ne_scalar(ignore_index)?.to_dtype(input.dtype())?;
    let smooth = lw.sum_dims(&[cd as i64], false, None)?.neg()?.mul(&keep)?;
    let mix = |n: Tensor, s: Tensor| -> Result<Tensor> {
        n.mul_scalar(1.0 - e)?.add(&s.mul_scalar(e / classes)?)
    };
    match reduction {
        Reduction::None => mix(nll, smooth),
        Reduction::Sum => mix(nll.sum()?, smooth.sum()?),
        Reduction::Mean => {
            let denom = w.sum()?;
            mix(nll.sum()?.div(&denom)?, smooth.sum()?.div(&denom)?)
        }
    }
}
