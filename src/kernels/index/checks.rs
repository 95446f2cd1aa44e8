//! The checks and layout helpers [`gather`](super::gather) and
//! [`scatter`](super::scatter) share: the index tensor against the
//! operands' shapes, one index value against its dim, and the operands'
//! shapes and strides padded to at least 1-D.

use crate::buffer::{DType, Dims, Layout, Strided};
use crate::{bail, Result};

/// Checks `index` (int64, same ndim as `self_shape` unless both are at most
/// 1-D) against `self_shape` for gather/scatter along `dim`.
pub(super) fn check_gather_scatter(
    op: &str,
    self_shape: &[usize],
    dim: usize,
    index: &Strided,
    src_shape: Option<&[usize]>,
) -> Result<()> {
    if index.dtype() != DType::I64 {
        bail!(runtime, "{}(): Expected dtype int64 for index", op);
    }
    let (ni, ns) = (index.ndim().max(1), self_shape.len().max(1));
    if ni != ns {
        bail!(
            runtime,
            "Index tensor must have the same number of dimensions as {} tensor",
            if op == "gather" { "input" } else { "self" }
        );
    }
    if let Some(src) = src_shape {
        if src.len().max(1) != ni {
            bail!(
                runtime,
                "Index tensor must have the same number of dimensions as src tensor"
            );
        }
    }
    let idx = index.shape();
    for d in 0..idx.len() {
        let too_big_self = d != dim && self_shape.get(d).is_some_and(|&s| idx[d] > s);
        let too_big_src = src_shape.is_some_and(|s| s.get(d).is_some_and(|&s| idx[d] > s));
        if too_big_self || too_big_src {
            match src_shape {
                None => bail!(
                    runtime,
                    "Size does not match at dimension {} expected index {:?} to be no larger than self {:?} apart from dimension {}",
                    d,
                    idx,
                    self_shape,
                    dim
                ),
                Some(s) => bail!(
                    runtime,
                    "Expected index {:?} to be no larger than self {:?} apart from dimension {} and to be no larger size than src {:?}",
                    idx,
                    self_shape,
                    dim,
                    s
                ),
            }
        }
    }
    Ok(())
}

/// Checks an index value of gather/scatter (no wrapping of negatives; a
/// RuntimeError, as torch raises there).
#[inline]
pub(super) fn check_gs_index(i: i64, size: usize, dim: usize) -> Result<usize> {
    if i < 0 || i >= size as i64 {
        bail!(
            runtime,
            "index {} is out of bounds for dimension {} with size {}",
            i,
            dim,
            size
        );
    }
    Ok(i as usize)
}

/// Shape and strides of `l`, padded to at least 1-D (0-dim tensors act as
/// 1-element vectors in gather/scatter).
pub(super) fn padded(l: &Layout) -> (Dims, Dims) {
    let (mut shape, mut strides) = (l.shape.clone(), l.strides.clone());
    if shape.is_empty() {
        shape.push(1);
        strides.push(0);
    }
    (shape, strides)
}

/// `padded` with the stride of `dim` zeroed.
pub(super) fn strides_without(l: &Layout, dim: usize) -> (Dims, Dims) {
    let (shape, mut strides) = padded(l);
    strides[dim] = 0;
    (shape, strides)
}
