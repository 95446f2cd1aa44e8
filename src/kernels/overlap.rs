//! Overlap checks of the iteration layer (torch's MemOverlap): whether a
//! layout repeats elements, whether two views share memory, and the checks
//! that refuse a write whose output overlaps itself or an input.

use crate::buffer::layout::Layout;
use crate::buffer::Strided;
use crate::{bail, Result};
use smallvec::SmallVec;
use std::sync::Arc;

/// True when `l` covers a block of memory without gaps or repeats (any dim
/// order): torch's `is_non_overlapping_and_dense` (the dims of size 2 and
/// more, ordered by stride, each have the product of the sizes below it).
pub fn is_non_overlapping_dense(l: &Layout) -> bool {
    let mut dims: SmallVec<[(usize, usize); 6]> = l
        .shape
        .iter()
        .copied()
        .zip(l.strides.iter().copied())
        .filter(|&(d, _)| d >= 2)
        .collect();
    dims.sort_unstable_by_key(|&(d, s)| (s, d));
    let mut expected = 1;
    for (d, s) in dims {
        if s != expected {
            return false;
        }
        expected *= d;
    }
    true
}

/// True when two different indices of `l` can address one element: a
/// broadcast (stride 0) dim, or strides too small for the dims inside them
/// (checked exactly after sorting by stride, as for any layout a view op
/// produces).
pub fn has_internal_overlap(l: &Layout) -> bool {
    if l.shape.contains(&0) {
        return false;
    }
    let mut dims: SmallVec<[(usize, usize); 6]> = l
        .shape
        .iter()
        .copied()
        .zip(l.strides.iter().copied())
        .filter(|&(d, _)| d > 1)
        .collect();
    if dims.iter().any(|&(_, s)| s == 0) {
        return true;
    }
    dims.sort_unstable_by_key(|&(_, s)| s);
    // Each stride must exceed the extent of all smaller-strided dims.
    let mut extent = 0;
    for (d, s) in dims {
        if s <= extent {
            return true;
        }
        extent += (d - 1) * s;
    }
    false
}

/// How the memory of two tensors relates (torch's `MemOverlapStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemOverlap {
    /// No element of one is an element of the other.
    No,
    /// The same elements in the same order (one view seen twice).
    Full,
    /// Some elements shared, or the same elements in another order.
    Partial,
    /// Not decided cheaply (a layout with gaps or repeats); torch lets
    /// these through, and so do we.
    TooHard,
}

/// torch's `get_overlap_status`: compares the memory ranges of two
/// non-overlapping dense layouts over one storage.
pub fn mem_overlap(a: &Strided, b: &Strided) -> MemOverlap {
    let (la, lb) = (a.layout(), b.layout());
    if la.numel() == 0 || lb.numel() == 0 || !Arc::ptr_eq(a.storage(), b.storage()) {
        return MemOverlap::No;
    }
    if !is_non_overlapping_dense(la) || !is_non_overlapping_dense(lb) {
        return MemOverlap::TooHard;
    }
    let (a0, b0) = (la.offset, lb.offset);
    let (a1, b1) = (a0 + la.numel(), b0 + lb.numel());
    if a0 == b0 && a1 == b1 {
        // torch compares the whole stride lists: `x` and `x.unsqueeze(0)`
        // are a partial overlap too.
        return match la.strides == lb.strides {
            true => MemOverlap::Full,
            false => MemOverlap::Partial,
        };
    }
    match a0 < b1 && b0 < a1 {
        true => MemOverlap::Partial,
        false => MemOverlap::No,
    }
}

/// torch's `assert_no_internal_overlap`: a written tensor may not address
/// one element twice (an `expand`ed view).
pub fn assert_no_internal_overlap(l: &Layout) -> Result<()> {
    if has_internal_overlap(l) {
        bail!(
            runtime,
            "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation."
        );
    }
    Ok(())
}

/// torch's `assert_no_partial_overlap`: the written tensor `out` may be
/// the input itself (an in-place op reading its own value) but may not
/// share only some elements with it, or the same ones in another order.
pub fn assert_no_partial_overlap(out: &Strided, input: &Strided) -> Result<()> {
    if mem_overlap(out, input) == MemOverlap::Partial {
        bail!(runtime, "{PARTIAL_OVERLAP}");
    }
    Ok(())
}

/// torch's `assert_no_overlap`: no element of `input` (an index, or a
/// source read in an order other than the writes) may be written.
pub fn assert_no_overlap(out: &Strided, input: &Strided) -> Result<()> {
    if matches!(
        mem_overlap(out, input),
        MemOverlap::Partial | MemOverlap::Full
    ) {
        bail!(runtime, "{PARTIAL_OVERLAP}");
    }
    Ok(())
}

/// torch's message for a write that shares memory with an input.
pub(crate) const PARTIAL_OVERLAP: &str = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.";

/// The checks every elementwise write runs before touching memory (torch's
/// TensorIterator `check_mem_overlap`): `out` has no repeated element and
/// shares no element with an input other than the whole of it.
pub fn check_write(out: &Strided, inputs: &[&Strided]) -> Result<()> {
    assert_no_internal_overlap(out.layout())?;
    for i in inputs {
        assert_no_partial_overlap(out, i)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(shape: &[usize], strides: &[usize], offset: usize) -> Layout {
        Layout::strided(shape, strides, offset)
    }

    #[test]
    fn overlap_checks() {
        assert!(has_internal_overlap(&layout(&[3, 4], &[1, 0], 0)));
        assert!(!has_internal_overlap(&layout(&[3, 4], &[1, 3], 0)));
        assert!(!has_internal_overlap(&layout(&[3, 4], &[8, 2], 0)));
        assert!(has_internal_overlap(&layout(&[3, 4], &[2, 1], 0)));
        assert!(!has_internal_overlap(&layout(&[3, 1], &[1, 0], 0)));
        assert!(!has_internal_overlap(&layout(&[0, 3], &[1, 0], 0)));
        assert!(is_non_overlapping_dense(&layout(&[4, 3], &[1, 4], 0)));
        assert!(!is_non_overlapping_dense(&layout(&[4, 3], &[6, 2], 0)));
    }

    #[test]
    fn memory_overlap_between_views() {
        use crate::buffer::{Element, Strided};
        let base = Strided::contiguous(f32::wrap(vec![0.0; 12]), &[12]);
        let other = Strided::contiguous(f32::wrap(vec![0.0; 12]), &[12]);
        let view = |shape: &[usize], strides: &[usize], offset| {
            base.with_layout(layout(shape, strides, offset))
        };
        let (a, b) = (view(&[5], &[1], 0), view(&[5], &[1], 1));
        assert_eq!(mem_overlap(&a, &b), MemOverlap::Partial);
        assert_eq!(mem_overlap(&a, &view(&[5], &[1], 5)), MemOverlap::No);
        assert_eq!(mem_overlap(&a, &a.clone()), MemOverlap::Full);
        assert_eq!(mem_overlap(&a, &other), MemOverlap::No);
        // the same memory in another order (a transpose) is partial
        let (m, mt) = (view(&[3, 4], &[4, 1], 0), view(&[3, 4], &[1, 3], 0));
        assert_eq!(mem_overlap(&m, &mt), MemOverlap::Partial);
        // as torch: one element seen as 0-d and as 1-d is a partial overlap
        assert_eq!(
            mem_overlap(&view(&[], &[], 2), &view(&[1], &[7], 2)),
            MemOverlap::Partial
        );
        // gaps: not decided, allowed as in torch
        assert_eq!(
            mem_overlap(&view(&[3], &[2], 0), &view(&[3], &[2], 1)),
            MemOverlap::TooHard
        );
        assert!(check_write(&a, &[&a]).is_ok());
        assert!(check_write(&a, &[&b]).is_err());
        assert!(check_write(&view(&[2, 3], &[0, 1], 0), &[]).is_err());
        assert!(assert_no_overlap(&a, &a).is_err());
    }
}
