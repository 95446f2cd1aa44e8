//! Reductions and scans. `g` is the output gradient with the reduced dims
//! re-inserted (size 1) so it broadcasts against `self`; `r` is the result
//! likewise; `N` is the number of elements reduced per output.
//!
//! | op                    | d/dself                                                      |
//! |-----------------------|--------------------------------------------------------------|
//! | sum                   | g expanded to self's shape                                   |
//! | mean                  | g / N expanded                                               |
//! | prod (no zero)        | g * r / self                                                 |
//! | prod (zeros in lane)  | g * prod(others), exact to second order (prod_zeros_factor)  |
//! | amax/amin, max()/min()| g * (self == r) / count(self == r)   (split among ties)      |
//! | max/min(dim)          | g at the returned index, 0 elsewhere                         |
//! | var                   | g * 2 (self - mean) / (N - correction)                       |
//! | std                   | g * (self - mean) / ((N - correction) * r)                   |
//! | norm p=2              | g * self / r   (0 where r == 0)                              |
//! | norm p=1              | g * sign(self)                                               |
//! | norm p=±inf           | g * sign(self) * (|self| == r) / count(|self| == r)          |
//! | norm p=0              | none (undefined, as torch)                                   |
//! | norm other p          | g * sign(self) |self|^(p-1) / r^(p-1)   (0 where r == 0)     |
//! | logsumexp             | g * exp(self - r)                                            |
//! | cumsum(dim)           | reversed cumsum of grad along dim                            |
//! | argmax/argmin         | (integer output, not differentiable)                         |
//! | all/any               | (bool output, not differentiable)                            |

use crate::autograd::record;
use crate::kernels::binary::{map2, map3};
use crate::kernels::fold::{Extreme, Prod, Sum};
use crate::kernels::lanes::{CumSum, LogSumExp, ProdOthers, VecFloat};
use crate::kernels::reduce::{
    along_dim, arg_extreme, arg_extreme_rows, fold, logsumexp_slice, reduce, reduce_lanes,
    reduce_sum_of, reduced_shape, sum_sq_f64, var_f64,
};
use crate::kernels::reduced::fold_trailing;
use crate::kernels::unary::{map1, vmath};
use crate::kernels::vmap;
use crate::ops::to_i64;
use crate::tensor::layout::wrap_dim;
use crate::tensor::{DType, Element, Scalar, Tensor};
use crate::{bail, dispatch_all, dispatch_float, Result};

/// Normalizes a dim list: wrapped, sorted, unique; empty means all dims.
/// A 0-dim tensor accepts dims 0 and -1 and has nothing to reduce.
pub fn reduce_dims(dims: &[i64], ndim: usize) -> Result<Vec<usize>> {
    let mut out: Vec<usize> = dims
        .iter()
        .map(|&d| wrap_dim(d, ndim))
        .collect::<Result<_>>()?;
    if dims.is_empty() {
        return Ok((0..ndim).collect());
    }
    out.sort_unstable();
    for w in out.windows(2) {
        if w[0] == w[1] {
            bail!(
                runtime,
                "dim {} appears multiple times in the list of dims",
                w[0]
            );
        }
    }
    if ndim == 0 {
        // (a 0-dim tensor takes dim 0 or -1, once)
        return Ok(Vec::new());
    }
    Ok(out)
}

/// [`reduce_dims`] checked dim by dim in the order given (torch's
/// `dim_list_to_bitset`, as var/std use it): a repeated dim before a later
/// one out of range is the repeat's error.
pub fn reduce_dims_in_order(dims: &[i64], ndim: usize) -> Result<Vec<usize>> {
    let mut seen = Vec::with_capacity(dims.len());
    for &d in dims {
        let w = wrap_dim(d, ndim)?;
        if seen.contains(&w) {
            bail!(
                runtime,
                "dim {} appears multiple times in the list of dims",
                w
            );
        }
        seen.push(w);
    }
    reduce_dims(dims, ndim)
}

/// torch's C++ scalar type name (`Long`, `Float`, ...) for messages.
fn check_nonempty_dims(t: &Tensor, rd: &[usize], op: &str) -> Result<()> {
    for &d in rd {
        if t.shape()[d] == 0 {
            bail!(
                index,
                "{}(): Expected reduction dim {} to have non-zero size.",
                op,
                d
            );
        }
    }
    Ok(())
}

// ----- helpers used by the backward formulas -----

/// A constant (no history) tensor of `a`'s float dtype: 1 where
/// `pred(a, b)` holds (b broadcast), else 0.
pub(crate) fn mask<P>(a: &Tensor, b: &Tensor, pred: P) -> Result<Tensor>
where
    P: Fn(f64, f64) -> bool + Copy + Send + Sync + 'static,
{
    let b = b.cast_raw(a.dtype().compute());
    a.in_compute_dtype(|a| {
        dispatch_float!(a.dtype(), T => map2::<T, T>(a, &b, move |x, y| {
            if pred(x.to_f64(), y.to_f64()) { T::one() } else { T::zero() }
        }).map(Tensor::from))
    })
}

/// `sign(t)` as a constant (its derivative is 0 almost everywhere).
pub(crate) fn sign_const(t: &Tensor) -> Result<Tensor> {
    t.in_compute_dtype(|t| {
        Ok(
            dispatch_float!(t.dtype(), T => Tensor::from(map1::<T, T>(t, |x| {
                let v = x.to_f64();
                T::from_f64(if v > 0.0 { 1.0 } else if v < 0.0 { -1.0 } else { v })
            }))),
        )
    })
}

/// Differentiable `exp`, private to the reduction family (ExpBackward0).
pub(crate) fn exp_d(t: &Tensor) -> Result<Tensor> {
    let rec = record("ExpBackward0", &[t]);
    let out = t.in_compute_dtype(|t| {
        Ok(dispatch_float!(t.dtype(), T => Tensor::from(map1::<T, T>(t, |x| x.exp()))))
    })?;
    rec.save_output("result", 0)
        .finish(out, |c| Ok(vec![Some(c.grad().mul(&c.saved(0)?)?)]))
}

/// Differentiable `t ** e` for a float exponent (PowBackward0).
pub(crate) fn powf_d(t: &Tensor, e: f64) -> Result<Tensor> {
    let rec = record("PowBackward0", &[t]);
    let out = t.in_compute_dtype(|t| {
        Ok(dispatch_float!(t.dtype(), T => Tensor::from(vmap::map1_with(t, vmath::PowBy(T::from_f64(e)))?)))
    })?;
    rec.save("self", t).finish(out, move |c| {
        if e == 0.0 {
            return Ok(vec![Some(c.grad().zeros_like())]);
        }
        let x = c.saved(0)?;
        Ok(vec![Some(
            c.grad().mul(&powf_d(&x, e - 1.0)?.mul_scalar(e)?)?,
        )])
    })
}

/// Whether any element of a float tensor is zero.
fn any_zero(t: &Tensor) -> Result<bool> {
    Ok(count_zeros(t)? > 0)
}

/// How many elements of `t` (floating) are zero.
fn count_zeros(t: &Tensor) -> Result<usize> {
    let all: Vec<usize> = (0..t.ndim()).collect();
    let t = t.cast_raw(t.dtype().compute());
    dispatch_float!(t.dtype(), T => {
        Ok(crate::kernels::reduce::with_lanes::<T, _>(&t, &all, |d, _| {
            d.iter().filter(|&&v| v.to_f64() == 0.0).count()
        }))
    })
}

/// A constant of `shape`, 1 where the index along `dim` equals `idx`
/// (int64, `shape` with size 1 at `dim`), else 0.
fn one_hot_along(idx: &Tensor, shape: &[usize], dim: Option<usize>, dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let mut v = vec![0.0f64; n];
    match dim {
        None => v.iter_mut().for_each(|x| *x = 1.0),
        Some(d) => {
            let idx = idx.to_vec::<i64>();
            let size = shape[d];
            let inner: usize = shape[d + 1..].iter().product();
            for (j, &i) in idx.iter().enumerate() {
                let (o, r) = (j / inner.max(1), j % inner.max(1));
                v[(o * size + i as usize) * inner + r] = 1.0;
            }
        }
    }
    Tensor::from_vec(v, shape)
        .expect("shape matches")
        .cast_raw(dtype)
}

/// g / count * mask: spreads a gradient evenly over the elements of each
/// lane where `mask` is 1.
fn evenly_distribute(g: &Tensor, m: &Tensor, rd: &[usize]) -> Result<Tensor> {
    let count = m.sum_dims(&to_i64(rd), true, None)?;
    g.div(&count)?.mul(m)
}

impl Tensor {
    /// Re-inserts reduced dims (as size 1) into a reduction's gradient so it
    /// broadcasts against the input.
    pub(crate) fn unsqueeze_reduced(&self, dims: &[usize], keepdim: bool) -> Result<Tensor> {
        if keepdim {
            return Ok(self.clone());
        }
        let mut g = self.clone();
        for &d in dims {
            g = g.unsqueeze(d as i64)?;
        }
        Ok(g)
    }

    // ----- sum / mean -----

    /// Sum over all elements.
    pub fn sum(&self) -> Result<Tensor> {
        self.sum_dims(&[], false, None)
    }
    /// Sum over `dims` (all dims when empty). Integer and bool inputs sum to
    /// int64 unless `dtype` says otherwise.
    pub fn sum_dims(&self, dims: &[i64], keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let rd = reduce_dims(dims, self.ndim())?;
        let dt = dtype.unwrap_or(if self.dtype().is_floating() {
            self.dtype()
        } else {
            DType::I64
        });
        let x = self.cast_raw(dt);
        let name = if dims.is_empty() {
            "SumBackward0"
        } else {
            "SumBackward1"
        };
        let mut rec = record(name, &[self]);
        if !dims.is_empty() {
            rec = rec.attr("dim", dims).attr("keepdim", keepdim);
        }
        let rec = rec.attr("self_sym_sizes", self.shape());
        let out = match fold_trailing(&x, &rd, keepdim, &Sum { scale: None })? {
            Some(v) => Tensor::from(v).try_cast_raw(dt)?,
            None => x.in_compute_dtype(|x| {
                Ok(crate::dispatch_computed!(x.dtype(), T => Tensor::from(fold::<T, _>(x, &rd, keepdim, &Sum { scale: None })?)))
            })?,
        };
        let shape = to_i64(self.shape());
        let all = dims.is_empty() && !keepdim;
        rec.finish(out, move |c| {
            // SumBackward0 is torch's `grad.expand(sizes)` of the 0-dim
            // grad: every stride 0, size-1 dims too (an autograd.grad
            // result shows it); SumBackward1 unsqueezes first
            let g = if all {
                c.grad().clone()
            } else {
                c.grad().unsqueeze_reduced(&rd, keepdim)?
            };
            Ok(vec![Some(g.expand(&shape)?)])
        })
    }
    pub fn mean(&self) -> Result<Tensor> {
        self.mean_dims(&[], false, None)
    }
    /// Mean over `dims` (all when empty); floating dtypes only (or `dtype`).
    pub fn mean_dims(&self, dims: &[i64], keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let dt = dtype.unwrap_or(self.dtype());
        if !dt.is_floating() {
            bail!(
                runtime,
                "mean(): could not infer output dtype. {} dtype must be either a floating point or complex dtype. Got: {}",
                if dtype.is_some() { "Optional" } else { "Input" },
                dt.scalar_type_name()
            );
        }
        let x = self.to_dtype(dt)?;
        let rd = reduce_dims(dims, x.ndim())?;
        let count: usize = rd.iter().map(|&d| x.shape()[d]).product();
        let name = if dims.is_empty() {
            "MeanBackward0"
        } else {
            "MeanBackward1"
        };
        let mut rec = record(name, &[&x]);
        if !dims.is_empty() {
            rec = rec.attr("dim", dims).attr("keepdim", keepdim);
        }
        let rec = rec
            .attr("self_sym_numel", x.numel())
            .attr("self_sym_sizes", x.shape());
        let scale = Some((1.0 / count as f64) as f32);
        let out = match fold_trailing(&x, &rd, keepdim, &Sum { scale })? {
            Some(v) => Tensor::from(v).try_cast_raw(dt)?,
            None => x.in_compute_dtype(|x| {
                Ok(dispatch_float!(x.dtype(), T => {
                    let scale = Some(T::from_f64(1.0 / count as f64));
                    Tensor::from(fold::<T, _>(x, &rd, keepdim, &Sum { scale })?)
                }))
            })?,
        };
        let shape = to_i64(x.shape());
        rec.finish(out, move |c| {
            let g = c.grad().unsqueeze_reduced(&rd, keepdim)?;
            // torch's `grad.expand(sizes) / numel`: divided after the
            // expand, so the gradient is dense (not stride 0), as torch's
            Ok(vec![Some(g.expand(&shape)?.div_scalar(count as f64)?)])
        })
    }

    // ----- prod -----

    /// Product of all elements. Integer and bool inputs give int64 unless
    /// `dtype` says otherwise.
    pub fn prod(&self, dtype: Option<DType>) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let rd: Vec<usize> = (0..self.ndim()).collect();
        self.prod_impl(&rd, false, dtype, "ProdBackward0")
    }
    /// Product along one dim.
    pub fn prod_dim(&self, dim: i64, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let rd = reduce_dims(&[dim], self.ndim())?;
        self.prod_impl(&rd, keepdim, dtype, "ProdBackward1")
    }
    fn prod_impl(
        &self,
        rd: &[usize],
        keepdim: bool,
        dtype: Option<DType>,
        name: &'static str,
    ) -> Result<Tensor> {
        let dt = dtype.unwrap_or(if self.dtype().is_floating() {
            self.dtype()
        } else {
            DType::I64
        });
        let x = self.to_dtype(dt)?;
        let rec = record(name, &[&x]);
        let out = x.in_compute_dtype(|x| {
            Ok(crate::dispatch_computed!(x.dtype(), T => Tensor::from(fold::<T, _>(x, rd, keepdim, &Prod)?)))
        })?;
        let rd = rd.to_vec();
        rec.save("self", &x)
            .save_output("result", 0)
            .finish(out, move |c| {
                let x = c.saved(0)?;
                let g = c.grad().unsqueeze_reduced(&rd, keepdim)?;
                if x.ndim() == 0 {
                    return Ok(vec![Some(g.clone())]);
                }
                if !any_zero(&x)? {
                    let r = c.saved(1)?.unsqueeze_reduced(&rd, keepdim)?;
                    return Ok(vec![Some(g.mul(&r.div(&x)?)?)]);
                }
                // Zeros anywhere: torch's prod_safe_zeros_backward for every
                // lane, grad times the product of the other elements.
                // (A lane of one element gets the gradient itself, as
                // torch's shortcut there: no history under create_graph.)
                if rd.len() == 1 && name == "ProdBackward1" {
                    if x.shape()[rd[0]] == 1 {
                        return Ok(vec![Some(g)]);
                    }
                    return Ok(vec![Some(g.mul(&x.prod_others(rd[0])?)?)]);
                }
                // The whole product: zeros when several and no graph is
                // built (torch's shortcut), else over the flattened input.
                if !crate::autograd::is_grad_enabled() && count_zeros(&x)? > 1 {
                    return Ok(vec![Some(Tensor::zeros(x.shape(), x.dtype()))]);
                }
                if x.numel() == 1 {
                    return Ok(vec![Some(c.grad().view(&to_i64(x.shape()))?)]);
                }
                let flat = x.contiguous()?.view(&[-1])?;
                let d = c.grad().mul(&flat.prod_others(0)?)?;
                Ok(vec![Some(d.view(&to_i64(x.shape()))?)])
            })
    }

    /// For each element, the product of the other elements of its lane
    /// along `d` (torch's `prod_safe_zeros_backward` factor, with its
    /// rounding: see [`ProdOthers`]). Differentiable once more (its
    /// backward is [`Tensor::prod_others_vjp`]).
    fn prod_others(&self, d: usize) -> Result<Tensor> {
        let rec = record("ProdOthersBackward0", &[self]);
        let out = self.in_compute_dtype(|x| {
            Ok(dispatch_float!(x.dtype(), T =>
                Tensor::from(along_dim::<T, T, _>(x, d, &ProdOthers, None)?)))
        })?;
        rec.save("self", self).finish(out, move |c| {
            let x = c.saved(0)?;
            Ok(vec![Some(x.prod_others_vjp(c.grad(), d)?)])
        })
    }

    /// The backward of [`Tensor::prod_others`] at `self` for the gradient
    /// `g`: `sum_{j != i} g_j prod_{k != i, j} self_k`. Linear in `g` with a
    /// symmetric matrix, so its derivative for `g` is itself; the one for
    /// `self` (prod's third derivative with zeros) is not implemented.
    fn prod_others_vjp(&self, g: &Tensor, d: usize) -> Result<Tensor> {
        let g = g.cast_raw(self.dtype());
        let rec = record("ProdOthersVjpBackward0", &[self, &g]);
        let out = self.in_compute_dtype(|x| {
            let g = g.cast_raw(x.dtype());
            Ok(dispatch_float!(x.dtype(), T =>
                Tensor::from(crate::kernels::reduce::prod_others_vjp::<T>(x, &g, d)?)))
        })?;
        rec.save("self", self).finish(out, move |c| {
            if c.needs(0) {
                bail!(
                    runtime,
                    "the derivative of prod's gradient for an input with zeros is implemented up to the second order only"
                );
            }
            let x = c.saved(0)?;
            let dg = c.grad_for(1, || x.prod_others_vjp(c.grad(), d))?;
            Ok(vec![None, dg])
        })
    }

    // ----- all / any -----

    /// Whether every element is true (nonzero; NaN counts as true) over
    /// `dims`: `None` reduces every dim, `Some(&[])` none (each element's
    /// truth value), as torch's `dim=None` and `dim=()`. Bool output.
    pub fn all(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        self.truth_reduce(dims, keepdim, true)
    }
    /// Whether any element is true over `dims` (as [`Tensor::all`]).
    pub fn any(&self, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        self.truth_reduce(dims, keepdim, false)
    }
    fn truth_reduce(&self, dims: Option<&[i64]>, keepdim: bool, all: bool) -> Result<Tensor> {
        let rd = match dims {
            None => reduce_dims(&[], self.ndim())?,
            Some([]) => Vec::new(),
            Some(d) => reduce_dims(d, self.ndim())?,
        };
        let x = self.cast_raw(DType::Bool);
        Ok(if all {
            Tensor::from(fold::<bool, _>(&x, &rd, keepdim, &Prod)?)
        } else {
            Tensor::from(fold::<bool, _>(&x, &rd, keepdim, &Sum { scale: None })?)
        })
    }

    // ----- amax / amin / max / min -----

    /// Maximum over `dims` (all when empty); gradient split among ties.
    pub fn amax(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        self.extreme_impl(dims, keepdim, true, "amax", "AmaxBackward0")
    }
    pub fn amin(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        self.extreme_impl(dims, keepdim, false, "amin", "AminBackward0")
    }
    /// Maximum of all elements (NaN propagates).
    pub fn max(&self) -> Result<Tensor> {
        self.extreme_impl(&[], false, true, "max", "MaxBackward1")
    }
    pub fn min(&self) -> Result<Tensor> {
        self.extreme_impl(&[], false, false, "min", "MinBackward1")
    }
    fn extreme_impl(
        &self,
        dims: &[i64],
        keepdim: bool,
        want_max: bool,
        op: &str,
        name: &'static str,
    ) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        if self.numel() == 0 {
            // torch's zero_numel_check_dims, before the dim list is
            // validated as a whole (a repeated dim): each dim in the order
            // given, named as given.
            if dims.is_empty() {
                bail!(runtime, "{}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.", op);
            }
            for &d in dims {
                if self.shape()[wrap_dim(d, self.ndim())?] == 0 {
                    bail!(
                        index,
                        "{}(): Expected reduction dim {} to have non-zero size.",
                        op,
                        d
                    );
                }
            }
        }
        let rd = reduce_dims(dims, self.ndim())?;
        let full = matches!(op, "max" | "min");
        let mut rec = record(name, &[self]);
        if !full {
            rec = rec.attr("dim", dims).attr("keepdim", keepdim);
        }
        let f = Extreme { max: want_max };
        let out = self.in_compute_dtype(|x| {
            Ok(crate::dispatch_computed!(x.dtype(), T => Tensor::from(fold::<T, _>(x, &rd, keepdim, &f)?)))
        })?;
        rec.save("self", self)
            .save_output("result", 0)
            .finish(out, move |c| {
                let x = c.saved(0)?;
                let r = c.saved(1)?.unsqueeze_reduced(&rd, keepdim)?;
                let g = c.grad().unsqueeze_reduced(&rd, keepdim)?;
                // torch: max()/min() give a NaN result's gradient to the NaN
                // inputs, and write it into zeros (evenly_distribute_backward's
                // masked_fill_: a NaN or inf gradient reaches those elements
                // only); amax/amin multiply by the mask (NaN everywhere then).
                if full {
                    let m = mask(&x, &r, |a, b| a == b || (a.is_nan() && b.is_nan()))?;
                    let count = m.sum_dims(&to_i64(&rd), true, None)?;
                    let others = mask(&x, &r, |a, b| !(a == b || (a.is_nan() && b.is_nan())))?
                        .cast_raw(DType::Bool);
                    return Ok(vec![Some(
                        g.div(&count)?.masked_fill_scalar(&others, Scalar::Int(0))?,
                    )]);
                }
                let m = mask(&x, &r, |a, b| a == b)?;
                Ok(vec![Some(evenly_distribute(&g, &m, &rd)?)])
            })
    }
    /// `(values, indices)` of the maximum along `dim`; the first index wins
    /// among ties, NaN wins over numbers.
    pub fn max_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        self.extreme_dim(dim, keepdim, true)
    }
    pub fn min_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        self.extreme_dim(dim, keepdim, false)
    }
    fn extreme_dim(&self, dim: i64, keepdim: bool, want_max: bool) -> Result<(Tensor, Tensor)> {
        crate::autograd::check_history_first(&[self])?;
        let (op, name) = if want_max {
            ("max", "MaxBackward0")
        } else {
            ("min", "MinBackward0")
        };
        let rd = reduce_dims(&[dim], self.ndim())?;
        check_nonempty_dims(self, &rd, op)?;
        let out_shape = reduced_shape(self.shape(), &rd, keepdim);
        let (values, idx) = dispatch_all!(self.dtype(), T => {
            let (v, i) = match extreme_rows_layout(self, &rd) {
                // A non-last dim of a contiguous tensor: whole rows at a time.
                Some(sizes) => crate::kernels::copy::with_slice::<T, _>(self, |x| arg_extreme_rows(x, sizes, want_max))?,
                None => reduce_lanes::<T, (T, i64)>(self, &rd, move |v| arg_extreme(v, want_max))
                    .into_iter()
                    .unzip(),
            };
            (Tensor::from_data(T::wrap(v), &out_shape), Tensor::from_data(i64::wrap(i), &out_shape))
        });
        let shape = self.dims();
        let d = rd.first().copied();
        let rec = record(name, &[self]);
        let values = rec.save("indices", &idx).finish(values, move |c| {
            let g = c.grad().unsqueeze_reduced(&rd, keepdim)?;
            let idx = c.saved(0)?.unsqueeze_reduced(&rd, keepdim)?;
            // torch's value_selecting_reduction_backward: the gradient
            // scattered to the chosen positions (differentiable in g).
            if let Some(d) = d {
                let z = Tensor::zeros(&shape, g.dtype());
                return Ok(vec![Some(z.scatter(d as i64, &idx, &g)?)]);
            }
            let oh = one_hot_along(&idx, &shape, d, g.dtype());
            Ok(vec![Some(g.mul(&oh)?)])
        })?;
        Ok((values, idx))
    }

    /// Index of the maximum (flattened when `dim` is None).
    pub fn argmax(&self, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
        self.arg_impl(dim, keepdim, true)
    }
    pub fn argmin(&self, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
        self.arg_impl(dim, keepdim, false)
    }
    fn arg_impl(&self, dim: Option<i64>, keepdim: bool, want_max: bool) -> Result<Tensor> {
        let op = if want_max { "argmax" } else { "argmin" };
        if self.dtype() == DType::Bool {
            bail!(runtime, "{}(): does not support bool input", op);
        }
        match dim {
            None => {
                if self.numel() == 0 {
                    bail!(
                        index,
                        "{}(): Expected reduction dim to be specified for input.numel() == 0.",
                        op
                    );
                }
                let rd: Vec<usize> = (0..self.ndim()).collect();
                dispatch_all!(self.dtype(), T => {
                    let v = reduce_lanes::<T, i64>(self, &rd, move |v| arg_extreme(v, want_max).1);
                    let shape = reduced_shape(self.shape(), &rd, keepdim);
                    Ok(Tensor::from_data(i64::wrap(v), &shape))
                })
            }
            Some(d) => {
                let rd = reduce_dims(&[d], self.ndim())?;
                check_nonempty_dims(self, &rd, op)?;
                dispatch_all!(self.dtype(), T => {
                    let v = reduce_lanes::<T, i64>(self, &rd, move |v| arg_extreme(v, want_max).1);
                    let shape = reduced_shape(self.shape(), &rd, keepdim);
                    Ok(Tensor::from_data(i64::wrap(v), &shape))
                })
            }
        }
    }
}

/// `[outer, n, inner]` when reducing the single dim of `rd` of a contiguous
/// `t` has `inner > 1` (the lanes run across rows), else `None`.
fn extreme_rows_layout(t: &Tensor, rd: &[usize]) -> Option<[usize; 3]> {
    let &[d] = rd else { return None };
    let shape = t.shape();
    let inner: usize = shape[d + 1..].iter().product();
    (t.is_contiguous() && inner > 1 && shape[d] > 0)
        .then(|| [shape[..d].iter().product(), shape[d], inner])
}

mod stats;
