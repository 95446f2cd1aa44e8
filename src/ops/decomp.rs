//! Matrix factorizations and solves (`torch.linalg`): solve, inv, det,
//! slogdet, cholesky, solve_triangular, qr, svd, eigh, each batched over
//! leading dims, on the kernels of `kernels::dense` (the `faer` crate).
//! `^T` swaps the last two dims; `E_ij = s_j - s_i` off the diagonal.
//!
//! | op               | derivative (torch's FunctionsManual.cpp)                        |
//! |------------------|-----------------------------------------------------------------|
//! | solve (AX = B)   | gB = solve(A^T, gX), gA = -gB X^T                               |
//! | inv              | gA = -A^-T g A^-T                                               |
//! | det              | g det A^-T; singular: U diag(prod_{j!=i} s_j) V^T det(U)det(V)  |
//! | slogdet          | g_logabsdet A^-T                                                |
//! | cholesky         | L^-T Phi(L^T gL) L^-1, symmetrized (Phi: tril, diagonal halved) |
//! | solve_triangular | gB = solve_triangular(A^T, gX), gA = -gB X^T in A's triangle    |
//! | qr               | (gQ + Q copyltu(R gR^T - gQ^T Q)) R^-T (wide: split [X | Y])     |
//! | svd              | U (sym/skew terms / E + diag gS) V^T, plus the m != n terms     |
//! | eigh             | V (diag gL + skew(V^T gV) / E) V^T                              |
//!
//! Backward formulas are written with these ops themselves (double
//! backward and forward mode follow). The gauge checks torch makes for svd
//! and eigh concern complex inputs only (real singular vectors are defined
//! up to sign, which no formula here depends on).

use super::decomp_grad as grad;
use crate::autograd::{check_history_first, record};
use crate::kernels::dense as kernel;
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::{DType, Layout, Tensor};
use crate::{bail, Error, Result};

/// `t` with its last two dims swapped (a view).
pub(crate) fn mt(t: &Tensor) -> Result<Tensor> {
    t.transpose(-1, -2)
}

/// Fails unless `t` is float32/float64 (torch's message for integer input).
pub(crate) fn check_float(name: &str, t: &Tensor) -> Result<()> {
    if !matches!(t.dtype(), DType::F32 | DType::F64) {
        bail!(
            runtime,
            "{name}: Expected a floating point or complex tensor as input. Got {}",
            t.dtype().scalar_type_name()
        );
    }
    Ok(())
}

/// Fails unless `t` is a (batch of) matrices of floats.
pub(crate) fn check_matrix(name: &str, t: &Tensor, what: &str) -> Result<()> {
    if t.ndim() < 2 {
        bail!(
            runtime,
            "{name}: The input tensor {what} must have at least 2 dimensions."
        );
    }
    check_float(name, t)
}

/// Fails unless `t` is a (batch of) square matrices of floats.
pub(crate) fn check_square(name: &str, t: &Tensor, what: &str) -> Result<()> {
    check_matrix(name, t, what)?;
    let (r, c) = (t.shape()[t.ndim() - 2], t.shape()[t.ndim() - 1]);
    if r != c {
        bail!(
            runtime,
            "{name}: {what} must be batches of square matrices, but they are {r} by {c} matrices"
        );
    }
    Ok(())
}

/// Raises torch's LinAlgError for the first failed matrix of a batch.
pub(crate) fn check_info(
    name: &str,
    info: &[i64],
    batched: bool,
    msg: impl Fn(i64) -> String,
) -> Result<()> {
    if let Some((i, &v)) = info.iter().enumerate().find(|(_, &v)| v != 0) {
        let batch = if batched {
            format!("(Batch element {i}): ")
        } else {
            String::new()
        };
        return Err(Error::linalg(format!("{name}: {batch}{}", msg(v))));
    }
    Ok(())
}

/// An int64 tensor of `info` values in the batch shape.
fn info_tensor(info: Vec<i32>, batch: &[usize]) -> Result<Tensor> {
    Tensor::from_vec(info.into_iter().map(i64::from).collect(), batch)
}

/// A fresh (non-view) contiguous tensor with `t`'s values in `shape`.
fn fresh(t: Tensor, shape: &[usize]) -> Result<Tensor> {
    let t = t.contiguous()?;
    let mut l = Layout::contiguous(shape);
    l.offset = t.storage_offset();
    Ok(Tensor::from_storage(t.storage().clone(), l))
}

fn batch_of(t: &Tensor) -> &[usize] {
    &t.shape()[..t.ndim() - 2]
}

fn with2(batch: &[usize], r: usize, c: usize) -> Vec<i64> {
    let mut v: Vec<i64> = batch.iter().map(|&d| d as i64).collect();
    v.push(r as i64);
    v.push(c as i64);
    v
}

/// torch's `linalg_solve_is_vector_rhs`.
pub(crate) fn is_vector_rhs(a: &Tensor, b: &Tensor) -> bool {
    b.ndim() == 1 || (a.ndim() == b.ndim() + 1 && b.shape() == &a.shape()[..a.ndim() - 1])
}

impl Tensor {
    /// `torch.linalg.solve_ex`: `X` with `A X = B` (`X A = B` unless
    /// `left`) and getrf's info per matrix, without raising for a singular
    /// matrix.
    pub fn linalg_solve_ex(&self, b: &Tensor, left: bool) -> Result<(Tensor, Tensor)> {
        check_history_first(&[self, b])?;
        let name = "linalg.solve";
        check_float(name, self)?;
        check_float(name, b)?;
        if self.dtype() != b.dtype() {
            bail!(
                runtime,
                "{name}: Expected A and B to have the same dtype, but found A of type {} and B of type {} instead",
                self.dtype().scalar_type_name(),
                b.dtype().scalar_type_name()
            );
        }
        check_square(name, self, "A")?;
        let vector = is_vector_rhs(self, b);
        if vector && !left {
            bail!(runtime, "{name}: Vector broadcasting of the left hand side is not supported for left=False. In this case linalg.solve is equivalent to B / A.squeeze(-1)");
        }
        let (a0, b0) = (self.detach(), b.detach());
        let b0 = if vector { b0.unsqueeze(-1)? } else { b0 };
        if b0.ndim() < 2 {
            bail!(
                runtime,
                "{name}: The input tensor B must have at least 2 dimensions."
            );
        }
        let (am, bm) = if left { (a0, b0) } else { (mt(&a0)?, mt(&b0)?) };
        let n = am.shape()[am.ndim() - 1];
        let (rb, kb) = (bm.shape()[bm.ndim() - 2], bm.shape()[bm.ndim() - 1]);
        if rb != n {
            let (sb0, sb1) = if left { (rb, kb) } else { (kb, rb) };
            bail!(
                runtime,
                "{name}: Incompatible shapes of A and B for the equation {} ({n}x{n} and {sb0}x{sb1})",
                if left { "AX = B" } else { "XA = B" }
            );
        }
        let batch = broadcast_shapes(batch_of(&am), batch_of(&bm))?;
        let ae = am.expand(&with2(&batch, n, n))?;
        let be = bm.expand(&with2(&batch, n, kb))?;
        let rec = record("LinalgSolveExBackward0", &[self, b]);
        let (x, info) = kernel::solve(&ae, &be)?;
        let mut x = Tensor::from(x);
        if !left {
            x = mt(&x)?;
        }
        let mut shape = batch.to_vec();
        if vector {
            shape.push(n);
        } else {
            shape.extend_from_slice(&x.shape()[x.ndim() - 2..]);
        }
        let x = fresh(x, &shape)?;
        let info = info_tensor(info, &batch)?;
        let outs =
            rec.save("A", self)
                .save_output("result", 0)
                .finish_many(vec![x, info], move |c| {
                    let (a, x, g) = (c.saved(0)?, c.saved(1)?, c.grad());
                    let gb = mt(&a)?.linalg_solve(g, left)?;
                    let ga = c.grad_for(0, || {
                        let (gbm, xm) = match vector {
                            true => (gb.unsqueeze(-1)?, x.unsqueeze(-1)?),
                            false => (gb.clone(), x.clone()),
                        };
                        match left {
                            true => gbm.matmul(&mt(&xm)?)?.neg(),
                            false => mt(&xm)?.matmul(&gbm)?.neg(),
                        }
                    })?;
                    Ok(vec![ga, c.needs(1).then_some(gb)])
                })?;
        let mut it = outs.into_iter();
        Ok((it.next().unwrap(), it.next().unwrap()))
    }

    /// `torch.linalg.solve`: [`Tensor::linalg_solve_ex`], raising
    /// LinAlgError for a singular matrix.
    pub fn linalg_solve(&self, b: &Tensor, left: bool) -> Result<Tensor> {
        let (x, info) = self.linalg_solve_ex(b, left)?;
        check_info(
            "torch.linalg.solve",
            &info.to_vec::<i64>(),
            info.ndim() > 0,
            |_| "The solver failed because the input matrix is singular.".into(),
        )?;
        Ok(x)
    }

    /// `torch.linalg.inv_ex`: the inverse and getrf's info per matrix.
    pub fn linalg_inv_ex(&self) -> Result<(Tensor, Tensor)> {
        check_history_first(&[self])?;
        check_square("linalg.inv", self, "A")?;
        let rec = record("LinalgInvExBackward0", &[self]);
        let (inv, info) = kernel::inverse(self)?;
        let info = info_tensor(info, batch_of(self))?;
        let outs =
            rec.save_output("inverse", 0)
                .finish_many(vec![Tensor::from(inv), info], |c| {
                    let inv_t = mt(&c.saved(0)?)?;
                    Ok(vec![Some(inv_t.matmul(c.grad())?.matmul(&inv_t)?.neg()?)])
                })?;
        let mut it = outs.into_iter();
        Ok((it.next().unwrap(), it.next().unwrap()))
    }

    /// `torch.linalg.inv`, raising LinAlgError for a singular matrix.
    pub fn linalg_inv(&self) -> Result<Tensor> {
        let (inv, info) = self.linalg_inv_ex()?;
        check_info("linalg.inv", &info.to_vec::<i64>(), self.ndim() > 2, |v| {
            format!("The diagonal element {v} is zero, the inversion could not be completed because the input matrix is singular.")
        })?;
        Ok(inv)
    }

    /// `torch.linalg.det`.
    pub fn linalg_det(&self) -> Result<Tensor> {
        check_history_first(&[self])?;
        check_square("linalg.det", self, "A")?;
        let rec = record("LinalgDetBackward0", &[self]);
        let d = Tensor::from(kernel::det(self)?);
        rec.save("A", self).save_output("result", 0).finish(d, |c| {
            Ok(vec![Some(grad::det_backward(
                c.grad(),
                &c.saved(0)?,
                &c.saved(1)?,
            )?)])
        })
    }

    /// `torch.linalg.slogdet`: `(sign, log|det|)`.
    pub fn linalg_slogdet(&self) -> Result<(Tensor, Tensor)> {
        check_history_first(&[self])?;
        check_square("linalg.slogdet", self, "A")?;
        let rec = record("LinalgSlogdetBackward0", &[self]);
        let (sign, logabs) = kernel::slogdet(self)?;
        let outs = rec.save("A", self).finish_many(
            vec![Tensor::from(sign), Tensor::from(logabs)],
            |c| {
                let (a, g) = (c.saved(0)?, c.grad_of(1));
                let inv_t = mt(&a.linalg_inv_ex()?.0)?;
                Ok(vec![Some(inv_t.mul(&g.unsqueeze(-1)?.unsqueeze(-1)?)?)])
            },
        )?;
        let mut it = outs.into_iter();
        Ok((it.next().unwrap(), it.next().unwrap()))
    }

    /// `torch.logdet`: log(det), NaN where det < 0.
    pub fn logdet(&self) -> Result<Tensor> {
        check_square("logdet", self, "A")?;
        let (sign, logabs) = self.linalg_slogdet()?;
        let nan = Tensor::full(&[], f64::NAN.into(), self.dtype());
        Tensor::where_cond(&sign.lt_scalar(0)?, &nan, &logabs)
    }

    /// `torch.linalg.cholesky_ex`: the Cholesky factor and potrf's info.
    pub fn linalg_cholesky_ex(&self, upper: bool) -> Result<(Tensor, Tensor)> {
        check_history_first(&[self])?;
        check_square("linalg.cholesky", self, "A")?;
        let rec = record("LinalgCholeskyExBackward0", &[self]);
        let (l, info) = kernel::cholesky(self, upper)?;
        let info = info_tensor(info, batch_of(self))?;
        let outs = rec
            .save_output("L", 0)
            .finish_many(vec![Tensor::from(l), info], move |c| {
                Ok(vec![Some(grad::cholesky_backward(
                    c.grad(),
                    &c.saved(0)?,
                    upper,
                )?)])
            })?;
        let mut it = outs.into_iter();
        Ok((it.next().unwrap(), it.next().unwrap()))
    }

    /// `torch.linalg.cholesky`, raising LinAlgError for a matrix that is not
    /// positive-definite.
    pub fn linalg_cholesky(&self, upper: bool) -> Result<Tensor> {
        let (l, info) = self.linalg_cholesky_ex(upper)?;
        check_info(
            "linalg.cholesky",
            &info.to_vec::<i64>(),
            self.ndim() > 2,
            |v| {
                format!("The factorization could not be completed because the input is not positive-definite (the leading minor of order {v} is not positive-definite).")
            },
        )?;
        Ok(l)
    }

    /// `torch.linalg.solve_triangular`: `X` with `A X = B` (`X A = B`
    /// unless `left`) for triangular `A` (its upper triangle when `upper`;
    /// a unit diagonal assumed when `unitriangular`).
    pub fn linalg_solve_triangular(
        &self,
        b: &Tensor,
        upper: bool,
        left: bool,
        unitriangular: bool,
    ) -> Result<Tensor> {
        check_history_first(&[self, b])?;
        let name = "linalg.solve_triangular";
        check_matrix(name, self, "A")?;
        check_matrix(name, b, "B")?;
        if self.dtype() != b.dtype() {
            bail!(
                runtime,
                "{name}: Expected A and B to have the same dtype, but found A of type {} and B of type {} instead",
                self.dtype().scalar_type_name(),
                b.dtype().scalar_type_name()
            );
        }
        check_square(name, self, "A")?;
        let (a0, b0) = (self.detach(), b.detach());
        let (am, bm, up) = match left {
            true => (a0, b0, upper),
            false => (mt(&a0)?, mt(&b0)?, !upper),
        };
        let n = am.shape()[am.ndim() - 1];
        let (rb, kb) = (bm.shape()[bm.ndim() - 2], bm.shape()[bm.ndim() - 1]);
        if rb != n {
            let (sb0, sb1) = if left { (rb, kb) } else { (kb, rb) };
            bail!(
                runtime,
                "{name}: Incompatible shapes of A and B for the equation {} ({n}x{n} and {sb0}x{sb1})",
                if left { "AX = B" } else { "XA = B" }
            );
        }
        let batch = broadcast_shapes(batch_of(&am), batch_of(&bm))?;
        let ae = am.expand(&with2(&batch, n, n))?;
        let be = bm.expand(&with2(&batch, n, kb))?;
        let rec = record("LinalgSolveTriangularBackward0", &[self, b]);
        let mut x = Tensor::from(kernel::solve_triangular(&ae, &be, up, unitriangular)?);
        if !left {
            x = mt(&x)?;
        }
        let shape = x.shape().to_vec();
        let x = fresh(x, &shape)?;
        rec.save("self", self)
            .save_output("result", 0)
            .finish(x, move |c| {
                let (a, x, g) = (c.saved(0)?, c.saved(1)?, c.grad());
                let gb = mt(&a)?.linalg_solve_triangular(g, !upper, left, unitriangular)?;
                let ga = c.grad_for(0, || {
                    let ga = match left {
                        true => gb.matmul(&mt(&x)?)?.neg()?,
                        false => mt(&x)?.matmul(&gb)?.neg()?,
                    };
                    let off = i64::from(unitriangular);
                    if upper {
                        ga.triu(off)
                    } else {
                        ga.tril(-off)
                    }
                })?;
                Ok(vec![ga, c.needs(1).then_some(gb)])
            })
    }

    /// `torch.linalg.qr`: `(Q, R)` for `mode` "reduced", "complete" or "r"
    /// (Q empty).
    pub fn linalg_qr(&self, mode: &str) -> Result<(Tensor, Tensor)> {
        check_history_first(&[self])?;
        let (complete, compute_q) = match mode {
            "reduced" => (false, true),
            "complete" => (true, true),
            "r" => (false, false),
            _ => bail!(runtime, "qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"),
        };
        check_matrix("linalg.qr", self, "A")?;
        let rec = record("LinalgQrBackward0", &[self]);
        let (q, r) = kernel::qr(self, complete, compute_q)?;
        let q = match q {
            Some(q) => Tensor::from(q),
            None => Tensor::zeros(&[0], self.dtype()),
        };
        let (m, n) = (self.shape()[self.ndim() - 2], self.shape()[self.ndim() - 1]);
        let outs = rec
            .save_output("Q", 0)
            .save_output("R", 1)
            .finish_many(vec![q, Tensor::from(r)], move |c| {
                if !compute_q {
                    bail!(runtime, "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
                }
                if complete && m > n {
                    bail!(
                        runtime,
                        "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
                    );
                }
                let (q, r) = (c.saved(0)?, c.saved(1)?);
                Ok(vec![Some(grad::qr_backward(
                    c.grad_of(0),
                    c.grad_of(1),
                    &q,
                    &r,
                )?)])
            })?;
        let mut it = outs.into_iter();
        Ok((it.next().unwrap(), it.next().unwrap()))
    }

    /// `torch.linalg.svd`: `(U, S, Vh)`, singular values descending.
    pub fn linalg_svd(&self, full_matrices: bool) -> Result<(Tensor, Tensor, Tensor)> {
        check_history_first(&[self])?;
        check_matrix("linalg.svd", self, "A")?;
        let rec = record("LinalgSvdBackward0", &[self]);
        let (u, s, vh) = kernel::svd(self, full_matrices, true)?;
        let (u, vh) = (u.expect("computed"), vh.expect("computed"));
        let outs = rec
            .save_output("U", 0)
            .save_output("S", 1)
            .save_output("Vh", 2)
            .finish_many(
                vec![Tensor::from(u), Tensor::from(s), Tensor::from(vh)],
                |c| {
                    Ok(vec![Some(grad::svd_backward(
                        [c.grad_of(0), c.grad_of(1), c.grad_of(2)],
                        &c.saved(0)?,
                        &c.saved(1)?,
                        &c.saved(2)?,
                    )?)])
                },
            )?;
        let mut it = outs.into_iter();
        Ok((it.next().unwrap(), it.next().unwrap(), it.next().unwrap()))
    }

    /// `torch.linalg.svdvals`: the singular values (through the full
    /// decomposition when a gradient is wanted, as torch).
    pub fn linalg_svdvals(&self) -> Result<Tensor> {
        check_matrix("linalg.svdvals", self, "A")?;
        if crate::autograd::is_grad_enabled() && self.requires_grad() || self.has_fw_grad() {
            return Ok(self.linalg_svd(false)?.1);
        }
        Ok(Tensor::from(kernel::svd(self, false, false)?.1))
    }

    /// `torch.linalg.eigh`: `(eigenvalues ascending, eigenvectors)` of
    /// symmetric matrices, reading the triangle `uplo` ("L" or "U") names.
    pub fn linalg_eigh(&self, uplo: &str) -> Result<(Tensor, Tensor)> {
        check_history_first(&[self])?;
        let upper = parse_uplo(uplo)?;
        check_square("linalg.eigh", self, "A")?;
        let rec = record("LinalgEighBackward0", &[self]);
        let (l, v) = kernel::eigh(self, upper, true)?;
        let outs = rec
            .save_output("eigenvalues", 0)
            .save_output("eigenvectors", 1)
            .finish_many(
                vec![Tensor::from(l), Tensor::from(v.expect("computed"))],
                |c| {
                    Ok(vec![Some(grad::eigh_backward(
                        c.grad_of(0),
                        c.grad_of(1),
                        &c.saved(0)?,
                        &c.saved(1)?,
                    )?)])
                },
            )?;
        let mut it = outs.into_iter();
        Ok((it.next().unwrap(), it.next().unwrap()))
    }

    /// `torch.svd`: `(U, S, V)` with `V = Vh^T`, full matrices unless
    /// `some`; zero-filled `[m, m]` and `[n, n]` factors unless `compute_uv`.
    pub fn svd_v(&self, some: bool, compute_uv: bool) -> Result<(Tensor, Tensor, Tensor)> {
        check_matrix("svd", self, "A")?;
        if !compute_uv {
            let (m, n) = (self.shape()[self.ndim() - 2], self.shape()[self.ndim() - 1]);
            let s = self.linalg_svdvals()?;
            let zeros = |r: usize| -> Result<Tensor> {
                let mut sh = batch_of(self).to_vec();
                sh.extend([r, r]);
                Ok(Tensor::zeros(&sh, self.dtype()))
            };
            return Ok((zeros(m)?, s, zeros(n)?));
        }
        let (u, s, vh) = self.linalg_svd(!some)?;
        Ok((u, s, mt(&vh)?))
    }

    /// `torch.linalg.eigvalsh`.
    pub fn linalg_eigvalsh(&self, uplo: &str) -> Result<Tensor> {
        let upper = parse_uplo(uplo)?;
        check_square("linalg.eigh", self, "A")?;
        if crate::autograd::is_grad_enabled() && self.requires_grad() || self.has_fw_grad() {
            return Ok(self.linalg_eigh(uplo)?.0);
        }
        Ok(Tensor::from(kernel::eigh(self, upper, false)?.0))
    }
}

fn parse_uplo(uplo: &str) -> Result<bool> {
    match uplo {
        "L" | "l" => Ok(false),
        "U" | "u" => Ok(true),
        _ => bail!(
            runtime,
            "Expected UPLO argument to be 'L' or 'U', but got {uplo}"
        ),
    }
}
