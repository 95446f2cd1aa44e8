//! Concatenation: several tensors written side by side along one dim of a
//! fresh output (`cat`, `stack` and the joins built on them).
//!
//! The output is seen as `outer` rows of `row` elements; source `i` fills
//! columns `col_i..col_i + piece_i` of every row. Sources of the output's
//! dtype stored contiguously (the usual case) are copied piece by piece in
//! one parallel section over blocks of the output, so a join costs one
//! read and one write of each element, like a `memcpy`; the output is
//! never zero-filled first. Other sources (strided, or of another dtype)
//! go through the iteration layer into their columns.

use super::copy::cast_into;
use super::shared_out::SharedOut;
use crate::buffer::layout::{contiguous_strides, numel};
use crate::buffer::{pool, DType, Element, Layout, StorageData, Strided};
use crate::parallel::{for_each_index, num_threads};
use crate::{dispatch_all, Result};

/// Output elements per unit of work: a block of rows (or of one long row)
/// that stays in the L2 cache while every source writes its columns.
const BLOCK: usize = 1 << 14;
/// Outputs below this many elements are joined on the calling thread.
const PAR_MIN: usize = 1 << 17;
/// Pieces shorter than this are copied element by element (a `memcpy`
/// call per piece would cost more than the copy).
const SHORT: usize = 8;

/// A fresh contiguous tensor of `shape` and dtype `dt` holding the sources
/// one after another along `d`. Each source is `(tensor, layout)`, the
/// layout being the one to read it with (for `stack`, the tensor's layout
/// with a size-1 dim inserted at `d`); its shape equals `shape` except
/// along `d`, and the sizes along `d` add up to `shape[d]`.
pub fn cat(srcs: &[(&Strided, Layout)], d: usize, shape: &[usize], dt: DType) -> Result<Strided> {
    dispatch_all!(dt, U => cat_as::<U>(srcs, d, shape))
}

/// One contiguous source of the output's dtype: `piece` elements per row,
/// written at column `col`.
struct Direct<'a, U> {
    data: &'a [U],
    piece: usize,
    col: usize,
}

fn cat_as<U: Element>(srcs: &[(&Strided, Layout)], d: usize, shape: &[usize]) -> Result<Strided> {
    let mut out = pool::try_buffer::<U>(numel(shape))?;
    let outer: usize = shape[..d].iter().product();
    let inner: usize = shape[d + 1..].iter().product();
    let row = shape[d] * inner;
    let guards: Vec<_> = srcs
        .iter()
        .map(|(t, _)| t.storage().read_recursive())
        .collect();
    let mut direct = Vec::with_capacity(srcs.len());
    let mut strided: Vec<(&StorageData, &Layout, usize)> = Vec::new();
    let mut col = 0;
    for ((_, l), g) in srcs.iter().zip(&guards) {
        let piece = l.shape[d] * inner;
        match U::slice(g) {
            Some(data) if l.is_contiguous() && piece > 0 => direct.push(Direct {
                data: &data[l.offset..l.offset + outer * piece],
                piece,
                col,
            }),
            _ if piece > 0 => strided.push((g, l, col)),
            _ => {}
        }
        col += piece;
    }
    if !direct.is_empty() && outer > 0 {
        copy_direct(&mut out, &direct, outer, row);
    }
    let out_strides = contiguous_strides(shape);
    for (g, l, col) in strided {
        let lo = Layout {
            shape: l.shape.clone(),
            strides: out_strides.clone(),
            offset: col,
        };
        cast_into(&mut out, &lo, g, l)?;
    }
    drop(guards);
    Ok(Strided::contiguous(U::wrap(out), shape))
}

/// Copies every direct source into its columns of `out` (`outer` rows of
/// `row`), in blocks of about [`BLOCK`] elements split over the threads.
fn copy_direct<U: Element>(out: &mut [U], direct: &[Direct<'_, U>], outer: usize, row: usize) {
    // A block is `rows` whole rows, or `cols` columns of one row when a
    // row alone is longer than a block.
    let (rows, cols) = if row >= BLOCK {
        (1, BLOCK)
    } else {
        ((BLOCK / row.max(1)).max(1), row)
    };
    let col_blocks = row.div_ceil(cols);
    let units = outer.div_ceil(rows) * col_blocks;
    let shared = SharedOut::new(out);
    let unit = |u: usize| {
        let (rb, cb) = (u / col_blocks, u % col_blocks);
        let (o0, o1) = (rb * rows, ((rb + 1) * rows).min(outer));
        let (c0, c1) = (cb * cols, ((cb + 1) * cols).min(row));
        for s in direct {
            // The part of this source's columns inside the block.
            let (lo, hi) = (s.col.max(c0), (s.col + s.piece).min(c1));
            if lo >= hi {
                continue;
            }
            let (j0, n) = (lo - s.col, hi - lo);
            if n == 1 && s.piece == 1 {
                // One element per row (stack along the last dim): a
                // strided store of a contiguous run.
                for (o, &v) in (o0..o1).zip(&s.data[o0..o1]) {
                    // SAFETY: as below, one element of row o at column lo.
                    unsafe { shared.write(o * row + lo, v) };
                }
                continue;
            }
            for o in o0..o1 {
                let src = &s.data[o * s.piece + j0..o * s.piece + j0 + n];
                // SAFETY: units partition the output: unit u writes rows
                // o0..o1, columns c0..c1 (lo..hi lies inside them), and
                // these are inside `out` (o < outer, hi <= row).
                let dst = unsafe { shared.run(o * row + lo, n) };
                if n < SHORT {
                    for (d, &v) in dst.iter_mut().zip(src) {
                        *d = v;
                    }
                } else {
                    dst.copy_from_slice(src);
                }
            }
        }
    };
    if num_threads() < 2 || outer * row < PAR_MIN || units < 2 {
        (0..units).for_each(unit);
    } else {
        for_each_index(units, &unit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arange(n: usize, shape: &[usize]) -> Strided {
        Strided::contiguous(f32::wrap((0..n).map(|v| v as f32).collect()), shape)
    }

    /// The join written the slow, obvious way: element by element.
    fn reference(srcs: &[Strided], d: usize) -> Vec<f32> {
        let mut shape = srcs[0].dims();
        shape[d] = srcs.iter().map(|t| t.shape()[d]).sum();
        let outer: usize = shape[..d].iter().product();
        let inner: usize = shape[d + 1..].iter().product();
        let vals: Vec<Vec<f32>> = srcs
            .iter()
            .map(|t| super::super::copy::to_vec_as(t).unwrap())
            .collect();
        let mut out = Vec::new();
        for o in 0..outer {
            for (t, v) in srcs.iter().zip(&vals) {
                let piece = t.shape()[d] * inner;
                out.extend_from_slice(&v[o * piece..(o + 1) * piece]);
            }
        }
        out
    }

    #[test]
    fn joins_every_block_shape_and_source_kind() {
        // (source shapes, dim): long rows split in column blocks, many
        // short rows, pieces shorter than SHORT, one row only.
        let cases: &[(&[&[usize]], usize)] = &[
            (&[&[3, 40000], &[3, 1], &[3, 25000]], 1),
            (&[&[70000, 1], &[70000, 2], &[70000, 1]], 1),
            (&[&[50000, 3], &[20000, 3]], 0),
            (&[&[2, 5, 7], &[2, 1, 7], &[2, 9, 7]], 1),
            (&[&[1, 300000], &[1, 5]], 1),
        ];
        for threads in [1, 2] {
            crate::parallel::set_num_threads(threads);
            for (shapes, d) in cases {
                let srcs: Vec<Strided> = shapes
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let n = numel(s);
                        // sources contiguous, of another dtype, or strided
                        match i % 3 {
                            0 => arange(n, s),
                            1 => super::super::copy::copy_as::<f64>(&arange(n, s)).unwrap(),
                            _ => {
                                let last = s.len() - 1;
                                let mut wide = s.to_vec();
                                wide[last] *= 2;
                                let w = arange(2 * n, &wide);
                                w.with_layout(w.layout().slice(last, 0, wide[last], 2))
                            }
                        }
                    })
                    .collect();
                let mut shape = srcs[0].dims();
                shape[*d] = srcs.iter().map(|t| t.shape()[*d]).sum();
                let with: Vec<(&Strided, Layout)> =
                    srcs.iter().map(|t| (t, t.layout().clone())).collect();
                let got = cat(&with, *d, &shape, DType::F32).unwrap();
                assert_eq!(got.shape(), &shape[..]);
                assert_eq!(
                    super::super::copy::to_vec_as::<f32>(&got).unwrap(),
                    reference(&srcs, *d),
                    "{shapes:?} along {d} at {threads} threads"
                );
            }
        }
    }
}
