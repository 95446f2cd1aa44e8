//! float32 matrix products on x86-64 with AVX2 and FMA (or AVX-512),
//! BLIS-style.
//!
//! `C = A @ B` is computed in blocks: a `kc`-deep slice of B's columns is
//! packed into `nr`-wide panels, each `MC`-row block of A into `MR`-high
//! panels, and a register-tiled micro-kernel multiplies one A panel by one
//! B panel: 6x16 tiles with AVX2, 6x32 with AVX-512 ([`Isa`]; the rest of
//! the driver and the packers are shared). With several threads, each takes a band of B's columns and
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
//! tiles only where the tile lies inside the output (edge tiles go
//! through a scratch tile). The packers also prefetch lines they will read
//! next (the next panel's, or a few depths on); those addresses may lie past
//! the operand, so they are formed with `wrapping_add` and never
//! dereferenced (a prefetch does not fault). Threads write disjoint column
//! bands or row blocks of the output and read a shared packed B block only
//! after the section that packed it ends.
//!
//! The files: this one holds the blocking constants, the operand types,
//! the packing buffers and the driver ([`sgemm`], which splits the product
//! over the threads and walks its blocks); `pack.rs` packs blocks of A and
//! B into panels; `kernel.rs` holds the micro-kernels and the loop
//! over one packed block's tiles; [`small`] is the direct kernel for small
//! matrices (float32 and float64) that batches of products run on.

use std::cell::Cell;

mod kernel;
mod pack;
pub mod small;

use kernel::block;
use pack::{pack_a, pack_b, pack_b_rows};

/// Rows of the micro-kernel's output tile.
const MR: usize = 6;
/// The instruction set of the micro-kernel, which sets the width of the
/// output tile and of the packed B panels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// AVX2 and FMA: 6x16 tiles (two 8-float registers per row).
    Avx2,
    /// AVX-512F: 6x32 tiles (two 16-float registers per row).
    Avx512,
}

impl Isa {
    /// Columns of the micro-kernel's output tile and of a packed B panel.
    pub const fn nr(self) -> usize {
        match self {
            Isa::Avx2 => 16,
            Isa::Avx512 => 32,
        }
    }

    /// Most depth packed at once. AVX2: a B panel (512 x 16 floats, 32 KB)
    /// fills L1; measured against 256, 768 and 1024 on the MLP shapes and
    /// 1024^3, 512 cut the depth blocks (each a parallel section and a pass
    /// over the output) and was 1-15% faster with two threads, 1-5% with
    /// one. AVX-512: the same 32 KB panel, 256 x 32 floats.
    const fn kc(self) -> usize {
        match self {
            Isa::Avx2 => 512,
            Isa::Avx512 => KC_AVX512,
        }
    }

    /// Whether this CPU runs the kernel (checked once).
    pub fn available(self) -> bool {
        match self {
            Isa::Avx2 => available(),
            Isa::Avx512 => {
                static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
                *OK.get_or_init(|| available() && is_x86_feature_detected!("avx512f"))
            }
        }
    }
}

/// [`Isa::kc`] of the AVX-512 kernel.
const KC_AVX512: usize = 256;
/// Most rows of A packed at once: MC x kc floats (144 KB at kc 512) stay
/// in L2.
const MC: usize = 72;
/// Most columns of B packed at once: kc x NC floats (2 MB at kc 512) stay
/// in L3.
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

/// Where the rows of a B operand start (evenly spaced in [`Operand`], the
/// one kind the kernel is given today).
pub trait BRows: Copy + Send + Sync {
    /// Row `p`'s first element.
    ///
    /// # Safety
    /// `p` is a row of the operand (`p < k`).
    unsafe fn row(&self, p: usize) -> *const f32;
    /// Where row `p + ahead` starts, for a prefetch: never dereferenced,
    /// and it may lie past the operand.
    fn row_ahead(&self, p: usize, ahead: usize) -> *const f32;
    /// The column stride in floats.
    fn cs(&self) -> usize;
    /// Whether each column is contiguous (row stride 1).
    fn columns_contiguous(&self) -> bool;
}

impl BRows for Operand {
    #[inline(always)]
    unsafe fn row(&self, p: usize) -> *const f32 {
        self.ptr.add(p * self.rs)
    }
    #[inline(always)]
    fn row_ahead(&self, p: usize, ahead: usize) -> *const f32 {
        self.ptr.wrapping_add((p + ahead) * self.rs)
    }
    #[inline(always)]
    fn cs(&self) -> usize {
        self.cs
    }
    #[inline(always)]
    fn columns_contiguous(&self) -> bool {
        self.rs == 1
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

/// `c[m x n] = a[m x k] @ b[k x n]` on `isa`'s micro-kernel, `c` row-major
/// and contiguous. With `threads > 1` the work is spread through
/// `parallel::for_each_index` (the current pool, which should have that
/// many threads).
///
/// # Safety
/// `isa.available()` is true; `a` and `b` address m x k and k x n valid
/// floats;
/// `c` addresses m * n writable floats that nothing else reads or writes
/// during the call and that do not overlap `a` or `b`; m, n, k > 0.
pub unsafe fn sgemm<B: BRows>(
    isa: Isa,
    [m, n, k]: [usize; 3],
    a: Operand,
    b: B,
    c: *mut f32,
    threads: usize,
) {
    let nr = isa.nr();
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
        let band = n.div_ceil(nr).div_ceil(threads) * nr;
        let bands = n.div_ceil(band);
        crate::parallel::for_each_index(bands, &|t| {
            let j = t * band..n.min((t + 1) * band);
            columns(isa, [m, n, k], a, b, out, j, 1)
        });
    } else {
        columns(isa, [m, n, k], a, b, out, 0..n, threads)
    }
}

/// Columns `cols` of the product: one thread's band (starting at a
/// multiple of `isa.nr()`) or all of them. With `threads > 1` the packed
/// blocks of B are shared and the threads take row blocks of A.
unsafe fn columns<B: BRows>(
    isa: Isa,
    [m, n, k]: [usize; 3],
    a: Operand,
    b: B,
    out: Out,
    cols: std::ops::Range<usize>,
    threads: usize,
) {
    let nr = isa.nr();
    let kc_max = part_size(k, isa.kc(), 1);
    let nc_max = part_size(cols.len(), NC, nr);
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
                let full = nc / nr;
                let by_rows = b.cs() == 1 && full > 0;
                let groups = if by_rows { kc.div_ceil(DEPTH_GROUP) } else { 0 };
                let tasks = groups + nc.div_ceil(nr) - if by_rows { full } else { 0 };
                let pack = |i: usize| {
                    if i < groups {
                        let depths = i * DEPTH_GROUP..kc.min((i + 1) * DEPTH_GROUP);
                        pack_b_rows(b, p0, kc, depths, j0, full, nr, pb.at(0));
                    } else {
                        let panel = i - groups + if by_rows { full } else { 0 };
                        let cols = nr.min(nc - panel * nr);
                        pack_b(b, p0, kc, j0 + panel * nr, cols, nr, pb.at(panel * nr * kc))
                    }
                };
                let compute = |blk: usize| {
                    let i0 = blk * mc;
                    let rows = mc.min(m - i0);
                    with_buffer(&PACKED_A, mc * kc + SLACK, |pa| {
                        pack_a(a, i0, rows, p0, kc, pa);
                        let dst = out.at(i0 * n + j0);
                        block(isa, rows, nc, kc, pa, pb.at(0), dst, n, p0 > 0);
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
