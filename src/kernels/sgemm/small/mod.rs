//! Direct products of small matrices (float32 and float64), for batches of
//! them: no packing of A and, when B's rows are contiguous, none of B (a
//! B read across its columns, such as a transposed view, is copied
//! row-major into a small buffer first); no blocking of the depth. Each output element
//! is one accumulator, `fma`-ed over the depth in order from zero, so its
//! value depends on nothing but its row of A and column of B (not on the
//! tile it falls in, nor on which thread runs it).
//!
//! Safety: as for [`sgemm`](super::sgemm), the callers of
//! [`small_gemm`] and [`small_batch`] vouch for the operands and the
//! output. Inside, the tiles read A at rows `< m`, depths `< k`; B at
//! depths `< k` and columns `< n`: in place (columns contiguous) through a
//! masked load for a row's last partial vector, which touches no memory
//! outside its lanes, or packed into a thread-local buffer whose rows are
//! zero-padded to whole vectors; and they store only columns `< n` of rows
//! `< m` of the output (a row's last partial vector lane group by lane
//! group, never a whole vector).
//!
//! The files: this one holds the operand type, the packing buffers, the
//! entry points ([`small_gemm`], [`small_batch`]) and the packing of B;
//! `elem.rs` the element types' vector operations ([`Elem`]); `tile.rs`
//! the loop over the output's tiles and the register-tiled tile itself.

use std::cell::Cell;

mod elem;
mod tile;

pub use elem::Elem;
use tile::kernel;

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
/// AVX2 and FMA are available ([`available`](super::available)); `a` and `b` address
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
