//! Joining and splitting: `cat`, `stack`, `split`, `split_with_sizes`,
//! `chunk`, `unbind`.
//!
//! | op                    | backward                                            |
//! |-----------------------|-----------------------------------------------------|
//! | cat(ts, d)            | input i: grad.narrow(d, offset_i, size_i)           |
//! | stack(ts, d)          | input i: grad.select(d, i)                          |
//! | split / chunk (views) | cat(grads of all outputs, d) (zeros where unused)   |
//! | unbind(d) (views)     | stack(grads of all outputs, d)                      |
//!
//! `cat` and `stack` promote their inputs to a common dtype like torch; the
//! engine casts each input's gradient back to its dtype. `split`, `chunk`
//! and `unbind` return views of the input (one node for all outputs).

use crate::autograd::record;
use crate::kernels::join;
use crate::tensor::layout::wrap_dim;
use crate::tensor::{DType, Tensor};
use crate::{bail, Result};

/// torch's legacy rule: 1-D empty tensors are skipped by `cat`.
fn skipped_in_cat(t: &Tensor) -> bool {
    t.ndim() == 1 && t.shape()[0] == 0
}

fn promote_all(tensors: &[Tensor]) -> DType {
    tensors
        .iter()
        .map(|t| t.dtype())
        .fold(DType::Bool, DType::promote)
}

/// Concatenates `tensors` along `dim` (torch.cat / torch.concat).
pub fn cat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    if tensors.is_empty() {
        bail!(value, "torch.cat(): expected a non-empty list of Tensors");
    }
    if tensors.iter().any(|t| t.is_view()) {
        crate::autograd::check_history_first(&tensors.iter().collect::<Vec<_>>())?;
    }
    for (i, t) in tensors.iter().enumerate() {
        if t.ndim() == 0 {
            bail!(
                runtime,
                "zero-dimensional tensor (at position {}) cannot be concatenated",
                i
            );
        }
    }
    let dt = promote_all(tensors);
    let Some(first) = tensors.iter().find(|t| !skipped_in_cat(t)) else {
        // every input is an empty 1-D tensor
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let n = tensors.len();
        let rec = record("CatBackward0", &refs).attr("dim", dim);
        return rec.finish(Tensor::zeros(&[0], dt), move |c| {
            let g = c.grad();
            Ok((0..n)
                .map(|_| Some(Tensor::zeros(&[0], g.dtype())))
                .collect())
        });
    };
    let d = wrap_dim(dim, first.ndim())?;
    let mut total = 0usize;
    for (i, t) in tensors.iter().enumerate() {
        if skipped_in_cat(t) {
            continue;
        }
        if t.ndim() != first.ndim() {
            bail!(
                runtime,
                "Tensors must have same number of dimensions: got {} and {}",
                first.ndim(),
                t.ndim()
            );
        }
        for j in 0..t.ndim() {
            if j != d && t.shape()[j] != first.shape()[j] {
                bail!(
                    runtime,
                    "Sizes of tensors must match except in dimension {}. Expected size {} but got size {} for tensor number {} in the list.",
                    d,
                    first.shape()[j],
                    t.shape()[j],
                    i
                );
            }
        }
        total += t.shape()[d];
    }
    let mut shape = first.dims();
    shape[d] = total;
    let rec = record("CatBackward0", &tensors.iter().collect::<Vec<_>>()).attr("dim", dim);
    // (offset, size) of each input along d; None for skipped inputs
    let mut spans: Vec<Option<(usize, usize)>> = Vec::with_capacity(tensors.len());
    let mut srcs = Vec::with_capacity(tensors.len());
    let mut off = 0;
    for t in tensors {
        if skipped_in_cat(t) {
            spans.push(None);
            continue;
        }
        let n = t.shape()[d];
        srcs.push((&**t, t.layout().clone()));
        spans.push(Some((off, n)));
        off += n;
    }
    let out = Tensor::from(join::cat(&srcs, d, &shape, dt)?);
    rec.finish(out, move |c| {
        let g = c.grad();
        spans
            .iter()
            .map(|s| match s {
                Some((o, n)) => Ok(Some(g.narrow(d as i64, *o as i64, *n)?)),
                None => Ok(Some(Tensor::zeros(&[0], g.dtype()))),
            })
            .collect()
    })
}

/// Stacks equally shaped `tensors` along a new dim `dim`.
pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    if tensors.is_empty() {
        bail!(runtime, "stack expects a non-empty TensorList");
    }
    if tensors.iter().any(|t| t.is_view()) {
        crate::autograd::check_history_first(&tensors.iter().collect::<Vec<_>>())?;
    }
    let first = &tensors[0];
    for (i, t) in tensors.iter().enumerate().skip(1) {
        if t.shape() != first.shape() {
            bail!(
                runtime,
                "stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {}",
                first.shape(),
                t.shape(),
                i
            );
        }
    }
    let d = wrap_dim(dim, first.ndim() + 1)?;
    let dt = promote_all(tensors);
    let mut shape = first.dims();
    shape.insert(d, tensors.len());
    let rec = record("StackBackward0", &tensors.iter().collect::<Vec<_>>());
    let srcs: Vec<_> = tensors
        .iter()
        .map(|t| (&**t, t.layout().unsqueeze(d)))
        .collect();
    let out = Tensor::from(join::cat(&srcs, d, &shape, dt)?);
    let n = tensors.len();
    rec.finish(out, move |c| {
        let g = c.grad();
        (0..n)
            .map(|i| Ok(Some(g.select(d as i64, i as i64)?)))
            .collect()
    })
}

impl Tensor {
    /// `torch.cat(tensors, dim)`.
    pub fn cat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
        cat(tensors, dim)
    }
    /// `torch.stack(tensors, dim)`.
    pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
        stack(tensors, dim)
    }

    /// Views of consecutive pieces of `sizes` along dim `d`, sharing one
    /// node whose backward concatenates the pieces' gradients.
    fn split_views(&self, name: &'static str, d: usize, sizes: &[usize]) -> Result<Vec<Tensor>> {
        let rec = record(name, &[self]);
        let mut outs = Vec::with_capacity(sizes.len());
        let mut off = 0;
        for &n in sizes {
            outs.push(self.alias_with_layout(self.layout().narrow(d, off, n)?));
            off += n;
        }
        let count = sizes.len();
        rec.finish_many(outs, move |c| {
            let grads: Vec<Tensor> = (0..count).map(|i| c.grad_of(i).clone()).collect();
            Ok(vec![Some(cat(&grads, d as i64)?)])
        })
    }

    fn split_dim(&self, what: &str, dim: i64) -> Result<usize> {
        if self.ndim() == 0 {
            bail!(runtime, "{} expects at least a 1-dimensional tensor", what);
        }
        wrap_dim(dim, self.ndim())
    }

    /// Pieces of `split_size` along `dim` (the last may be smaller); views.
    pub fn split(&self, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
        crate::autograd::check_history_first(&[self])?;
        let d = self.split_dim("split", dim)?;
        if split_size < 0 {
            bail!(
                runtime,
                "split expects split_size be non-negative, but got split_size={}",
                split_size
            );
        }
        let size = self.shape()[d];
        let ss = split_size as usize;
        if ss == 0 && size != 0 {
            bail!(
                runtime,
                "split_size can only be 0 if dimension size is 0, but got dimension size of {}",
                size
            );
        }
        let num = if ss == 0 { 1 } else { size.div_ceil(ss).max(1) };
        let sizes: Vec<usize> = (0..num)
            .map(|i| {
                if i + 1 < num {
                    ss
                } else {
                    size - ss * (num - 1)
                }
            })
            .collect();
        self.split_views("SplitBackward0", d, &sizes)
    }

    /// Pieces of the given sizes along `dim`; they must add up to its size.
    pub fn split_with_sizes(&self, sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
        crate::autograd::check_history_first(&[self])?;
        let d = self.split_dim("split", dim)?;
        let size = self.shape()[d];
        if sizes.iter().any(|&s| s < 0) {
            bail!(
                runtime,
                "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={:?}",
                sizes
            );
        }
        if sizes.iter().sum::<i64>() != size as i64 {
            bail!(
                runtime,
                "split_with_sizes expects split_sizes to sum exactly to {} (input tensor's size at dimension {}), but got split_sizes={:?}",
                size,
                d,
                sizes
            );
        }
        let sizes: Vec<usize> = sizes.iter().map(|&s| s as usize).collect();
        self.split_views("SplitWithSizesBackward0", d, &sizes)
    }

    /// At most `chunks` equal pieces along `dim` (torch.chunk); views.
    pub fn chunk(&self, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
        if self.ndim() == 0 {
            bail!(runtime, "chunk expects at least a 1-dimensional tensor");
        }
        if chunks <= 0 {
            bail!(
                runtime,
                "chunk expects `chunks` to be greater than 0, got: {}",
                chunks
            );
        }
        let d = wrap_dim(dim, self.ndim())?;
        let size = self.shape()[d];
        let ss = size.div_ceil(chunks as usize);
        if ss == 0 && size == 0 {
            let sizes = vec![0usize; chunks as usize];
            return self.split_views("SplitWithSizesBackward0", d, &sizes);
        }
        self.split(ss as i64, dim)
    }

    /// The slices along `dim`, as views without that dim.
    pub fn unbind(&self, dim: i64) -> Result<Vec<Tensor>> {
        crate::autograd::check_history_first(&[self])?;
        if self.ndim() == 0 {
            bail!(
                index,
                "Dimension specified as 0 but tensor has no dimensions"
            );
        }
        let d = wrap_dim(dim, self.ndim())?;
        let n = self.shape()[d];
        let rec = record("UnbindBackward0", &[self]);
        let outs: Vec<Tensor> = (0..n)
            .map(|i| self.alias_with_layout(self.layout().select(d, i)))
            .collect();
        if n == 0 {
            return Ok(outs);
        }
        rec.finish_many(outs, move |c| {
            let grads: Vec<Tensor> = (0..n).map(|i| c.grad_of(i).clone()).collect();
            Ok(vec![Some(stack(&grads, d as i64)?)])
        })
    }
}
