//! torch's [`scatter`] (and scatter_add) along one dim, from a tensor or a
//! scalar: every index checked first, then the walk split over the threads
//! where no two units can write the same element.

use super::super::shared_out::SharedOut;
use super::checks::{check_gather_scatter, check_gs_index, padded, strides_without};
use super::{Accumulate, GATHER_UNIT};
use crate::buffer::layout::{for_each_offset, for_each_offset3};
use crate::buffer::{Dims, Strided};
use crate::parallel::{for_each_index, num_threads};
use crate::{bail, Result};

/// What scatter writes: a tensor of values (read at the index's positions)
/// or one scalar value (already of the destination's dtype).
pub enum ScatterSrc<'a> {
    Array(&'a Strided),
    Value(crate::buffer::Scalar),
}

/// `dst[p with p[dim] = index[p]] = src[p]` (or `+=` with `accumulate`)
/// for every position `p` of `index`, in `dst`'s memory.
pub fn scatter(
    dst: &Strided,
    dim: usize,
    index: &Strided,
    src: ScatterSrc<'_>,
    accumulate: bool,
) -> Result<()> {
    let op = if accumulate { "scatter_add" } else { "scatter" };
    let src_shape = match &src {
        ScatterSrc::Array(s) => Some(s.shape()),
        ScatterSrc::Value(_) => None,
    };
    check_gather_scatter(op, dst.shape(), dim, index, src_shape)?;
    if let ScatterSrc::Array(s) = &src {
        if s.dtype() != dst.dtype() {
            bail!(
                runtime,
                "{}(): Expected self.dtype to be equal to src.dtype",
                op
            );
        }
    }
    let size = dst.shape().get(dim).copied().unwrap_or(1);
    let stride = dst.strides().get(dim).copied().unwrap_or(0);
    let (ishape, istrides) = padded(index.layout());
    let (_, dst_st) = strides_without(dst.layout(), dim);
    let src_st = match &src {
        ScatterSrc::Array(s) => padded(s.layout()).1,
        ScatterSrc::Value(_) => smallvec::smallvec![0; ishape.len()],
    };
    // Every index is checked before anything is written.
    {
        let ist = index.storage().read_recursive();
        let iv = ist.as_slice::<i64>();
        let mut bad = None;
        match index.layout().contiguous_range() {
            Some(r) => {
                let iv = &iv[r];
                // A branch-free scan (vectorised), split over the threads;
                // the first bad index is looked up only when there is one.
                let pieces = iv.len().div_ceil(1 << 16).max(1);
                let any = std::sync::atomic::AtomicBool::new(false);
                let scan = |p: usize| {
                    let part = &iv[p << 16..((p + 1) << 16).min(iv.len())];
                    if part
                        .iter()
                        .fold(false, |acc, &i| acc | ((i as u64) >= size as u64))
                    {
                        any.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                };
                if pieces > 1 && num_threads() > 1 {
                    for_each_index(pieces, &scan);
                } else {
                    (0..pieces).for_each(scan);
                }
                if any.into_inner() {
                    bad = iv.iter().copied().find(|&i| (i as u64) >= size as u64);
                }
            }
            None => for_each_offset(&ishape, &istrides, index.storage_offset(), |b| {
                let i = iv[b];
                if (i as u64) >= size as u64 {
                    bad.get_or_insert(i);
                }
            }),
        }
        if let Some(i) = bad {
            check_gs_index(i, size, dim)?;
        }
    }
    // Index positions that differ outside `dim` write different elements
    // of `dst`, so the walk is split over another dim (the first one, or
    // the last when scattering along the first), each unit walking its
    // positions in row-major order: every element receives its values in
    // the order a serial walk gives them, whatever the thread count. Not when `dst`
    // repeats elements or shares memory with `src`: then serially.
    let n = ishape.len();
    let split = if dim != 0 { 0 } else { n - 1 };
    let shares = match &src {
        ScatterSrc::Array(s) => std::sync::Arc::ptr_eq(s.storage(), dst.storage()),
        ScatterSrc::Value(_) => false,
    };
    let parallel = split != dim
        && !shares
        && !super::super::overlap::has_internal_overlap(dst.layout())
        && num_threads() > 1
        && ishape.iter().product::<usize>() >= 2 * GATHER_UNIT;
    let strides = [istrides.clone(), src_st, dst_st];
    let bases = [
        index.storage_offset(),
        match &src {
            ScatterSrc::Array(s) => s.storage_offset(),
            ScatterSrc::Value(_) => 0,
        },
        dst.storage_offset(),
    ];
    // Units take slabs of the split dim: whole rows when it is the first,
    // blocks of columns when the last (each unit then reads its part of
    // every row, in order).
    let numel: usize = ishape.iter().product();
    let slab = if !parallel {
        ishape[split].max(1)
    } else if split == 0 {
        (GATHER_UNIT / (numel / ishape[0].max(1)).max(1)).max(1)
    } else {
        ishape[split].div_ceil(4 * num_threads()).clamp(1, 32)
    };
    fn go<T: Accumulate>(
        dst: &Strided,
        index: &Strided,
        src: &ScatterSrc<'_>,
        (shape, strides, bases): (&[usize], &[Dims; 3], [usize; 3]),
        (split, slab): (usize, usize),
        stride: usize,
        accumulate: bool,
    ) {
        let ist = index.storage().read_recursive();
        let iv = ist.as_slice::<i64>();
        // A source sharing dst's storage is read from a copy.
        let (src_vals, value): (Option<Vec<T>>, T) = match src {
            ScatterSrc::Array(s) if std::sync::Arc::ptr_eq(s.storage(), dst.storage()) => (
                Some(s.storage().read_recursive().as_slice::<T>().to_vec()),
                T::zero(),
            ),
            ScatterSrc::Array(_) => (None, T::zero()),
            ScatterSrc::Value(x) => (None, x.cast::<T>()),
        };
        let src_guard = match src {
            ScatterSrc::Array(s) if src_vals.is_none() => Some(s.storage().read_recursive()),
            _ => None,
        };
        let sv: &[T] = match (&src_vals, &src_guard) {
            (Some(v), _) => v,
            (None, Some(g)) => g.as_slice::<T>(),
            (None, None) => &[],
        };
        let is_value = matches!(src, ScatterSrc::Value(_));
        let mut st = dst.storage().write();
        let d = st.as_mut_slice::<T>();
        let out = SharedOut::new(d);
        let units = shape[split].div_ceil(slab);
        let unit = |u: usize| {
            let (c0, c1) = (u * slab, ((u + 1) * slab).min(shape[split]));
            let mut sub: Dims = shape.into();
            sub[split] = c1 - c0;
            let at = |k: usize| bases[k] + c0 * strides[k][split];
            let n = sub.len();
            let steps = [strides[0][n - 1], strides[1][n - 1], strides[2][n - 1]];
            let outer: [Dims; 3] = std::array::from_fn(|k| strides[k][..n - 1].into());
            let src = (!is_value).then_some(sv);
            for_each_offset3(&sub[..n - 1], &outer, [at(0), at(1), at(2)], |b, s, a| {
                // SAFETY: the index was checked to lie inside `dim`, so
                // every element written is inside dst's storage; units
                // write disjoint elements (their positions differ along the
                // split dim, which is not `dim`, and dst repeats no
                // element), and a single unit runs when that does not hold.
                unsafe {
                    let at = [b, s, a];
                    let len = sub[n - 1];
                    let run = if accumulate {
                        scatter_run::<T, true>
                    } else {
                        scatter_run::<T, false>
                    };
                    run(out, iv, src, value, at, steps, stride, len)
                }
            });
        };
        // (one unit, the whole walk, unless a parallel split was chosen)
        if units > 1 {
            for_each_index(units, &unit);
        } else {
            (0..units).for_each(unit);
        }
    }
    dispatch_acc!(dst.dtype(), T => go::<T>(
        dst, index, &src, (&ishape, &strides, bases), (split, slab), stride, accumulate
    ));
    Ok(())
}

/// One run of scatter: `dst[a + j * ia + index[b + j * ib] * stride]`
/// set (or, with `ACC`, added to) `src[s + j * is]` (or `value` without a
/// source) for `j < len`. Every argument is a value, so the loop keeps them
/// in registers across its stores.
///
/// # Safety
/// Every index read is in `0..size` of the scattered dim, every element
/// written lies inside the buffer behind `out`, and no other thread
/// touches those elements meanwhile.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn scatter_run<T: Accumulate, const ACC: bool>(
    out: SharedOut<T>,
    index: &[i64],
    src: Option<&[T]>,
    value: T,
    [b, s, a]: [usize; 3],
    [ib, is, ia]: [usize; 3],
    stride: usize,
    len: usize,
) {
    let put = |p: usize, v: T| {
        let e = out.at(p);
        *e = if ACC { e.acc(v) } else { v };
    };
    match src {
        Some(src) => {
            for j in 0..len {
                put(
                    a + j * ia + index[b + j * ib] as usize * stride,
                    src[s + j * is],
                );
            }
        }
        None => {
            for j in 0..len {
                put(a + j * ia + index[b + j * ib] as usize * stride, value);
            }
        }
    }
}
