//! The micro-kernels of [`sgemm`](super::sgemm): [`block`] multiplies one
//! packed A block by one packed B block, tile by tile, and `tile` computes
//! one 6x16 tile in registers with AVX2 (`tile512` one 6x32 tile with
//! AVX-512); edge tiles go through a scratch tile.

use super::{Isa, AHEAD_LINES_PER_TILE, MR, UNROLL};
use std::arch::x86_64::*;

/// The widest tile, in floats (AVX-512's).
const MAX_NR: usize = 32;

/// `c[rows x cols] (+)= packed A block @ packed B block` on `isa`'s
/// micro-kernel (B packed in `isa.nr()`-wide panels); `ldc` is c's row
/// stride; `accumulate` adds to c instead of overwriting it.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn block(
    isa: Isa,
    rows: usize,
    cols: usize,
    kc: usize,
    pa: *const f32,
    pb: *const f32,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    let nr = isa.nr();
    let mut ahead = super::super::prefetch::Cursor::take();
    let tile = |ap, bp, cp, ldc, accumulate, pf| match isa {
        Isa::Avx2 => tile(kc, ap, bp, cp, ldc, accumulate, pf),
        Isa::Avx512 => tile512(kc, ap, bp, cp, ldc, accumulate, pf),
    };
    for j in (0..cols).step_by(nr) {
        let w = nr.min(cols - j);
        let bp = pb.add(j * kc);
        for i in (0..rows).step_by(MR) {
            let h = MR.min(rows - i);
            let ap = pa.add(i * kc);
            let cp = c.add(i * ldc + j);
            let pf = ahead.next_run(AHEAD_LINES_PER_TILE);
            if h == MR && w == nr {
                tile(ap, bp, cp, ldc, accumulate, pf);
            } else {
                // Edge tile: computed whole into a scratch tile, then the
                // valid part is stored (with the same single rounding).
                let mut t = [0f32; MR * MAX_NR];
                tile(ap, bp, t.as_mut_ptr(), nr, false, pf);
                for q in 0..h {
                    for x in 0..w {
                        let d = cp.add(q * ldc + x);
                        let v = t[q * nr + x];
                        *d = if accumulate { *d + v } else { v };
                    }
                }
            }
        }
    }
}

/// A micro-kernel: a 6 x (2 W) tile of c (+)= A panel @ B panel over depth
/// kc, the B panel 2 W floats wide (W floats per register; two registers
/// of accumulators per row). Its loop also prefetches the `ahead.1` cache
/// lines from address `ahead.0`, one per iteration. One body for both
/// instruction sets, with their intrinsics passed in.
macro_rules! micro_kernel {
    (
        $(#[$doc:meta])* $name:ident, $features:literal, $w:literal,
        $zero:ident, $load:ident, $loadu:ident, $storeu:ident, $splat:ident, $fma:ident, $add:ident
    ) => {
        $(#[$doc])*
        #[target_feature(enable = $features)]
        unsafe fn $name(
            kc: usize,
            a: *const f32,
            b: *const f32,
            c: *mut f32,
            ldc: usize,
            accumulate: bool,
            ahead: (usize, usize),
        ) {
            const NR: usize = 2 * $w;
            let (mut pf, mut pf_left) = ahead;
            let mut acc = [$zero(); 2 * MR];
            // One depth: the panels' values at p, multiplied into the tile.
            macro_rules! depth {
                ($p:expr) => {{
                    let p = $p;
                    let b0 = $load(b.add(p * NR));
                    let b1 = $load(b.add(p * NR + $w));
                    for q in 0..MR {
                        let x = $splat(*a.add(p * MR + q));
                        acc[2 * q] = $fma(x, b0, acc[2 * q]);
                        acc[2 * q + 1] = $fma(x, b1, acc[2 * q + 1]);
                    }
                }};
            }
            // Unrolled by UNROLL depths (the same operations in the same
            // order). Measured (AVX2) in L1 when written: 0.83 of the FMA
            // peak, against 0.74 with one depth per iteration. Measured
            // again (2026-11-22, another phase of the VM): 0.98 of a pure
            // FMA loop, unrolled or not.
            let mut p = 0;
            while p + UNROLL <= kc {
                if pf_left > 0 {
                    // A hint: never faults, whatever the address.
                    _mm_prefetch::<_MM_HINT_T1>(pf as *const i8);
                    pf += 64;
                    pf_left -= 1;
                }
                for u in 0..UNROLL {
                    depth!(p + u);
                }
                p += UNROLL;
            }
            for p in p..kc {
                depth!(p);
            }
            for q in 0..MR {
                let d = c.add(q * ldc);
                let (mut lo, mut hi) = (acc[2 * q], acc[2 * q + 1]);
                if accumulate {
                    lo = $add($loadu(d), lo);
                    hi = $add($loadu(d.add($w)), hi);
                }
                $storeu(d, lo);
                $storeu(d.add($w), hi);
            }
        }
    };
}

micro_kernel!(
    /// The AVX2 micro-kernel: 6x16 tiles.
    tile, "avx2,fma", 8,
    _mm256_setzero_ps, _mm256_load_ps, _mm256_loadu_ps, _mm256_storeu_ps,
    _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps
);

micro_kernel!(
    /// The AVX-512 micro-kernel: 6x32 tiles (12 accumulators; per depth two
    /// loads of B and six broadcasts of A for twelve FMAs).
    tile512, "avx512f,avx2,fma", 16,
    _mm512_setzero_ps, _mm512_load_ps, _mm512_loadu_ps, _mm512_storeu_ps,
    _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps
);
