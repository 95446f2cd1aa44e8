//! The small kernel's tiles: [`kernel`] walks the output in tiles of up to
//! ROWS rows and two vectors of columns (rows split evenly over the tiles,
//! the prefetch lines shared out among them) and `Tile::run` computes one
//! in registers, one accumulator per element.

use super::{Ahead, Elem, Mat, ROWS};
use std::arch::x86_64::*;

/// [`small_gemm`] with B's rows contiguous, `ldb` apart: each readable
/// up to column `n` when `masked` (the last partial vector of a row is
/// read through a mask), else up to `n` rounded up to whole vectors.
#[allow(clippy::too_many_arguments)]
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn kernel<T: Elem>(
    m: usize,
    n: usize,
    k: usize,
    a: Mat<T>,
    b: *const T,
    ldb: usize,
    c: *mut T,
    ldc: usize,
    masked: bool,
    ahead: Ahead,
) {
    let l = T::LANES;
    let row_tiles = m.div_ceil(ROWS);
    // Lines to prefetch per tile, and where the next ones start.
    let tiles = row_tiles * n.div_ceil(2 * l);
    let per_tile = (ahead.ranges[0].1 + ahead.ranges[1].1).div_ceil(tiles);
    let (mut run, mut taken) = (0, 0);
    let mut j = 0;
    while j < n {
        let w = (n - j).min(2 * l);
        // Valid lanes of the tile's last vector.
        let last = w - (w - 1) / l * l;
        let bj = b.add(j);
        let mut i = 0;
        for r in 0..row_tiles {
            // Rows split evenly over the tiles (13 rows: 5, 4, 4, not
            // 6, 6, 1): a short tile has too few accumulators to keep
            // the FMA units busy.
            let h = m / row_tiles + usize::from(r < m % row_tiles);
            let ai = a.ptr.add(i * a.rs);
            let mut t = Tile {
                k,
                a: ai,
                a_rs: a.rs,
                a_cs: a.cs,
                b: bj,
                ldb,
                c: c.add(i * ldc + j),
                ldc,
                last,
                pf: (std::ptr::null(), 0),
            };
            // This tile's lines: the next ones of the current run.
            while run < 2 && taken == ahead.ranges[run].1 {
                (run, taken) = (run + 1, 0);
            }
            if run < 2 {
                let (first, count) = ahead.ranges[run];
                let take = per_tile.min(count - taken);
                t.pf = (first.wrapping_add(64 * taken), take);
                taken += take;
            }
            let mask = masked && last < l;
            match (h, w > l, mask) {
                (1, false, false) => t.run::<1, 1, false>(),
                (2, false, false) => t.run::<2, 1, false>(),
                (3, false, false) => t.run::<3, 1, false>(),
                (4, false, false) => t.run::<4, 1, false>(),
                (5, false, false) => t.run::<5, 1, false>(),
                (1, true, false) => t.run::<1, 2, false>(),
                (2, true, false) => t.run::<2, 2, false>(),
                (3, true, false) => t.run::<3, 2, false>(),
                (4, true, false) => t.run::<4, 2, false>(),
                (5, true, false) => t.run::<5, 2, false>(),
                (_, true, false) => t.run::<6, 2, false>(),
                (1, false, true) => t.run::<1, 1, true>(),
                (2, false, true) => t.run::<2, 1, true>(),
                (3, false, true) => t.run::<3, 1, true>(),
                (4, false, true) => t.run::<4, 1, true>(),
                (5, false, true) => t.run::<5, 1, true>(),
                (_, false, true) => t.run::<6, 1, true>(),
                (1, true, true) => t.run::<1, 2, true>(),
                (2, true, true) => t.run::<2, 2, true>(),
                (3, true, true) => t.run::<3, 2, true>(),
                (4, true, true) => t.run::<4, 2, true>(),
                (5, true, true) => t.run::<5, 2, true>(),
                (_, true, true) => t.run::<6, 2, true>(),
                (_, false, false) => t.run::<6, 1, false>(),
            }
            i += h;
        }
        j += w;
    }
}

/// One tile of the output: up to ROWS rows, one or two vectors of
/// columns, the last with `last` valid lanes.
struct Tile<T> {
    k: usize,
    a: *const T,
    a_rs: usize,
    a_cs: usize,
    b: *const T,
    ldb: usize,
    c: *mut T,
    ldc: usize,
    last: usize,
    /// Lines to prefetch into L2, one per depth: (first, count).
    pf: (*const i8, usize),
}

impl<T: Elem> Tile<T> {
    #[inline(always)]
    /// `MASKED`: the last vector of B's rows is read through a mask.
    unsafe fn run<const R: usize, const V: usize, const MASKED: bool>(&self) {
        let mask = if MASKED {
            T::mask(self.last)
        } else {
            _mm256_setzero_si256()
        };
        let mut acc = [[T::zero(); V]; R];
        let mut ap = self.a;
        let mut bp = self.b;
        let (mut pf, mut pf_left) = self.pf;
        for _ in 0..self.k {
            if pf_left > 0 {
                // A hint: never faults, whatever the address.
                _mm_prefetch::<_MM_HINT_T1>(pf);
                pf = pf.wrapping_add(64);
                pf_left -= 1;
            }
            let mut bv = [T::zero(); V];
            for (v, x) in bv.iter_mut().enumerate() {
                *x = if MASKED && v + 1 == V {
                    T::load_masked(bp.add(v * T::LANES), mask)
                } else {
                    T::load(bp.add(v * T::LANES))
                };
            }
            for (r, row) in acc.iter_mut().enumerate() {
                let x = T::splat(ap.add(r * self.a_rs));
                for (v, y) in row.iter_mut().enumerate() {
                    *y = T::fma(x, bv[v], *y);
                }
            }
            // Past the last depth these point past the operands:
            // wrapping, never dereferenced there.
            ap = ap.wrapping_add(self.a_cs);
            bp = bp.wrapping_add(self.ldb);
        }
        for (r, row) in acc.iter().enumerate() {
            let d = self.c.add(r * self.ldc);
            for (v, y) in row.iter().enumerate() {
                if v + 1 == V && self.last < T::LANES {
                    T::store_first(d.add(v * T::LANES), *y, self.last);
                } else {
                    T::store(d.add(v * T::LANES), *y);
                }
            }
        }
    }
}
