//! Sliding-window ops over the trailing 1-3 spatial dims of a
//! `[batch, channels, *spatial]` tensor: `unfold` (im2col) and `fold`
//! (col2im), each the other's gradient, and convolution built on them:
//! `conv = weight @ unfold(input)` (a batched matmul per group), so its
//! gradients, second derivatives and tangents follow from unfold's and
//! matmul's. Pooling is in `pool.rs`.

use crate::autograd::record;
use crate::kernels::window::Windows;
use crate::tensor::Element;
use crate::{bail, Result, Tensor};

/// The geometry of a sliding window, per spatial dim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub kernel: Vec<usize>,
    pub dilation: Vec<usize>,
    pub padding: Vec<usize>,
    pub stride: Vec<usize>,
}

impl Window {
    /// Each window's extent along dim `d` (kernel size with dilation).
    pub fn extent(&self, d: usize) -> usize {
        self.dilation[d] * (self.kernel[d] - 1) + 1
    }
    /// Output sizes over `input`; `ceil_mode` (pooling) adds a last, partial
    /// window where one starts inside the input or its left padding.
    /// `None` where a dim has no room for a single window.
    pub fn out_size(&self, input: &[usize], ceil_mode: bool) -> Option<Vec<usize>> {
        (0..input.len())
            .map(|d| {
                let span = (input[d] + 2 * self.padding[d]) as i64 - self.extent(d) as i64;
                if span < 0 {
                    return None;
                }
                let s = self.stride[d] as i64;
                let mut o = if ceil_mode {
                    (span + s - 1) / s + 1
                } else {
                    span / s + 1
                };
                if ceil_mode && (o - 1) * s >= (input[d] + self.padding[d]) as i64 {
                    o -= 1;
                }
                Some(o as usize)
            })
            .collect()
    }
    /// Windows per dim as ATen's unfold/fold messages count them (C++
    /// integer division, so possibly zero or negative).
    pub fn blocks(&self, input: &[usize]) -> Vec<i64> {
        (0..input.len())
            .map(|d| {
                let span = (input[d] + 2 * self.padding[d]) as i64 - self.extent(d) as i64;
                span / self.stride[d] as i64 + 1
            })
            .collect()
    }
    fn table(&self, input: &[usize], out: &[usize]) -> Result<std::sync::Arc<Windows>> {
        Windows::new(
            input,
            out,
            &self.kernel,
            &self.dilation,
            &self.padding,
            &self.stride,
        )
    }
}

/// `values` (one per spatial dim, or a single one for all) as sizes; torch's
/// "expected {name} to be a single integer value or a list of {s} values"
/// otherwise.
pub fn per_dim(name: &str, values: &[i64], s: usize, op: &str) -> Result<Vec<i64>> {
    match values.len() {
        1 => Ok(vec![values[0]; s]),
        n if n == s => Ok(values.to_vec()),
        _ => bail!(
            runtime,
            "expected {name} to be a single integer value or a list of {s} values to match the {op} dimensions, but got {name}={values:?}"
        ),
    }
}

impl Tensor {
    /// im2col: `self` is `[batch, channels, *input]`; the result
    /// `[batch, channels * K, L]` (K kernel positions, L windows), with
    /// `fill` read over the padding.
    pub(crate) fn window_cols(&self, w: &Window, out: &[usize], fill: f64) -> Result<Tensor> {
        let s = w.kernel.len();
        let (batch, channels) = (self.shape()[0], self.shape()[1]);
        let input: Vec<usize> = self.shape()[2..2 + s].to_vec();
        let table = w.table(&input, out)?;
        let rec = record("Im2ColBackward0", &[self]);
        let data = crate::dispatch_numeric!(self.dtype().compute(), "im2col", T => {
            let v = crate::kernels::copy::with_slice::<T, _>(self, |x| table.gather(x, T::from_f64(fill)))??;
            T::wrap(v)
        });
        let shape = [batch, channels * table.k, table.l];
        let result = Tensor::from_data(data, &shape).try_cast_raw(self.dtype())?;
        let (w, out, in_shape) = (w.clone(), out.to_vec(), self.dims());
        rec.finish(result, move |c| {
            let g = c.grad().window_sum(&input, &w, &out)?;
            Ok(vec![Some(g.reshape(&super::to_i64(&in_shape))?)])
        })
    }

    /// col2im, the adjoint of [`Tensor::window_cols`]: `self` is
    /// `[batch, channels * K, L]`; the result `[batch, channels, *input]`.
    pub(crate) fn window_sum(&self, input: &[usize], w: &Window, out: &[usize]) -> Result<Tensor> {
        let table = w.table(input, out)?;
        let batch = self.shape()[0];
        let channels = self.shape()[1] / table.k.max(1);
        let rec = record("Col2ImBackward0", &[self]);
        let data = crate::dispatch_numeric!(self.dtype().compute(), "col2im", T => {
            T::wrap(crate::kernels::copy::with_slice::<T, _>(self, |x| table.scatter_add(x))?)
        });
        let mut shape = vec![batch, channels];
        shape.extend_from_slice(input);
        let result = Tensor::from_data(data, &shape).try_cast_raw(self.dtype())?;
        let (w, out) = (w.clone(), out.to_vec());
        rec.finish(result, move |c| {
            Ok(vec![Some(c.grad().window_cols(&w, &out, 0.0)?)])
        })
    }

    /// Each window's sum: `self` is `[batch, channels, *input]`; the result
    /// `[batch, channels, L]` (padding adds nothing): `window_cols` summed
    /// over the kernel positions, without the `K` times larger copy.
    pub(crate) fn window_totals(&self, w: &Window, out: &[usize]) -> Result<Tensor> {
        let s = w.kernel.len();
        let (batch, channels) = (self.shape()[0], self.shape()[1]);
        let input: Vec<usize> = self.shape()[2..2 + s].to_vec();
        let table = w.table(&input, out)?;
        let rec = record("WindowSumBackward0", &[self]);
        let data = crate::dispatch_numeric!(self.dtype().compute(), "window_sum", T => {
            T::wrap(crate::kernels::copy::with_slice::<T, _>(self, |x| table.sum(x))??)
        });
        let result =
            Tensor::from_data(data, &[batch, channels, table.l]).try_cast_raw(self.dtype())?;
        let (w, out, in_shape) = (w.clone(), out.to_vec(), self.dims());
        rec.finish(result, move |c| {
            let g = c.grad().spread_windows(&input, &w, &out)?;
            Ok(vec![Some(g.reshape(&super::to_i64(&in_shape))?)])
        })
    }

    /// The adjoint of [`Tensor::window_totals`]: `self` is `[batch,
    /// channels, L]`; each window's value is added to every input position
    /// it covers, giving `[batch, channels, *input]`.
    pub(crate) fn spread_windows(
        &self,
        input: &[usize],
        w: &Window,
        out: &[usize],
    ) -> Result<Tensor> {
        let table = w.table(input, out)?;
        let (batch, channels) = (self.shape()[0], self.shape()[1]);
        let rec = record("WindowSpreadBackward0", &[self]);
        let data = crate::dispatch_numeric!(self.dtype().compute(), "window_spread", T => {
            T::wrap(crate::kernels::copy::with_slice::<T, _>(self, |x| table.spread(x))?)
        });
        let mut shape = vec![batch, channels];
        shape.extend_from_slice(input);
        let result = Tensor::from_data(data, &shape).try_cast_raw(self.dtype())?;
        let (w, out) = (w.clone(), out.to_vec());
        rec.finish(result, move |c| {
            Ok(vec![Some(c.grad().window_totals(&w, &out)?)])
        })
    }

    /// `nn.functional.unfold`: `[N, C, H, W]` (or `[C, H, W]`) to
    /// `[N, C * kh * kw, L]` blocks.
    pub fn unfold_blocks(
        &self,
        kernel: &[i64],
        dilation: &[i64],
        padding: &[i64],
        stride: &[i64],
    ) -> Result<Tensor> {
        if self.ndim() != 3 && self.ndim() != 4 || self.shape()[self.ndim() - 3..].contains(&0) {
            bail!(
                runtime,
                "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: {:?}",
                self.shape()
            );
        }
        let w = block_window(kernel, dilation, padding, stride)?;
        let batched = self.ndim() == 4;
        let x = if batched {
            self.clone()
        } else {
            self.unsqueeze(0)?
        };
        let input = &x.shape()[2..];
        let out = w.out_size(input, false).filter(|o| !o.contains(&0));
        let Some(out) = out else {
            let o = w.blocks(input);
            bail!(
                runtime,
                "Given input with spatial size ({}, {}), kernel_size=({}, {}), dilation=({}, {}), padding=({}, {}), calculated shape of the array of sliding blocks as ({}, {}), but its components must be at least one.",
                input[0], input[1], w.kernel[0], w.kernel[1], w.dilation[0], w.dilation[1],
                w.padding[0], w.padding[1], o[0].max(0), o[1].max(0)
            );
        };
        let cols = x.window_cols(&w, &out, 0.0)?;
        if batched {
            Ok(cols)
        } else {
            cols.squeeze_dim(0)
        }
    }

    /// `nn.functional.fold`: `[N, C * kh * kw, L]` (or `[C * kh * kw, L]`)
    /// blocks summed into `[N, C, *output_size]`.
    pub fn fold_blocks(
        &self,
        output_size: &[i64],
        kernel: &[i64],
        dilation: &[i64],
        padding: &[i64],
        stride: &[i64],
    ) -> Result<Tensor> {
        if self.ndim() != 2 && self.ndim() != 3 || self.shape()[self.ndim() - 2..].contains(&0) {
            bail!(
                runtime,
                "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, but got: {:?}",
                self.shape()
            );
        }
        if output_size.len() != 2 {
            bail!(
                runtime,
                "It is expected output_size equals to 2, but got size {}",
                output_size.len()
            );
        }
        let w = block_window(kernel, dilation, padding, stride)?;
        if output_size.iter().any(|&o| o <= 0) {
            bail!(
                runtime,
                "Expected output spatial size to be positive, but got: output_size=({}, {}).",
                output_size[0],
                output_size[1]
            );
        }
        let batched = self.ndim() == 3;
        let x = if batched {
            self.clone()
        } else {
            self.unsqueeze(0)?
        };
        let input: Vec<usize> = output_size.iter().map(|&o| o as usize).collect();
        let k = w.kernel[0] * w.kernel[1];
        if x.shape()[1] % k != 0 {
            bail!(
                runtime,
                "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)={} and kernel_size=({}, {}).",
                x.shape()[1],
                w.kernel[0],
                w.kernel[1]
            );
        }
        let out = w.out_size(&input, false).filter(|o| !o.contains(&0));
        let blocks = w.blocks(&input);
        let l = x.shape()[2];
        let Some(out) = out.filter(|o| o[0] * o[1] == l) else {
            bail!(
                runtime,
                "Given output_size=({}, {}), kernel_size=({}, {}), dilation=({}, {}), padding=({}, {}), stride=({}, {}), expected size of input's dimension 2 to match the calculated number of sliding blocks {} * {} = {}, but got input.size(2)={}.",
                input[0], input[1], w.kernel[0], w.kernel[1], w.dilation[0], w.dilation[1],
                w.padding[0], w.padding[1], w.stride[0], w.stride[1],
                blocks[0], blocks[1], blocks[0] * blocks[1], l
            );
        };
        let r = x.window_sum(&input, &w, &out)?;
        if batched {
            Ok(r)
        } else {
            r.squeeze_dim(0)
        }
    }
}

mod convolution;
pub use convolution::ConvPadding;

/// `2x3`-style sizes, as torch's messages print them.
pub(crate) fn join_x(v: &[usize]) -> String {
    v.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(" x ")
}

/// unfold/fold's 2-D window, with their argument checks.
fn block_window(
    kernel: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
) -> Result<Window> {
    let two = |name: &str, v: &[i64]| -> Result<Vec<i64>> {
        match v.len() {
            1 => Ok(vec![v[0]; 2]),
            2 => Ok(v.to_vec()),
            n => bail!(
                runtime,
                "It is expected {name} equals to 2, but got size {n}"
            ),
        }
    };
    let (k, d, p, s) = (
        two("kernel_size", kernel)?,
        two("dilation", dilation)?,
        two("padding", padding)?,
        two("stride", stride)?,
    );
    if k.iter().any(|&v| v <= 0) {
        bail!(
            runtime,
            "kernel size should be greater than zero, but got kernel_height: {} kernel_width: {}",
            k[0],
            k[1]
        );
    }
    if d.iter().any(|&v| v <= 0) {
        bail!(
            runtime,
            "dilation should be greater than zero, but got dilation_height: {} dilation_width: {}",
            d[0],
            d[1]
        );
    }
    if p.iter().any(|&v| v < 0) {
        bail!(
            runtime,
            "padding should be non-negative, but got pad_height: {} pad_width: {}",
            p[0],
            p[1]
        );
    }
    if s.iter().any(|&v| v <= 0) {
        bail!(
            runtime,
            "stride should be greater than zero, but got stride_height: {} stride_width: {}",
            s[0],
            s[1]
        );
    }
    let u = |v: Vec<i64>| v.into_iter().map(|x| x as usize).collect();
    Ok(Window {
        kernel: u(k),
        dilation: u(d),
        padding: u(p),
        stride: u(s),
    })
}
