//! The composite part of `torch.linalg` (`ops::decomp_more`): pinv, lstsq,
//! matrix_power/exp, the matrix norms, cond, matrix_rank, multi_dot,
//! vecdot, vander, tensorinv/tensorsolve, matmul and diagonal, and the
//! top-level `pinverse`, `matrix_power`, `matrix_exp`, `cholesky_solve`,
//! `cholesky_inverse`, `triangular_solve` (functions and Tensor methods).
// torch's parameter names (`A`, `B`, `N`) are the Python keywords.
#![allow(non_snake_case)]

use super::decomp::named;
use crate::ops::decomp_more::{multi_dot as multi_dot_op, MatrixOrd};
use crate::python::core::args::tensor_arg;
use crate::python::core::args::{dims_arg, tensor_list};
use crate::python::core::batched::{self, tensor_input, vmap_rule};
use crate::python::core::bind::{bind_functions, bind_methods};
use crate::python::core::dtype::PyDType;
use crate::python::core::tensor::{wrap, PyTensor};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

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
    pub fn lstsq<'py>(py: Python<'py>, A: &Bound<'py, PyAny>, B: &Bound<'py, PyAny>, rcond: Option<f64>, driver: Option<&str>) -> PyResult<Py<PyAny>> {
        vmap_rule!(lstsq as "linalg.lstsq", [A, B], [rcond, driver]);
        let (a, b) = (tensor_arg(A, "linalg.lstsq", "A", 1)?, tensor_arg(B, "linalg.lstsq", "B", 2)?);
        let (x, r, k, s) = a.linalg_lstsq(&b, rcond, driver)?;
        Ok(named(py, "linalg_lstsq", vec![x, r, k, s])?.unbind())
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
    pub fn matrix_norm<'py>(A: &Bound<'py, PyAny>, ord: Option<&Bound<'py, PyAny>>, dim: Option<&Bound<'py, PyAny>>, keepdim: bool, dtype: Option<PyDType>) -> PyResult<Py<PyAny>> {
        vmap_rule!(matrix_norm as "linalg.matrix_norm", [A], [ord, dim, keepdim, dtype]);
        let A = tensor_input(A, "linalg.matrix_norm")?.borrow();
        let ord = parse_ord(ord)?.unwrap_or(MatrixOrd::Fro);
        let dims = match dim.filter(|d| !d.is_none()) {
            Some(d) => two_dims(d)?,
            None => [-2, -1],
        };
        wrap(A.inner.matrix_norm(ord, dims, keepdim, dtype.map(|d| d.dtype))?).into_py_any(A.py())
    }
    /// `torch.linalg.norm`.
    #[pyo3(signature = (A, ord=None, dim=None, keepdim=false, *, dtype=None))]
    pub fn norm<'py>(A: &Bound<'py, PyAny>, ord: Option<&Bound<'py, PyAny>>, dim: Option<&Bound<'py, PyAny>>, keepdim: bool, dtype: Option<PyDType>) -> PyResult<Py<PyAny>> {
        vmap_rule!(norm as "linalg.norm", [A], [ord, dim, keepdim, dtype]);
        let A = tensor_input(A, "linalg.norm")?.borrow();
        let ord = parse_ord(ord)?;
        let dims = dim.filter(|d| !d.is_none()).map(|d| dims_arg(Some(d))).transpose()?;
        wrap(A.inner.linalg_norm(ord, dims.as_deref(), keepdim, dtype.map(|d| d.dtype))?).into_py_any(A.py())
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
    pub fn multi_dot(tensors: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if let Some(r) = batched::multi_dot(tensors)? {
            return Ok(r);
        }
        let ts = tensor_list(tensors, "multi_dot")?;
        wrap(multi_dot_op(&ts)?).into_py_any(tensors.py())
    }
    /// `torch.linalg.vecdot`.
    #[pyo3(signature = (x, y, *, dim=-1))]
    pub fn vecdot<'py>(x: &Bound<'py, PyAny>, y: &Bound<'py, PyAny>, dim: i64) -> PyResult<Py<PyAny>> {
        vmap_rule!(vecdot as "linalg.vecdot", [x, y], [dim]);
        let py = x.py();
        let (x, y) = (tensor_arg(x, "linalg.vecdot", "x", 1)?, tensor_arg(y, "linalg.vecdot", "y", 2)?);
        wrap(x.vecdot(&y, dim)?).into_py_any(py)
    }
    /// `torch.linalg.vander`.
    #[pyo3(signature = (x, *, N=None))]
    pub fn vander<'py>(x: &Bound<'py, PyAny>, N: Option<i64>) -> PyResult<Py<PyAny>> {
        vmap_rule!(vander as "linalg.vander", [x], [N]);
        wrap(tensor_input(x, "linalg.vander")?.borrow().inner.vander(N)?).into_py_any(x.py())
    }
    /// `torch.linalg.tensorinv`.
    #[pyo3(signature = (A, ind=2))]
    pub fn tensorinv<'py>(A: &Bound<'py, PyAny>, ind: i64) -> PyResult<Py<PyAny>> {
        if batched::is_batched(A) {
            // the batch dims lead: each sample's tensor inverted
            return batched::on_alike(&[A], |t, nb| t[0].tensorinv_batched(ind, nb));
        }
        wrap(tensor_input(A, "linalg.tensorinv")?.borrow().inner.tensorinv(ind)?).into_py_any(A.py())
    }
    /// `torch.linalg.tensorsolve`.
    #[pyo3(signature = (A, B, dims=None))]
    pub fn tensorsolve<'py>(A: &Bound<'py, PyAny>, B: &Bound<'py, PyAny>, dims: Option<&Bound<'py, PyAny>>) -> PyResult<Py<PyAny>> {
        let d = dims_arg(dims)?;
        if batched::any_batched(&[A, B]) {
            return batched::on_alike(&[A, B], |t, nb| t[0].tensorsolve_batched(&t[1], Some(&d), nb));
        }
        let (a, b) = (tensor_arg(A, "linalg.tensorsolve", "A", 1)?, tensor_arg(B, "linalg.tensorsolve", "B", 2)?);
        wrap(a.tensorsolve(&b, Some(&d))?).into_py_any(A.py())
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
    pub fn lu_solve<'py>(LU: &Bound<'py, PyAny>, pivots: &Bound<'py, PyAny>, B: &Bound<'py, PyAny>, left: bool, adjoint: bool) -> PyResult<Py<PyAny>> {
        vmap_rule!(lu_solve as "linalg.lu_solve", [LU, pivots, B], [left, adjoint]);
        let name = "linalg.lu_solve";
        let (lu, p) = (tensor_arg(LU, name, "LU", 1)?, tensor_arg(pivots, name, "pivots", 2)?);
        let b = tensor_arg(B, name, "B", 3)?;
        wrap(lu.linalg_lu_solve(&p, &b, left, adjoint)?).into_py_any(LU.py())
    }
    /// `torch.linalg.matmul` (`torch.matmul`).
    #[pyo3(name = "matmul")]
    pub fn linalg_matmul<'py>(input: &Bound<'py, PyAny>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        if batched::any_batched(&[input, other]) {
            return batched::matmul_function("matmul", input, other);
        }
        let (a, b) = (tensor_arg(input, "matmul", "input", 1)?, tensor_arg(other, "matmul", "other", 2)?);
        wrap(a.matmul(&b)?).into_py_any(input.py())
    }
    /// `torch.linalg.diagonal`: the diagonal over the last two dims.
    #[pyo3(name = "diagonal", signature = (A, *, offset=0, dim1=-2, dim2=-1))]
    pub fn linalg_diagonal<'py>(A: &Bound<'py, PyAny>, offset: i64, dim1: i64, dim2: i64) -> PyResult<Py<PyAny>> {
        vmap_rule!(linalg_diagonal as "linalg.diagonal", [A], [offset, dim1, dim2]);
        wrap(tensor_input(A, "linalg.diagonal")?.borrow().inner.diagonal(offset, dim1, dim2)?).into_py_any(A.py())
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
    fn cholesky_solve(&self, input2: &Bound<'_, PyAny>, upper: bool) -> PyResult<PyTensor> {
        let l = tensor_arg(input2, "cholesky_solve", "input2", 2)?;
        Ok(wrap(self.inner.cholesky_solve(&l, upper)?))
    }
    /// `torch.cholesky_inverse(L)`.
    #[pyo3(signature = (upper=false))]
    fn cholesky_inverse(&self, upper: bool) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.cholesky_inverse(upper)?))
    }
    /// `torch.triangular_solve(b, A)`: `(solution, cloned_coefficient)`.
    #[pyo3(signature = (A, upper=true, transpose=false, unitriangular=false))]
    fn triangular_solve<'py>(&self, py: Python<'py>, A: &Bound<'_, PyAny>, upper: bool, transpose: bool, unitriangular: bool) -> PyResult<Bound<'py, PyAny>> {
        let A = tensor_arg(A, "triangular_solve", "A", 2)?;
        let (x, a) = self.inner.triangular_solve(&A, upper, transpose, unitriangular)?;
        named(py, "triangular_solve", vec![x, a])
    }
}

bind_functions! { register_top:
    /// `torch.lu_unpack`: `(P, L, U)` from `linalg.lu_factor`'s result.
    #[pyo3(signature = (LU_data, LU_pivots, unpack_data=true, unpack_pivots=true))]
    pub fn lu_unpack<'py>(py: Python<'py>, LU_data: &Bound<'py, PyAny>, LU_pivots: &Bound<'py, PyAny>, unpack_data: bool, unpack_pivots: bool) -> PyResult<Py<PyAny>> {
        if unpack_data && unpack_pivots {
            // (an empty tensor left out has no batch dims: the fallback)
            vmap_rule!(lu_unpack as "lu_unpack", [LU_data, LU_pivots], [unpack_data, unpack_pivots]);
        }
        let lu = tensor_arg(LU_data, "lu_unpack", "LU_data", 1)?;
        let piv = tensor_arg(LU_pivots, "lu_unpack", "LU_pivots", 2)?;
        let (p, l, u) = crate::ops::lu::unpack(&lu, &piv)?;
        let empty = || crate::Tensor::zeros(&[0], lu.dtype());
        let (l, u) = if unpack_data { (l, u) } else { (empty(), empty()) };
        let p = if unpack_pivots { p } else { empty() };
        Ok(named(py, "lu_unpack", vec![p, l, u])?.unbind())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_fns(m)?;
    register_top(m)?;
    let linalg = m.getattr("_linalg")?.cast_into::<PyModule>()?;
    register_linalg_more(&linalg)
}
