//! One product, or a run of a batch, on its kernel: [`MatElem`] gives each
//! element type its kernels (the small one, our own float32 one, the
//! `gemm` crate, or the plain loop), and the `*_call` functions check that
//! every element the kernel reads or writes lies in its slice before the
//! unsafe call.

#[cfg(target_arch = "x86_64")]
use super::path::has_avx2_fma;
use super::{gemm_path, GemmPath, Mat};
use crate::buffer::{DType, Element};
#[cfg(target_arch = "x86_64")]
use crate::kernels::sgemm::Isa;
use gemm::Parallelism;

/// Element types the kernel multiplies.
pub(super) trait MatElem:
    Element + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self>
{
    /// The kernel for a product of this size (`None`: the plain loop).
    fn path(_mnk: [usize; 3]) -> Option<GemmPath> {
        None
    }

    /// `dst[m x n] = a[m x k] @ b[k x n]` (dst contiguous row-major) on
    /// `path` (from [`MatElem::path`]; kernels that split a product take
    /// `par`'s threads, the others ignore it).
    #[allow(clippy::too_many_arguments)]
    fn product(
        dst: &mut [Self],
        a: &[Self],
        am: Mat,
        b: &[Self],
        bm: Mat,
        mnk: [usize; 3],
        path: Option<GemmPath>,
        par: Parallelism,
    ) {
        let _ = (path, par);
        naive(dst, a, am, b, bm, mnk)
    }

    /// [`each_product`] on the small kernel, where the type has it (`None`:
    /// it does not, nothing done). m, n, k > 0.
    #[cfg(target_arch = "x86_64")]
    #[allow(clippy::too_many_arguments)]
    fn small_batch(
        dsts: &mut [Self],
        a: &[Self],
        am: Mat,
        b: &[Self],
        bm: Mat,
        offs: &[(usize, usize)],
        mnk: [usize; 3],
        prefetch: bool,
    ) -> Option<()> {
        let _ = (dsts, a, am, b, bm, offs, mnk, prefetch);
        None
    }
}

impl MatElem for i64 {}
impl MatElem for i32 {}
impl MatElem for i16 {}
impl MatElem for i8 {}
impl MatElem for u8 {}

/// The products `dsts[i] = a_i @ b_i` of a run of a batch, `offs[i]` the
/// operands' offsets, `am` and `bm` their strides (offsets unused), each
/// product on this thread; `prefetch`: the small kernel prefetches each
/// next product's operands (for batches bigger than the caches).
#[allow(clippy::too_many_arguments)]
pub(super) fn each_product<T: MatElem>(
    dsts: &mut [T],
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    offs: &[(usize, usize)],
    mnk: [usize; 3],
    path: Option<GemmPath>,
    prefetch: bool,
) {
    let [m, n, _] = mnk;
    assert_eq!(dsts.len(), offs.len() * m * n);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = prefetch; // only the x86-64 small kernel prefetches
    #[cfg(target_arch = "x86_64")]
    if path == Some(GemmPath::Small) && mnk.iter().all(|&d| d > 0) {
        if let Some(r) = T::small_batch(dsts, a, am, b, bm, offs, mnk, prefetch) {
            return r;
        }
    }
    for (dst, &(oa, ob)) in dsts.chunks_mut(m * n).zip(offs) {
        let am = Mat { off: oa, ..am };
        let bm = Mat { off: ob, ..bm };
        T::product(dst, a, am, b, bm, mnk, path, Parallelism::None);
    }
}

/// [`each_product`] on the small kernel, for its element types.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
fn small_batch_call<T: Element + super::super::sgemm::small::Packable>(
    dsts: &mut [T],
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    offs: &[(usize, usize)],
    [m, n, k]: [usize; 3],
    prefetch: bool,
) {
    use super::super::sgemm::small::{small_batch, Mat as M};
    assert!(m > 0 && n > 0 && k > 0 && dsts.len() == offs.len() * m * n && has_avx2_fma());
    for &(oa, ob) in offs {
        assert_in_bounds(
            a.len(),
            Mat { off: oa, ..am },
            b.len(),
            Mat { off: ob, ..bm },
            [m, n, k],
        );
    }
    let am = M {
        ptr: a.as_ptr(),
        rs: am.rs,
        cs: am.cs,
    };
    let bm = M {
        ptr: b.as_ptr(),
        rs: bm.rs,
        cs: bm.cs,
    };
    // SAFETY: AVX2 and FMA are available and m, n, k > 0 (asserted); each
    // product's operands (m x k from a[oa], k x n from b[ob], non-negative
    // strides) lie in their slices (asserted above); `dsts` holds the m * n
    // outputs of every product, consecutive, exclusively borrowed, so
    // nothing else touches them and they overlap neither operand.
    unsafe { small_batch([m, n, k], am, bm, offs, dsts.as_mut_ptr(), prefetch) }
}

/// `MatElem` for a float type: the small kernel, our own GEMM where `own`
/// names its call (float32), else the `gemm` crate.
macro_rules! float_mat_elem {
    ($t:ty, $dt:ident $(, own: $own:ident)?) => {
        impl MatElem for $t {
            fn path(mnk: [usize; 3]) -> Option<GemmPath> {
                gemm_path(DType::$dt, mnk)
            }
            #[cfg(target_arch = "x86_64")]
            fn small_batch(
                dsts: &mut [$t],
                a: &[$t],
                am: Mat,
                b: &[$t],
                bm: Mat,
                offs: &[(usize, usize)],
                mnk: [usize; 3],
                prefetch: bool,
            ) -> Option<()> {
                small_batch_call(dsts, a, am, b, bm, offs, mnk, prefetch);
                Some(())
            }
            fn product(
                dst: &mut [$t],
                a: &[$t],
                am: Mat,
                b: &[$t],
                bm: Mat,
                mnk: [usize; 3],
                path: Option<GemmPath>,
                par: Parallelism,
            ) {
                if !float_sizes_ok(dst, a, am, b, bm, mnk) {
                    return;
                }
                match path {
                    #[cfg(target_arch = "x86_64")]
                    Some(GemmPath::Small) => small_call(dst, a, am, b, bm, mnk),
                    $(
                        #[cfg(target_arch = "x86_64")]
                        Some(GemmPath::OwnAvx2) => $own(Isa::Avx2, dst, a, am, b, bm, mnk, par),
                        #[cfg(target_arch = "x86_64")]
                        Some(GemmPath::OwnAvx512) => $own(Isa::Avx512, dst, a, am, b, bm, mnk, par),
                    )?
                    _ => gemm_call(dst, a, am, b, bm, mnk, par),
                }
            }
        }
    };
}

float_mat_elem!(f32, F32, own: own_call);
float_mat_elem!(f64, F64);

/// Handles empty products (m or n zero: nothing to write; k zero: zeros)
/// and returns whether there is a product left to run, having checked that
/// `dst` holds it and that the operands' elements lie in their slices.
fn float_sizes_ok<T: Element>(
    dst: &mut [T],
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    [m, n, k]: [usize; 3],
) -> bool {
    assert!(dst.len() >= m * n);
    if m == 0 || n == 0 {
        return false;
    }
    if k == 0 {
        dst[..m * n].fill(T::zero());
        return false;
    }
    assert_in_bounds(a.len(), am, b.len(), bm, [m, n, k]);
    true
}

/// A product on the small kernel, on this thread. Sizes checked by
/// [`float_sizes_ok`].
#[cfg(target_arch = "x86_64")]
fn small_call<T: super::super::sgemm::small::Packable>(
    dst: &mut [T],
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    [m, n, k]: [usize; 3],
) {
    use super::super::sgemm::small::{small_gemm, Mat as M};
    assert!(has_avx2_fma());
    let op = |s: &[T], x: Mat| M {
        ptr: s[x.off..].as_ptr(),
        rs: x.rs,
        cs: x.cs,
    };
    // SAFETY: AVX2 and FMA are available (asserted); m, n, k > 0 and every
    // element of a (m x k from a[am.off], non-negative strides) and b
    // (k x n from b[bm.off]) lies in its slice (float_sizes_ok); `dst`
    // holds m * n elements (row stride n), exclusively borrowed, so nothing
    // else touches it and it overlaps neither operand.
    unsafe { small_gemm([m, n, k], op(a, am), op(b, bm), dst.as_mut_ptr(), n) }
}

/// An f32 product on our own kernel with `isa`'s micro-kernel: on `par`'s
/// threads, or this one. Sizes checked by [`float_sizes_ok`].
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
fn own_call(
    isa: Isa,
    dst: &mut [f32],
    a: &[f32],
    am: Mat,
    b: &[f32],
    bm: Mat,
    [m, n, k]: [usize; 3],
    par: Parallelism,
) {
    use super::super::sgemm::{sgemm, Operand};
    assert!(m > 0 && n > 0 && k > 0 && dst.len() >= m * n && isa.available());
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
    // SAFETY: isa's instructions are available and m, n, k > 0 (asserted); every
    // element of a (m x k from a[am.off], non-negative strides) and b
    // (k x n from b[bm.off]) lies in its slice (asserted above); `dst` holds
    // m * n floats, exclusively borrowed, so nothing else touches it and it
    // overlaps neither operand.
    unsafe {
        sgemm(
            isa,
            [m, n, k],
            op(a, am),
            op(b, bm),
            dst.as_mut_ptr(),
            threads,
        )
    }
}

/// Panics unless the last element each operand of an m x k by k x n
/// product reads lies inside its slice (m, n, k > 0; strides non-negative).
fn assert_in_bounds(a_len: usize, am: Mat, b_len: usize, bm: Mat, [m, n, k]: [usize; 3]) {
    assert!(am.off + (m - 1) * am.rs + (k - 1) * am.cs < a_len);
    assert!(bm.off + (k - 1) * bm.rs + (n - 1) * bm.cs < b_len);
}

/// The plain i-k-j loop (the integer dtypes, and the reference the tests check gemm with).
pub(super) fn naive<T: Element + std::ops::Add<Output = T> + std::ops::Mul<Output = T>>(
    dst: &mut [T],
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    [m, n, k]: [usize; 3],
) {
    let int = T::DTYPE.is_integral();
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

/// A product on the `gemm` crate. Sizes checked by [`float_sizes_ok`].
fn gemm_call<T: Element + std::ops::Add<Output = T> + std::ops::Mul<Output = T>>(
    dst: &mut [T],
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    [m, n, k]: [usize; 3],
    par: Parallelism,
) {
    assert!(m > 0 && n > 0 && k > 0 && dst.len() >= m * n);
    assert_in_bounds(a.len(), am, b.len(), bm, [m, n, k]);
    // A column-major b (a transposed view: `x @ w.t()`, `g @ cols^T` in a
    // convolution's backward) with a row-major destination makes the crate
    // (which turns the product around to write rows) pack b one element at
    // a time: 16 x 1024 x 27 ran at a fifth of the row-major rate, 32 x 1024
    // x 144 at a sixth. Instead, where a is column-major too or has 16 to n
    // rows, the crate writes a column-major scratch (packing a's m x k at
    // most), transposed into `dst` after; else, from 32 rows of a, b is
    // transposed first (k x n vector moves; below 32 rows the crate's own
    // packing costs less than that copy).
    let b_columns = bm.cs != 1 && bm.rs == 1 && m > 1 && n > 1 && k > 1;
    if b_columns && (am.rs == 1 || (16..=n).contains(&m)) {
        let mut tmp = crate::buffer::pool::buffer::<T>(m * n);
        // SAFETY: `tmp` holds m * n elements, exclusively borrowed, written
        // column-major (row stride 1, column stride m); the operands are
        // checked as for the call below.
        unsafe { crate_gemm(tmp.as_mut_ptr(), (1, m), a, am, b, bm, [m, n, k], par) };
        super::super::transpose::gather_transposed(&tmp, 0, m, n, m, dst);
        crate::buffer::pool::recycle(tmp);
        return;
    }
    if b_columns && m >= 32 {
        let mut bt = crate::buffer::pool::buffer::<T>(k * n);
        super::super::transpose::gather_transposed(b, bm.off, bm.cs, n, k, &mut bt);
        let bm = Mat {
            off: 0,
            rs: n,
            cs: 1,
        };
        gemm_call(dst, a, am, &bt, bm, [m, n, k], par);
        crate::buffer::pool::recycle(bt);
        return;
    }
    // SAFETY: `dst` holds m*n writable elements laid out row-major (row
    // stride n, column stride 1), exclusively borrowed.
    unsafe { crate_gemm(dst.as_mut_ptr(), (n, 1), a, am, b, bm, [m, n, k], par) }
}

/// Whether a product of an element of `a` (m x k) and one of `b` (k x n)
/// can be a zero: some element is below 2^-62 (float32) or 2^-510
/// (float64) in magnitude, a zero or a factor whose product may underflow
/// (two factors above it multiply to a normal number).
fn may_have_zero_product<T: Element>(
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    [m, n, k]: [usize; 3],
) -> bool {
    let tiny = if T::DTYPE == DType::F32 {
        2f64.powi(-62)
    } else {
        2f64.powi(-510)
    };
    let small = |x: T| x.to_f64().abs() < tiny; // (NaN: false, a NaN product)
    (0..m).any(|i| (0..k).any(|p| small(a[am.off + i * am.rs + p * am.cs])))
        || (0..k).any(|p| (0..n).any(|j| small(b[bm.off + p * bm.rs + j * bm.cs])))
}

/// `dst = a @ b` on the `gemm` crate, `dst`'s element (i, j) at
/// `i * dst_rs + j * dst_cs`.
///
/// # Safety
/// `dst` addresses the m x n elements its strides name, writable, that
/// nothing else reads or writes during the call and that overlap neither
/// operand. Every element of a (m x k at a[am.off], non-negative strides)
/// and b (k x n at b[bm.off]) lies inside its slice (`assert_in_bounds`).
/// m, n, k > 0. T is f32 or f64, which gemm supports; read_dst = false:
/// dst is only written (alpha unused), except where `from_zero` (below).
#[allow(clippy::too_many_arguments)]
unsafe fn crate_gemm<T: Element>(
    dst: *mut T,
    (dst_rs, dst_cs): (usize, usize),
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    [m, n, k]: [usize; 3],
    par: Parallelism,
) {
    // For k <= 2 the crate's `gevv` starts each sum from its first product
    // (`fma(a1, b1, a0 * b0)`), and so do its matrix-vector loops (one row
    // or column), so products that are all -0.0 sum to -0.0; BLAS (torch's
    // mm, bmm) starts from +0.0 and gives +0.0. Started from a zeroed dst
    // (read_dst, alpha 1) the same loops compute `fma(a1, b1, fma(a0, b0,
    // +0.0))` and `dst + sum`: +0.0 there, the same bits elsewhere (x + 0.0
    // is x). A vector output is small next to the matrix read; for k <= 2
    // with m, n > 1 (dst as big as it gets) only operands that can make a
    // zero product pay the zeroing pass.
    let from_zero = if k <= 2 && m > 1 && n > 1 {
        may_have_zero_product(a, am, b, bm, [m, n, k])
    } else {
        k <= 2 || m <= 1 || n <= 1
    };
    if from_zero {
        for i in 0..m {
            let row = dst.add(i * dst_rs);
            if dst_cs == 1 {
                std::ptr::write_bytes(row, 0, n);
            } else {
                for j in 0..n {
                    row.add(j * dst_cs).write(T::zero());
                }
            }
        }
    }
    gemm::gemm::<T>(
        m,
        n,
        k,
        dst,
        dst_cs as isize,
        dst_rs as isize,
        from_zero,
        a.as_ptr().add(am.off),
        am.cs as isize,
        am.rs as isize,
        b.as_ptr().add(bm.off),
        bm.cs as isize,
        bm.rs as isize,
        if from_zero { T::one() } else { T::zero() },
        T::one(),
        false,
        false,
        false,
        par,
    )
}
