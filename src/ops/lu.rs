//! LU with partial pivoting: `linalg.lu_factor(_ex)` (LAPACK's packed
//! factor and 1-based row interchanges), `linalg.lu` (`P, L, U` with
//! `A = P L U`), `lu_unpack` and `linalg.lu_solve`.
//!
//! | op        | derivative                                                        |
//! |-----------|-------------------------------------------------------------------|
//! | lu        | torch's `linalg_lu_backward` (square, wide and tall cases)        |
//! | lu_factor | the same, with gL = tril(gLU, -1) and gU = triu(gLU)              |
//! | lu_unpack, lu_solve | composed of tril/triu/narrow and solve_triangular       |
//!
//! Pivots are int64 (torch's are int32; not changed yet).

use super::decomp::{check_matrix, mt};
use crate::autograd::{check_history_first, record};
use crate::kernels::dense as kernel;
use crate::tensor::{DType, Tensor};
use crate::{bail, Error, Result};

fn mnk(t: &Tensor) -> (usize, usize, usize) {
    let (m, n) = (t.shape()[t.ndim() - 2], t.shape()[t.ndim() - 1]);
    (m, n, m.min(n))
}

/// The permutation matrices `P` (`[.., m, m]`, with `P^T A = L U`) of
/// LAPACK row interchanges `pivots` (`[.., k]`, 1-based).
pub fn pivots_to_permutation(pivots: &Tensor, m: usize, dtype: DType) -> Result<Tensor> {
    let k = pivots.shape().last().copied().unwrap_or(0);
    let batch = &pivots.shape()[..pivots.ndim().saturating_sub(1)];
    let count: usize = batch.iter().product();
    if pivots.ndim() == 0 || k > m || pivots.dtype() != DType::I64 {
        bail!(
            runtime,
            "lu_unpack: LU_pivots is expected to be a tensor of int64 of shape [..., k] with k <= LU.size(-2) = {m}"
        );
    }
    let piv = pivots.try_to_vec::<i64>()?;
    let total = count
        .checked_mul(m * m)
        .ok_or_else(|| Error::runtime("lu_unpack: the permutation is too large"))?;
    let mut v = crate::buffer::pool::try_buffer::<f64>(total)?;
    v.iter_mut().for_each(|x| *x = 0.0);
    for b in 0..count {
        let mut rows: Vec<usize> = (0..m).collect();
        for i in 0..k {
            let s = piv[b * k + i];
            if s < 1 || s as usize > m {
                bail!(
                    runtime,
                    "lu_unpack: pivots must be between 1 and LU.size(-2) inclusive. Got {s}"
                );
            }
            rows.swap(i, s as usize - 1);
        }
        for (i, &r) in rows.iter().enumerate() {
            v[b * m * m + r * m + i] = 1.0;
        }
    }
    let mut shape = batch.to_vec();
    shape.extend([m, m]);
    Tensor::from_vec(v, &shape)?.to_dtype(dtype)
}

/// `(P, L, U)` from a packed factor (differentiable in `lu`).
pub fn unpack(lu: &Tensor, pivots: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    let (m, n, k) = mnk(lu);
    let l = lu
        .narrow(-1, 0, k)?
        .tril(-1)?
        .add(&Tensor::eye(m, k, lu.dtype())?)?;
    let u = lu.narrow(-2, 0, k)?.triu(0)?;
    let _ = n;
    let p = pivots_to_permutation(pivots, m, lu.dtype())?;
    Ok((p, l, u))
}

/// torch's `linalg_lu_backward` (gradients always defined: the engine
/// passes zeros for an unused output).
fn lu_backward(gl: &Tensor, gu: &Tensor, p: &Tensor, l: &Tensor, u: &Tensor) -> Result<Tensor> {
    let (m, n, k) = (
        l.shape()[l.ndim() - 2],
        u.shape()[u.ndim() - 1],
        u.shape()[u.ndim() - 2],
    );
    let ga = if m == n {
        let phi = mt(l)?
            .matmul(gl)?
            .tril(-1)?
            .add(&gu.matmul(&mt(u)?)?.triu(0)?)?;
        let x = mt(u)?.linalg_solve_triangular(&phi, false, false, false)?;
        mt(l)?.linalg_solve_triangular(&x, true, true, true)?
    } else if m < n {
        let (u1, gu1, gu2) = (
            u.narrow(-1, 0, k)?,
            gu.narrow(-1, 0, k)?,
            gu.narrow(-1, k as i64, n - k)?,
        );
        let x = mt(l)?.matmul(gl)?.sub(&gu.triu(0)?.matmul(&mt(u)?)?)?;
        let x = mt(&u1)?.linalg_solve_triangular(&x.tril(-1)?, false, false, false)?;
        let x = Tensor::cat(&[x.add(&gu1.triu(0)?)?, gu2], -1)?;
        mt(l)?.linalg_solve_triangular(&x, true, true, true)?
    } else {
        let (l1, gl1, gl2) = (
            l.narrow(-2, 0, k)?,
            gl.narrow(-2, 0, k)?,
            gl.narrow(-2, k as i64, m - k)?,
        );
        let x = gu.matmul(&mt(u)?)?.sub(&mt(l)?.matmul(&gl.tril(-1)?)?)?;
        let x = mt(&l1)?.linalg_solve_triangular(&x.triu(0)?, true, true, true)?;
        let x = Tensor::cat(&[x.add(&gl1.tril(-1)?)?, gl2], -2)?;
        mt(u)?.linalg_solve_triangular(&x, false, false, false)?
    };
    p.matmul(&ga)
}

impl Tensor {
    /// `torch.linalg.lu_factor_ex`: `(LU, pivots, info)`.
    pub fn linalg_lu_factor_ex(&self, pivot: bool) -> Result<(Tensor, Tensor, Tensor)> {
        check_history_first(&[self])?;
        if !pivot {
            bail!(
                runtime,
                "linalg.lu_factor: LU without pivoting is not implemented on the CPU"
            );
        }
        check_matrix("torch.linalg.lu_factor_ex", self, "A")?;
        let (m, _, k) = mnk(self);
        let batch = self.shape()[..self.ndim() - 2].to_vec();
        let rec = record("LinalgLuFactorExBackward0", &[self]);
        let (lu, ipiv, info) = kernel::lu_factor(self)?;
        let mut pshape = batch.clone();
        pshape.push(k);
        let pivots = Tensor::from_vec(ipiv, &pshape)?;
        let info = Tensor::from_vec(info.into_iter().map(i64::from).collect(), &batch)?;
        let outs = rec
            .save_output("LU", 0)
            .save_output("pivots", 1)
            .finish_many(vec![Tensor::from(lu), pivots, info], move |c| {
                let (lu, piv, g) = (c.saved(0)?, c.saved(1)?, c.grad());
                let (p, l, u) = unpack(&lu, &piv)?;
                let gl = g.narrow(-1, 0, k)?.tril(-1)?;
                let gu = g.narrow(-2, 0, k)?.triu(0)?;
                let _ = m;
                Ok(vec![Some(lu_backward(&gl, &gu, &p, &l, &u)?)])
            })?;
        let mut it = outs.into_iter();
        Ok((it.next().unwrap(), it.next().unwrap(), it.next().unwrap()))
    }

    /// `torch.linalg.lu_factor`: `(LU, pivots)`, raising where a pivot is
    /// zero (torch's message).
    pub fn linalg_lu_factor(&self, pivot: bool) -> Result<(Tensor, Tensor)> {
        let (lu, piv, info) = self.linalg_lu_factor_ex(pivot)?;
        let info = info.to_vec::<i64>();
        if let Some((i, &v)) = info.iter().enumerate().find(|(_, &v)| v != 0) {
            let batch = if self.ndim() > 2 {
                format!("(Batch element {i}): ")
            } else {
                String::new()
            };
            bail!(runtime, "torch.linalg.lu_factor: {batch}U[{v},{v}] is zero and using it on lu_solve would result in a division by zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)");
        }
        Ok((lu, piv))
    }

    /// `torch.linalg.lu`: `(P, L, U)` with `A = P L U`.
    pub fn linalg_lu(&self, pivot: bool) -> Result<(Tensor, Tensor, Tensor)> {
        check_history_first(&[self])?;
        if !pivot {
            bail!(
                runtime,
                "linalg.lu_factor: LU without pivoting is not implemented on the CPU"
            );
        }
        check_matrix("linalg.lu", self, "A")?;
        let (_, _, k) = mnk(self);
        let batch = self.shape()[..self.ndim() - 2].to_vec();
        let rec = record("LinalgLuBackward0", &[self]);
        let (lu, ipiv, _) = kernel::lu_factor(self)?;
        let mut pshape = batch;
        pshape.push(k);
        let (p, l, u) = unpack(&Tensor::from(lu), &Tensor::from_vec(ipiv, &pshape)?)?;
        let outs = rec
            .save_output("P", 0)
            .save_output("L", 1)
            .save_output("U", 2)
            .finish_many(vec![p, l, u], |c| {
                let (p, l, u) = (c.saved(0)?, c.saved(1)?, c.saved(2)?);
                Ok(vec![Some(lu_backward(
                    c.grad_of(1),
                    c.grad_of(2),
                    &p,
                    &l,
                    &u,
                )?)])
            })?;
        let mut it = outs.into_iter();
        Ok((it.next().unwrap(), it.next().unwrap(), it.next().unwrap()))
    }

    /// `torch.linalg.lu_solve`: `X` with `A X = B` for `A = P L U` given as
    /// its packed factor (`A^T X = B` when `adjoint`; `X A = B` unless
    /// `left`), composed of triangular solves.
    pub fn linalg_lu_solve(
        &self,
        pivots: &Tensor,
        b: &Tensor,
        left: bool,
        adjoint: bool,
    ) -> Result<Tensor> {
        check_matrix("linalg.lu_solve", self, "LU")?;
        check_matrix("linalg.lu_solve", b, "B")?;
        let (m, n, _) = mnk(self);
        if m != n {
            bail!(
                runtime,
                "linalg.lu_solve: Expected LU to be square, but got {m} by {n} matrices"
            );
        }
        let rows = if left {
            b.shape()[b.ndim() - 2]
        } else {
            b.shape()[b.ndim() - 1]
        };
        if rows != n {
            bail!(runtime, "linalg.lu_solve: Incompatible shapes of A and B for the equation {} ({n}x{n} and {}x{})",
                if left { "AX = B" } else { "XA = B" }, b.shape()[b.ndim() - 2], b.shape()[b.ndim() - 1]);
        }
        let (p, l, u) = unpack(self, pivots)?;
        match (left, adjoint) {
            (true, false) => {
                let y = l.linalg_solve_triangular(&mt(&p)?.matmul(b)?, false, true, true)?;
                u.linalg_solve_triangular(&y, true, true, false)
            }
            (true, true) => {
                let z = mt(&u)?.linalg_solve_triangular(b, false, true, false)?;
                p.matmul(&mt(&l)?.linalg_solve_triangular(&z, true, true, true)?)
            }
            (false, false) => {
                let z = u.linalg_solve_triangular(b, true, false, false)?;
                l.linalg_solve_triangular(&z, false, false, true)?
                    .matmul(&mt(&p)?)
            }
            (false, true) => {
                let z = mt(&l)?.linalg_solve_triangular(&b.matmul(&p)?, true, false, true)?;
                mt(&u)?.linalg_solve_triangular(&z, false, false, false)
            }
        }
    }
}
