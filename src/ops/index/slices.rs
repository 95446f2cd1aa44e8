//! index_add / index_copy / index_fill: whole slices along one dim.

use super::*;

/// torch's `self.size(dim)` in a message: an IndexError for a 0-dim tensor
/// (or a dim past its end) instead of a number.
fn size_at(t: &Tensor, dim: usize) -> Result<usize> {
    if t.ndim() == 0 {
        bail!(
            index,
            "Dimension specified as {} but tensor has no dimensions",
            dim
        );
    }
    Ok(t.shape()[wrap_dim(dim as i64, t.ndim())?])
}

/// `shape` without dim `dim` (unchanged when it has no dims), as torch's
/// index_* checks compare slices.
fn without_dim(shape: &[usize], dim: usize) -> Vec<usize> {
    let mut s = shape.to_vec();
    if !s.is_empty() {
        s.remove(dim);
    }
    s
}

/// `t`'s memory as a 1-element vector when `t` is 0-dim (the index_* ops
/// treat a scalar as one slice along dim 0), else `t` itself.
fn at_least_1d(t: &Tensor) -> crate::buffer::Strided {
    match t.ndim() {
        0 => (**t).with_layout(Layout {
            shape: smallvec::smallvec![1],
            strides: smallvec::smallvec![1],
            offset: t.storage_offset(),
        }),
        _ => (**t).clone(),
    }
}

/// The plan that writes slice `j` of a source into slice `index[j]` of a
/// tensor of `shape` along `dim` (`index` valid and non-negative).
fn slice_plan(shape: &[usize], dim: usize, index: &[i64]) -> Result<Arc<AdvPlan>> {
    let shape = if shape.is_empty() { &[1][..] } else { shape };
    let mut idx: Vec<Option<Tensor>> = vec![None; dim];
    idx.push(Some(Tensor::from_vec(index.to_vec(), &[index.len()])?));
    Ok(Arc::new(plan_indices(shape, &idx)?))
}

/// A contiguous copy of `t`, without history (the caller records).
fn contiguous_copy(t: &Tensor) -> Result<Tensor> {
    Ok(
        crate::dispatch_all!(t.dtype(), T => Tensor::from(crate::kernels::copy::contiguous_as::<T>(t)?)),
    )
}

/// `grad.index_select(dim, index)` shaped as `source` (torch: expanded as
/// the source, or a 0-dim source's one element).
fn select_as_source(g: &Tensor, dim: usize, index: &Tensor, source: &[usize]) -> Result<Tensor> {
    let r = g.index_select(dim as i64, index)?;
    if r.shape() == source {
        return Ok(r);
    }
    r.reshape(&to_i64(source))
}

/// index_add's checked arguments: the wrapped dim, the index values (empty
/// when there is nothing to write) and alpha in self's dtype.
struct IndexAddArgs {
    dim: usize,
    index: Vec<i64>,
    alpha: Scalar,
}

/// index_copy's checked arguments: the wrapped dim and the index values
/// (empty when there is nothing to write).
struct IndexCopyArgs {
    dim: usize,
    index: Vec<i64>,
}

impl Tensor {
    /// torch's index_add checks (`index_func_meta_impl`, then the kernel's
    /// index checks), in torch's order.
    fn check_index_add(
        &self,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        alpha: Scalar,
    ) -> Result<IndexAddArgs> {
        let d = wrap_dim(dim, self.ndim())?;
        if index.ndim() > 1 {
            bail!(
                index,
                "index_add_(): Index is supposed to be a vector, but got dim: {} with type: {} and size: {:?}",
                index.ndim(),
                index.dtype().scalar_type_name(),
                index.shape()
            );
        }
        if index.dtype() != DType::I64 {
            bail!(
                runtime,
                "index_add_(): Expected dtype int32/int64 for index but got: {}",
                index.dtype().scalar_type_name()
            );
        }
        if self.dtype() != source.dtype() {
            bail!(
                runtime,
                "index_add_(): self ({}) and source ({}) must have the same scalar type",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            );
        }
        if d != 0 && d >= source.ndim() {
            bail!(
                runtime,
                "index_add_(): Indexing dim {} is out of bounds of the source tensor with dim {}",
                d,
                source.ndim()
            );
        }
        let n = index.numel();
        let expected = match source.ndim() {
            0 => 1,
            _ => source.shape()[d],
        };
        if n != expected {
            bail!(
                runtime,
                "index_add_(): Number of indices ({}) should be equal to source.size(dim): ({}), for dim: {}",
                n,
                size_at(source, d)?,
                d
            );
        }
        let sliced = |t: &Tensor| match (self.ndim(), source.ndim()) {
            (0, _) | (_, 0) => t.shape().to_vec(),
            _ => without_dim(t.shape(), d),
        };
        if sliced(self) != sliced(source) {
            bail!(
                runtime,
                "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = {:?} source.shape = {:?}",
                self.shape(),
                source.shape()
            );
        }
        let given = alpha;
        let alpha = alpha.checked_to(self.dtype())?;
        let iv = index.try_to_vec::<i64>()?;
        let size = self.shape().get(d).copied().unwrap_or(1) as i64;
        if self.ndim() > 1 {
            if n == 0 || self.numel() == 0 {
                return Ok(IndexAddArgs {
                    dim: d,
                    index: Vec::new(),
                    alpha,
                });
            }
            // torch adds through scatter_add (its index message) along the
            // first or last dim with alpha 1, else slice by slice
            if (d == 0 || d == self.ndim() - 1) && given.to_f64() == 1.0 {
                if let Some(&i) = iv.iter().find(|&&i| i < 0 || i >= size) {
                    bail!(
                        runtime,
                        "index {} is out of bounds for dimension {} with size {}",
                        i,
                        d,
                        size
                    );
                }
            }
        }
        if iv.iter().any(|&i| i < 0 || i >= size) {
            bail!(index, "index out of range in self");
        }
        Ok(IndexAddArgs {
            dim: d,
            index: iv,
            alpha,
        })
    }

    /// `source * alpha` as index_add adds it (alpha in self's dtype), with
    /// no history.
    fn index_add_values(source: &Tensor, alpha: Scalar) -> Result<Tensor> {
        if alpha.to_f64() == 1.0 {
            return Ok(source.detach());
        }
        let _g = crate::autograd::no_grad();
        source.detach().mul(&Tensor::scalar(alpha, source.dtype()))
    }

    /// A copy of `self` with `alpha * source`'s slices along `dim` added at
    /// positions `index` (repeated positions accumulate).
    pub fn index_add(
        &self,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        alpha: Scalar,
    ) -> Result<Tensor> {
        let index = &index.long_index();
        let a = self.check_index_add(dim, index, source, alpha)?;
        self.index_add_checked(a, index, source)
    }

    fn index_add_checked(
        &self,
        a: IndexAddArgs,
        index: &Tensor,
        source: &Tensor,
    ) -> Result<Tensor> {
        let rec = record("IndexAddBackward0", &[self, source]);
        let out = contiguous_copy(self)?;
        if !a.index.is_empty() {
            let plan = slice_plan(self.shape(), a.dim, &a.index)?;
            let v = Self::index_add_values(source, a.alpha)?;
            k::index_scatter(&at_least_1d(&out), &plan, &at_least_1d(&v), true)?;
        }
        let (d, alpha, src_shape) = (a.dim, a.alpha, source.dims());
        rec.save("index", index).finish(out, move |c| {
            let g = c.grad();
            let ds = c.grad_for(1, || {
                let r = select_as_source(g, d, &c.saved(0)?, &src_shape)?;
                match alpha.to_f64() == 1.0 {
                    true => Ok(r),
                    false => r.mul(&Tensor::scalar(alpha, r.dtype())),
                }
            })?;
            Ok(vec![Some(g.clone()), ds])
        })
    }

    /// In-place `index_add_`.
    pub fn index_add_(
        &self,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        alpha: Scalar,
    ) -> Result<()> {
        let index = &index.long_index();
        let a = self.check_index_add(dim, index, source, alpha)?;
        assert_no_internal_overlap(self.layout())?;
        no_overlap(self, index)?;
        no_overlap(self, source)?;
        let (d, iv, alpha) = (a.dim, a.index.clone(), a.alpha);
        inplace(
            "index_add_",
            self,
            &[source],
            || {
                if iv.is_empty() {
                    return Ok(());
                }
                let plan = slice_plan(self.shape(), d, &iv)?;
                let v = Self::index_add_values(source, alpha)?;
                k::index_scatter(&at_least_1d(self), &plan, &at_least_1d(&v), true)
            },
            |s| s.index_add_checked(a, index, source),
        )
    }

    /// torch's index_copy checks, in its order.
    fn check_index_copy(&self, dim: i64, index: &Tensor, source: &Tensor) -> Result<IndexCopyArgs> {
        let d = wrap_dim(dim, self.ndim())?;
        if index.ndim() >= 2 {
            bail!(
                index,
                "index_copy_(): Index should have dimension 1 or 0 (got {})",
                index.ndim()
            );
        }
        let n = index.numel();
        if source.ndim() == 0 && n != 1 {
            bail!(
                index,
                "index_copy_(): When source is scalar, index should have one element (got {})",
                n
            );
        }
        if source.ndim() != self.ndim() && source.ndim() != 0 && self.ndim() != 0 {
            bail!(
                index,
                "index_copy_(): When source and destination are not scalars, their dimensionality must match. Source dimensionality ({}), destination dimensionality ({})",
                source.ndim(),
                self.ndim()
            );
        }
        if index.dtype() != DType::I64 {
            bail!(
                runtime,
                "index_copy_(): Expected a long tensor for index, but got {}",
                index.dtype().scalar_type_name()
            );
        }
        if self.dtype() != source.dtype() {
            bail!(
                runtime,
                "index_copy_(): self and source expected to have the same dtype, but got (self) {} and (source) {}",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            );
        }
        let (ds, ss) = (without_dim(self.shape(), d), without_dim(source.shape(), d));
        if ds != ss {
            let words = |s: &[usize]| {
                s.iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            bail!(
                runtime,
                "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: {} at dimension {} and source slice shape: {} at dimension 0.",
                words(&ds),
                d,
                words(&ss)
            );
        }
        if source.ndim() != 0 && n != source.shape()[d] {
            bail!(
                index,
                "index_copy_(): Number of indices ({}) should be equal to source.size(dim) ({})",
                n,
                source.shape()[d]
            );
        }
        let iv = index.try_to_vec::<i64>()?;
        let size = self.shape().get(d).copied().unwrap_or(1);
        // torch checks the indices as it copies: not at all when the
        // slices are empty
        let slice_numel: usize = without_dim(self.shape(), d).iter().product();
        if slice_numel == 0 && self.ndim() > 1 {
            return Ok(IndexCopyArgs {
                dim: d,
                index: Vec::new(),
            });
        }
        if let Some(&i) = iv.iter().find(|&&i| i < 0 || i >= size as i64) {
            bail!(
                index,
                "index_copy_(): index {} is out of bounds for dimension {} with size {}",
                i,
                d,
                size
            );
        }
        Ok(IndexCopyArgs { dim: d, index: iv })
    }

    /// A copy of `self` with `source`'s slices along `dim` written at
    /// positions `index` (the last write wins for a repeated position).
    pub fn index_copy(&self, dim: i64, index: &Tensor, source: &Tensor) -> Result<Tensor> {
        let a = self.check_index_copy(dim, index, source)?;
        self.index_copy_checked(a, index, source)
    }

    fn index_copy_checked(
        &self,
        a: IndexCopyArgs,
        index: &Tensor,
        source: &Tensor,
    ) -> Result<Tensor> {
        let rec = record("IndexCopyBackward0", &[self, source]);
        let out = contiguous_copy(self)?;
        if !a.index.is_empty() {
            let plan = slice_plan(self.shape(), a.dim, &a.index)?;
            k::index_scatter(&at_least_1d(&out), &plan, &at_least_1d(source), false)?;
        }
        let (d, src_shape) = (a.dim, source.dims());
        rec.save("index", index).finish(out, move |c| {
            let (g, index) = (c.grad(), c.saved(0)?);
            let ds = c.grad_for(0, || g.index_fill_scalar(d as i64, &index, Scalar::Int(0)))?;
            let dsrc = c.grad_for(1, || select_as_source(g, d, &index, &src_shape))?;
            Ok(vec![ds, dsrc])
        })
    }

    /// In-place `index_copy_`.
    pub fn index_copy_(&self, dim: i64, index: &Tensor, source: &Tensor) -> Result<()> {
        let a = self.check_index_copy(dim, index, source)?;
        assert_no_internal_overlap(self.layout())?;
        no_overlap(self, index)?;
        no_overlap(self, source)?;
        let (d, iv) = (a.dim, a.index.clone());
        inplace(
            "index_copy_",
            self,
            &[source],
            || {
                if iv.is_empty() {
                    return Ok(());
                }
                let plan = slice_plan(self.shape(), d, &iv)?;
                k::index_scatter(&at_least_1d(self), &plan, &at_least_1d(source), false)
            },
            |s| s.index_copy_checked(a, index, source),
        )
    }

    /// torch's index_fill checks, in its order (`inplace`: the index may
    /// not share memory with `self`); the wrapped dim and the wrapped index
    /// values.
    fn check_index_fill(
        &self,
        dim: i64,
        index: &Tensor,
        inplace: bool,
    ) -> Result<(usize, Vec<i64>)> {
        if index.dtype() != DType::I64 {
            bail!(index, "index_fill_(): Expected dtype int64 for index.");
        }
        if inplace {
            no_overlap(self, index)?;
        }
        let d = wrap_dim(dim, self.ndim())?;
        if index.ndim() > 1 {
            bail!(runtime, "Index has to be a vector/scalar");
        }
        let size = self.shape().get(d).copied().unwrap_or(1);
        // torch checks the indices as it fills: not at all when the slices
        // are empty
        let slice_numel: usize = without_dim(self.shape(), d).iter().product();
        if slice_numel == 0 && self.ndim() > 1 {
            return Ok((d, Vec::new()));
        }
        let iv = index
            .to_vec::<i64>()
            .into_iter()
            .map(|i| Ok(k::wrap_index(i, size, d)? as i64))
            .collect::<Result<Vec<i64>>>()?;
        Ok((d, iv))
    }

    /// Writes `value` into `self`'s slices `index` along `dim`, in place.
    fn fill_slices(t: &crate::buffer::Strided, d: usize, iv: &[i64], value: Scalar) -> Result<()> {
        if iv.is_empty() {
            return Ok(());
        }
        let plan = slice_plan(t.shape(), d, iv)?;
        let v = Tensor::scalar(value, t.dtype());
        k::index_scatter(t, &plan, &v, false)
    }

    /// A copy of `self` (laid out as torch's clone) with `value` in the
    /// slices `index` along `dim`.
    pub fn index_fill_scalar(&self, dim: i64, index: &Tensor, value: Scalar) -> Result<Tensor> {
        let (d, iv) = self.check_index_fill(dim, index, false)?;
        let value = value.checked_to(self.dtype())?;
        let rec = record("IndexFillBackward0", &[self]);
        let out = crate::dispatch_all!(self.dtype(), T => Tensor::from(crate::kernels::copy::copy_as::<T>(self)?));
        Self::fill_slices(&at_least_1d(&out), d, &iv, value)?;
        rec.save("index", index).finish(out, move |c| {
            let index = c.saved(0)?;
            Ok(vec![Some(c.grad().index_fill_scalar(
                d as i64,
                &index,
                Scalar::Int(0),
            )?)])
        })
    }

    /// `index_fill` with a 0-dim tensor value (differentiable in it: the
    /// sum of the gradient over the distinct indices, as torch).
    pub fn index_fill(&self, dim: i64, index: &Tensor, value: &Tensor) -> Result<Tensor> {
        check_fill_value(value)?;
        let (d, iv) = self.check_index_fill(dim, index, false)?;
        let v = value.item()?.checked_to(self.dtype())?;
        let rec = record("IndexFillBackward1", &[self, value]);
        let out = crate::dispatch_all!(self.dtype(), T => Tensor::from(crate::kernels::copy::copy_as::<T>(self)?));
        Self::fill_slices(&at_least_1d(&out), d, &iv, v)?;
        rec.save("index", index).finish(out, move |c| {
            let (g, index) = (c.grad(), c.saved(0)?);
            let ds = c.grad_for(0, || g.index_fill_scalar(d as i64, &index, Scalar::Int(0)))?;
            let dv = c.grad_for(1, || {
                // torch: grad.index_select(dim, unique(index)).sum()
                let mut u = index.try_to_vec::<i64>()?;
                u.sort_unstable();
                u.dedup();
                let n = u.len();
                g.index_select(d as i64, &Tensor::from_vec(u, &[n])?)?.sum()
            })?;
            Ok(vec![ds, dv])
        })
    }

    pub fn index_fill_scalar_(&self, dim: i64, index: &Tensor, value: Scalar) -> Result<()> {
        let (d, iv) = self.check_index_fill(dim, index, true)?;
        let v = value.checked_to(self.dtype())?;
        inplace(
            "index_fill_",
            self,
            &[],
            || Self::fill_slices(&at_least_1d(self), d, &iv, v),
            |s| s.index_fill_scalar(dim, index, value),
        )
    }

    pub fn index_fill_(&self, dim: i64, index: &Tensor, value: &Tensor) -> Result<()> {
        check_fill_value(value)?;
        let (d, iv) = self.check_index_fill(dim, index, true)?;
        let v = value.item()?.checked_to(self.dtype())?;
        inplace(
            "index_fill_",
            self,
            &[value],
            || Self::fill_slices(&at_least_1d(self), d, &iv, v),
            |s| s.index_fill(dim, index, value),
        )
    }
}

/// index_fill's value tensor must be 0-dim.
fn check_fill_value(value: &Tensor) -> Result<()> {
    if value.ndim() != 0 {
        bail!(
            runtime,
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
            value.ndim()
        );
    }
    Ok(())
}
