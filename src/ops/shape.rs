//! Ops that rearrange elements: flip, roll, repeat/tile, tril/triu,
//! diagonal/diag/trace, movedim. Copies are computed from the input's data
//! by existing kernels and recorded as one node; diagonal is a view.
//!
//! | op               | backward                                              |
//! |------------------|-------------------------------------------------------|
//! | flip(dims)       | grad.flip(dims)                                       |
//! | roll(s, dims)    | grad.roll(-s, dims)                                   |
//! | repeat(sizes)    | grad split into its tiles, summed                     |
//! | tril(k) / triu(k)| grad.tril(k) / grad.triu(k)                           |
//! | diagonal         | grad scattered onto the diagonal of zeros (a view)    |
//! | diag (1-D)       | grad.diagonal(k)                                      |
//! | trace            | grad on the diagonal of zeros                         |
//! | movedim          | a permute                                             |

use crate::autograd::{no_grad, record};
use crate::tensor::layout::wrap_dim;
use crate::tensor::{DType, Layout, Scalar, Tensor};
use crate::{bail, Result};
use std::sync::Arc;

/// Wraps `dims` against `ndim`; `on_repeat` is the error message for a
/// dim given twice.
fn wrap_unique(
    dims: &[i64],
    ndim: usize,
    on_repeat: impl Fn(usize) -> String,
) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        let w = wrap_dim(d, ndim.max(1))?;
        if out.contains(&w) {
            return Err(crate::Error::runtime(on_repeat(w)));
        }
        out.push(w);
    }
    Ok(out)
}

/// [`wrap_unique`] with torch's message for a list of dims.
fn unique_dims(dims: &[i64], ndim: usize) -> Result<Vec<usize>> {
    wrap_unique(dims, ndim, |w| {
        format!("dim {w} appears multiple times in the list of dims")
    })
}

/// The layout of the `offset`-th diagonal of dims `d1`, `d2` of `l`: those
/// dims removed, the diagonal appended last.
fn diagonal_layout(l: &Layout, offset: i64, d1: usize, d2: usize) -> Layout {
    let (n1, n2) = (l.shape[d1] as i64, l.shape[d2] as i64);
    let (s1, s2) = (l.strides[d1], l.strides[d2]);
    let len = if offset >= 0 {
        (n1.min(n2 - offset)).max(0)
    } else {
        ((n1 + offset).min(n2)).max(0)
    } as usize;
    let mut start = l.offset;
    if len > 0 {
        start += if offset >= 0 {
            offset as usize * s2
        } else {
            (-offset) as usize * s1
        };
    }
    let mut shape = l.shape.clone();
    let mut strides = l.strides.clone();
    for d in [d1.max(d2), d1.min(d2)] {
        shape.remove(d);
        strides.remove(d);
    }
    shape.push(len);
    strides.push(s1 + s2);
    Layout {
        shape,
        strides,
        offset: start,
    }
}

impl Tensor {
    /// Reverses the order of elements along `dims` (a copy).
    pub fn flip(&self, dims: &[i64]) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let ds = unique_dims(dims, self.ndim())?;
        let mut out = self.detach();
        let mut copied = false;
        {
            let _g = no_grad();
            for &d in &ds {
                let n = self.shape().get(d).copied().unwrap_or(1) as i64;
                if self.ndim() == 0 || n < 2 {
                    continue;
                }
                let rev = Tensor::arange(
                    Scalar::Int(n - 1),
                    Scalar::Int(-1),
                    Scalar::Int(-1),
                    DType::I64,
                )?;
                out = out.index_select(d as i64, &rev)?;
                copied = true;
            }
            if !copied {
                out = out.clone_tensor()?;
            }
        }
        let dims = dims.to_vec();
        record("FlipBackward0", &[self]).finish(out, move |c| Ok(vec![Some(c.grad().flip(&dims)?)]))
    }

    /// Rotates elements along `dims` by `shifts` (element i moves to
    /// i + shift); with no dims, over the flattened tensor.
    pub fn roll(&self, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        if dims.is_empty() {
            if shifts.len() != 1 {
                bail!(runtime, "`shifts` required");
            }
            let shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
            return self.flatten(0, -1)?.roll(shifts, &[0])?.view(&shape);
        }
        if shifts.len() != dims.len() {
            bail!(
                runtime,
                "shifts and dimensions must align. shifts: {}, dims:{}",
                shifts.len(),
                dims.len()
            );
        }
        let mut out = self.detach();
        let mut copied = false;
        {
            let _g = no_grad();
            for (&s, &d) in shifts.iter().zip(dims) {
                let d = wrap_dim(d, self.ndim().max(1))?;
                let n = out.shape().get(d).copied().unwrap_or(1) as i64;
                if n == 0 {
                    continue;
                }
                let s = s.rem_euclid(n) as usize;
                if s == 0 {
                    continue;
                }
                let n = n as usize;
                let tail = out.narrow(d as i64, (n - s) as i64, s)?;
                let head = out.narrow(d as i64, 0, n - s)?;
                out = Tensor::cat(&[tail, head], d as i64)?;
                copied = true;
            }
            if !copied {
                out = out.clone_tensor()?;
            }
        }
        let back: Vec<i64> = shifts.iter().map(|s| -s).collect();
        let dims = dims.to_vec();
        record("RollBackward0", &[self])
            .finish(out, move |c| Ok(vec![Some(c.grad().roll(&back, &dims)?)]))
    }

    /// Tiles the tensor `sizes[i]` times along dim i (`sizes` may add
    /// leading dims).
    pub fn repeat(&self, sizes: &[i64]) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        if sizes.len() < self.ndim() {
            bail!(runtime, "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
        }
        if let Some(&r) = sizes.iter().find(|&&r| r < 0) {
            bail!(
                runtime,
                "Trying to create tensor with negative dimension {r}: {sizes:?}"
            );
        }
        let pad = sizes.len() - self.ndim();
        let padded: Vec<i64> = std::iter::repeat_n(1, pad)
            .chain(self.shape().iter().map(|&d| d as i64))
            .collect();
        // [1, n0, 1, n1, ...] expanded to [r0, n0, r1, n1, ...].
        let mut split = Vec::with_capacity(2 * sizes.len());
        let mut ones = Vec::with_capacity(2 * sizes.len());
        for (&r, &n) in sizes.iter().zip(&padded) {
            split.extend([r, n]);
            ones.extend([1, n]);
        }
        let out_shape: Vec<i64> = sizes.iter().zip(&padded).map(|(r, n)| r * n).collect();
        let out = {
            let _g = no_grad();
            self.detach()
                .reshape(&ones)?
                .expand(&split)?
                .contiguous()?
                .reshape(&out_shape)?
        };
        let orig: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
        let tiles: Vec<i64> = (0..sizes.len() as i64).map(|i| 2 * i).collect();
        record("RepeatBackward0", &[self]).finish(out, move |c| {
            let g = c.grad().reshape(&split)?.sum_dims(&tiles, false, None)?;
            Ok(vec![Some(g.reshape(&orig)?)])
        })
    }
    /// `repeat` with `dims` padded with leading ones to the tensor's rank.
    pub fn tile(&self, dims: &[i64]) -> Result<Tensor> {
        let pad = self.ndim().saturating_sub(dims.len());
        let sizes: Vec<i64> = std::iter::repeat_n(1, pad)
            .chain(dims.iter().copied())
            .collect();
        self.repeat(&sizes)
    }

    /// The lower triangle (j - i <= diagonal) of the last two dims; zeros
    /// elsewhere.
    pub fn tril(&self, diagonal: i64) -> Result<Tensor> {
        self.triangle(diagonal, true)
    }
    /// The upper triangle (j - i >= diagonal) of the last two dims.
    pub fn triu(&self, diagonal: i64) -> Result<Tensor> {
        self.triangle(diagonal, false)
    }
    fn triangle(&self, k: i64, lower: bool) -> Result<Tensor> {
        let name = if lower { "tril" } else { "triu" };
        if self.ndim() < 2 {
            bail!(
                runtime,
                "{name}: input tensor must have at least 2 dimensions"
            );
        }
        let (m, n) = (self.shape()[self.ndim() - 2], self.shape()[self.ndim() - 1]);
        let out = {
            let _g = no_grad();
            let idx = |len: usize| {
                Tensor::arange(
                    Scalar::Int(0),
                    Scalar::Int(len as i64),
                    Scalar::Int(1),
                    DType::I64,
                )
            };
            let diff = idx(n)?.unsqueeze(0)?.sub(&idx(m)?.unsqueeze(1)?)?;
            let keep = if lower {
                diff.le_scalar(k)?
            } else {
                diff.ge_scalar(k)?
            };
            Tensor::where_cond(&keep, &self.detach(), &Tensor::zeros(&[], self.dtype()))?
        };
        let node = if lower {
            "TrilBackward0"
        } else {
            "TriuBackward0"
        };
        record(node, &[self]).finish(out, move |c| Ok(vec![Some(c.grad().triangle(k, lower)?)]))
    }

    /// The `offset`-th diagonal of dims `dim1`, `dim2`, as a view (those
    /// dims removed, the diagonal last).
    pub fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let nd = self.ndim();
        let (d1, d2) = (wrap_dim(dim1, nd)?, wrap_dim(dim2, nd)?);
        if d1 == d2 {
            bail!(
                runtime,
                "diagonal dimensions cannot be identical {dim1}, {dim2}"
            );
        }
        self.strided_view(
            "DiagonalBackward0",
            Arc::new(move |l: &Layout| diagonal_layout(l, offset, d1, d2)),
        )
    }
    /// 1-D: a square matrix with `self` on its `diagonal`-th diagonal. 2-D:
    /// a copy of that diagonal.
    pub fn diag(&self, diagonal: i64) -> Result<Tensor> {
        match self.ndim() {
            1 => self.diag_embed(diagonal),
            2 => self.diagonal(diagonal, 0, 1)?.clone_tensor(),
            d => bail!(runtime, "diag(): Supports 1D or 2D tensors. Got {d}D"),
        }
    }
    /// `[.., k]` -> `[.., n, n]` (`n = k + |diagonal|`): each row of the
    /// last dim on diagonal `diagonal` of a zero matrix, as `diag` of a
    /// vector; leading dims are a batch (vmap's rule for `diag`).
    pub fn diag_embed(&self, diagonal: i64) -> Result<Tensor> {
        let nd = self.ndim();
        if nd == 0 {
            bail!(runtime, "diag_embed(): expected at least one dim");
        }
        let mut shape = self.shape()[..nd - 1].to_vec();
        let n = self.shape()[nd - 1] + diagonal.unsigned_abs() as usize;
        shape.extend([n, n]);
        self.strided_scatter(
            &shape,
            Arc::new(move |l: &Layout| diagonal_layout(l, diagonal, nd - 1, nd)),
        )
    }
    /// The sum of a matrix's main diagonal.
    pub fn trace(&self) -> Result<Tensor> {
        if self.ndim() != 2 {
            bail!(
                runtime,
                "trace: expected a matrix, but got tensor with dim {}",
                self.ndim()
            );
        }
        let out = {
            let _g = no_grad();
            self.detach().diagonal(0, 0, 1)?.sum()?
        };
        let shape = self.dims();
        record("TraceBackward0", &[self]).finish(out, move |c| {
            let len = shape[0].min(shape[1]);
            let g = c.grad().expand(&[len as i64])?;
            let f = Arc::new(move |l: &Layout| diagonal_layout(l, 0, 0, 1));
            Ok(vec![Some(g.strided_scatter(&shape, f)?)])
        })
    }

    /// Moves dims `source` to positions `destination` (a permute view); the
    /// other dims keep their order.
    pub fn movedim(&self, source: &[i64], destination: &[i64]) -> Result<Tensor> {
        let nd = self.ndim();
        if source.len() != destination.len() {
            bail!(runtime, "movedim: Invalid source or destination dims: source ({:?} dims) should contain the same number of dims as destination ({:?} dims)", source, destination);
        }
        let wrap_all = |what: &str, dims: &[i64]| {
            wrap_unique(dims, nd, |_| {
                format!("movedim: repeated dim in `{what}` ({dims:?})")
            })
        };
        let src = wrap_all("source", source)?;
        let dst = wrap_all("destination", destination)?;
        let mut perm: Vec<Option<usize>> = vec![None; nd];
        for (&s, &d) in src.iter().zip(&dst) {
            perm[d] = Some(s);
        }
        let mut rest = (0..nd).filter(|d| !src.contains(d));
        let perm: Vec<i64> = perm
            .into_iter()
            .map(|p| {
                p.or_else(|| rest.next())
                    .expect("as many free slots as dims") as i64
            })
            .collect();
        self.permute(&perm)
    }
}
