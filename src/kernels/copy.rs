//! Strided reads, copies and dtype casts.

use crate::tensor::layout::{for_each_offset, for_each_offset2};
use crate::tensor::{pool, Element, StorageData, Tensor};
use crate::{bail, dispatch_all, Result};

/// Reads `t`'s elements in row-major order as `U` (casting).
pub fn to_vec_as<U: Element>(t: &Tensor) -> Vec<U> {
    let st = t.storage().read_recursive();
    if let (Some(d), Some(r)) = (U::slice(&st), t.layout().contiguous_range()) {
        let mut out = pool::buffer(r.len());
        copy_slice(&mut out, &d[r]);
        return out;
    }
    match &*st {
        StorageData::Bool(b) => gather(&b[..], t, U::from_bool),
        StorageData::I64(b) => gather(&b[..], t, U::from_i64),
        StorageData::F32(b) => gather(&b[..], t, |v| U::from_f64(v as f64)),
        StorageData::F64(b) => gather(&b[..], t, U::from_f64),
    }
}

/// Row-major gather of `t`'s elements from `data`, mapped by `f`.
pub fn gather<T: Copy, U: Element>(data: &[T], t: &Tensor, f: impl Fn(T) -> U) -> Vec<U> {
    let l = t.layout();
    let mut out = pool::with_capacity(l.numel());
    let n = l.shape.len();
    if l.numel() == 0 {
        return out;
    }
    match l.contiguous_range() {
        Some(r) => out.extend(data[r].iter().map(|&v| f(v))),
        // Rows contiguous (a permutation that keeps the last dim): copied
        // row by row.
        None if n > 0 && l.strides[n - 1] == 1 => {
            let row = l.shape[n - 1];
            for_each_offset(&l.shape[..n - 1], &l.strides[..n - 1], l.offset, |o| {
                out.extend(data[o..o + row].iter().map(|&v| f(v)))
            })
        }
        // Columns contiguous in the last two dims (a transpose): copied in
        // square tiles, so reads and writes both stay within a few lines.
        None if n >= 2 && l.strides[n - 2] == 1 => {
            const TILE: usize = 16;
            let (rows, cols, cs) = (l.shape[n - 2], l.shape[n - 1], l.strides[n - 1]);
            out.resize(l.numel(), U::zero());
            let mut base = 0;
            for_each_offset(&l.shape[..n - 2], &l.strides[..n - 2], l.offset, |o| {
                let dst = &mut out[base..base + rows * cols];
                for i0 in (0..rows).step_by(TILE) {
                    for j0 in (0..cols).step_by(TILE) {
                        for j in j0..cols.min(j0 + TILE) {
                            for i in i0..rows.min(i0 + TILE) {
                                dst[i * cols + j] = f(data[o + i + j * cs]);
                            }
                        }
                    }
                }
                base += rows * cols;
            })
        }
        None => for_each_offset(&l.shape, &l.strides, l.offset, |o| out.push(f(data[o]))),
    }
    out
}

/// A contiguous tensor with `t`'s values, cast to `U`'s dtype.
pub fn contiguous_as<U: Element>(t: &Tensor) -> Tensor {
    Tensor::from_data(U::wrap(to_vec_as::<U>(t)), t.shape())
}

/// Writes `src` (broadcast to `dst`'s shape, cast to its dtype) into `dst`'s
/// memory. Does not bump versions; callers do.
pub fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    let src = src.broadcast_to_raw(dst.shape())?;
    // Read the source first: it may alias the destination.
    let values: Tensor =
        if std::sync::Arc::ptr_eq(dst.storage(), src.storage()) || src.dtype() != dst.dtype() {
            dispatch_all!(dst.dtype(), T => contiguous_as::<T>(&src))
        } else {
            src
        };
    dispatch_all!(dst.dtype(), T => write_from::<T>(dst, &values));
    Ok(())
}

fn write_from<T: Element>(dst: &Tensor, src: &Tensor) {
    let sst = src.storage().read_recursive();
    let s = sst.as_slice::<T>();
    let mut dstore = dst.storage().write();
    let d = dstore.as_mut_slice::<T>();
    let (dl, sl) = (dst.layout(), src.layout());
    if let (Some(dr), Some(sr)) = (dl.contiguous_range(), sl.contiguous_range()) {
        copy_slice(&mut d[dr], &s[sr]);
        return;
    }
    for_each_offset2(
        &dl.shape,
        &dl.strides,
        dl.offset,
        &sl.strides,
        sl.offset,
        |a, b| d[a] = s[b],
    );
}

/// `dst.copy_from_slice(src)`, split over the threads when big.
pub fn copy_slice<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    crate::parallel::for_each_chunk_mut(dst, 1 << 17, |s, d| {
        d.copy_from_slice(&src[s..s + d.len()])
    });
}

/// Fills `dst`'s elements with `v` (cast to its dtype).
pub fn fill(dst: &Tensor, v: crate::Scalar) -> Result<()> {
    fn go<T: Element>(dst: &Tensor, v: T) {
        let mut st = dst.storage().write();
        let d = st.as_mut_slice::<T>();
        let l = dst.layout();
        match l.contiguous_range() {
            Some(r) => d[r].fill(v),
            None => for_each_offset(&l.shape, &l.strides, l.offset, |o| d[o] = v),
        }
    }
    match dst.dtype() {
        crate::DType::Bool => go::<bool>(dst, v.to_f64() != 0.0),
        crate::DType::I64 => go::<i64>(
            dst,
            match v {
                crate::Scalar::Int(i) => i,
                other => other.to_f64() as i64,
            },
        ),
        crate::DType::F32 => go::<f32>(dst, v.to_f64() as f32),
        crate::DType::F64 => go::<f64>(dst, v.to_f64()),
    }
    Ok(())
}

/// Checks before writing into `dst` from something of dtype `src`.
pub fn check_can_cast(src: crate::DType, dst: crate::DType) -> Result<()> {
    if src.category() > dst.category() {
        bail!(
            runtime,
            "result type {} can't be cast to the desired output type {}",
            src.name(),
            dst.name()
        );
    }
    Ok(())
}
