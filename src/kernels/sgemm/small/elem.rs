//! The element types of the small kernel ([`Elem`] for f32 and f64): their
//! AVX2 vector, and the loads, stores, masks and transposes the tiles and
//! the packing of B use.

use super::super::pack::transpose8;
use std::arch::x86_64::*;

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
