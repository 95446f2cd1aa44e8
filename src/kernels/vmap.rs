//! Tensor-level loops for the SIMD functions of [`super::unary::vmath`]:
//! contiguous memory runs the function's slice kernel (`Unary::map`, on
//! the best SIMD path, threaded from [`SIMD_MIN_PAR`] elements), strided
//! inputs are gathered first; results are the same bits either way.

use super::binary::map2;
use super::unary::apply1_inplace;
use super::unary::vmath::{Binary, Unary};
use crate::parallel::for_each_chunk_mut;
use crate::tensor::{pool, Element, Tensor};
use crate::Result;

/// Elements from which a SIMD transcendental kernel (about 1-5 ns per
/// element) is split over the threads.
const SIMD_MIN_PAR: usize = 1 << 13;

/// `out[i] = K(a[i])` for a tensor of dtype `T`.
pub fn map1<T: Element, K: Unary<T>>(a: &Tensor) -> Tensor {
    debug_assert!(a.dtype() == T::DTYPE);
    let st = a.storage().read_recursive();
    let d = st.as_slice::<T>();
    let l = a.layout();
    let gathered: Vec<T>;
    let src: &[T] = match l.contiguous_range() {
        Some(r) => &d[r],
        None => {
            gathered = super::copy::gather(d, a, |v| v);
            &gathered
        }
    };
    let mut out = pool::buffer::<T>(src.len());
    for_each_chunk_mut(&mut out, SIMD_MIN_PAR, |s, o| K::map(&src[s..], o));
    drop(st);
    Tensor::from_data(T::wrap(out), a.shape())
}

/// `a[i] = K(a[i])` in place for a tensor of dtype `T` (strided tensors go
/// element by element through `K::exact`: the same bits). Does not bump
/// the version.
pub fn apply1<T: Element, K: Unary<T>>(a: &Tensor) {
    let Some(r) = a.layout().contiguous_range() else {
        return apply1_inplace::<T>(a, K::exact);
    };
    let mut st = a.storage().write();
    let buf = &mut st.as_mut_slice::<T>()[r];
    for_each_chunk_mut(buf, SIMD_MIN_PAR, |_, c| K::apply(c));
}

/// `out[i] = K(a[i], b[i])` with broadcasting, `a` and `b` of dtype `T`:
/// SIMD when both are contiguous and of one shape, else element by element
/// (the same bits).
pub fn map2_simd<T: Element, K: Binary<T>>(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    debug_assert!(a.dtype() == T::DTYPE && b.dtype() == T::DTYPE);
    let (la, lb) = (a.layout(), b.layout());
    let ranges = match (la.contiguous_range(), lb.contiguous_range()) {
        (Some(ra), Some(rb)) if a.shape() == b.shape() => (ra, rb),
        _ => return map2::<T, T>(a, b, K::eval),
    };
    let sa = a.storage().read_recursive();
    let sb = b.storage().read_recursive();
    let (xa, xb) = (&sa.as_slice::<T>()[ranges.0], &sb.as_slice::<T>()[ranges.1]);
    let mut out = pool::buffer::<T>(xa.len());
    for_each_chunk_mut(&mut out, SIMD_MIN_PAR, |s, o| K::zip(&xa[s..], &xb[s..], o));
    drop((sa, sb));
    Ok(Tensor::from_data(T::wrap(out), a.shape()))
}
