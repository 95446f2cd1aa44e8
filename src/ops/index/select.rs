//! index_select, take, masked_select, nonzero, gather, scatter and masked_fill.

use super::*;

impl Tensor {
    // ----- index_select / take / masked_select -----

    pub fn index_select(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let index = &index.long_index();
        if index.dtype() != DType::I64 {
            bail!(
                runtime,
                "index_select(): Expected dtype int32 or int64 for index"
            );
        }
        if index.ndim() > 1 {
            bail!(index, "index_select(): Index is supposed to be a vector");
        }
        if self.ndim() == 0 {
            wrap_dim(dim, 0)?;
            let r = self
                .reshape(&[1])?
                .index_select(0, &index.reshape(&[-1])?)?;
            return r.reshape(&[]);
        }
        let d = wrap_dim(dim, self.ndim())?;
        let size = self.shape()[d] as i64;
        let iv = index.try_to_vec::<i64>()?;
        if iv.iter().any(|&i| i < 0 || i >= size) {
            bail!(index, "index out of range in self");
        }
        let plan = Arc::new(AdvPlan::along(self.ndim(), d, iv));
        let rec = record("IndexSelectBackward0", &[self])
            .attr("dim", dim)
            .attr("self_sym_sizes", self.shape());
        let out = Tensor::from(k::index_gather(self, &plan)?);
        let shape = self.dims();
        rec.save("index", index).finish(out, move |c| {
            let g = c.grad();
            if !crate::autograd::is_grad_enabled() {
                // No graph of the backward: one kernel.
                let index_values = &plan.idx[0];
                let add = k::index_add_new(&shape, d, index_values, g)?;
                return Ok(vec![Some(Tensor::from(add))]);
            }
            let z = Tensor::zeros(&shape, g.dtype());
            Ok(vec![Some(z.index_put_plan(plan.clone(), g, true)?)])
        })
    }

    /// `self.flatten()[index]`, shaped like `index`.
    pub fn take(&self, index: &Tensor) -> Result<Tensor> {
        if index.dtype() != DType::I64 {
            bail!(
                runtime,
                "take(): Expected a long tensor for index, but got {}",
                index.dtype().scalar_type_name()
            );
        }
        let n = self.numel() as i64;
        for &i in index.try_to_vec::<i64>()?.iter() {
            if i < -n || i >= n {
                bail!(
                    index,
                    "out of range: tried to access index {} on a tensor of {} elements.",
                    i,
                    n
                );
            }
        }
        let flat_shape = [self.numel()];
        let plan = Arc::new(plan_indices(&flat_shape, &[Some(index.clone())])?);
        let flat = self.detach().reshape(&[-1])?;
        let rec = record("TakeBackward0", &[self]);
        let out = Tensor::from(k::index_gather(&flat, &plan)?);
        let shape = to_i64(self.shape());
        rec.save("index", index).finish(out, move |c| {
            let g = c.grad();
            let z = Tensor::zeros(&flat_shape, g.dtype());
            Ok(vec![Some(
                z.index_put_plan(plan.clone(), g, true)?.reshape(&shape)?,
            )])
        })
    }

    /// The elements of `self` (broadcast with `mask`) where `mask` is true, as
    /// a 1-D tensor.
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        if mask.dtype() != DType::Bool {
            bail!(runtime, "masked_select: expected BoolTensor for mask");
        }
        let shape = broadcast_shapes(self.shape(), mask.shape())?;
        let m = mask.broadcast_to_raw(&shape)?;
        let plan = Arc::new(plan_indices(&shape, &[Some(m)])?);
        let rec = record("MaskedSelectBackward0", &[self]);
        let out = Tensor::from(k::index_gather(&*self.broadcast_to_raw(&shape)?, &plan)?);
        rec.save("mask", mask).finish(out, move |c| {
            let g = c.grad();
            let z = Tensor::zeros(&shape, g.dtype());
            Ok(vec![Some(z.index_put_plan(plan.clone(), g, true)?)])
        })
    }

    /// Coordinates of the nonzero elements, `[n, ndim]` int64.
    pub fn nonzero(&self) -> Result<Tensor> {
        let mask = self.cast_raw(DType::Bool);
        let (n, rows) = k::nonzero_rows(&mask);
        Tensor::from_vec(rows, &[n, self.ndim()])
    }

    // ----- gather / scatter -----

    /// `out[p] = self[p with p[dim] = index[p]]`.
    pub fn gather(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let index = &index.long_index();
        if index.dtype() != DType::I64 {
            bail!(runtime, "gather(): Expected dtype int32/int64 for index");
        }
        let d = wrap_dim(dim, self.ndim())?;
        let rec = record("GatherBackward0", &[self])
            .attr("dim", dim)
            .attr("sparse_grad", false);
        let out = Tensor::from(k::gather(self, d, index)?);
        let shape = self.dims();
        rec.save("index", index).finish(out, move |c| {
            let g = c.grad();
            let index = c.saved(0)?;
            let z = Tensor::zeros(&shape, g.dtype());
            if crate::autograd::would_record(&[g]) {
                return Ok(vec![Some(z.scatter_add(d as i64, &index, g)?)]);
            }
            // No graph to record: add into the fresh zeros in place (the
            // out-of-place op would copy them first).
            k::scatter(&z, d, &index, ScatterSrc::Array(g), true)?;
            Ok(vec![Some(z)])
        })
    }

    fn check_scatter_index(&self, op: &str, dim: i64, index: &Tensor) -> Result<usize> {
        if index.dtype() != DType::I64 {
            bail!(runtime, "{}(): Expected dtype int32/int64 for index", op);
        }
        wrap_dim(dim, self.ndim())
    }

    /// A copy of `self` with `src` added at `index` along `dim`.
    pub fn scatter_add(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        self.scatter_impl("scatter_add", dim, index, Some(src), None, true)
    }
    /// A copy of `self` with `src` written at `index` along `dim`.
    pub fn scatter(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        self.scatter_impl("scatter", dim, index, Some(src), None, false)
    }
    /// A copy of `self` with `value` written at `index` along `dim`.
    pub fn scatter_value(&self, dim: i64, index: &Tensor, value: Scalar) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        self.scatter_impl("scatter", dim, index, None, Some(value), false)
    }
    pub fn scatter_add_(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<()> {
        self.scatter_inplace("scatter_add", dim, index, Some(src), None, true)
    }
    pub fn scatter_(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<()> {
        self.scatter_inplace("scatter", dim, index, Some(src), None, false)
    }
    pub fn scatter_value_(&self, dim: i64, index: &Tensor, value: Scalar) -> Result<()> {
        self.scatter_inplace("scatter", dim, index, None, Some(value), false)
    }

    fn scatter_impl(
        &self,
        op: &str,
        dim: i64,
        index: &Tensor,
        src: Option<&Tensor>,
        value: Option<Scalar>,
        accumulate: bool,
    ) -> Result<Tensor> {
        let index = &index.long_index();
        let d = self.check_scatter_index(op, dim, index)?;
        let rec = match src {
            None => record("ScatterBackward1", &[self]),
            Some(src) if accumulate => record("ScatterAddBackward0", &[self, src]),
            Some(src) => record("ScatterBackward0", &[self, src]),
        };
        let out = crate::dispatch_all!(self.dtype(), T => Tensor::from(crate::kernels::copy::contiguous_as::<T>(self)?));
        let ks = match (src, value) {
            (Some(s), _) => ScatterSrc::Array(s),
            (None, Some(v)) => ScatterSrc::Value(v),
            _ => unreachable!("scatter needs src or value"),
        };
        k::scatter(&out, d, index, ks, accumulate)?;
        let di = d as i64;
        let Some(src) = src else {
            return rec.save("index", index).finish(out, move |c| {
                let index = c.saved(0)?;
                Ok(vec![Some(c.grad().scatter_value(
                    di,
                    &index,
                    Scalar::Int(0),
                )?)])
            });
        };
        let src_shape = src.dims();
        // d/dsrc: gather of the grad, placed into src's shape when src is
        // larger than index
        let grad_src = move |g: &Tensor, index: &Tensor| -> Result<Tensor> {
            let r = g.gather(di, index)?;
            if r.shape() == src_shape.as_slice() {
                return Ok(r);
            }
            let ishape = if index.ndim() == 0 {
                smallvec::smallvec![1]
            } else {
                index.dims()
            };
            let r = r.reshape(&to_i64(&ishape))?;
            let src_shape2 = src_shape.clone();
            let f: crate::ops::view::ViewFn = Arc::new(move |l: &Layout| {
                let mut l = l.clone();
                for (dd, &n) in ishape.iter().enumerate() {
                    l = l.narrow(dd, 0, n).expect("index fits in src");
                }
                l
            });
            let padded = if src_shape2.is_empty() {
                smallvec::smallvec![1usize]
            } else {
                src_shape2.clone()
            };
            r.strided_scatter(&padded, f)?.reshape(&to_i64(&src_shape2))
        };
        if accumulate {
            rec.save("index", index).finish(out, move |c| {
                let g = c.grad();
                let dsrc = c.grad_for(1, || grad_src(g, &c.saved(0)?))?;
                Ok(vec![Some(g.clone()), dsrc])
            })
        } else {
            rec.save("index", index).finish(out, move |c| {
                let g = c.grad();
                let index = c.saved(0)?;
                let dself = c.grad_for(0, || g.scatter_value(di, &index, Scalar::Int(0)))?;
                let dsrc = c.grad_for(1, || grad_src(g, &index))?;
                Ok(vec![dself, dsrc])
            })
        }
    }

    fn scatter_inplace(
        &self,
        op: &'static str,
        dim: i64,
        index: &Tensor,
        src: Option<&Tensor>,
        value: Option<Scalar>,
        accumulate: bool,
    ) -> Result<()> {
        let index = &index.long_index();
        let d = self.check_scatter_index(op, dim, index)?;
        assert_no_internal_overlap(self.layout())?;
        no_overlap(self, index)?;
        if let Some(s) = src {
            no_overlap(self, s)?;
        }
        let others: Vec<&Tensor> = src.into_iter().collect();
        let direct = || {
            let ks = match (src, value) {
                (Some(s), _) => ScatterSrc::Array(s),
                (None, Some(v)) => ScatterSrc::Value(v),
                _ => unreachable!("scatter needs src or value"),
            };
            k::scatter(self, d, index, ks, accumulate)
        };
        let name = if accumulate {
            "scatter_add_"
        } else {
            "scatter_"
        };
        inplace(name, self, &others, direct, |s| {
            s.scatter_impl(op, dim, index, src, value, accumulate)
        })
    }

    // ----- masked_fill -----

    fn check_mask(&self, mask: &Tensor) -> Result<Dims> {
        if mask.dtype() != DType::Bool {
            bail!(
                runtime,
                "masked_fill_ only supports boolean masks, but got mask with dtype {}",
                mask.dtype().cpp_type_name()
            );
        }
        broadcast_shapes(self.shape(), mask.shape())
    }

    /// A copy of `self` (broadcast with `mask`) with `value` where `mask`.
    pub fn masked_fill_scalar(&self, mask: &Tensor, value: Scalar) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let shape = self.check_mask(mask)?;
        let value = value.checked_to(self.dtype())?;
        let rec = record("MaskedFillBackward0", &[self]);
        let out = crate::dispatch_all!(self.dtype(), T =>
            Tensor::from(crate::kernels::copy::contiguous_as::<T>(&*self.broadcast_to_raw(&shape)?)?));
        k::masked_fill(&out, mask, value)?;
        rec.save("mask", mask).finish(out, move |c| {
            let m = c.saved(0)?;
            Ok(vec![Some(c.grad().masked_fill_scalar(&m, Scalar::Int(0))?)])
        })
    }

    /// `masked_fill` with a 0-dim tensor value (differentiable in it).
    pub fn masked_fill(&self, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self, value])?;
        if value.ndim() != 0 {
            bail!(
                runtime,
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                value.ndim()
            );
        }
        let shape = self.check_mask(mask)?;
        let rec = record("MaskedFillBackward1", &[self, value]);
        let out = crate::dispatch_all!(self.dtype(), T =>
            Tensor::from(crate::kernels::copy::contiguous_as::<T>(&*self.broadcast_to_raw(&shape)?)?));
        k::masked_fill(&out, mask, value.item()?)?;
        rec.save("mask", mask).finish(out, move |c| {
            let (g, m) = (c.grad(), c.saved(0)?);
            let ds = c.grad_for(0, || g.masked_fill_scalar(&m, Scalar::Int(0)))?;
            let dv = if c.needs(1) {
                let not_m = Tensor::from(k::logical_not(&m));
                Some(g.masked_fill_scalar(&not_m, Scalar::Int(0))?.sum()?)
            } else {
                None
            };
            Ok(vec![ds, dv])
        })
    }

    fn check_masked_fill_inplace(&self, mask: &Tensor) -> Result<()> {
        let shape = self.check_mask(mask)?;
        assert_no_partial_overlap(self, mask)?;
        if shape.as_slice() != self.shape() {
            bail!(
                runtime,
                "output with shape {} doesn't match the broadcast shape {}",
                shape_str(self.shape()),
                shape_str(&shape)
            );
        }
        Ok(())
    }

    pub fn masked_fill_scalar_(&self, mask: &Tensor, value: Scalar) -> Result<()> {
        self.check_masked_fill_inplace(mask)?;
        let value = value.checked_to(self.dtype())?;
        inplace(
            "masked_fill_",
            self,
            &[],
            || k::masked_fill(self, mask, value),
            |s| s.masked_fill_scalar(mask, value),
        )
    }

    pub fn masked_fill_(&self, mask: &Tensor, value: &Tensor) -> Result<()> {
        if value.ndim() != 0 {
            bail!(
                runtime,
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                value.ndim()
            );
        }
        self.check_masked_fill_inplace(mask)?;
        let v = value.item()?;
        inplace(
            "masked_fill_",
            self,
            &[value],
            || k::masked_fill(self, mask, v),
            |s| s.masked_fill(mask, value),
        )
    }
}
