//! Sliding windows over the trailing spatial dims of a `[planes, *spatial]`
//! buffer (planes = batch x channels): the gather behind `unfold`,
//! convolution and pooling (im2col), its adjoint (col2im), and the max over
//! each window with the position it came from.
//!
//! A [`Windows`] table maps every (kernel position, output position) pair to
//! the offset it reads inside one input plane, or to nothing where the
//! window hangs over the padding. The table depends on the geometry only, so
//! every plane shares it.

use crate::buffer::{pool, Element};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Tables by geometry (a tag, then the sizes they were built from):
/// training repeats a few geometries every step, and building a table
/// costs more than a small convolution.
static TABLES: Mutex<Option<TableCache>> = Mutex::new(None);
/// The cached tables, and how many runs they hold together.
type TableCache = (HashMap<Vec<usize>, Arc<Windows>>, usize);
/// Runs the cache holds at most (about 32 bytes each); it is emptied when
/// a new table would pass this, and bigger tables are not kept.
const MAX_CACHED_RUNS: usize = 1 << 19;

/// The table for `key`, built by `build` unless cached.
fn cached(
    key: Vec<usize>,
    build: impl FnOnce() -> crate::Result<Windows>,
) -> crate::Result<Arc<Windows>> {
    if let Some(t) = TABLES.lock().as_ref().and_then(|(m, _)| m.get(&key)) {
        return Ok(t.clone());
    }
    let t = Arc::new(build()?);
    let n = t.runs.len();
    if n <= MAX_CACHED_RUNS {
        let mut guard = TABLES.lock();
        let (map, runs) = guard.get_or_insert_with(Default::default);
        if *runs + n > MAX_CACHED_RUNS {
            map.clear();
            *runs = 0;
        }
        if map.insert(key, t.clone()).is_none() {
            *runs += n;
        }
    }
    Ok(t)
}

/// Where each window element reads from, for one geometry.
pub struct Windows {
    /// Elements per input plane.
    pub plane: usize,
    /// Kernel positions per window (the product of the kernel sizes).
    pub k: usize,
    /// Windows per plane (the product of the output sizes).
    pub l: usize,
    /// The table of offsets inside a plane, entry `kk * l + o` for kernel
    /// position `kk` and window `o`, as runs: consecutive entries that read
    /// evenly spaced offsets (or are all padding), so the loops copy, add
    /// or compare whole runs instead of looking up every element.
    runs: Vec<Run>,
}

use super::slices::GatherRun as Run;

/// Splits a table into runs (see [`Windows::runs`]); a run never crosses
/// a multiple of `row`, so runs of one kernel position stay apart.
fn runs_of(offsets: &[i64], row: usize) -> Vec<Run> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < offsets.len() {
        let end = ((i / row.max(1)) + 1) * row.max(1);
        let end = end.min(offsets.len());
        let src = offsets[i];
        let mut j = i + 1;
        let mut step = 0usize;
        if src < 0 {
            while j < end && offsets[j] < 0 {
                j += 1;
            }
        } else if j < end && offsets[j] > src {
            step = (offsets[j] - src) as usize;
            while j < end && offsets[j] >= 0 && offsets[j] - offsets[j - 1] == step as i64 {
                j += 1;
            }
        }
        runs.push(Run {
            dst: i,
            src,
            len: j - i,
            step,
        });
        i = j;
    }
    runs
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
    ) -> crate::Result<Arc<Windows>> {
        let key = [&[0], input, out, kernel, dilation, padding, stride].concat();
        cached(key, || {
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
        })
    }

    /// Adaptive pooling's windows: output `o` of a dim of size `n` covers
    /// `floor(o * n / out)..ceil((o + 1) * n / out)`; shorter windows are
    /// padded with nothing up to the longest.
    pub fn adaptive(input: &[usize], out: &[usize]) -> crate::Result<Arc<Windows>> {
        let key = [&[1], input, out].concat();
        cached(key, || Windows::adaptive_table(input, out))
    }

    fn adaptive_table(input: &[usize], out: &[usize]) -> crate::Result<Windows> {
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
    /// index), -1 where the window has no element there. The table holds
    /// an entry per output element of a plane, as large as im2col's output:
    /// a size the system refuses is torch's out-of-memory error.
    fn from_positions(
        input: &[usize],
        out: &[usize],
        kernel: &[usize],
        pos: Vec<Vec<i64>>,
    ) -> crate::Result<Windows> {
        let s = input.len();
        let plane: usize = input.iter().product();
        let k: usize = kernel.iter().product();
        let l: usize = out.iter().product();
        let mut in_stride = vec![1usize; s];
        for d in (0..s.saturating_sub(1)).rev() {
            in_stride[d] = in_stride[d + 1] * input[d + 1];
        }
        let mut offsets: Vec<i64> = Vec::new();
        offsets
            .try_reserve_exact(k.saturating_mul(l))
            .map_err(|_| crate::buffer::pool::alloc_error(k.saturating_mul(l).saturating_mul(8)))?;
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
        Ok(Windows {
            plane,
            k,
            l,
            runs: runs_of(&offsets, l),
        })
    }

    /// im2col: `out[p, kk, o] = x[p, offset(kk, o)]`, `fill` over padding.
    /// `x` holds whole planes; the result has `k * l` elements per plane
    /// (a refused allocation is torch's out-of-memory error).
    pub fn gather<T: Element>(&self, x: &[T], fill: T) -> crate::Result<Vec<T>> {
        let planes = x.len() / self.plane.max(1);
        let per = self.k * self.l;
        let mut out = pool::try_buffer::<T>(planes.saturating_mul(per))?;
        let min_len = (crate::kernels::PAR_THRESHOLD).max(per);
        crate::parallel::for_each_chunk_mut_aligned(&mut out, min_len, per, |start, chunk| {
            for (i, dst) in chunk.chunks_mut(per).enumerate() {
                let p = start / per + i;
                let src = &x[p * self.plane..(p + 1) * self.plane];
                crate::kernels::slices::gather_runs(src, &self.runs, fill, dst);
            }
        });
        Ok(out)
    }

    /// [`Windows::gather`] of one plane (`plane` elements) into `dst`
    /// (`k * l` elements).
    pub fn gather_plane<T: Element>(&self, plane: &[T], fill: T, dst: &mut [T]) {
        crate::kernels::slices::gather_runs(&plane[..self.plane], &self.runs, fill, dst);
    }

    /// The windows `cols` (a range of `0..l`) alone, as a table of their
    /// own: [`ColumnBlock::gather_plane`] writes `[k, cols.len()]`, the
    /// columns `cols` of [`Windows::gather_plane`]'s `[k, l]`.
    pub fn column_block(&self, cols: std::ops::Range<usize>) -> ColumnBlock {
        let (l, width) = (self.l, cols.len());
        let mut runs = Vec::new();
        for kk in 0..self.k {
            let (lo, hi) = (kk * l + cols.start, kk * l + cols.end);
            let first = self.runs.partition_point(|r| r.dst + r.len <= lo);
            for r in self.runs[first..].iter().take_while(|r| r.dst < hi) {
                let (a, b) = (r.dst.max(lo), (r.dst + r.len).min(hi));
                let src = match r.src < 0 {
                    true => r.src,
                    false => r.src + ((a - r.dst) * r.step) as i64,
                };
                runs.push(Run {
                    dst: kk * width + (a - lo),
                    src,
                    len: b - a,
                    step: r.step,
                });
            }
        }
        ColumnBlock {
            plane: self.plane,
            k: self.k,
            cols,
            runs,
        }
    }
}

/// A range of a [`Windows`] table's windows (see [`Windows::column_block`]).
pub struct ColumnBlock {
    plane: usize,
    k: usize,
    /// The windows, a range of `0..l`.
    pub cols: std::ops::Range<usize>,
    runs: Vec<Run>,
}

impl ColumnBlock {
    /// The block's windows of one plane into `dst` (`k * cols.len()`
    /// elements, window-minor), `fill` over padding.
    pub fn gather_plane<T: Element>(&self, plane: &[T], fill: T, dst: &mut [T]) {
        crate::kernels::slices::gather_runs(&plane[..self.plane], &self.runs, fill, dst);
    }

    /// [`ColumnBlock::gather_plane`] of each whole plane of `planes` into
    /// its `[k, cols.len()]` part of `dst`, in order.
    pub fn gather_planes<T: Element>(&self, planes: &[T], fill: T, dst: &mut [T]) {
        let per = self.k * self.cols.len();
        for (plane, d) in planes
            .chunks_exact(self.plane.max(1))
            .zip(dst.chunks_exact_mut(per.max(1)))
        {
            self.gather_plane(plane, fill, d);
        }
    }
}

impl Windows {
    /// Per plane and window, the sum of the window's elements (padding
    /// adds nothing), kernel position by kernel position: [`Windows::gather`]
    /// summed over the kernel positions, without the gathered copy (average
    /// pooling). `planes * l` elements.
    pub fn sum<T: Element + std::ops::Add<Output = T>>(&self, x: &[T]) -> crate::Result<Vec<T>> {
        let planes = x.len() / self.plane.max(1);
        let l = self.l.max(1);
        let mut out = pool::try_buffer::<T>(planes.saturating_mul(self.l))?;
        let min_len = (crate::kernels::PAR_THRESHOLD / self.k.max(1)).max(l);
        crate::parallel::for_each_chunk_mut_aligned(&mut out, min_len, l, |start, chunk| {
            for (i, dst) in chunk.chunks_mut(l).enumerate() {
                let p = start / l + i;
                let src = &x[p * self.plane..(p + 1) * self.plane];
                dst.fill(T::zero());
                for r in self.runs.iter().filter(|r| r.src >= 0) {
                    let d = &mut dst[r.dst % l..r.dst % l + r.len];
                    let o = r.src as usize;
                    if r.step == 1 {
                        crate::kernels::slices::update(d, &src[o..o + r.len], &|a, b| a + b);
                    } else {
                        for (j, v) in d.iter_mut().enumerate() {
                            *v = *v + src[o + j * r.step];
                        }
                    }
                }
            }
        });
        Ok(out)
    }

    /// The adjoint of [`Windows::sum`]: each window's value (`planes * l`
    /// elements) added to every input position the window covers.
    pub fn spread<T: Element + std::ops::Add<Output = T>>(&self, sums: &[T]) -> Vec<T> {
        self.add_back(sums, self.l, |r| r.dst % self.l.max(1))
    }

    /// col2im, the adjoint of [`Windows::gather`]: every window element is
    /// added back to the input position it was read from (padding dropped),
    /// in a fixed order, so sums do not depend on the thread count.
    pub fn scatter_add<T: Element + std::ops::Add<Output = T>>(&self, cols: &[T]) -> Vec<T> {
        self.add_back(cols, self.k * self.l, |r| r.dst)
    }

    /// Adds `per` elements of `src` per plane back into the input positions
    /// of the runs, run `r` reading from `src[first(r)..]`.
    fn add_back<T: Element + std::ops::Add<Output = T>>(
        &self,
        cols: &[T],
        per: usize,
        first: impl Fn(&Run) -> usize + Sync,
    ) -> Vec<T> {
        let planes = cols.len() / per.max(1);
        // A reused buffer zeroed by the thread that sums into it: a fresh
        // zeroed allocation would fault twice per page (the zero page on
        // the first read, a copy on the first write).
        let mut out = crate::buffer::pool::buffer::<T>(planes * self.plane);
        let min_len = (crate::kernels::PAR_THRESHOLD).max(self.plane);
        crate::parallel::for_each_chunk_mut_aligned(
            &mut out,
            min_len,
            self.plane,
            |start, chunk| {
                chunk.fill(T::zero());
                for (i, dst) in chunk.chunks_mut(self.plane.max(1)).enumerate() {
                    let p = start / self.plane.max(1) + i;
                    self.add_back_plane(&cols[p * per..(p + 1) * per], &first, dst);
                }
            },
        );
        out
    }

    /// [`Windows::scatter_add`] of one plane's windows (`k * l` elements)
    /// into `dst` (`plane` elements), which it overwrites.
    pub fn scatter_add_plane<T: Element + std::ops::Add<Output = T>>(
        &self,
        cols: &[T],
        dst: &mut [T],
    ) {
        dst[..self.plane].fill(T::zero());
        self.add_back_plane(cols, &|r: &Run| r.dst, dst);
    }

    /// Adds one plane's `src` back into `dst`, run `r` reading from
    /// `src[first(r)..]`.
    fn add_back_plane<T: Element + std::ops::Add<Output = T>>(
        &self,
        src: &[T],
        first: &impl Fn(&Run) -> usize,
        dst: &mut [T],
    ) {
        for r in self.runs.iter().filter(|r| r.src >= 0) {
            let s = &src[first(r)..first(r) + r.len];
            let o = r.src as usize;
            if r.step == 1 {
                crate::kernels::slices::update(&mut dst[o..o + r.len], s, &|a, b| a + b);
            } else {
                for (j, &v) in s.iter().enumerate() {
                    let d = &mut dst[o + j * r.step];
                    *d = *d + v;
                }
            }
        }
    }

    /// Per plane and window: the window's largest element and its offset
    /// (the first one on ties; a NaN wins, as in torch's pooling), or
    /// offset -1 (and value zero) for a window that lies wholly in the
    /// padding.
    pub fn max<T: Element>(&self, x: &[T]) -> (Vec<T>, Vec<i64>) {
        let planes = x.len() / self.plane.max(1);
        let l = self.l.max(1);
        let mut at = crate::buffer::pool::buffer::<i64>(planes * self.l);
        let mut vals = crate::buffer::pool::buffer::<T>(planes * self.l);
        let vals_out = super::shared_out::SharedOut::new(&mut vals);
        let min_len = (crate::kernels::PAR_THRESHOLD / self.k.max(1)).max(l);
        crate::parallel::for_each_chunk_mut_aligned(&mut at, min_len, l, |start, chunk| {
            for (i, at) in chunk.chunks_mut(l).enumerate() {
                let p = start / l + i;
                let src = &x[p * self.plane..(p + 1) * self.plane];
                // SAFETY: this plane's values (the offsets of `at`, which
                // this chunk owns) are written by this unit alone; `vals`
                // outlives the call.
                let best = unsafe { vals_out.run(start + i * l, self.l) };
                at.fill(-1);
                // Runs in table order, kernel position by kernel position,
                // so the first maximum wins.
                for r in self.runs.iter().filter(|r| r.src >= 0) {
                    let o = r.dst % self.l;
                    super::slices::max_run(
                        &mut best[o..o + r.len],
                        &mut at[o..o + r.len],
                        src,
                        r.src as usize,
                        r.step,
                    );
                }
                // A window wholly in the padding took nothing: value zero.
                for (b, &a) in best.iter_mut().zip(at.iter()) {
                    if a < 0 {
                        *b = T::zero();
                    }
                }
            }
        });
        (vals, at)
    }
}

/// The sizes of a 2-d pooling over channels-last memory.
pub struct ChannelsLast2d {
    /// Input `[n, h, w, c]` (the memory order).
    pub input: [usize; 4],
    /// Output `[oh, ow]`.
    pub out: [usize; 2],
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub dilation: [usize; 2],
}

impl ChannelsLast2d {
    /// Max pooling of `x` (`[n, h, w, c]` contiguous): per output
    /// `[n, oh, ow, c]` the window's largest element and, when
    /// `with_index`, its flat position `ih * w + iw` in its plane (the
    /// first on ties; a NaN wins); -1 (and zero) for a window wholly in the
    /// padding (see [`ChannelsLast2d::has_empty_window`]). Vectorised over
    /// the channels, which sit next to each other in this layout.
    pub fn max<T: Element>(&self, x: &[T], with_index: bool) -> (Vec<T>, Vec<i64>) {
        let [n, h, w, c] = self.input;
        let [oh, ow] = self.out;
        assert_eq!(x.len(), n * h * w * c, "channels-last pool: input size");
        let row = (ow * c).max(1);
        let total = n * oh * ow * c;
        let mut at = crate::buffer::pool::buffer::<i64>(if with_index { total } else { 0 });
        let mut vals = crate::buffer::pool::buffer::<T>(total);
        let at_out = super::shared_out::SharedOut::new(&mut at);
        let min_len =
            (crate::kernels::PAR_THRESHOLD / (self.kernel[0] * self.kernel[1]).max(1)).max(row);
        // The input rows and columns each output row and column covers.
        type Taps = smallvec::SmallVec<[usize; 8]>;
        let rows: Vec<Taps> = (0..oh).map(|y| self.axis(y, 0, h).collect()).collect();
        let cols: Vec<Taps> = (0..ow).map(|xo| self.axis(xo, 1, w).collect()).collect();
        crate::parallel::for_each_chunk_mut_aligned(&mut vals, min_len, row, |start, chunk| {
            let mut taps: smallvec::SmallVec<[usize; 16]> = smallvec::SmallVec::new();
            for (i, vals_row) in chunk.chunks_mut(row).enumerate() {
                let r = start / row + i;
                let (ni, y) = (r / oh, r % oh);
                let plane = &x[ni * h * w * c..(ni + 1) * h * w * c];
                for (xo, v) in vals_row.chunks_mut(c.max(1)).enumerate() {
                    taps.clear();
                    for &ih in &rows[y] {
                        taps.extend(cols[xo].iter().map(|&iw| ih * w + iw));
                    }
                    // SAFETY: the positions of this output (the offsets of
                    // `v`, which this chunk owns) are written by this unit
                    // alone; `at` outlives the call.
                    let a = match with_index {
                        true => unsafe { at_out.run(start + i * row + xo * c, c) },
                        false => &mut [],
                    };
                    if taps.is_empty() {
                        v.fill(T::zero());
                        a.fill(-1);
                    } else {
                        super::slices::max_taps(plane, c, &taps, v, a);
                    }
                }
            }
        });
        (vals, at)
    }

    /// True when some output's window lies wholly in the padding.
    pub fn has_empty_window(&self) -> bool {
        let [_, h, w, _] = self.input;
        let [oh, ow] = self.out;
        (0..oh).any(|y| self.axis(y, 0, h).next().is_none())
            || (0..ow).any(|xo| self.axis(xo, 1, w).next().is_none())
    }

    /// The input indices along spatial dim `d` (of `size`) that output
    /// index `o`'s window covers.
    fn axis(&self, o: usize, d: usize, size: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.kernel[d]).filter_map(move |k| {
            (o * self.stride[d] + k * self.dilation[d])
                .checked_sub(self.padding[d])
                .filter(|&i| i < size)
        })
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

    impl Windows {
        /// Entry `i` of the table (-1: padding).
        fn offset(&self, i: usize) -> i64 {
            let r = self
                .runs
                .iter()
                .find(|r| r.dst <= i && i < r.dst + r.len)
                .unwrap();
            if r.src < 0 {
                -1
            } else {
                r.src + ((i - r.dst) * r.step) as i64
            }
        }
    }

    #[test]
    fn column_blocks_are_the_columns_of_the_whole_gather() {
        // (input, out, kernel, dilation, padding, stride): padding on both
        // sides, strides, dilation, 1-D and 3-D
        type Geometry<'a> = [&'a [usize]; 6];
        let geometries: [Geometry; 4] = [
            [&[9, 8], &[9, 8], &[3, 3], &[1, 1], &[1, 1], &[1, 1]],
            [&[11, 10], &[5, 4], &[3, 4], &[2, 1], &[1, 0], &[2, 2]],
            [&[17], &[9], &[5], &[1], &[2], &[2]],
            [
                &[4, 5, 6],
                &[4, 5, 6],
                &[3, 3, 3],
                &[1, 1, 1],
                &[1, 1, 1],
                &[1, 1, 1],
            ],
        ];
        for [input, out, kernel, dilation, padding, stride] in geometries {
            let t = Windows::new(input, out, kernel, dilation, padding, stride).unwrap();
            let plane: Vec<f32> = (0..t.plane).map(|i| i as f32 + 1.0).collect();
            let mut whole = vec![0.0; t.k * t.l];
            t.gather_plane(&plane, -1.0, &mut whole);
            for width in [1, 3, 7, t.l] {
                for start in (0..t.l).step_by(width) {
                    let cols = start..(start + width).min(t.l);
                    let block = t.column_block(cols.clone());
                    let mut got = vec![f32::NAN; t.k * cols.len()];
                    block.gather_plane(&plane, -1.0, &mut got);
                    let want: Vec<f32> = (0..t.k)
                        .flat_map(|kk| whole[kk * t.l + cols.start..kk * t.l + cols.end].to_vec())
                        .collect();
                    assert_eq!(got, want, "{input:?} {kernel:?} {cols:?}");
                }
            }
        }
    }

    #[test]
    fn tables_are_cached_by_their_whole_geometry() {
        let a = Windows::new(&[7, 6], &[4, 3], &[3, 2], &[1, 1], &[1, 0], &[2, 2]).unwrap();
        let b = Windows::new(&[7, 6], &[4, 3], &[3, 2], &[1, 1], &[1, 0], &[2, 2]).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        // Any size differing gives another table, equal to one built anew.
        let c = Windows::new(&[7, 6], &[4, 3], &[3, 2], &[1, 1], &[0, 0], &[2, 2]).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        let d = Windows::adaptive(&[7, 6], &[4, 3]).unwrap();
        assert!(!Arc::ptr_eq(&a, &d));
        let (x, fresh) = (
            (0..42).map(|v| v as f32).collect::<Vec<_>>(),
            |p: &[usize]| {
                let pos: Vec<Vec<i64>> = (0..2)
                    .map(|d| {
                        let (k, o, i) = ([3, 2][d], [4, 3][d], [7, 6][d]);
                        let mut v = Vec::new();
                        for kk in 0..k {
                            for oo in 0..o {
                                let q = (oo * 2 + kk) as i64 - p[d] as i64;
                                v.push(if q >= 0 && q < i { q } else { -1 });
                            }
                        }
                        v
                    })
                    .collect();
                Windows::from_positions(&[7, 6], &[4, 3], &[3, 2], pos).unwrap()
            },
        );
        assert_eq!(
            a.gather(&x, -1.0).unwrap(),
            fresh(&[1, 0]).gather(&x, -1.0).unwrap()
        );
        assert_eq!(
            c.gather(&x, -1.0).unwrap(),
            fresh(&[0, 0]).gather(&x, -1.0).unwrap()
        );
    }

    #[test]
    fn runs_split_the_table_at_rows_and_padding() {
        let r = runs_of(&[-1, 0, 2, 4, 5, -1, -1, 3, 4], 3);
        assert_eq!(
            r,
            vec![
                Run {
                    dst: 0,
                    src: -1,
                    len: 1,
                    step: 0
                },
                Run {
                    dst: 1,
                    src: 0,
                    len: 2,
                    step: 2
                },
                Run {
                    dst: 3,
                    src: 4,
                    len: 2,
                    step: 1
                },
                Run {
                    dst: 5,
                    src: -1,
                    len: 1,
                    step: 0
                },
                Run {
                    dst: 6,
                    src: -1,
                    len: 1,
                    step: 0
                },
                Run {
                    dst: 7,
                    src: 3,
                    len: 2,
                    step: 1
                },
            ]
        );
    }

    #[test]
    fn two_d_tables_agree_with_a_direct_loop() {
        // 2-D, 7x9 input, kernel 3x2, dilation 1x2, padding 1x1, stride 2x1.
        let (h, w) = (7usize, 9usize);
        let oh = (h + 2 - 3) / 2 + 1;
        // Dilated kernel width (2 - 1) * 2 + 1 = 3.
        let ow = w + 2 - 3 + 1;
        let t = Windows::new(&[h, w], &[oh, ow], &[3, 2], &[1, 2], &[1, 1], &[2, 1]).unwrap();
        let x: Vec<f64> = (0..2 * h * w).map(|i| ((i * 7) % 11) as f64).collect();
        let cols = t.gather(&x, -5.0).unwrap();
        let (mx, at) = t.max(&x);
        for p in 0..2 {
            for (kk, (ki, kj)) in [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
                .into_iter()
                .enumerate()
            {
                for i in 0..oh {
                    for j in 0..ow {
                        let (r, c) = ((i * 2 + ki) as i64 - 1, (j + kj * 2) as i64 - 1);
                        let inside = r >= 0 && r < h as i64 && c >= 0 && c < w as i64;
                        let want = if inside {
                            x[p * h * w + r as usize * w + c as usize]
                        } else {
                            -5.0
                        };
                        assert_eq!(cols[p * 6 * oh * ow + kk * oh * ow + i * ow + j], want);
                    }
                }
            }
            for o in 0..oh * ow {
                let vals: Vec<f64> = (0..6)
                    .map(|kk| cols[p * 6 * oh * ow + kk * oh * ow + o])
                    .collect();
                let real: Vec<f64> = (0..6)
                    .filter(|&kk| t.offset(kk * oh * ow + o) >= 0)
                    .map(|kk| vals[kk])
                    .collect();
                let m = real.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                assert_eq!(mx[p * oh * ow + o], m);
                assert_eq!(x[p * h * w + at[p * oh * ow + o] as usize], m);
            }
        }
        let back = t.scatter_add(&vec![1.0; 2 * 6 * oh * ow]);
        let covered: f64 = back.iter().sum();
        let real = (0..6 * oh * ow).filter(|&i| t.offset(i) >= 0).count() as f64 * 2.0;
        assert_eq!(covered, real);
    }

    #[test]
    fn gather_then_scatter_counts_window_coverage() {
        // 1-D, size 5, kernel 3, padding 1, stride 2: windows at -1, 1, 3.
        let w = Windows::new(&[5], &[3], &[3], &[1], &[1], &[2]).unwrap();
        let x: Vec<f64> = (1..=5).map(f64::from).collect();
        let cols = w.gather(&x, 0.0).unwrap();
        // rows: kernel index 0, 1, 2; columns: windows.
        assert_eq!(cols, vec![0.0, 2.0, 4.0, 1.0, 3.0, 5.0, 2.0, 4.0, 0.0]);
        let back = w.scatter_add(&[1.0; 9]);
        assert_eq!(back, vec![1.0, 2.0, 1.0, 2.0, 1.0]);
        assert_eq!(w.max(&x), (vec![2.0, 4.0, 5.0], vec![1, 3, 4]));
        // adaptive, 5 -> 3: windows 0..2, 1..4, 3..5
        let a = Windows::adaptive(&[5], &[3]).unwrap();
        assert_eq!(
            a.max(&[5.0, 1.0, 2.0, 0.0, 4.0]),
            (vec![5.0, 2.0, 4.0], vec![0, 2, 4])
        );
    }

    #[test]
    fn window_sums_and_their_spread_match_gather_and_scatter() {
        // 2-D with padding, stride 1 and 2, dilation: the sums are the
        // gathered windows summed over kernel positions, and the spread of
        // a value per window is the scatter of that value at every position.
        for (stride, dilation) in [(1, 1), (2, 1), (1, 2)] {
            let (h, w) = (7, 6);
            let (k, pad) = ([3, 2], [1, 1]);
            let out: Vec<usize> = [h, w]
                .iter()
                .enumerate()
                .map(|(d, &n)| (n + 2 * pad[d] - dilation * (k[d] - 1) - 1) / stride + 1)
                .collect();
            let t = Windows::new(&[h, w], &out, &k, &[dilation; 2], &pad, &[stride; 2]).unwrap();
            let planes = 3;
            let x: Vec<f64> = (0..planes * h * w).map(|i| (i * 7 % 11) as f64).collect();
            let cols = t.gather(&x, 0.0).unwrap();
            let sums = t.sum(&x).unwrap();
            let (kk, l) = (t.k, t.l);
            for p in 0..planes {
                for o in 0..l {
                    let want: f64 = (0..kk).map(|j| cols[p * kk * l + j * l + o]).sum();
                    assert_eq!(sums[p * l + o], want);
                }
            }
            let g: Vec<f64> = (0..planes * l).map(|i| (i % 5) as f64 - 2.0).collect();
            let spread_cols: Vec<f64> = (0..planes * kk * l)
                .map(|i| g[(i / (kk * l)) * l + i % l])
                .collect();
            assert_eq!(t.spread(&g), t.scatter_add(&spread_cols));
        }
    }
}
