//! Sliding windows over the trailing spatial dims of a `[planes, *spatial]`
//! buffer (planes = batch x channels): the gather behind `unfold`,
//! convolution and pooling (im2col), its adjoint (col2im), and the max over
//! each window with the position it came from.
//!
//! A [`Windows`] table maps every (kernel position, output position) pair to
//! the offset it reads inside one input plane, or to nothing where the
//! window hangs over the padding. The table depends on the geometry only, so
//! every plane shares it.

use crate::tensor::{pool, Element};

/// Where each window element reads from, for one geometry.
pub struct Windows {
    /// Elements per input plane.
    pub plane: usize,
    /// Kernel positions per window (the product of the kernel sizes).
    pub k: usize,
    /// Windows per plane (the product of the output sizes).
    pub l: usize,
    /// `offsets[kk * l + o]`: the offset inside a plane, or -1 (padding).
    offsets: Vec<i64>,
}

impl Windows {
    /// The table for input sizes `input`, output sizes `out` and, per
    /// spatial dim, kernel size, dilation, padding (before) and stride.
    pub fn new(
        input: &[usize],
        out: &[usize],
        kernel: &[usize],
        dilation: &[usize],
        padding: &[usize],
        stride: &[usize],
    ) -> Windows {
        let pos = (0..input.len())
            .map(|d| {
                let mut v = Vec::with_capacity(kernel[d] * out[d]);
                for kk in 0..kernel[d] {
                    for o in 0..out[d] {
                        let p = (o * stride[d] + kk * dilation[d]) as i64 - padding[d] as i64;
                        v.push(if p >= 0 && p < input[d] as i64 { p } else { -1 });
                    }
                }
                v
            })
            .collect();
        Windows::from_positions(input, out, kernel, pos)
    }

    /// Adaptive pooling's windows: output `o` of a dim of size `n` covers
    /// `floor(o * n / out)..ceil((o + 1) * n / out)`; shorter windows are
    /// padded with nothing up to the longest.
    pub fn adaptive(input: &[usize], out: &[usize]) -> Windows {
        let span = |n: usize, o: usize, j: usize| (j * n / o, ((j + 1) * n).div_ceil(o));
        let kernel: Vec<usize> = (0..input.len())
            .map(|d| {
                (0..out[d])
                    .map(|j| {
                        let (a, b) = span(input[d], out[d], j);
                        b - a
                    })
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let pos = (0..input.len())
            .map(|d| {
                let mut v = Vec::with_capacity(kernel[d] * out[d]);
                for kk in 0..kernel[d] {
                    for j in 0..out[d] {
                        let (a, b) = span(input[d], out[d], j);
                        v.push(if a + kk < b { (a + kk) as i64 } else { -1 });
                    }
                }
                v
            })
            .collect();
        Windows::from_positions(input, out, &kernel, pos)
    }

    /// The table from each dim's input position per (kernel index, output
    /// index), -1 where the window has no element there.
    fn from_positions(
        input: &[usize],
        out: &[usize],
        kernel: &[usize],
        pos: Vec<Vec<i64>>,
    ) -> Windows {
        let s = input.len();
        let plane: usize = input.iter().product();
        let k: usize = kernel.iter().product();
        let l: usize = out.iter().product();
        let mut in_stride = vec![1usize; s];
        for d in (0..s.saturating_sub(1)).rev() {
            in_stride[d] = in_stride[d + 1] * input[d + 1];
        }
        let mut offsets = Vec::with_capacity(k * l);
        let mut kidx = vec![0usize; s];
        for _ in 0..k {
            let mut oidx = vec![0usize; s];
            for _ in 0..l {
                let mut off = 0i64;
                for d in 0..s {
                    let p = pos[d][kidx[d] * out[d] + oidx[d]];
                    if p < 0 {
                        off = -1;
                        break;
                    }
                    off += p * in_stride[d] as i64;
                }
                offsets.push(off);
                step(&mut oidx, out);
            }
            step(&mut kidx, kernel);
        }
        Windows {
            plane,
            k,
            l,
            offsets,
        }
    }

    /// im2col: `out[p, kk, o] = x[p, offset(kk, o)]`, `fill` over padding.
    /// `x` holds whole planes; the result has `k * l` elements per plane.
    pub fn gather<T: Element>(&self, x: &[T], fill: T) -> Vec<T> {
        let planes = x.len() / self.plane.max(1);
        let per = self.k * self.l;
        let mut out = pool::buffer::<T>(planes * per);
        let min_len = (crate::kernels::PAR_THRESHOLD).max(per);
        crate::parallel::for_each_chunk_mut_aligned(&mut out, min_len, per, |start, chunk| {
            for (i, dst) in chunk.chunks_mut(per).enumerate() {
                let p = start / per + i;
                let src = &x[p * self.plane..(p + 1) * self.plane];
                for (d, &off) in dst.iter_mut().zip(&self.offsets) {
                    *d = if off >= 0 { src[off as usize] } else { fill };
                }
            }
        });
        out
    }

    /// col2im, the adjoint of [`Windows::gather`]: every window element is
    /// added back to the input position it was read from (padding dropped),
    /// in a fixed order, so sums do not depend on the thread count.
    pub fn scatter_add<T: Element + std::ops::Add<Output = T>>(&self, cols: &[T]) -> Vec<T> {
        let per = self.k * self.l;
        let planes = cols.len() / per.max(1);
        let mut out = vec![T::zero(); planes * self.plane];
        let min_len = (crate::kernels::PAR_THRESHOLD).max(self.plane);
        crate::parallel::for_each_chunk_mut_aligned(
            &mut out,
            min_len,
            self.plane,
            |start, chunk| {
                for (i, dst) in chunk.chunks_mut(self.plane.max(1)).enumerate() {
                    let p = start / self.plane.max(1) + i;
                    let src = &cols[p * per..(p + 1) * per];
                    for (&v, &off) in src.iter().zip(&self.offsets) {
                        if off >= 0 {
                            let d = &mut dst[off as usize];
                            *d = *d + v;
                        }
                    }
                }
            },
        );
        out
    }

    /// Per plane and window: the window's largest element and its offset
    /// (the first one on ties; a NaN wins, as in torch's pooling), or
    /// offset -1 for a window that lies wholly in the padding.
    pub fn max<T: Element>(&self, x: &[T]) -> (Vec<T>, Vec<i64>) {
        let planes = x.len() / self.plane.max(1);
        let l = self.l.max(1);
        let mut best = vec![(T::zero(), -1i64); planes * self.l];
        let min_len = (crate::kernels::PAR_THRESHOLD / self.k.max(1)).max(l);
        crate::parallel::for_each_chunk_mut_aligned(&mut best, min_len, l, |start, chunk| {
            for (i, dst) in chunk.chunks_mut(l).enumerate() {
                let p = start / l + i;
                let src = &x[p * self.plane..(p + 1) * self.plane];
                for kk in 0..self.k {
                    let offs = &self.offsets[kk * self.l..(kk + 1) * self.l];
                    for ((b, at), &off) in dst.iter_mut().zip(offs) {
                        if off < 0 {
                            continue;
                        }
                        let v = src[off as usize];
                        #[allow(clippy::eq_op)]
                        let nan = v != v;
                        if *at < 0 || v > *b || nan {
                            *b = v;
                            *at = off;
                        }
                    }
                }
            }
        });
        best.into_iter().unzip()
    }
}

/// Advances a row-major multi-index over `sizes` by one.
fn step(idx: &mut [usize], sizes: &[usize]) {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < sizes[d] {
            return;
        }
        idx[d] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_then_scatter_counts_window_coverage() {
        // 1-D, size 5, kernel 3, padding 1, stride 2: windows at -1, 1, 3.
        let w = Windows::new(&[5], &[3], &[3], &[1], &[1], &[2]);
        let x: Vec<f64> = (1..=5).map(f64::from).collect();
        let cols = w.gather(&x, 0.0);
        // rows: kernel index 0, 1, 2; columns: windows.
        assert_eq!(cols, vec![0.0, 2.0, 4.0, 1.0, 3.0, 5.0, 2.0, 4.0, 0.0]);
        let back = w.scatter_add(&[1.0; 9]);
        assert_eq!(back, vec![1.0, 2.0, 1.0, 2.0, 1.0]);
        assert_eq!(w.max(&x), (vec![2.0, 4.0, 5.0], vec![1, 3, 4]));
        // adaptive, 5 -> 3: windows 0..2, 1..4, 3..5
        let a = Windows::adaptive(&[5], &[3]);
        assert_eq!(
            a.max(&[5.0, 1.0, 2.0, 0.0, 4.0]),
            (vec![5.0, 2.0, 4.0], vec![0, 2, 4])
        );
    }
}
