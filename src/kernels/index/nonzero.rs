//! torch's `nonzero`: the coordinates of the true elements of a bool
//! tensor, counted and written in parallel pieces.

use super::super::copy::to_vec_as;
use super::super::shared_out::SharedOut;
use crate::buffer::{Dims, Strided};

/// The number of true elements of a bool tensor and, per dim, the
/// coordinate of each in row-major order (torch's nonzero).
pub fn nonzero(mask: &Strided) -> (usize, Vec<Vec<i64>>) {
    let (n, rows) = nonzero_rows(mask);
    let nd = mask.ndim();
    let coords = (0..nd)
        .map(|d| {
            let mut c = vec![0i64; n];
            crate::parallel::for_each_chunk_mut(&mut c, 1 << 15, |start, chunk| {
                for (i, c) in chunk.iter_mut().enumerate() {
                    *c = rows[(start + i) * nd + d];
                }
            });
            c
        })
        .collect();
    (n, coords)
}

/// `[n, ndim]` int64 coordinates of the true elements of a bool tensor, in
/// row-major order (the layout of torch's `nonzero()`). Counted per fixed
/// piece in parallel; then each piece walks its elements with an odometer
/// (no division per element) and writes its own rows.
pub fn nonzero_rows(mask: &Strided) -> (usize, Vec<i64>) {
    const PIECE: usize = 1 << 16;
    let owned;
    let guard = mask.storage().read_recursive();
    let vals: &[bool] = match mask.layout().contiguous_range() {
        Some(r) => &guard.as_slice::<bool>()[r],
        None => {
            owned = crate::buffer::pool::or_panic(to_vec_as::<bool>(mask));
            &owned
        }
    };
    let shape = mask.shape();
    let nd = shape.len().max(1);
    let shape: Dims = if shape.is_empty() {
        smallvec::smallvec![1]
    } else {
        shape.into()
    };
    let pieces = vals.len().div_ceil(PIECE);
    let par = vals.len() >= 1 << 15;
    let piece = |p: usize| &vals[p * PIECE..((p + 1) * PIECE).min(vals.len())];
    let counts = crate::parallel::map_collect(pieces, par, |p| {
        piece(p).iter().map(|&b| b as usize).sum::<usize>()
    });
    let mut starts = Vec::with_capacity(pieces);
    let mut total = 0;
    for &c in &counts {
        starts.push(total);
        total += c;
    }
    let mut out = vec![0i64; total * nd];
    let shared = SharedOut::new(&mut out);
    let fill = |p: usize| {
        // SAFETY: piece p writes rows starts[p]..starts[p] + counts[p],
        // ranges that partition `out`; `out` outlives the call.
        let dst = unsafe { shared.run(starts[p] * nd, counts[p] * nd) };
        let mut idx: Dims = smallvec::smallvec![0; nd];
        let mut rem = p * PIECE;
        for d in (0..nd).rev() {
            idx[d] = rem % shape[d];
            rem /= shape[d];
        }
        let (last, inner) = (nd - 1, shape[nd - 1]);
        let mut k = 0;
        let mut rest = piece(p);
        while !rest.is_empty() {
            // A run along the innermost dim: only its coordinate changes.
            let (run, tail) = rest.split_at((inner - idx[last]).min(rest.len()));
            for (j, &b) in run.iter().enumerate() {
                // Branch-free: write every row, advance past the true ones.
                if let Some(row) = dst.get_mut(k * nd..(k + 1) * nd) {
                    for (c, &i) in row[..last].iter_mut().zip(&idx[..last]) {
                        *c = i as i64;
                    }
                    row[last] = (idx[last] + j) as i64;
                }
                k += b as usize;
            }
            rest = tail;
            idx[last] = 0;
            for d in (0..last).rev() {
                idx[d] += 1;
                if idx[d] < shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    };
    if par && pieces > 1 {
        crate::parallel::for_each_index(pieces, &fill);
    } else {
        (0..pieces).for_each(fill);
    }
    (total, if mask.ndim() == 0 { Vec::new() } else { out })
}
