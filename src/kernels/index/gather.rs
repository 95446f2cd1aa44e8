//! torch's [`gather`] along one dim: units of whole index rows, each
//! element read as its index is checked.

use super::super::shared_out::SharedOut;
use super::checks::{check_gather_scatter, check_gs_index, padded, strides_without};
use super::GATHER_UNIT;
use crate::buffer::layout::for_each_offset2;
use crate::buffer::pool;
use crate::buffer::{Dims, Element, Strided};
use crate::parallel::{for_each_index, num_threads};
use crate::Result;

/// One run of gather's output: `out[j] = src[a + j * ia + index[b + j *
/// ib] * stride]`, zero where the index is outside `0..size` (the first
/// such index is returned). The usual case, the gathered dim innermost
/// (`ia == 0`) with a contiguous index run, is a tight loop whose loads
/// overlap in flight.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn gather_run<T: Element>(
    out: &mut [T],
    src: &[T],
    a: usize,
    ia: usize,
    stride: usize,
    size: usize,
    index: &[i64],
    b: usize,
    ib: usize,
) -> Option<i64> {
    let mut bad = None;
    if ia == 0 && ib == 1 && size > 0 {
        let idx = &index[b..b + out.len()];
        let lane = &src[a..a + (size - 1) * stride + 1];
        if stride == 1 {
            for (o, &i) in out.iter_mut().zip(idx) {
                *o = match lane.get(i as u64 as usize) {
                    Some(&v) if i >= 0 => v,
                    _ => {
                        bad.get_or_insert(i);
                        T::zero()
                    }
                };
            }
        } else {
            for (o, &i) in out.iter_mut().zip(idx) {
                *o = if (i as u64) < size as u64 {
                    lane[i as usize * stride]
                } else {
                    bad.get_or_insert(i);
                    T::zero()
                };
            }
        }
        return bad;
    }
    for (j, o) in out.iter_mut().enumerate() {
        let i = index[b + j * ib];
        *o = if (i as u64) < size as u64 {
            src[a + j * ia + i as usize * stride]
        } else {
            bad.get_or_insert(i);
            T::zero()
        };
    }
    bad
}

/// `out[p] = src[p with p[dim] = index[p]]`, of `index`'s shape. One pass:
/// each element is read as its index is checked (nothing is written to a
/// tensor anyone sees before all are valid).
pub fn gather(src: &Strided, dim: usize, index: &Strided) -> Result<Strided> {
    check_gather_scatter("gather", src.shape(), dim, index, None)?;
    let size = src.shape().get(dim).copied().unwrap_or(1);
    let stride = src.strides().get(dim).copied().unwrap_or(0);
    let (_, sst) = strides_without(src.layout(), dim);
    let (ishape, istrides) = padded(index.layout());
    fn go<T: Element>(
        src: &Strided,
        index: &Strided,
        (ishape, istrides, sst): (&[usize], &[usize], &[usize]),
        (dim, size, stride): (usize, usize, usize),
    ) -> Result<Strided> {
        let ist = index.storage().read_recursive();
        let iv = ist.as_slice::<i64>();
        let st = src.storage().read_recursive();
        let d = st.as_slice::<T>();
        let mut out = pool::try_buffer::<T>(index.numel())?;
        // Units of whole rows along the index's dim 0, written in place:
        // loads of different rows overlap in flight and over the threads.
        // A 1-D index is one row.
        let (ishape, istrides, sst) = if ishape.len() == 1 {
            let two =
                |v: &[usize], lead: usize| -> Dims { [lead].iter().chain(v).copied().collect() };
            (two(ishape, 1), two(istrides, 0), two(sst, 0))
        } else {
            (ishape.into(), istrides.into(), sst.into())
        };
        let n = ishape.len();
        let (inner, ia, ib) = (ishape[n - 1], sst[n - 1], istrides[n - 1]);
        let rows = ishape[0];
        let per_row = out.len() / rows.max(1);
        let rows_per_unit = (GATHER_UNIT / per_row.max(1)).max(1);
        let units = rows.div_ceil(rows_per_unit);
        let shared = SharedOut::new(&mut out);
        // The first bad index in row order (the lowest unit's), as serially.
        let bad = parking_lot::Mutex::new(None::<(usize, i64)>);
        let unit = |u: usize| {
            let (r0, r1) = (u * rows_per_unit, ((u + 1) * rows_per_unit).min(rows));
            // SAFETY: unit u alone writes rows r0..r1 of the output, which
            // lie inside it (r1 <= rows, per_row elements each).
            let o = unsafe { shared.run(r0 * per_row, (r1 - r0) * per_row) };
            let mut runs = o.chunks_exact_mut(inner.max(1));
            let mut first_bad = None;
            let outer: Dims = [r1 - r0].iter().chain(&ishape[1..n - 1]).copied().collect();
            for_each_offset2(
                &outer,
                &sst[..n - 1],
                src.storage_offset() + r0 * sst[0],
                &istrides[..n - 1],
                index.storage_offset() + r0 * istrides[0],
                |a, b| {
                    let Some(run) = runs.next() else { return };
                    if let Some(i) = gather_run(run, d, a, ia, stride, size, iv, b, ib) {
                        first_bad.get_or_insert(i);
                    }
                },
            );
            if let Some(i) = first_bad {
                let mut b = bad.lock();
                if b.is_none_or(|(v, _)| u < v) {
                    *b = Some((u, i));
                }
            }
        };
        if num_threads() < 2 || out.len() < 2 * GATHER_UNIT || units < 2 {
            (0..units).for_each(unit);
        } else {
            for_each_index(units, &unit);
        }
        if let Some((_, i)) = bad.into_inner() {
            check_gs_index(i, size, dim)?;
        }
        Ok(Strided::contiguous(T::wrap(out), index.shape()))
    }
    crate::dispatch_all!(src.dtype(), T => go::<T>(
        src, index, (&ishape, &istrides, &sst), (dim, size, stride)
    ))
}
