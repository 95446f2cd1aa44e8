//! float16 and bfloat16 to and from float32: the [`Reduced`] trait, its
//! SIMD conversions (F16C for float16, shifts for bfloat16) and the fused
//! loops that convert in registers.

use super::Widened;
use crate::buffer::Element;
use crate::kernels::elementwise::{RowMap, RowZip};
use crate::kernels::simd::dispatched;
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

/// Elements converted per step: two float32 buffers of this size stay in L1.
pub(super) const CHUNK: usize = 256;

/// A 2-byte float computed in float32.
pub trait Reduced: Element {
    fn widen(src: &[Self], dst: &mut [f32]);
    fn narrow(src: &[f32], dst: &mut [Self]);
    fn to_f32(self) -> f32;
    fn from_f32(v: f32) -> Self;
    /// `out[i] = f(x[i])` computed in float32, converting in registers.
    fn map_fused<F: Fn(f32) -> f32 + Sync>(x: &[Self], out: &mut [Self], f: &F);
    /// `out[i] = f(a[i], b[i])` computed in float32, converting in
    /// registers.
    fn zip_fused<F: Fn(f32, f32) -> f32 + Sync>(a: &[Self], b: &[Self], out: &mut [Self], f: &F);
    /// The float32 sum of `x`, converting in registers: the bits of
    /// [`crate::kernels::slices::fold_wide`] over the widened run.
    fn sum_run(x: &[Self]) -> f32;
    /// `acc[i] += x[i]` in float32, converting in registers.
    fn add_rows(acc: &mut [f32], x: &[Self]);
    /// `acc[i] += x[r * stride + i]` for each row `r < rows` in order: the
    /// bits of [`Reduced::add_rows`] row by row.
    fn add_row_group(acc: &mut [f32], x: &[Self], stride: usize, rows: usize) {
        for r in 0..rows {
            Self::add_rows(acc, &x[r * stride..r * stride + acc.len()]);
        }
    }
    /// `dst[i] = f(dst[i], src[i])`: [`Reduced::zip_fused`] by pieces
    /// into a small buffer, copied back.
    fn update_fused<F: Fn(f32, f32) -> f32 + Sync>(dst: &mut [Self], src: &[Self], f: &F) {
        let mut tmp = [Self::default(); CHUNK];
        for (d, s) in dst.chunks_mut(CHUNK).zip(src.chunks(CHUNK)) {
            let t = &mut tmp[..d.len()];
            Self::zip_fused(d, s, t, f);
            d.copy_from_slice(t);
        }
    }
    /// `dst[i] = f(dst[i])`, as [`Reduced::update_fused`].
    fn apply_fused<F: Fn(f32) -> f32 + Sync>(dst: &mut [Self], f: &F) {
        let mut tmp = [Self::default(); CHUNK];
        for d in dst.chunks_mut(CHUNK) {
            let t = &mut tmp[..d.len()];
            Self::map_fused(d, t, f);
            d.copy_from_slice(t);
        }
    }
}

impl Reduced for f16 {
    #[inline]
    fn widen(src: &[Self], dst: &mut [f32]) {
        f16_widen(src, dst)
    }
    #[inline]
    fn narrow(src: &[f32], dst: &mut [Self]) {
        f16_narrow(src, dst)
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
    fn map_fused<F: Fn(f32) -> f32 + Sync>(x: &[Self], out: &mut [Self], f: &F) {
        #[cfg(target_arch = "x86_64")]
        if has_f16c() {
            // SAFETY: the CPU has AVX2, FMA and F16C (checked above).
            return unsafe { f16c_map(x, out, f) };
        }
        chunked_map(x, out, f)
    }
    fn zip_fused<F: Fn(f32, f32) -> f32 + Sync>(a: &[Self], b: &[Self], out: &mut [Self], f: &F) {
        #[cfg(target_arch = "x86_64")]
        if has_f16c() {
            // SAFETY: the CPU has AVX2, FMA and F16C (checked above).
            return unsafe { f16c_zip(a, b, out, f) };
        }
        chunked_zip(a, b, out, f)
    }
    fn sum_run(x: &[Self]) -> f32 {
        #[cfg(target_arch = "x86_64")]
        if has_f16c() {
            // SAFETY: the CPU has AVX2, FMA and F16C (checked above).
            return unsafe { f16c_sum(x) };
        }
        crate::kernels::slices::map_fold_wide(x, 0.0, &|h: f16| h.to_f32(), &|a, b| a + b)
    }
    fn add_rows(acc: &mut [f32], x: &[Self]) {
        #[cfg(target_arch = "x86_64")]
        if has_f16c() {
            // SAFETY: the CPU has AVX2, FMA and F16C (checked above).
            return unsafe { f16c_add_rows(acc, x) };
        }
        for (a, h) in acc.iter_mut().zip(x) {
            *a += h.to_f32();
        }
    }
    fn add_row_group(acc: &mut [f32], x: &[Self], stride: usize, rows: usize) {
        let w = acc.len();
        #[cfg(target_arch = "x86_64")]
        if has_f16c() && (rows == 0 || (rows - 1) * stride + w <= x.len()) {
            // SAFETY: the CPU has AVX2, FMA and F16C (checked above), and
            // every row's w elements lie inside x (checked above).
            return unsafe { f16c_add_row_group(acc, x, stride, rows) };
        }
        for r in 0..rows {
            Self::add_rows(acc, &x[r * stride..r * stride + w]);
        }
    }
}

impl Reduced for bf16 {
    #[inline]
    fn widen(src: &[Self], dst: &mut [f32]) {
        bf16_widen(src, dst)
    }
    #[inline]
    fn narrow(src: &[f32], dst: &mut [Self]) {
        bf16_narrow(src, dst)
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        bf16::from_f32(v)
    }
    fn map_fused<F: Fn(f32) -> f32 + Sync>(x: &[Self], out: &mut [Self], f: &F) {
        bf16_map(x, out, f)
    }
    fn zip_fused<F: Fn(f32, f32) -> f32 + Sync>(a: &[Self], b: &[Self], out: &mut [Self], f: &F) {
        bf16_zip(a, b, out, f)
    }
    fn sum_run(x: &[Self]) -> f32 {
        crate::kernels::slices::map_fold_wide(x, 0.0, &bf16_to_f32, &|a, b| a + b)
    }
    fn add_rows(acc: &mut [f32], x: &[Self]) {
        bf16_add_rows(acc, x)
    }
}

/// bfloat16 to float32 (exact): the bits as the high half.
#[inline(always)]
pub(super) fn bf16_to_f32(h: bf16) -> f32 {
    f32::from_bits((h.to_bits() as u32) << 16)
}

/// float32 to bfloat16, rounded to nearest even (a NaN stays a quiet NaN),
/// as `bf16::from_f32`, in integer operations the compiler vectorises.
#[inline(always)]
pub(super) fn bf16_from_f32(x: f32) -> bf16 {
    // Selected in 32 bits, then narrowed once (one narrowing per vector).
    let b = x.to_bits();
    let rounded = b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16;
    let nan = (b >> 16) | 0x0040;
    bf16::from_bits(if x.is_nan() { nan } else { rounded } as u16)
}

dispatched! {
    /// [`Reduced::map_fused`] for bfloat16: conversions and `f` in one
    /// vectorised loop.
    pub fn bf16_map / bf16_map_plain / bf16_map_avx2<F>(x: &[bf16], out: &mut [bf16], f: &F)
    where F: Fn(f32) -> f32
    {
        for (d, &s) in out.iter_mut().zip(x) {
            *d = bf16_from_f32(f(bf16_to_f32(s)));
        }
    }
}

dispatched! {
    /// [`Reduced::zip_fused`] for bfloat16.
    pub fn bf16_zip / bf16_zip_plain / bf16_zip_avx2<F>(a: &[bf16], b: &[bf16], out: &mut [bf16], f: &F)
    where F: Fn(f32, f32) -> f32
    {
        for ((d, &x), &y) in out.iter_mut().zip(a).zip(b) {
            *d = bf16_from_f32(f(bf16_to_f32(x), bf16_to_f32(y)));
        }
    }
}

dispatched! {
    /// [`Reduced::add_rows`] for bfloat16.
    pub fn bf16_add_rows / bf16_add_rows_plain / bf16_add_rows_avx2<>(acc: &mut [f32], x: &[bf16]) {
        for (a, &h) in acc.iter_mut().zip(x) {
            *a += bf16_to_f32(h);
        }
    }
}

/// Eight float16 values (the first 8 of `c`) as float32, by F16C.
///
/// # Safety
/// The CPU has F16C and AVX, and `c` holds at least 8 elements.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn f16c_load8(c: &[f16]) -> [f32; 8] {
    use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm_loadu_si128};
    debug_assert!(c.len() >= 8);
    // SAFETY: (the caller's) 8 halves (16 bytes) readable at c; an
    // unaligned load; __m256 and [f32; 8] have one size and every bit
    // pattern is valid in both.
    unsafe {
        std::mem::transmute(_mm256_cvtph_ps(_mm_loadu_si128(
            c.as_ptr() as *const __m128i
        )))
    }
}

/// [`Reduced::sum_run`] for float16 with F16C: `load_fold_wide`'s order,
/// each block of 8 converted in one instruction.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn f16c_sum(x: &[f16]) -> f32 {
    // SAFETY: this function runs only where the CPU has F16C and AVX, and
    // `load_fold_wide` hands `load8` blocks of exactly 8 elements.
    let load8 = |c: &[f16]| unsafe { f16c_load8(c) };
    crate::kernels::slices::load_fold_wide(x, 0.0, &load8, &|h: f16| h.to_f32(), &|a, b| a + b)
}

/// [`Reduced::add_rows`] for float16 with F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn f16c_add_rows(acc: &mut [f32], x: &[f16]) {
    use std::arch::x86_64::{
        __m128i, _mm256_add_ps, _mm256_cvtph_ps, _mm256_loadu_ps, _mm256_storeu_ps, _mm_loadu_si128,
    };
    let n = acc.len().min(x.len());
    let (acc, x) = (&mut acc[..n], &x[..n]);
    let mut blocks = acc.chunks_exact_mut(8);
    for (a, c) in (&mut blocks).zip(x.chunks_exact(8)) {
        // SAFETY: the CPU has F16C and AVX (this function's features); `a`
        // and `c` hold 8 elements each (unaligned loads and store).
        unsafe {
            let v = _mm256_cvtph_ps(_mm_loadu_si128(c.as_ptr() as *const __m128i));
            let sum = _mm256_add_ps(_mm256_loadu_ps(a.as_ptr()), v);
            _mm256_storeu_ps(a.as_mut_ptr(), sum);
        }
    }
    let done = n - blocks.into_remainder().len();
    for (a, h) in acc[done..].iter_mut().zip(&x[done..]) {
        *a += h.to_f32();
    }
}

/// [`Reduced::add_row_group`] for float16 with F16C: each block of 8
/// accumulators stays in a register while the rows are added into it in
/// order (the same sums as row by row, without a load and store of the
/// accumulators per row).
///
/// # Safety
/// The CPU has AVX2, FMA and F16C, and `x` holds `(rows - 1) * stride +
/// acc.len()` elements (when `rows > 0`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn f16c_add_row_group(acc: &mut [f32], x: &[f16], stride: usize, rows: usize) {
    use std::arch::x86_64::{
        __m128i, _mm256_add_ps, _mm256_cvtph_ps, _mm256_loadu_ps, _mm256_storeu_ps, _mm_loadu_si128,
    };
    let w = acc.len();
    let full = w - w % 8;
    let p = x.as_ptr();
    for j in (0..full).step_by(8) {
        // SAFETY: j + 8 <= w: inside acc and, for each row r < rows, inside
        // x (the caller's bound); unaligned loads and store.
        unsafe {
            let mut a = _mm256_loadu_ps(acc.as_ptr().add(j));
            for r in 0..rows {
                let h = _mm_loadu_si128(p.add(r * stride + j) as *const __m128i);
                a = _mm256_add_ps(a, _mm256_cvtph_ps(h));
            }
            _mm256_storeu_ps(acc.as_mut_ptr().add(j), a);
        }
    }
    for (j, a) in acc.iter_mut().enumerate().skip(full) {
        for r in 0..rows {
            *a += x[r * stride + j].to_f32();
        }
    }
}

/// [`Reduced::map_fused`] through float32 buffers ([`Widened`]; float16 on
/// a CPU without F16C).
pub(super) fn chunked_map<H: Reduced, F: Fn(f32) -> f32 + Sync>(x: &[H], out: &mut [H], f: &F) {
    RowMap::run(&Widened(&crate::kernels::elementwise::Each(f)), x, out)
}

/// [`Reduced::zip_fused`] through float32 buffers ([`Widened`]).
pub(super) fn chunked_zip<H: Reduced, F: Fn(f32, f32) -> f32 + Sync>(
    a: &[H],
    b: &[H],
    out: &mut [H],
    f: &F,
) {
    RowZip::run(&Widened(&crate::kernels::elementwise::Each2(f)), a, b, out)
}

/// [`Reduced::map_fused`] for float16 with F16C: eight elements loaded
/// and converted, `f` applied lane by lane (the compiler vectorises it:
/// the values stay in registers), rounded back and stored.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn f16c_map<F: Fn(f32) -> f32>(x: &[f16], out: &mut [f16], f: &F) {
    use std::arch::x86_64::{
        __m128i, _mm256_cvtph_ps, _mm256_cvtps_ph, _mm256_loadu_ps, _mm_loadu_si128,
        _mm_storeu_si128, _MM_FROUND_TO_NEAREST_INT,
    };
    let n = out.len().min(x.len());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n: 8 halves (16 bytes) read from x and written
        // to out, in bounds; unaligned loads/stores. __m256 and [f32; 8]
        // have one size and every bit pattern is valid in both.
        unsafe {
            let h = _mm_loadu_si128(x.as_ptr().add(i) as *const __m128i);
            let v: [f32; 8] = std::mem::transmute(_mm256_cvtph_ps(h));
            let r: [f32; 8] = std::array::from_fn(|j| f(v[j]));
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(r.as_ptr()));
            _mm_storeu_si128(out.as_mut_ptr().add(i) as *mut __m128i, h);
        }
        i += 8;
    }
    for (d, s) in out[i..n].iter_mut().zip(&x[i..n]) {
        *d = f16::from_f32(f(s.to_f32()));
    }
}

/// [`Reduced::zip_fused`] for float16 with F16C, as [`f16c_map`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn f16c_zip<F: Fn(f32, f32) -> f32>(a: &[f16], b: &[f16], out: &mut [f16], f: &F) {
    use std::arch::x86_64::{
        __m128i, _mm256_cvtph_ps, _mm256_cvtps_ph, _mm256_loadu_ps, _mm_loadu_si128,
        _mm_storeu_si128, _MM_FROUND_TO_NEAREST_INT,
    };
    let n = out.len().min(a.len()).min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n: 8 halves read from a and b and written to
        // out, in bounds; unaligned loads/stores; transmutes as in
        // `f16c_map`.
        unsafe {
            let ha = _mm_loadu_si128(a.as_ptr().add(i) as *const __m128i);
            let hb = _mm_loadu_si128(b.as_ptr().add(i) as *const __m128i);
            let x: [f32; 8] = std::mem::transmute(_mm256_cvtph_ps(ha));
            let y: [f32; 8] = std::mem::transmute(_mm256_cvtph_ps(hb));
            let r: [f32; 8] = std::array::from_fn(|j| f(x[j], y[j]));
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(r.as_ptr()));
            _mm_storeu_si128(out.as_mut_ptr().add(i) as *mut __m128i, h);
        }
        i += 8;
    }
    for ((d, x), y) in out[i..n].iter_mut().zip(&a[i..n]).zip(&b[i..n]) {
        *d = f16::from_f32(f(x.to_f32(), y.to_f32()));
    }
}

dispatched! {
    /// bfloat16 to float32: the high half of the bits (exact).
    pub fn bf16_widen / bf16_widen_plain / bf16_widen_avx2<>(src: &[bf16], dst: &mut [f32]) {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = bf16_to_f32(s);
        }
    }
}

dispatched! {
    /// float32 to bfloat16, rounded to nearest even (NaN stays a quiet
    /// NaN), as `bf16::from_f32`, in a loop the compiler vectorises.
    pub fn bf16_narrow / bf16_narrow_plain / bf16_narrow_avx2<>(src: &[f32], dst: &mut [bf16]) {
        for (d, &x) in dst.iter_mut().zip(src) {
            *d = bf16_from_f32(x);
        }
    }
}

/// Whether the CPU converts float16 in hardware (F16C), detected once.
#[cfg(target_arch = "x86_64")]
pub(super) fn has_f16c() -> bool {
    static F16C: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *F16C.get_or_init(|| {
        is_x86_feature_detected!("f16c")
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
    })
}

/// float16 to float32 (exact): F16C eight at a time where the CPU has it.
pub(super) fn f16_widen(src: &[f16], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if has_f16c() {
        // SAFETY: the CPU has F16C and AVX (checked above).
        return unsafe { f16_widen_f16c(src, dst) };
    }
    src.convert_to_f32_slice(dst)
}

/// float32 to float16, rounded to nearest even.
pub(super) fn f16_narrow(src: &[f32], dst: &mut [f16]) {
    #[cfg(target_arch = "x86_64")]
    if has_f16c() {
        // SAFETY: the CPU has F16C and AVX (checked above).
        return unsafe { f16_narrow_f16c(src, dst) };
    }
    dst.convert_from_f32_slice(src)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn f16_widen_f16c(src: &[f16], dst: &mut [f32]) {
    use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};
    let n = src.len().min(dst.len());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n, so 8 elements (16 bytes) are read from src
        // and 8 floats written to dst, in bounds; unaligned loads/stores.
        unsafe {
            let h = _mm_loadu_si128(src.as_ptr().add(i) as *const __m128i);
            _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
        }
        i += 8;
    }
    for (d, h) in dst[i..n].iter_mut().zip(&src[i..n]) {
        *d = h.to_f32();
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn f16_narrow_f16c(src: &[f32], dst: &mut [f16]) {
    use std::arch::x86_64::{
        __m128i, _mm256_cvtps_ph, _mm256_loadu_ps, _mm_storeu_si128, _MM_FROUND_TO_NEAREST_INT,
    };
    let n = src.len().min(dst.len());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n: 8 floats read from src, 8 halves (16 bytes)
        // written to dst, in bounds; unaligned loads/stores.
        unsafe {
            let v = _mm256_loadu_ps(src.as_ptr().add(i));
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
            _mm_storeu_si128(dst.as_mut_ptr().add(i) as *mut __m128i, h);
        }
        i += 8;
    }
    for (d, &v) in dst[i..n].iter_mut().zip(&src[i..n]) {
        *d = f16::from_f32(v);
    }
}
