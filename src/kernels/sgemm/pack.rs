//! Packing for [`sgemm`](super::sgemm): a block of A into MR-row panels
//! ([`pack_a`]) and a block of B into `nr`-column panels ([`pack_b_rows`]
//! for rows read straight through, [`pack_b`] for one panel otherwise; `nr`
//! is the micro-kernel's width, [`Isa::nr`](super::Isa::nr)), with
//! the 8x8 register transpose ([`transpose8`]) the panel packers and the
//! small kernel use. See the parent module for what each may read and
//! write.

use super::{BRows, Operand, MR, PREFETCH_DEPTHS};
use std::arch::x86_64::*;

/// Packs rows `i0..i0 + rows` and depth `p0..p0 + kc` of `a` into MR-row
/// panels: panel `r` holds, for each depth `p`, its MR rows' values (zeros
/// past the last row).
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn pack_a(
    a: Operand,
    i0: usize,
    rows: usize,
    p0: usize,
    kc: usize,
    out: *mut f32,
) {
    let full = rows / MR;
    let panel = |r: usize| out.add(r * MR * kc);
    if a.cs == 1 {
        for r in 0..full {
            pack_rows6(a.at(i0 + r * MR, p0), a.rs, kc, panel(r));
        }
    } else if a.rs == 1 {
        // Columns contiguous (a transposed matrix): one sweep along each
        // depth's column feeds every panel.
        for p in 0..kc {
            let src = a.at(i0, p0 + p);
            // The column PREFETCH_DEPTHS further on.
            let ahead = src.wrapping_add(PREFETCH_DEPTHS * a.cs);
            for l in (0..rows).step_by(16) {
                _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(l).cast());
            }
            for r in 0..full {
                std::ptr::copy_nonoverlapping(src.add(r * MR), panel(r).add(p * MR), MR);
            }
        }
    } else {
        for r in 0..full {
            pack_panel_strided(a, i0 + r * MR, MR, p0, kc, panel(r));
        }
    }
    let h = rows - full * MR;
    if h > 0 {
        pack_panel_strided(a, i0 + full * MR, h, p0, kc, panel(full));
    }
}

/// Packs `h` (<= MR) rows from `i0` of `a`, any strides, into one A panel,
/// with zeros below the last row.
unsafe fn pack_panel_strided(a: Operand, i0: usize, h: usize, p0: usize, kc: usize, o: *mut f32) {
    for p in 0..kc {
        for q in 0..MR {
            *o.add(p * MR + q) = if q < h { *a.at(i0 + q, p0 + p) } else { 0.0 };
        }
    }
}

/// Packs depths `depths` (of `p0..p0 + kc`) of the first `panels` full
/// `nr`-wide panels of columns `j0..` of a `b` whose rows are contiguous:
/// each row segment is read once, straight through.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn pack_b_rows<B: BRows>(
    b: B,
    p0: usize,
    kc: usize,
    depths: std::ops::Range<usize>,
    j0: usize,
    panels: usize,
    nr: usize,
    o: *mut f32,
) {
    for p in depths {
        let src = b.row(p0 + p).add(j0);
        // The row PREFETCH_DEPTHS further on, one cache line per panel.
        let ahead = b.row_ahead(p0 + p, PREFETCH_DEPTHS).wrapping_add(j0);
        for l in (0..panels * nr).step_by(16) {
            _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(l).cast());
        }
        for j in 0..panels {
            std::ptr::copy_nonoverlapping(src.add(j * nr), o.add(j * nr * kc + p * nr), nr);
        }
    }
}

/// Packs `cols` (<= nr) columns `j0..` of `b`, depth `p0..p0 + kc`, into
/// one `nr`-wide panel: for each depth, nr values (zeros past the last
/// column). Full panels of a `b` with contiguous rows go through
/// [`pack_b_rows`] instead.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn pack_b<B: BRows>(
    b: B,
    p0: usize,
    kc: usize,
    j0: usize,
    cols: usize,
    nr: usize,
    o: *mut f32,
) {
    let cs = b.cs();
    if cols == nr && b.columns_contiguous() && nr.is_multiple_of(16) {
        let first = b.row(p0).add(j0 * cs);
        for h in (0..nr).step_by(16) {
            pack_cols16(first.add(h * cs), cs, kc, o.add(h), nr);
        }
    } else {
        for p in 0..kc {
            let row = b.row(p0 + p);
            for c in 0..nr {
                *o.add(p * nr + c) = if c < cols {
                    *row.add((j0 + c) * cs)
                } else {
                    0.0
                };
            }
        }
    }
}

/// The 8x8 transpose of eight rows of 8 floats.
#[inline(always)]
pub(super) unsafe fn transpose8(r: [__m256; 8]) -> [__m256; 8] {
    let t0 = _mm256_unpacklo_ps(r[0], r[1]);
    let t1 = _mm256_unpackhi_ps(r[0], r[1]);
    let t2 = _mm256_unpacklo_ps(r[2], r[3]);
    let t3 = _mm256_unpackhi_ps(r[2], r[3]);
    let t4 = _mm256_unpacklo_ps(r[4], r[5]);
    let t5 = _mm256_unpackhi_ps(r[4], r[5]);
    let t6 = _mm256_unpacklo_ps(r[6], r[7]);
    let t7 = _mm256_unpackhi_ps(r[6], r[7]);
    let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    [
        _mm256_permute2f128_ps::<0x20>(s0, s4),
        _mm256_permute2f128_ps::<0x20>(s1, s5),
        _mm256_permute2f128_ps::<0x20>(s2, s6),
        _mm256_permute2f128_ps::<0x20>(s3, s7),
        _mm256_permute2f128_ps::<0x31>(s0, s4),
        _mm256_permute2f128_ps::<0x31>(s1, s5),
        _mm256_permute2f128_ps::<0x31>(s2, s6),
        _mm256_permute2f128_ps::<0x31>(s3, s7),
    ]
}

/// Packs six rows (stride `rs`, contiguous along depth) into one A panel.
#[target_feature(enable = "avx2,fma")]
unsafe fn pack_rows6(src: *const f32, rs: usize, kc: usize, o: *mut f32) {
    let mut p = 0;
    while p + 8 <= kc {
        // The next six rows' line at this depth (the next panel's).
        if p % 16 == 0 {
            for q in MR..2 * MR {
                _mm_prefetch::<_MM_HINT_T0>(src.wrapping_add(q * rs + p).cast());
            }
        }
        let z = _mm256_setzero_ps();
        let l = |q: usize| _mm256_loadu_ps(src.add(q * rs + p));
        let t = transpose8([l(0), l(1), l(2), l(3), l(4), l(5), z, z]);
        for (j, v) in t.iter().enumerate() {
            // 8 floats: 6 of this depth, 2 that the next store overwrites.
            _mm256_storeu_ps(o.add((p + j) * MR), *v);
        }
        p += 8;
    }
    for p in p..kc {
        for q in 0..MR {
            *o.add(p * MR + q) = *src.add(q * rs + p);
        }
    }
}

/// Packs sixteen columns (stride `cs`, contiguous along depth) into
/// sixteen floats of each depth's row of a B panel `nr` floats wide.
#[target_feature(enable = "avx2,fma")]
unsafe fn pack_cols16(src: *const f32, cs: usize, kc: usize, o: *mut f32, nr: usize) {
    let mut p = 0;
    while p + 8 <= kc {
        // The next sixteen columns' line at this depth (the next panel's,
        // or this panel's next sixteen).
        if p % 16 == 0 {
            for c in 16..32 {
                _mm_prefetch::<_MM_HINT_T0>(src.wrapping_add(c * cs + p).cast());
            }
        }
        for h in 0..2 {
            let l = |c: usize| _mm256_loadu_ps(src.add((8 * h + c) * cs + p));
            let t = transpose8([l(0), l(1), l(2), l(3), l(4), l(5), l(6), l(7)]);
            for (j, v) in t.iter().enumerate() {
                _mm256_storeu_ps(o.add((p + j) * nr + 8 * h), *v);
            }
        }
        p += 8;
    }
    for p in p..kc {
        for c in 0..16 {
            *o.add(p * nr + c) = *src.add(c * cs + p);
        }
    }
}
