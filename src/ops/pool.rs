//! Pooling over 1-3 spatial dims of `[N, C, *spatial]` (or unbatched
//! `[C, *spatial]`) tensors, composed of differentiable ops:
//! - max: the kernel finds each window's largest element and its position;
//!   the gradient is scattered back to those positions (`scatter_add`, so
//!   it is differentiable again);
//! - average: window sums (`unfold` then `sum`) over per-window divisors;
//! - adaptive average: one averaging matrix per spatial dim (`matmul`).

use super::conv::{join_x, Window};
use super::to_i64;
use crate::autograd::record;
use crate::kernels::copy::with_slice;
use crate::tensor::Element;

/// torch's names for max pooling's gradient node, by spatial rank.
const MAX_POOL_NAMES: [&str; 3] = [
    "MaxPool1DWithIndicesBackward0",
    "MaxPool2DWithIndicesBackward0",
    "MaxPool3DWithIndicesBackward0",
];
use crate::{bail, DType, Result, Tensor};

/// torch's names for adaptive max pooling's gradient node, by spatial rank.
const ADAPTIVE_MAX_POOL_NAMES: [&str; 3] = [
    "AdaptiveMaxPool1DBackward0",
    "AdaptiveMaxPool2DBackward0",
    "AdaptiveMaxPool3DBackward0",
];

/// Each window's maximum over `x` (`[N, C, *spatial]`) and its flat
/// position in its plane, as a node `node` whose gradient goes to those
/// positions (a scatter_add, differentiable again). The positions are
/// computed only when `want_index` or a graph is recorded (`None` else).
fn window_max(
    x: &Tensor,
    table: &crate::kernels::window::Windows,
    window: Option<&Window>,
    out: &[usize],
    (node, name): (&'static str, &str),
    want_index: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    let rec = record(node, &[x]);
    let (n, c) = (x.shape()[0], x.shape()[1]);
    let mut out_dims = vec![n, c];
    out_dims.extend_from_slice(out);
    // A 2-d input in channels-last memory is pooled in place, vectorised
    // over the channels, and gives channels-last outputs (as torch's).
    let cl = window.and_then(|w| channels_last_2d(x, w, out));
    let empty = || {
        Err(crate::Error::runtime(format!(
            "{name}: a pooling window lies wholly in the padding; use less padding or dilation"
        )))
    };
    if cl
        .as_ref()
        .is_some_and(|(_, sizes)| sizes.has_empty_window())
    {
        return empty();
    }
    let with_index = want_index || rec.active();
    // (float16/bfloat16 read as float32; the maxima round back exactly)
    let (values, idx) = crate::dispatch_numeric!(x.dtype().compute(), name, T => {
        let (v, i) = match &cl {
            Some((nhwc, sizes)) => with_slice::<T, _>(nhwc, |d| sizes.max(d, with_index))?,
            None => with_slice::<T, _>(x, |d| table.max(d))?,
        };
        (T::wrap(v), i)
    });
    if cl.is_none() && idx.contains(&-1) {
        return empty();
    }
    let shaped = |t: Tensor| match &cl {
        Some(_) => t
            .view(&to_i64(&[n, out[0], out[1], c]))?
            .permute(&[0, 3, 1, 2]),
        None => t.view(&to_i64(&out_dims)),
    };
    let values =
        shaped(Tensor::from_data(values, &[out_dims.iter().product()]).try_cast_raw(x.dtype())?)?;
    if !with_index {
        // Nothing is recorded (with_index holds when rec is active).
        return Ok((values, None));
    }
    let index = shaped(Tensor::from_vec(idx, &[out_dims.iter().product()])?)?;
    let in_dims = x.dims();
    let plane = table.plane;
    let values = rec.save("indices", &index).finish(values, move |ctx| {
        // Each window's gradient goes to the element it took.
        let (n, c) = (in_dims[0] as i64, in_dims[1] as i64);
        let g = ctx.grad().reshape(&[n, c, -1])?;
        let idx = ctx.saved(0)?.reshape(&[n, c, -1])?;
        let z = Tensor::zeros(&[in_dims[0], in_dims[1], plane], g.dtype());
        let grad = z.scatter_add(2, &idx, &g)?.reshape(&to_i64(&in_dims))?;
        Ok(vec![Some(grad)])
    })?;
    Ok((values, Some(index)))
}

/// For a `[N, C, H, W]` input stored channels-last (strides `[H*W*C, 1,
/// W*C, C]`, not also contiguous) pooled by the regular window `geometry`: the
/// input as its `[N, H, W, C]` contiguous view and the pooling's sizes.
fn channels_last_2d(
    x: &Tensor,
    geometry: &Window,
    out: &[usize],
) -> Option<(Tensor, crate::kernels::window::ChannelsLast2d)> {
    if x.ndim() != 4 || x.is_contiguous() || out.len() != 2 {
        return None;
    }
    let nhwc = x.permute(&[0, 2, 3, 1]).ok()?;
    if !nhwc.is_contiguous() {
        return None;
    }
    let [n, c, h, w] = [x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]];
    let two = |v: &[usize]| [v[0], v[1]];
    Some((
        nhwc,
        crate::kernels::window::ChannelsLast2d {
            input: [n, h, w, c],
            out: [out[0], out[1]],
            kernel: two(&geometry.kernel),
            stride: two(&geometry.stride),
            padding: two(&geometry.padding),
            dilation: two(&geometry.dilation),
        },
    ))
}

/// Adaptive pooling's output sizes: one per spatial dim (or one for all),
/// `None` keeping the input's size; torch's checks.
fn adaptive_sizes(
    name: &str,
    t: &Tensor,
    s: usize,
    output_size: &[Option<i64>],
) -> Result<Vec<usize>> {
    if t.ndim() != s + 1 && t.ndim() != s + 2 {
        bail!(
            runtime,
            "{name}(): Expected {}D or {}D tensor, but got{} {:?}",
            s + 1,
            s + 2,
            if name.starts_with("adaptive_max") {
                ":"
            } else {
                ""
            },
            t.shape()
        );
    }
    let sizes: Vec<Option<i64>> = match output_size.len() {
        1 => vec![output_size[0]; s],
        n if n == s => output_size.to_vec(),
        _ => bail!(runtime, "{name}: output_size must be {s}"),
    };
    let input = &t.shape()[t.ndim() - s..];
    let sizes: Vec<i64> = sizes
        .iter()
        .zip(input)
        .map(|(o, &i)| o.unwrap_or(i as i64))
        .collect();
    if sizes.iter().any(|&v| v < 0) {
        let shown: Vec<String> = sizes.iter().map(|v| v.to_string()).collect();
        bail!(
            runtime,
            "{name}: elements of output_size must be greater than or equal to 0 but received {{{}}}",
            shown.join(", ")
        );
    }
    Ok(sizes.into_iter().map(|v| v as usize).collect())
}

/// `[N, C, *spatial]`: `t` itself or `t` with a batch dim of one.
fn batched(t: &Tensor, s: usize) -> Result<Tensor> {
    if t.ndim() == s + 1 {
        t.unsqueeze(0)
    } else {
        Ok(t.clone())
    }
}

/// Drops the batch dim [`batched`] added.
fn unbatched(t: Tensor, input: &Tensor, s: usize) -> Result<Tensor> {
    if input.ndim() == s + 1 {
        t.squeeze_dim(0)
    } else {
        Ok(t)
    }
}

fn ints_word(s: usize) -> &'static str {
    ["one", "two", "three"][s - 1]
}

/// A pooling window from torch's arguments (`stride` empty: the kernel).
fn pool_window(
    name: &str,
    s: usize,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
) -> Result<Window> {
    let each = |arg: &str, v: &[i64], omit: bool| -> Result<Vec<i64>> {
        match v.len() {
            1 => Ok(vec![v[0]; s]),
            n if n == s => Ok(v.to_vec()),
            _ => bail!(
                runtime,
                "{name}: {arg} must either be {}a single int, or a tuple of {} ints",
                if omit { "omitted, " } else { "" },
                ints_word(s)
            ),
        }
    };
    let k = each("kernel_size", kernel, false)?;
    let st = if stride.is_empty() {
        k.clone()
    } else {
        each("stride", stride, true)?
    };
    let p = each("padding", padding, false)?;
    let d = each("dilation", dilation, false)?;
    if k.iter().any(|&v| v <= 0) {
        bail!(
            runtime,
            "kernel_size should be greater than zero, but got {k:?}"
        );
    }
    if st.contains(&0) {
        bail!(runtime, "stride should not be zero");
    }
    if st.iter().any(|&v| v < 0) {
        bail!(
            runtime,
            "stride should be greater than zero, but got {st:?}"
        );
    }
    if let Some(&bad) = p.iter().find(|&&v| v < 0) {
        bail!(runtime, "pad must be non-negative, but got pad: {bad}");
    }
    if d.iter().any(|&v| v <= 0) {
        bail!(
            runtime,
            "dilation should be greater than zero, but got {d:?}"
        );
    }
    for i in 0..s {
        if p[i] > (d[i] * (k[i] - 1) + 1) / 2 {
            bail!(
                runtime,
                "pad should be at most half of effective kernel size, but got pad={}, kernel_size={} and dilation={}",
                p[i],
                k[i],
                d[i]
            );
        }
    }
    let u = |v: Vec<i64>| v.into_iter().map(|x| x as usize).collect();
    Ok(Window {
        kernel: u(k),
        dilation: u(d),
        padding: u(p),
        stride: u(st),
    })
}

/// The checks every pooling op makes on its input's rank and size.
fn check_input(name: &str, t: &Tensor, s: usize) -> Result<()> {
    let ok = t.ndim() == s + 1 || t.ndim() == s + 2;
    if !ok || t.shape()[t.ndim() - s - 1..].contains(&0) {
        bail!(
            runtime,
            "{name}: non-empty {}D or {}D (batch mode) tensor expected for input, but got {:?}",
            s + 1,
            s + 2,
            t.shape()
        );
    }
    Ok(())
}

/// The output sizes, or torch's "Output size is too small".
fn pool_out(w: &Window, x: &Tensor, ceil_mode: bool) -> Result<Vec<usize>> {
    let input = &x.shape()[2..];
    let out = w.out_size(input, ceil_mode);
    match out {
        Some(o) if !o.contains(&0) => Ok(o),
        _ => {
            let calc: Vec<i64> = (0..input.len())
                .map(|d| {
                    let span = (input[d] + 2 * w.padding[d]) as i64 - w.extent(d) as i64;
                    // pooling rounds down (unfold's `Window::blocks` truncates)
                    (span.div_euclid(w.stride[d] as i64) + 1).max(0)
                })
                .collect();
            let c = x.shape()[1];
            bail!(
                runtime,
                "Given input size: ({c}x{}). Calculated output size: ({c}x{}). Output size is too small",
                join_x(input).replace(" x ", "x"),
                calc.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            )
        }
    }
}

impl Tensor {
    /// `max_pool{s}d`: the values and each one's flat position in its
    /// input plane (torch's `return_indices`).
    #[allow(clippy::too_many_arguments)]
    pub fn max_pool(
        &self,
        s: usize,
        kernel: &[i64],
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        ceil_mode: bool,
    ) -> Result<(Tensor, Tensor)> {
        let geometry = [kernel, stride, padding, dilation];
        let (values, index) = self.max_pool_with(s, geometry, ceil_mode, true)?;
        Ok((values, index.expect("positions were asked for")))
    }

    /// `max_pool{s}d` without the positions (computed only when a graph
    /// is recorded).
    pub fn max_pool_values(
        &self,
        s: usize,
        [kernel, stride, padding, dilation]: [&[i64]; 4],
        ceil_mode: bool,
    ) -> Result<Tensor> {
        let geometry = [kernel, stride, padding, dilation];
        Ok(self.max_pool_with(s, geometry, ceil_mode, false)?.0)
    }

    fn max_pool_with(
        &self,
        s: usize,
        [kernel, stride, padding, dilation]: [&[i64]; 4],
        ceil_mode: bool,
        want_index: bool,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let name = format!("max_pool{s}d");
        check_input(&name, self, s)?;
        let w = pool_window(&name, s, kernel, stride, padding, dilation)?;
        let x = batched(self, s)?;
        let out = pool_out(&w, &x, ceil_mode)?;
        let input = x.shape()[2..].to_vec();
        let table = crate::kernels::window::Windows::new(
            &input,
            &out,
            &w.kernel,
            &w.dilation,
            &w.padding,
            &w.stride,
        )?;
        let node = (MAX_POOL_NAMES[s - 1], name.as_str());
        let (values, index) = window_max(&x, &table, Some(&w), &out, node, want_index)?;
        let index = index.map(|i| unbatched(i, self, s)).transpose()?;
        Ok((unbatched(values, self, s)?, index))
    }

    /// `adaptive_max_pool{s}d`: the maximum of each adaptive window (those
    /// of `adaptive_avg_pool`) and its flat position in its plane.
    pub fn adaptive_max_pool(
        &self,
        s: usize,
        output_size: &[Option<i64>],
    ) -> Result<(Tensor, Tensor)> {
        let name = format!("adaptive_max_pool{s}d");
        let sizes = adaptive_sizes(&name, self, s, output_size)?;
        let x = batched(self, s)?;
        let table = crate::kernels::window::Windows::adaptive(&x.shape()[2..], &sizes)?;
        let node = (ADAPTIVE_MAX_POOL_NAMES[s - 1], name.as_str());
        let (values, index) = window_max(&x, &table, None, &sizes, node, true)?;
        let index = index.expect("positions were asked for");
        Ok((unbatched(values, self, s)?, unbatched(index, self, s)?))
    }

    /// `avg_pool{s}d`.
    #[allow(clippy::too_many_arguments)]
    pub fn avg_pool(
        &self,
        s: usize,
        kernel: &[i64],
        stride: &[i64],
        padding: &[i64],
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Option<i64>,
    ) -> Result<Tensor> {
        let name = format!("avg_pool{s}d");
        check_input(&name, self, s)?;
        if !self.dtype().is_floating() {
            bail!(
                not_implemented,
                "\"{name}\" not implemented for '{}'",
                self.dtype().scalar_type_name()
            );
        }
        let w = pool_window(&name, s, kernel, stride, padding, &[1])?;
        if divisor_override == Some(0) {
            bail!(runtime, "divisor must be not zero");
        }
        let x = batched(self, s)?;
        let out = pool_out(&w, &x, ceil_mode)?;
        let input = &x.shape()[2..];
        // Per dim and output position: the window's length inside the
        // padded input, or inside the input itself.
        let lengths: Vec<Vec<f64>> = (0..s)
            .map(|d| {
                (0..out[d])
                    .map(|o| {
                        let start = (o * w.stride[d]) as i64 - w.padding[d] as i64;
                        let end =
                            (start + w.kernel[d] as i64).min((input[d] + w.padding[d]) as i64);
                        let len = if count_include_pad {
                            end - start
                        } else {
                            end.min(input[d] as i64) - start.max(0)
                        };
                        len as f64
                    })
                    .collect()
            })
            .collect();
        let l: usize = out.iter().product();
        let mut divisors = vec![1.0f64; l];
        if let Some(v) = divisor_override {
            divisors.fill(v as f64);
        } else {
            let mut o = vec![0usize; s];
            for dv in divisors.iter_mut() {
                *dv = (0..s).map(|d| lengths[d][o[d]]).product();
                for d in (0..s).rev() {
                    o[d] += 1;
                    if o[d] < out[d] {
                        break;
                    }
                    o[d] = 0;
                }
            }
        }
        let divisors = Tensor::from_vec(divisors, &[l])?.to_dtype(x.dtype())?;
        let (n, c) = (x.shape()[0] as i64, x.shape()[1] as i64);
        let mut shape = vec![n, c];
        shape.extend(to_i64(&out));
        let y = x.window_totals(&w, &out)?.div(&divisors)?.reshape(&shape)?;
        unbatched(y, self, s)
    }

    /// `adaptive_avg_pool{s}d`: output position `o` of a dim of size `n`
    /// averages inputs `floor(o * n / out)..ceil((o + 1) * n / out)`.
    pub fn adaptive_avg_pool(&self, s: usize, output_size: &[Option<i64>]) -> Result<Tensor> {
        let name = format!("adaptive_avg_pool{s}d");
        let sizes = adaptive_sizes(&name, self, s, output_size)?;
        if !self.dtype().is_floating() {
            bail!(
                not_implemented,
                "\"{name}\" not implemented for '{}'",
                self.dtype().scalar_type_name()
            );
        }
        let nd = self.ndim();
        let input = &self.shape()[nd - s..];
        // Window sums through a 0/1 matrix per dim, then one division by
        // the window sizes (sum, then divide, as torch).
        let mut y = self.clone();
        let mut counts = Tensor::ones(&[], DType::F64);
        for d in 0..s {
            let n = input[d];
            let o = sizes[d];
            let mut m = vec![0.0f64; n * o];
            let mut len = vec![0.0f64; o];
            for j in 0..o {
                let (start, end) = ((j * n) / o, ((j + 1) * n).div_ceil(o));
                for i in start..end {
                    m[i * o + j] = 1.0;
                }
                len[j] = (end - start) as f64;
            }
            let m = Tensor::from_vec(m, &[n, o])?.to_dtype(self.dtype())?;
            let dim = (nd - s + d) as i64;
            y = y
                .movedim(&[dim], &[-1])?
                .matmul(&m)?
                .movedim(&[-1], &[dim])?;
            counts = counts.unsqueeze(-1)?.mul(&Tensor::from_vec(len, &[o])?)?;
        }
        y = y.div(&counts.to_dtype(self.dtype())?)?;
        Ok(y)
    }
}
