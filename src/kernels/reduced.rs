//! float16 and bfloat16 under float32 kernels: a kernel of the iteration
//! layer ([`RowMap`], [`RowZip`]) runs on 2-byte rows by loading each
//! chunk into float32 (SIMD conversions: F16C for float16), computing in
//! float32 (torch's opmath) and rounding the results once, to nearest
//! even. Memory traffic stays at 2 bytes per element each way.

use super::elementwise::{RowMap, RowZip};
use crate::buffer::Element;
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
}

macro_rules! reduced {
    ($t:ty) => {
        impl Reduced for $t {
            #[inline]
            fn widen(src: &[Self], dst: &mut [f32]) {
                src.convert_to_f32_slice(dst)
            }
            #[inline]
            fn narrow(src: &[f32], dst: &mut [Self]) {
                dst.convert_from_f32_slice(src)
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                <$t>::to_f32(self)
            }
            #[inline(always)]
            fn from_f32(v: f32) -> Self {
                <$t>::from_f32(v)
            }
        }
    };
}
reduced!(f16);
reduced!(bf16);

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
