//! View ops: new layouts over the same storage, no copies.
//!
//! | op                 | backward                                   |
//! |--------------------|--------------------------------------------|
//! | view / reshape     | grad.reshape(self.shape)                    |
//! | _unsafe_view       | grad.reshape(self.shape) (not a view: a     |
//! |                    | reshape's copy, matmul's results)           |
//! | transpose(d0, d1)  | grad.transpose(d0, d1)                      |
//! | permute(dims)      | grad.permute(inverse(dims))                 |
//! | expand(shape)      | grad.sum_to_size(self.shape)                |
//! | t()                | grad.t()                                    |
//! | (un)squeeze        | grad.reshape(self.shape)                    |
//! | narrow/select/slice| scatter grad into zeros of self.shape       |

use super::to_i64;
use crate::autograd::record;
use crate::autograd::SavedAttr;
use crate::tensor::layout::{infer_shape, wrap_dim};
use crate::tensor::{Layout, Tensor};
use crate::{bail, Result};
use std::sync::Arc;

/// A geometric view function: maps a tensor's layout to its view's layout.
/// It must work on any input layout (it is replayed on gradients).
pub type ViewFn = Arc<dyn Fn(&Layout) -> Layout + Send + Sync>;

impl Tensor {
    /// torch's `view`: fails when the strides make it impossible.
    pub fn view(&self, shape: &[i64]) -> Result<Tensor> {
        self.view_named(shape, "ViewBackward0")
    }
    /// `view` recorded as node `name`.
    fn view_named(&self, shape: &[i64], name: &'static str) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let shape = infer_shape(shape, self.numel())?;
        let Some(strides) = self.layout().view_strides(&shape) else {
            bail!(runtime, "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
        };
        let rec = record(name, &[self]).attr("self_sym_sizes", self.shape());
        let out = self.alias_with_layout(Layout {
            shape,
            strides,
            offset: self.storage_offset(),
        });
        let orig = to_i64(self.shape());
        rec.finish(out, move |c| Ok(vec![Some(c.grad().reshape(&orig)?)]))
    }
    /// A view when the strides allow, else a copy, named as torch names
    /// them: a `view` of a contiguous tensor (ViewBackward0), `_reshape_alias`
    /// of another (ReshapeAliasBackward0), or `_unsafe_view(self.clone())`
    /// (UnsafeViewBackward0 over CloneBackward0; the result is no view).
    pub fn reshape(&self, shape: &[i64]) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let dims = infer_shape(shape, self.numel())?;
        // (torch counts every empty tensor as contiguous)
        if self.is_contiguous() || self.numel() == 0 {
            return self.view(shape);
        }
        if self.layout().view_strides(&dims).is_some() {
            return self.view_named(shape, "ReshapeAliasBackward0");
        }
        // torch: `_unsafe_view(clone(contiguous))`, not a view of anything
        self.contiguous()?.unsafe_view(shape)
    }
    /// torch's `_unsafe_view` of a fresh result (a reshape's copy, a matmul's
    /// product): its memory under `shape` as a tensor of its own, which
    /// autograd does not treat as a view (an in-place op on it records that
    /// op, no rebase). A non-contiguous `self` is copied first.
    pub(crate) fn unsafe_view(&self, shape: &[i64]) -> Result<Tensor> {
        let r = if self.is_contiguous() {
            self.clone()
        } else {
            self.contiguous()?
        };
        let shape = infer_shape(shape, r.numel())?;
        let l = Layout {
            strides: crate::tensor::layout::contiguous_strides(&shape),
            shape,
            offset: r.storage_offset(),
        };
        r.fresh_alias(l, "UnsafeViewBackward0")
    }
    /// This tensor's memory laid out by `layout` (the same elements in the
    /// same order, as a reshape would) as a tensor of its own, not a view
    /// of it, recorded as node `name`: for results torch makes by
    /// `_unsafe_view` or by an in-place view op (matmul's `squeeze_`).
    pub(crate) fn fresh_alias(&self, layout: Layout, name: &'static str) -> Result<Tensor> {
        let rec = record(name, &[self]);
        let out = Tensor::from(self.with_layout(layout));
        let orig = to_i64(self.shape());
        rec.finish(out, move |c| Ok(vec![Some(c.grad().reshape(&orig)?)]))
    }
    pub fn flatten(&self, start_dim: i64, end_dim: i64) -> Result<Tensor> {
        let (s, e) = (
            wrap_dim(start_dim, self.ndim())?,
            wrap_dim(end_dim, self.ndim())?,
        );
        if s > e {
            bail!(
                runtime,
                "flatten() has invalid args: start_dim cannot come after end_dim"
            );
        }
        if self.ndim() == 0 {
            return self.reshape(&[1]);
        }
        if s == e {
            // torch returns the tensor itself (the same Python object)
            return Ok(self.clone());
        }
        let mut shape: Vec<i64> = to_i64(&self.shape()[..s]);
        shape.push(self.shape()[s..=e].iter().product::<usize>() as i64);
        shape.extend(to_i64(&self.shape()[e + 1..]));
        self.reshape(&shape)
    }
    /// torch's `unflatten`: dim `dim` split into `sizes` (one may be -1).
    pub fn unflatten(&self, dim: i64, sizes: &[i64]) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim())?;
        if sizes.is_empty() {
            bail!(runtime, "unflatten: sizes must be non-empty");
        }
        let n = self.shape()[d];
        let plain =
            sizes.iter().all(|&s| s >= -1) && sizes.iter().filter(|&&s| s == -1).count() <= 1;
        let inferred = match infer_shape(sizes, n) {
            Ok(s) => s,
            Err(e) if !plain => return Err(e),
            Err(_) => bail!(
                runtime,
                "unflatten: Provided sizes {:?} don't multiply up to the size of dim {} ({}) in the input tensor",
                sizes,
                dim,
                n
            ),
        };
        let mut shape: Vec<i64> = to_i64(&self.shape()[..d]);
        shape.extend(to_i64(&inferred));
        shape.extend(to_i64(&self.shape()[d + 1..]));
        self.view(&shape)
    }
    pub fn transpose(&self, dim0: i64, dim1: i64) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let (d0, d1) = (wrap_dim(dim0, self.ndim())?, wrap_dim(dim1, self.ndim())?);
        let rec = record("TransposeBackward0", &[self])
            .attr("dim0", dim0)
            .attr("dim1", dim1);
        let out = self.alias_with_layout(self.layout().transpose(d0, d1));
        rec.finish(out, move |c| {
            Ok(vec![Some(c.grad().transpose(d0 as i64, d1 as i64)?)])
        })
    }
    /// 2-D transpose (`t()`, TBackward0); 0-D and 1-D tensors come back as
    /// they are (a view).
    pub fn t(&self) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        if self.ndim() > 2 {
            bail!(
                runtime,
                "t() expects a tensor with <= 2 dimensions, but self is {}D",
                self.ndim()
            );
        }
        let rec = record("TBackward0", &[self]);
        let l = match self.ndim() {
            2 => self.layout().transpose(0, 1),
            _ => self.layout().clone(),
        };
        let out = self.alias_with_layout(l);
        rec.finish(out, |c| Ok(vec![Some(c.grad().t()?)]))
    }
    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        if dims.len() != self.ndim() {
            // Checked before the dims are wrapped, as torch does.
            self.layout().permute(&vec![0; dims.len()])?;
        }
        let user_dims = dims;
        let dims: Vec<usize> = dims
            .iter()
            .map(|&d| wrap_dim(d, self.ndim()))
            .collect::<Result<_>>()?;
        let rec = record("PermuteBackward0", &[self]).attr("dims", user_dims);
        let out = self.alias_with_layout(self.layout().permute(&dims)?);
        let mut inverse = vec![0i64; dims.len()];
        for (i, &d) in dims.iter().enumerate() {
            inverse[d] = i as i64;
        }
        rec.finish(out, move |c| Ok(vec![Some(c.grad().permute(&inverse)?)]))
    }
    /// Broadcast to `shape`; `-1` keeps a dim.
    pub fn expand(&self, shape: &[i64]) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let lead = shape.len().saturating_sub(self.ndim());
        let mut target = Vec::with_capacity(shape.len());
        for (i, &d) in shape.iter().enumerate() {
            if d == -1 {
                if i < lead {
                    bail!(runtime, "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {}", i);
                }
                target.push(self.shape()[i - lead]);
            } else if d < 0 {
                bail!(runtime, "invalid shape dimension {}", d);
            } else {
                target.push(d as usize);
            }
        }
        let rec = record("ExpandBackward0", &[self]).attr("self_sym_sizes", self.shape());
        let out = self.alias_with_layout(self.layout().expand(&target)?);
        let orig = self.dims();
        rec.finish(out, move |c| {
            // torch's at::sum_to: to a 0-dim shape it is grad.sum(), a
            // tensor of its own even when grad is 0-dim (never grad itself)
            Ok(vec![Some(if orig.is_empty() {
                c.grad().sum()?
            } else {
                c.grad().sum_to_size(&orig)?
            })])
        })
    }
    pub fn expand_as(&self, other: &Tensor) -> Result<Tensor> {
        self.expand(&to_i64(other.shape()))
    }
    pub fn broadcast_to(&self, shape: &[i64]) -> Result<Tensor> {
        self.expand(shape)
    }
    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let d = wrap_dim(dim, self.ndim() + 1)?;
        let rec = record("UnsqueezeBackward0", &[self]).attr("dim", dim);
        let out = self.alias_with_layout(self.layout().unsqueeze(d));
        let orig = to_i64(self.shape());
        rec.finish(out, move |c| Ok(vec![Some(c.grad().reshape(&orig)?)]))
    }
    /// Removes dim `dim` if its size is 1 (torch's `squeeze(int)`,
    /// SqueezeBackward1).
    pub fn squeeze_dim(&self, dim: i64) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        self.squeeze_named(Some(&[dim]), "SqueezeBackward1")
    }
    /// Removes the given size-1 dims (all size-1 dims when `dims` is None):
    /// torch's `squeeze()` (SqueezeBackward0) and `squeeze(tuple)`
    /// (SqueezeBackward2).
    pub fn squeeze(&self, dims: Option<&[i64]>) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let name = match dims {
            None => "SqueezeBackward0",
            Some(_) => "SqueezeBackward2",
        };
        self.squeeze_named(dims, name)
    }
    /// `squeeze` recorded as node `name` (torch names each overload).
    pub(crate) fn squeeze_named(&self, dims: Option<&[i64]>, name: &'static str) -> Result<Tensor> {
        let mut drop: Vec<usize> = match dims {
            None => (0..self.ndim()).filter(|&i| self.shape()[i] == 1).collect(),
            Some(ds) => ds
                .iter()
                .map(|&d| wrap_dim(d, self.ndim()))
                .collect::<Result<_>>()?,
        };
        drop.sort_unstable();
        drop.dedup();
        let mut l = self.layout().clone();
        for &d in drop.iter().rev() {
            l = l.squeeze_dim(d);
        }
        let rec = record(name, &[self]);
        let out = self.alias_with_layout(l);
        let orig = to_i64(self.shape());
        let nothing_dropped = drop.is_empty();
        rec.finish(out, move |c| {
            if nothing_dropped {
                // torch's unsqueeze_to: the gradient itself, not a view of it
                return Ok(vec![Some(c.grad().clone())]);
            }
            Ok(vec![Some(c.grad().reshape(&orig)?)])
        })
    }

    /// A view made by a geometric function of the layout, with a generic
    /// scatter-into-zeros backward.
    pub fn strided_view(&self, name: &'static str, f: ViewFn) -> Result<Tensor> {
        self.strided_view_with(name, Vec::new(), f)
    }
    /// [`Tensor::strided_view`] whose node keeps the call's non-tensor
    /// arguments `attrs` (torch's `_saved_dim`, `_saved_start`, ...).
    fn strided_view_with(
        &self,
        name: &'static str,
        attrs: Vec<(&'static str, SavedAttr)>,
        f: ViewFn,
    ) -> Result<Tensor> {
        let mut rec = record(name, &[self]);
        for (n, v) in attrs {
            rec = rec.attr(n, v);
        }
        let out = self.alias_with_layout(f(self.layout()));
        let orig = self.dims();
        rec.finish(out, move |c| {
            Ok(vec![Some(c.grad().strided_scatter(&orig, f.clone())?)])
        })
    }
    /// Zeros of `shape` with `self` written into the view `f` of it. The
    /// backward of `strided_view`, and differentiable itself.
    pub fn strided_scatter(&self, shape: &[usize], f: ViewFn) -> Result<Tensor> {
        let rec = record("AsStridedScatterBackward0", &[self]);
        let out = Tensor::zeros(shape, self.dtype());
        let region = out.alias_with_layout(f(out.layout()));
        if crate::kernels::overlap::has_internal_overlap(region.layout())
            && self.dtype().is_floating()
        {
            // several elements of the view are one of `out`: their values add up
            let src = self.alias_with_layout(self.layout().expand(region.shape())?);
            crate::kernels::copy::accumulate_into(&region, &src)?;
        } else {
            crate::kernels::copy::copy_into(&region, self)?;
        }
        rec.finish(out, move |c| {
            Ok(vec![Some(
                c.grad().strided_view("AsStridedBackward0", f.clone())?,
            )])
        })
    }
    pub fn narrow(&self, dim: i64, start: i64, length: usize) -> Result<Tensor> {
        if self.ndim() == 0 {
            bail!(runtime, "narrow() cannot be applied to a 0-dim tensor.");
        }
        let d = wrap_dim(dim, self.ndim())?;
        let size = self.shape()[d] as i64;
        let start = if start < 0 { start + size } else { start };
        if start < 0 || start > size {
            bail!(
                index,
                "start out of range (expected to be in range of [{}, {}], but got {})",
                -size,
                size,
                start
            );
        }
        self.layout().narrow(d, start as usize, length)?;
        let s = start as usize;
        // torch's narrow is a slice (SliceBackward0)
        let attrs = self.slice_attrs(dim, Some(start), Some(start + length as i64), 1);
        self.strided_view_with(
            "SliceBackward0",
            attrs,
            Arc::new(move |l: &Layout| l.narrow(d, s, length).expect("checked")),
        )
    }
    /// SliceBackward0's saved arguments, as the call gave them (torch keeps
    /// a missing start as 0 and a missing end as i64::MAX).
    fn slice_attrs(
        &self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Vec<(&'static str, SavedAttr)> {
        vec![
            ("dim", dim.into()),
            ("end", end.unwrap_or(i64::MAX).into()),
            ("self_sym_sizes", self.shape().into()),
            ("start", start.unwrap_or(0).into()),
            ("step", step.into()),
        ]
    }
    /// `self[..., start:stop:step, ...]` along `dim` with Python slice rules.
    pub fn slice(
        &self,
        dim: i64,
        start: Option<i64>,
        stop: Option<i64>,
        step: i64,
    ) -> Result<Tensor> {
        if self.ndim() == 0 {
            bail!(runtime, "slice() cannot be applied to a 0-dim tensor.");
        }
        let d = wrap_dim(dim, self.ndim())?;
        if step <= 0 {
            bail!(value, "step must be greater than zero");
        }
        let size = self.shape()[d] as i64;
        let clamp = |v: i64| {
            if v < 0 {
                (v + size).max(0)
            } else {
                v.min(size)
            }
        };
        let s = clamp(start.unwrap_or(0)) as usize;
        let e = clamp(stop.unwrap_or(size)).max(s as i64) as usize;
        let attrs = self.slice_attrs(dim, start, stop, step);
        let step = step as usize;
        self.strided_view_with(
            "SliceBackward0",
            attrs,
            Arc::new(move |l: &Layout| l.slice(d, s, e, step)),
        )
    }
    /// `self[..., index, ...]`: removes `dim`.
    pub fn select(&self, dim: i64, index: i64) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        if self.ndim() == 0 {
            bail!(index, "select() cannot be applied to a 0-dim tensor.");
        }
        let d = wrap_dim(dim, self.ndim())?;
        let size = self.shape()[d] as i64;
        if index < -size || index >= size {
            bail!(
                index,
                "select(): index {} out of range for tensor of size {:?} at dimension {}",
                index,
                self.shape(),
                d
            );
        }
        let i = if index < 0 { index + size } else { index } as usize;
        let attrs = vec![
            ("dim", dim.into()),
            ("index", index.into()),
            ("self_sym_sizes", self.shape().into()),
        ];
        self.strided_view_with(
            "SelectBackward0",
            attrs,
            Arc::new(move |l: &Layout| l.select(d, i)),
        )
    }
    /// `self[..., index]` from indexing syntax: `select` with the error
    /// message torch gives for `x[i]`.
    pub(crate) fn select_for_index(&self, dim: i64, index: i64) -> Result<Tensor> {
        if self.ndim() > 0 {
            let d = wrap_dim(dim, self.ndim())?;
            let size = self.shape()[d] as i64;
            if index < -size || index >= size {
                bail!(
                    index,
                    "index {} is out of bounds for dimension {} with size {}",
                    index,
                    d,
                    size
                );
            }
        }
        self.select(dim, index)
    }
}
