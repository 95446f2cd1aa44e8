//! Broadcasting elementwise kernels over two operands.

use super::slices;
use super::unary::map_run;
use crate::parallel::{for_each_chunk_mut, for_each_chunk_mut_aligned};
use crate::tensor::layout::{broadcast_shapes, for_each_offset, for_each_offset2};
use crate::tensor::{pool, Element, Layout, Tensor};
use crate::{bail, Result};

/// `out[i] = f(a[i], b[i])` with broadcasting. `a` and `b` must both be of
/// dtype `T` (ops cast to the promoted dtype first); `out` is of `U`.
pub fn map2<T: Element, U: Element>(
    a: &Tensor,
    b: &Tensor,
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Result<Tensor> {
    debug_assert!(a.dtype() == T::DTYPE && b.dtype() == T::DTYPE);
    if let Some(out) = same_shape_contiguous(a, b, &f) {
        return Ok(out);
    }
    let (shape, la, lb) = if a.shape() == b.shape() {
        (a.dims(), a.layout().clone(), b.layout().clone())
    } else {
        let shape = broadcast_shapes(a.shape(), b.shape())?;
        let (la, lb) = (a.layout().expand(&shape)?, b.layout().expand(&shape)?);
        (shape, la, lb)
    };
    let sa = a.storage().read_recursive();
    let sb = b.storage().read_recursive();
    let (da, db) = (sa.as_slice::<T>(), sb.as_slice::<T>());
    let n = la.numel();
    let out: Vec<U> = match (la.contiguous_range(), lb.contiguous_range()) {
        (Some(ra), Some(rb)) => zip_run(&da[ra], &db[rb], &f),
        (Some(ra), None) if n > 0 && is_one_value(&lb) => {
            let y = db[lb.offset];
            map_run(&da[ra], |x| f(x, y))
        }
        (None, Some(rb)) if n > 0 && is_one_value(&la) => {
            let x = da[la.offset];
            map_run(&db[rb], |y| f(x, y))
        }
        _ if inner_runs(&shape, &la, &lb) => {
            // Rows of the last dim, each contiguous or one repeated value
            // per operand (a bias added to every row, a column scale).
            let nd = shape.len();
            let w = shape[nd - 1];
            let mut rows = Vec::with_capacity(n / w);
            for_each_offset2(
                &shape[..nd - 1],
                &la.strides[..nd - 1],
                la.offset,
                &lb.strides[..nd - 1],
                lb.offset,
                |i, j| rows.push((i, j)),
            );
            let (sa, sb) = (la.strides[nd - 1], lb.strides[nd - 1]);
            let mut out = pool::buffer(n);
            for_each_chunk_mut_aligned(&mut out, super::PAR_THRESHOLD, w, |s, o| {
                for (orow, &(i, j)) in o.chunks_mut(w).zip(&rows[s / w..]) {
                    match (sa, sb) {
                        (1, 1) => slices::zip(&da[i..i + w], &db[j..j + w], orow, &f),
                        (1, _) => {
                            let y = db[j];
                            slices::map(&da[i..i + w], orow, &|x| f(x, y))
                        }
                        (_, 1) => {
                            let x = da[i];
                            slices::map(&db[j..j + w], orow, &|y| f(x, y))
                        }
                        _ => orow.fill(f(da[i], db[j])),
                    }
                }
            });
            out
        }
        _ => {
            let mut out = pool::with_capacity(n);
            for_each_offset2(
                &shape,
                &la.strides,
                la.offset,
                &lb.strides,
                lb.offset,
                |i, j| out.push(f(da[i], db[j])),
            );
            out
        }
    };
    Ok(Tensor::from_data(U::wrap(out), &shape))
}

/// [`map2`] when `a` and `b` have one shape and are both contiguous (the
/// common case): one flat loop, without copying layouts; None otherwise.
fn same_shape_contiguous<T: Element, U: Element>(
    a: &Tensor,
    b: &Tensor,
    f: &(impl Fn(T, T) -> U + Sync + Send),
) -> Option<Tensor> {
    if a.shape() != b.shape() {
        return None;
    }
    let (ra, rb) = (
        a.layout().contiguous_range()?,
        b.layout().contiguous_range()?,
    );
    let sa = a.storage().read_recursive();
    let sb = b.storage().read_recursive();
    let out = zip_run(&sa.as_slice::<T>()[ra], &sb.as_slice::<T>()[rb], f);
    drop((sa, sb));
    Some(Tensor::from_data(U::wrap(out), a.shape()))
}

/// `f(xa[i], xb[i])` for two contiguous runs of one length, split over the
/// threads when long (the two-operand [`super::unary::map_run`]).
fn zip_run<T: Element, U: Element>(xa: &[T], xb: &[T], f: &(impl Fn(T, T) -> U + Sync)) -> Vec<U> {
    if xa.len() < super::PAR_THRESHOLD {
        return xa.iter().zip(xb).map(|(&x, &y)| f(x, y)).collect();
    }
    let mut out = pool::buffer(xa.len());
    for_each_chunk_mut(&mut out, super::PAR_THRESHOLD, |s, o| {
        slices::zip(&xa[s..], &xb[s..], o, f)
    });
    out
}

/// True when the last dim is long enough and, for each operand, either
/// contiguous (stride 1) or one value (stride 0): rows can run as slices.
fn inner_runs(shape: &[usize], la: &Layout, lb: &Layout) -> bool {
    let Some(&w) = shape.last() else {
        return false;
    };
    let nd = shape.len();
    w >= 8 && la.strides[nd - 1] <= 1 && lb.strides[nd - 1] <= 1
}

/// True when every element of `l` is the same memory location (a scalar,
/// or one value expanded to a shape, as sum's gradient is).
fn is_one_value(l: &Layout) -> bool {
    l.strides
        .iter()
        .zip(&l.shape)
        .all(|(&s, &d)| s == 0 || d == 1)
}

/// `dst[i] = f(dst[i], src[i])` in place, `src` broadcast to `dst`'s shape.
/// Both of dtype `T`. Does not bump the version.
pub fn apply2_inplace<T: Element>(
    dst: &Tensor,
    src: &Tensor,
    f: impl Fn(T, T) -> T + Sync + Send,
) -> Result<()> {
    let ls = src.layout().expand(dst.shape())?;
    // src may alias dst: read it into a contiguous buffer first when it does.
    let aliased = std::sync::Arc::ptr_eq(dst.storage(), src.storage());
    let src_vals: Option<Vec<T>> = aliased.then(|| src.to_vec::<T>());
    let ld = dst.layout().clone();
    let ls = if aliased {
        Layout::contiguous(dst.shape())
    } else {
        ls.clone()
    };
    let guard = (!aliased).then(|| src.storage().read_recursive());
    let s: &[T] = match (&src_vals, &guard) {
        (Some(v), _) => v,
        (None, Some(g)) => g.as_slice::<T>(),
        _ => unreachable!(),
    };
    let mut dstore = dst.storage().write();
    let d = dstore.as_mut_slice::<T>();
    match (ld.contiguous_range(), ls.contiguous_range()) {
        (Some(rd), Some(rs)) => {
            let xs = &s[rs];
            for_each_chunk_mut(&mut d[rd], super::PAR_THRESHOLD, |at, xd| {
                slices::update(xd, &xs[at..], &f)
            });
        }
        _ => for_each_offset2(
            &ld.shape,
            &ld.strides,
            ld.offset,
            &ls.strides,
            ls.offset,
            |i, j| d[i] = f(d[i], s[j]),
        ),
    }
    Ok(())
}

/// `dst += src` for gradient accumulation (same dtype, src broadcastable).
pub fn add_assign(dst: &Tensor, src: &Tensor) -> Result<()> {
    if dst.dtype() != src.dtype() {
        bail!(
            runtime,
            "add_assign: dtype mismatch {} vs {}",
            dst.dtype().name(),
            src.dtype().name()
        );
    }
    crate::dispatch_all!(dst.dtype(), T => add_assign_typed::<T>(dst, src))
}

fn add_assign_typed<T: Element>(dst: &Tensor, src: &Tensor) -> Result<()> {
    apply2_inplace::<T>(dst, src, |x, y| T::from_f64(x.to_f64() + y.to_f64()))
}

/// `out[i] = f(a[i], b[i], c[i])` with broadcasting over all three; each
/// operand has its own element type (e.g. a bool condition and two values).
pub fn map3<A: Element, B: Element, C: Element, U: Element>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    f: impl Fn(A, B, C) -> U + Sync + Send,
) -> Result<Tensor> {
    debug_assert!(a.dtype() == A::DTYPE && b.dtype() == B::DTYPE && c.dtype() == C::DTYPE);
    let shape = broadcast_shapes(&broadcast_shapes(a.shape(), b.shape())?, c.shape())?;
    let (la, lb, lc) = (
        a.layout().expand(&shape)?,
        b.layout().expand(&shape)?,
        c.layout().expand(&shape)?,
    );
    let (sa, sb, sc) = (
        a.storage().read_recursive(),
        b.storage().read_recursive(),
        c.storage().read_recursive(),
    );
    // Operands that are not one contiguous run are gathered first.
    fn run<'a, T: Element>(d: &'a [T], l: &Layout, buf: &'a mut Vec<T>) -> &'a [T] {
        match l.contiguous_range() {
            Some(r) => &d[r],
            None => {
                buf.reserve(l.numel());
                for_each_offset(&l.shape, &l.strides, l.offset, |o| buf.push(d[o]));
                buf
            }
        }
    }
    let (mut ba, mut bb, mut bc) = (Vec::new(), Vec::new(), Vec::new());
    let xa = run(sa.as_slice::<A>(), &la, &mut ba);
    let xb = run(sb.as_slice::<B>(), &lb, &mut bb);
    let xc = run(sc.as_slice::<C>(), &lc, &mut bc);
    let n = la.numel();
    let mut out: Vec<U> = pool::buffer(n);
    for_each_chunk_mut(&mut out, super::PAR_THRESHOLD, |s, o| {
        slices::zip3(&xa[s..], &xb[s..], &xc[s..], o, &f)
    });
    Ok(Tensor::from_data(U::wrap(out), &shape))
}
