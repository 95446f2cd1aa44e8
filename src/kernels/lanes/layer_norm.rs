//! layer_norm's forward and backward over contiguous rows, in fixed parts of
//! rows (the bits do not depend on the thread count).

use super::*;

/// layer_norm's backward over `rows` rows of `cols` (contiguous `x` and
/// `g`; `mean`/`rstd` per row, as [`layer_norm_rows`] gave them):
/// `dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))` with
/// `gw = g * w` (or `g`), and, when asked, the column sums `dw = sum_r g *
/// xhat` and `db = sum_r g`.
///
/// One read of the rows: the rows are split into parts of [`LN_PART`],
/// handed to the threads whole; a part writes its rows of `dx` and sums its
/// rows (in order) into its own partial `dw`/`db`, which are then added
/// part by part in order. Parts are fixed in size, so the bits do not
/// depend on the thread count.
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_backward_rows<T: VecFloat>(
    x: &[T],
    g: &[T],
    w: Option<&[T]>,
    mean: &[T],
    rstd: &[T],
    cols: usize,
    dx: Option<&mut [T]>,
    dw: Option<&mut [T]>,
    db: Option<&mut [T]>,
) {
    let rows = mean.len();
    assert!(x.len() == rows * cols && g.len() == x.len() && rstd.len() == rows);
    assert!(w.is_none_or(|w| w.len() == cols));
    assert!(dx.as_ref().is_none_or(|d| d.len() == x.len()));
    assert!(dw.as_ref().is_none_or(|d| d.len() == cols));
    assert!(db.as_ref().is_none_or(|d| d.len() == cols));
    let zero = <T as Element>::zero();
    let inv_n = T::from_f64(1.0 / cols.max(1) as f64);
    let (want_w, want_b) = (dw.is_some(), db.is_some());
    let split = if want_w { cols } else { 0 };
    let width = split + if want_b { cols } else { 0 };
    let parts = rows.div_ceil(LN_PART);
    let mut partial = vec![zero; parts * width];
    let dx_out = dx.map(SharedOut::new);
    let part = |p: usize, sums: &mut [T]| {
        let (pw, pb) = sums.split_at_mut(split);
        let (mut gw_buf, mut tmp) = (vec![zero; cols], vec![zero; cols]);
        for r in p * LN_PART..((p + 1) * LN_PART).min(rows) {
            let (xr, gr) = (&x[r * cols..(r + 1) * cols], &g[r * cols..(r + 1) * cols]);
            let (m, rs) = (mean[r], rstd[r]);
            if let Some(out) = dx_out {
                // SAFETY: row r of dx is written by part r / LN_PART alone
                // (parts partition the rows); dx outlives the call.
                let dxr = unsafe { out.run(r * cols, cols) };
                let gw: &[T] = match w {
                    Some(w) => {
                        slices::zip(gr, w, &mut gw_buf, &|a, b| a * b);
                        &gw_buf
                    }
                    None => gr,
                };
                let a = slices::fold_wide(gw, zero, &<T as FoldElem>::add) * inv_n;
                // mean(gw * xhat) = rstd * mean(gw * (x - mean))
                slices::zip(gw, xr, &mut tmp, &|p, q| p * (q - m));
                let b = slices::fold_wide(&tmp, zero, &<T as FoldElem>::add) * inv_n * rs;
                slices::zip(gw, xr, dxr, &|p, q| rs * (p - a - (q - m) * rs * b));
            }
            if want_w {
                slices::zip(gr, xr, &mut tmp, &|p, q| p * ((q - m) * rs));
                slices::update(pw, &tmp, &<T as FoldElem>::add);
            }
            if want_b {
                slices::update(pb, gr, &<T as FoldElem>::add);
            }
        }
    };
    if width == 0 {
        // dx alone: parts without partial sums.
        let units = (rows * cols).div_ceil(GRAIN).clamp(1, parts.max(1));
        let per = parts.div_ceil(units.max(1)).max(1);
        let run = |u: usize| (u * per..((u + 1) * per).min(parts)).for_each(|p| part(p, &mut []));
        if units > 1 && num_threads() > 1 {
            for_each_index(parts.div_ceil(per), &run);
        } else {
            (0..parts.div_ceil(per)).for_each(run);
        }
        return;
    }
    let min_len = width * (GRAIN / (LN_PART * cols).max(1)).max(1);
    crate::parallel::for_each_chunk_mut_aligned(&mut partial, min_len, width, |start, chunk| {
        for (i, sums) in chunk.chunks_mut(width).enumerate() {
            part(start / width + i, sums);
        }
    });
    let total = |out: &mut [T], at: usize| {
        out.fill(zero);
        for sums in partial.chunks(width) {
            slices::update(out, &sums[at..at + cols], &<T as FoldElem>::add);
        }
    };
    if let Some(dw) = dw {
        total(dw, 0);
    }
    if let Some(db) = db {
        total(db, split);
    }
}

/// Rows per part of [`layer_norm_backward_rows`].
const LN_PART: usize = 64;

/// Layer normalisation of the rows of `x` (`rows x cols`, contiguous):
/// `y = (x - mean) * rstd * w + b` per row, with `rstd = 1 / sqrt(var +
/// eps)` (biased variance, two passes); writes `y` and each row's mean and
/// rstd. Split over rows.
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_rows<T: VecFloat>(
    x: &[T],
    w: Option<&[T]>,
    b: Option<&[T]>,
    cols: usize,
    eps: f64,
    y: &mut [T],
    mean: &mut [T],
    rstd: &mut [T],
) {
    let rows = mean.len();
    assert!(x.len() == rows * cols && y.len() == x.len() && rstd.len() == rows);
    assert!(w.is_none_or(|w| w.len() == cols) && b.is_none_or(|b| b.len() == cols));
    let zero = <T as Element>::zero();
    let inv_n = T::from_f64(1.0 / cols.max(1) as f64);
    let eps = T::from_f64(eps);
    let row = |r: usize, yr: &mut [T]| -> (T, T) {
        let xr = &x[r * cols..(r + 1) * cols];
        let m = slices::fold_wide(xr, zero, &<T as FoldElem>::add) * inv_n;
        let var =
            slices::map_fold_wide(xr, zero, &|v| (v - m) * (v - m), &<T as FoldElem>::add) * inv_n;
        let rs = <T as Element>::one() / (var + eps).sqrt();
        match (w, b) {
            (Some(w), Some(b)) => slices::zip3(xr, w, b, yr, &|v, w, b| (v - m) * rs * w + b),
            (Some(w), None) => slices::zip(xr, w, yr, &|v, w| (v - m) * rs * w),
            (None, Some(b)) => slices::zip(xr, b, yr, &|v, b| (v - m) * rs + b),
            (None, None) => slices::map(xr, yr, &|v| (v - m) * rs),
        }
        (m, rs)
    };
    let threads = num_threads();
    let per = if threads < 2 || x.len() < GRAIN {
        rows.max(1)
    } else {
        rows.div_ceil(4 * threads)
            .max(GRAIN / cols.max(1) / 4)
            .max(1)
    };
    let (py, pm, pr) = (
        SharedOut::new(y),
        SharedOut::new(mean),
        SharedOut::new(rstd),
    );
    let chunk = |c: usize| {
        for r in c * per..((c + 1) * per).min(rows) {
            // SAFETY: row r's outputs are inside the buffers (asserted
            // sizes) and written by this row only.
            let yr = unsafe { py.run(r * cols, cols) };
            let (m, rs) = row(r, yr);
            unsafe {
                pm.write(r, m);
                pr.write(r, rs);
            }
        }
    };
    let chunks = rows.div_ceil(per);
    if chunks < 2 {
        return (0..chunks).for_each(chunk);
    }
    for_each_index(chunks, &chunk);
}
