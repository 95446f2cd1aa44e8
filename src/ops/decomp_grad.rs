//! The backward formulas of `ops::decomp`, after torch's FunctionsManual.cpp
//! (`linalg_det_backward`, `cholesky_backward`, `linalg_qr_backward`,
//! `svd_backward`, `linalg_eig_backward` with `is_hermitian`), written with
//! ferrograd ops so that they differentiate again (double backward, forward
//! mode).
//!
//! The engine hands a multi-output node zeros for the outputs nobody used;
//! a formula that must tell "unused" from "zero" (svd's and eigh's singular
//! vector terms divide by gaps between values, 0/0 where values repeat)
//! treats a gradient as unused when it is all zeros and carries no graph
//! (a tangent seed in forward mode carries one).

use super::decomp::mt;
use crate::tensor::{DType, Scalar, Tensor};
use crate::Result;

/// `[.., k]` -> `[.., k, k]` with `v` on the diagonal.
pub(crate) fn diag_embed(v: &Tensor) -> Result<Tensor> {
    let k = v.shape()[v.ndim() - 1];
    v.unsqueeze(-1)?.mul(&Tensor::eye(k, k, v.dtype())?)
}

fn diagonal(t: &Tensor) -> Result<Tensor> {
    t.diagonal(0, -2, -1)
}

fn eye_mask(k: usize) -> Result<Tensor> {
    Tensor::eye(k, k, DType::Bool)
}

/// True when `g` is all zeros and carries no graph (an output nobody used).
fn absent(g: &Tensor) -> Result<bool> {
    if g.requires_grad() {
        return Ok(false);
    }
    let any = g.ne_scalar(0)?.any(None, false)?;
    Ok(any.to_f64_vec().first().copied() == Some(0.0))
}

/// `x` with its diagonal set to `v` (a scalar), differentiably.
fn fill_diagonal(x: &Tensor, v: f64) -> Result<Tensor> {
    let k = x.shape()[x.ndim() - 1];
    let val = Tensor::full(&[], Scalar::Float(v), x.dtype());
    Tensor::where_cond(&eye_mask(k)?, &val, x)
}

/// `out[.., i] = prod_{j != i} s[.., j]`, exact with zeros (torch's
/// `prod_safe_zeros_backward` for a unit gradient).
fn prod_except_self(s: &Tensor) -> Result<Tensor> {
    let k = s.shape()[s.ndim() - 1];
    let mut shape: Vec<i64> = s.shape().iter().map(|&d| d as i64).collect();
    shape.insert(shape.len() - 1, k as i64);
    let rows = s.unsqueeze(-2)?.expand(&shape)?;
    let one = Tensor::full(&[], Scalar::Float(1.0), s.dtype());
    Tensor::where_cond(&eye_mask(k)?, &one, &rows)?.prod_dim(-1, false, None)
}

/// d det / dA: `g det A^-T`; through the SVD where some matrix is singular
/// (as torch: `U diag(prod_{j != i} s_j) V^T det(U) det(V)`).
pub(crate) fn det_backward(g: &Tensor, a: &Tensor, det: &Tensor) -> Result<Tensor> {
    let singular = det.eq_scalar(0)?.any(None, false)?.to_f64_vec()[0] != 0.0;
    if !singular {
        let gd = g.mul(det)?.unsqueeze(-1)?.unsqueeze(-1)?;
        return mt(&a.linalg_inv_ex()?.0)?.mul(&gd);
    }
    let (u, s, vh) = a.linalg_svd(false)?;
    let alpha = u.linalg_det()?.mul(&vh.linalg_det()?)?;
    let d = prod_except_self(&s)?.mul(&alpha.mul(g)?.unsqueeze(-1)?)?;
    u.mul(&d.unsqueeze(-2)?)?.matmul(&vh)
}

/// torch's `cholesky_backward` (Murray, 2016): `L^-T Phi(L^T gL) L^-1`,
/// symmetrized, with triangular solves instead of inverses.
pub(crate) fn cholesky_backward(gl: &Tensor, l: &Tensor, upper: bool) -> Result<Tensor> {
    let (l, gl) = match upper {
        true => (mt(l)?, mt(gl)?),
        false => (l.clone(), gl.clone()),
    };
    let phi = mt(&l)?.matmul(&gl)?;
    let phi = phi
        .tril(-1)?
        .add(&diag_embed(&diagonal(&phi)?.mul_scalar(0.5)?)?)?;
    let y = mt(&l)?.linalg_solve_triangular(&phi, true, true, false)?;
    let z = l.linalg_solve_triangular(&y, false, false, false)?;
    z.add(&mt(&z)?)?.mul_scalar(0.5)
}

/// The QR gradient for `R` square: `(gQ + Q copyltu(M)) R^-T` with
/// `M = R gR^T - gQ^T Q` and `copyltu(M)` the symmetric matrix with `M`'s
/// lower triangle.
fn qr_backward_tall(gq: &Tensor, gr: &Tensor, q: &Tensor, r: &Tensor) -> Result<Tensor> {
    let m = r.matmul(&mt(gr)?)?.sub(&mt(gq)?.matmul(q)?)?;
    let low = m.tril(-1)?;
    let sym = low.add(&mt(&low)?)?.add(&diag_embed(&diagonal(&m)?)?)?;
    let b = gq.add(&q.matmul(&sym)?)?;
    mt(r)?.linalg_solve_triangular(&b, false, false, false)
}

/// torch's `linalg_qr_backward` (reduced, or complete with m <= n): a wide
/// `A = Q [U | V]` is split as `[X | Y]` with `Y = Q V`.
pub(crate) fn qr_backward(gq: &Tensor, gr: &Tensor, q: &Tensor, r: &Tensor) -> Result<Tensor> {
    let m = q.shape()[q.ndim() - 2];
    let n = r.shape()[r.ndim() - 1];
    if m >= n {
        return qr_backward_tall(gq, gr, q, r);
    }
    let (u, v) = (r.narrow(-1, 0, m)?, r.narrow(-1, m as i64, n - m)?);
    let (gu, gv) = (gr.narrow(-1, 0, m)?, gr.narrow(-1, m as i64, n - m)?);
    let y = q.matmul(&v)?;
    let gq2 = gq.add(&y.matmul(&mt(&gv)?)?)?;
    let gx = qr_backward_tall(&gq2, &gu, q, &u)?;
    let gy = q.matmul(&gv)?;
    Tensor::cat(&[gx, gy], -1)
}

/// torch's `svd_backward` for real inputs (thin factors; full ones are cut
/// to the first `k = min(m, n)` singular vectors, as torch).
pub(crate) fn svd_backward(g: [&Tensor; 3], u: &Tensor, s: &Tensor, vh: &Tensor) -> Result<Tensor> {
    let k = s.shape()[s.ndim() - 1];
    let m = u.shape()[u.ndim() - 2];
    let n = vh.shape()[vh.ndim() - 1];
    let (u, gu) = (u.narrow(-1, 0, k)?, g[0].narrow(-1, 0, k)?);
    let (vh, gvh) = (vh.narrow(-2, 0, k)?, g[2].narrow(-2, 0, k)?);
    let gs = g[1];
    let (has_u, has_v) = (!absent(&gu)?, !absent(&gvh)?);
    if !has_u && !has_v {
        return match m >= n {
            true => u.matmul(&gs.unsqueeze(-1)?.mul(&vh)?),
            false => u.mul(&gs.unsqueeze(-2)?)?.matmul(&vh),
        };
    }
    let skew = |a: Tensor| -> Result<Tensor> { a.sub(&mt(&a)?) };
    let s2 = s.mul(s)?;
    // e[i, j] = s_j^2 - s_i^2, 1 on the diagonal (divided into zeros there)
    let e = fill_diagonal(&s2.unsqueeze(-2)?.sub(&s2.unsqueeze(-1)?)?, 1.0)?;
    let (s_row, s_col) = (s.unsqueeze(-2)?, s.unsqueeze(-1)?);
    let ret = match (has_u, has_v) {
        (true, true) => {
            let uhgu = skew(mt(&u)?.matmul(&gu)?)?;
            let vhgv = skew(vh.matmul(&mt(&gvh)?)?)?;
            uhgu.mul(&s_row)?.add(&s_col.mul(&vhgv)?)?.div(&e)?
        }
        (true, false) => skew(mt(&u)?.matmul(&gu)?)?.div(&e)?.mul(&s_row)?,
        _ => s_col.mul(&skew(vh.matmul(&mt(&gvh)?)?)?)?.div(&e)?,
    };
    let ret = ret.add(&diag_embed(gs)?)?;
    if m > n && has_u {
        let ga = u.matmul(&ret)?;
        let gu_sinv = gu.div(&s_row)?;
        let ga = ga
            .add(&gu_sinv)?
            .sub(&u.matmul(&mt(&u)?.matmul(&gu_sinv)?)?)?;
        ga.matmul(&vh)
    } else if m < n && has_v {
        let ga = ret.matmul(&vh)?;
        let sinv_gvh = gvh.div(&s_col)?;
        let ga = ga
            .add(&sinv_gvh)?
            .sub(&sinv_gvh.matmul(&mt(&vh)?)?.matmul(&vh)?)?;
        u.matmul(&ga)
    } else if m >= n {
        u.matmul(&ret.matmul(&vh)?)
    } else {
        u.matmul(&ret)?.matmul(&vh)
    }
}

/// torch's `linalg_eig_backward` for a symmetric input:
/// `V (diag(gL) + skew(V^T gV) / E) V^T` with `E_ij = L_j - L_i`,
/// `skew(X) = (X - X^T) / 2`: a symmetric gradient, as torch's.
pub(crate) fn eigh_backward(gl: &Tensor, gv: &Tensor, l: &Tensor, v: &Tensor) -> Result<Tensor> {
    if absent(gv)? {
        return v.mul(&gl.unsqueeze(-2)?)?.matmul(&mt(v)?);
    }
    // projected onto the skew-symmetric matrices (torch's choice: the
    // gradient comes out symmetric)
    let x = mt(v)?.matmul(gv)?;
    let vhgv = x.sub(&mt(&x)?)?.mul_scalar(0.5)?;
    let e = fill_diagonal(&l.unsqueeze(-2)?.sub(&l.unsqueeze(-1)?)?, 1.0)?;
    let ret = fill_diagonal(&vhgv.div(&e)?, 0.0)?.add(&diag_embed(gl)?)?;
    v.matmul(&ret)?.matmul(&mt(v)?)
}
