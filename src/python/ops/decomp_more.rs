//! The composite part of `torch.linalg` (`ops::decomp_more`): pinv, lstsq,
//! matrix_power/exp, the matrix norms, cond, matrix_rank, multi_dot,
//! vecdot, vander, tensorinv/tensorsolve, matmul and diagonal, and the
//! top-level `pinverse`, `matrix_power`, `matrix_exp`, `cholesky_solve`,
//! `cholesky_inverse`, `triangular_solve` (functions and Tensor methods).
// torch's parameter names (`A`, `B`, `N`) are the Python keywords.
#![allow(non_snake_case)]

use super::decomp::named;
use crate::ops::decomp_more::{multi_dot as multi_dot_op, MatrixOrd};
use crate::python::core::args::{dims_arg, tensor_list};
use crate::python::core::bind::{bind_functions, bind_methods};
use crate::python::core::dtype::PyDType;
use crate::python::core::tensor::{wrap, PyTensor};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// A norm order: "fro", "nuc" or a number (None stays None).
fn parse_ord(ord: Option<&Bound<'_, PyAny>>) -> PyResult<Option<MatrixOrd>> {
    let Some(o) = ord.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if let Ok(s) = o.extract::<String>() {
        return match s.as_str() {
            "fro" => Ok(Some(MatrixOrd::Fro)),
            "nuc" => Ok(Some(MatrixOrd::Nuc)),
            _ => Err(PyRuntimeError::new_err(format!(
                "linalg.matrix_norm: Order {s} not supported."
            ))),
        };
    }
    Ok(Some(MatrixOrd::P(o.extract::<f64>()?)))
}

fn two_dims(dim: &Bound<'_, PyAny>) -> PyResult<[i64; 2]> {
    let d = dims_arg(Some(dim))?;
    match d.as_slice() {
        [a, b] => Ok([*a, *b]),
        _ => Err(PyRuntimeError::new_err(format!(
            "linalg.matrix_norm: dim must be a 2-tuple. Got {d:?}"
        ))),
    }
}

bind_functions! { register_linalg_more:
    /// `torch.linalg.pinv`.
    #[pyo3(signature = (A, rcond=None, hermitian=false, *, atol=None, rtol=None))]
    @vmap(Trailing(2))
    pub fn pinv(A: PyRef<'_, PyTensor>, rcond: Option<f64>, hermitian: bool, atol: Option<f64>, rtol: Option<f64>) -> PyResult<PyTensor> {
        Ok(wrap(A.inner.linalg_pinv(atol, rtol.or(rcond), hermitian)?))
    }
    /// `torch.linalg.lstsq`: `(solution, residuals, rank, singular_values)`.
    #[pyo3(signature = (A, B, rcond=None, *, driver=None))]
    pub fn lstsq<'py>(py: Python<'py>, A: PyRef<'_, PyTensor>, B: PyRef<'_, PyTensor>, rcond: Option<f64>, driver: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let (x, r, k, s) = A.inner.linalg_lstsq(&B.inner, rcond, driver)?;
        named(py, "linalg_lstsq", vec![x, r, k, s])
    }
    /// `torch.linalg.matrix_power`.
    #[pyo3(name = "matrix_power")]
    @vmap(Trailing(2))
    pub fn linalg_matrix_power(A: PyRef<'_, PyTensor>, n: i64) -> PyResult<PyTensor> {
        Ok(wrap(A.inner.matrix_power(n)?))
    }
    /// `torch.linalg.matrix_exp`.
    #[pyo3(name = "matrix_exp")]
    @vmap(Trailing(2))
    pub fn linalg_matrix_exp(A: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(wrap(A.inner.matrix_exp()?))
    }
    /// `torch.linalg.matrix_norm`.
    #[pyo3(signature = (A, ord=None, dim=None, keepdim=false, *, dtype=None))]
    pub fn matrix_norm(A: PyRef<'_, PyTensor>, ord: Option<&Bound<'_, PyAny>>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, dtype: Option<PyDType>) -> PyResult<PyTensor> {
        let ord = parse_ord(ord)?.unwrap_or(MatrixOrd::Fro);
        let dims = match dim.filter(|d| !d.is_none()) {
            Some(d) => two_dims(d)?,
            None => [-2, -1],
        };
        Ok(wrap(A.inner.matrix_norm(ord, dims, keepdim, dtype.map(|d| d.dtype))?))
    }
    /// `torch.linalg.norm`.
    #[pyo3(signature = (A, ord=None, dim=None, keepdim=false, *, dtype=None))]
    pub fn norm(A: PyRef<'_, PyTensor>, ord: Option<&Bound<'_, PyAny>>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, dtype: Option<PyDType>) -> PyResult<PyTensor> {
        let ord = parse_ord(ord)?;
        let dims = dim.filter(|d| !d.is_none()).map(|d| dims_arg(Some(d))).transpose()?;
        Ok(wrap(A.inner.linalg_norm(ord, dims.as_deref(), keepdim, dtype.map(|d| d.dtype))?))
    }
    /// `torch.linalg.cond`.
    #[pyo3(signature = (A, p=None))]
    @vmap(Trailing(2))
    pub fn cond(A: PyRef<'_, PyTensor>, p: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        Ok(wrap(A.inner.linalg_cond(parse_ord(p)?)?))
    }
    /// `torch.linalg.matrix_rank`.
    #[pyo3(signature = (A, tol=None, hermitian=false, *, atol=None, rtol=None))]
    @vmap(Trailing(2))
    pub fn matrix_rank(A: PyRef<'_, PyTensor>, tol: Option<f64>, hermitian: bool, atol: Option<f64>, rtol: Option<f64>) -> PyResult<PyTensor> {
        let (atol, rtol) = match tol {
            Some(t) => (Some(t), Some(0.0)),
            None => (atol, rtol),
        };
        Ok(wrap(A.inner.matrix_rank(atol, rtol, hermitian)?))
    }
    /// `torch.linalg.multi_dot`.
    pub fn multi_dot(tensors: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let ts = tensor_list(tensors, "multi_dot")?;
        Ok(wrap(multi_dot_op(&ts)?))
    }
    /// `torch.linalg.vecdot`.
    #[pyo3(signature = (x, y, *, dim=-1))]
    pub fn vecdot(x: PyRef<'_, PyTensor>, y: PyRef<'_, PyTensor>, dim: i64) -> PyResult<PyTensor> {
        Ok(wrap(x.inner.vecdot(&y.inner, dim)?))
    }
    /// `torch.linalg.vander`.
    #[pyo3(signature = (x, *, N=None))]
    pub fn vander(x: PyRef<'_, PyTensor>, N: Option<i64>) -> PyResult<PyTensor> {
        Ok(wrap(x.inner.vander(N)?))
    }
    /// `torch.linalg.tensorinv`.
    #[pyo3(signature = (A, ind=2))]
    pub fn tensorinv(A: PyRef<'_, PyTensor>, ind: i64) -> PyResult<PyTensor> {
        Ok(wrap(A.inner.tensorinv(ind)?))
    }
    /// `torch.linalg.tensorsolve`.
    #[pyo3(signature = (A, B, dims=None))]
    pub fn tensorsolve(A: PyRef<'_, PyTensor>, B: PyRef<'_, PyTensor>, dims: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let d = dims_arg(dims)?;
        Ok(wrap(A.inner.tensorsolve(&B.inner, Some(&d))?))
    }
    /// `torch.linalg.lu_factor`: `(LU, pivots)`.
    #[pyo3(signature = (A, *, pivot=true))]
    @vmap(Trailing(2))
    pub fn lu_factor<'py>(py: Python<'py>, A: PyRef<'_, PyTensor>, pivot: bool) -> PyResult<Bound<'py, PyAny>> {
        let (lu, piv) = A.inner.linalg_lu_factor(pivot)?;
        named(py, "linalg_lu_factor", vec![lu, piv])
    }
    /// `torch.linalg.lu_factor_ex`: `(LU, pivots, info)`.
    #[pyo3(signature = (A, *, pivot=true, check_errors=false))]
    @vmap(Trailing(2))
    pub fn lu_factor_ex<'py>(py: Python<'py>, A: PyRef<'_, PyTensor>, pivot: bool, check_errors: bool) -> PyResult<Bound<'py, PyAny>> {
        if check_errors {
            A.inner.linalg_lu_factor(pivot)?;
        }
        let (lu, piv, info) = A.inner.linalg_lu_factor_ex(pivot)?;
        named(py, "linalg_lu_factor_ex", vec![lu, piv, info])
    }
    /// `torch.linalg.lu`: `(P, L, U)` with `A = P L U`.
    #[pyo3(signature = (A, *, pivot=true))]
    @vmap(Trailing(2))
    pub fn lu<'py>(py: Python<'py>, A: PyRef<'_, PyTensor>, pivot: bool) -> PyResult<Bound<'py, PyAny>> {
        let (p, l, u) = A.inner.linalg_lu(pivot)?;
        named(py, "linalg_lu", vec![p, l, u])
    }
    /// `torch.linalg.lu_solve`: X with A X = B from A's LU factorization.
    #[pyo3(signature = (LU, pivots, B, *, left=true, adjoint=false))]
    pub fn lu_solve(LU: PyRef<'_, PyTensor>, pivots: PyRef<'_, PyTensor>, B: PyRef<'_, PyTensor>, left: bool, adjoint: bool) -> PyResult<PyTensor> {
        Ok(wrap(LU.inner.linalg_lu_solve(&pivots.inner, &B.inner, left, adjoint)?))
    }
    /// `torch.linalg.matmul` (`torch.matmul`).
    #[pyo3(name = "matmul")]
    pub fn linalg_matmul(input: PyRef<'_, PyTensor>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(wrap(input.inner.matmul(&other.inner)?))
    }
    /// `torch.linalg.diagonal`: the diagonal over the last two dims.
    #[pyo3(name = "diagonal", signature = (A, *, offset=0, dim1=-2, dim2=-1))]
    pub fn linalg_diagonal(A: PyRef<'_, PyTensor>, offset: i64, dim1: i64, dim2: i64) -> PyResult<PyTensor> {
        Ok(wrap(A.inner.diagonal(offset, dim1, dim2)?))
    }
}

bind_methods! { decomp_more_fns, register_fns:
    /// `torch.pinverse`: `linalg.pinv` with `rtol=rcond`.
    #[pyo3(signature = (rcond=1e-15))]
    fn pinverse(&self, rcond: f64) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.linalg_pinv(None, Some(rcond), false)?))
    }
    /// `torch.matrix_power`.
    fn matrix_power(&self, n: i64) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.matrix_power(n)?))
    }
    /// `torch.matrix_exp`.
    fn matrix_exp(&self) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.matrix_exp()?))
    }
    /// `torch.cholesky_solve(B, L)`.
    #[pyo3(signature = (input2, upper=false))]
    fn cholesky_solve(&self, input2: PyRef<'_, PyTensor>, upper: bool) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.cholesky_solve(&input2.inner, upper)?))
    }
    /// `torch.cholesky_inverse(L)`.
    #[pyo3(signature = (upper=false))]
    fn cholesky_inverse(&self, upper: bool) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.cholesky_inverse(upper)?))
    }
    /// `torch.triangular_solve(b, A)`: `(solution, cloned_coefficient)`.
    #[pyo3(signature = (A, upper=true, transpose=false, unitriangular=false))]
    fn triangular_solve<'py>(&self, py: Python<'py>, A: PyRef<'_, PyTensor>, upper: bool, transpose: bool, unitriangular: bool) -> PyResult<Bound<'py, PyAny>> {
        let (x, a) = self.inner.triangular_solve(&A.inner, upper, transpose, unitriangular)?;
        named(py, "triangular_solve", vec![x, a])
    }
}

bind_functions! { register_top:
    /// `torch.lu_unpack`: `(P, L, U)` from `linalg.lu_factor`'s result.
    #[pyo3(signature = (LU_data, LU_pivots, unpack_data=true, unpack_pivots=true))]
    pub fn lu_unpack<'py>(py: Python<'py>, LU_data: PyRef<'_, PyTensor>, LU_pivots: PyRef<'_, PyTensor>, unpack_data: bool, unpack_pivots: bool) -> PyResult<Bound<'py, PyAny>> {
        let (p, l, u) = crate::ops::lu::unpack(&LU_data.inner, &LU_pivots.inner)?;
        let empty = || crate::Tensor::zeros(&[0], LU_data.inner.dtype());
        let (l, u) = if unpack_data { (l, u) } else { (empty(), empty()) };
        let p = if unpack_pivots { p } else { empty() };
        named(py, "lu_unpack", vec![p, l, u])
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_fns(m)?;
    register_top(m)?;
    let linalg = m.getattr("_linalg")?.cast_into::<PyModule>()?;
    register_linalg_more(&linalg)
}
