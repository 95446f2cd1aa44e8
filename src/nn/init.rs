//! torch.nn.init: fills a tensor in place (without recording history) from
//! the distributions the common initialisation schemes prescribe. Each
//! scheme's scale is computed here, from the tensor's fans:
//!
//! | scheme            | distribution                                              |
//! |-------------------|-----------------------------------------------------------|
//! | xavier_uniform_   | U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))         |
//! | xavier_normal_    | N(0, std), std = gain * sqrt(2 / (fan_in + fan_out))      |
//! | kaiming_uniform_  | U(-b, b), b = gain(nonlinearity, a) * sqrt(3 / fan)       |
//! | kaiming_normal_   | N(0, std), std = gain(nonlinearity, a) / sqrt(fan)        |
//! | trunc_normal_     | N(mean, std) restricted to [a, b], by inverting the CDF   |

use crate::autograd::no_grad;
use crate::tensor::Scalar;
use crate::{bail, Result, Tensor};

/// torch's `_calculate_fan_in_and_fan_out`: for a weight of shape
/// (out, in, *kernel), fan_in = in * kernel size, fan_out = out * kernel
/// size.
pub fn fans(t: &Tensor) -> Result<(usize, usize)> {
    let s = t.shape();
    if s.len() < 2 {
        bail!(
            value,
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        );
    }
    let field: usize = s[2..].iter().product();
    Ok((s[1] * field, s[0] * field))
}

/// torch's `calculate_gain`: the recommended scale for a nonlinearity
/// (`param` is leaky_relu's negative slope, 0.01 when not given).
pub fn gain(nonlinearity: &str, param: Option<f64>) -> Result<f64> {
    Ok(match nonlinearity {
        "linear" | "conv1d" | "conv2d" | "conv3d" | "conv_transpose1d" | "conv_transpose2d"
        | "conv_transpose3d" | "sigmoid" => 1.0,
        "tanh" => 5.0 / 3.0,
        "relu" => 2f64.sqrt(),
        "leaky_relu" => {
            let slope = param.unwrap_or(0.01);
            (2.0 / (1.0 + slope * slope)).sqrt()
        }
        "selu" => 0.75,
        other => bail!(value, "Unsupported nonlinearity {other}"),
    })
}

/// Which fan a Kaiming scheme keeps the variance of.
fn fan_of(t: &Tensor, mode: &str) -> Result<f64> {
    let (fan_in, fan_out) = fans(t)?;
    match mode {
        "fan_in" => Ok(fan_in as f64),
        "fan_out" => Ok(fan_out as f64),
        _ => bail!(
            value,
            "Mode {mode} not supported, please use one of fan_in, fan_out"
        ),
    }
}

pub fn uniform_(t: &Tensor, a: f64, b: f64) -> Result<()> {
    let _g = no_grad();
    t.uniform_(a, b)
}

pub fn normal_(t: &Tensor, mean: f64, std: f64) -> Result<()> {
    let _g = no_grad();
    t.normal_(mean, std)
}

pub fn constant_(t: &Tensor, value: Scalar) -> Result<()> {
    let _g = no_grad();
    t.fill_(value)
}

/// The identity matrix, for 2-D tensors.
pub fn eye_(t: &Tensor) -> Result<()> {
    if t.ndim() != 2 {
        bail!(value, "Only tensors with 2 dimensions are supported");
    }
    let _g = no_grad();
    t.copy_(&Tensor::eye(t.shape()[0], t.shape()[1], t.dtype())?)
}

pub fn xavier_uniform_(t: &Tensor, gain: f64) -> Result<()> {
    let (fan_in, fan_out) = fans(t)?;
    let a = gain * (6.0 / (fan_in + fan_out) as f64).sqrt();
    uniform_(t, -a, a)
}

pub fn xavier_normal_(t: &Tensor, gain: f64) -> Result<()> {
    let (fan_in, fan_out) = fans(t)?;
    normal_(t, 0.0, gain * (2.0 / (fan_in + fan_out) as f64).sqrt())
}

pub fn kaiming_uniform_(t: &Tensor, a: f64, mode: &str, nonlinearity: &str) -> Result<()> {
    if t.numel() == 0 {
        return Ok(()); // torch warns and leaves it
    }
    let bound = gain(nonlinearity, Some(a))? * (3.0 / fan_of(t, mode)?).sqrt();
    uniform_(t, -bound, bound)
}

pub fn kaiming_normal_(t: &Tensor, a: f64, mode: &str, nonlinearity: &str) -> Result<()> {
    if t.numel() == 0 {
        return Ok(());
    }
    normal_(
        t,
        0.0,
        gain(nonlinearity, Some(a))? / fan_of(t, mode)?.sqrt(),
    )
}

/// N(mean, std) restricted to [a, b]: uniform values between the bounds'
/// CDF values, mapped back through the inverse CDF (torch's method).
pub fn trunc_normal_(t: &Tensor, mean: f64, std: f64, a: f64, b: f64) -> Result<()> {
    let cdf = |x: f64| (1.0 + libm::erf((x - mean) / std / 2f64.sqrt())) / 2.0;
    let (l, u) = (cdf(a), cdf(b));
    let _g = no_grad();
    t.uniform_(2.0 * l - 1.0, 2.0 * u - 1.0)?;
    t.copy_(
        &t.erfinv()?
            .mul_scalar(std * 2f64.sqrt())?
            .add_scalar(mean)?,
    )?;
    t.copy_(&t.clamp(Some(a.into()), Some(b.into()))?)
}

/// torch's `Linear.reset_parameters`: the weight by kaiming_uniform_ with
/// a = sqrt(5), which is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the bias
/// from the same range.
pub fn reset_linear_(weight: &Tensor, bias: Option<&Tensor>) -> Result<()> {
    kaiming_uniform_(weight, 5f64.sqrt(), "fan_in", "leaky_relu")?;
    if let Some(b) = bias {
        let (fan_in, _) = fans(weight)?;
        let bound = if fan_in > 0 {
            1.0 / (fan_in as f64).sqrt()
        } else {
            0.0
        };
        uniform_(b, -bound, bound)?;
    }
    Ok(())
}
