//! Matrix-vector products (and vector @ matrix), read in place: one dot
//! product per row, or columns added in order into the output.

use super::product::MatElem;
use super::{Mat, BATCH_PAR_THRESHOLD};

/// `dst[i] = sum_p a[i, p] * x[p]` (`m` x `k` matrix `am` in `a`, vector
/// `x.off + p * x.rs` in `xs`) when the matrix has contiguous rows (one dot
/// product per row) or contiguous columns (columns added in order into
/// the output); false, nothing written, for other layouts. Memory-bound:
/// output rows split over the threads in blocks, each element computed the
/// same way whatever the split (bitwise equal across thread counts).
pub(super) fn gemv<T: MatElem>(
    dst: &mut [T],
    a: &[T],
    am: Mat,
    xs: &[T],
    x: Mat,
    [m, k]: [usize; 2],
) -> bool {
    if am.cs != 1 && am.rs != 1 {
        return false;
    }
    let xv: Vec<T> = (0..k).map(|p| xs[x.off + p * x.rs]).collect();
    let mul_add = |acc: T, u: T, v: T| acc + u * v;
    let threads = crate::parallel::num_threads();
    let by_rows = am.cs == 1 && (am.rs != 1 || k >= m);
    let block = if threads == 1 || m * k < BATCH_PAR_THRESHOLD {
        m
    } else if by_rows {
        m.div_ceil(4 * threads).max(16)
    } else {
        // Each block reads its stretch of every column: long stretches.
        m.div_ceil(threads)
    };
    crate::parallel::for_each_block_mut(dst, block, |start, out| {
        if by_rows {
            for (i, o) in out.iter_mut().enumerate() {
                let row = am.off + (start + i) * am.rs;
                *o = super::super::slices::dot(
                    &a[row..row + k],
                    &xv,
                    T::zero(),
                    &mul_add,
                    &|u, v| u + v,
                );
            }
        } else {
            out.fill(T::zero());
            for (p, &c) in xv.iter().enumerate() {
                let col = am.off + p * am.cs + start;
                super::super::slices::update(out, &a[col..col + out.len()], &|d, v| d + c * v);
            }
        }
    });
    true
}
