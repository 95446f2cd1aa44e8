//! var/std, norm, logsumexp and cumsum: the reductions that are not one
//! fold of the elements.

use super::*;

impl Tensor {
    // ----- var / std -----

    /// Variance over `dims` (all when empty), dividing by N - correction.
    pub fn var(&self, dims: &[i64], correction: f64, keepdim: bool) -> Result<Tensor> {
        self.var_std(dims, correction, keepdim, false)
    }
    /// Standard deviation over `dims` (all when empty).
    pub fn std(&self, dims: &[i64], correction: f64, keepdim: bool) -> Result<Tensor> {
        self.var_std(dims, correction, keepdim, true)
    }
    fn var_std(&self, dims: &[i64], correction: f64, keepdim: bool, sqrt: bool) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        if !self.dtype().is_floating() {
            bail!(
                runtime,
                "std and var only support floating point and complex dtypes"
            );
        }
        let rd = reduce_dims_in_order(dims, self.ndim())?;
        let n: usize = rd.iter().map(|&d| self.shape()[d]).product();
        let all = dims.is_empty() || self.ndim() == 0;
        let name = if sqrt { "StdBackward0" } else { "VarBackward0" };
        let rec = record(name, &[self]);
        let out = self.in_compute_dtype(|x| {
            Ok(dispatch_float!(x.dtype(), T => Tensor::from(reduce::<T, T>(x, &rd, keepdim, move |v| {
                let var = var_f64(v, correction);
                T::from_f64(if sqrt { var.sqrt() } else { var })
            }))))
        })?;
        rec.save("self", self)
            .save_output("result", 0)
            .finish(out, move |c| {
                let x = c.saved(0)?;
                let g = c.grad().unsqueeze_reduced(&rd, keepdim)?;
                let denom = n as f64 - correction;
                if all && denom <= 0.0 {
                    // torch's var_backward without degrees of freedom:
                    // grad * where(self == mean, NaN, inf), a constant in self
                    let w = {
                        let _g = crate::autograd::no_grad();
                        let mean = x.detach().mean_dims(&[], true, None)?;
                        // 1 where self != mean, times inf: inf there, 0 * inf = NaN elsewhere
                        crate::ops::reduce::mask(&x, &mean, |a, b| a != b)?
                            .mul_scalar(f64::INFINITY)?
                    };
                    let gv = match sqrt {
                        true => {
                            let r = c.saved(1)?.unsqueeze_reduced(&rd, keepdim)?;
                            g.div(&r.mul_scalar(2.0)?)?
                                .masked_fill_scalar(&r.eq_scalar(0)?, Scalar::Int(0))?
                        }
                        false => g,
                    };
                    return Ok(vec![Some(gv.mul(&w)?)]);
                }
                let centered = x.sub(&x.mean_dims(&to_i64(&rd), true, None)?)?;
                let grad = if sqrt {
                    // torch: where the std is 0 its gradient is 0, not NaN.
                    let r = c.saved(1)?.unsqueeze_reduced(&rd, keepdim)?;
                    let g_over_r = g
                        .div(&r)?
                        .masked_fill_scalar(&r.eq_scalar(0)?, Scalar::Int(0))?;
                    g_over_r.div_scalar(denom)?.mul(&centered)?
                } else {
                    g.mul_scalar(2.0 / denom)?.mul(&centered)?
                };
                Ok(vec![Some(grad)])
            })
    }

    // ----- norm -----

    /// Vector `p`-norm over `dims` (all when empty): p = 2, 1, 0, ±inf or any
    /// other real. `dtype` casts the input first (no narrowing).
    pub fn norm(
        &self,
        p: f64,
        dims: &[i64],
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        if !self.dtype().is_floating() {
            bail!(
                runtime,
                "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
                self.dtype().scalar_type_name()
            );
        }
        let x = match dtype {
            None => self.clone(),
            Some(dt) if !dt.is_floating() => bail!(
                runtime,
                "linalg.vector_norm: dtype should be floating point or complex, but got {}",
                dt.scalar_type_name()
            ),
            Some(dt) if dt < self.dtype() => bail!(
                runtime,
                "linalg.vector_norm: the dtype of the input ({}) should be convertible without narrowing to the specified dtype ({})",
                self.dtype().scalar_type_name(),
                dt.scalar_type_name()
            ),
            Some(dt) => self.to_dtype(dt)?,
        };
        let rd = reduce_dims(dims, x.ndim())?;
        if p.is_infinite() {
            for &d in &rd {
                if x.shape()[d] == 0 {
                    bail!(runtime, "linalg.vector_norm cannot compute the {} norm on the dimension {}because this dimension is empty and the operation does not have an identity", if p > 0.0 { "inf" } else { "-inf" }, d);
                }
            }
        }
        let rec = record("LinalgVectorNormBackward0", &[&x]);
        let out = x.in_compute_dtype(|x| {
            Ok(dispatch_float!(x.dtype(), T => Tensor::from(if p == 2.0 {
                reduce_sum_of::<T>(x, &rd, keepdim, |v| v * v, |s| s.sqrt())
            } else if p == 1.0 {
                reduce_sum_of::<T>(x, &rd, keepdim, |v| v.abs(), |s| s)
            } else {
                reduce::<T, T>(x, &rd, keepdim, move |v| T::from_f64(vector_norm_f64(v, p)))
            })))
        })?;
        rec.save("self", &x)
            .save_output("result", 0)
            .finish(out, move |c| {
                if p == 0.0 {
                    // torch gives no gradient at all (None) for the 0-"norm".
                    return Ok(vec![None]);
                }
                let x = c.saved(0)?;
                let g = c.grad().unsqueeze_reduced(&rd, keepdim)?;
                Ok(vec![Some(norm_backward(
                    &g,
                    &x,
                    &c.saved(1)?.unsqueeze_reduced(&rd, keepdim)?,
                    p,
                    &rd,
                )?)])
            })
    }

    // ----- logsumexp -----

    /// `log(sum(exp(self)))` over `dims`, computed stably; integer inputs
    /// give float32.
    pub fn logsumexp(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let x = if self.dtype().is_floating() {
            self.clone()
        } else {
            self.to_dtype(crate::tensor::dtype::default_float())?
        };
        let rd = reduce_dims(dims, x.ndim())?;
        let rec = record("LogsumexpBackward0", &[&x]);
        let out = x.in_compute_dtype(|x| {
            Ok(if rd.len() == 1 {
                let shape = reduced_shape(x.shape(), &rd, keepdim);
                dispatch_float!(x.dtype(), T => Tensor::from(along_dim::<T, T, _>(x, rd[0], &LogSumExp, Some(&shape))?))
            } else {
                dispatch_float!(x.dtype(), T => Tensor::from(reduce::<T, T>(x, &rd, keepdim, logsumexp_slice)))
            })
        })?;
        rec.save("self", &x)
            .save_output("result", 0)
            .finish(out, move |c| {
                let x = c.saved(0)?;
                let r = c.saved(1)?.unsqueeze_reduced(&rd, keepdim)?;
                let g = c.grad().unsqueeze_reduced(&rd, keepdim)?;
                if !crate::autograd::is_grad_enabled()
                    && g.dtype() == x.dtype()
                    && !x.dtype().is_reduced_float()
                {
                    // One pass (no graph to record) instead of three ops;
                    // the operands in the order of torch's formula
                    // `grad * (self - result).exp()`, whose first operand
                    // (the broadcast grad) orders the result's dims.
                    let dx = dispatch_float!(x.dtype(), T => Tensor::from(
                        map3::<T, T, T, T>(&g, &x, &r, |g, x, r| g * (x - r).vexp())?
                    ));
                    return Ok(vec![Some(dx)]);
                }
                Ok(vec![Some(g.mul(&exp_d(&x.sub(&r)?)?)?)])
            })
    }

    // ----- cumsum -----

    /// Inclusive prefix sum along `dim`; integer and bool inputs give int64
    /// unless `dtype` says otherwise.
    pub fn cumsum(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let d = wrap_dim(dim, self.ndim())?;
        let dt = dtype.unwrap_or(if self.dtype().is_floating() {
            self.dtype()
        } else {
            DType::I64
        });
        self.to_dtype(dt)?.cumsum_dir(d, false)
    }
    /// cumsum forwards or backwards (from the end) along `d`; each is the
    /// other's derivative.
    fn cumsum_dir(&self, d: usize, reverse: bool) -> Result<Tensor> {
        let name = if reverse {
            "CumsumReverseBackward0"
        } else {
            "CumsumBackward0"
        };
        let rec = record(name, &[self]).attr("dim", d);
        let f = CumSum { reverse };
        let out = match self.ndim() {
            // torch copies a 0-dim input (a -0.0 stays -0.0; 0 + -0.0 is 0.0)
            0 => dispatch_all!(self.dtype(), T =>
                Tensor::from(crate::kernels::copy::contiguous_as::<T>(self)?)),
            _ => self.in_compute_dtype(|x| {
                Ok(crate::dispatch_computed!(x.dtype(), T =>
                    Tensor::from(along_dim::<T, T, _>(x, d, &f, None)?)))
            })?,
        };
        rec.finish(out, move |c| {
            let g = c.grad();
            // torch's cumsum_backward: the gradient itself when there is
            // nothing to sum (it stays a view where it is one)
            if g.numel() <= 1 || g.shape().get(d) == Some(&1) {
                return Ok(vec![Some(g.clone())]);
            }
            Ok(vec![Some(g.cumsum_dir(d, !reverse)?)])
        })
    }
}

/// The `p`-norm of a lane, accumulated in f64.
fn vector_norm_f64<T: Element>(v: &[T], p: f64) -> f64 {
    let abs = v.iter().map(|x| x.to_f64().abs());
    if p == 2.0 {
        sum_sq_f64(v).sqrt()
    } else if p == 1.0 {
        crate::kernels::reduce::sum_in_pieces(v, f64::abs)
    } else if p == f64::INFINITY {
        abs.fold(f64::NEG_INFINITY, |a, b| {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.max(b)
            }
        })
    } else if p == f64::NEG_INFINITY {
        abs.fold(f64::INFINITY, |a, b| {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.min(b)
            }
        })
    } else if p == 0.0 {
        abs.filter(|&a| a != 0.0).count() as f64
    } else {
        // |v|^p on the SIMD path a block at a time, summed in order
        let mut buf = [0.0f64; 256];
        let mut s = 0.0;
        for c in v.chunks(buf.len()) {
            let b = &mut buf[..c.len()];
            for (d, x) in b.iter_mut().zip(c) {
                *d = x.to_f64().abs();
            }
            vmath::UnaryWith::apply(&vmath::PowBy(p), b);
            for &t in b.iter() {
                s += t;
            }
        }
        s.powf(1.0 / p)
    }
}

/// torch's norm_backward for a vector norm (`g`, `r` broadcastable to `x`).
fn norm_backward(g: &Tensor, x: &Tensor, r: &Tensor, p: f64, rd: &[usize]) -> Result<Tensor> {
    let zero = Tensor::zeros(&[], x.dtype());
    if p == 1.0 {
        return g.mul(&sign_const(x)?);
    }
    let sgn = sign_const(x)?;
    if p.is_infinite() {
        let absx = x.mul(&sgn)?;
        let m = mask(&absx, r, |a, b| a == b)?;
        return evenly_distribute(&g.mul(&sgn)?, &m, rd);
    }
    // 0 where the norm is 0; r + (r == 0) keeps the division finite there.
    let r_zero = mask(r, &zero, |a, b| a == b)?;
    let r_nonzero = mask(r, &zero, |a, b| a != b)?;
    let r_safe = r.add(&r_zero)?;
    if p == 2.0 {
        return g.mul(x)?.div(&r_safe)?.mul(&r_nonzero);
    }
    let absx = x.mul(&sgn)?;
    if p < 1.0 {
        // sign(x) |x|^(p-1) is taken as 0 at x == 0.
        let x_nonzero = mask(x, &zero, |a, b| a != b)?;
        let x_safe = absx.add(&mask(x, &zero, |a, b| a == b)?)?;
        let scaled = sgn.mul(&powf_d(&x_safe, p - 1.0)?)?.mul(&x_nonzero)?;
        return scaled.mul(g)?.mul(&powf_d(r, 1.0 - p)?);
    }
    let scaled = if p < 2.0 {
        sgn.mul(&powf_d(&absx, p - 1.0)?)?
    } else {
        x.mul(&powf_d(&absx, p - 2.0)?)?
    };
    let scale = g.div(&powf_d(&r_safe, p - 1.0)?)?.mul(&r_nonzero)?;
    scaled.mul(&scale)
}
