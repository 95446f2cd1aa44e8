//! float32 matrix products on x86-64 with AVX2 and FMA, BLIS-style.
//!
//! `C = A @ B` is computed in blocks: a `KC`-deep slice of B's columns is
//! packed into `NR`-wide panels, each `MC`-row block of A into `MR`-high
//! panels, and a 6x16 register-tiled micro-kernel multiplies one A panel by
//! one B panel. With several threads, each takes a band of B's columns and
//! runs it alone (packing all of A itself); for narrow products, or on a
//! pool worker, the packed B block is shared instead and the threads take
//! different row blocks of A. Each output element is summed in the same
//! order whatever the split, so results are bitwise identical across thread
//! counts.
//!
//! Safety: everything here works on raw pointers. [`sgemm`]'s caller
//! vouches for the operands and the output; inside, the packers read only
//! elements `(i, p)` with `i < m`, `p < k` (or `p < k`, `j < n`) of an
//! operand, each packed buffer is sized for its block (plus `SLACK` for the
//! one packer that stores past a panel), and the micro-kernel writes whole
//! 6x16 tiles only where the tile lies inside the output (edge tiles go
//! through a scratch tile). The packers also prefetch lines they will read
//! next (the next panel's, or a few depths on); those addresses may lie past
//! the operand, so they are formed with `wrapping_add` and never
//! dereferenced (a prefetch does not fault). Threads write disjoint column
//! bands or row blocks of the output and read a shared packed B block only
//! after the section that packed it ends.

use std::arch::x86_64::*;
use std::cell::Cell;

/// Rows of the micro-kernel's output tile.
const MR: usize = 6;
/// Columns of the micro-kernel's output tile (two 8-float registers).
const NR: usize = 16;
/// Most depth packed at once. A B panel (KC x NR floats, 32 KB) fills L1;
/// measured against 256, 768 and 1024 on the MLP shapes and 1024^3, 512 cut
/// the depth blocks (each a parallel section and a pass over the output)
/// and was 1-15% faster with two threads, 1-5% with one.
const KC: usize = 512;
/// Most rows of A packed at once: MC x KC floats (144 KB) stay in L2.
const MC: usize = 72;
/// Most columns of B packed at once: KC x NC floats (2 MB) stay in L3.
const NC: usize = 1024;
/// Depths per iteration of the micro-kernel's loop.
const UNROLL: usize = 8;
/// Columns of the output per thread from which the threads split the
/// columns rather than the rows.
const MIN_COLS_PER_THREAD: usize = 64;
/// Depths of B packed per task when its rows are contiguous.
const DEPTH_GROUP: usize = 32;
/// Spare floats after a packed A block: `pack_rows6` stores 8 floats for
/// each depth's 6, the last 2 past its panel.
const SLACK: usize = 8;
/// Most cache lines of the memory queued by the backward engine (the next
/// nodes' saved tensors, see [`super::prefetch`]) that one micro-kernel
/// tile prefetches, one per iteration of its loop. A 256^3 product has
/// about 700 tiles, so a matmul node's backward (two products) covers the
/// next matmul node's two 256 KB operands within its second product.
/// Measured on one thread running such chains over operands in memory
/// (two runs each): 16 lines took 0.97 and 0.97 of the time without, 32
/// lines 0.94 and 0.98; on the wide-graph benchmark's backward, 8 lines
/// 0.99 and 16 lines 0.98 (noise there is about 2%).
const AHEAD_LINES_PER_TILE: usize = 16;
/// How far ahead (in depths) the packers prefetch an operand read across
/// its depths, row by row or column by column.
const PREFETCH_DEPTHS: usize = 8;

/// A matrix operand: its first element and (row, column) strides in floats.
#[derive(Clone, Copy)]
pub struct Operand {
    pub ptr: *const f32,
    pub rs: usize,
    pub cs: usize,
}

/// The output: a row-major matrix with `n` columns.
#[derive(Clone, Copy)]
struct Out(*mut f32);

// SAFETY: the pointers are only dereferenced inside `sgemm`'s calls, whose
// caller guarantees they stay valid and that the output is not otherwise
// accessed; threads write disjoint rows of the output.
unsafe impl Send for Operand {}
unsafe impl Sync for Operand {}
unsafe impl Send for Out {}
unsafe impl Sync for Out {}

impl Out {
    /// The float `i` past the start (a method, so closures capture the
    /// whole `Out`, which is `Sync`, not its raw pointer).
    #[inline(always)]
    unsafe fn at(self, i: usize) -> *mut f32 {
        self.0.add(i)
    }
}

impl Operand {
    #[inline(always)]
    unsafe fn at(&self, i: usize, j: usize) -> *const f32 {
        self.ptr.add(i * self.rs + j * self.cs)
    }
}

/// Whether this CPU runs the kernel (checked once).
pub fn available() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
}

thread_local! {
    /// Each thread's buffer for packed A blocks (taken while in use, so a
    /// nested call on the same thread gets a fresh one instead of aliasing).
    static PACKED_A: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
    /// The calling thread's buffer for packed B blocks.
    static PACKED_B: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
}

/// Runs `f` with a thread-local buffer of at least `len` floats whose first
/// float is 64-byte aligned. Its contents are unspecified.
fn with_buffer<R>(
    key: &'static std::thread::LocalKey<Cell<Vec<f32>>>,
    len: usize,
    f: impl FnOnce(*mut f32) -> R,
) -> R {
    let mut v = key.take();
    if v.len() < len + 16 {
        v = vec![0.0; len + 16];
    }
    let p = v.as_mut_ptr();
    // SAFETY: align_offset(64) of an f32 pointer is at most 15 floats, and
    // the buffer has 16 floats past `len`.
    let r = f(unsafe { p.add(p.align_offset(64)) });
    key.set(v);
    r
}

/// Splits `len` into the fewest parts of at most `max` each, of equal size
/// (rounded up to a multiple of `unit`).
fn part_size(len: usize, max: usize, unit: usize) -> usize {
    let parts = len.div_ceil(max);
    len.div_ceil(parts).next_multiple_of(unit)
}

/// `c[m x n] = a[m x k] @ b[k x n]`, `c` row-major and contiguous. With
/// `threads > 1` the work is spread through `parallel::for_each_index` (the
/// current pool, which should have that many threads).
///
/// # Safety
/// [`available`] is true; `a` and `b` address m x k and k x n valid floats;
/// `c` addresses m * n writable floats that nothing else reads or writes
/// during the call and that do not overlap `a` or `b`; m, n, k > 0.
pub unsafe fn sgemm([m, n, k]: [usize; 3], a: Operand, b: Operand, c: *mut f32, threads: usize) {
    let out = Out(c);
    // On a pool worker (a backward running branches in parallel) the other
    // threads are most likely busy: the row split then packs B once and
    // still lets an idle thread join.
    let on_worker = rayon::current_thread_index().is_some();
    if threads > 1 && n >= threads * MIN_COLS_PER_THREAD && !on_worker {
        // Each thread takes a band of whole B panels and runs it alone: it
        // packs its own part of B and all of A, with no section to wait on
        // in between and no packed data read from another core. Measured
        // alone on the MLP's products with two threads: 6-16% faster than
        // the row split; 256^3 and 1024^3 level.
        let band = n.div_ceil(NR).div_ceil(threads) * NR;
        let bands = n.div_ceil(band);
        crate::parallel::for_each_index(bands, &|t| {
            let j = t * band..n.min((t + 1) * band);
            columns([m, n, k], a, b, out, j, 1)
        });
    } else {
        columns([m, n, k], a, b, out, 0..n, threads)
    }
}

/// Columns `cols` of the product: one thread's band (starting at a
/// multiple of NR) or all of them. With `threads > 1` the packed blocks of
/// B are shared and the threads take row blocks of A.
unsafe fn columns(
    [m, n, k]: [usize; 3],
    a: Operand,
    b: Operand,
    out: Out,
    cols: std::ops::Range<usize>,
    threads: usize,
) {
    let kc_max = part_size(k, KC, 1);
    let nc_max = part_size(cols.len(), NC, NR);
    // Row blocks: in parallel, an equal number per thread.
    let mc = if threads > 1 {
        let per_thread = m.div_ceil(threads);
        part_size(per_thread, MC, MR)
    } else {
        part_size(m, MC, MR)
    };
    let row_blocks = m.div_ceil(mc);
    with_buffer(&PACKED_B, kc_max * nc_max, |pb| {
        let pb = Out(pb);
        for j0 in cols.clone().step_by(nc_max) {
            let nc = nc_max.min(cols.end - j0);
            for p0 in (0..k).step_by(kc_max) {
                let kc = kc_max.min(k - p0);
                // Packing tasks: with rows of b contiguous, groups of depths
                // (each row read once, straight through) and the partial
                // panel; otherwise one task per panel.
                let full = nc / NR;
                let by_rows = b.cs == 1 && full > 0;
                let groups = if by_rows { kc.div_ceil(DEPTH_GROUP) } else { 0 };
                let tasks = groups + nc.div_ceil(NR) - if by_rows { full } else { 0 };
                let pack = |i: usize| {
                    if i < groups {
                        let depths = i * DEPTH_GROUP..kc.min((i + 1) * DEPTH_GROUP);
                        pack_b_rows(b, p0, kc, depths, j0, full, pb.at(0));
                    } else {
                        let panel = i - groups + if by_rows { full } else { 0 };
                        let cols = NR.min(nc - panel * NR);
                        pack_b(b, p0, kc, j0 + panel * NR, cols, pb.at(panel * NR * kc))
                    }
                };
                let compute = |blk: usize| {
                    let i0 = blk * mc;
                    let rows = mc.min(m - i0);
                    with_buffer(&PACKED_A, mc * kc + SLACK, |pa| {
                        pack_a(a, i0, rows, p0, kc, pa);
                        let dst = out.at(i0 * n + j0);
                        block(rows, nc, kc, pa, pb.at(0), dst, n, p0 > 0);
                    })
                };
                if threads > 1 {
                    crate::parallel::for_each_index(tasks, &pack);
                    crate::parallel::for_each_index(row_blocks, &compute);
                } else {
                    (0..tasks).for_each(pack);
                    (0..row_blocks).for_each(compute);
                }
            }
        }
    })
}

/// Packs rows `i0..i0 + rows` and depth `p0..p0 + kc` of `a` into MR-row
/// panels: panel `r` holds, for each depth `p`, its MR rows' values (zeros
/// past the last row).
#[target_feature(enable = "avx2,fma")]
unsafe fn pack_a(a: Operand, i0: usize, rows: usize, p0: usize, kc: usize, out: *mut f32) {
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
/// panels of columns `j0..` of a `b` whose rows are contiguous: each row
/// segment is read once, straight through.
#[target_feature(enable = "avx2,fma")]
unsafe fn pack_b_rows(
    b: Operand,
    p0: usize,
    kc: usize,
    depths: std::ops::Range<usize>,
    j0: usize,
    panels: usize,
    o: *mut f32,
) {
    for p in depths {
        let src = b.at(p0 + p, j0);
        // The row PREFETCH_DEPTHS further on, one cache line per panel.
        let ahead = src.wrapping_add(PREFETCH_DEPTHS * b.rs);
        for j in 0..panels {
            _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(j * NR).cast());
        }
        for j in 0..panels {
            std::ptr::copy_nonoverlapping(src.add(j * NR), o.add(j * NR * kc + p * NR), NR);
        }
    }
}

/// Packs `cols` (<= NR) columns `j0..` of `b`, depth `p0..p0 + kc`: for
/// each depth, NR values (zeros past the last column). Full panels of a `b`
/// with contiguous rows go through [`pack_b_rows`] instead.
#[target_feature(enable = "avx2,fma")]
unsafe fn pack_b(b: Operand, p0: usize, kc: usize, j0: usize, cols: usize, o: *mut f32) {
    let first = b.at(p0, j0);
    if cols == NR && b.rs == 1 {
        pack_cols16(first, b.cs, kc, o);
    } else {
        for p in 0..kc {
            for c in 0..NR {
                *o.add(p * NR + c) = if c < cols { *b.at(p0 + p, j0 + c) } else { 0.0 };
            }
        }
    }
}

/// The 8x8 transpose of eight rows of 8 floats.
#[inline(always)]
unsafe fn transpose8(r: [__m256; 8]) -> [__m256; 8] {
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

/// Packs sixteen columns (stride `cs`, contiguous along depth) into one B
/// panel.
#[target_feature(enable = "avx2,fma")]
unsafe fn pack_cols16(src: *const f32, cs: usize, kc: usize, o: *mut f32) {
    let mut p = 0;
    while p + 8 <= kc {
        // The next sixteen columns' line at this depth (the next panel's).
        if p % 16 == 0 {
            for c in NR..2 * NR {
                _mm_prefetch::<_MM_HINT_T0>(src.wrapping_add(c * cs + p).cast());
            }
        }
        for h in 0..2 {
            let l = |c: usize| _mm256_loadu_ps(src.add((8 * h + c) * cs + p));
            let t = transpose8([l(0), l(1), l(2), l(3), l(4), l(5), l(6), l(7)]);
            for (j, v) in t.iter().enumerate() {
                _mm256_storeu_ps(o.add((p + j) * NR + 8 * h), *v);
            }
        }
        p += 8;
    }
    for p in p..kc {
        for c in 0..NR {
            *o.add(p * NR + c) = *src.add(c * cs + p);
        }
    }
}

/// `c[rows x cols] (+)= packed A block @ packed B block`; `ldc` is c's row
/// stride; `accumulate` adds to c instead of overwriting it.
#[allow(clippy::too_many_arguments)]
unsafe fn block(
    rows: usize,
    cols: usize,
    kc: usize,
    pa: *const f32,
    pb: *const f32,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    let mut ahead = super::prefetch::Cursor::take();
    for j in (0..cols).step_by(NR) {
        let w = NR.min(cols - j);
        let bp = pb.add(j * kc);
        for i in (0..rows).step_by(MR) {
            let h = MR.min(rows - i);
            let ap = pa.add(i * kc);
            let cp = c.add(i * ldc + j);
            let pf = ahead.next_run(AHEAD_LINES_PER_TILE);
            if h == MR && w == NR {
                tile(kc, ap, bp, cp, ldc, accumulate, pf);
            } else {
                // Edge tile: computed whole into a scratch tile, then the
                // valid part is stored (with the same single rounding).
                let mut t = [0f32; MR * NR];
                tile(kc, ap, bp, t.as_mut_ptr(), NR, false, pf);
                for q in 0..h {
                    for x in 0..w {
                        let d = cp.add(q * ldc + x);
                        let v = t[q * NR + x];
                        *d = if accumulate { *d + v } else { v };
                    }
                }
            }
        }
    }
}

/// The micro-kernel: a 6x16 tile of c (+)= A panel @ B panel over depth kc.
/// Its loop also prefetches the `ahead.1` cache lines from address
/// `ahead.0`, one per iteration.
#[target_feature(enable = "avx2,fma")]
unsafe fn tile(
    kc: usize,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
    ahead: (usize, usize),
) {
    let (mut pf, mut pf_left) = ahead;
    let mut acc = [_mm256_setzero_ps(); 2 * MR];
    // One depth: the panels' values at p, multiplied into the tile.
    macro_rules! depth {
        ($p:expr) => {{
            let p = $p;
            let b0 = _mm256_load_ps(b.add(p * NR));
            let b1 = _mm256_load_ps(b.add(p * NR + 8));
            for q in 0..MR {
                let x = _mm256_broadcast_ss(&*a.add(p * MR + q));
                acc[2 * q] = _mm256_fmadd_ps(x, b0, acc[2 * q]);
                acc[2 * q + 1] = _mm256_fmadd_ps(x, b1, acc[2 * q + 1]);
            }
        }};
    }
    // Unrolled by UNROLL depths (the same operations in the same order).
    // Measured in L1 when written: 0.83 of the FMA peak, against 0.74 with
    // one depth per iteration. Measured again (2026-11-22, another phase of
    // the VM): 0.98 of a pure FMA loop, unrolled or not.
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
            lo = _mm256_add_ps(_mm256_loadu_ps(d), lo);
            hi = _mm256_add_ps(_mm256_loadu_ps(d.add(8)), hi);
        }
        _mm256_storeu_ps(d, lo);
        _mm256_storeu_ps(d.add(8), hi);
    }
}

/// Direct products of small matrices (float32 and float64), for batches of
/// them: no packing of A and, when B's rows are contiguous, none of B (a
/// B read across its columns, such as a transposed view, is copied
/// row-major into a small buffer first); no blocking of the depth. Each output element
/// is one accumulator, `fma`-ed over the depth in order from zero, so its
/// value depends on nothing but its row of A and column of B (not on the
/// tile it falls in, nor on which thread runs it).
///
/// Safety: as for [`sgemm`], the callers of
/// [`small_gemm`](small::small_gemm) and [`small_batch`](small::small_batch) vouch for the operands and the
/// output. Inside, the tiles read A at rows `< m`, depths `< k`; B at
/// depths `< k` and columns `< n`: in place (columns contiguous) through a
/// masked load for a row's last partial vector, which touches no memory
/// outside its lanes, or packed into a thread-local buffer whose rows are
/// zero-padded to whole vectors; and they store only columns `< n` of rows
/// `< m` of the output (a row's last partial vector lane group by lane
/// group, never a whole vector).
pub mod small {
    use super::*;

    /// An element type with its AVX2 vector.
    ///
    /// # Safety
    /// Every method needs a CPU with AVX2 and FMA (callers run inside the
    /// kernel's `#[target_feature(enable = "avx2,fma")]` functions), and a
    /// pointer argument must be valid for the elements the method names:
    /// `LANES` of them from `p` (`n` for `store_first`, the mask's lanes
    /// for `load_masked`, one for `splat`), `LANES` runs of `LANES` for
    /// `transpose_block`.
    #[allow(clippy::missing_safety_doc)]
    pub trait Elem: Copy + Default + 'static {
        type V: Copy;
        /// Elements per vector.
        const LANES: usize;
        unsafe fn zero() -> Self::V;
        unsafe fn load(p: *const Self) -> Self::V;
        unsafe fn splat(p: *const Self) -> Self::V;
        /// `a * b + c`, one rounding.
        unsafe fn fma(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
        unsafe fn store(p: *mut Self, v: Self::V);
        /// Stores the first `n` (< LANES) elements of `v`, touching no
        /// memory past them (no masked store: those are slow on AMD).
        unsafe fn store_first(p: *mut Self, v: Self::V, n: usize);
        /// The mask of the first `n` (1..=LANES) lanes.
        unsafe fn mask(n: usize) -> __m256i;
        /// Loads the lanes of `mask` from `p` (zeros elsewhere), touching
        /// no memory outside them (a masked load: fast, unlike the masked
        /// store, on AMD and Intel alike).
        unsafe fn load_masked(p: *const Self, mask: __m256i) -> Self::V;
        /// Transposes a LANES x LANES block: reads LANES runs of LANES
        /// elements (`src + c * cs`, c < LANES) and writes them as the
        /// columns of LANES rows `ldd` apart from `dst`.
        unsafe fn transpose_block(src: *const Self, cs: usize, dst: *mut Self, ldd: usize);
    }

    /// 8 all-ones then 8 zero words: the 8 from `8 - n` mask `n` floats.
    static MASK32: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];
    /// The same for doubles.
    static MASK64: [i64; 8] = [-1, -1, -1, -1, 0, 0, 0, 0];

    impl Elem for f32 {
        type V = __m256;
        const LANES: usize = 8;
        #[inline(always)]
        unsafe fn zero() -> __m256 {
            _mm256_setzero_ps()
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> __m256 {
            _mm256_loadu_ps(p)
        }
        #[inline(always)]
        unsafe fn splat(p: *const f32) -> __m256 {
            _mm256_broadcast_ss(&*p)
        }
        #[inline(always)]
        unsafe fn fma(a: __m256, b: __m256, c: __m256) -> __m256 {
            _mm256_fmadd_ps(a, b, c)
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: __m256) {
            _mm256_storeu_ps(p, v)
        }
        #[inline(always)]
        unsafe fn store_first(p: *mut f32, v: __m256, n: usize) {
            let (mut p, mut n) = (p, n);
            let mut x = _mm256_castps256_ps128(v);
            if n >= 4 {
                _mm_storeu_ps(p, x);
                x = _mm256_extractf128_ps::<1>(v);
                p = p.add(4);
                n -= 4;
            }
            if n >= 2 {
                _mm_storel_epi64(p.cast(), _mm_castps_si128(x));
                x = _mm_movehl_ps(x, x);
                p = p.add(2);
                n -= 2;
            }
            if n == 1 {
                _mm_store_ss(p, x);
            }
        }
        #[inline(always)]
        unsafe fn mask(n: usize) -> __m256i {
            _mm256_loadu_si256(MASK32.as_ptr().add(8 - n).cast())
        }
        #[inline(always)]
        unsafe fn load_masked(p: *const f32, mask: __m256i) -> __m256 {
            _mm256_maskload_ps(p, mask)
        }
        #[inline(always)]
        unsafe fn transpose_block(src: *const f32, cs: usize, dst: *mut f32, ldd: usize) {
            let l = |c: usize| _mm256_loadu_ps(src.add(c * cs));
            let t = transpose8([l(0), l(1), l(2), l(3), l(4), l(5), l(6), l(7)]);
            for (r, v) in t.iter().enumerate() {
                _mm256_storeu_ps(dst.add(r * ldd), *v);
            }
        }
    }

    impl Elem for f64 {
        type V = __m256d;
        const LANES: usize = 4;
        #[inline(always)]
        unsafe fn zero() -> __m256d {
            _mm256_setzero_pd()
        }
        #[inline(always)]
        unsafe fn load(p: *const f64) -> __m256d {
            _mm256_loadu_pd(p)
        }
        #[inline(always)]
        unsafe fn splat(p: *const f64) -> __m256d {
            _mm256_broadcast_sd(&*p)
        }
        #[inline(always)]
        unsafe fn fma(a: __m256d, b: __m256d, c: __m256d) -> __m256d {
            _mm256_fmadd_pd(a, b, c)
        }
        #[inline(always)]
        unsafe fn store(p: *mut f64, v: __m256d) {
            _mm256_storeu_pd(p, v)
        }
        #[inline(always)]
        unsafe fn store_first(p: *mut f64, v: __m256d, n: usize) {
            let (mut p, mut n) = (p, n);
            let mut x = _mm256_castpd256_pd128(v);
            if n >= 2 {
                _mm_storeu_pd(p, x);
                x = _mm256_extractf128_pd::<1>(v);
                p = p.add(2);
                n -= 2;
            }
            if n == 1 {
                _mm_store_sd(p, x);
            }
        }
        #[inline(always)]
        unsafe fn mask(n: usize) -> __m256i {
            _mm256_loadu_si256(MASK64.as_ptr().add(4 - n).cast())
        }
        #[inline(always)]
        unsafe fn load_masked(p: *const f64, mask: __m256i) -> __m256d {
            _mm256_maskload_pd(p, mask)
        }
        #[inline(always)]
        unsafe fn transpose_block(src: *const f64, cs: usize, dst: *mut f64, ldd: usize) {
            let l = |c: usize| _mm256_loadu_pd(src.add(c * cs));
            let (r0, r1, r2, r3) = (l(0), l(1), l(2), l(3));
            let t0 = _mm256_unpacklo_pd(r0, r1);
            let t1 = _mm256_unpackhi_pd(r0, r1);
            let t2 = _mm256_unpacklo_pd(r2, r3);
            let t3 = _mm256_unpackhi_pd(r2, r3);
            _mm256_storeu_pd(dst, _mm256_permute2f128_pd::<0x20>(t0, t2));
            _mm256_storeu_pd(dst.add(ldd), _mm256_permute2f128_pd::<0x20>(t1, t3));
            _mm256_storeu_pd(dst.add(2 * ldd), _mm256_permute2f128_pd::<0x31>(t0, t2));
            _mm256_storeu_pd(dst.add(3 * ldd), _mm256_permute2f128_pd::<0x31>(t1, t3));
        }
    }

    /// A strided operand.
    #[derive(Clone, Copy)]
    pub struct Mat<T> {
        pub ptr: *const T,
        pub rs: usize,
        pub cs: usize,
    }

    /// Most rows of a tile (with two vectors of columns: 12 accumulators,
    /// two of B and one of A in the 16 registers).
    const ROWS: usize = 6;

    thread_local! {
        /// Each thread's buffer for a packed B (taken while in use).
        static PACKED_F32: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
        static PACKED_F64: Cell<Vec<f64>> = const { Cell::new(Vec::new()) };
    }

    /// Element types with a thread-local packing buffer.
    pub trait Packable: Elem + Send + Sync {
        fn with_buffer<R>(len: usize, f: impl FnOnce(&mut [Self]) -> R) -> R;
    }

    fn with_vec<T: Copy + Default, R>(
        key: &'static std::thread::LocalKey<Cell<Vec<T>>>,
        len: usize,
        f: impl FnOnce(&mut [T]) -> R,
    ) -> R {
        let mut v = key.take();
        if v.len() < len {
            v = vec![T::default(); len.next_power_of_two()];
        }
        let r = f(&mut v[..len]);
        key.set(v);
        r
    }

    impl Packable for f32 {
        fn with_buffer<R>(len: usize, f: impl FnOnce(&mut [f32]) -> R) -> R {
            with_vec(&PACKED_F32, len, f)
        }
    }
    impl Packable for f64 {
        fn with_buffer<R>(len: usize, f: impl FnOnce(&mut [f64]) -> R) -> R {
            with_vec(&PACKED_F64, len, f)
        }
    }

    /// `c[m x n] = a[m x k] @ b[k x n]`, `c` row-major with row stride
    /// `ldc` (at least `n`).
    ///
    /// # Safety
    /// AVX2 and FMA are available ([`available`]); `a` and `b` address
    /// m x k and k x n valid elements; `c` addresses an m x n matrix of
    /// writable elements (row stride `ldc`) that nothing else reads or
    /// writes during the call and that overlaps neither operand; m, n,
    /// k > 0.
    pub unsafe fn small_gemm<T: Packable>(
        [m, n, k]: [usize; 3],
        a: Mat<T>,
        b: Mat<T>,
        c: *mut T,
        ldc: usize,
    ) {
        if b.cs == 1 {
            // B in place; a last partial vector of a row is read masked.
            return kernel(m, n, k, a, b.ptr, b.rs, c, ldc, true, Ahead::NONE);
        }
        // B packed row-major, rows padded with zeros to whole vectors.
        let ldb = n.next_multiple_of(T::LANES);
        T::with_buffer(k * ldb, |buf| {
            let bp = buf.as_mut_ptr();
            pack_b(b, k, n, bp, ldb);
            kernel(m, n, k, a, bp, ldb, c, ldc, false, Ahead::NONE)
        })
    }

    /// The products `c_i = a_i @ b_i` for each `(oa, ob) = offs[i]`: `a_i`
    /// and `b_i` start `oa` and `ob` elements past `a.ptr` and `b.ptr`
    /// (with their strides), and `c_i` at `c + i * m * n`, row-major. One
    /// call for a run of a batch: the loop over it stays inside the
    /// kernel's instruction set, with nothing to decide per product.
    ///
    /// # Safety
    /// As [`small_gemm`] for each product; the outputs are disjoint.
    pub unsafe fn small_batch<T: Packable>(
        [m, n, k]: [usize; 3],
        a: Mat<T>,
        b: Mat<T>,
        offs: &[(usize, usize)],
        c: *mut T,
        prefetch: bool,
    ) {
        let at = |o: usize| Mat {
            ptr: a.ptr.add(o),
            ..a
        };
        // With `prefetch`, while a product runs, its tiles prefetch the
        // next product's operands into L2, a few lines each, so that a
        // batch bigger than the caches streams in while the kernel works.
        // Measured on one thread, [512, 64, 64] and [4096, 32, 32] batches
        // (16 and 32 MB of operands): 1.1-1.3x the rate without; batches
        // that stay in L3 ([512, 32, 32]) level or slightly slower.
        // (Prefetching a product's lines all at once before the one
        // before it measured no faster: the prefetches queue up.)
        let ahead = |i: usize| match offs.get(i + 1).filter(|_| prefetch) {
            Some(&(oa, ob)) => Ahead {
                ranges: [
                    lines(a.ptr.wrapping_add(oa), m, k, a.rs, a.cs),
                    lines(b.ptr.wrapping_add(ob), k, n, b.rs, b.cs),
                ],
            },
            None => Ahead::NONE,
        };
        if b.cs == 1 {
            for (i, &(oa, ob)) in offs.iter().enumerate() {
                let (bi, ci) = (b.ptr.add(ob), c.add(i * m * n));
                kernel(m, n, k, at(oa), bi, b.rs, ci, n, true, ahead(i));
            }
        } else {
            let ldb = n.next_multiple_of(T::LANES);
            T::with_buffer(k * ldb, |buf| {
                let bp = buf.as_mut_ptr();
                for (i, &(oa, ob)) in offs.iter().enumerate() {
                    let bi = Mat {
                        ptr: b.ptr.add(ob),
                        ..b
                    };
                    pack_b(bi, k, n, bp, ldb);
                    kernel(
                        m,
                        n,
                        k,
                        at(oa),
                        bp,
                        ldb,
                        c.add(i * m * n),
                        n,
                        false,
                        ahead(i),
                    );
                }
            })
        }
    }

    /// Cache lines for the tiles of a product to prefetch: up to two runs
    /// of consecutive lines, (first line, count). Only ever prefetched,
    /// never dereferenced, so they may lie anywhere.
    #[derive(Clone, Copy)]
    struct Ahead {
        ranges: [(*const i8, usize); 2],
    }

    impl Ahead {
        const NONE: Ahead = Ahead {
            ranges: [(std::ptr::null(), 0); 2],
        };
    }

    /// The cache lines of a rows x cols matrix at `p` (strides `rs`, `cs`)
    /// when it lies compactly in memory (its span at most twice its size;
    /// else none).
    fn lines<T>(p: *const T, rows: usize, cols: usize, rs: usize, cs: usize) -> (*const i8, usize) {
        let size = std::mem::size_of::<T>();
        let span = ((rows - 1) * rs + (cols - 1) * cs + 1) * size;
        if span > 2 * rows * cols * size {
            return (std::ptr::null(), 0);
        }
        let first = p as usize & !63;
        let end = p as usize + span;
        (first as *const i8, (end - first).div_ceil(64))
    }

    /// Packs k x n `b` (columns not contiguous) row-major into `bp` (row
    /// stride `ldb`, a whole number of vectors), zeros past column n.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn pack_b<T: Elem>(b: Mat<T>, k: usize, n: usize, bp: *mut T, ldb: usize) {
        if b.rs == 1 {
            // Columns contiguous (a transposed matrix): LANES x LANES
            // blocks transposed in registers, the edges one by one.
            pack_transposed(b.ptr, b.cs, k, n, bp, ldb);
        } else {
            for p in 0..k {
                for j in 0..n {
                    *bp.add(p * ldb + j) = *b.ptr.add(p * b.rs + j * b.cs);
                }
            }
        }
        for p in 0..k {
            for j in n..ldb {
                *bp.add(p * ldb + j) = T::default();
            }
        }
    }

    /// Writes the k x n matrix whose columns are the contiguous runs
    /// `src + j * cs` (j < n, k elements each) row-major to `dst` (row
    /// stride `ldd`).
    #[target_feature(enable = "avx2,fma")]
    unsafe fn pack_transposed<T: Elem>(
        src: *const T,
        cs: usize,
        k: usize,
        n: usize,
        dst: *mut T,
        ldd: usize,
    ) {
        let l = T::LANES;
        let (kf, nf) = (k / l * l, n / l * l);
        for j in (0..nf).step_by(l) {
            for p in (0..kf).step_by(l) {
                T::transpose_block(src.add(j * cs + p), cs, dst.add(p * ldd + j), ldd);
            }
        }
        for j in 0..n {
            let from = if j < nf { kf } else { 0 };
            for p in from..k {
                *dst.add(p * ldd + j) = *src.add(j * cs + p);
            }
        }
    }

    /// [`small_gemm`] with B's rows contiguous, `ldb` apart: each readable
    /// up to column `n` when `masked` (the last partial vector of a row is
    /// read through a mask), else up to `n` rounded up to whole vectors.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn kernel<T: Elem>(
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
}
