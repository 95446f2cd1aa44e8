//! Convolution and its transpose, on unfold/fold and batched matmul
//! (see the module above), with their argument checks.

use super::*;

impl Tensor {
    /// `conv1d`/`conv2d`/`conv3d` (the spatial rank is `weight.ndim() - 2`):
    /// `self` is `[N, C_in, *spatial]` or unbatched `[C_in, *spatial]`,
    /// `weight` `[C_out, C_in / groups, *kernel]`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: &[i64],
        padding: &ConvPadding,
        dilation: &[i64],
        groups: i64,
        s: usize,
    ) -> Result<Tensor> {
        let all: Vec<&Tensor> = [self, weight].into_iter().chain(bias).collect();
        if let Some(v) = crate::autograd::autocast::lowered(&all)? {
            let b = bias.map(|_| &v[2]);
            return v[0].conv(&v[1], b, stride, padding, dilation, groups, s);
        }
        let ConvArgs {
            x,
            stride,
            dilation,
            groups,
        } = conv_args(self, weight, stride, dilation, groups, s, false)?;
        let ws = weight.shape();
        check_bias(bias, &x, ws, ws[0], false)?;
        let kernel: Vec<usize> = ws[2..].to_vec();
        // 'same': the total padding is the window's extent less one, split
        // evenly; an odd total puts the extra element after (padded first).
        let (x, pad) = match padding {
            ConvPadding::Explicit(p) => {
                let p = per_dim("padding", p, s, "convolution")?;
                if p.iter().any(|&v| v < 0) {
                    bail!(runtime, "negative padding is not supported");
                }
                (x, p.iter().map(|&v| v as usize).collect::<Vec<_>>())
            }
            ConvPadding::Valid => (x, vec![0; s]),
            ConvPadding::Same => {
                if stride.iter().any(|&v| v != 1) {
                    bail!(
                        runtime,
                        "padding='same' is not supported for strided convolutions"
                    );
                }
                let total: Vec<usize> = (0..s).map(|d| dilation[d] * (kernel[d] - 1)).collect();
                let extra: Vec<i64> = (0..s)
                    .rev()
                    .flat_map(|d| [0, (total[d] % 2) as i64])
                    .collect();
                let x = if extra.iter().any(|&e| e != 0) {
                    x.pad(&extra, crate::ops::pad::PadMode::Constant, None)?
                } else {
                    x
                };
                (x, total.iter().map(|t| t / 2).collect())
            }
        };
        let w = Window {
            kernel,
            dilation,
            padding: pad,
            stride,
        };
        let input = x.shape()[2..].to_vec();
        let padded: Vec<usize> = (0..s).map(|d| input[d] + 2 * w.padding[d]).collect();
        let Some(out) = w.out_size(&input, false) else {
            let ext: Vec<usize> = (0..s).map(|d| w.extent(d)).collect();
            bail!(
                runtime,
                "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
                join_x(&padded),
                join_x(&ext)
            );
        };
        let y = conv_by_columns(&x, weight, bias, &w, &out, groups)?;
        add_bias_unbatch(y, None, self.ndim() == s + 1)
    }
}

/// A convolution as products with the window matrix: `cols = unfold(x)`
/// (`[n, groups, per_group, l]`), `y = weight @ cols` per group
/// (`[n, groups, c_out / groups, l]`), recorded as one node
/// (`ConvolutionBackward0`) that keeps `cols` for the weight's gradient:
///
/// - `grad_input = fold(weight^T @ grad)`;
/// - `grad_weight = (cols @ grad^T)^T` summed over the batch: the product
///   with the long dim (the windows) inside and the window matrix as the
///   left operand, which ran 1.2-1.5x faster than `grad @ cols^T` (few
///   output rows, a transposed right operand) on the conv sweep's shapes
///   (AMD Zen 4, AVX-512, where these sizes go to the `gemm` crate);
/// - `grad_bias` (with a bias) the sum of `grad` over all but the channels:
///   the bias is added inside the node, as in torch's, so the backward of
///   a convolution with a bias is a chain, not a fork whose other branch
///   would send the convolution to a pool worker.
///
/// All are made of differentiable ops; when the backward itself is
/// recorded (double backward, forward-mode tangents) `cols` is unfolded
/// again from the saved input so that its graph reaches the input.
fn conv_by_columns(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    w: &Window,
    out: &[usize],
    groups: usize,
) -> Result<Tensor> {
    let (cols_shape, w_shape) = column_shapes(x, weight, w, out, groups);
    let bias_shape = [1, w_shape[0], w_shape[1], 1];
    let mut inputs = vec![x, weight];
    inputs.extend(bias);
    let rec = record("ConvolutionBackward0", &inputs);
    // the forward's values without a graph of their own
    let values_only = crate::autograd::no_grad();
    let blocked = match groups {
        1 => product_by_blocks((x, weight, bias), w, out)?,
        _ => None,
    };
    let (cols, product) = match blocked {
        Some(y) => (None, y),
        None => {
            let cols = x.detach().window_cols(w, out, 0.0)?.view(&cols_shape)?;
            let mut y = weight.detach().reshape(&w_shape)?.matmul(&cols)?;
            if let Some(b) = bias {
                y = y.add(&b.detach().reshape(&bias_shape)?)?;
            }
            (Some(cols), y)
        }
    };
    drop(values_only);
    finish_conv(rec, (x, weight, bias), (w, out, groups), cols, product)
}

/// The windows' shape `[n, groups, per_group, l]` and the weight's as
/// their left operand, `[groups, c_out / groups, per_group]`.
fn column_shapes(
    x: &Tensor,
    weight: &Tensor,
    w: &Window,
    out: &[usize],
    groups: usize,
) -> ([i64; 4], [i64; 3]) {
    let (n, cout) = (x.shape()[0] as i64, weight.shape()[0] as i64);
    let g = groups as i64;
    let k: usize = w.kernel.iter().product();
    let per_group = (x.shape()[1] / groups * k) as i64;
    let l: i64 = out.iter().product::<usize>() as i64;
    ([n, g, per_group, l], [g, cout / g, per_group])
}

/// The product (plus the bias) with the windows gathered block by block
/// in cache ([`crate::kernels::matmul::conv_forward`]), `[n, 1, c_out,
/// l]`; `None` where that kernel does not apply (dtype, too little work
/// for the threads); one group.
fn product_by_blocks(
    (x, weight, bias): (&Tensor, &Tensor, Option<&Tensor>),
    w: &Window,
    out: &[usize],
) -> Result<Option<Tensor>> {
    // (channels-last memory: one copy to the sample-major order)
    let x = &x.detach().contiguous()?;
    let (n, cout) = (x.shape()[0], weight.shape()[0]);
    let per_group = weight.numel() / cout.max(1);
    let wm = weight
        .detach()
        .contiguous()?
        .reshape(&[cout as i64, per_group as i64])?;
    let b = bias.map(|b| b.detach().contiguous()).transpose()?;
    let table = w.table(&x.shape()[2..], out)?;
    let Some(y) = crate::kernels::matmul::conv_forward(x, &table, &wm, b.as_deref())? else {
        return Ok(None);
    };
    let l = out.iter().product::<usize>() as i64;
    Ok(Some(Tensor::from(y).view(&[
        n as i64,
        1,
        cout as i64,
        l,
    ])?))
}

/// The weight's gradient of a one-group convolution, its windows gathered
/// again block by block in cache
/// ([`crate::kernels::matmul::conv_weight_grad`]); `None` where that
/// kernel does not apply. Not differentiable: for a backward that is not
/// itself recorded.
fn weight_grad_by_blocks(
    grad: &Tensor,
    x: &Tensor,
    w: &Window,
    weight_shape: &[usize],
    out: &[usize],
) -> Result<Option<Tensor>> {
    let (n, cout) = (grad.shape()[0], weight_shape[0]);
    let l = out.iter().product::<usize>();
    let grad = grad
        .reshape(&[n as i64, cout as i64, l as i64])?
        .contiguous()?;
    let x = x.contiguous()?;
    let table = w.table(&x.shape()[2..], out)?;
    let Some(dw) = crate::kernels::matmul::conv_weight_grad(&x, &table, &grad)? else {
        return Ok(None);
    };
    Ok(Some(
        Tensor::from(dw).reshape(&crate::ops::to_i64(weight_shape))?,
    ))
}

/// [`conv_by_columns`]' node, given the windows and the product
/// (`[n, groups, c_out / groups, l]`, the bias added).
fn finish_conv(
    rec: crate::autograd::Record,
    (x, weight, bias): (&Tensor, &Tensor, Option<&Tensor>),
    (w, out, groups): (&Window, &[usize], usize),
    cols: Option<Tensor>,
    product: Tensor,
) -> Result<Tensor> {
    let (cols_shape, w_shape) = column_shapes(x, weight, w, out, groups);
    let [n, g, per_group, l] = cols_shape;
    let cout = g * w_shape[1];
    // `[n, c_out, *out]`, the same memory (not a view: the node's output).
    let mut shape = vec![n as usize, cout as usize];
    shape.extend_from_slice(out);
    let product = match product.is_contiguous() {
        true => product,
        false => product.contiguous()?,
    };
    let mut layout = crate::tensor::Layout::contiguous(&shape);
    layout.offset = product.storage_offset();
    let y = Tensor::from_storage(product.storage().clone(), layout);
    if !rec.active() {
        return Ok(y);
    }
    let (w, out) = (w.clone(), out.to_vec());
    let (in_shape, weight_shape) = (x.dims(), weight.dims());
    let has_bias = bias.is_some();
    let kept = cols.is_some();
    let rec = rec.save("input", x).save("weight", weight);
    let rec = match &cols {
        Some(cols) => rec.save("columns", cols),
        None => rec,
    };
    rec.finish(y, move |c| {
        let grad = &c.grad().reshape(&[n, g, cout / g, l])?;
        let (x, weight) = (c.saved(0)?, c.saved(1)?);
        let recorded = crate::autograd::would_record(&[grad, &weight, &x]);
        let dx = c.grad_for(0, || {
            if !recorded && g == 1 {
                if let Some(dx) = input_grad_in_cache(grad, &weight, &w, &in_shape, &out)? {
                    return Ok(dx);
                }
            }
            let dcols = weight
                .reshape(&w_shape)?
                .transpose(-1, -2)?
                .matmul(grad)?
                .reshape(&[n, g * per_group, l])?;
            dcols
                .window_sum(&in_shape[2..], &w, &out)?
                .reshape(&crate::ops::to_i64(&in_shape))
        })?;
        let dw = c.grad_for(1, || {
            if !recorded && g == 1 {
                if let Some(dw) = weight_grad_by_blocks(grad, &x, &w, &weight_shape, &out)? {
                    return Ok(dw);
                }
            }
            let cols = if recorded || !kept {
                x.window_cols(&w, &out, 0.0)?.view(&cols_shape)?
            } else {
                c.saved(2)?
            };
            cols.matmul(&grad.transpose(-1, -2)?)?
                .sum_dims(&[0], false, None)?
                .transpose(-1, -2)?
                .reshape(&crate::ops::to_i64(&weight_shape))
        })?;
        let mut grads = vec![dx, dw];
        if has_bias {
            grads.push(c.grad_for(2, || grad.sum_dims(&[0, 3], false, None)?.reshape(&[cout]))?);
        }
        Ok(grads)
    })
}

/// A sample's `w^T @ grad` size (bytes) from which [`input_grad_in_cache`]
/// runs a convolution.
const DX_AS_CONV_FROM_BYTES: usize = 2 << 20;

/// The input's gradient of a one-group convolution without `w^T @ grad`
/// in memory. For stride 1, as the convolution it is: `grad` (padded by `dilation * (k - 1) - padding`)
/// with the weight's channels swapped and its kernel flipped, so the
/// blocked forward kernel runs it (its products sum over `c_out * k`,
/// where `w^T @ grad` sums over `c_out` alone and writes `k` times the
/// input before folding). Taken where a sample's `w^T @ grad` would
/// outgrow the caches ([`DX_AS_CONV_FROM_BYTES`]) and the input has
/// channels enough to fill the GEMM's rows (on the conv sweep's shapes, AMD
/// Zen 4: 0.60 against 0.76 of torch's backward on 4x32x56x56, 0.70
/// against 0.83 on 3x16x64x64; with 3 input channels, or a 16x16 image, it
/// ran slower). Elsewhere (and for strides, or padding wider than the
/// kernel's extent less one) sample by sample
/// ([`crate::kernels::matmul::conv_input_grad`]; `None` where it does not
/// apply).
/// Not differentiable: for a backward that is not itself recorded.
fn input_grad_in_cache(
    grad: &Tensor,
    weight: &Tensor,
    w: &Window,
    in_shape: &[usize],
    out: &[usize],
) -> Result<Option<Tensor>> {
    let s = out.len();
    let pad: Vec<i64> = (0..s)
        .map(|d| (w.dilation[d] * (w.kernel[d] - 1)) as i64 - w.padding[d] as i64)
        .collect();
    let (cin, k) = (weight.shape()[1], w.kernel.iter().product::<usize>());
    let dcols_bytes = cin * k * out.iter().product::<usize>() * grad.dtype().itemsize();
    if w.stride.iter().any(|&v| v != 1)
        || pad.iter().any(|&p| p < 0)
        || cin < 16
        || dcols_bytes <= DX_AS_CONV_FROM_BYTES
    {
        // sample by sample (kernels::matmul::conv_input_grad)
        let (n, cout) = (grad.shape()[0], weight.shape()[0]);
        let l = out.iter().product::<usize>();
        let grad = grad
            .reshape(&[n as i64, cout as i64, l as i64])?
            .contiguous()?;
        let wm = weight
            .contiguous()?
            .reshape(&[cout as i64, (weight.numel() / cout.max(1)) as i64])?;
        let table = w.table(&in_shape[2..], out)?;
        let Some(dx) = crate::kernels::matmul::conv_input_grad(&grad, &table, &wm)? else {
            return Ok(None);
        };
        return Ok(Some(
            Tensor::from(dx).reshape(&crate::ops::to_i64(in_shape))?,
        ));
    }
    let mut grad_shape = vec![in_shape[0] as i64, weight.shape()[0] as i64];
    grad_shape.extend(out.iter().map(|&o| o as i64));
    let spatial: Vec<i64> = (2..2 + s as i64).collect();
    let flipped = weight.transpose(0, 1)?.flip(&spatial)?;
    let dilation: Vec<i64> = w.dilation.iter().map(|&d| d as i64).collect();
    let dx = grad.reshape(&grad_shape)?.conv(
        &flipped,
        None,
        &vec![1; s],
        &ConvPadding::Explicit(pad),
        &dilation,
        1,
        s,
    )?;
    if dx.shape() != in_shape {
        bail!(internal, "conv: the input gradient's shape");
    }
    Ok(Some(dx))
}

impl Tensor {
    /// `conv_transpose{s}d`, the adjoint of `conv{s}d` in its input: each
    /// input position scatters `weight` (`[C_in, C_out / groups, *kernel]`)
    /// into the output, i.e. `fold(weight^T @ input)`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_transpose(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: &[i64],
        padding: &[i64],
        output_padding: &[i64],
        groups: i64,
        dilation: &[i64],
        s: usize,
    ) -> Result<Tensor> {
        let all: Vec<&Tensor> = [self, weight].into_iter().chain(bias).collect();
        if let Some(v) = crate::autograd::autocast::lowered(&all)? {
            let b = bias.map(|_| &v[2]);
            return v[0].conv_transpose(
                &v[1],
                b,
                stride,
                padding,
                output_padding,
                groups,
                dilation,
                s,
            );
        }
        let ConvArgs {
            x,
            stride,
            dilation,
            groups,
        } = conv_args(self, weight, stride, dilation, groups, s, true)?;
        let padding = per_dim("padding", padding, s, "convolution")?;
        let output_padding = per_dim("output_padding", output_padding, s, "convolution")?;
        if padding.iter().any(|&v| v < 0) {
            bail!(runtime, "negative padding is not supported");
        }
        if output_padding.iter().any(|&v| v < 0) {
            bail!(runtime, "negative output_padding is not supported");
        }
        if (0..s).any(|d| {
            output_padding[d] as usize >= stride[d] && output_padding[d] as usize >= dilation[d]
        }) {
            bail!(
                runtime,
                "output padding must be smaller than either stride or dilation, but got output_padding={output_padding:?} stride={stride:?} dilation={dilation:?}"
            );
        }
        let ws = weight.shape();
        let cin = x.shape()[1];
        let cout = ws[1] * groups;
        check_bias(bias, &x, ws, cout, true)?;
        let input: Vec<usize> = x.shape()[2..].to_vec();
        let kernel: Vec<usize> = ws[2..].to_vec();
        let out: Vec<i64> = (0..s)
            .map(|d| {
                (input[d] as i64 - 1) * stride[d] as i64 - 2 * padding[d]
                    + (dilation[d] * (kernel[d] - 1)) as i64
                    + output_padding[d]
                    + 1
            })
            .collect();
        if out.iter().any(|&o| o <= 0) {
            bail!(
                runtime,
                "Given input size per channel: ({}). Calculated output size per channel: ({}). Output size is too small",
                join_x(&input),
                out.iter().map(|o| o.to_string()).collect::<Vec<_>>().join(" x ")
            );
        }
        let size = |v: Vec<i64>| v.into_iter().map(|x| x as usize).collect::<Vec<_>>();
        let output = size(out);
        let w = Window {
            kernel,
            dilation,
            padding: size(padding),
            stride,
        };
        let n = x.shape()[0] as i64;
        let k: usize = w.kernel.iter().product();
        let l: i64 = input.iter().product::<usize>() as i64;
        let g = groups as i64;
        let (cin_g, cout_g) = ((cin / groups) as i64, ws[1] as i64);
        let wm = weight
            .reshape(&[g, cin_g, cout_g * k as i64])?
            .transpose(1, 2)?;
        let xs = x.reshape(&[n, g, cin_g, l])?;
        let cols = wm.matmul(&xs)?.reshape(&[n, cout as i64 * k as i64, l])?;
        let y = cols.window_sum(&output, &w, &input)?;
        add_bias_unbatch(y, bias, self.ndim() == s + 1)
    }
}

/// A convolution's epilogue: `bias` added per output channel (dim 1), and
/// the batch dim dropped again for unbatched input.
fn add_bias_unbatch(y: Tensor, bias: Option<&Tensor>, unbatched: bool) -> Result<Tensor> {
    let y = match bias {
        Some(b) => {
            let mut shape = vec![1i64; y.ndim()];
            shape[1] = b.numel() as i64;
            y.add(&b.reshape(&shape)?)?
        }
        None => y,
    };
    if unbatched {
        y.squeeze_dim(0)
    } else {
        Ok(y)
    }
}

/// A convolution's checked arguments.
struct ConvArgs {
    /// The input with its batch dim (added for unbatched input).
    x: Tensor,
    stride: Vec<usize>,
    dilation: Vec<usize>,
    groups: usize,
}

/// The argument checks `conv` and `conv_transpose` share (torch's
/// messages): ranks, stride, dilation, groups, channels and dtypes.
fn conv_args(
    input: &Tensor,
    weight: &Tensor,
    stride: &[i64],
    dilation: &[i64],
    groups: i64,
    s: usize,
    transposed: bool,
) -> Result<ConvArgs> {
    let name = format!("conv{}{s}d", if transposed { "_transpose" } else { "" });
    if input.ndim() != s + 1 && input.ndim() != s + 2 {
        bail!(
            runtime,
            "Expected {}D (unbatched) or {}D (batched) input to {name}, but got input of size: {:?}",
            s + 1,
            s + 2,
            input.shape()
        );
    }
    if weight.ndim() != s + 2 {
        bail!(
            runtime,
            "{name}: expected weight to be {}-dimensional, but got weight of size {:?}",
            s + 2,
            weight.shape()
        );
    }
    let stride = per_dim("stride", stride, s, "convolution")?;
    let dilation = per_dim("dilation", dilation, s, "convolution")?;
    if stride.iter().any(|&v| v <= 0) {
        bail!(runtime, "non-positive stride is not supported");
    }
    if dilation.iter().any(|&v| v <= 0) {
        bail!(
            runtime,
            "dilation should be greater than zero, but got {dilation:?}"
        );
    }
    if groups <= 0 {
        bail!(runtime, "non-positive groups is not supported");
    }
    let groups = groups as usize;
    let ws = weight.shape();
    if !ws[0].is_multiple_of(groups) {
        bail!(
            runtime,
            "Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of size [{ws:?}] instead"
        );
    }
    let x = if input.ndim() == s + 1 {
        input.unsqueeze(0)?
    } else {
        input.clone()
    };
    let cin = x.shape()[1];
    let (expected, given) = if transposed {
        (ws[0], "transposed=1".to_string())
    } else {
        (ws[1] * groups, format!("groups={groups}"))
    };
    if cin != expected {
        bail!(
            runtime,
            "Given {given}, weight of size {ws:?}, expected input{:?} to have {expected} channels, but got {cin} channels instead",
            x.shape()
        );
    }
    if x.dtype() != weight.dtype() {
        bail!(
            runtime,
            "expected scalar type {} but found {}",
            x.dtype().scalar_type_name(),
            weight.dtype().scalar_type_name()
        );
    }
    let size = |v: Vec<i64>| v.into_iter().map(|d| d as usize).collect();
    Ok(ConvArgs {
        x,
        stride: size(stride),
        dilation: size(dilation),
        groups,
    })
}

/// A bias must hold one value per output channel, of the input's dtype.
fn check_bias(
    bias: Option<&Tensor>,
    x: &Tensor,
    ws: &[usize],
    cout: usize,
    transposed: bool,
) -> Result<()> {
    let Some(b) = bias else {
        return Ok(());
    };
    if b.ndim() != 1 || b.shape()[0] != cout {
        bail!(
            runtime,
            "Given {}weight of size {ws:?}, expected bias to be 1-dimensional with {cout} elements, but got bias of size {:?} instead",
            if transposed { "transposed=1, " } else { "" },
            b.shape()
        );
    }
    if b.dtype() != x.dtype() {
        bail!(
            runtime,
            "Input type ({}) and bias type ({}) should be the same",
            x.dtype().cpp_type_name(),
            b.dtype().cpp_type_name()
        );
    }
    Ok(())
}

/// A convolution's padding: per dim (or one for all), or torch's strings.
#[derive(Clone, Debug)]
pub enum ConvPadding {
    Explicit(Vec<i64>),
    Valid,
    Same,
}

impl ConvPadding {
    pub fn parse(s: &str) -> Result<ConvPadding> {
        match s {
            "valid" => Ok(ConvPadding::Valid),
            "same" => Ok(ConvPadding::Same),
            _ => bail!(runtime, "Invalid padding string: '{s}'"),
        }
    }
}
