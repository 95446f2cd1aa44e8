//! Batched matrix products over strided operands.
//!
//! f32 products of at least [`OWN_KERNEL_MIN`] in each dimension go to our
//! own kernel ([`super::sgemm`], x86-64 with AVX2 and FMA), which splits
//! each product over the threads itself. Other f32 and f64 products go to the
//! `gemm` crate (blocked SIMD GEMM with runtime CPU dispatch). Both take a
//! row and a column stride per operand: transposed, sliced or broadcast
//! (stride 0) inputs are read in place, never copied. int64 uses a plain
//! loop.

use crate::tensor::layout::for_each_offset2;
use crate::tensor::{DType, Dims, Element, Tensor};
use crate::{bail, Result};
use gemm::Parallelism;

/// Below this many multiply-adds per matrix product (about 100^3), gemm runs
/// on the calling thread: below it, waking a second thread costs more than
/// it saves (measured with 2 threads).
pub const GEMM_PAR_THRESHOLD: usize = 1 << 20;

/// Output rows per parallel block are a multiple of this (the height of
/// gemm's f32 AVX2 micro-kernel tile).
const ROW_BLOCK: usize = 16;

/// `a @ b` for `a: [batch.., m, k]`, `b: [batch.., k, n]` with identical
/// batch shapes (callers broadcast them first; stride-0 batch or matrix dims
/// are fine). Both of the same dtype; the result is a fresh contiguous
/// `[batch.., m, n]` tensor.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check(a, b)?;
    match a.dtype() {
        DType::F32 => Ok(matmul_typed::<f32>(a, b, false)),
        DType::F64 => Ok(matmul_typed::<f64>(a, b, false)),
        DType::I64 => Ok(matmul_typed::<i64>(a, b, false)),
        DType::Bool => bail!(runtime, "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    }
}

/// [`matmul`] with the plain loop for every dtype: the reference the tests
/// check the gemm path against.
pub fn matmul_reference(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check(a, b)?;
    match a.dtype() {
        DType::F32 => Ok(matmul_typed::<f32>(a, b, true)),
        DType::F64 => Ok(matmul_typed::<f64>(a, b, true)),
        DType::I64 => Ok(matmul_typed::<i64>(a, b, true)),
        DType::Bool => bail!(runtime, "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    }
}

fn check(a: &Tensor, b: &Tensor) -> Result<()> {
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

/// Smallest m, n and k that our own f32 kernel takes: below it the `gemm`
/// crate's small-matrix paths are faster (measured single-threaded).
pub const OWN_KERNEL_MIN: usize = 32;

/// Whether an f32 product of this size runs on our own kernel.
fn own_kernel([m, n, k]: [usize; 3]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        m.min(n).min(k) >= OWN_KERNEL_MIN && m * n * k >= 1 << 21 && super::sgemm::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (m, n, k);
        false
    }
}

/// Element types the kernel multiplies.
trait MatElem: Element + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> {
    /// Whether `product` with `Parallelism::Rayon` splits a product of this
    /// size over the threads itself.
    fn splits_itself(_mnk: [usize; 3]) -> bool {
        false
    }

    /// `dst[m x n] = a[m x k] @ b[k x n]` (dst contiguous row-major).
    fn product(
        dst: &mut [Self],
        a: &[Self],
        am: Mat,
        b: &[Self],
        bm: Mat,
        mnk: [usize; 3],
        par: Parallelism,
    ) {
        let _ = par;
        naive(dst, a, am, b, bm, mnk)
    }
}

impl MatElem for i64 {}
impl MatElem for f32 {
    fn splits_itself(mnk: [usize; 3]) -> bool {
        own_kernel(mnk)
    }
    fn product(
        dst: &mut [f32],
        a: &[f32],
        am: Mat,
        b: &[f32],
        bm: Mat,
        mnk: [usize; 3],
        par: Parallelism,
    ) {
        #[cfg(target_arch = "x86_64")]
        if own_kernel(mnk) {
            return own_call(dst, a, am, b, bm, mnk, par);
        }
        gemm_call(dst, a, am, b, bm, mnk, par)
    }
}

/// An f32 product on our own kernel: on `par`'s threads, or this one.
#[cfg(target_arch = "x86_64")]
fn own_call(
    dst: &mut [f32],
    a: &[f32],
    am: Mat,
    b: &[f32],
    bm: Mat,
    [m, n, k]: [usize; 3],
    par: Parallelism,
) {
    use super::sgemm::{sgemm, Operand};
    assert!(m > 0 && n > 0 && k > 0 && dst.len() >= m * n);
    assert_in_bounds(a.len(), am, b.len(), bm, [m, n, k]);
    let threads = match par {
        Parallelism::None => 1,
        Parallelism::Rayon(t) => t.max(1),
    };
    let op = |s: &[f32], x: Mat| Operand {
        ptr: s[x.off..].as_ptr(),
        rs: x.rs,
        cs: x.cs,
    };
    // SAFETY: own_kernel checked AVX2 and FMA and that m, n, k > 0; every
    // element of a (m x k from a[am.off], non-negative strides) and b
    // (k x n from b[bm.off]) lies in its slice (asserted above); `dst` holds
    // m * n floats, exclusively borrowed, so nothing else touches it and it
    // overlaps neither operand.
    unsafe { sgemm([m, n, k], op(a, am), op(b, bm), dst.as_mut_ptr(), threads) }
}

/// Panics unless the last element each operand of an m x k by k x n
/// product reads lies inside its slice (m, n, k > 0; strides non-negative).
fn assert_in_bounds(a_len: usize, am: Mat, b_len: usize, bm: Mat, [m, n, k]: [usize; 3]) {
    assert!(am.off + (m - 1) * am.rs + (k - 1) * am.cs < a_len);
    assert!(bm.off + (k - 1) * bm.rs + (n - 1) * bm.cs < b_len);
}

impl MatElem for f64 {
    fn product(
        dst: &mut [f64],
        a: &[f64],
        am: Mat,
        b: &[f64],
        bm: Mat,
        mnk: [usize; 3],
        par: Parallelism,
    ) {
        gemm_call(dst, a, am, b, bm, mnk, par)
    }
}

/// The plain i-k-j loop (int64, and the reference the tests check gemm with).
fn naive<T: Element + std::ops::Add<Output = T> + std::ops::Mul<Output = T>>(
    dst: &mut [T],
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    [m, n, k]: [usize; 3],
) {
    let int = T::DTYPE == DType::I64;
    for i in 0..m {
        let row = &mut dst[i * n..(i + 1) * n];
        row.fill(T::zero());
        for p in 0..k {
            let x = a[am.off + i * am.rs + p * am.cs];
            let boff = bm.off + p * bm.rs;
            if int {
                // Wrapping arithmetic, as torch's integer matmul.
                for (j, o) in row.iter_mut().enumerate() {
                    let y = b[boff + j * bm.cs];
                    *o = T::from_i64(o.to_i64().wrapping_add(x.to_i64().wrapping_mul(y.to_i64())));
                }
            } else {
                for (j, o) in row.iter_mut().enumerate() {
                    *o = *o + x * b[boff + j * bm.cs];
                }
            }
        }
    }
}

fn gemm_call<T: Element + std::ops::Add<Output = T> + std::ops::Mul<Output = T>>(
    dst: &mut [T],
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    [m, n, k]: [usize; 3],
    par: Parallelism,
) {
    assert!(dst.len() >= m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        dst[..m * n].fill(T::zero());
        return;
    }
    assert_in_bounds(a.len(), am, b.len(), bm, [m, n, k]);
    // SAFETY: `dst` holds m*n writable elements laid out row-major (row
    // stride n, column stride 1), exclusively borrowed. Every element of lhs
    // (m x k at a[am.off] with strides rs, cs) and rhs (k x n at b[bm.off])
    // lies inside its slice (asserted above; strides are non-negative), and
    // neither aliases `dst` (a fresh buffer). T is f32 or f64, which gemm
    // supports. read_dst=false: dst is only written (alpha unused).
    unsafe {
        gemm::gemm::<T>(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr().add(am.off),
            am.cs as isize,
            am.rs as isize,
            b.as_ptr().add(bm.off),
            bm.cs as isize,
            bm.rs as isize,
            T::zero(),
            T::one(),
            false,
            false,
            false,
            par,
        )
    }
}

fn matmul_typed<T: MatElem>(a: &Tensor, b: &Tensor, reference: bool) -> Tensor {
    let nd = a.ndim();
    let (la, lb) = (a.layout(), b.layout());
    let (m, k, n) = (la.shape[nd - 2], la.shape[nd - 1], lb.shape[nd - 1]);
    let batch: Dims = la.shape[..nd - 2].into();
    let mut out_shape = batch.clone();
    out_shape.push(m);
    out_shape.push(n);
    let nbatch: usize = batch.iter().product();
    // gemm overwrites the output (read_dst = false); the reference loop
    // accumulates into zeros.
    let mut out = if reference {
        vec![T::zero(); nbatch * m * n]
    } else {
        crate::tensor::pool::buffer::<T>(nbatch * m * n)
    };
    if out.is_empty() {
        return Tensor::from_data(T::wrap(out), &out_shape);
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
    let mat = |off, l: &crate::tensor::Layout| Mat {
        off,
        rs: l.strides[nd - 2],
        cs: l.strides[nd - 1],
    };
    let sa = a.storage().read_recursive();
    let sb = b.storage().read_recursive();
    let (da, db) = (sa.as_slice::<T>(), sb.as_slice::<T>());
    let work = m * n * k;
    if reference {
        for (dst, &(oa, ob)) in out.chunks_mut(m * n).zip(&offs) {
            naive(dst, da, mat(oa, la), db, mat(ob, lb), [m, n, k]);
        }
        drop((sa, sb));
        return Tensor::from_data(T::wrap(out), &out_shape);
    }
    let threads = crate::parallel::num_threads();
    if nbatch > 1 && work < GEMM_PAR_THRESHOLD && nbatch * work >= GEMM_PAR_THRESHOLD && threads > 1
    {
        // Many small products: one per task, each single-threaded.
        crate::parallel::for_each_block_mut(&mut out, m * n, |s, dst| {
            let (oa, ob) = offs[s / (m * n)];
            let mnk = [m, n, k];
            T::product(
                dst,
                da,
                mat(oa, la),
                db,
                mat(ob, lb),
                mnk,
                Parallelism::None,
            )
        });
    } else if work >= GEMM_PAR_THRESHOLD && threads > 1 && T::splits_itself([m, n, k]) {
        // Our own kernel splits the product over the threads itself
        // (column bands, or row blocks sharing each packed block of b).
        for (dst, &(oa, ob)) in out.chunks_mut(m * n).zip(&offs) {
            let par = Parallelism::Rayon(threads);
            T::product(dst, da, mat(oa, la), db, mat(ob, lb), [m, n, k], par);
        }
    } else if work >= GEMM_PAR_THRESHOLD && threads > 1 && m >= 2 * ROW_BLOCK {
        // One block of output rows per thread, each a single-threaded
        // product that packs its own rows of a (and all of b). On few cores
        // this scales better than gemm's own split.
        let rows = m.div_ceil(threads).next_multiple_of(ROW_BLOCK);
        let a_rs = la.strides[nd - 2];
        for (dst, &(oa, ob)) in out.chunks_mut(m * n).zip(&offs) {
            crate::parallel::for_each_block_mut(dst, rows * n, |s, block| {
                let am = mat(oa + (s / n) * a_rs, la);
                let mnk = [block.len() / n, n, k];
                T::product(block, da, am, db, mat(ob, lb), mnk, Parallelism::None)
            });
        }
    } else {
        let par = if work >= GEMM_PAR_THRESHOLD && threads > 1 {
            Parallelism::Rayon(threads)
        } else {
            Parallelism::None
        };
        let run = |out: &mut Vec<T>| {
            for (dst, &(oa, ob)) in out.chunks_mut(m * n).zip(&offs) {
                T::product(dst, da, mat(oa, la), db, mat(ob, lb), [m, n, k], par);
            }
        };
        if matches!(par, Parallelism::None) {
            run(&mut out);
        } else {
            // gemm spreads its work over the current rayon pool: ours.
            crate::parallel::install(|| run(&mut out));
        }
    }
    drop((sa, sb));
    Tensor::from_data(T::wrap(out), &out_shape)
}

/// Dot product of two 1-D tensors of the same dtype and length.
pub fn dot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let a2 = a.alias_with_layout(a.layout().unsqueeze(0));
    let b2 = b.alias_with_layout(b.layout().unsqueeze(1));
    let r = matmul(&a2, &b2)?;
    Ok(Tensor::from_storage(
        r.storage().clone(),
        crate::tensor::Layout::contiguous(&[]),
    ))
}
