//! The rest of `torch.linalg` and its top-level relatives, composed of the
//! factorizations of `ops::decomp`: pinv, lstsq, matrix_power, matrix_exp,
//! matrix_norm/norm/cond, matrix_rank, multi_dot, vecdot, vander,
//! tensorinv/tensorsolve, cholesky_solve/cholesky_inverse and
//! triangular_solve.
//!
//! Ops with a derivative of their own (torch's explicit formulas):
//!
//! | op             | derivative                                                   |
//! |----------------|--------------------------------------------------------------|
//! | pinv           | torch's `pinv_backward` (matrix products of A and pinv(A))   |
//! | lstsq          | X = pinv(A) B: gB = pinv(A)^T gX, gA = pinv_backward(gX B^T) |
//! | cholesky_solve | gB = cholesky_solve(gX, L), gL = -(C + C^T) L, C = gB X^T     |
//!
//! The others differentiate through the ops they are made of (matrix_exp:
//! a degree-13 Padé approximant with scaling and squaring, Higham 2005).

use super::decomp::{check_float, check_matrix, check_square, mt};
use crate::autograd::{check_history_first, record};
use crate::buffer::layout::wrap_dim;
use crate::tensor::{DType, Scalar, Tensor};
use crate::{bail, Result};

/// A matrix norm's `ord`: "fro", "nuc" or a number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MatrixOrd {
    Fro,
    Nuc,
    P(f64),
}

fn eps(dt: DType) -> f64 {
    match dt {
        DType::F32 => f32::EPSILON as f64,
        _ => f64::EPSILON,
    }
}

fn last2(t: &Tensor) -> (usize, usize) {
    (t.shape()[t.ndim() - 2], t.shape()[t.ndim() - 1])
}

/// torch's `pinv_backward(grad, pinvA, A)`.
fn pinv_backward(g: &Tensor, pinv: &Tensor, a: &Tensor) -> Result<Tensor> {
    let (m, n) = last2(a);
    let (pinv_h, g_h) = (mt(pinv)?, mt(g)?);
    if m <= n {
        let k = g_h.matmul(pinv)?;
        let k_pinv_h = k.matmul(&pinv_h)?;
        pinv.matmul(&k)?
            .transpose(-1, -2)?
            .neg()?
            .add(&k_pinv_h)?
            .sub(&a.matmul(pinv)?.matmul(&k_pinv_h)?)?
            .add(&pinv_h.matmul(pinv)?.matmul(&g_h.sub(&k.matmul(a)?)?)?)
    } else {
        let k = pinv.matmul(&g_h)?;
        let pinv_h_k = pinv_h.matmul(&k)?;
        k.matmul(pinv)?
            .transpose(-1, -2)?
            .neg()?
            .add(&g_h.sub(&a.matmul(&k)?)?.matmul(pinv)?.matmul(&pinv_h)?)?
            .add(&pinv_h_k)?
            .sub(&pinv_h_k.matmul(pinv)?.matmul(a)?)
    }
}

/// The tolerance `max(atol, rtol * s_max)` per matrix, `[.., 1]`, for the
/// singular values `s` (`[.., k]`, descending), with torch's defaults.
fn tolerance(s: &Tensor, atol: Option<f64>, rtol: Option<f64>, mn: usize) -> Result<Tensor> {
    let atol_v = atol.unwrap_or(0.0);
    let rtol_v = rtol.unwrap_or(if atol_v > 0.0 {
        0.0
    } else {
        eps(s.dtype()) * mn as f64
    });
    let smax = s.narrow(-1, 0, 1)?;
    smax.mul_scalar(rtol_v)?.clamp_min(Scalar::Float(atol_v))
}

impl Tensor {
    /// `torch.linalg.pinv`: the pseudoinverse through the SVD (the
    /// symmetric eigendecomposition when `hermitian`), singular values at or
    /// below `max(atol, rtol * s_max)` dropped.
    pub fn linalg_pinv(
        &self,
        atol: Option<f64>,
        rtol: Option<f64>,
        hermitian: bool,
    ) -> Result<Tensor> {
        check_history_first(&[self])?;
        check_matrix("linalg.pinv", self, "A")?;
        let (m, n) = last2(self);
        let rec = record("LinalgPinvBackward0", &[self]);
        let a = self.detach();
        let out = if m == 0 || n == 0 {
            let mut sh = self.shape()[..self.ndim() - 2].to_vec();
            sh.extend([n, m]);
            Tensor::zeros(&sh, self.dtype())
        } else if hermitian {
            check_square("linalg.pinv", self, "A")?;
            let (l, v) = a.linalg_eigh("L")?;
            let mag = l.abs()?;
            let tol = tolerance(&mag.amax(&[-1], true)?, atol, rtol, n)?;
            let keep = mag.gt(&tol)?;
            let zero = Tensor::zeros(&[], self.dtype());
            let linv = Tensor::where_cond(&keep, &l.reciprocal()?, &zero)?;
            v.mul(&linv.unsqueeze(-2)?)?.matmul(&mt(&v)?)?
        } else {
            let (u, s, vh) = a.linalg_svd(false)?;
            let tol = tolerance(&s, atol, rtol, m.max(n))?;
            let zero = Tensor::zeros(&[], self.dtype());
            let sinv = Tensor::where_cond(&s.gt(&tol)?, &s.reciprocal()?, &zero)?;
            mt(&vh)?.mul(&sinv.unsqueeze(-2)?)?.matmul(&mt(&u)?)?
        };
        rec.save("self", self)
            .save_output("result", 0)
            .finish(out, |c| {
                Ok(vec![Some(pinv_backward(
                    c.grad(),
                    &c.saved(1)?,
                    &c.saved(0)?,
                )?)])
            })
    }

    /// `torch.linalg.lstsq`: `(solution, residuals, rank, singular_values)`,
    /// the minimum-norm least-squares solution through the SVD (as gelsd;
    /// the outputs present for each `driver` are torch's).
    pub fn linalg_lstsq(
        &self,
        b: &Tensor,
        rcond: Option<f64>,
        driver: Option<&str>,
    ) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
        check_history_first(&[self, b])?;
        let name = "torch.linalg.lstsq";
        let driver = driver.unwrap_or("gelsy");
        if !matches!(driver, "gels" | "gelsy" | "gelsd" | "gelss") {
            bail!(
                runtime,
                "{name}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"
            );
        }
        check_matrix("linalg.lstsq", self, "A")?;
        check_float("linalg.lstsq", b)?;
        if self.dtype() != b.dtype() {
            bail!(runtime, "{name}: Expected input and other to have the same dtype, but got input's dtype {} and other's dtype {}", self.dtype().scalar_type_name(), b.dtype().scalar_type_name());
        }
        let vector = b.ndim() + 1 == self.ndim();
        if b.ndim() < 1 || (!vector && b.ndim() < 2) {
            bail!(runtime, "{name}: input must have at least 2 dimensions.");
        }
        let (m, n) = last2(self);
        let rows = if vector {
            b.shape()[b.ndim() - 1]
        } else {
            b.shape()[b.ndim() - 2]
        };
        if rows != m {
            bail!(
                runtime,
                "{name}: input.size(-2) should match other.size(-2)"
            );
        }
        let rtol = rcond.filter(|&r| r > 0.0);
        let a0 = self.detach();
        let pinv = a0.linalg_pinv(
            None,
            Some(rtol.unwrap_or(eps(self.dtype()) * m.max(n) as f64)),
            false,
        )?;
        let bm = if vector {
            b.detach().unsqueeze(-1)?
        } else {
            b.detach()
        };
        let rec = record("LinalgLstsqBackward0", &[self, b]);
        let x = pinv.matmul(&bm)?;
        let x = if vector {
            x.squeeze_dim(-1)?.contiguous()?
        } else {
            x
        };
        let x = rec.save("self", self).save("b", b).finish(x, move |c| {
            let (a, b, g) = (c.saved(0)?, c.saved(1)?, c.grad());
            let (b, g) = match vector {
                true => (b.unsqueeze(-1)?, g.unsqueeze(-1)?),
                false => (b, g.clone()),
            };
            let pinv = a.linalg_pinv(None, rtol, false)?;
            let ga = c.grad_for(0, || pinv_backward(&g.matmul(&mt(&b)?)?, &pinv, &a))?;
            let gb = c.grad_for(1, || {
                let gb = mt(&pinv)?.matmul(&g)?;
                if vector {
                    gb.squeeze_dim(-1)
                } else {
                    Ok(gb)
                }
            })?;
            Ok(vec![ga, gb])
        })?;
        let batch = &self.shape()[..self.ndim() - 2];
        let empty = || Tensor::zeros(&[0], self.dtype());
        let s = a0.linalg_svdvals()?;
        let rank = if driver == "gels" {
            Tensor::zeros(&[0], DType::I64)
        } else {
            let tol = tolerance(
                &s,
                None,
                Some(rtol.unwrap_or(eps(self.dtype()) * m.max(n) as f64)),
                m.max(n),
            )?;
            s.gt(&tol)?.sum_dims(&[-1], false, Some(DType::I64))?
        };
        let full_rank = m > n && {
            let r = if driver == "gels" {
                vec![n as f64]
            } else {
                rank.to_f64_vec()
            };
            r.iter().all(|&v| v == n as f64)
        };
        let residuals = if full_rank && driver != "gelsy" && !batch.contains(&0) {
            let xm = if vector { x.unsqueeze(-1)? } else { x.clone() };
            let r = self
                .matmul(&xm)?
                .sub(&if vector { b.unsqueeze(-1)? } else { b.clone() })?;
            let r = r.mul(&r)?.sum_dims(&[-2], false, None)?;
            if vector {
                r.squeeze_dim(-1)?
            } else {
                r
            }
        } else {
            empty()
        };
        let sv = if matches!(driver, "gelsd" | "gelss") {
            s
        } else {
            empty()
        };
        Ok((x, residuals, rank, sv))
    }

    /// `torch.linalg.matrix_power`: `A^n` by repeated squaring (`n < 0`:
    /// of the inverse).
    pub fn matrix_power(&self, n: i64) -> Result<Tensor> {
        if self.ndim() < 2 {
            bail!(
                runtime,
                "linalg.matrix_power: The input tensor A must have at least 2 dimensions."
            );
        }
        let (r, c) = last2(self);
        if r != c {
            bail!(runtime, "linalg.matrix_power: A must be batches of square matrices, but they are {r} by {c} matrices");
        }
        if n == 0 {
            // the identity, recorded with a zero derivative (torch's copy_)
            let rec = record("CopyBackwards", &[self]);
            let eye = Tensor::eye(r, r, self.dtype())?;
            let shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
            let out = eye.expand(&shape)?.contiguous()?;
            return rec.finish(out, |c| Ok(vec![Some(c.grad().zeros_like())]));
        }
        let base = if n < 0 {
            self.linalg_inv()?
        } else {
            self.clone()
        };
        let mut k = n.unsigned_abs();
        if k == 1 {
            return if n < 0 { Ok(base) } else { base.clone_tensor() };
        }
        let (mut acc, mut sq): (Option<Tensor>, Tensor) = (None, base);
        loop {
            if k & 1 == 1 {
                acc = Some(match acc {
                    None => sq.clone(),
                    Some(a) => a.matmul(&sq)?,
                });
            }
            k >>= 1;
            if k == 0 {
                break;
            }
            sq = sq.matmul(&sq)?;
        }
        Ok(acc.expect("n != 0"))
    }

    /// `torch.linalg.matrix_exp`: the degree-13 Padé approximant with
    /// scaling and squaring (Higham 2005), the scaling picked from the
    /// largest 1-norm of the batch.
    pub fn matrix_exp(&self) -> Result<Tensor> {
        if self.dtype().is_reduced_float() {
            return self.through_float32(|a| a.matrix_exp());
        }
        check_square("linalg.matrix_exp", self, "A")?;
        let (n, _) = last2(self);
        if self.numel() == 0 {
            return self.clone_tensor();
        }
        const B: [f64; 14] = [
            64764752532480000.0,
            32382376266240000.0,
            7771770303897600.0,
            1187353796428800.0,
            129060195264000.0,
            10559470521600.0,
            670442572800.0,
            33522128640.0,
            1323241920.0,
            40840800.0,
            960960.0,
            16380.0,
            182.0,
            1.0,
        ];
        let norm1 = self
            .detach()
            .abs()?
            .sum_dims(&[-2], false, None)?
            .to_f64_vec()
            .into_iter()
            .fold(0.0f64, f64::max);
        let theta13 = 5.371920351148152;
        let s = if norm1 > theta13 {
            (norm1 / theta13).log2().ceil().max(0.0) as i32
        } else {
            0
        };
        let a = self.mul_scalar(0.5f64.powi(s))?;
        let eye = Tensor::eye(n, n, self.dtype())?;
        let a2 = a.matmul(&a)?;
        let a4 = a2.matmul(&a2)?;
        let a6 = a4.matmul(&a2)?;
        let lin = |c6: f64, c4: f64, c2: f64, c0: f64| -> Result<Tensor> {
            a6.mul_scalar(c6)?
                .add(&a4.mul_scalar(c4)?)?
                .add(&a2.mul_scalar(c2)?)?
                .add(&eye.mul_scalar(c0)?)
        };
        let inner_u = a6.matmul(
            &a6.mul_scalar(B[13])?
                .add(&a4.mul_scalar(B[11])?)?
                .add(&a2.mul_scalar(B[9])?)?,
        )?;
        let u = a.matmul(&inner_u.add(&lin(B[7], B[5], B[3], B[1])?)?)?;
        let inner_v = a6.matmul(
            &a6.mul_scalar(B[12])?
                .add(&a4.mul_scalar(B[10])?)?
                .add(&a2.mul_scalar(B[8])?)?,
        )?;
        let v = inner_v.add(&lin(B[6], B[4], B[2], B[0])?)?;
        let mut r = v.sub(&u)?.linalg_solve(&v.add(&u)?, true)?;
        for _ in 0..s {
            r = r.matmul(&r)?;
        }
        Ok(r)
    }

    /// `torch.linalg.matrix_norm` over the dims `dims` (two of them).
    pub fn matrix_norm(
        &self,
        ord: MatrixOrd,
        dims: [i64; 2],
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        if self.dtype().is_reduced_float() && dtype.is_none() {
            return self.through_float32(|a| a.matrix_norm(ord, dims, keepdim, dtype));
        }
        check_matrix("linalg.matrix_norm", self, "A")?;
        let x = match dtype {
            Some(d) => self.to_dtype(d)?,
            None => self.clone(),
        };
        let nd = self.ndim() as i64;
        let norm_dim = |d: i64| -> Result<i64> {
            if d < -nd || d >= nd {
                bail!(
                    index,
                    "Dimension out of range (expected to be in range of [{}, {}], but got {d})",
                    -nd,
                    nd - 1
                );
            }
            Ok(d.rem_euclid(nd))
        };
        let (d0, d1) = (norm_dim(dims[0])?, norm_dim(dims[1])?);
        if d0 == d1 {
            bail!(
                runtime,
                "linalg.matrix_norm: dims must be different. Got ({}, {})",
                dims[0],
                dims[1]
            );
        }
        let squeeze_both = |t: Tensor| -> Result<Tensor> {
            if keepdim {
                return Ok(t);
            }
            t.squeeze_dim(d0.max(d1))?.squeeze_dim(d0.min(d1))
        };
        match ord {
            MatrixOrd::Fro => x.norm(2.0, &[d0, d1], keepdim, None),
            MatrixOrd::P(p) if p.abs() == 1.0 || p.is_infinite() => {
                let (sum_dim, ext_dim) = if p.abs() == 1.0 { (d0, d1) } else { (d1, d0) };
                let s = x.abs()?.sum_dims(&[sum_dim], true, None)?;
                let r = if p > 0.0 {
                    s.amax(&[ext_dim], true)?
                } else {
                    s.amin(&[ext_dim], true)?
                };
                squeeze_both(r)
            }
            MatrixOrd::Nuc | MatrixOrd::P(_) => {
                let p = match ord {
                    MatrixOrd::P(p) if p.abs() == 2.0 => p,
                    MatrixOrd::Nuc => 0.0,
                    MatrixOrd::P(p) => bail!(
                        runtime,
                        "linalg.matrix_norm: Order {} not supported.",
                        crate::error::cpp_double(p)
                    ),
                    MatrixOrd::Fro => unreachable!(),
                };
                let s = x.movedim(&[d0, d1], &[-2, -1])?.linalg_svdvals()?;
                let r = match p {
                    0.0 => s.sum_dims(&[-1], false, None)?,
                    p if p > 0.0 => s.amax(&[-1], false)?,
                    _ => s.amin(&[-1], false)?,
                };
                if keepdim {
                    r.unsqueeze(d0.min(d1))?.unsqueeze(d0.max(d1))
                } else {
                    Ok(r)
                }
            }
        }
    }

    /// `torch.linalg.norm`: a vector norm (`dim` of one dim, or no `ord`
    /// and no `dim`: of the flattened input), else a matrix norm.
    pub fn linalg_norm(
        &self,
        ord: Option<MatrixOrd>,
        dim: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        if self.dtype().is_reduced_float() && dtype.is_none() {
            return self.through_float32(|a| a.linalg_norm(ord, dim, keepdim, dtype));
        }
        check_float("linalg.norm", self)?;
        let matrix = match (dim, ord) {
            (Some(d), _) => match d.len() {
                1 => false,
                2 => true,
                _ => bail!(runtime, "linalg.norm: If dim is specified, it must be of length 1 or 2. Got {:?}", d),
            },
            (None, None) => false,
            (None, Some(_)) => match self.ndim() {
                1 => false,
                2 => true,
                _ => bail!(runtime, "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {}D.", self.ndim()),
            },
        };
        if matrix {
            let d = dim.map_or([-2, -1], |d| [d[0], d[1]]);
            return self.matrix_norm(ord.unwrap_or(MatrixOrd::Fro), d, keepdim, dtype);
        }
        let p = match ord {
            None => 2.0,
            Some(MatrixOrd::P(p)) => p,
            Some(_) => bail!(
                runtime,
                "linalg.vector_norm: ord must be a number for vector norms"
            ),
        };
        self.norm(p, dim.unwrap_or(&[]), keepdim, dtype)
    }

    /// `torch.linalg.cond`: `||A|| ||A^-1||` in the norm `p` (the ratio of
    /// extreme singular values for `p` None, 2 or -2).
    pub fn linalg_cond(&self, p: Option<MatrixOrd>) -> Result<Tensor> {
        check_matrix("linalg.cond", self, "A")?;
        match p {
            None | Some(MatrixOrd::P(2.0)) | Some(MatrixOrd::P(-2.0)) => {
                let s = self.linalg_svdvals()?;
                let k = s.shape()[s.ndim() - 1];
                let (hi, lo) = (s.narrow(-1, 0, 1)?, s.narrow(-1, k as i64 - 1, 1)?);
                let r = match p {
                    Some(MatrixOrd::P(q)) if q < 0.0 => lo.div(&hi)?,
                    _ => hi.div(&lo)?,
                };
                r.squeeze_dim(-1)
            }
            Some(ord) => {
                check_square("linalg.cond", self, "A")?;
                let inv = self.linalg_inv_ex()?.0;
                self.matrix_norm(ord, [-2, -1], false, None)?
                    .mul(&inv.matrix_norm(ord, [-2, -1], false, None)?)
            }
        }
    }

    /// `torch.linalg.matrix_rank`: singular values above the tolerance.
    pub fn matrix_rank(
        &self,
        atol: Option<f64>,
        rtol: Option<f64>,
        hermitian: bool,
    ) -> Result<Tensor> {
        check_matrix("linalg.matrix_rank", self, "A")?;
        let (m, n) = last2(self);
        let a = self.detach();
        let s = if hermitian {
            let l = a.linalg_eigvalsh("L")?.abs()?;
            l.flip(&[-1])?
        } else {
            a.linalg_svdvals()?
        };
        if s.shape()[s.ndim() - 1] == 0 {
            return Ok(Tensor::zeros(&self.shape()[..self.ndim() - 2], DType::I64));
        }
        let tol = tolerance(&s, atol, rtol, m.max(n))?;
        s.gt(&tol)?.sum_dims(&[-1], false, Some(DType::I64))
    }

    /// `torch.linalg.vecdot`: `sum(x * y, dim)`.
    pub fn vecdot(&self, y: &Tensor, dim: i64) -> Result<Tensor> {
        self.mul(y)?.sum_dims(&[dim], false, None)
    }

    /// `torch.linalg.vander`: `[x^0, x^1, .., x^(N-1)]` along a new last dim.
    pub fn vander(&self, n: Option<i64>) -> Result<Tensor> {
        if self.ndim() == 0 {
            bail!(
                runtime,
                "linalg.vander: x must have at least one dimension."
            );
        }
        if self.dtype() == DType::Bool {
            bail!(
                runtime,
                "linalg.vander supports floating point, complex, and integer tensors, but got Bool"
            );
        }
        if self.dtype().is_integral() && self.dtype() != DType::I64 {
            // torch computes the powers of integer input in int64.
            return self.to_dtype(DType::I64)?.vander(n);
        }
        let n = n.unwrap_or(self.shape()[self.ndim() - 1] as i64);
        if n <= 1 {
            if n < 0 {
                bail!(runtime, "N must be greater than 1.");
            }
            let mut sh = self.shape().to_vec();
            sh.push(n as usize);
            return Ok(Tensor::ones(&sh, self.dtype()));
        }
        let mut cols = vec![self.ones_like(), self.clone()];
        for _ in 2..n {
            let next = cols[cols.len() - 1].mul(self)?;
            cols.push(next);
        }
        Tensor::stack(&cols, -1)
    }

    /// `torch.linalg.tensorinv`: the inverse of `A` as a map from its
    /// trailing dims (from `ind` on) to its leading ones.
    pub fn tensorinv(&self, ind: i64) -> Result<Tensor> {
        self.tensorinv_batched(ind, 0)
    }

    /// [`Tensor::tensorinv`] of each tensor along the first `batch` dims
    /// (vmap's rule: the batch dims lead).
    pub fn tensorinv_batched(&self, ind: i64, batch: usize) -> Result<Tensor> {
        if ind <= 0 {
            bail!(
                runtime,
                "Expected a strictly positive integer for 'ind', but got {ind}"
            );
        }
        let (outer, dims) = self.shape().split_at(batch.min(self.ndim()));
        let ind = (ind as usize).min(dims.len());
        let (lead, trail) = dims.split_at(ind);
        let (p, q): (usize, usize) = (lead.iter().product(), trail.iter().product());
        if p != q {
            bail!(runtime, "Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), but got {q} != {p}");
        }
        let outer: Vec<i64> = outer.iter().map(|&d| d as i64).collect();
        let square: Vec<i64> = outer.iter().copied().chain([p as i64, q as i64]).collect();
        let inv = self.reshape(&square)?.linalg_inv()?;
        let shape: Vec<i64> = (outer.iter().copied())
            .chain(trail.iter().chain(lead).map(|&d| d as i64))
            .collect();
        inv.reshape(&shape)
    }

    /// `torch.linalg.tensorsolve`: `X` with `tensordot(A, X, X.ndim) = B`.
    pub fn tensorsolve(&self, b: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
        self.tensorsolve_batched(b, dims, 0)
    }

    /// [`Tensor::tensorsolve`] of each pair of tensors along the first
    /// `batch` dims of self and `b` (vmap's rule: the batch dims lead;
    /// `dims` count the others).
    pub fn tensorsolve_batched(
        &self,
        b: &Tensor,
        dims: Option<&[i64]>,
        batch: usize,
    ) -> Result<Tensor> {
        let a = match dims {
            Some(d) if !d.is_empty() => {
                let nd = self.ndim().saturating_sub(batch);
                let src = d
                    .iter()
                    .map(|&i| Ok((wrap_dim(i, nd)? + batch) as i64))
                    .collect::<Result<Vec<_>>>()?;
                let dest: Vec<i64> = (0..d.len() as i64).map(|i| i - d.len() as i64).collect();
                self.movedim(&src, &dest)?
            }
            _ => self.clone(),
        };
        let outer: Vec<i64> = a.shape()[..batch].iter().map(|&d| d as i64).collect();
        let (a_rank, b_rank) = (a.ndim() - batch, b.ndim() - batch);
        let bn: usize = b.shape()[batch..].iter().product();
        let rest: Vec<usize> = a.shape()[batch + b_rank.min(a_rank)..].to_vec();
        let q: usize = rest.iter().product();
        if bn != q {
            bail!(runtime, "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but got {q} != {bn}");
        }
        let with_outer = |tail: &[i64]| -> Vec<i64> { outer.iter().chain(tail).copied().collect() };
        let x = a
            .reshape(&with_outer(&[bn as i64, q as i64]))?
            .linalg_solve(&b.reshape(&with_outer(&[bn as i64]))?, true)?;
        x.reshape(&with_outer(
            &rest.iter().map(|&d| d as i64).collect::<Vec<_>>(),
        ))
    }

    /// `torch.cholesky_solve(B, L)`: `X` with `L L^T X = B` (`U^T U` when
    /// `upper`); the gradient treats `L` as a full matrix, as torch's.
    pub fn cholesky_solve(&self, l: &Tensor, upper: bool) -> Result<Tensor> {
        check_history_first(&[self, l])?;
        check_square("cholesky_solve", l, "A")?;
        check_matrix("cholesky_solve", self, "B")?;
        let (b0, l0) = (self.detach(), l.detach());
        let rec = record("CholeskySolveBackward0", &[self, l]);
        let x = if upper {
            // U^T Y = B, U X = Y
            let y = mt(&l0)?.linalg_solve_triangular(&b0, false, true, false)?;
            l0.linalg_solve_triangular(&y, true, true, false)?
        } else {
            // L Y = B, L^T X = Y
            let y = l0.linalg_solve_triangular(&b0, false, true, false)?;
            mt(&l0)?.linalg_solve_triangular(&y, true, true, false)?
        };
        let x = x.contiguous()?;
        rec.save("self", self)
            .save("input2", l)
            .save_output("result", 0)
            .finish(x, move |c| {
                let (l, x, g) = (c.saved(1)?, c.saved(2)?, c.grad());
                let gb = g.cholesky_solve(&l, upper)?;
                let gl = c.grad_for(1, || {
                    let common = gb.matmul(&mt(&x)?)?;
                    let common = common.add(&mt(&common)?)?;
                    match upper {
                        true => l.matmul(&common)?.neg(),
                        false => common.matmul(&l)?.neg(),
                    }
                })?;
                Ok(vec![c.needs(0).then_some(gb), gl])
            })
    }

    /// `torch.cholesky_inverse(L)`: `(L L^T)^-1`.
    pub fn cholesky_inverse(&self, upper: bool) -> Result<Tensor> {
        check_square("cholesky_inverse", self, "A")?;
        let (n, _) = last2(self);
        let mut shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
        let k = shape.len();
        shape[k - 1] = n as i64;
        let eye = Tensor::eye(n, n, self.dtype())?.expand(&shape)?;
        eye.cholesky_solve(self, upper)
    }

    /// `torch.triangular_solve(b, A)`: `(X, A.clone())` with `op(A) X = b`.
    pub fn triangular_solve(
        &self,
        a: &Tensor,
        upper: bool,
        transpose: bool,
        unitriangular: bool,
    ) -> Result<(Tensor, Tensor)> {
        let am = if transpose { mt(a)? } else { a.clone() };
        let x = am.linalg_solve_triangular(self, upper != transpose, true, unitriangular)?;
        Ok((x, a.clone_tensor()?))
    }
}

/// `torch.linalg.multi_dot`: the product of the matrices left to right
/// (the first may be a row vector, the last a column vector).
pub fn multi_dot(ts: &[Tensor]) -> Result<Tensor> {
    if ts.len() < 2 {
        bail!(
            runtime,
            "multi_dot(): expected at least 2 tensors but got {}",
            ts.len()
        );
    }
    for (i, t) in ts.iter().enumerate() {
        let ok = t.ndim() == 2 || (t.ndim() == 1 && (i == 0 || i == ts.len() - 1));
        if !ok {
            bail!(
                runtime,
                "multi_dot(): tensor {i} must be 2D but got {}D",
                t.ndim()
            );
        }
    }
    let mut acc = ts[0].clone();
    for t in &ts[1..] {
        acc = acc.matmul(t)?;
    }
    Ok(acc)
}
