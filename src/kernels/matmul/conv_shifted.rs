//! A stride-1 float32 convolution's forward with no im2col at all: each
//! sample is padded once into a buffer, and row `(c, kernel position)` of
//! its window matrix is then the padded buffer from one offset on, read
//! straight through. Those rows go to our GEMM as a [`RowTable`], whose
//! packer reads them where they lie, so the only pass over the windows is
//! the packing every product does anyway.
//!
//! Reading a row straight through walks the padded input row by row, so
//! the product computes a "wide" output: for every output row, all
//! `padded[last]` columns, of which the first `out[last]` are the output
//! and the rest (windows that wrap into the next row) are dropped when the
//! sample's result is copied out. Likewise in 3-D for the middle dim.

use super::super::sgemm::{sgemm, Isa, Operand, RowTable};
use crate::buffer::Strided;
use crate::{bail, Result};

/// The geometry of a stride-1 convolution: per spatial dim, the input
/// size, kernel size, dilation and padding (both sides).
pub struct ShiftedConv<'a> {
    pub input: &'a [usize],
    pub kernel: &'a [usize],
    pub dilation: &'a [usize],
    pub padding: &'a [usize],
}

/// The kernel the shifted path runs on, if this CPU has one.
fn isa() -> Option<Isa> {
    if Isa::Avx512.available() {
        Some(Isa::Avx512)
    } else if Isa::Avx2.available() {
        Some(Isa::Avx2)
    } else {
        None
    }
}

/// `x` (contiguous float32 `[batch, channels, *input]`) convolved with `w`
/// (contiguous `[m, channels * prod(kernel)]`), stride 1: `[batch, m,
/// prod(out)]`. Samples in blocks of whole samples, about two per thread,
/// each product on one thread (so the result does not depend on the thread
/// count). `None` where it does not apply (not float32, a CPU without
/// AVX2, an empty input, too few samples to keep the threads busy).
pub fn conv_forward_shifted(x: &Strided, g: &ShiftedConv, w: &Strided) -> Result<Option<Strided>> {
    let Some(isa) = isa() else {
        return Ok(None);
    };
    let threads = crate::parallel::num_threads();
    if x.dtype() != crate::buffer::DType::F32
        || !x.is_contiguous()
        || !w.is_contiguous()
        || (threads > 1 && x.shape()[0] < 2 * threads)
    {
        return Ok(None);
    }
    let s = g.input.len();
    let (samples, channels) = (x.shape()[0], x.shape()[1]);
    let padded: Vec<usize> = (0..s).map(|d| g.input[d] + 2 * g.padding[d]).collect();
    let extent: Vec<usize> = (0..s).map(|d| g.dilation[d] * (g.kernel[d] - 1)).collect();
    if (0..s).any(|d| extent[d] >= padded[d]) || x.shape()[2..] != *g.input {
        bail!(internal, "kernels::conv_forward_shifted: bad geometry");
    }
    let out: Vec<usize> = (0..s).map(|d| padded[d] - extent[d]).collect();
    let plane: usize = padded.iter().product();
    let taps: usize = g.kernel.iter().product();
    let (m, k) = (w.shape()[0], channels * taps);
    if w.shape()[1] != k || samples * channels * m == 0 || out.contains(&0) {
        return Ok(None);
    }
    // Row-major strides of the padded sample and the wide output's columns:
    // every output row at full padded width.
    let mut pstride = vec![1usize; s];
    for d in (0..s.saturating_sub(1)).rev() {
        pstride[d] = pstride[d + 1] * padded[d + 1];
    }
    let wide = out[0] * pstride[0];
    // Row (c, tap) of the window matrix starts at c * plane + the tap's
    // offset; the last row read reaches `max offset + wide`.
    let mut offsets = Vec::with_capacity(k);
    for c in 0..channels {
        for t in 0..taps {
            let (mut rest, mut off) = (t, c * plane);
            for d in (0..s).rev() {
                off += (rest % g.kernel[d]) * g.dilation[d] * pstride[d];
                rest /= g.kernel[d];
            }
            offsets.push(off);
        }
    }
    let span = (offsets.iter().max().copied().unwrap_or(0) + wide).max(channels * plane);
    let l: usize = out.iter().product();
    let per_sample = channels * g.input.iter().product::<usize>();
    let mut result = crate::buffer::pool::try_buffer::<f32>(samples * m * l)?;
    let per = super::samples_per_block(samples);
    // Per block: the padded sample (its padding and the tail past the last
    // plane zeroed once; every sample rewrites only the inside) and the
    // wide output.
    let bufs = (0..samples.div_ceil(per))
        .map(|_| {
            let padded_buf = vec![0f32; span];
            let wide_buf = crate::buffer::pool::try_buffer::<f32>(m * wide)?;
            Ok(parking_lot::Mutex::new((padded_buf, wide_buf)))
        })
        .collect::<Result<Vec<_>>>()?;
    let sx = x.storage().read_recursive();
    let sw = w.storage().read_recursive();
    let dx = &sx.as_slice::<f32>()[x.layout().offset..];
    let dw = &sw.as_slice::<f32>()[w.layout().offset..];
    let rows_in = per_sample / g.input[s - 1];
    let last = g.input[s - 1];
    let run = |first: usize, block: &mut [f32]| {
        let mut guard = bufs[first / (per * m * l)].lock();
        let (xp, yw) = &mut *guard;
        for (i, dst) in block.chunks_mut(m * l).enumerate() {
            let sample = &dx[(first / (m * l) + i) * per_sample..][..per_sample];
            // Copy each input row (last dim) to its place inside the padding.
            for (r, src) in sample.chunks_exact(last).enumerate().take(rows_in) {
                let (mut rest, mut at) = (r, g.padding[s - 1]);
                for d in (0..s - 1).rev() {
                    at += (rest % g.input[d] + g.padding[d]) * pstride[d];
                    rest /= g.input[d];
                }
                at += rest * plane;
                xp[at..at + last].copy_from_slice(src);
            }
            let b = RowTable {
                ptr: xp.as_ptr(),
                offsets: offsets.as_ptr(),
                k,
            };
            let a = Operand {
                ptr: dw.as_ptr(),
                rs: k,
                cs: 1,
            };
            // SAFETY: the isa is available (checked by `isa()`); `a` holds
            // m x k floats (w is contiguous [m, k]); every row of `b` is
            // `wide` floats from an offset at most span - wide into `xp`
            // (span's definition); `yw` holds m * wide floats, borrowed
            // exclusively here, disjoint from both; m, wide, k > 0.
            unsafe { sgemm(isa, [m, wide, k], a, b, yw.as_mut_ptr(), 1) };
            // The output columns of each wide row.
            let rows_out = l / out[s - 1];
            for (row, ch) in dst.chunks_exact_mut(l).zip(yw.chunks_exact(wide)) {
                for r in 0..rows_out {
                    let (mut rest, mut at) = (r, 0);
                    for d in (0..s - 1).rev() {
                        at += (rest % out[d]) * pstride[d];
                        rest /= out[d];
                    }
                    let o = out[s - 1];
                    row[r * o..(r + 1) * o].copy_from_slice(&ch[at..at + o]);
                }
            }
        }
    };
    super::for_sample_blocks(&mut result, per * m * l, run);
    drop((sx, sw));
    for b in bufs {
        crate::buffer::pool::recycle(b.into_inner().1);
    }
    Ok(Some(Strided::contiguous(
        <f32 as crate::buffer::Element>::wrap(result),
        &[samples, m, l],
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::Element;

    /// The convolution by its definition, in float64.
    fn direct(x: &[f32], xs: &[usize], w: &[f32], m: usize, g: &ShiftedConv) -> Vec<f64> {
        let s = g.input.len();
        let (n, c) = (xs[0], xs[1]);
        let out: Vec<usize> = (0..s)
            .map(|d| g.input[d] + 2 * g.padding[d] - g.dilation[d] * (g.kernel[d] - 1))
            .collect();
        let (l, taps, plane) = (
            out.iter().product::<usize>(),
            g.kernel.iter().product::<usize>(),
            g.input.iter().product::<usize>(),
        );
        let mut y = vec![0f64; n * m * l];
        for (i, v) in y.iter_mut().enumerate() {
            let (o, oc, b) = (i % l, (i / l) % m, i / (l * m));
            for ci in 0..c {
                for t in 0..taps {
                    let (mut ro, mut rt, mut at, mut inside) = (o, t, 0usize, true);
                    let mut scale = 1;
                    for d in (0..s).rev() {
                        let pos = (ro % out[d] + (rt % g.kernel[d]) * g.dilation[d]) as i64
                            - g.padding[d] as i64;
                        inside &= pos >= 0 && (pos as usize) < g.input[d];
                        at += pos.max(0) as usize * scale;
                        scale *= g.input[d];
                        ro /= out[d];
                        rt /= g.kernel[d];
                    }
                    if inside {
                        *v += x[(b * c + ci) * plane + at] as f64
                            * w[(oc * c + ci) * taps + t] as f64;
                    }
                }
            }
        }
        y
    }

    #[test]
    fn shifted_conv_matches_its_definition() {
        if isa().is_none() {
            return;
        }
        // (n, c, m, input, kernel, dilation, padding): 1-D, 2-D, 3-D; odd
        // sizes, dilation, padding wider than the kernel, 1x1 kernels,
        // outputs wider than one micro-kernel tile and edge tiles.
        type Case = (
            usize,
            usize,
            usize,
            Vec<usize>,
            Vec<usize>,
            Vec<usize>,
            Vec<usize>,
        );
        let cases: Vec<Case> = vec![
            (3, 2, 5, vec![11], vec![3], vec![1], vec![1]),
            (2, 3, 7, vec![9, 7], vec![3, 2], vec![2, 1], vec![2, 0]),
            (4, 5, 33, vec![8, 13], vec![3, 3], vec![1, 1], vec![1, 1]),
            (2, 1, 1, vec![5, 5], vec![1, 1], vec![1, 1], vec![0, 0]),
            (2, 4, 70, vec![12, 12], vec![5, 5], vec![2, 2], vec![4, 4]),
            (
                2,
                2,
                3,
                vec![4, 5, 6],
                vec![2, 3, 2],
                vec![1, 1, 2],
                vec![1, 0, 1],
            ),
        ];
        for (n, c, m, input, kernel, dilation, padding) in cases {
            // (enough samples to keep the threads busy, or it declines)
            let n = n.max(2 * crate::parallel::num_threads());
            let g = ShiftedConv {
                input: &input,
                kernel: &kernel,
                dilation: &dilation,
                padding: &padding,
            };
            let mut xs = vec![n, c];
            xs.extend(&input);
            let numel: usize = xs.iter().product();
            let k = c * kernel.iter().product::<usize>();
            let xv: Vec<f32> = (0..numel)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
                .collect();
            let wv: Vec<f32> = (0..m * k)
                .map(|i| ((i * 53 % 89) as f32 - 44.0) / 40.0)
                .collect();
            let x = Strided::contiguous(f32::wrap(xv.clone()), &xs);
            let w = Strided::contiguous(f32::wrap(wv.clone()), &[m, k]);
            let y = conv_forward_shifted(&x, &g, &w).unwrap().unwrap();
            let want = direct(&xv, &xs, &wv, m, &g);
            let s = y.storage().read_recursive();
            let got = s.as_slice::<f32>();
            assert_eq!(got.len(), want.len(), "{input:?} {kernel:?}");
            for (a, b) in got.iter().zip(&want) {
                assert!(((*a as f64) - b).abs() <= 1e-4 * (1.0 + b.abs()), "{a} {b}");
            }
        }
    }
}
