//! Batched matrix products over strided operands.
//!
//! Each float product runs on one of three kernels, a [`GemmPath`] picked
//! from its sizes and the CPU once per call (tests and benches can force
//! one with [`force_gemm_path`]):
//!
//! - [`GemmPath::Small`]: our direct kernel for small matrices
//!   ([`super::sgemm::small`], x86-64 with AVX2 and FMA; float32 and
//!   float64), no packing and no blocking: batches of small products cost
//!   their arithmetic, not a general GEMM's set-up per matrix.
//! - [`GemmPath::OwnAvx2`]: our BLIS-style float32 kernel ([`super::sgemm`],
//!   AVX2 and FMA) for big products, which splits each product over the
//!   threads itself. Taken on CPUs without AVX-512.
//! - [`GemmPath::OwnAvx512`]: the same kernel with its AVX-512 micro-kernel,
//!   for big float32 products on AVX-512 CPUs other than Intel's (see
//!   [`own_avx512_preferred`] for the measurements).
//! - [`GemmPath::Crate`]: the `gemm` crate (blocked SIMD GEMM with its own
//!   runtime dispatch: with its `x86-v4` feature, which we enable, AVX-512
//!   micro-kernels on CPUs with avx512f, AVX2/FMA ones otherwise). Products
//!   between the two sizes, float64 ones above the small size, and big
//!   float32 ones on Intel's AVX-512 CPUs.
//!
//! All take a row and a column stride per operand: transposed, sliced or
//! broadcast (stride 0) inputs are read in place, never copied (the small
//! kernel copies a B whose rows are not contiguous into a small buffer).
//! int64 uses a plain loop.
//!
//! Threads: a batch of products is split over the threads by whole
//! products, each run on one thread; a single big product (or a few) is
//! split inside. Neither split changes any element's summation order: the
//! kernels' depth blocking depends on the sizes only, never on the thread
//! count or on which rows or columns a thread takes, so results are
//! bitwise identical for every thread count.
//!
//! The files: this one holds the entry points ([`matmul`], [`dot`]) and
//! the split of a batch (or of one big product) over the threads;
//! `path.rs` the choice of kernel ([`GemmPath`], [`gemm_path`],
//! [`force_gemm_path`]); `product.rs` one product (or a run of a batch) on
//! its kernel, with the bounds checks that make the kernels' unsafe calls
//! sound, and the plain loop; `gemv.rs` the matrix-vector products.

use crate::buffer::layout::for_each_offset2;
use crate::buffer::{DType, Dims, Strided};
use crate::{bail, Result};
use gemm::Parallelism;

mod conv;
mod gemv;
mod path;
mod product;

pub use conv::{
    column_blocks, conv_forward, conv_input_grad, conv_weight_grad, COLUMN_BLOCK_BYTES,
    FORWARD_MIN_WIDTH, WEIGHT_GRAD_MIN_WIDTH, WEIGHT_GRAD_PARTS,
};
use gemv::gemv;
pub use path::{
    crate_uses_avx512, force_gemm_path, forced_gemm_path, gemm_path, own_avx512_preferred,
    GemmPath, OWN_AVX512_MIN, OWN_KERNEL_MIN, SMALL_MAX_F32, SMALL_MAX_F64, SMALL_MAX_K,
};
use product::{each_product, naive, MatElem};

/// Below this many multiply-adds per matrix product (about 100^3), a single
/// product runs on the calling thread: below it, waking a second thread
/// costs more than it saves (measured with 2 threads).
pub const GEMM_PAR_THRESHOLD: usize = 1 << 20;

/// Below this many multiply-adds in all, a batch of products runs on the
/// calling thread.
pub const BATCH_PAR_THRESHOLD: usize = 1 << 16;

/// From this many bytes of operands in a batch, the small kernel prefetches
/// each next product's operands (a quarter of this machine's L3; below it
/// the operands mostly come from L3, where prefetching gained nothing).
const PREFETCH_BYTES: usize = 8 << 20;

/// From this many elements, an outer product (a 2-D product with k = 1) is
/// split over the threads in blocks of whole rows of about this many.
const OUTER_PAR_THRESHOLD: usize = 1 << 16;

/// Least multiply-adds per task when a batch is split over the threads.
const BATCH_GRAIN: usize = 1 << 14;

/// Output rows per parallel block are a multiple of this (the height of
/// gemm's f32 AVX2 micro-kernel tile).
const ROW_BLOCK: usize = 16;

/// `a @ b` for `a: [batch.., m, k]`, `b: [batch.., k, n]` with identical
/// batch shapes (callers broadcast them first; stride-0 batch or matrix dims
/// are fine). Both of the same dtype; the result is a fresh contiguous
/// `[batch.., m, n]` tensor.
pub fn matmul(a: &Strided, b: &Strided) -> Result<Strided> {
    check(a, b)?;
    match a.dtype() {
        DType::F32 => matmul_typed::<f32>(a, b, false),
        DType::F64 => matmul_typed::<f64>(a, b, false),
        DType::Bool => bail!(
            not_implemented,
            "\"addmm_impl_cpu_\" not implemented for 'Bool'"
        ),
        // float16/bfloat16: products and sums in float32, each result
        // rounded once, as torch's CPU kernels accumulate in float32.
        low if low.is_reduced_float() => {
            use crate::kernels::copy::contiguous_as;
            let out =
                matmul_typed::<f32>(&contiguous_as::<f32>(a)?, &contiguous_as::<f32>(b)?, false)?;
            crate::dispatch_all!(low, T => contiguous_as::<T>(&out))
        }
        int => crate::dispatch_ints!(int, T => matmul_typed::<T>(a, b, false)),
    }
}

/// [`matmul`] with the plain loop for every dtype: the reference the tests
/// check the kernels against.
pub fn matmul_reference(a: &Strided, b: &Strided) -> Result<Strided> {
    check(a, b)?;
    match a.dtype() {
        DType::F32 => matmul_typed::<f32>(a, b, true),
        DType::F64 => matmul_typed::<f64>(a, b, true),
        DType::Bool => bail!(
            not_implemented,
            "\"addmm_impl_cpu_\" not implemented for 'Bool'"
        ),
        int => crate::dispatch_ints!(int, T => matmul_typed::<T>(a, b, true)),
    }
}

fn check(a: &Strided, b: &Strided) -> Result<()> {
    let (na, nb) = (a.ndim(), b.ndim());
    if na < 2 || nb < 2 || na != nb || a.shape()[..na - 2] != b.shape()[..nb - 2] {
        bail!(
            internal,
            "kernels::matmul: bad operand shapes {:?} and {:?}",
            a.shape(),
            b.shape()
        );
    }
    if a.shape()[na - 1] != b.shape()[nb - 2] {
        bail!(
            internal,
            "kernels::matmul: inner sizes differ: {:?} and {:?}",
            a.shape(),
            b.shape()
        );
    }
    if a.dtype() != b.dtype() {
        bail!(internal, "kernels::matmul: dtypes differ");
    }
    Ok(())
}

/// One matrix operand inside a storage: offset and (row, column) strides.
#[derive(Clone, Copy)]
struct Mat {
    off: usize,
    rs: usize,
    cs: usize,
}

/// Rows per block when one product on `path` is split into row blocks,
/// one per thread, each a single-threaded product; `None` where that could
/// change the arithmetic, or the product is too short to split.
///
/// The plain loop and the small kernel compute each element alone. The
/// `gemm` crate (0.19) picks its depth blocks from k alone up to k = 512
/// (above it, also from whether m and n are both at most 64), a one-row
/// product goes to its matrix-vector path and one of at most 256 elements
/// to its dot-product path: blocks are taken only where none of that
/// differs from the whole product. (Our own kernel splits itself.)
fn row_split(path: Option<GemmPath>, [m, n, k]: [usize; 3], threads: usize) -> Option<usize> {
    if m < 2 * ROW_BLOCK {
        return None;
    }
    let rows = m.div_ceil(threads).next_multiple_of(ROW_BLOCK);
    let last = m - (m - 1) / rows * rows;
    match path {
        Some(GemmPath::OwnAvx2 | GemmPath::OwnAvx512) => None,
        Some(GemmPath::Crate) if k > 512 || last < 2 || last.min(rows) * n <= 256 => None,
        _ => Some(rows),
    }
}

fn matmul_typed<T: MatElem>(a: &Strided, b: &Strided, reference: bool) -> Result<Strided> {
    let nd = a.ndim();
    let (la, lb) = (a.layout(), b.layout());
    let (m, k, n) = (la.shape[nd - 2], la.shape[nd - 1], lb.shape[nd - 1]);
    let batch: Dims = la.shape[..nd - 2].into();
    let mut out_shape = batch.clone();
    out_shape.push(m);
    out_shape.push(n);
    let nbatch: usize = batch.iter().product();
    // The kernels overwrite the output; the reference loop accumulates into
    // zeros.
    let mut out = if reference {
        vec![T::zero(); nbatch * m * n]
    } else {
        crate::buffer::pool::try_buffer::<T>(nbatch.saturating_mul(m).saturating_mul(n))?
    };
    if out.is_empty() {
        return Ok(Strided::contiguous(T::wrap(out), &out_shape));
    }
    // Offsets of every matrix pair, in row-major batch order.
    let mut offs = Vec::with_capacity(nbatch);
    for_each_offset2(
        &batch,
        &la.strides[..nd - 2],
        la.offset,
        &lb.strides[..nd - 2],
        lb.offset,
        |oa, ob| offs.push((oa, ob)),
    );
    let mat = |off, l: &crate::buffer::Layout| Mat {
        off,
        rs: l.strides[nd - 2],
        cs: l.strides[nd - 1],
    };
    let sa = a.storage().read_recursive();
    let sb = b.storage().read_recursive();
    let (da, db) = (sa.as_slice::<T>(), sb.as_slice::<T>());
    let mn = m * n;
    if reference {
        for (dst, &(oa, ob)) in out.chunks_mut(mn).zip(&offs) {
            naive(dst, da, mat(oa, la), db, mat(ob, lb), [m, n, k]);
        }
        drop((sa, sb));
        return Ok(Strided::contiguous(T::wrap(out), &out_shape));
    }
    // torch's bmm of one product runs mm from 400 multiply-adds on (below,
    // its own loop, which starts from +0.0)
    let as_mm = nd == 2 || (nbatch == 1 && m * n >= 400);
    if as_mm && k == 1 && m > 1 && n > 1 && T::DTYPE.is_floating() && forced_gemm_path().is_none() {
        // torch's mm of a column by a row is the outer product: each element
        // the bare product a_i * b_j, so a -0.0 stays -0.0 (a kernel that
        // starts from +0.0 and adds makes it +0.0, as torch's bmm and its
        // products with k >= 2 do). 1/x of the result sees the difference.
        let (am, bm) = (mat(offs[0].0, la), mat(offs[0].1, lb));
        let rows = |first: usize, block: &mut [T]| {
            for (r, row) in block.chunks_mut(n).enumerate() {
                let ai = da[am.off + (first / n + r) * am.rs];
                if bm.cs == 1 {
                    // A contiguous row of b: a loop the compiler vectorises.
                    for (o, &bj) in row.iter_mut().zip(&db[bm.off..bm.off + n]) {
                        *o = ai * bj;
                    }
                } else {
                    for (j, o) in row.iter_mut().enumerate() {
                        *o = ai * db[bm.off + j * bm.cs];
                    }
                }
            }
        };
        if mn >= OUTER_PAR_THRESHOLD && crate::parallel::num_threads() > 1 {
            let per = OUTER_PAR_THRESHOLD.div_ceil(n).max(1);
            crate::parallel::for_each_block_mut(&mut out, per * n, rows);
        } else {
            rows(0, &mut out);
        }
        drop((sa, sb));
        return Ok(Strided::contiguous(T::wrap(out), &out_shape));
    }
    if nbatch == 1 && (n == 1 || m == 1) && T::DTYPE.is_floating() && forced_gemm_path().is_none() {
        // A matrix-vector product (or its transpose, vector @ matrix).
        let (mat_a, x, rows) = if n == 1 {
            (mat(offs[0].0, la), mat(offs[0].1, lb), m)
        } else {
            let (ab, xa) = (mat(offs[0].1, lb), mat(offs[0].0, la));
            let bt = Mat {
                off: ab.off,
                rs: ab.cs,
                cs: ab.rs,
            };
            (
                bt,
                Mat {
                    off: xa.off,
                    rs: xa.cs,
                    cs: 0,
                },
                n,
            )
        };
        let (src, xsrc) = if n == 1 { (da, db) } else { (db, da) };
        if gemv(&mut out, src, mat_a, xsrc, x, [rows, k]) {
            drop((sa, sb));
            return Ok(Strided::contiguous(T::wrap(out), &out_shape));
        }
    }
    let mnk = [m, n, k];
    // One choice of kernel for the whole batch.
    let path = T::path(mnk);
    let product = |dst: &mut [T], i: usize, par: Parallelism| {
        let (oa, ob) = offs[i];
        T::product(dst, da, mat(oa, la), db, mat(ob, lb), mnk, path, par)
    };
    let work = mn * k;
    let total = nbatch.saturating_mul(work);
    let threads = crate::parallel::num_threads();
    let (am0, bm0) = (mat(0, la), mat(0, lb));
    let operand_bytes = nbatch * (m * k + k * n) * std::mem::size_of::<T>();
    let prefetch = operand_bytes >= PREFETCH_BYTES;
    let run = |dsts: &mut [T], first: usize| {
        let offs = &offs[first..first + dsts.len() / mn];
        each_product(dsts, da, am0, db, bm0, offs, mnk, path, prefetch)
    };
    if threads == 1 || total < BATCH_PAR_THRESHOLD || (nbatch == 1 && work < GEMM_PAR_THRESHOLD) {
        run(&mut out, 0);
    } else if nbatch > 1 && (work < GEMM_PAR_THRESHOLD || nbatch >= 4 * threads) {
        // Whole products per task, each on one thread: consecutive groups,
        // about eight per thread (so a helper that starts late still finds
        // some) of at least BATCH_GRAIN multiply-adds.
        let per = nbatch
            .div_ceil(8 * threads)
            .max(BATCH_GRAIN.div_ceil(work))
            .min(nbatch);
        crate::parallel::for_each_block_mut(&mut out, per * mn, |s, dsts| run(dsts, s / mn));
    } else {
        // A few big products, each split over the threads.
        let a_rs = la.strides[nd - 2];
        // The crate's path for a column-major b depends on m (see
        // `product::gemm_call`), so its products are not cut into row
        // blocks whose m would depend on the thread count.
        let b_columns = lb.strides[nd - 2] == 1 && lb.strides[nd - 1] != 1;
        for (i, dst) in out.chunks_mut(mn).enumerate() {
            if matches!(path, Some(GemmPath::OwnAvx2 | GemmPath::OwnAvx512)) {
                // Our own kernel splits the product itself (column bands,
                // or row blocks sharing each packed block of b).
                product(dst, i, Parallelism::Rayon(threads));
            } else if let Some(rows) = row_split(path, mnk, threads).filter(|_| !b_columns) {
                // One block of output rows per thread, each a
                // single-threaded product that packs its own rows of a
                // (and all of b). On few cores this scales better than
                // gemm's own split.
                let (oa, ob) = offs[i];
                crate::parallel::for_each_block_mut(dst, rows * n, |s, block| {
                    let am = mat(oa + (s / n) * a_rs, la);
                    let mnk = [block.len() / n, n, k];
                    T::product(block, da, am, db, mat(ob, lb), mnk, path, Parallelism::None)
                });
            } else {
                // gemm spreads its work over the current rayon pool: ours.
                crate::parallel::install(|| product(dst, i, Parallelism::Rayon(threads)));
            }
        }
    }
    drop((sa, sb));
    Ok(Strided::contiguous(T::wrap(out), &out_shape))
}

/// Dot product of two 1-D tensors of the same dtype and length.
pub fn dot(a: &Strided, b: &Strided) -> Result<Strided> {
    let a2 = a.with_layout(a.layout().unsqueeze(0));
    let b2 = b.with_layout(b.layout().unsqueeze(1));
    let r = matmul(&a2, &b2)?;
    Ok(r.with_layout(crate::buffer::Layout::contiguous(&[])))
}
