//! The strided iteration layer: one place that turns the layouts of a
//! kernel's operands into fast loops, under every elementwise, broadcast
//! and copy kernel (the idea of ATen's TensorIterator and NumPy's nditer).
//!
//! A [`Plan`] takes the operands' strides over one iteration shape
//! (broadcast dims have stride 0) and
//! 1. orders the dims so that the innermost one has the smallest strides
//!    (torch's `reorder_dimensions`: the first operand with a strict
//!    preference decides, broadcast strides abstain);
//! 2. drops size-1 dims and merges dims that are one run for every operand
//!    (coalescing), so a contiguous or transposed-contiguous tensor is one
//!    flat loop;
//! 3. when an operand is strided along the innermost dim but contiguous
//!    along another (a transposed operand next to a contiguous one), walks
//!    the two dims in tiles, so that operand's cache lines are used up
//!    while they are in L1;
//! 4. splits the work over the threads by cost, in chunks whose bounds
//!    depend on the shape and thread count only.
//!
//! Kernels get runs: `f(offsets, len)` means element `i < len` of the run
//! is at `offsets[k] + i * inner[k]` in operand `k`'s buffer. The typed
//! loops in [`super::elementwise`] turn runs into SIMD slice loops
//! ([`super::slices`]), gathering strided operands into small buffers.
//!
//! [`output_layout`] gives a fresh output the strides torch gives it: the
//! inputs' memory order when they agree (a transposed input gives a
//! transposed output), row-major otherwise.

// Loops over `0..N` index several per-operand arrays at once.
#![allow(clippy::needless_range_loop)]

use super::overlap::is_non_overlapping_dense;
use crate::buffer::layout::{Dims, Layout};
use smallvec::SmallVec;

/// Tile width along the innermost dim (the run length inside a tile).
pub const TILE_W: usize = 128;
/// Tile height along dim 1: a transposed operand's tile is read as
/// `TILE_W` contiguous pieces of this many elements (two or four cache
/// lines). 128 x 32 measured best among 256 x 8 ... 32 x 64 for
/// transposed copies of 300^2 to 2048^2 float32/float64 on Zen 3 (25%
/// under 256 x 8): the pieces use whole lines, and a tile's rows span
/// few pages.
pub const TILE_H: usize = 32;

/// The iteration over `N` operands of one shape (operand 0 is the output
/// by convention; it takes part in ordering like any other).
#[derive(Clone, Debug)]
pub struct Plan<const N: usize> {
    /// Sizes, innermost dim first; no size-1 dims (empty: one element).
    shape: Dims,
    /// Strides in elements per operand, innermost dim first.
    strides: [Dims; N],
    offsets: [usize; N],
    /// Dims 0 and 1 are walked in tiles of `TILE_W` x `TILE_H`.
    tiled: bool,
    numel: usize,
}

/// `-1`: dim `a` goes inside (before) dim `b`; `1`: after; `0`: no operand
/// has a strict preference (torch's `should_swap`).
fn compare_dims(shape: &[usize], strides: &[&[usize]], a: usize, b: usize) -> i32 {
    for st in strides {
        let (sa, sb) = (st[a], st[b]);
        if sa == 0 || sb == 0 {
            continue;
        }
        if sa < sb {
            return -1;
        }
        if sa > sb {
            return 1;
        }
        if shape[a] > shape[b] {
            return 1;
        }
    }
    0
}

/// The dims of `shape` in iteration order, innermost first: torch's
/// insertion sort with ambiguous comparisons, starting from row-major
/// order.
fn order_dims(shape: &[usize], strides: &[&[usize]]) -> Dims {
    let nd = shape.len();
    let mut perm: Dims = (0..nd).rev().collect();
    for i in 1..nd {
        let mut d1 = i;
        for d0 in (0..i).rev() {
            match compare_dims(shape, strides, perm[d0], perm[d1]) {
                c if c > 0 => {
                    perm.swap(d0, d1);
                    d1 = d0;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
    perm
}

/// The layout torch gives a fresh output of `shape` computed elementwise
/// from `inputs` (each broadcast to `shape`): contiguous when every input is
/// contiguous; otherwise dense in the memory order the inputs suggest, so
/// a transposed or permuted input gives an output with the same strides.
pub fn output_layout(shape: &[usize], inputs: &[&Layout]) -> Layout {
    if inputs
        .iter()
        .all(|l| l.is_contiguous() && l.shape[..] == *shape)
        || shape.len() < 2
    {
        return Layout::contiguous(shape);
    }
    // The shared strides of non-overlapping dense inputs of this shape.
    if let Some(first) = inputs.first() {
        if first.shape[..] == *shape
            && is_non_overlapping_dense(first)
            && inputs[1..]
                .iter()
                .all(|l| l.shape == first.shape && l.strides == first.strides)
        {
            return Layout {
                shape: shape.into(),
                strides: first.strides.clone(),
                offset: 0,
            };
        }
    }
    let strides: SmallVec<[&[usize]; 4]> = inputs.iter().map(|l| &l.strides[..]).collect();
    let perm = order_dims(shape, &strides);
    let mut out: Dims = smallvec::smallvec![0; shape.len()];
    let mut acc = 1;
    for &d in &perm {
        out[d] = acc;
        acc *= shape[d];
    }
    Layout {
        shape: shape.into(),
        strides: out,
        offset: 0,
    }
}

impl<const N: usize> Plan<N> {
    /// A plan over `shape` (row-major, as a layout's) for operands given
    /// as (strides, offset), each already broadcast to `shape`.
    pub fn new(shape: &[usize], ops: [(&[usize], usize); N]) -> Self {
        let numel: usize = shape.iter().product();
        let offsets = ops.map(|(_, o)| o);
        let empty = || -> [Dims; N] { std::array::from_fn(|_| Dims::new()) };
        if numel <= 1 {
            return Plan {
                shape: Dims::new(),
                strides: empty(),
                offsets,
                tiled: false,
                numel,
            };
        }
        // Size-1 dims never advance: drop them before ordering.
        let keep: Dims = (0..shape.len()).filter(|&d| shape[d] != 1).collect();
        let sh: Dims = keep.iter().map(|&d| shape[d]).collect();
        let st: [Dims; N] = std::array::from_fn(|k| keep.iter().map(|&d| ops[k].0[d]).collect());
        let st_refs: [&[usize]; N] = std::array::from_fn(|k| &st[k][..]);
        let perm = order_dims(&sh, &st_refs);
        // Coalesce in iteration order.
        let mut shape_out = Dims::new();
        let mut strides: [Dims; N] = empty();
        for &d in &perm {
            let merge = !shape_out.is_empty() && {
                let last = shape_out.len() - 1;
                (0..N).all(|k| strides[k][last] * shape_out[last] == st[k][d])
            };
            if merge {
                let last = shape_out.len() - 1;
                shape_out[last] *= sh[d];
            } else {
                shape_out.push(sh[d]);
                for k in 0..N {
                    strides[k].push(st[k][d]);
                }
            }
        }
        let mut plan = Plan {
            shape: shape_out,
            strides,
            offsets,
            tiled: false,
            numel,
        };
        plan.choose_tiles();
        plan
    }

    /// Tiles dims 0 and 1 when an operand is strided along dim 0 but
    /// contiguous along some other dim (moved to dim 1).
    fn choose_tiles(&mut self) {
        if self.shape.len() < 2 {
            return;
        }
        for k in 0..N {
            let s0 = self.strides[k][0];
            if s0 <= 1 {
                continue;
            }
            let Some(d) = (1..self.shape.len()).find(|&d| self.strides[k][d] == 1) else {
                continue;
            };
            if d != 1 {
                self.shape.swap(1, d);
                for st in &mut self.strides {
                    st.swap(1, d);
                }
            }
            self.tiled = true;
            return;
        }
    }

    pub fn numel(&self) -> usize {
        self.numel
    }

    /// The stride of operand `k` along the innermost dim (0 when there is
    /// at most one element).
    #[inline]
    pub fn inner(&self, k: usize) -> usize {
        self.strides[k].first().copied().unwrap_or(0)
    }

    /// The iteration dims after ordering and coalescing, innermost first
    /// (for tests and diagnostics).
    pub fn dims(&self) -> (&[usize], [&[usize]; N]) {
        (&self.shape, std::array::from_fn(|k| &self.strides[k][..]))
    }

    /// True when dims 0 and 1 are walked in tiles ([`Plan::for_each_tile`]).
    pub fn is_tiled(&self) -> bool {
        self.tiled
    }

    /// The stride of operand `k` along dim 1 (tiled plans).
    #[inline]
    pub fn outer(&self, k: usize) -> usize {
        self.strides[k].get(1).copied().unwrap_or(0)
    }

    /// For a tiled plan: calls `f(offsets, w, h)` for tiles covering every
    /// element once; the tile's element (i, j), `i < h` along dim 1 and
    /// `j < w` along dim 0, is at `offsets[k] + j * inner(k) + i * outer(k)`.
    /// Split over the threads as [`Plan::for_each_run`].
    ///
    /// `mem[k]` is operand `k`'s buffer address and element size: while a
    /// tile runs, the cache lines of the next one are prefetched (a tile
    /// reads a transposed operand as `TILE_W` short pieces on as many
    /// pages, which the hardware prefetcher does not follow).
    pub fn for_each_tile(
        &self,
        grain: usize,
        mem: [(usize, usize); N],
        f: impl Fn([usize; N], usize, usize) + Sync,
    ) {
        self.for_each_tile_with(grain, mem, || (), |_, offs, w, h| f(offs, w, h))
    }

    /// [`Plan::for_each_tile`] with a state made by `init` once per chunk
    /// of work (scratch buffers set up once, not per tile).
    pub fn for_each_tile_with<S>(
        &self,
        grain: usize,
        mem: [(usize, usize); N],
        init: impl Fn() -> S + Sync,
        f: impl Fn(&mut S, [usize; N], usize, usize) + Sync,
    ) {
        assert!(self.tiled, "for_each_tile on a plan that is not tiled");
        if self.numel == 0 {
            return;
        }
        let (tw, th) = (
            self.shape[0].div_ceil(TILE_W),
            self.shape[1].div_ceil(TILE_H),
        );
        let rest: usize = self.shape[2..].iter().product();
        let units = tw * th * rest;
        self.split(units, TILE_W * TILE_H, grain, &|t0, t1| {
            let mut state = init();
            self.tiles(t0, t1, Some(&mem), &mut |offs, w, h| {
                f(&mut state, offs, w, h)
            })
        });
    }

    /// Calls `f(offsets, len)` for runs along the innermost dim covering
    /// every element exactly once, split over the threads when there are at
    /// least `grain` elements (`usize::MAX`: never). Runs never cross a
    /// chunk boundary, and chunk bounds depend only on the plan and the
    /// thread count.
    pub fn for_each_run(&self, grain: usize, f: impl Fn([usize; N], usize) + Sync) {
        self.for_each_run_with(grain, || (), |_, offs, len| f(offs, len))
    }

    /// [`Plan::for_each_run`] with a state made by `init` once per chunk
    /// of work (scratch buffers set up once, not per run).
    pub fn for_each_run_with<S>(
        &self,
        grain: usize,
        init: impl Fn() -> S + Sync,
        f: impl Fn(&mut S, [usize; N], usize) + Sync,
    ) {
        if self.numel == 0 {
            return;
        }
        if self.shape.is_empty() {
            f(&mut init(), self.offsets, 1);
            return;
        }
        if self.tiled {
            let (tw, th) = (
                self.shape[0].div_ceil(TILE_W),
                self.shape[1].div_ceil(TILE_H),
            );
            let units = tw * th * self.shape[2..].iter().product::<usize>();
            return self.split(units, TILE_W * TILE_H, grain, &|t0, t1| {
                let mut state = init();
                self.tiles(t0, t1, None, &mut |offs: [usize; N], w, h| {
                    for i in 0..h {
                        f(
                            &mut state,
                            std::array::from_fn(|k| offs[k] + i * self.strides[k][1]),
                            w,
                        )
                    }
                })
            });
        }
        self.split(self.numel, 1, grain, &|i0, i1| {
            let mut state = init();
            self.walk(0, i0, i1, &mut |offs, len| f(&mut state, offs, len))
        });
    }

    /// For a plan that is not tiled, with at least two dims: calls
    /// `f(state, offsets, w, h)` (`state` made by `init` once per chunk of
    /// work) for blocks of `h` whole rows along dim 0 (`w` is
    /// its size), row `i < h` at `offsets[k] + i * outer(k)`, covering every
    /// element once. One call serves many short rows (a broadcast row
    /// operand makes a plan of rows that cannot coalesce), where
    /// [`Plan::for_each_run`] calls once per row. Split over the threads by
    /// rows, with chunk bounds that depend only on the plan and the thread
    /// count.
    pub fn for_each_rows_with<S>(
        &self,
        grain: usize,
        init: impl Fn() -> S + Sync,
        f: impl Fn(&mut S, [usize; N], usize, usize) + Sync,
    ) {
        assert!(
            !self.tiled && self.shape.len() >= 2,
            "for_each_rows needs an untiled plan of two dims or more"
        );
        if self.numel == 0 {
            return;
        }
        let n0 = self.shape[0];
        let rows = self.numel / n0;
        self.split(rows, n0, grain, &|r0, r1| {
            let mut state = init();
            self.walk(1, r0, r1, &mut |offs, h| f(&mut state, offs, n0, h))
        });
    }

    /// Runs `run(u0, u1)` over `units` units of `unit_elems` elements,
    /// split over the threads from `grain` elements.
    fn split(
        &self,
        units: usize,
        unit_elems: usize,
        grain: usize,
        run: &(dyn Fn(usize, usize) + Sync),
    ) {
        let threads = crate::parallel::num_threads();
        if threads < 2 || units < 2 || self.numel < grain.max(2) {
            return run(0, units);
        }
        // A few chunks per thread, so a late helper still finds work.
        let grain_units = grain.div_ceil(unit_elems).max(1);
        let chunk = units.div_ceil(4 * threads).max(grain_units / 4).max(1);
        let chunks = units.div_ceil(chunk);
        if chunks < 2 {
            return run(0, units);
        }
        crate::parallel::for_each_index(chunks, &|c| run(c * chunk, ((c + 1) * chunk).min(units)));
    }

    /// Calls `f(offsets, n)` over positions `i0..i1` of the linear index
    /// over dims `from..` (dim `from` fastest), in blocks of `n` steps
    /// along dim `from` that never cross its end: runs of elements
    /// (`from == 0`) or of whole rows (`from == 1`).
    fn walk(&self, from: usize, i0: usize, i1: usize, f: &mut impl FnMut([usize; N], usize)) {
        let nd = self.shape.len();
        let mut idx: SmallVec<[usize; 6]> = smallvec::smallvec![0; nd];
        let mut offs = self.offsets;
        let mut rem = i0;
        for d in from..nd {
            idx[d] = rem % self.shape[d];
            rem /= self.shape[d];
            for k in 0..N {
                offs[k] += idx[d] * self.strides[k][d];
            }
        }
        let n = self.shape[from];
        let mut pos = i0;
        while pos < i1 {
            let len = (n - idx[from]).min(i1 - pos);
            f(offs, len);
            pos += len;
            if pos >= i1 {
                break;
            }
            // Back to the start along dim `from`, then advance the odometer.
            for k in 0..N {
                offs[k] -= idx[from] * self.strides[k][from];
            }
            idx[from] = 0;
            self.advance(&mut idx, &mut offs, from + 1);
        }
    }

    /// Adds one to the odometer from dim `from` up (wrapping dims back).
    #[inline]
    fn advance(&self, idx: &mut [usize], offs: &mut [usize; N], from: usize) {
        for d in from..self.shape.len() {
            idx[d] += 1;
            for k in 0..N {
                offs[k] += self.strides[k][d];
            }
            if idx[d] < self.shape[d] {
                return;
            }
            for k in 0..N {
                offs[k] -= self.shape[d] * self.strides[k][d];
            }
            idx[d] = 0;
        }
    }

    /// The offsets, width and height of tile `t` (dim 0's tile index
    /// fastest).
    #[inline]
    fn tile(&self, t: usize) -> ([usize; N], usize, usize) {
        let (n0, n1) = (self.shape[0], self.shape[1]);
        let (tw, th) = (n0.div_ceil(TILE_W), n1.div_ceil(TILE_H));
        let (jb, ib, mut rest) = (t % tw, (t / tw) % th, t / (tw * th));
        let (j0, i0) = (jb * TILE_W, ib * TILE_H);
        let mut offs = self.offsets;
        for k in 0..N {
            offs[k] += j0 * self.strides[k][0] + i0 * self.strides[k][1];
        }
        for d in 2..self.shape.len() {
            let i = rest % self.shape[d];
            rest /= self.shape[d];
            for k in 0..N {
                offs[k] += i * self.strides[k][d];
            }
        }
        (offs, TILE_W.min(n0 - j0), TILE_H.min(n1 - i0))
    }

    /// Tiles `t0..t1`, prefetching each next tile's lines when `mem` gives
    /// the operands' addresses.
    fn tiles(
        &self,
        t0: usize,
        t1: usize,
        mem: Option<&[(usize, usize); N]>,
        f: &mut impl FnMut([usize; N], usize, usize),
    ) {
        for t in t0..t1 {
            let (offs, w, h) = self.tile(t);
            if let (Some(mem), true) = (mem, t + 1 < t1) {
                let (next, nw, nh) = self.tile(t + 1);
                for k in 0..N {
                    let (addr, size) = mem[k];
                    let (s0, s1) = (self.strides[k][0], self.strides[k][1]);
                    let at = |o: usize| addr.wrapping_add(o * size);
                    if s0 == 1 {
                        (0..nh).for_each(|i| {
                            super::prefetch::prefetch_bytes(at(next[k] + i * s1), nw * size)
                        });
                    } else if s1 == 1 {
                        (0..nw).for_each(|j| {
                            super::prefetch::prefetch_bytes(at(next[k] + j * s0), nh * size)
                        });
                    }
                }
            }
            f(offs, w, h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(shape: &[usize], strides: &[usize], offset: usize) -> Layout {
        Layout::strided(shape, strides, offset)
    }

    /// Every (offset tuple) visited by the plan's runs, in visiting order.
    fn visits<const N: usize>(p: &Plan<N>) -> Vec<[usize; N]> {
        let out = parking_lot::Mutex::new(Vec::new());
        p.for_each_run(usize::MAX, |offs, len| {
            let mut o = out.lock();
            for i in 0..len {
                o.push(std::array::from_fn(|k| offs[k] + i * p.inner(k)));
            }
        });
        out.into_inner()
    }

    /// The offsets of every element of `shape` in row-major order.
    fn reference(shape: &[usize], ops: &[(&[usize], usize)]) -> Vec<Vec<usize>> {
        let n: usize = shape.iter().product();
        (0..n)
            .map(|mut i| {
                let mut idx = vec![0; shape.len()];
                for d in (0..shape.len()).rev() {
                    idx[d] = i % shape[d];
                    i /= shape[d];
                }
                ops.iter()
                    .map(|(st, o)| o + idx.iter().zip(st.iter()).map(|(a, b)| a * b).sum::<usize>())
                    .collect()
            })
            .collect()
    }

    fn check_covers<const N: usize>(shape: &[usize], ops: [(&[usize], usize); N]) -> Plan<N> {
        let p = Plan::new(shape, ops);
        let mut got: Vec<Vec<usize>> = visits(&p).into_iter().map(|v| v.to_vec()).collect();
        let mut want = reference(shape, &ops);
        got.sort();
        want.sort();
        assert_eq!(got, want, "shape {shape:?}");
        p
    }

    #[test]
    fn contiguous_and_transposed_operands_coalesce_to_one_dim() {
        let p = check_covers(&[4, 5, 6], [(&[30, 6, 1], 0), (&[30, 6, 1], 3)]);
        assert_eq!(p.dims().0, &[120]);
        // Both transposed the same way: one flat run in memory order.
        let p = check_covers(&[6, 5], [(&[1, 6], 0), (&[1, 6], 0)]);
        assert_eq!(p.dims().0, &[30]);
        assert!(!p.is_tiled());
    }

    #[test]
    fn mixed_layouts_are_tiled_on_the_contiguous_dim_of_the_strided_operand() {
        // out contiguous, input transposed.
        let p = check_covers(&[300, 200], [(&[200, 1], 0), (&[1, 300], 7)]);
        assert!(p.is_tiled());
        assert_eq!(p.dims().0, &[200, 300]);
        // A permuted 3-d input whose contiguous dim is the outermost.
        check_covers(&[50, 3, 400], [(&[1200, 400, 1], 0), (&[1, 50, 150], 0)]);
        // Broadcast operand (stride 0) next to a transposed one.
        check_covers(&[40, 300], [(&[300, 1], 0), (&[1, 40], 0), (&[0, 1], 5)]);
    }

    #[test]
    fn chunks_and_odometer_cover_odd_shapes() {
        check_covers(&[3, 1, 7, 2], [(&[14, 14, 2, 1], 0), (&[0, 0, 1, 0], 1)]);
        check_covers(&[1], [(&[1], 4)]);
        check_covers(&[0, 3], [(&[3, 1], 0)]);
        check_covers(&[5, 9], [(&[18, 2], 1), (&[9, 1], 0)]);
        // Parallel chunks: every element once.
        let p = Plan::new(&[257, 129], [(&[129, 1], 0), (&[1, 257], 0)]);
        let seen = parking_lot::Mutex::new(vec![0u8; 257 * 129]);
        p.for_each_run(64, |offs, len| {
            let mut s = seen.lock();
            for i in 0..len {
                s[offs[0] + i * p.inner(0)] += 1;
            }
        });
        assert!(seen.into_inner().iter().all(|&c| c == 1));
    }

    #[test]
    fn blocks_of_rows_cover_every_element_once_with_its_operand_offsets() {
        // [4, 3, 37] output + a broadcast row [37] (stride 0 over the rows):
        // the plan cannot coalesce the rows; blocks of rows, split over
        // chunks, visit every element once with the right input offset.
        for grain in [usize::MAX, 40] {
            let p = Plan::new(&[4, 3, 37], [(&[111, 37, 1], 0), (&[0, 0, 1], 5)]);
            assert!(!p.is_tiled() && p.dims().0.len() == 2);
            let seen = parking_lot::Mutex::new(vec![0u8; 4 * 3 * 37]);
            p.for_each_rows_with(
                grain,
                || 0usize,
                |calls, offs, w, h| {
                    *calls += 1;
                    let mut s = seen.lock();
                    for i in 0..h {
                        for j in 0..w {
                            let o = offs[0] + i * p.outer(0) + j * p.inner(0);
                            assert_eq!(offs[1] + i * p.outer(1) + j * p.inner(1), 5 + o % 37);
                            s[o] += 1;
                        }
                    }
                },
            );
            assert!(seen.into_inner().iter().all(|&c| c == 1));
        }
    }

    #[test]
    fn output_layout_follows_the_inputs_memory_order_as_torch() {
        // a.t() * b.t() -> strides (1, 4) for shape (4, 3) of a (3, 4) base.
        let t = layout(&[4, 3], &[1, 4], 0);
        assert_eq!(output_layout(&[4, 3], &[&t, &t]).strides[..], [1, 4]);
        // The first input decides: t * contiguous -> (1, 4); contiguous * t -> (3, 1).
        let c = Layout::contiguous(&[4, 3]);
        assert_eq!(output_layout(&[4, 3], &[&t, &c]).strides[..], [1, 4]);
        assert_eq!(output_layout(&[4, 3], &[&c, &t]).strides[..], [3, 1]);
        // Permuted 3-d: x.permute(2, 0, 1) of a (2, 3, 4) base.
        let p = layout(&[4, 2, 3], &[1, 12, 4], 0);
        assert_eq!(output_layout(&[4, 2, 3], &[&p]).strides[..], [1, 12, 4]);
        // A stepped slice and an expanded input give contiguous outputs.
        let s = layout(&[4, 3], &[6, 2], 0);
        assert_eq!(output_layout(&[4, 3], &[&s]).strides[..], [3, 1]);
        let e = layout(&[3, 4], &[1, 0], 0);
        assert_eq!(output_layout(&[3, 4], &[&e]).strides[..], [4, 1]);
        // Transposed plus a broadcast row: (1, 4) as torch.
        let row = layout(&[4, 3], &[0, 1], 0);
        assert_eq!(output_layout(&[4, 3], &[&t, &row]).strides[..], [1, 4]);
        assert_eq!(output_layout(&[4, 3], &[&row, &t]).strides[..], [1, 4]);
    }
}
