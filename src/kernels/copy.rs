//! Strided reads, copies and dtype casts, all through the iteration layer
//! (a transposed copy is walked in tiles).

use super::elementwise;
use super::overlap::has_internal_overlap;
use crate::buffer::layout::for_each_offset;
use crate::buffer::{pool, DType, Element, Layout, Scalar, StorageData, Strided};
use crate::{bail, dispatch_all, Result};
use std::sync::Arc;

/// Elements from which a copy is split over the threads.
const COPY_GRAIN: usize = 1 << 17;

/// Writes the elements of `ls` in `src` (any dtype) into `out` at `lo`,
/// cast to `U`.
pub(crate) fn cast_into<U: Element>(
    out: &mut [U],
    lo: &Layout,
    src: &StorageData,
    ls: &Layout,
) -> Result<()> {
    if let Some(d) = U::slice(src) {
        return elementwise::map(out, lo, d, ls, COPY_GRAIN, &|v| v);
    }
    if let Some(done) = super::reduced::cast_rows(out, lo, src, ls, COPY_GRAIN) {
        return done;
    }
    match src {
        StorageData::Bool(b) => elementwise::map(out, lo, &b[..], ls, COPY_GRAIN, &U::from_bool),
        StorageData::F32(b) => elementwise::map(out, lo, &b[..], ls, COPY_GRAIN, &|v: f32| {
            U::from_f64(v as f64)
        }),
        StorageData::F64(b) => elementwise::map(out, lo, &b[..], ls, COPY_GRAIN, &U::from_f64),
        StorageData::F16(b) => {
            elementwise::map(out, lo, &b[..], ls, COPY_GRAIN, &|v: half::f16| {
                U::from_f64(v.to_f64())
            })
        }
        StorageData::BF16(b) => {
            elementwise::map(out, lo, &b[..], ls, COPY_GRAIN, &|v: half::bf16| {
                U::from_f64(v.to_f64())
            })
        }
        ints => crate::dispatch_ints!(ints.dtype(), T => elementwise::map(
            out,
            lo,
            ints.as_slice::<T>(),
            ls,
            COPY_GRAIN,
            &|v: T| U::from_i64(v.to_i64()),
        )),
    }
}

/// Reads `t`'s elements in row-major order as `U` (casting). Fails only
/// when the system refuses the memory (torch's out-of-memory error).
pub fn to_vec_as<U: Element>(t: &Strided) -> Result<Vec<U>> {
    let l = t.layout();
    let mut out = pool::try_buffer::<U>(l.numel())?;
    let st = t.storage().read_recursive();
    cast_into(&mut out, &Layout::contiguous(&l.shape), &st, l)
        .expect("a fresh contiguous output and an input inside its storage");
    Ok(out)
}

/// A contiguous tensor with `t`'s values, cast to `U`'s dtype.
pub fn contiguous_as<U: Element>(t: &Strided) -> Result<Strided> {
    Ok(Strided::contiguous(U::wrap(to_vec_as::<U>(t)?), t.shape()))
}

/// A copy of `t` cast to `U`'s dtype, laid out as torch's
/// `preserve_format` lays it out: `t`'s strides when `t` is dense (those of
/// its size-1 dims too, which later outputs' layouts read), else dense in
/// `t`'s memory order.
pub fn copy_as<U: Element>(t: &Strided) -> Result<Strided> {
    let l = t.layout();
    let lo = if super::overlap::is_non_overlapping_dense(l) {
        Layout {
            shape: l.shape.clone(),
            strides: l.strides.clone(),
            offset: 0,
        }
    } else {
        super::iter::output_layout(&l.shape, &[l])
    };
    let mut out = pool::try_buffer::<U>(lo.numel())?;
    {
        let st = t.storage().read_recursive();
        cast_into(&mut out, &lo, &st, l)
            .expect("a fresh dense output and an input inside its storage");
    }
    Ok(Strided::fresh(U::wrap(out), lo))
}

/// Writes `src` (broadcast to `dst`'s shape, cast to its dtype) into `dst`'s
/// memory. Does not bump versions; callers do.
pub fn copy_into(dst: &Strided, src: &Strided) -> Result<()> {
    let ls = src.layout().expand(dst.shape())?;
    if Arc::ptr_eq(dst.storage(), src.storage()) {
        if *dst.layout() == ls {
            return Ok(());
        }
        // Read the source first: it shares the destination's memory.
        let vals = dispatch_all!(dst.dtype(), T => contiguous_as::<T>(src))?;
        return copy_into(dst, &vals);
    }
    let s = src.storage().read_recursive();
    let mut d = dst.storage().write();
    dispatch_all!(dst.dtype(), T => cast_into::<T>(d.as_mut_slice::<T>(), dst.layout(), &s, &ls))
}

/// Fills `dst`'s elements with `v` (cast to its dtype). A broadcast `dst`
/// (elements sharing memory) is allowed, as in torch.
pub fn fill(dst: &Strided, v: Scalar) -> Result<()> {
    fn go<T: Element>(dst: &Strided, v: T) -> Result<()> {
        let mut st = dst.storage().write();
        let d = st.as_mut_slice::<T>();
        let l = dst.layout();
        if has_internal_overlap(l) {
            for_each_offset(&l.shape, &l.strides, l.offset, |o| d[o] = v);
            return Ok(());
        }
        elementwise::apply(d, l, COPY_GRAIN, &|_| v)
    }
    dispatch_all!(dst.dtype(), T => go::<T>(dst, v.cast::<T>()))
}

/// Adds `src` (of `dst`'s shape and dtype, a floating one) into the
/// elements of `dst`, one index at a time in row-major order: where `dst`
/// overlaps itself (an expanded view), an element receives the sum of the
/// values at all its indices, the adjoint of reading through such a view
/// (as torch's `as_strided_backward` sums them).
pub fn accumulate_into(dst: &Strided, src: &Strided) -> Result<()> {
    fn go<T: Element + std::ops::Add<Output = T>>(dst: &Strided, src: &Strided) -> Result<()> {
        let vals = to_vec_as::<T>(src)?;
        let mut st = dst.storage().write();
        let d = st.as_mut_slice::<T>();
        let l = dst.layout();
        let mut v = vals.into_iter();
        for_each_offset(&l.shape, &l.strides, l.offset, |o| {
            if let Some(x) = v.next() {
                d[o] = d[o] + x;
            }
        });
        Ok(())
    }
    if src.shape() != dst.shape() {
        bail!(
            runtime,
            "accumulate_into: shapes {:?} and {:?} differ",
            dst.shape(),
            src.shape()
        );
    }
    match dst.dtype() {
        DType::F32 => go::<f32>(dst, src),
        DType::F64 => go::<f64>(dst, src),
        dt => bail!(runtime, "accumulate_into: not implemented for {:?}", dt),
    }
}

/// Runs `f` on `t`'s elements as `T` in row-major order as one slice:
/// `t`'s own memory when it is contiguous and of `T`'s dtype, else a
/// contiguous copy cast to `T` (so a float32 kernel reads float16 and
/// bfloat16 tensors as float32). The copy fails only when the system
/// refuses the memory.
pub fn with_slice<T: Element, R>(t: &Strided, f: impl FnOnce(&[T]) -> R) -> Result<R> {
    let copy;
    let t = if t.is_contiguous() && t.dtype() == T::DTYPE {
        t
    } else {
        copy = contiguous_as::<T>(t)?;
        &copy
    };
    let st = t.storage().read_recursive();
    let o = t.storage_offset();
    Ok(f(&st.as_slice::<T>()[o..o + t.numel()]))
}

/// `t`'s storage seen with its layout broadcast to `shape`.
pub fn expanded(t: &Strided, shape: &[usize]) -> Result<Strided> {
    if t.shape() == shape {
        return Ok(t.clone());
    }
    Ok(t.with_layout(t.layout().expand(shape)?))
}

/// Checks before writing into `dst` from something of dtype `src` (torch's
/// message, with its ScalarType names: "Float", "Long").
pub fn check_can_cast(src: DType, dst: DType) -> Result<()> {
    if src.category() > dst.category() {
        bail!(
            runtime,
            "result type {} can't be cast to the desired output type {}",
            src.scalar_type_name(),
            dst.scalar_type_name()
        );
    }
    Ok(())
}
