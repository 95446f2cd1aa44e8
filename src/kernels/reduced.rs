//! float16 and bfloat16 under float32 kernels: a kernel of the iteration
//! layer ([`RowMap`], [`RowZip`]) runs on 2-byte rows by loading each
//! chunk into float32 (SIMD conversions: F16C for float16), computing in
//! float32 (torch's opmath) and rounding the results once, to nearest
//! even. Memory traffic stays at 2 bytes per element each way.

use super::elementwise::{RowMap, RowZip};
use super::fold::{Fold, Sum, LANE_PIECE};
use super::shared_out::SharedOut;
use super::simd::dispatched;
use crate::buffer::Element;
use crate::parallel::for_each_index;
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

/// Elements converted per step: two float32 buffers of this size stay in L1.
const CHUNK: usize = 256;

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
    /// [`super::slices::fold_wide`] over the widened run.
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
        super::slices::map_fold_wide(x, 0.0, &|h: f16| h.to_f32(), &|a, b| a + b)
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
        super::slices::map_fold_wide(x, 0.0, &bf16_to_f32, &|a, b| a + b)
    }
    fn add_rows(acc: &mut [f32], x: &[Self]) {
        bf16_add_rows(acc, x)
    }
}

/// bfloat16 to float32 (exact): the bits as the high half.
#[inline(always)]
fn bf16_to_f32(h: bf16) -> f32 {
    f32::from_bits((h.to_bits() as u32) << 16)
}

/// float32 to bfloat16, rounded to nearest even (a NaN stays a quiet NaN),
/// as `bf16::from_f32`, in integer operations the compiler vectorises.
#[inline(always)]
fn bf16_from_f32(x: f32) -> bf16 {
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
    super::slices::load_fold_wide(x, 0.0, &load8, &|h: f16| h.to_f32(), &|a, b| a + b)
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
fn chunked_map<H: Reduced, F: Fn(f32) -> f32 + Sync>(x: &[H], out: &mut [H], f: &F) {
    RowMap::run(&Widened(&super::elementwise::Each(f)), x, out)
}

/// [`Reduced::zip_fused`] through float32 buffers ([`Widened`]).
fn chunked_zip<H: Reduced, F: Fn(f32, f32) -> f32 + Sync>(a: &[H], b: &[H], out: &mut [H], f: &F) {
    RowZip::run(&Widened(&super::elementwise::Each2(f)), a, b, out)
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
fn has_f16c() -> bool {
    static F16C: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *F16C.get_or_init(|| {
        is_x86_feature_detected!("f16c")
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
    })
}

/// float16 to float32 (exact): F16C eight at a time where the CPU has it.
fn f16_widen(src: &[f16], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if has_f16c() {
        // SAFETY: the CPU has F16C and AVX (checked above).
        return unsafe { f16_widen_f16c(src, dst) };
    }
    src.convert_to_f32_slice(dst)
}

/// float32 to float16, rounded to nearest even.
fn f16_narrow(src: &[f32], dst: &mut [f16]) {
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

/// `v` rounded to `dt` when `dt` is float16 or bfloat16 (to nearest even),
/// read back as float32; other dtypes leave it as it is.
pub fn round_to(dt: crate::buffer::DType, v: f32) -> f32 {
    match dt {
        crate::buffer::DType::F16 => f16::from_f32(v).to_f32(),
        crate::buffer::DType::BF16 => bf16::from_f32(v).to_f32(),
        _ => v,
    }
}

/// A float32 kernel as a kernel over float16/bfloat16 elements.
pub struct Widened<'a, K>(pub &'a K);

impl<H: Reduced, K: RowMap<f32, f32>> RowMap<H, H> for Widened<'_, K> {
    fn run(&self, x: &[H], out: &mut [H]) {
        let (mut a, mut r) = ([0f32; CHUNK], [0f32; CHUNK]);
        for (xc, oc) in x.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
            let n = xc.len();
            H::widen(xc, &mut a[..n]);
            self.0.run(&a[..n], &mut r[..n]);
            H::narrow(&r[..n], oc);
        }
    }
    #[inline]
    fn one(&self, x: H) -> H {
        H::from_f32(self.0.one(x.to_f32()))
    }
}

impl<H: Reduced, K: RowZip<f32, f32>> RowZip<H, H> for Widened<'_, K> {
    fn run(&self, a: &[H], b: &[H], out: &mut [H]) {
        let (mut x, mut y, mut r) = ([0f32; CHUNK], [0f32; CHUNK], [0f32; CHUNK]);
        for ((ac, bc), oc) in a
            .chunks(CHUNK)
            .zip(b.chunks(CHUNK))
            .zip(out.chunks_mut(CHUNK))
        {
            let n = ac.len();
            H::widen(ac, &mut x[..n]);
            H::widen(bc, &mut y[..n]);
            self.0.run(&x[..n], &y[..n], &mut r[..n]);
            H::narrow(&r[..n], oc);
        }
    }
    #[inline]
    fn one(&self, a: H, b: H) -> H {
        H::from_f32(self.0.one(a.to_f32(), b.to_f32()))
    }
    fn left(&self, a: &[H], b: H, out: &mut [H]) {
        let (mut x, mut r) = ([0f32; CHUNK], [0f32; CHUNK]);
        for (ac, oc) in a.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
            let n = ac.len();
            H::widen(ac, &mut x[..n]);
            self.0.left(&x[..n], b.to_f32(), &mut r[..n]);
            H::narrow(&r[..n], oc);
        }
    }
    fn right(&self, a: H, b: &[H], out: &mut [H]) {
        let (mut y, mut r) = ([0f32; CHUNK], [0f32; CHUNK]);
        for (bc, oc) in b.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
            let n = bc.len();
            H::widen(bc, &mut y[..n]);
            self.0.right(a.to_f32(), &y[..n], &mut r[..n]);
            H::narrow(&r[..n], oc);
        }
    }
}

/// A float32 closure as a kernel over float16/bfloat16 elements: each
/// element converted, `f` applied and the result rounded in registers
/// ([`Reduced::map_fused`]), with no float32 copy of the rows in memory.
/// Same bits as [`Widened`] over [`super::elementwise::Each`].
pub struct Fused<F>(pub F);

impl<H: Reduced, F: Fn(f32) -> f32 + Sync> RowMap<H, H> for Fused<F> {
    #[inline]
    fn run(&self, x: &[H], out: &mut [H]) {
        H::map_fused(x, out, &self.0)
    }
    #[inline]
    fn one(&self, x: H) -> H {
        H::from_f32((self.0)(x.to_f32()))
    }
}

impl<H: Reduced, F: Fn(f32, f32) -> f32 + Sync> RowZip<H, H> for Fused<F> {
    #[inline]
    fn run(&self, a: &[H], b: &[H], out: &mut [H]) {
        H::zip_fused(a, b, out, &self.0)
    }
    #[inline]
    fn one(&self, a: H, b: H) -> H {
        H::from_f32((self.0)(a.to_f32(), b.to_f32()))
    }
    fn left(&self, a: &[H], b: H, out: &mut [H]) {
        let (f, b) = (&self.0, b.to_f32());
        H::map_fused(a, out, &|x| f(x, b))
    }
    fn right(&self, a: H, b: &[H], out: &mut [H]) {
        let (f, a) = (&self.0, a.to_f32());
        H::map_fused(b, out, &|y| f(a, y))
    }
}

impl<H: Reduced, F: Fn(f32, f32) -> f32 + Sync> super::elementwise::RowUpdate<H, H> for Fused<F> {
    #[inline]
    fn run(&self, dst: &mut [H], src: &[H]) {
        H::update_fused(dst, src, &self.0)
    }
    #[inline]
    fn one(&self, d: H, s: H) -> H {
        H::from_f32((self.0)(d.to_f32(), s.to_f32()))
    }
    fn fill(&self, dst: &mut [H], s: H) {
        let (f, s) = (&self.0, s.to_f32());
        H::apply_fused(dst, &|v| f(v, s))
    }
}

/// float16/bfloat16 rows to float32 (the slice conversions).
struct Widen;

impl<H: Reduced> RowMap<H, f32> for Widen {
    fn run(&self, x: &[H], out: &mut [f32]) {
        H::widen(x, out)
    }
    fn one(&self, x: H) -> f32 {
        x.to_f32()
    }
}

/// float32 rows to float16/bfloat16, rounded to nearest even.
struct Narrow;

impl<H: Reduced> RowMap<f32, H> for Narrow {
    fn run(&self, x: &[f32], out: &mut [H]) {
        H::narrow(x, out)
    }
    fn one(&self, x: f32) -> H {
        H::from_f32(x)
    }
}

/// `s` as a slice of `V` when `U` is `V`, else None.
fn retype<U: 'static, V: 'static>(s: &mut [U]) -> Option<&mut [V]> {
    if std::any::TypeId::of::<U>() != std::any::TypeId::of::<V>() {
        return None;
    }
    // SAFETY: U and V are one type (equal TypeIds), so the slice's
    // pointer, length and element layout are those of a [V].
    Some(unsafe { &mut *(s as *mut [U] as *mut [V]) })
}

/// The casts between float32 and float16/bfloat16 of `super::copy`'s
/// `cast_into` by the SIMD slice conversions; None for other dtype pairs.
pub(crate) fn cast_rows<U: Element>(
    out: &mut [U],
    lo: &crate::buffer::Layout,
    src: &crate::buffer::StorageData,
    ls: &crate::buffer::Layout,
    grain: usize,
) -> Option<crate::Result<()>> {
    use super::elementwise::map_with;
    use crate::buffer::StorageData;
    match src {
        StorageData::F16(b) => retype::<U, f32>(out).map(|o| map_with(o, lo, b, ls, grain, &Widen)),
        StorageData::BF16(b) => {
            retype::<U, f32>(out).map(|o| map_with(o, lo, b, ls, grain, &Widen))
        }
        StorageData::F32(b) => match retype::<U, f16>(out) {
            Some(o) => Some(map_with(o, lo, b, ls, grain, &Narrow)),
            None => retype::<U, bf16>(out).map(|o| map_with(o, lo, b, ls, grain, &Narrow)),
        },
        _ => None,
    }
}

/// Elements of a lane folded per step (each step's sum joins the lane's
/// total in order).
const FOLD_CHUNK: usize = 2048;

/// The sum of each contiguous lane of `lane` elements of `x` (2-byte
/// floats), converted to float32 as they are read (after `f.finish`).
/// Lanes split over the threads, or, for a few long lanes, fixed pieces of
/// each (so results do not depend on the thread count).
fn fold_lanes<H: Reduced>(x: &[H], lane: usize, f: &Sum<f32>) -> Vec<f32> {
    let fold_run = |run: &[H]| {
        run.chunks(FOLD_CHUNK)
            .fold(0f32, |acc, c| acc + H::sum_run(c))
    };
    let lanes = x.len().checked_div(lane).unwrap_or(0);
    let mut out = vec![0f32; lanes];
    if lanes <= 8 && lane >= 2 * LANE_PIECE {
        for (k, o) in out.iter_mut().enumerate() {
            let run = &x[k * lane..(k + 1) * lane];
            let pieces: Vec<&[H]> = run.chunks(LANE_PIECE).collect();
            let mut parts = vec![0f32; pieces.len()];
            let shared = SharedOut::new(&mut parts);
            for_each_index(pieces.len(), &|p| {
                // SAFETY: piece p writes parts[p] only; parts outlives the call.
                unsafe { shared.write(p, fold_run(pieces[p])) }
            });
            *o = f.finish(f.run(f.init(), &parts));
        }
        return out;
    }
    let shared = SharedOut::new(&mut out);
    let per = (1 << 15) / lane.max(1) + 1;
    for_each_index(lanes.div_ceil(per), &|c| {
        for k in c * per..((c + 1) * per).min(lanes) {
            let v = f.finish(fold_run(&x[k * lane..(k + 1) * lane]));
            // SAFETY: lane k writes out[k] only, once.
            unsafe { shared.write(k, v) }
        }
    });
    out
}

/// The sum down each of the `inner` columns of `x` (2-byte floats, `outer`
/// rows of `inner`): a sum over leading dims, converting as it reads.
///
/// The rows are cut into pieces of [`ROW_PIECE`], the columns into blocks;
/// a unit of work (a piece of a block) keeps a row of float32 accumulators
/// and adds its rows into it in order; the pieces' sums are then added in
/// order. The pieces depend on the sizes alone and a column's sum does not
/// depend on the blocks, so the blocks are sized for the threads (about
/// eight units per thread, 64 to [`FOLD_CHUNK`] columns) and the result is
/// the same for any thread count. (Blocks of 2048 alone split a 100x10000
/// sum into five units for two threads, and a 10000x100 one into one.)
fn fold_columns<H: Reduced>(x: &[H], outer: usize, inner: usize, f: &Sum<f32>) -> Vec<f32> {
    let pieces = outer.div_ceil(ROW_PIECE).max(1);
    let threads = crate::parallel::num_threads();
    let width = (inner * pieces)
        .div_ceil(8 * threads)
        .next_multiple_of(64)
        .clamp(64, FOLD_CHUNK);
    let blocks = inner.div_ceil(width);
    let mut sums = vec![0f32; pieces * inner];
    let shared = SharedOut::new(&mut sums);
    for_each_index(pieces * blocks, &|u| {
        let (p, j0) = (u / blocks, (u % blocks) * width);
        let w = width.min(inner - j0);
        let mut acc = [0f32; FOLD_CHUNK];
        let acc = &mut acc[..w];
        // groups of rows, each added in order with the accumulators held
        let (first, end) = (p * ROW_PIECE, ((p + 1) * ROW_PIECE).min(outer));
        for g in (first..end).step_by(ROW_GROUP) {
            let rows = ROW_GROUP.min(end - g);
            let start = g * inner + j0;
            H::add_row_group(acc, &x[start..start + (rows - 1) * inner + w], inner, rows);
        }
        // SAFETY: unit (p, block) writes sums[p * inner + j0..][..w] only.
        unsafe { shared.run(p * inner + j0, w) }.copy_from_slice(acc);
    });
    let (out, rest) = sums.split_at_mut(inner);
    for piece in rest.chunks_exact(inner.max(1)) {
        out.iter_mut().zip(piece).for_each(|(o, &v)| *o += v);
    }
    sums.truncate(inner);
    sums.iter_mut().for_each(|v| *v = f.finish(*v));
    sums
}

/// Rows per piece of [`fold_columns`].
const ROW_PIECE: usize = 256;
/// Rows [`fold_columns`] adds at a time (their streams stay few enough for
/// the prefetchers).
const ROW_GROUP: usize = 8;

/// A fold of a contiguous float16/bfloat16 tensor over its trailing dims
/// (a whole sum, a mean over the last dim) or its leading dims (`sum(0)`)
/// in float32, reading 2 bytes per element: the float32 result, of the
/// reduced shape. None for other layouts and dims (callers widen the whole
/// tensor first).
pub fn fold_trailing(
    t: &crate::buffer::Strided,
    dims: &[usize],
    keepdim: bool,
    f: &Sum<f32>,
) -> crate::Result<Option<crate::buffer::Strided>> {
    let nd = t.ndim();
    let trailing = !dims.is_empty()
        && dims
            .iter()
            .enumerate()
            .all(|(i, &d)| d == nd - dims.len() + i);
    let leading = !trailing && dims.iter().enumerate().all(|(i, &d)| d == i);
    if !t.is_contiguous() || !(trailing || leading || nd == 0) {
        return Ok(None);
    }
    let lane: usize = dims.iter().map(|&d| t.shape()[d]).product();
    if lane == 0 {
        return Ok(None);
    }
    let out_shape = super::reduce::reduced_shape(t.shape(), dims, keepdim);
    let st = t.storage().read_recursive();
    let o = t.storage_offset();
    let inner = t.numel() / lane;
    let vals = match &*st {
        crate::buffer::StorageData::F16(b) if leading => {
            fold_columns(&b[o..o + t.numel()], lane, inner, f)
        }
        crate::buffer::StorageData::BF16(b) if leading => {
            fold_columns(&b[o..o + t.numel()], lane, inner, f)
        }
        crate::buffer::StorageData::F16(b) => fold_lanes(&b[o..o + t.numel()], lane, f),
        crate::buffer::StorageData::BF16(b) => fold_lanes(&b[o..o + t.numel()], lane, f),
        _ => return Ok(None),
    };
    Ok(Some(crate::buffer::Strided::contiguous(
        f32::wrap(vals),
        &out_shape,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Float32 values around every rounding case: each float16/bfloat16
    /// value, the midpoints between neighbours (ties), values just off
    /// them, the extremes, infinities and NaNs.
    fn probes() -> Vec<f32> {
        let mut v = Vec::new();
        for bits in (0u32..=0xffff_ffff).step_by(4099) {
            v.push(f32::from_bits(bits));
        }
        for h in 0u16..=0xffff {
            let x = f16::from_bits(h).to_f32();
            let y = bf16::from_bits(h).to_f32();
            for b in [x.to_bits(), y.to_bits()] {
                v.extend(
                    [
                        b,
                        b + 1,
                        b.wrapping_sub(1),
                        b | 0x1000,
                        b | 0x8000,
                        b | 0x8001,
                    ]
                    .map(f32::from_bits),
                );
            }
        }
        v.extend([
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -0.0,
            65520.0,
            65519.99,
        ]);
        v
    }

    #[test]
    fn conversions_round_as_the_half_crate() {
        let src = probes();
        let mut h = vec![f16::ZERO; src.len()];
        let mut b = vec![bf16::ZERO; src.len()];
        f16::narrow(&src, &mut h);
        bf16::narrow(&src, &mut b);
        for (i, &x) in src.iter().enumerate() {
            let (wh, wb) = (f16::from_f32(x), bf16::from_f32(x));
            if x.is_nan() {
                assert!(h[i].is_nan() && b[i].is_nan(), "{x:?}");
            } else {
                assert_eq!(h[i].to_bits(), wh.to_bits(), "float16 of {x:e}");
                assert_eq!(b[i].to_bits(), wb.to_bits(), "bfloat16 of {x:e}");
            }
        }
        let all_h: Vec<f16> = (0u16..=0xffff).map(f16::from_bits).collect();
        let all_b: Vec<bf16> = (0u16..=0xffff).map(bf16::from_bits).collect();
        let mut wide = vec![0f32; all_h.len()];
        f16::widen(&all_h, &mut wide);
        for (h, w) in all_h.iter().zip(&wide) {
            assert!(h.to_f32().to_bits() == w.to_bits() || (h.is_nan() && w.is_nan()));
        }
        bf16::widen(&all_b, &mut wide);
        for (b, w) in all_b.iter().zip(&wide) {
            // exact bits, as torch's widening (the half crate quiets
            // signalling NaNs; both are NaN)
            assert!(b.to_f32().to_bits() == w.to_bits() || (b.is_nan() && w.is_nan()));
            assert_eq!(w.to_bits(), (b.to_bits() as u32) << 16);
        }
    }

    #[test]
    fn folds_over_trailing_dims_match_the_widened_fold() {
        use crate::buffer::{Layout, Storage, Strided};
        use crate::kernels::fold::Sum;
        use std::sync::Arc;
        let n = 3 * 70_000;
        let vals: Vec<bf16> = (0..n)
            .map(|i| bf16::from_f32(((i * 7919) % 1000) as f32 / 100.0))
            .collect();
        let t = Strided::new(
            Arc::new(Storage::from_vec(vals.clone())),
            Layout::contiguous(&[3, 70_000]),
        );
        let got = fold_trailing(&t, &[1], false, &Sum { scale: None })
            .unwrap()
            .unwrap();
        let got = crate::kernels::copy::to_vec_as::<f32>(&got).unwrap();
        for (k, g) in got.iter().enumerate() {
            let want: f64 = vals[k * 70_000..(k + 1) * 70_000]
                .iter()
                .map(|v| v.to_f64())
                .sum();
            assert!(
                (*g as f64 - want).abs() <= 1e-5 * want.abs(),
                "{g} vs {want}"
            );
        }
        // leading dims: the columns' sums (blocks of columns over threads)
        let cols = fold_trailing(&t, &[0], false, &Sum { scale: None })
            .unwrap()
            .unwrap();
        let cols = crate::kernels::copy::to_vec_as::<f32>(&cols).unwrap();
        assert_eq!(cols.len(), 70_000);
        for (j, g) in cols.iter().enumerate() {
            let want: f32 = (0..3).map(|i| vals[i * 70_000 + j].to_f32()).sum();
            assert_eq!(*g, want);
        }
        // a middle dim, or not contiguous: None (the caller widens first)
        let t3 = Strided::new(
            Arc::new(Storage::from_vec(vals.clone())),
            Layout::contiguous(&[3, 7, 10_000]),
        );
        assert!(fold_trailing(&t3, &[1], false, &Sum { scale: None })
            .unwrap()
            .is_none());
        let tt = Strided::new(
            Arc::new(Storage::from_vec(vals)),
            Layout::contiguous(&[3, 70_000]).transpose(0, 1),
        );
        assert!(fold_trailing(&tt, &[1], false, &Sum { scale: None })
            .unwrap()
            .is_none());
    }

    /// The fused kernels (conversions in registers) give the bits of the
    /// widen-compute-narrow path through float32 buffers, for every tail
    /// length, on the rounding probes (ties, subnormals, infinities, NaN).
    fn fused_matches_widened<H: Reduced>() {
        use crate::kernels::elementwise::{Each, Each2};
        let src = probes();
        let mut x = vec![H::from_f32(0.0); src.len()];
        H::narrow(&src, &mut x);
        let y: Vec<H> = x.iter().rev().copied().collect();
        let same = |a: &[H], b: &[H]| {
            a.iter().zip(b).all(|(p, q)| {
                p.to_f32().to_bits() == q.to_f32().to_bits()
                    || p.to_f32().is_nan() && q.to_f32().is_nan()
            })
        };
        let f1 = |v: f32| v * 1.5 - 0.25;
        let f2 = |a: f32, b: f32| a * b + a;
        for n in (0..70).chain([x.len()]) {
            let (x, y) = (&x[..n], &y[..n]);
            let (mut want, mut got) = (vec![H::from_f32(0.0); n], vec![H::from_f32(0.0); n]);
            RowMap::run(&Widened(&Each(f1)), x, &mut want);
            RowMap::run(&Fused(f1), x, &mut got);
            assert!(same(&want, &got), "map, n = {n}");
            chunked_map(x, &mut got, &f1);
            assert!(same(&want, &got), "chunked map, n = {n}");
            RowZip::run(&Widened(&Each2(f2)), x, y, &mut want);
            RowZip::run(&Fused(f2), x, y, &mut got);
            assert!(same(&want, &got), "zip, n = {n}");
            chunked_zip(x, y, &mut got, &f2);
            assert!(same(&want, &got), "chunked zip, n = {n}");
            RowZip::left(
                &Widened(&Each2(f2)),
                x,
                y.first().copied().unwrap_or(H::from_f32(2.0)),
                &mut want,
            );
            RowZip::left(
                &Fused(f2),
                x,
                y.first().copied().unwrap_or(H::from_f32(2.0)),
                &mut got,
            );
            assert!(same(&want, &got), "left, n = {n}");
            RowZip::right(&Widened(&Each2(f2)), H::from_f32(3.0), y, &mut want);
            RowZip::right(&Fused(f2), H::from_f32(3.0), y, &mut got);
            assert!(same(&want, &got), "right, n = {n}");
            // sums: the finite values only (a sum of all probes is NaN)
            let fin: Vec<H> = x
                .iter()
                .copied()
                .filter(|v| v.to_f32().is_finite())
                .collect();
            let mut wide = vec![0f32; fin.len()];
            H::widen(&fin, &mut wide);
            let want = super::super::slices::fold_wide(&wide, 0.0, &|a, b| a + b);
            assert_eq!(H::sum_run(&fin).to_bits(), want.to_bits(), "sum, n = {n}");
            let plain =
                super::super::slices::map_fold_wide(&fin, 0.0, &|h: H| h.to_f32(), &|a, b| a + b);
            assert_eq!(plain.to_bits(), want.to_bits(), "sum without F16C, n = {n}");
            let mut acc: Vec<f32> = (0..fin.len()).map(|i| i as f32).collect();
            let want: Vec<f32> = acc.iter().zip(&wide).map(|(a, w)| a + w).collect();
            H::add_rows(&mut acc, &fin);
            assert_eq!(acc, want, "rows, n = {n}");
            // a group of rows (stride past the width) in one call: the bits
            // of adding them one by one
            let w = fin.len() / 3;
            for rows in 0..4usize {
                let stride = w + 1;
                if rows > 0 && (rows - 1) * stride + w > fin.len() {
                    continue;
                }
                let mut group: Vec<f32> = (0..w).map(|i| i as f32 * 0.37).collect();
                let mut one_by_one = group.clone();
                H::add_row_group(&mut group, &fin, stride, rows);
                for r in 0..rows {
                    H::add_rows(&mut one_by_one, &fin[r * stride..r * stride + w]);
                }
                let bits = |v: &[f32]| v.iter().map(|a| a.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&group),
                    bits(&one_by_one),
                    "row group, n = {n}, rows = {rows}"
                );
            }
        }
    }

    #[test]
    fn fused_kernels_match_the_widened_kernels() {
        fused_matches_widened::<f16>();
        fused_matches_widened::<bf16>();
    }
}
