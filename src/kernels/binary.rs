//! Broadcasting elementwise kernels over two and three operands.

use super::elementwise;
use super::iter::output_layout;
use crate::buffer::layout::broadcast_shapes;
use crate::buffer::{pool, DType, Element, Layout, Strided};
use crate::{bail, Result};
use std::sync::Arc;

/// The broadcast shape of `ts` and each one's layout expanded to it.
fn broadcast<const N: usize>(ts: [&Strided; N]) -> Result<(crate::buffer::Dims, [Layout; N])> {
    let mut shape = ts[0].dims();
    for t in &ts[1..] {
        if t.shape() != &shape[..] {
            shape = broadcast_shapes(&shape, t.shape())?;
        }
    }
    let mut layouts: [Layout; N] = std::array::from_fn(|k| ts[k].layout().clone());
    for l in &mut layouts {
        if l.shape != shape {
            let lead = shape.len() - l.ndim();
            *l = l.expand(&shape)?;
            // TensorIterator gives the dims it prepends stride 0 (expand's
            // inferExpandGeometry does not, for a new size-1 dim): they must
            // not order the output's dims (`output_layout`)
            l.strides[..lead].fill(0);
        }
    }
    Ok((shape, layouts))
}

/// `out[i] = f(a[i], b[i])` with broadcasting. `a` and `b` must both be of
/// dtype `T` (ops cast to the promoted dtype first); `out` is of `U`, laid
/// out as torch lays it out (the inputs' memory order when they suggest
/// one).
pub fn map2<T: Element, U: Element>(
    a: &Strided,
    b: &Strided,
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Result<Strided> {
    map2_kernel(a, b, super::PAR_THRESHOLD, &elementwise::Each2(f))
}

/// `f` over two tensors of one 2-byte float dtype (float16 or bfloat16),
/// with broadcasting, computed in float32 and rounded back once (see
/// [`super::reduced`]).
pub fn map2_reduced(
    a: &Strided,
    b: &Strided,
    f: impl Fn(f32, f32) -> f32 + Sync + Send,
) -> Result<Strided> {
    let k = super::reduced::Fused(f);
    let grain = super::PAR_THRESHOLD;
    match a.dtype() {
        DType::F16 => map2_kernel::<half::f16, half::f16, _>(a, b, grain, &k),
        DType::BF16 => map2_kernel::<half::bf16, half::bf16, _>(a, b, grain, &k),
        other => bail!(internal, "map2_reduced on {}", other.name()),
    }
}

/// `f` over two integer tensors of one integer dtype, computed in int64
/// and truncated back to that dtype (torch's wrapping integer arithmetic).
pub fn int_map2(
    a: &Strided,
    b: &Strided,
    f: impl Fn(i64, i64) -> i64 + Sync + Send,
) -> Result<Strided> {
    crate::dispatch_ints!(a.dtype(), T => map2::<T, T>(a, b, |x, y| T::from_i64(f(x.to_i64(), y.to_i64()))))
}

/// `f` over two integer tensors of one integer dtype, as int64 values.
pub fn int_map2_to<U: Element>(
    a: &Strided,
    b: &Strided,
    f: impl Fn(i64, i64) -> U + Sync + Send,
) -> Result<Strided> {
    crate::dispatch_ints!(a.dtype(), T => map2::<T, U>(a, b, |x, y| f(x.to_i64(), y.to_i64())))
}

/// [`map2`] with a kernel, split over the threads from `grain` elements.
pub(crate) fn map2_kernel<T: Element, U: Element, K: elementwise::RowZip<T, U>>(
    a: &Strided,
    b: &Strided,
    grain: usize,
    k: &K,
) -> Result<Strided> {
    debug_assert!(a.dtype() == T::DTYPE && b.dtype() == T::DTYPE);
    let (l1, l2) = (a.layout(), b.layout());
    let n = l1.numel();
    if n < grain && l1.shape == l2.shape && l1.is_contiguous() && l2.is_contiguous() {
        // Small same-shape contiguous inputs: one slice loop, no
        // broadcasting or iteration plan (their setup would cost more
        // than the work).
        let mut out = pool::buffer::<U>(n);
        let sa = a.storage().read_recursive();
        let sb = b.storage().read_recursive();
        let (da, db) = (sa.as_slice::<T>(), sb.as_slice::<T>());
        k.run(
            &da[l1.offset..l1.offset + n],
            &db[l2.offset..l2.offset + n],
            &mut out,
        );
        return Ok(Strided::fresh(U::wrap(out), Layout::contiguous(&l1.shape)));
    }
    let (shape, [la, lb]) = broadcast([a, b])?;
    let lo = output_layout(&shape, &[&la, &lb]);
    // A broadcast output can be far larger than its inputs: a refused
    // allocation is torch's RuntimeError, not a panic.
    let mut out = pool::try_buffer::<U>(lo.numel())?;
    {
        let sa = a.storage().read_recursive();
        let sb = b.storage().read_recursive();
        let (da, db) = (sa.as_slice::<T>(), sb.as_slice::<T>());
        elementwise::zip_with(&mut out, &lo, (da, &la), (db, &lb), grain, k)?;
    }
    Ok(Strided::fresh(U::wrap(out), lo))
}

/// `dst[i] = f(dst[i], src[i])` in place, `src` broadcast to `dst`'s shape.
/// Both of dtype `T`. Does not bump the version.
pub fn apply2_inplace<T: Element>(
    dst: &Strided,
    src: &Strided,
    f: impl Fn(T, T) -> T + Sync + Send,
) -> Result<()> {
    update_kernel(dst, src, &elementwise::Each2(f))
}

/// [`apply2_inplace`] over float16/bfloat16 tensors (both of one of them),
/// computed in float32 (see [`super::reduced`]).
pub fn apply2_inplace_reduced(
    dst: &Strided,
    src: &Strided,
    f: impl Fn(f32, f32) -> f32 + Sync + Send,
) -> Result<()> {
    let k = super::reduced::Fused(f);
    match dst.dtype() {
        DType::F16 => update_kernel::<half::f16, _>(dst, src, &k),
        DType::BF16 => update_kernel::<half::bf16, _>(dst, src, &k),
        other => bail!(internal, "apply2_inplace_reduced on {}", other.name()),
    }
}

/// [`apply2_inplace`] with a kernel.
fn update_kernel<T: Element, K: elementwise::RowUpdate<T, T>>(
    dst: &Strided,
    src: &Strided,
    k: &K,
) -> Result<()> {
    let ls = src.layout().expand(dst.shape())?;
    let grain = super::PAR_THRESHOLD;
    // src may share dst's memory: read it into a buffer of its own first.
    if Arc::ptr_eq(dst.storage(), src.storage()) {
        let vals = super::copy::to_vec_as::<T>(src)?;
        let lv = Layout::contiguous(src.shape()).expand(dst.shape())?;
        let mut d = dst.storage().write();
        let d = d.as_mut_slice::<T>();
        return elementwise::update_with(d, dst.layout(), &vals, &lv, grain, k);
    }
    let s = src.storage().read_recursive();
    let mut d = dst.storage().write();
    elementwise::update_with(
        d.as_mut_slice::<T>(),
        dst.layout(),
        s.as_slice::<T>(),
        &ls,
        grain,
        k,
    )
}

/// `dst += src` for gradient accumulation (same dtype, src broadcastable).
pub fn add_assign(dst: &Strided, src: &Strided) -> Result<()> {
    if dst.dtype() != src.dtype() {
        bail!(
            runtime,
            "add_assign: dtype mismatch {} vs {}",
            dst.dtype().name(),
            src.dtype().name()
        );
    }
    if dst.dtype().is_reduced_float() {
        // in float32, rounded once: the float64 sum's bits (float32 holds
        // 2p + 2 bits of a 2-byte float's p, so rounding twice is exact)
        return apply2_inplace_reduced(dst, src, |x, y| x + y);
    }
    crate::dispatch_all!(dst.dtype(), T => add_assign_typed::<T>(dst, src))
}

fn add_assign_typed<T: Element>(dst: &Strided, src: &Strided) -> Result<()> {
    apply2_inplace::<T>(dst, src, |x, y| T::from_f64(x.to_f64() + y.to_f64()))
}

/// `out[i] = f(a[i], b[i], c[i])` with broadcasting over all three; each
/// operand has its own element type (e.g. a bool condition and two values).
pub fn map3<A: Element, B: Element, C: Element, U: Element>(
    a: &Strided,
    b: &Strided,
    c: &Strided,
    f: impl Fn(A, B, C) -> U + Sync + Send,
) -> Result<Strided> {
    debug_assert!(a.dtype() == A::DTYPE && b.dtype() == B::DTYPE && c.dtype() == C::DTYPE);
    let (shape, [la, lb, lc]) = broadcast([a, b, c])?;
    let lo = output_layout(&shape, &[&la, &lb, &lc]);
    // A broadcast output can be far larger than its inputs: a refused
    // allocation is torch's RuntimeError, not a panic.
    let mut out = pool::try_buffer::<U>(lo.numel())?;
    {
        let (sa, sb, sc) = (
            a.storage().read_recursive(),
            b.storage().read_recursive(),
            c.storage().read_recursive(),
        );
        elementwise::zip3(
            &mut out,
            &lo,
            (sa.as_slice::<A>(), &la),
            (sb.as_slice::<B>(), &lb),
            (sc.as_slice::<C>(), &lc),
            super::PAR_THRESHOLD,
            &f,
        )?;
    }
    Ok(Strided::fresh(U::wrap(out), lo))
}
