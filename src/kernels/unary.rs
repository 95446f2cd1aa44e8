//! Elementwise kernels over one operand.

use crate::tensor::layout::for_each_offset;
use crate::tensor::{Element, Tensor};
use rayon::prelude::*;

/// `out[i] = f(a[i])`; `a` must be of dtype `T`, `out` is of `U`.
pub fn map1<T: Element, U: Element>(a: &Tensor, f: impl Fn(T) -> U + Sync + Send) -> Tensor {
    debug_assert!(a.dtype() == T::DTYPE);
    let st = a.storage().read_recursive();
    let d = st.as_slice::<T>();
    let l = a.layout();
    let out: Vec<U> = match l.contiguous_range() {
        Some(r) if r.len() >= super::PAR_THRESHOLD => {
            crate::parallel::install(|| d[r].par_iter().map(|&x| f(x)).collect())
        }
        Some(r) => d[r].iter().map(|&x| f(x)).collect(),
        None => {
            let mut out = Vec::with_capacity(l.numel());
            for_each_offset(&l.shape, &l.strides, l.offset, |o| out.push(f(d[o])));
            out
        }
    };
    Tensor::from_data(U::wrap(out), a.shape())
}

/// `a[i] = f(a[i])` in place. Does not bump the version.
pub fn apply1_inplace<T: Element>(a: &Tensor, f: impl Fn(T) -> T + Sync + Send) {
    let mut st = a.storage().write();
    let d = st.as_mut_slice::<T>();
    let l = a.layout();
    match l.contiguous_range() {
        Some(r) if r.len() >= super::PAR_THRESHOLD => {
            crate::parallel::install(|| d[r].par_iter_mut().for_each(|x| *x = f(*x)))
        }
        Some(r) => d[r].iter_mut().for_each(|x| *x = f(*x)),
        None => for_each_offset(&l.shape, &l.strides, l.offset, |o| d[o] = f(d[o])),
    }
}
