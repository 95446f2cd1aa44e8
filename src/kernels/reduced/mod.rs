//! float16 and bfloat16 under float32 kernels: a kernel of the iteration
//! layer ([`RowMap`], [`RowZip`]) runs on 2-byte rows by loading each
//! chunk into float32 (SIMD conversions: F16C for float16), computing in
//! float32 (torch's opmath) and rounding the results once, to nearest
//! even. Memory traffic stays at 2 bytes per element each way.

use super::elementwise::{RowMap, RowZip};
use super::fold::{Fold, Sum, LANE_PIECE};
use super::shared_out::SharedOut;
use crate::buffer::Element;
use crate::parallel::for_each_index;
use half::{bf16, f16};

mod convert;
pub use convert::Reduced;
use convert::*;

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
