//! Reductions over any set of dims of a strided buffer, for folds whose
//! accumulator is one element (sum, product, max/min, all/any).
//!
//! The dims are ordered by the input's strides and coalesced, then one of
//! two loops runs:
//! - the innermost dim is reduced: each output folds its lane run by run
//!   (SIMD along the contiguous runs);
//! - the innermost dim is kept: each block of contiguous outputs keeps a
//!   row of accumulators and folds the input rows into it (SIMD across the
//!   kept dim), instead of striding through memory element by element. A
//!   short kept dim with adjacent reduced rows folds several rows side by
//!   side.
//!
//! Work is split over outputs only (and, for a few long contiguous lanes,
//! over fixed-size pieces of the lane), so every output is computed in the
//! same order for any thread count: results are bitwise reproducible.

use super::shared_out::SharedOut;
use super::slices;
use crate::buffer::layout::{contiguous_strides, Layout};
use crate::parallel::{for_each_index, num_threads};
use smallvec::SmallVec;

/// A fold with a one-element accumulator of the element type.
pub trait Fold<T: Copy>: Sync {
    /// The identity element (the result of folding nothing).
    fn init(&self) -> T;
    /// `acc` folded with every element of a contiguous run.
    fn run(&self, acc: T, x: &[T]) -> T;
    /// `acc[i] = fold(acc[i], row[i])`.
    fn rows(&self, acc: &mut [T], row: &[T]);
    /// `out[k] = run(init, lane k)` for lanes of `len` at `x[k * stride..]`
    /// (one SIMD call for all of them).
    fn run_many(&self, x: &[T], len: usize, stride: usize, out: &mut [T]) {
        for (k, o) in out.iter_mut().enumerate() {
            *o = self.run(self.init(), &x[k * stride..k * stride + len]);
        }
    }
    /// [`Fold::rows`] for `n` rows at `x[r * stride..]` (one SIMD call).
    fn rows_many(&self, acc: &mut [T], x: &[T], stride: usize, n: usize) {
        let w = acc.len();
        for r in 0..n {
            self.rows(acc, &x[r * stride..r * stride + w]);
        }
    }
    /// Applied to each result before it is stored (a mean's division).
    #[inline(always)]
    fn finish(&self, acc: T) -> T {
        acc
    }
}

/// Elements per piece when a long lane is folded in parallel. Fixed (not
/// derived from the thread count) so results are identical for any count.
pub const LANE_PIECE: usize = 1 << 14;
/// Rows folded into a partial before it joins the total (sums of many
/// rows keep a blocked error bound).
const ROW_BLOCK: usize = 256;
/// Accumulators per block of kept outputs in the row loop.
const ROW_WIDTH: usize = 256;
/// Elements from which a reduction is split over the threads.
const GRAIN: usize = 1 << 15;

#[derive(Clone, Copy, Debug)]
struct Dim {
    size: usize,
    stride: usize,
    /// Stride in the (row-major) output; unused for reduced dims.
    out: usize,
    reduced: bool,
}

/// The input's dims (size > 1) innermost first, coalesced.
fn plan(l: &Layout, dims: &[usize]) -> SmallVec<[Dim; 6]> {
    let out_shape: SmallVec<[usize; 6]> = (0..l.ndim())
        .map(|d| if dims.contains(&d) { 1 } else { l.shape[d] })
        .collect();
    let out_strides = contiguous_strides(&out_shape);
    let mut ds: SmallVec<[Dim; 6]> = (0..l.ndim())
        .filter(|&d| l.shape[d] != 1)
        .map(|d| Dim {
            size: l.shape[d],
            stride: l.strides[d],
            out: out_strides[d],
            reduced: dims.contains(&d),
        })
        .collect();
    // Innermost (smallest input stride) first; among equal strides (a
    // broadcast input) the later dim first, as in row-major order.
    ds.reverse();
    ds.sort_by_key(|d| d.stride);
    let mut out: SmallVec<[Dim; 6]> = SmallVec::new();
    for d in ds {
        if let Some(last) = out.last_mut() {
            if last.reduced == d.reduced
                && last.stride * last.size == d.stride
                && (d.reduced || last.out * last.size == d.out)
            {
                last.size *= d.size;
                continue;
            }
        }
        out.push(d);
    }
    out
}

/// An odometer over some dims: yields the input (and output) offset of
/// each index in order, the first dim fastest.
struct Odometer<'a> {
    dims: SmallVec<[&'a Dim; 6]>,
    idx: SmallVec<[usize; 6]>,
}

impl<'a> Odometer<'a> {
    fn new(dims: impl Iterator<Item = &'a Dim>) -> Self {
        let dims: SmallVec<[&Dim; 6]> = dims.collect();
        let idx = smallvec::smallvec![0; dims.len()];
        Odometer { dims, idx }
    }
    fn count(&self) -> usize {
        self.dims.iter().map(|d| d.size).product()
    }
    /// (input offset, output offset) of linear index `i`.
    fn at(&self, mut i: usize) -> (usize, usize) {
        let (mut a, mut b) = (0, 0);
        for d in &self.dims {
            let k = i % d.size;
            i /= d.size;
            a += k * d.stride;
            b += k * d.out;
        }
        (a, b)
    }
    /// Calls `f(input offset)` for every index, in order.
    fn each(&mut self, mut f: impl FnMut(usize)) {
        let n = self.count();
        let mut off = 0;
        self.idx.iter_mut().for_each(|i| *i = 0);
        for _ in 0..n {
            f(off);
            for (k, d) in self.dims.iter().enumerate() {
                self.idx[k] += 1;
                off += d.stride;
                if self.idx[k] < d.size {
                    break;
                }
                off -= d.size * d.stride;
                self.idx[k] = 0;
            }
        }
    }
}

/// Runs `f(unit)` for `units` units of about `cost` elements each, split
/// over the threads when the total is large.
fn for_units(units: usize, cost: usize, f: impl Fn(usize) + Sync) {
    for_unit_ranges(units, cost, |u0, u1| (u0..u1).for_each(&f))
}

/// [`for_units`] handing out consecutive ranges of units.
fn for_unit_ranges(units: usize, cost: usize, f: impl Fn(usize, usize) + Sync) {
    let total = units.saturating_mul(cost.max(1));
    let threads = num_threads();
    if threads < 2 || units < 2 || total < GRAIN {
        return f(0, units);
    }
    let per = units
        .div_ceil(4 * threads)
        .max(GRAIN / 4 / cost.max(1))
        .max(1);
    let chunks = units.div_ceil(per);
    for_each_index(chunks, &|c| f(c * per, ((c + 1) * per).min(units)));
}

/// Folds `x` (laid out by `l`) over `dims` (sorted, unique) into `out`,
/// which holds the kept dims in row-major order (`l`'s shape with the
/// reduced dims removed). Panics if `l` reaches past `x` or `out` is not
/// the kept size (callers allocate it).
pub fn fold<T, F>(out: &mut [T], x: &[T], l: &Layout, dims: &[usize], f: &F)
where
    T: Copy + Default + Send + Sync,
    F: Fold<T>,
{
    let kept: usize = (0..l.ndim())
        .filter(|d| !dims.contains(d))
        .map(|d| l.shape[d])
        .product();
    assert_eq!(out.len(), kept, "fold: output size");
    if l.numel() == 0 {
        out.iter_mut().for_each(|o| *o = f.finish(f.init()));
        return;
    }
    assert!(
        l.storage_extent() <= x.len(),
        "fold: layout past its buffer"
    );
    let ds = plan(l, dims);
    let base = l.offset;
    let ptr = SharedOut::new(out);
    match ds.first() {
        None => out[0] = f.finish(f.run(f.init(), &x[base..base + 1])),
        Some(d0) if d0.reduced => lanes(ptr, x, base, &ds, f),
        Some(_) => rows(ptr, x, base, &ds, f),
    }
}

/// The innermost dim is reduced: each output folds its lane.
fn lanes<T, F>(out: SharedOut<T>, x: &[T], base: usize, ds: &[Dim], f: &F)
where
    T: Copy + Default + Send + Sync,
    F: Fold<T>,
{
    let d0 = ds[0];
    let kept = Odometer::new(ds.iter().filter(|d| !d.reduced));
    let outer_red: SmallVec<[&Dim; 6]> = ds[1..].iter().filter(|d| d.reduced).collect();
    let lane: usize = d0.size * outer_red.iter().map(|d| d.size).product::<usize>();
    let count = kept.count();
    // A few long contiguous lanes: fold fixed pieces of each in parallel.
    if outer_red.is_empty() && d0.stride == 1 && count <= 8 && lane >= 2 * LANE_PIECE {
        for k in 0..count {
            let (ia, oa) = kept.at(k);
            let run = &x[base + ia..base + ia + lane];
            let pieces = lane.div_ceil(LANE_PIECE);
            let mut part = vec![f.init(); pieces];
            let pp = SharedOut::new(&mut part);
            for_units(pieces, LANE_PIECE, |p| {
                let piece = &run[p * LANE_PIECE..((p + 1) * LANE_PIECE).min(lane)];
                // SAFETY: piece p writes part[p] only; part outlives the call.
                unsafe { pp.write(p, f.run(f.init(), piece)) };
            });
            let v = f.finish(f.run(f.init(), &part));
            // SAFETY: output k is written once, here, by this thread.
            unsafe { out.write(oa, v) };
        }
        return;
    }
    let cost = lane + 8;
    let kept_dims: SmallVec<[&Dim; 6]> = ds.iter().filter(|d| !d.reduced).collect();
    if outer_red.is_empty() && d0.stride == 1 {
        // Contiguous lanes, evenly spaced along the innermost kept dim
        // (the lanes of a sum over a permuted tensor's contiguous dim have
        // several kept dims): folded many per call, a row of that dim at a
        // time.
        let (ks, os, n0) = kept_dims
            .first()
            .map_or((0, 0, 1), |d| (d.stride, d.out, d.size));
        return for_unit_ranges(count, cost, |k0, k1| {
            let mut vals = vec![f.init(); (k1 - k0).min(n0)];
            let mut k = k0;
            while k < k1 {
                let n = (n0 - k % n0).min(k1 - k);
                let (ia, oa) = kept.at(k);
                let first = base + ia;
                let span = (n - 1) * ks + d0.size;
                f.run_many(&x[first..first + span], d0.size, ks, &mut vals[..n]);
                for (j, &v) in vals[..n].iter().enumerate() {
                    // SAFETY: outputs of units k0..k1 belong to this range
                    // alone; unit k + j writes oa + j * os.
                    unsafe { out.write(oa + j * os, f.finish(v)) };
                }
                k += n;
            }
        });
    }
    if d0.stride == 1 && d0.size < ROW_WIDTH {
        // Short contiguous runs: fold the runs of a lane into one row of
        // accumulators (SIMD across the run), then fold that row.
        let (r1, outer) = (outer_red[0], &outer_red[1..]);
        return for_units(count, cost, |k| {
            let (ia, oa) = kept.at(k);
            let mut row = vec![f.init(); d0.size];
            let mut red = Odometer::new(outer.iter().copied());
            red.each(|ro| {
                let first = base + ia + ro;
                let span = (r1.size - 1) * r1.stride + d0.size;
                f.rows_many(&mut row, &x[first..first + span], r1.stride, r1.size);
            });
            // SAFETY: output element oa belongs to unit k alone.
            unsafe { out.write(oa, f.finish(f.run(f.init(), &row))) };
        });
    }
    for_units(count, cost, |k| {
        let (ia, oa) = kept.at(k);
        let mut acc = f.init();
        // Strided lanes are gathered GATHER elements at a time (whole SIMD
        // folds per piece, the gather as shuffles for strides 2 and 3).
        const GATHER: usize = 512;
        let mut buf = [T::default(); GATHER];
        let mut red = Odometer::new(outer_red.iter().copied());
        red.each(|ro| {
            let start = base + ia + ro;
            if d0.stride == 1 {
                acc = f.run(acc, &x[start..start + d0.size]);
            } else {
                let mut i = 0;
                while i < d0.size {
                    let n = GATHER.min(d0.size - i);
                    let at = start + i * d0.stride;
                    slices::gather(&x[at..], d0.stride, &mut buf[..n]);
                    acc = f.run(acc, &buf[..n]);
                    i += n;
                }
            }
        });
        // SAFETY: output element oa belongs to unit k alone.
        unsafe { out.write(oa, f.finish(acc)) };
    });
}

/// The innermost dim is kept: blocks of outputs fold whole rows.
fn rows<T, F>(out: SharedOut<T>, x: &[T], base: usize, ds: &[Dim], f: &F)
where
    T: Copy + Default + Send + Sync,
    F: Fold<T>,
{
    let d0 = ds[0];
    let red_dims: SmallVec<[&Dim; 6]> = ds[1..].iter().filter(|d| d.reduced).collect();
    let Some(&d1) = red_dims.first() else {
        // Nothing reduced (every reduced dim has size 1): finish each value.
        let kept = Odometer::new(ds.iter());
        return for_units(kept.count(), 1, |k| {
            let (ia, oa) = kept.at(k);
            // SAFETY: output oa belongs to unit k alone.
            unsafe { out.write(oa, f.finish(f.run(f.init(), &x[base + ia..base + ia + 1]))) };
        });
    };
    if d0.stride == 1 && red_dims.len() == 1 && d1.size > ROW_BLOCK && d0.size > ROW_WIDTH {
        return row_blocks(out, x, base, ds, f);
    }
    // A short contiguous kept dim whose reduced rows lie side by side: fold
    // `side` rows at once as one wide row, then the segments together.
    let side = if d0.stride == 1 && d1.stride == d0.size && 2 * d0.size <= ROW_WIDTH {
        (ROW_WIDTH / d0.size).min(d1.size)
    } else {
        1
    };
    let width = if side > 1 {
        d0.size
    } else if d0.stride == 1 {
        // Contiguous rows: pieces as wide as the threads allow (up to an L1
        // of accumulators), so that each row is read in long runs the
        // prefetcher follows. Each output's sum is the same for any width.
        d0.size
            .div_ceil(4 * num_threads())
            .next_multiple_of(16)
            .clamp(ROW_WIDTH, ROW_BLOCK_WIDTH)
            .min(d0.size)
    } else {
        d0.size.min(ROW_WIDTH)
    };
    let blocks = d0.size.div_ceil(width);
    let outer_kept = Odometer::new(ds[1..].iter().filter(|d| !d.reduced));
    let red_count: usize = red_dims.iter().map(|d| d.size).product();
    // Sums of many rows go through partials of ROW_BLOCK rows.
    let blocked = red_count > ROW_BLOCK;
    let units = outer_kept.count() * blocks;
    for_units(units, width * red_count, |u| {
        let (ko, oo) = outer_kept.at(u / blocks);
        let j0 = (u % blocks) * width;
        let w = width.min(d0.size - j0);
        let start = base + ko + j0 * d0.stride;
        let span = w * side;
        let mut acc = vec![f.init(); span];
        let mut part = if blocked {
            vec![f.init(); span]
        } else {
            Vec::new()
        };
        let mut gathered = vec![T::default(); if d0.stride == 1 { 0 } else { w }];
        let mut in_part = 0;
        // Folds `n` rows of `len` elements at `first + r * stride`.
        let mut fold_rows = |first: usize, stride: usize, n: usize, len: usize| {
            let target = if blocked {
                &mut part[..len]
            } else {
                &mut acc[..len]
            };
            if d0.stride == 1 {
                f.rows_many(target, &x[first..first + (n - 1) * stride + len], stride, n);
            } else {
                for r in 0..n {
                    let row = first + r * stride;
                    for (j, g) in gathered.iter_mut().enumerate() {
                        *g = x[row + j * d0.stride];
                    }
                    f.rows(target, &gathered);
                }
            }
            if blocked {
                in_part += n * len / w;
                if in_part >= ROW_BLOCK {
                    f.rows(&mut acc, &part);
                    part.iter_mut().for_each(|p| *p = f.init());
                    in_part = 0;
                }
            }
        };
        let mut outer = Odometer::new(red_dims[1..].iter().copied());
        let (wide, rest) = (d1.size / side, d1.size % side);
        let per = (ROW_BLOCK / side).max(1);
        outer.each(|ro| {
            let s0 = start + ro;
            let mut g = 0;
            while g < wide {
                let n = per.min(wide - g);
                fold_rows(s0 + g * side * d1.stride, side * d1.stride, n, span);
                g += n;
            }
            if rest > 0 {
                fold_rows(s0 + wide * side * d1.stride, d1.stride, rest, w);
            }
        });
        if blocked && in_part > 0 {
            f.rows(&mut acc, &part);
        }
        // Fold the side-by-side segments into the first one, in order.
        let (first, others) = acc.split_at_mut(w);
        for seg in others.chunks(w) {
            f.rows(first, seg);
        }
        // SAFETY: outputs (oo + (j0 + j) * out stride) belong to unit u
        // alone: units split the kept index space.
        unsafe { store_row(out, oo + j0 * d0.out, d0.out, first, f) };
    });
}

/// [`rows`] for a wide contiguous kept dim and one long reduced dim: the
/// units are blocks of [`ROW_BLOCK`] whole rows (read straight through
/// memory, not a narrow column of every row), each folded into its own
/// partial; the partials are then folded together in order. The same
/// arithmetic as [`rows`]' blocked sums, so the same bits.
fn row_blocks<T, F>(out: SharedOut<T>, x: &[T], base: usize, ds: &[Dim], f: &F)
where
    T: Copy + Default + Send + Sync,
    F: Fold<T>,
{
    let (d0, d1) = (
        ds[0],
        *ds[1..].iter().find(|d| d.reduced).expect("a reduced dim"),
    );
    let outer_kept = Odometer::new(ds[1..].iter().filter(|d| !d.reduced));
    let width = d0.size.min(ROW_BLOCK_WIDTH);
    let col_blocks = d0.size.div_ceil(width);
    let row_blocks = d1.size.div_ceil(ROW_BLOCK);
    let lanes = outer_kept.count() * col_blocks;
    let mut parts = vec![f.init(); lanes * row_blocks * width];
    let pp = SharedOut::new(&mut parts);
    // Unit u: lane u / row_blocks (outer kept index, column block), rows
    // of block u % row_blocks; its partial is parts[u * width..][..w].
    for_units(lanes * row_blocks, width * ROW_BLOCK, |u| {
        let (lane, rb) = (u / row_blocks, u % row_blocks);
        let (ko, _) = outer_kept.at(lane / col_blocks);
        let j0 = (lane % col_blocks) * width;
        let w = width.min(d0.size - j0);
        let r0 = rb * ROW_BLOCK;
        let n = ROW_BLOCK.min(d1.size - r0);
        let first = base + ko + j0 + r0 * d1.stride;
        // SAFETY: unit u alone owns parts[u * width..][..width].
        let part = unsafe { pp.run(u * width, w) };
        f.rows_many(
            part,
            &x[first..first + (n - 1) * d1.stride + w],
            d1.stride,
            n,
        );
    });
    for_units(lanes, width * row_blocks, |lane| {
        let (_, oo) = outer_kept.at(lane / col_blocks);
        let j0 = (lane % col_blocks) * width;
        let w = width.min(d0.size - j0);
        let mut acc = vec![f.init(); w];
        for rb in 0..row_blocks {
            f.rows(&mut acc, &parts[(lane * row_blocks + rb) * width..][..w]);
        }
        // SAFETY: outputs (oo + (j0 + j) * out stride) belong to this lane
        // alone.
        unsafe { store_row(out, oo + j0 * d0.out, d0.out, &acc, f) };
    });
}

/// Stores `f.finish(acc[j])` at output `at + j * stride` for each `j`: a
/// contiguous run as one slice loop (element by element, with the
/// index arithmetic, it took two thirds of a sum over 8 rows of 125000).
///
/// # Safety
/// Those outputs lie inside `out` and no other thread writes them.
unsafe fn store_row<T: Copy, F: Fold<T>>(
    out: SharedOut<T>,
    at: usize,
    stride: usize,
    acc: &[T],
    f: &F,
) {
    if stride == 1 {
        // SAFETY: the caller's promise, for the run at..at + acc.len().
        let dst = unsafe { out.run(at, acc.len()) };
        for (d, &a) in dst.iter_mut().zip(acc) {
            *d = f.finish(a);
        }
    } else {
        for (j, &a) in acc.iter().enumerate() {
            // SAFETY: the caller's promise, element by element.
            unsafe { out.write(at + j * stride, f.finish(a)) };
        }
    }
}

/// Widest column block of [`row_blocks`]: a partial of 4096 floats (16 KB)
/// stays in L1 while its rows are folded in.
const ROW_BLOCK_WIDTH: usize = 4096;

mod elem;
pub use elem::*;

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(shape: &[usize], strides: &[usize], offset: usize) -> Layout {
        Layout::strided(shape, strides, offset)
    }

    /// Plain-loop sum over `dims` in f64, kept dims row-major.
    fn reference(x: &[f64], l: &Layout, dims: &[usize]) -> Vec<f64> {
        let kept: Vec<usize> = (0..l.ndim()).filter(|d| !dims.contains(d)).collect();
        let n: usize = kept.iter().map(|&d| l.shape[d]).product();
        let mut out = vec![0.0; n];
        let total = l.numel();
        for mut i in 0..total {
            let mut idx = vec![0; l.ndim()];
            for d in (0..l.ndim()).rev() {
                idx[d] = i % l.shape[d];
                i /= l.shape[d];
            }
            let off: usize = l.offset
                + idx
                    .iter()
                    .zip(&l.strides)
                    .map(|(a, b)| a * b)
                    .sum::<usize>();
            let mut k = 0;
            for &d in &kept {
                k = k * l.shape[d] + idx[d];
            }
            out[k] += x[off];
        }
        out
    }

    #[test]
    fn sums_over_every_dim_set_and_layout_match_a_plain_loop() {
        let x: Vec<f64> = (0..200_000)
            .map(|i| ((i * 7919) % 1000) as f64 - 500.0)
            .collect();
        let cases = [
            layout(&[40, 30, 50], &[1500, 50, 1], 0),
            layout(&[40, 30, 50], &[1, 40, 1200], 3),
            layout(&[50, 30, 40], &[1, 2000, 50], 0),
            layout(&[20, 30, 25], &[1500, 50, 2], 1),
            layout(&[1000, 3], &[3, 1], 0),
            layout(&[600, 7], &[7, 1], 5),
            layout(&[40, 30], &[0, 1], 0),
            layout(&[70_000, 2], &[2, 1], 0),
        ];
        for l in &cases {
            let nd = l.ndim();
            let mut sets: Vec<Vec<usize>> = (0..nd).map(|d| vec![d]).collect();
            sets.push((0..nd).collect());
            if nd == 3 {
                sets.push(vec![0, 2]);
                sets.push(vec![1, 2]);
            }
            for dims in sets {
                let want = reference(&x, l, &dims);
                let mut out = vec![0.0; want.len()];
                fold(&mut out, &x, l, &dims, &Sum { scale: None });
                assert_eq!(out, want, "{l:?} over {dims:?}");
                let mut mx = vec![0.0; want.len()];
                fold(&mut mx, &x, l, &dims, &Extreme { max: true });
                assert!(mx.iter().all(|&m| m <= 499.0), "{l:?} {dims:?}");
            }
        }
    }

    #[test]
    fn max_propagates_nan_and_empty_folds_give_the_identity() {
        let mut x: Vec<f32> = (0..3000).map(|i| i as f32).collect();
        x[1234] = f32::NAN;
        let l = Layout::contiguous(&[30, 100]);
        let mut out = vec![0f32; 100];
        fold(&mut out, &x, &l, &[0], &Extreme { max: true });
        assert!(out[34].is_nan());
        assert_eq!(out[35], 2935.0);
        let mut out = vec![0f32; 30];
        fold(&mut out, &x, &l, &[1], &Extreme { max: false });
        assert!(out[12].is_nan());
        assert_eq!(out[0], 0.0);
        let empty = Layout::contiguous(&[0, 4]);
        let mut out = vec![7f32; 4];
        fold(&mut out, &x, &empty, &[0], &Sum { scale: None });
        assert_eq!(out, vec![0.0; 4]);
    }
}
