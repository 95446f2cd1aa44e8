//! A convolution's forward and input gradient as matrix products of its
//! windows, without the im2col tensor in memory: the windows are gathered
//! block by block into a buffer that stays in cache and multiplied there.

use super::product::MatElem;
use super::Mat;
use crate::buffer::{DType, Strided};
use crate::kernels::shared_out::SharedOut;
use crate::kernels::window::{ColumnBlock, Windows};
use crate::{bail, Result};
use gemm::Parallelism;

/// A convolution's forward without its im2col tensor (the windows are
/// not kept: [`conv_weight_grad`] gathers them again): `x` is a contiguous
/// `[batch, channels, *input]`, `w` a contiguous `[m, channels * table.k]`;
/// the result is `[batch, m, table.l]`, sample `s` being `w @ cols(s)`
/// with `cols(s)` its `[channels * k, l]` windows (padding read as zero),
/// plus `bias` (`[m]`) on each row.
///
/// Each sample's windows are cut into column blocks of about
/// [`COLUMN_BLOCK_BYTES`] ([`column_blocks`]); a unit of work gathers one
/// block of one sample into a buffer that stays in cache, multiplies it by
/// the kernel [`super::matmul`] takes for that product, and writes the
/// block's output columns with the bias added ([`for_each_unit`] spreads
/// the units over the threads). The blocks depend on the sizes alone, so
/// the values do not depend on the thread count; blocks of several samples
/// keep the threads busy at any batch size. `None` where this does not
/// apply (another dtype, a bias not contiguous or of another dtype): the
/// caller takes the unfused path.
pub fn conv_forward(
    x: &Strided,
    table: &Windows,
    w: &Strided,
    bias: Option<&Strided>,
) -> Result<Option<Strided>> {
    if !x.is_contiguous()
        || !w.is_contiguous()
        || bias.is_some_and(|b| !b.is_contiguous() || b.dtype() != x.dtype())
    {
        return Ok(None);
    }
    match x.dtype() {
        DType::F32 => conv_typed::<f32>(x, table, w, bias).map(Some),
        DType::F64 => conv_typed::<f64>(x, table, w, bias).map(Some),
        _ => Ok(None),
    }
}

/// `unit(u, par)` for every unit of work `u < units`: spread over the
/// threads, each unit on one (`par` none); or, where there are fewer units
/// than twice the threads, one after another with each product split over
/// the threads (`par` all of them), which gives the same bits: the GEMM
/// kernels' sums do not depend on how a product is split. So the values do
/// not depend on the thread count either way.
fn for_each_unit(
    units: usize,
    unit: &(dyn Fn(usize, Parallelism) -> Result<()> + Sync),
) -> Result<()> {
    let threads = crate::parallel::num_threads();
    if threads > 1 && units < 2 * threads {
        return crate::parallel::install(|| {
            (0..units).try_for_each(|u| unit(u, Parallelism::Rayon(threads)))
        });
    }
    let failed = parking_lot::Mutex::new(None);
    crate::parallel::for_each_index(units, &|u| {
        if let Err(e) = unit(u, Parallelism::None) {
            *failed.lock() = Some(e);
        }
    });
    failed.into_inner().map_or(Ok(()), Err)
}

/// Bytes of window matrix per column block: the block and its product stay
/// in a core's L2 (1 MiB on AMD Zen 4, 512 KiB on Zen 3, 2 MiB on Intel's
/// AVX-512 Xeons) while the GEMM reads it.
pub const COLUMN_BLOCK_BYTES: usize = 256 << 10;
/// The narrowest column block of the forward.
pub const FORWARD_MIN_WIDTH: usize = 64;
/// The narrowest column block of the weight gradient.
pub const WEIGHT_GRAD_MIN_WIDTH: usize = 512;

/// The column blocks of a sample's `[kr, l]` window matrix (elements of
/// `itemsize` bytes): as many as [`COLUMN_BLOCK_BYTES`] asks, of even
/// widths (a multiple of 16, the widest GEMM tile, where they are wide),
/// never narrower than `min_width` windows. Sizes alone decide them.
///
/// The forward's products keep the block's columns as their long side
/// (`min_width` [`FORWARD_MIN_WIDTH`]); the weight gradient's sum over
/// them, so its blocks are wider ([`WEIGHT_GRAD_MIN_WIDTH`]): each block
/// writes a whole `[m, kr]` partial product, which narrow blocks would
/// make memory-bound.
pub fn column_blocks(
    kr: usize,
    l: usize,
    itemsize: usize,
    min_width: usize,
) -> Vec<std::ops::Range<usize>> {
    let fit = (COLUMN_BLOCK_BYTES / (kr * itemsize).max(1)).max(min_width);
    let count = l.div_ceil(fit).max(1);
    let mut width = l.div_ceil(count);
    if width >= 128 {
        width = width.next_multiple_of(16);
    }
    (0..l)
        .step_by(width.max(1))
        .map(|start| start..(start + width).min(l))
        .collect()
}

fn conv_typed<T: MatElem>(
    x: &Strided,
    table: &Windows,
    w: &Strided,
    bias: Option<&Strided>,
) -> Result<Strided> {
    let (samples, channels) = (x.shape()[0], x.shape()[1]);
    let (m, kr, l) = (w.shape()[0], channels * table.k, table.l);
    if w.shape()[1] != kr
        || x.numel() != samples * channels * table.plane
        || bias.is_some_and(|b| b.numel() != m)
    {
        bail!(
            internal,
            "kernels::conv_forward: shapes do not match the table"
        );
    }
    let sx = x.storage().read_recursive();
    let sw = w.storage().read_recursive();
    let sb = bias.map(|b| b.storage().read_recursive());
    let dx = &sx.as_slice::<T>()[x.layout().offset..];
    let dw = sw.as_slice::<T>();
    let db = match (&sb, bias) {
        (Some(s), Some(b)) => Some(&s.as_slice::<T>()[b.layout().offset..][..m]),
        _ => None,
    };
    let per_sample = channels * table.plane;
    let mut out = crate::buffer::pool::try_buffer::<T>(samples * m * l)?;
    if !out.is_empty() {
        let blocks: Vec<ColumnBlock> =
            column_blocks(kr, l, std::mem::size_of::<T>(), FORWARD_MIN_WIDTH)
                .into_iter()
                .map(|cols| table.column_block(cols))
                .collect();
        let widest = blocks.iter().map(|b| b.cols.len()).max().unwrap_or(0);
        let am = Mat {
            off: w.layout().offset,
            rs: kr,
            cs: 1,
        };
        let ys = SharedOut::new(&mut out);
        let scratch = Scratch::new(kr * widest + m * widest);
        // Unit `u`: block `u % blocks` of sample `u / blocks`.
        let unit = |u: usize, par: Parallelism| -> Result<()> {
            let (s, block) = (u / blocks.len(), &blocks[u % blocks.len()]);
            let (c0, width) = (block.cols.start, block.cols.len());
            let mut buf = scratch.take()?;
            let (cols, product) = buf.split_at_mut(kr * width);
            let product = &mut product[..m * width];
            block.gather_planes(&dx[s * per_sample..(s + 1) * per_sample], T::zero(), cols);
            let bm = Mat {
                off: 0,
                rs: width,
                cs: 1,
            };
            let mnk = [m, width, kr];
            T::product(product, dw, am, cols, bm, mnk, T::path(mnk), par);
            for (r, row) in product.chunks_exact(width).enumerate() {
                // SAFETY: unit (s, block) alone writes columns c0..c0 + width
                // of sample s's rows, inside `out` (`[samples, m, l]`).
                let dst = unsafe { ys.run((s * m + r) * l + c0, width) };
                match db {
                    Some(b) => dst.iter_mut().zip(row).for_each(|(y, &v)| *y = v + b[r]),
                    None => dst.copy_from_slice(row),
                }
            }
            scratch.give(buf);
            Ok(())
        };
        let done = for_each_unit(samples * blocks.len(), &unit);
        scratch.recycle();
        done?;
    }
    drop((sx, sw, sb));
    Ok(Strided::contiguous(T::wrap(out), &[samples, m, l]))
}

/// A convolution's weight gradient without the im2col tensor: `x` is a
/// contiguous `[batch, channels, *input]`, `grad` a contiguous `[batch, m,
/// table.l]`; the result is `[m, channels * table.k]`, the sum over the
/// samples of `grad(s) @ cols(s)^T`.
///
/// A unit of work is a column block of a sample (wider than
/// [`conv_forward`]'s, see [`column_blocks`]), gathered and multiplied in
/// cache. They are dealt in order to
/// at most [`WEIGHT_GRAD_PARTS`] partial sums of contiguous runs of units,
/// each run summed in order on one thread, and the partial sums are added
/// in order at the end: sizes alone fix every sum's order, so the result
/// does not depend on the thread count. `None` for another dtype.
pub fn conv_weight_grad(x: &Strided, table: &Windows, grad: &Strided) -> Result<Option<Strided>> {
    if !x.is_contiguous() || !grad.is_contiguous() || grad.dtype() != x.dtype() {
        return Ok(None);
    }
    match x.dtype() {
        DType::F32 => conv_weight_grad_typed::<f32>(x, table, grad).map(Some),
        DType::F64 => conv_weight_grad_typed::<f64>(x, table, grad).map(Some),
        _ => Ok(None),
    }
}

/// The most partial sums [`conv_weight_grad`] keeps (fewer where they would
/// pass [`WEIGHT_GRAD_PARTS_BYTES`] together).
pub const WEIGHT_GRAD_PARTS: usize = 16;
/// The bytes [`conv_weight_grad`]'s partial sums may take together.
const WEIGHT_GRAD_PARTS_BYTES: usize = 32 << 20;

fn conv_weight_grad_typed<T: MatElem>(
    x: &Strided,
    table: &Windows,
    grad: &Strided,
) -> Result<Strided> {
    let (samples, channels) = (x.shape()[0], x.shape()[1]);
    let (m, kr, l) = (grad.shape()[1], channels * table.k, table.l);
    if grad.ndim() != 3
        || grad.shape()[0] != samples
        || grad.shape()[2] != l
        || x.numel() != samples * channels * table.plane
    {
        bail!(
            internal,
            "kernels::conv_weight_grad: shapes do not match the table"
        );
    }
    let size = std::mem::size_of::<T>();
    let blocks: Vec<ColumnBlock> = column_blocks(kr, l, size, WEIGHT_GRAD_MIN_WIDTH)
        .into_iter()
        .map(|cols| table.column_block(cols))
        .collect();
    let units = samples * blocks.len();
    let fit = (WEIGHT_GRAD_PARTS_BYTES / (m * kr * size).max(1)).max(1);
    let per_part = units.div_ceil(WEIGHT_GRAD_PARTS.min(fit).min(units).max(1));
    let parts = units.div_ceil(per_part.max(1));
    let mut partials = crate::buffer::pool::try_buffer::<T>(parts * m * kr)?;
    if partials.is_empty() || units == 0 {
        partials.clear();
        partials.resize(m * kr, T::zero());
        return Ok(Strided::contiguous(T::wrap(partials), &[m, kr]));
    }
    let sx = x.storage().read_recursive();
    let sg = grad.storage().read_recursive();
    let dx = &sx.as_slice::<T>()[x.layout().offset..];
    let dg = sg.as_slice::<T>();
    let per_sample = channels * table.plane;
    let widest = blocks.iter().map(|b| b.cols.len()).max().unwrap_or(0);
    let scratch = Scratch::new(kr * widest + m * kr);
    let mnk = [m, kr, 0];
    // Unit `u` (block `u % blocks` of sample `u / blocks`) into `part`,
    // written (`first`) or added.
    let unit = |u: usize, part: &mut [T], first: bool, par: Parallelism| -> Result<()> {
        let (s, block) = (u / blocks.len(), &blocks[u % blocks.len()]);
        let (c0, width) = (block.cols.start, block.cols.len());
        let mut buf = scratch.take()?;
        let (cols, product) = buf.split_at_mut(kr * width);
        block.gather_planes(&dx[s * per_sample..(s + 1) * per_sample], T::zero(), cols);
        let am = Mat {
            off: grad.layout().offset + s * m * l + c0,
            rs: l,
            cs: 1,
        };
        // cols^T: row o of the right operand is column o of the block.
        let bm = Mat {
            off: 0,
            rs: 1,
            cs: width,
        };
        let mnk = [mnk[0], mnk[1], width];
        let path = T::path(mnk);
        match first {
            true => T::product(part, dg, am, cols, bm, mnk, path, par),
            false => {
                let product = &mut product[..m * kr];
                T::product(product, dg, am, cols, bm, mnk, path, par);
                part.iter_mut()
                    .zip(product.iter())
                    .for_each(|(p, &v)| *p = *p + v);
            }
        }
        scratch.give(buf);
        Ok(())
    };
    // Partial sum `p`: its run of units in order.
    let parts_of = SharedOut::new(&mut partials);
    let part = |p: usize, par: Parallelism| -> Result<()> {
        // SAFETY: partial sum p alone writes its m * kr elements.
        let sum = unsafe { parts_of.run(p * m * kr, m * kr) };
        let first = p * per_part;
        (first..(first + per_part).min(units)).try_for_each(|u| unit(u, sum, u == first, par))
    };
    let done = for_each_unit(parts, &part);
    scratch.recycle();
    drop((sx, sg));
    done?;
    // the partial sums, in order, into the first
    let (total, rest) = partials.split_at_mut(m * kr);
    for part in rest.chunks_exact(m * kr) {
        total.iter_mut().zip(part).for_each(|(t, &v)| *t = *t + v);
    }
    partials.truncate(m * kr);
    Ok(Strided::contiguous(T::wrap(partials), &[m, kr]))
}

/// Scratch buffers of one length from the pool, one per unit of work
/// running at a time: taken by a unit, given back when it ends, returned
/// to the pool at the end of the call.
struct Scratch<T: MatElem> {
    len: usize,
    free: parking_lot::Mutex<Vec<Vec<T>>>,
}

impl<T: MatElem> Scratch<T> {
    fn new(len: usize) -> Self {
        Scratch {
            len,
            free: parking_lot::Mutex::new(Vec::new()),
        }
    }

    fn take(&self) -> Result<Vec<T>> {
        match self.free.lock().pop() {
            Some(b) => Ok(b),
            None => crate::buffer::pool::try_buffer::<T>(self.len),
        }
    }

    fn give(&self, b: Vec<T>) {
        self.free.lock().push(b);
    }

    fn recycle(self) {
        self.free
            .into_inner()
            .into_iter()
            .for_each(crate::buffer::pool::recycle);
    }
}

/// A convolution's input gradient without the windows' gradient tensor:
/// `grad` is a contiguous `[batch, m, table.l]`, `w` a contiguous `[m,
/// channels * table.k]`; the result is `[batch, channels * table.plane]`,
/// sample `s` being `fold(w^T @ grad(s))`. Each sample's product goes to a
/// buffer that stays in cache and is added back to the input positions at
/// once, one sample per thread (so the sums do not depend on the thread
/// count). `None` where [`conv_forward`] gives `None`.
pub fn conv_input_grad(grad: &Strided, table: &Windows, w: &Strided) -> Result<Option<Strided>> {
    let threads = crate::parallel::num_threads();
    let samples = grad.shape()[0];
    if !grad.is_contiguous()
        || !w.is_contiguous()
        || grad.dtype() != w.dtype()
        || (threads > 1 && samples < 2 * threads)
    {
        return Ok(None);
    }
    match grad.dtype() {
        DType::F32 => conv_input_grad_typed::<f32>(grad, table, w).map(Some),
        DType::F64 => conv_input_grad_typed::<f64>(grad, table, w).map(Some),
        _ => Ok(None),
    }
}

fn conv_input_grad_typed<T: MatElem>(
    grad: &Strided,
    table: &Windows,
    w: &Strided,
) -> Result<Strided> {
    let (samples, m, l) = (grad.shape()[0], grad.shape()[1], grad.shape()[2]);
    let kr = w.shape()[1];
    let channels = kr / table.k.max(1);
    if w.shape()[0] != m || l != table.l || channels * table.k != kr {
        bail!(
            internal,
            "kernels::conv_input_grad: shapes do not match the table"
        );
    }
    let per_sample = channels * table.plane;
    let mut out = crate::buffer::pool::try_buffer::<T>(samples * per_sample)?;
    if out.is_empty() {
        return Ok(Strided::contiguous(T::wrap(out), &[samples, per_sample]));
    }
    let mnk = [kr, l, m];
    let path = T::path(mnk);
    let sg = grad.storage().read_recursive();
    let sw = w.storage().read_recursive();
    let (dg, dw) = (sg.as_slice::<T>(), sw.as_slice::<T>());
    // w^T: row i of the left operand is column i of w.
    let am = Mat {
        off: w.layout().offset,
        rs: 1,
        cs: kr,
    };
    let plane_cols = table.k * l;
    let ys = SharedOut::new(&mut out);
    let scratch = Scratch::new(kr * l);
    // Unit `s`: sample `s`'s product in a buffer, added back into its planes.
    let unit = |s: usize, par: Parallelism| -> Result<()> {
        let mut cols = scratch.take()?;
        let bm = Mat {
            off: grad.layout().offset + s * m * l,
            rs: l,
            cs: 1,
        };
        T::product(&mut cols, dw, am, dg, bm, mnk, path, par);
        // SAFETY: unit s alone writes sample s's elements of `out`
        // (`[samples, per_sample]`).
        let dst = unsafe { ys.run(s * per_sample, per_sample) };
        for (plane, c) in dst
            .chunks_exact_mut(table.plane.max(1))
            .zip(cols.chunks_exact(plane_cols.max(1)))
        {
            table.scatter_add_plane(c, plane);
        }
        scratch.give(cols);
        Ok(())
    };
    let done = for_each_unit(samples, &unit);
    scratch.recycle();
    done?;
    drop((sg, sw));
    Ok(Strided::contiguous(T::wrap(out), &[samples, per_sample]))
}
