//! Dense factorizations and solves over batches of matrices, on the `faer`
//! crate: LU with partial pivoting (solve, inverse, determinant), Cholesky,
//! triangular solves, Householder QR, SVD and the symmetric eigensolver.
//!
//! Inputs are `[.., m, n]` arrays of float32 or float64 (any layout; each is
//! read once into a row-major copy); outputs are fresh contiguous arrays.
//! Each matrix is factorized on one thread with faer's sequential
//! algorithms, and a batch is split over threads by whole matrices
//! (`parallel::map_collect`), so every result is bitwise the same for any
//! thread count. `info` vectors follow LAPACK's: 0 for success, else the
//! 1-based index of the failing pivot (getrf: first zero pivot; potrf: the
//! order of the leading minor that is not positive-definite).
//!
//! faer asserts its shape contracts; the callers (`ops::decomp`) check
//! shapes first, and every faer call runs under `catch_unwind`, so a broken
//! contract is an internal error, never a panic reaching the user.

use crate::buffer::{pool, DType, Element, Float, Strided};
use crate::kernels::copy::to_vec_as;
use crate::{bail, Error, Result};
use faer::linalg::solvers::{DenseSolveCore, SolveCore};
use faer::{Conj, MatRef, Par, Side};

/// The element types the factorizations run on.
pub trait Real: Float + faer::traits::RealField {}
impl Real for f32 {}
impl Real for f64 {}

/// Runs `$body` with `$T` bound to the element type of `$dt` (f32 or f64).
macro_rules! real_dispatch {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            other => bail!(
                runtime,
                "linalg: expected a float32 or float64 tensor, got {}",
                other.scalar_type_name()
            ),
        }
    };
}

/// Matrices in a batch below which the batch stays on the calling thread
/// (by work: `count * n^3`).
const PARALLEL_WORK: usize = 1 << 15;

/// `(count, rows, cols)` of a `[.., rows, cols]` array.
fn dims3(t: &Strided) -> (usize, usize, usize) {
    let s = t.shape();
    let n = s.len();
    (s[..n - 2].iter().product(), s[n - 2], s[n - 1])
}

/// `f(i, A_i)` for every matrix of the batch `a` (row-major, `rows x cols`
/// each), split over threads by whole matrices; a panic inside faer becomes
/// an internal error.
fn per_matrix<T: Real, R: Send>(
    a: &[T],
    (count, rows, cols): (usize, usize, usize),
    f: impl Fn(usize, MatRef<'_, T>) -> R + Sync,
) -> Result<Vec<R>> {
    let len = rows * cols;
    let work = count.saturating_mul(len).saturating_mul(rows.max(cols));
    let parallel = count > 1 && work >= PARALLEL_WORK;
    let run = || {
        crate::parallel::map_collect(count, parallel, |i| {
            f(
                i,
                MatRef::from_row_major_slice(&a[i * len..(i + 1) * len], rows, cols),
            )
        })
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
        .map_err(|_| Error::internal("linalg: the factorization failed (internal error)"))
}

/// Appends `m` (row-major) to `out`.
fn push<T: Real>(out: &mut Vec<T>, m: MatRef<'_, T>) {
    for i in 0..m.nrows() {
        for j in 0..m.ncols() {
            out.push(m[(i, j)]);
        }
    }
}

/// The pieces of every matrix, concatenated in batch order.
fn concat<T: Real>(parts: impl Iterator<Item = Vec<T>>, total: usize) -> Result<Vec<T>> {
    let mut out = pool::try_buffer::<T>(total)?;
    out.clear();
    for p in parts {
        out.extend_from_slice(&p);
    }
    Ok(out)
}

fn shaped<T: Real>(v: Vec<T>, shape: &[usize]) -> Strided {
    Strided::contiguous(T::wrap(v), shape)
}

fn with_last2(t: &Strided, r: usize, c: usize) -> Vec<usize> {
    let s = t.shape();
    let mut v = s[..s.len() - 2].to_vec();
    v.push(r);
    v.push(c);
    v
}

fn batch_shape(t: &Strided) -> Vec<usize> {
    let s = t.shape();
    s[..s.len() - 2].to_vec()
}

/// Fails when a `rows x cols` result per matrix cannot be allocated.
fn reserve<T: Element>(count: usize, rows: usize, cols: usize) -> Result<()> {
    let n = count
        .checked_mul(rows)
        .and_then(|v| v.checked_mul(cols))
        .ok_or_else(|| pool::alloc_error(usize::MAX))?;
    drop(pool::try_buffer::<T>(n)?);
    Ok(())
}

/// LAPACK getrf's info of an LU factor: 1 + the first zero pivot, or 0.
fn lu_info<T: Real>(u: MatRef<'_, T>) -> i32 {
    (0..u.nrows().min(u.ncols()))
        .find(|&i| u[(i, i)] == <T as Element>::zero())
        .map_or(0, |i| i as i32 + 1)
}

/// `X = A^{-1} B` for each square `A` ([.., n, n]) and `B` ([.., n, k], the
/// same batch dims), by LU with partial pivoting, and getrf's info.
pub fn solve(a: &Strided, b: &Strided) -> Result<(Strided, Vec<i32>)> {
    real_dispatch!(a.dtype(), T => {
        let (count, n, _) = dims3(a);
        let k = b.shape()[b.ndim() - 1];
        let (av, bv) = (to_vec_as::<T>(a)?, to_vec_as::<T>(b)?);
        let res = per_matrix(&av, (count, n, n), |i, m| {
            let lu = m.partial_piv_lu();
            let rhs = MatRef::from_row_major_slice(&bv[i * n * k..(i + 1) * n * k], n, k);
            let mut x = rhs.to_owned();
            lu.solve_in_place_with_conj(Conj::No, x.as_mut());
            let mut out = Vec::with_capacity(n * k);
            push(&mut out, x.as_ref());
            (out, lu_info(lu.U()))
        })?;
        let info = res.iter().map(|r| r.1).collect();
        let x = concat(res.into_iter().map(|r| r.0), count * n * k)?;
        Ok((shaped(x, b.shape()), info))
    })
}

/// `A^{-1}` of each square matrix and getrf's info.
pub fn inverse(a: &Strided) -> Result<(Strided, Vec<i32>)> {
    real_dispatch!(a.dtype(), T => {
        let (count, n, _) = dims3(a);
        let av = to_vec_as::<T>(a)?;
        let res = per_matrix(&av, (count, n, n), |_, m| {
            let lu = m.partial_piv_lu();
            let info = lu_info(lu.U());
            let inv = lu.inverse();
            let mut out = Vec::with_capacity(n * n);
            push(&mut out, inv.as_ref());
            (out, info)
        })?;
        let info = res.iter().map(|r| r.1).collect();
        let x = concat(res.into_iter().map(|r| r.0), count * n * n)?;
        Ok((shaped(x, a.shape()), info))
    })
}

/// `(sign, log|det|)` of each square matrix from its LU factors, as f64
/// pairs (sign 0 and log|det| -inf for a singular matrix).
fn lu_slogdet<T: Real>(av: &[T], dims: (usize, usize, usize)) -> Result<Vec<(f64, f64)>> {
    let n = dims.1;
    per_matrix(av, dims, |_, m| {
        if n == 0 {
            return (1.0, 0.0);
        }
        let lu = m.partial_piv_lu();
        // A zero pivot: singular (faer's factor past it is not meaningful)
        if lu_info(lu.U()) != 0 {
            return (0.0, f64::NEG_INFINITY);
        }
        let (fwd, _) = lu.P().arrays();
        // The parity of the row permutation: n minus its number of cycles.
        let mut seen = vec![false; n];
        let mut cycles = 0;
        for s in 0..n {
            if !seen[s] {
                cycles += 1;
                let mut j = s;
                while !seen[j] {
                    seen[j] = true;
                    j = fwd[j];
                }
            }
        }
        let mut sign = if (n - cycles).is_multiple_of(2) {
            1.0
        } else {
            -1.0
        };
        let mut logabs = 0.0;
        let u = lu.U();
        for i in 0..n {
            let d = u[(i, i)].to_f64();
            if d < 0.0 {
                sign = -sign;
            } else if d.is_nan() {
                sign = f64::NAN;
            }
            logabs += d.abs().ln();
        }
        (sign, logabs)
    })
}

/// `(sign, log|det|)` of each square matrix (dtype of `a`, batch shape).
pub fn slogdet(a: &Strided) -> Result<(Strided, Strided)> {
    real_dispatch!(a.dtype(), T => {
        let dims = dims3(a);
        let av = to_vec_as::<T>(a)?;
        let r = lu_slogdet(&av, dims)?;
        let shape = batch_shape(a);
        let sign: Vec<T> = r.iter().map(|p| T::from_f64(p.0)).collect();
        let logabs: Vec<T> = r.iter().map(|p| T::from_f64(p.1)).collect();
        Ok((shaped(sign, &shape), shaped(logabs, &shape)))
    })
}

/// The determinant of each square matrix: the product of the LU pivots
/// times the permutation's sign.
pub fn det(a: &Strided) -> Result<Strided> {
    real_dispatch!(a.dtype(), T => {
        let (count, n, _) = dims3(a);
        let av = to_vec_as::<T>(a)?;
        let res = per_matrix(&av, (count, n, n), |_, m| {
            if n == 0 {
                return <T as Element>::one();
            }
            let lu = m.partial_piv_lu();
            if lu_info(lu.U()) != 0 {
                return <T as Element>::zero();
            }
            let (fwd, _) = lu.P().arrays();
            let mut swaps: usize = 0;
            let mut seen = vec![false; n];
            for s in 0..n {
                let mut j = s;
                let mut len = 0;
                while !seen[j] {
                    seen[j] = true;
                    j = fwd[j];
                    len += 1;
                }
                swaps += len.max(1) - 1;
            }
            let u = lu.U();
            let mut d = if swaps.is_multiple_of(2) { <T as Element>::one() } else { -<T as Element>::one() };
            for i in 0..n {
                d *= u[(i, i)];
            }
            d
        })?;
        Ok(shaped(res, &batch_shape(a)))
    })
}

/// The Cholesky factor of each symmetric positive-definite matrix (lower,
/// or its transpose when `upper`, reading that triangle of the input) and
/// potrf's info. A failed matrix gets the input's triangle back.
pub fn cholesky(a: &Strided, upper: bool) -> Result<(Strided, Vec<i32>)> {
    real_dispatch!(a.dtype(), T => {
        let (count, n, _) = dims3(a);
        let av = to_vec_as::<T>(a)?;
        let res = per_matrix(&av, (count, n, n), |_, m| {
            let side = if upper { Side::Upper } else { Side::Lower };
            let mut out = Vec::with_capacity(n * n);
            match m.llt(side) {
                Ok(llt) => {
                    let l = llt.L();
                    push(&mut out, if upper { l.transpose() } else { l });
                    (out, 0)
                }
                Err(faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot {
                    index,
                }) => {
                    for i in 0..n {
                        for j in 0..n {
                            let keep = if upper { j >= i } else { j <= i };
                            out.push(if keep { m[(i, j)] } else { <T as Element>::zero() });
                        }
                    }
                    (out, index as i32 + 1)
                }
            }
        })?;
        let info = res.iter().map(|r| r.1).collect();
        let x = concat(res.into_iter().map(|r| r.0), count * n * n)?;
        Ok((shaped(x, a.shape()), info))
    })
}

/// `X = A^{-1} B` for triangular `A` ([.., n, n], the triangle `upper`
/// picks; ones on the diagonal when `unit`) and `B` ([.., n, k], the same
/// batch dims).
pub fn solve_triangular(a: &Strided, b: &Strided, upper: bool, unit: bool) -> Result<Strided> {
    use faer::linalg::triangular_solve as ts;
    real_dispatch!(a.dtype(), T => {
        let (count, n, _) = dims3(a);
        let k = b.shape()[b.ndim() - 1];
        let (av, bv) = (to_vec_as::<T>(a)?, to_vec_as::<T>(b)?);
        let res = per_matrix(&av, (count, n, n), |i, m| {
            let rhs = MatRef::from_row_major_slice(&bv[i * n * k..(i + 1) * n * k], n, k);
            let mut x = rhs.to_owned();
            match (upper, unit) {
                (false, false) => ts::solve_lower_triangular_in_place(m, x.as_mut(), Par::Seq),
                (false, true) => ts::solve_unit_lower_triangular_in_place(m, x.as_mut(), Par::Seq),
                (true, false) => ts::solve_upper_triangular_in_place(m, x.as_mut(), Par::Seq),
                (true, true) => ts::solve_unit_upper_triangular_in_place(m, x.as_mut(), Par::Seq),
            }
            let mut out = Vec::with_capacity(n * k);
            push(&mut out, x.as_ref());
            out
        })?;
        let x = concat(res.into_iter(), count * n * k)?;
        Ok(shaped(x, b.shape()))
    })
}

/// Householder QR of each `[m, n]` matrix: `(Q, R)` with `Q` `[m, q]` and
/// `R` `[q, n]`, `q = m` when `complete`, else `min(m, n)`; `Q` is `None`
/// unless `compute_q`.
pub fn qr(a: &Strided, complete: bool, compute_q: bool) -> Result<(Option<Strided>, Strided)> {
    real_dispatch!(a.dtype(), T => {
        let (count, m, n) = dims3(a);
        let k = m.min(n);
        let q_cols = if complete { m } else { k };
        reserve::<T>(count, m, q_cols)?;
        let av = to_vec_as::<T>(a)?;
        let res = per_matrix(&av, (count, m, n), |_, mat| {
            let f = mat.qr();
            let mut r = Vec::with_capacity(q_cols * n);
            push(&mut r, f.R());
            // complete with m > n: R padded with zero rows
            r.resize(q_cols * n, <T as Element>::zero());
            let mut q = Vec::new();
            if compute_q {
                let qm = if complete { f.compute_Q() } else { f.compute_thin_Q() };
                q.reserve(m * q_cols);
                push(&mut q, qm.as_ref());
            }
            (q, r)
        })?;
        let qs: Vec<Vec<T>>;
        let rs: Vec<Vec<T>>;
        (qs, rs) = res.into_iter().unzip();
        let r = shaped(concat(rs.into_iter(), count * q_cols * n)?, &with_last2(a, q_cols, n));
        let q = match compute_q {
            true => Some(shaped(concat(qs.into_iter(), count * m * q_cols)?, &with_last2(a, m, q_cols))),
            false => None,
        };
        Ok((q, r))
    })
}

fn svd_failed(name: &str) -> Error {
    Error::linalg(format!(
        "{name}: The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated singular values (error code: 1)."
    ))
}

/// SVD of each `[m, n]` matrix: `(U, S, Vh)`, singular values descending;
/// `U` `[m, m]` and `Vh` `[n, n]` when `full`, else `[m, k]` and `[k, n]`;
/// `U` and `Vh` are `None` unless `compute_uv`.
pub fn svd(
    a: &Strided,
    full: bool,
    compute_uv: bool,
) -> Result<(Option<Strided>, Strided, Option<Strided>)> {
    real_dispatch!(a.dtype(), T => {
        let (count, m, n) = dims3(a);
        let k = m.min(n);
        let (uc, vr) = if full { (m, n) } else { (k, k) };
        if compute_uv {
            reserve::<T>(count, m, uc)?;
            reserve::<T>(count, vr, n)?;
        }
        let av = to_vec_as::<T>(a)?;
        let res = per_matrix(&av, (count, m, n), |_, mat| {
            if !compute_uv {
                return mat.singular_values().map(|s| (Vec::new(), s, Vec::new()));
            }
            let f = if full { mat.svd() } else { mat.thin_svd() }?;
            let (mut u, mut vh) = (Vec::with_capacity(m * uc), Vec::with_capacity(vr * n));
            push(&mut u, f.U());
            push(&mut vh, f.V().transpose());
            let s = f.S().column_vector().iter().copied().collect();
            Ok((u, s, vh))
        })?;
        let mut parts = Vec::with_capacity(count);
        for r in res {
            parts.push(r.map_err(|_| svd_failed("linalg.svd"))?);
        }
        let mut s = pool::try_buffer::<T>(count * k)?;
        s.clear();
        for p in &parts {
            s.extend_from_slice(&p.1);
        }
        let mut sshape = batch_shape(a);
        sshape.push(k);
        let s = shaped(s, &sshape);
        if !compute_uv {
            return Ok((None, s, None));
        }
        let (us, vs): (Vec<Vec<T>>, Vec<Vec<T>>) = parts.into_iter().map(|p| (p.0, p.2)).unzip();
        let u = shaped(concat(us.into_iter(), count * m * uc)?, &with_last2(a, m, uc));
        let vh = shaped(concat(vs.into_iter(), count * vr * n)?, &with_last2(a, vr, n));
        Ok((Some(u), s, Some(vh)))
    })
}

/// Eigenvalues (ascending) and, when `compute_v`, eigenvectors (columns) of
/// each symmetric matrix, reading its lower triangle (upper when `upper`).
pub fn eigh(a: &Strided, upper: bool, compute_v: bool) -> Result<(Strided, Option<Strided>)> {
    real_dispatch!(a.dtype(), T => {
        let (count, n, _) = dims3(a);
        let av = to_vec_as::<T>(a)?;
        let side = if upper { Side::Upper } else { Side::Lower };
        let res = per_matrix(&av, (count, n, n), |_, mat| {
            if !compute_v {
                return mat.self_adjoint_eigenvalues(side).map(|l| (l, Vec::new()));
            }
            let f = mat.self_adjoint_eigen(side)?;
            let mut v = Vec::with_capacity(n * n);
            push(&mut v, f.U());
            let l = f.S().column_vector().iter().copied().collect();
            Ok((l, v))
        })?;
        let mut parts = Vec::with_capacity(count);
        for r in res {
            parts.push(r.map_err(|_| {
                Error::linalg("linalg.eigh: The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues (error code: 1).")
            })?);
        }
        let (ls, vs): (Vec<Vec<T>>, Vec<Vec<T>>) = parts.into_iter().unzip();
        let mut lshape = batch_shape(a);
        lshape.push(n);
        let l = shaped(concat(ls.into_iter(), count * n)?, &lshape);
        let v = match compute_v {
            true => Some(shaped(concat(vs.into_iter(), count * n * n)?, a.shape())),
            false => None,
        };
        Ok((l, v))
    })
}

/// LU with partial pivoting of each `[m, n]` matrix, LAPACK's getrf
/// layout: the packed factor (`L` below the diagonal, its unit diagonal
/// implied, `U` on and above), the 1-based row interchanges `ipiv`
/// (`k = min(m, n)` per matrix: row `i` was swapped with row `ipiv[i] - 1`,
/// in order) and info.
pub fn lu_factor(a: &Strided) -> Result<(Strided, Vec<i64>, Vec<i32>)> {
    real_dispatch!(a.dtype(), T => {
        let (count, m, n) = dims3(a);
        let k = m.min(n);
        let av = to_vec_as::<T>(a)?;
        let res = per_matrix(&av, (count, m, n), |_, mat| {
            let lu = mat.partial_piv_lu();
            let (l, u) = (lu.L(), lu.U());
            let mut packed = Vec::with_capacity(m * n);
            for i in 0..m {
                for j in 0..n {
                    packed.push(if i > j { l[(i, j)] } else { u[(i, j)] });
                }
            }
            // (P A)[i] = A[fwd[i]]: the swaps that bring row fwd[i] to i
            let (fwd, _) = lu.P().arrays();
            let mut at: Vec<usize> = (0..m).collect();
            let mut pos: Vec<usize> = (0..m).collect();
            let mut ipiv = Vec::with_capacity(k);
            for (i, &row) in fwd.iter().enumerate().take(k) {
                let j = pos[row];
                ipiv.push(j as i64 + 1);
                let other = at[i];
                at.swap(i, j);
                pos[other] = j;
                pos[row] = i;
            }
            (packed, ipiv, lu_info(u))
        })?;
        let mut ipiv = Vec::with_capacity(count * k);
        let mut info = Vec::with_capacity(count);
        for r in &res {
            ipiv.extend_from_slice(&r.1);
            info.push(r.2);
        }
        let x = concat(res.into_iter().map(|r| r.0), count * m * n)?;
        Ok((shaped(x, a.shape()), ipiv, info))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mat(v: Vec<f64>, shape: &[usize]) -> Strided {
        Strided::contiguous(f64::wrap(v), shape)
    }
    fn vals(s: &Strided) -> Vec<f64> {
        to_vec_as::<f64>(s).unwrap()
    }

    #[test]
    fn solve_inverse_det_of_a_small_batch() {
        // [[2, 1], [1, 3]] and a singular one
        let a = mat(vec![2., 1., 1., 3., 1., 2., 2., 4.], &[2, 2, 2]);
        let b = mat(vec![1., 2., 1., 2.], &[2, 2, 1]);
        let (x, info) = solve(&a, &b).unwrap();
        let x = vals(&x);
        assert!((x[0] - 0.2).abs() < 1e-12 && (x[1] - 0.6).abs() < 1e-12);
        assert_eq!(info, vec![0, 2]);
        let d = vals(&det(&a).unwrap());
        assert!((d[0] - 5.0).abs() < 1e-12 && d[1] == 0.0);
        // a zero column: exactly singular (no NaN from past the zero pivot)
        let z = mat(vec![0., 1., 2., 0., 3., 4., 0., 5., 7.], &[3, 3]);
        assert_eq!(vals(&det(&z).unwrap()), vec![0.0]);
        assert_eq!(vals(&slogdet(&z).unwrap().1), vec![f64::NEG_INFINITY]);
        let (s, l) = slogdet(&a).unwrap();
        assert_eq!(vals(&s), vec![1.0, 0.0]);
        assert!((vals(&l)[0] - 5f64.ln()).abs() < 1e-12);
        let (inv, info) = inverse(&a).unwrap();
        assert_eq!(info, vec![0, 2]);
        assert!((vals(&inv)[0] - 0.6).abs() < 1e-12);
    }

    #[test]
    fn lu_factor_reconstructs_with_lapack_pivots() {
        let v = vec![1., 2., 3., 4., 5., 6., 7., 8., 10., 2., 1., 0.];
        let a = mat(v.clone(), &[4, 3]);
        let (lu, ipiv, info) = lu_factor(&a).unwrap();
        assert_eq!(info, vec![0]);
        let p = vals(&lu);
        // apply the swaps to A's rows, compare with L U
        let mut rows: Vec<usize> = (0..4).collect();
        for (i, &s) in ipiv.iter().enumerate() {
            rows.swap(i, s as usize - 1);
        }
        for i in 0..4 {
            for j in 0..3 {
                let mut acc = 0.0;
                for t in 0..3 {
                    let l = if i == t {
                        1.0
                    } else if i > t {
                        p[i * 3 + t]
                    } else {
                        0.0
                    };
                    let u = if t <= j { p[t * 3 + j] } else { 0.0 };
                    acc += l * u;
                }
                assert!((acc - v[rows[i] * 3 + j]).abs() < 1e-12, "{i} {j}");
            }
        }
    }

    #[test]
    fn cholesky_reports_the_failing_minor() {
        let a = mat(vec![4., 2., 2., 3., 1., 0., 0., -1.], &[2, 2, 2]);
        let (l, info) = cholesky(&a, false).unwrap();
        assert_eq!(info, vec![0, 2]);
        let l = vals(&l);
        assert_eq!(&l[..3], &[2.0, 0.0, 1.0]);
        assert!((l[3] - 2f64.sqrt()).abs() < 1e-15);
    }

    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let n = 24;
        let v: Vec<f64> = (0..64 * n * n)
            .map(|i| ((i * 7919) % 1009) as f64 / 1009.0 - 0.5)
            .collect();
        let a = mat(v, &[64, n, n]);
        let run = || {
            let (u, s, vh) = svd(&a, false, true).unwrap();
            let (q, r) = qr(&a, false, true).unwrap();
            (
                vals(&u.unwrap()),
                vals(&s),
                vals(&vh.unwrap()),
                vals(&q.unwrap()),
                vals(&r),
                vals(&inverse(&a).unwrap().0),
            )
        };
        let before = crate::parallel::num_threads();
        crate::parallel::set_num_threads(1);
        let one = run();
        crate::parallel::set_num_threads(3);
        let three = run();
        crate::parallel::set_num_threads(before);
        assert!(one == three);
    }
}
