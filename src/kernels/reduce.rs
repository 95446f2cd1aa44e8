//! Reductions and scans over a set of dims: each output element (or output
//! lane) comes from one "lane" of input elements, the elements that differ
//! only along the reduced dims.

use super::shared_out::SharedOut;
use super::slices;
use crate::buffer::{pool, Dims, Element, Float, Layout, Strided};
use crate::parallel::{for_each_chunk_mut_aligned, map_collect};

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

/// Calls `f(data, lane)` where `data` holds all of `t`'s elements (dtype
/// `T`) ordered with the kept dims first and the reduced `dims` last, so
/// that consecutive chunks of `lane` elements are the lanes, in row-major
/// order of the kept index. Borrows the storage when it is already laid out
/// that way, else gathers once into a buffer.
pub fn with_lanes<T: Element, R>(
    t: &Strided,
    dims: &[usize],
    f: impl FnOnce(&[T], usize) -> R,
) -> R {
    debug_assert!(t.dtype() == T::DTYPE);
    let l = t.layout();
    let (mut sh, mut st) = (Dims::new(), Dims::new());
    for i in (0..l.ndim()).filter(|i| !dims.contains(i)) {
        sh.push(l.shape[i]);
        st.push(l.strides[i]);
    }
    for &i in dims {
        sh.push(l.shape[i]);
        st.push(l.strides[i]);
    }
    let lane: usize = dims.iter().map(|&d| l.shape[d]).product();
    let guard = t.storage().read_recursive();
    let d = guard.as_slice::<T>();
    let trailing = dims
        .iter()
        .enumerate()
        .all(|(j, &dim)| dim == l.ndim() - dims.len() + j);
    if let (true, Some(r)) = (trailing, l.contiguous_range()) {
        return f(&d[r], lane);
    }
    // One strided copy through the iteration layer (tiled when the lanes
    // run across memory).
    let mut buf = pool::buffer::<T>(l.numel());
    let from = Layout {
        shape: sh.clone(),
        strides: st,
        offset: l.offset,
    };
    super::elementwise::map(
        &mut buf,
        &Layout::contiguous(&sh),
        d,
        &from,
        1 << 17,
        &|v| v,
    )
    .expect("a fresh contiguous buffer and a layout inside its storage");
    drop(guard);
    f(&buf, lane)
}

/// Folds `t` (dtype `T`) over `dims` (sorted, unique) with `f`: a tensor
/// of the reduced shape (or torch's out-of-memory error).
pub fn fold<T, F>(t: &Strided, dims: &[usize], keepdim: bool, f: &F) -> crate::Result<Strided>
where
    T: Element + super::fold::FoldElem,
    F: super::fold::Fold<T>,
{
    debug_assert!(t.dtype() == T::DTYPE);
    let out_shape = reduced_shape(t.shape(), dims, keepdim);
    let mut out = pool::try_buffer::<T>(out_shape.iter().product())?;
    {
        let st = t.storage().read_recursive();
        super::fold::fold(&mut out, st.as_slice::<T>(), t.layout(), dims, f);
    }
    Ok(Strided::contiguous(T::wrap(out), &out_shape))
}

/// `f(lane_k)` for every lane (see [`with_lanes`]), in order; rayon above
/// the size threshold.
pub fn reduce_lanes<T: Element, R: Send>(
    t: &Strided,
    dims: &[usize],
    f: impl Fn(&[T]) -> R + Sync + Send,
) -> Vec<R> {
    let outer: usize = (0..t.ndim())
        .filter(|i| !dims.contains(i))
        .map(|i| t.shape()[i])
        .product();
    with_lanes::<T, _>(t, dims, |data, lane| {
        if lane == 0 {
            (0..outer).map(|_| f(&[])).collect()
        } else {
            let par = outer * lane >= super::PAR_THRESHOLD && outer > 1;
            map_collect(outer, par, |k| f(&data[k * lane..(k + 1) * lane]))
        }
    })
}

/// `out[k] = f(lane_k)`: a tensor of the reduced shape.
pub fn reduce<T: Element, U: Element>(
    t: &Strided,
    dims: &[usize],
    keepdim: bool,
    f: impl Fn(&[T]) -> U + Sync + Send,
) -> Strided {
    let out_shape = reduced_shape(t.shape(), dims, keepdim);
    Strided::contiguous(U::wrap(reduce_lanes(t, dims, f)), &out_shape)
}

/// A scan along `dim`: `f(lane_in, lane_out)` fills each output lane from
/// the matching input lane. The result has `t`'s shape and is contiguous.
pub fn map_lanes<T: Element, U: Element>(
    t: &Strided,
    dim: usize,
    f: impl Fn(&[T], &mut [U]) + Sync + Send,
) -> Strided {
    let nd = t.ndim();
    if nd == 0 {
        let mut out = [U::zero()];
        with_lanes::<T, _>(t, &[], |d, _| f(d, &mut out));
        return Strided::contiguous(U::wrap(out.to_vec()), &[]);
    }
    let out = with_lanes::<T, _>(t, &[dim], |data, lane| {
        let mut out = vec![U::zero(); data.len()];
        if lane > 0 {
            let min_len = super::PAR_THRESHOLD.max(2 * lane);
            for_each_chunk_mut_aligned(&mut out, min_len, lane, |s, o| {
                for (o, i) in o.chunks_mut(lane).zip(data[s..].chunks(lane)) {
                    f(i, o)
                }
            });
        }
        out
    });
    if dim == nd - 1 {
        return Strided::contiguous(U::wrap(out), t.shape());
    }
    // `out` is laid out with `dim` last: view it back in `t`'s dim order and
    // make that contiguous.
    let mut perm: Vec<usize> = (0..nd).filter(|&i| i != dim).collect();
    perm.push(dim);
    let pshape: Dims = perm.iter().map(|&i| t.shape()[i]).collect();
    let permuted = Strided::contiguous(U::wrap(out), &pshape);
    let mut inverse = vec![0usize; nd];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p] = i;
    }
    let l = permuted
        .layout()
        .permute(&inverse)
        .expect("valid permutation");
    pool::or_panic(super::copy::contiguous_as::<U>(&permuted.with_layout(l)))
}

/// Runs `op` along `dim` of `t` (made contiguous first if it is not): the
/// result has `t`'s shape with `dim` of length `op.out_len(n)`, or
/// `out_shape` when given (the same elements in another shape, e.g. with a
/// reduced dim dropped). Fails only with torch's out-of-memory error.
pub fn along_dim<T, U, A>(
    t: &Strided,
    dim: usize,
    op: &A,
    out_shape: Option<&[usize]>,
) -> crate::Result<Strided>
where
    T: Element,
    U: Element,
    A: super::lanes::AlongDim<T, U>,
{
    debug_assert!(t.dtype() == T::DTYPE);
    let shape = t.shape();
    let (outer, n, inner) = around_dim(shape, dim);
    let m = op.out_len(n);
    let out_shape_given = out_shape;
    let mut out_shape: Dims = shape.into();
    if !shape.is_empty() {
        out_shape[dim] = m;
    }
    let mut out = pool::try_buffer::<U>(outer * m * inner)?;
    let x = if t.is_contiguous() {
        t.clone()
    } else {
        super::copy::contiguous_as::<T>(t)?
    };
    {
        let st = x.storage().read_recursive();
        let o = x.storage_offset();
        let data = &st.as_slice::<T>()[o..o + x.numel()];
        super::lanes::along(data, [outer, n, inner], &mut out, op);
    }
    Ok(Strided::contiguous(
        U::wrap(out),
        out_shape_given.unwrap_or(&out_shape),
    ))
}

/// `shape` as `[outer, size of dim, inner]` (`[1, 1, 1]` for a scalar).
fn around_dim(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    if shape.is_empty() {
        return (1, 1, 1);
    }
    (
        shape[..dim].iter().product(),
        shape[dim],
        shape[dim + 1..].iter().product(),
    )
}

/// [`super::lanes::prod_others_vjp`] along `dim` of `x` with `g` (both of
/// `x`'s shape and dtype; made contiguous first): a fresh contiguous tensor.
pub fn prod_others_vjp<T: Float>(x: &Strided, g: &Strided, dim: usize) -> crate::Result<Strided> {
    debug_assert!(x.dtype() == T::DTYPE && g.dtype() == T::DTYPE && x.shape() == g.shape());
    let shape = x.shape();
    let (outer, n, inner) = around_dim(shape, dim);
    let mut out = pool::try_buffer::<T>(x.numel())?;
    let x = super::copy::contiguous_as::<T>(x)?;
    let g = super::copy::contiguous_as::<T>(g)?;
    {
        let (sx, sg) = (x.storage().read_recursive(), g.storage().read_recursive());
        let (ox, og) = (x.storage_offset(), g.storage_offset());
        let xd = &sx.as_slice::<T>()[ox..ox + x.numel()];
        let gd = &sg.as_slice::<T>()[og..og + g.numel()];
        super::lanes::prod_others_vjp(xd, gd, [outer, n, inner], &mut out)?;
    }
    Ok(Strided::contiguous(T::wrap(out), shape))
}

/// `out[k] = finish(s_k)` where `s_k` is the sum of `f(v)` over lane `k`
/// of `t` (dtype `T`) over `dims`, accumulated in `T` as torch does (a
/// float32 norm of 1e20s overflows in both): a tensor of the reduced
/// shape. Short lanes go many at a time through one SIMD call (float64 in
/// 8 partials, float32 in [`slices::fold_lanes`]' 32); longer ones in
/// pieces of [`VAR_PIECE`] elements added in order. Each lane's sum is
/// computed alone, in an order that does not depend on the thread count.
pub fn reduce_sum_of<T: Float>(
    t: &Strided,
    dims: &[usize],
    keepdim: bool,
    f: impl Fn(T) -> T + Sync + Send,
    finish: impl Fn(T) -> T + Sync + Send,
) -> Strided {
    let out_shape = reduced_shape(t.shape(), dims, keepdim);
    let outer: usize = out_shape.iter().product();
    let add = |a: T, b: T| a + b;
    let out = with_lanes::<T, _>(t, dims, |data, lane| {
        let mut out = pool::buffer::<T>(outer);
        if lane >= WIDE_SUM_MIN {
            let par = outer * lane >= super::PAR_THRESHOLD && outer > 1;
            let min = if par { 1 } else { usize::MAX };
            for_each_chunk_mut_aligned(&mut out, min, 1, |s, o| {
                for (k, v) in o.iter_mut().enumerate() {
                    *v = finish(sum_pieces_of(&data[(s + k) * lane..(s + k + 1) * lane], &f));
                }
            });
            return out;
        }
        let grain = (super::PAR_THRESHOLD / lane.max(1)).max(1);
        crate::parallel::for_each_chunk_mut(&mut out, grain, |s, o| {
            let x = &data[s * lane..(s + o.len()) * lane];
            if slices::short_lane(lane, std::mem::size_of::<T>()) {
                slices::fold_lanes_short(x, lane, lane, 1, T::zero(), &f, &add, o);
            } else {
                slices::map_fold_lanes(x, lane, lane, T::zero(), &f, &add, o);
            }
            o.iter_mut().for_each(|v| *v = finish(*v));
        });
        out
    });
    Strided::contiguous(T::wrap(out), &out_shape)
}

/// The sum of `f(v)` over `x` in `T`: pieces of [`VAR_PIECE`] elements,
/// each by [`slices::map_fold_wide`] (split over the threads for a long
/// lane), added in order, so the result does not depend on the thread
/// count.
fn sum_pieces_of<T: Float>(x: &[T], f: &(impl Fn(T) -> T + Sync)) -> T {
    let add = |a: T, b: T| a + b;
    let n = x.len();
    let pieces = n.div_ceil(VAR_PIECE).max(1);
    if pieces == 1 {
        return slices::map_fold_wide(x, T::zero(), f, &add);
    }
    let mut sums = vec![T::zero(); pieces];
    for_each_chunk_mut_aligned(&mut sums, 1, 1, |start, chunk| {
        for (i, v) in chunk.iter_mut().enumerate() {
            let p = start + i;
            *v = slices::map_fold_wide(
                &x[p * VAR_PIECE..((p + 1) * VAR_PIECE).min(n)],
                T::zero(),
                f,
                &add,
            );
        }
    });
    sums.into_iter().fold(T::zero(), add)
}

/// Sum of squares, accumulated in f64.
pub fn sum_sq_f64<T: Element>(x: &[T]) -> f64 {
    sum_in_pieces(x, |v| v * v)
}

/// The sum of `f(v)` in f64 over `x`: pieces of [`VAR_PIECE`] elements
/// (split over the threads for a long lane) added in order, so the result
/// does not depend on the thread count.
pub fn sum_in_pieces<T: Element>(x: &[T], f: impl Fn(f64) -> f64 + Sync) -> f64 {
    let n = x.len();
    let pieces = n.div_ceil(VAR_PIECE).max(1);
    if pieces == 1 {
        return sum8(x, f);
    }
    let mut sums = vec![0.0f64; pieces];
    crate::parallel::for_each_chunk_mut_aligned(&mut sums, 1, 1, |start, chunk| {
        for (i, v) in chunk.iter_mut().enumerate() {
            let p = start + i;
            *v = sum8(&x[p * VAR_PIECE..((p + 1) * VAR_PIECE).min(n)], &f);
        }
    });
    sums.iter().sum()
}

/// Maximum (`want_max`) or minimum of a non-empty lane with the index of its
/// first occurrence. NaN wins (first NaN), as in torch.
pub fn arg_extreme<T: Element>(x: &[T], want_max: bool) -> (T, i64) {
    let mut best = x[0];
    let mut bi = 0usize;
    #[allow(clippy::eq_op)]
    let is_nan = |v: T| v != v;
    if is_nan(best) {
        return (best, 0);
    }
    for (i, &v) in x.iter().enumerate().skip(1) {
        if is_nan(v) {
            return (v, i as i64);
        }
        if (want_max && v > best) || (!want_max && v < best) {
            best = v;
            bi = i;
        }
    }
    (best, bi as i64)
}

/// [`arg_extreme`] of every lane along the middle dim of a contiguous
/// `[outer, n, inner]` buffer (`n > 0`, `inner > 1`): values and indices
/// `[outer, inner]`. Blocks of neighbouring lanes fold whole rows (SIMD
/// across the lanes) instead of gathering each lane; split over blocks.
pub fn arg_extreme_rows<T: Element>(
    x: &[T],
    [outer, n, inner]: [usize; 3],
    want_max: bool,
) -> (Vec<T>, Vec<i64>) {
    const W: usize = 512;
    assert!(
        n > 0 && x.len() == outer * n * inner,
        "arg_extreme_rows: sizes"
    );
    let mut vals = pool::buffer::<T>(outer * inner);
    let mut at = pool::buffer::<i64>(outer * inner);
    let (vo, ao) = (SharedOut::new(&mut vals), SharedOut::new(&mut at));
    let blocks = inner.div_ceil(W);
    let run = |u: usize| {
        let (o, j0) = (u / blocks, (u % blocks) * W);
        let w = W.min(inner - j0);
        // SAFETY: unit u alone writes outputs o * inner + j0 .. + w (units
        // partition [outer, inner]); both buffers outlive the call.
        let (best, idx) = unsafe { (vo.run(o * inner + j0, w), ao.run(o * inner + j0, w)) };
        let row = |r: usize| &x[(o * n + r) * inner + j0..][..w];
        best.copy_from_slice(row(0));
        idx.fill(0);
        for r in 1..n {
            super::slices::extreme_step(best, idx, row(r), r as i64, want_max);
        }
    };
    let units = outer * blocks;
    if units > 1 && outer * n * inner >= super::PAR_THRESHOLD {
        crate::parallel::for_each_index(units, &run);
    } else {
        (0..units).for_each(run);
    }
    (vals, at)
}

/// NaN-propagating maximum or minimum of a non-empty lane.
pub fn extreme<T: Element>(x: &[T], want_max: bool) -> T {
    arg_extreme(x, want_max).0
}

/// Elements per piece of [`var_f64`].
const VAR_PIECE: usize = 1 << 14;

/// Lanes from this length on are summed by [`super::slices::sum_f64_of`]
/// (32 partials, on the best SIMD path); shorter ones by the inlined loop
/// below, whose fixed costs are lower.
const WIDE_SUM_MIN: usize = 256;

/// The sum of `f(v)` in f64 over `x`. Short lanes: 8 independent
/// accumulators (so the loop vectorises and is not one long chain of
/// dependent adds).
#[inline(always)]
fn sum8<T: Element>(x: &[T], f: impl Fn(f64) -> f64) -> f64 {
    if x.len() >= WIDE_SUM_MIN {
        return super::slices::sum_f64_of(x, &f);
    }
    let mut acc = [0.0f64; 8];
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for k in 0..8 {
            acc[k] += f(c[k].to_f64());
        }
    }
    let tail: f64 = chunks.remainder().iter().map(|v| f(v.to_f64())).sum();
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// A piece's mean and sum of squared deviations from it (two passes).
fn piece_moments<T: Element>(x: &[T]) -> (f64, f64) {
    let mean = sum8(x, |v| v) / x.len() as f64;
    (mean, sum8(x, |v| (v - mean) * (v - mean)))
}

/// Variance of a lane in f64 with `correction` (Bessel's with 1): each
/// piece of [`VAR_PIECE`] elements by two passes, split over the threads
/// for a long lane, the pieces then combined in order by Chan et al.'s
/// pairwise formula, so the result does not depend on the thread count.
pub fn var_f64<T: Element>(x: &[T], correction: f64) -> f64 {
    let n = x.len();
    let pieces = n.div_ceil(VAR_PIECE).max(1);
    let piece = |p: usize| &x[(p * VAR_PIECE).min(n)..((p + 1) * VAR_PIECE).min(n)];
    let mut moments = vec![(0.0, 0.0); pieces];
    if pieces == 1 {
        moments[0] = piece_moments(x);
    } else {
        crate::parallel::for_each_chunk_mut_aligned(&mut moments, 1, 1, |start, chunk| {
            for (i, m) in chunk.iter_mut().enumerate() {
                *m = piece_moments(piece(start + i));
            }
        });
    }
    let (mut count, mut mean, mut m2) = (0.0f64, 0.0f64, 0.0f64);
    for (p, &(pm, pm2)) in moments.iter().enumerate() {
        let c = piece(p).len() as f64;
        if count == 0.0 {
            (count, mean, m2) = (c, pm, pm2);
            continue;
        }
        let total = count + c;
        let delta = pm - mean;
        mean += delta * c / total;
        m2 += pm2 + delta * delta * count * c / total;
        count = total;
    }
    m2 / (n as f64 - correction).max(0.0)
}

/// Numerically stable `log(sum(exp(x)))` of a lane (-inf when empty).
pub fn logsumexp_slice<T: Float>(x: &[T]) -> T {
    if x.is_empty() {
        return T::from_f64(f64::NEG_INFINITY);
    }
    let m = extreme(x, true);
    let shift = if m.to_f64().is_infinite() {
        T::zero()
    } else {
        m
    };
    let s: T = x.iter().map(|&v| (v - shift).exp()).sum();
    s.ln() + shift
}

/// Softmax of one lane into `out`.
pub fn softmax_slice<T: Float>(x: &[T], out: &mut [T]) {
    let m = extreme(x, true);
    let mut s = T::zero();
    for (o, &v) in out.iter_mut().zip(x) {
        *o = (v - m).exp();
        s = s + *o;
    }
    for o in out.iter_mut() {
        *o = *o / s;
    }
}

/// Log-softmax of one lane into `out`.
pub fn log_softmax_slice<T: Float>(x: &[T], out: &mut [T]) {
    let m = extreme(x, true);
    let s: T = x.iter().map(|&v| (v - m).exp()).sum();
    let ls = s.ln();
    for (o, &v) in out.iter_mut().zip(x) {
        *o = v - m - ls;
    }
}

/// Inclusive prefix sum of a lane, forwards or backwards.
pub fn cumsum_slice<T: Element + std::ops::Add<Output = T>>(x: &[T], out: &mut [T], reverse: bool) {
    let mut acc = T::zero();
    if reverse {
        for (o, &v) in out.iter_mut().zip(x).rev() {
            acc = acc + v;
            *o = acc;
        }
    } else {
        for (o, &v) in out.iter_mut().zip(x) {
            acc = acc + v;
            *o = acc;
        }
    }
}
