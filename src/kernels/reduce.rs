//! Reductions over a set of dims: each output element folds one "lane" of
//! input elements (the elements that differ only along the reduced dims).

use crate::tensor::layout::for_each_offset;
use crate::tensor::{Dims, Element, Tensor};
use rayon::prelude::*;

/// The output shape of reducing `dims` (sorted, unique) of `shape`.
pub fn reduced_shape(shape: &[usize], dims: &[usize], keepdim: bool) -> Dims {
    let mut out = Dims::new();
    for (i, &d) in shape.iter().enumerate() {
        if dims.contains(&i) {
            if keepdim {
                out.push(1);
            }
        } else {
            out.push(d);
        }
    }
    out
}

/// `out[k] = f(lane_k)` where `lane_k` holds, in row-major order, the
/// elements of `t` (dtype `T`) at kept index `k`.
pub fn reduce<T: Element, U: Element>(
    t: &Tensor,
    dims: &[usize],
    keepdim: bool,
    f: impl Fn(&[T]) -> U + Sync + Send,
) -> Tensor {
    let l = t.layout();
    let out_shape = reduced_shape(&l.shape, dims, keepdim);
    let (mut ks, mut kst, mut rs, mut rst) = (Dims::new(), Dims::new(), Dims::new(), Dims::new());
    for i in 0..l.ndim() {
        if dims.contains(&i) {
            rs.push(l.shape[i]);
            rst.push(l.strides[i]);
        } else {
            ks.push(l.shape[i]);
            kst.push(l.strides[i]);
        }
    }
    let lane: usize = rs.iter().product();
    let outer: usize = ks.iter().product();
    let st = t.storage().read_recursive();
    let d = st.as_slice::<T>();

    let trailing = dims
        .iter()
        .enumerate()
        .all(|(j, &dim)| dim == l.ndim() - dims.len() + j);
    let out: Vec<U> = if let (true, Some(r)) = (trailing, l.contiguous_range()) {
        let data = &d[r];
        if lane == 0 {
            (0..outer).map(|_| f(&[])).collect()
        } else if outer * lane >= super::PAR_THRESHOLD && outer > 1 {
            crate::parallel::install(|| data.par_chunks(lane).map(&f).collect())
        } else {
            data.chunks(lane).map(&f).collect()
        }
    } else {
        let mut out = Vec::with_capacity(outer);
        let mut buf: Vec<T> = Vec::with_capacity(lane);
        for_each_offset(&ks, &kst, l.offset, |base| {
            buf.clear();
            for_each_offset(&rs, &rst, base, |o| buf.push(d[o]));
            out.push(f(&buf));
        });
        out
    };
    Tensor::from_data(U::wrap(out), &out_shape)
}

/// Sum of a slice with 8 independent accumulators (vectorizes, and is more
/// accurate than one running sum).
pub fn sum_slice<T: Element + std::ops::Add<Output = T>>(x: &[T]) -> T {
    let mut acc = [T::zero(); 8];
    let chunks = x.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            acc[i] = acc[i] + c[i];
        }
    }
    let mut s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for &v in rest {
        s = s + v;
    }
    s
}
