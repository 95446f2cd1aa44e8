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
//!   threads itself. Taken on CPUs without AVX-512 only.
//! - [`GemmPath::Crate`]: the `gemm` crate (blocked SIMD GEMM with its own
//!   runtime dispatch: with its `x86-v4` feature, which we enable, AVX-512
//!   micro-kernels on CPUs with avx512f, AVX2/FMA ones otherwise). Products
//!   between the two sizes, float64 ones above the small size, and big
//!   float32 ones on AVX-512 CPUs, where it does about twice our AVX2
//!   kernel's work per cycle.
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

use crate::buffer::layout::for_each_offset2;
use crate::buffer::{DType, Dims, Element, Strided};
use crate::{bail, Result};
use gemm::Parallelism;
use std::sync::atomic::{AtomicU8, Ordering};

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

/// Least multiply-adds per task when a batch is split over the threads.
const BATCH_GRAIN: usize = 1 << 14;

/// Output rows per parallel block are a multiple of this (the height of
/// gemm's f32 AVX2 micro-kernel tile).
const ROW_BLOCK: usize = 16;

/// The kernels a float product can run on (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GemmPath {
    /// Our direct small-matrix kernel (x86-64, AVX2 and FMA).
    Small,
    /// Our BLIS-style AVX2/FMA float32 kernel (x86-64; float64 products
    /// forced onto it run on [`GemmPath::Crate`]).
    OwnAvx2,
    /// The `gemm` crate, with its own dispatch (AVX-512 where the CPU has
    /// avx512f, see [`crate_uses_avx512`]).
    Crate,
}

impl GemmPath {
    pub const ALL: [GemmPath; 3] = [GemmPath::Small, GemmPath::OwnAvx2, GemmPath::Crate];

    /// Whether this CPU runs the path.
    pub fn supported(self) -> bool {
        match self {
            GemmPath::Small | GemmPath::OwnAvx2 => has_avx2_fma(),
            GemmPath::Crate => true,
        }
    }

    /// The paths this CPU runs.
    pub fn supported_paths() -> Vec<GemmPath> {
        Self::ALL.into_iter().filter(|p| p.supported()).collect()
    }

    /// A short name, with the instruction set the crate runs here.
    pub fn name(self) -> &'static str {
        match self {
            GemmPath::Small => "small (AVX2)",
            GemmPath::OwnAvx2 => "own sgemm (AVX2)",
            GemmPath::Crate if crate_uses_avx512() => "gemm crate (AVX-512)",
            GemmPath::Crate => "gemm crate (AVX2)",
        }
    }
}

fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        super::sgemm::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the `gemm` crate runs its AVX-512 micro-kernels on this CPU
/// (it checks avx512f itself, once, as we do here).
pub fn crate_uses_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static V4: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *V4.get_or_init(|| is_x86_feature_detected!("avx512f"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The forced path: 0 for none, else 1 + its index in [`GemmPath::ALL`].
static FORCED: AtomicU8 = AtomicU8::new(0);

/// Makes every float product run on `path` (`None`: the usual choice by
/// size and CPU), process-wide; for tests and benchmarks. Panics if this
/// CPU lacks the path.
pub fn force_gemm_path(path: Option<GemmPath>) {
    let v = match path {
        None => 0,
        Some(p) => {
            assert!(p.supported(), "{p:?} is not supported on this CPU");
            1 + GemmPath::ALL.iter().position(|&q| q == p).expect("listed") as u8
        }
    };
    FORCED.store(v, Ordering::Relaxed);
}

/// The path set by [`force_gemm_path`].
pub fn forced_gemm_path() -> Option<GemmPath> {
    match FORCED.load(Ordering::Relaxed) {
        0 => None,
        v => Some(GemmPath::ALL[v as usize - 1]),
    }
}

/// Largest m and n of a float32 product on the small kernel (unless
/// forced); its depth at most [`SMALL_MAX_K`]. Measured one product per
/// thread on batches (`cargo bench --bench gemm_paths -- small`, `-- mid`):
/// products up to 48 ran at 1.1-3x the next kernel's rate (tiny ones
/// 3-10x: the others' set-up per product dominates), 64-96 about level
/// with our big kernel, from 128 behind it.
pub const SMALL_MAX_F32: usize = 96;

/// Largest depth of a float32 product on the small kernel: its B panel
/// (k x 16 floats) then still fits in the L1 cache (it has no depth blocks).
pub const SMALL_MAX_K: usize = 256;

/// Largest m, n and k of a float64 product on the small kernel: level with
/// the crate at 64, behind it from 96.
pub const SMALL_MAX_F64: usize = 64;

/// Whether a product of these sizes runs on the small kernel by default.
fn small_fits(dtype: DType, [m, n, k]: [usize; 3]) -> bool {
    match dtype {
        DType::F32 => m.max(n) <= SMALL_MAX_F32 && k <= SMALL_MAX_K,
        _ => m.max(n).max(k) <= SMALL_MAX_F64,
    }
}

/// The kernel a float product of `dtype` and sizes `[m, n, k]` runs on
/// (`None` for int64 and bool, which use the plain loop).
pub fn gemm_path(dtype: DType, mnk: [usize; 3]) -> Option<GemmPath> {
    match dtype {
        DType::F32 | DType::F64 => {}
        DType::I64 | DType::Bool => return None,
    }
    if let Some(p) = forced_gemm_path() {
        if p == GemmPath::OwnAvx2 && dtype != DType::F32 {
            return Some(GemmPath::Crate);
        }
        return Some(p);
    }
    Some(if has_avx2_fma() && small_fits(dtype, mnk) {
        GemmPath::Small
    } else if dtype == DType::F32 && own_kernel(mnk) && !crate_uses_avx512() {
        GemmPath::OwnAvx2
    } else {
        GemmPath::Crate
    })
}

/// `a @ b` for `a: [batch.., m, k]`, `b: [batch.., k, n]` with identical
/// batch shapes (callers broadcast them first; stride-0 batch or matrix dims
/// are fine). Both of the same dtype; the result is a fresh contiguous
/// `[batch.., m, n]` tensor.
pub fn matmul(a: &Strided, b: &Strided) -> Result<Strided> {
    check(a, b)?;
    match a.dtype() {
        DType::F32 => Ok(matmul_typed::<f32>(a, b, false)),
        DType::F64 => Ok(matmul_typed::<f64>(a, b, false)),
        DType::I64 => Ok(matmul_typed::<i64>(a, b, false)),
        DType::Bool => bail!(runtime, "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    }
}

/// [`matmul`] with the plain loop for every dtype: the reference the tests
/// check the kernels against.
pub fn matmul_reference(a: &Strided, b: &Strided) -> Result<Strided> {
    check(a, b)?;
    match a.dtype() {
        DType::F32 => Ok(matmul_typed::<f32>(a, b, true)),
        DType::F64 => Ok(matmul_typed::<f64>(a, b, true)),
        DType::I64 => Ok(matmul_typed::<i64>(a, b, true)),
        DType::Bool => bail!(runtime, "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
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

/// Smallest m, n and k that our own f32 kernel takes: below it the `gemm`
/// crate's small-matrix paths are faster (measured single-threaded).
pub const OWN_KERNEL_MIN: usize = 32;

/// Whether an f32 product of this size (not one for the small kernel) is
/// big enough for our own kernel: from 64^3 multiply-adds. Measured one
/// product per thread (`gemm_paths -- mid`, `-- attention`): 128 x 64 x
/// 128 and the attention block's products ran at 1.05-1.2x the crate's
/// rate, 100^3 and 200 x 50 x 200 level.
fn own_kernel([m, n, k]: [usize; 3]) -> bool {
    m.min(n).min(k) >= OWN_KERNEL_MIN && m * n * k >= 1 << 18 && has_avx2_fma()
}

/// Element types the kernel multiplies.
trait MatElem: Element + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> {
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

/// The products `dsts[i] = a_i @ b_i` of a run of a batch, `offs[i]` the
/// operands' offsets, `am` and `bm` their strides (offsets unused), each
/// product on this thread; `prefetch`: the small kernel prefetches each
/// next product's operands (for batches bigger than the caches).
#[allow(clippy::too_many_arguments)]
fn each_product<T: MatElem>(
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
fn small_batch_call<T: Element + super::sgemm::small::Packable>(
    dsts: &mut [T],
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    offs: &[(usize, usize)],
    [m, n, k]: [usize; 3],
    prefetch: bool,
) {
    use super::sgemm::small::{small_batch, Mat as M};
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

impl MatElem for f32 {
    fn path(mnk: [usize; 3]) -> Option<GemmPath> {
        gemm_path(DType::F32, mnk)
    }
    #[cfg(target_arch = "x86_64")]
    fn small_batch(
        dsts: &mut [f32],
        a: &[f32],
        am: Mat,
        b: &[f32],
        bm: Mat,
        offs: &[(usize, usize)],
        mnk: [usize; 3],
        prefetch: bool,
    ) -> Option<()> {
        small_batch_call(dsts, a, am, b, bm, offs, mnk, prefetch);
        Some(())
    }
    fn product(
        dst: &mut [f32],
        a: &[f32],
        am: Mat,
        b: &[f32],
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
            #[cfg(target_arch = "x86_64")]
            Some(GemmPath::OwnAvx2) => own_call(dst, a, am, b, bm, mnk, par),
            _ => gemm_call(dst, a, am, b, bm, mnk, par),
        }
    }
}

impl MatElem for f64 {
    fn path(mnk: [usize; 3]) -> Option<GemmPath> {
        gemm_path(DType::F64, mnk)
    }
    #[cfg(target_arch = "x86_64")]
    fn small_batch(
        dsts: &mut [f64],
        a: &[f64],
        am: Mat,
        b: &[f64],
        bm: Mat,
        offs: &[(usize, usize)],
        mnk: [usize; 3],
        prefetch: bool,
    ) -> Option<()> {
        small_batch_call(dsts, a, am, b, bm, offs, mnk, prefetch);
        Some(())
    }
    fn product(
        dst: &mut [f64],
        a: &[f64],
        am: Mat,
        b: &[f64],
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
            _ => gemm_call(dst, a, am, b, bm, mnk, par),
        }
    }
}

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
fn small_call<T: super::sgemm::small::Packable>(
    dst: &mut [T],
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    [m, n, k]: [usize; 3],
) {
    use super::sgemm::small::{small_gemm, Mat as M};
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

/// An f32 product on our own kernel: on `par`'s threads, or this one.
/// Sizes checked by [`float_sizes_ok`].
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
    assert!(m > 0 && n > 0 && k > 0 && dst.len() >= m * n && has_avx2_fma());
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
    // SAFETY: AVX2 and FMA are available and m, n, k > 0 (asserted); every
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
        Some(GemmPath::OwnAvx2) => None,
        Some(GemmPath::Crate) if k > 512 || last < 2 || last.min(rows) * n <= 256 => None,
        _ => Some(rows),
    }
}

fn matmul_typed<T: MatElem>(a: &Strided, b: &Strided, reference: bool) -> Strided {
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
        crate::buffer::pool::buffer::<T>(nbatch * m * n)
    };
    if out.is_empty() {
        return Strided::contiguous(T::wrap(out), &out_shape);
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
        return Strided::contiguous(T::wrap(out), &out_shape);
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
            return Strided::contiguous(T::wrap(out), &out_shape);
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
        for (i, dst) in out.chunks_mut(mn).enumerate() {
            if path == Some(GemmPath::OwnAvx2) {
                // Our own kernel splits the product itself (column bands,
                // or row blocks sharing each packed block of b).
                product(dst, i, Parallelism::Rayon(threads));
            } else if let Some(rows) = row_split(path, mnk, threads) {
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
    Strided::contiguous(T::wrap(out), &out_shape)
}

/// `dst[i] = sum_p a[i, p] * x[p]` (`m` x `k` matrix `am` in `a`, vector
/// `x.off + p * x.rs` in `xs`) when the matrix has contiguous rows (one dot
/// product per row) or contiguous columns (columns added in order into
/// the output); false, nothing written, for other layouts. Memory-bound:
/// output rows split over the threads in blocks, each element computed the
/// same way whatever the split (bitwise equal across thread counts).
fn gemv<T: MatElem>(dst: &mut [T], a: &[T], am: Mat, xs: &[T], x: Mat, [m, k]: [usize; 2]) -> bool {
    if am.cs != 1 && am.rs != 1 {
        return false;
    }
    let xv: Vec<T> = (0..k).map(|p| xs[x.off + p * x.rs]).collect();
    let mul_add = |acc: T, u: T, v: T| acc + u * v;
    let threads = crate::parallel::num_threads();
    let by_rows = am.cs == 1 && (am.rs != 1 || k >= m);
    let block = if threads == 1 || m * k < BATCH_PAR_THRESHOLD {
        m
    } else if by_rows {
        m.div_ceil(4 * threads).max(16)
    } else {
        // Each block reads its stretch of every column: long stretches.
        m.div_ceil(threads)
    };
    crate::parallel::for_each_block_mut(dst, block, |start, out| {
        if by_rows {
            for (i, o) in out.iter_mut().enumerate() {
                let row = am.off + (start + i) * am.rs;
                *o = super::slices::dot(&a[row..row + k], &xv, T::zero(), &mul_add, &|u, v| u + v);
            }
        } else {
            out.fill(T::zero());
            for (p, &c) in xv.iter().enumerate() {
                let col = am.off + p * am.cs + start;
                super::slices::update(out, &a[col..col + out.len()], &|d, v| d + c * v);
            }
        }
    });
    true
}

/// Dot product of two 1-D tensors of the same dtype and length.
pub fn dot(a: &Strided, b: &Strided) -> Result<Strided> {
    let a2 = a.with_layout(a.layout().unsqueeze(0));
    let b2 = b.with_layout(b.layout().unsqueeze(1));
    let r = matmul(&a2, &b2)?;
    Ok(r.with_layout(crate::buffer::Layout::contiguous(&[])))
}
