//! `torch.linalg`'s factorizations and solves (`_C._linalg.*`, re-exported by
//! `ferrograd.linalg`), their top-level and Tensor-method aliases
//! (`torch.det`, `Tensor.inverse`, ...) and their named-tuple results
//! (`torch.return_types.linalg_svd` & co).

use crate::python::core::args::{return_types, tensor_arg};
use crate::python::core::batched::vmap_rule;
use crate::python::core::bind::{bind_functions, bind_methods};
use crate::python::core::errors::LinAlgError;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::IntoPyObjectExt;

/// The named tuples these functions return: (name, fields).
const RESULTS: &[(&str, &[&str])] = &[
    ("linalg_solve_ex", &["result", "info"]),
    ("linalg_inv_ex", &["inverse", "info"]),
    ("linalg_cholesky_ex", &["L", "info"]),
    ("linalg_slogdet", &["sign", "logabsdet"]),
    ("slogdet", &["sign", "logabsdet"]),
    ("linalg_qr", &["Q", "R"]),
    ("qr", &["Q", "R"]),
    ("linalg_svd", &["U", "S", "Vh"]),
    ("svd", &["U", "S", "V"]),
    ("linalg_eigh", &["eigenvalues", "eigenvectors"]),
    (
        "linalg_lstsq",
        &["solution", "residuals", "rank", "singular_values"],
    ),
    ("triangular_solve", &["solution", "cloned_coefficient"]),
    ("linalg_lu_factor", &["LU", "pivots"]),
    ("linalg_lu_factor_ex", &["LU", "pivots", "info"]),
    ("linalg_lu", &["P", "L", "U"]),
    ("lu_unpack", &["P", "L", "U"]),
];

/// `return_types.<kind>(*ts)`.
pub(crate) fn named<'py>(
    py: Python<'py>,
    kind: &str,
    ts: Vec<Tensor>,
) -> PyResult<Bound<'py, PyAny>> {
    let cls = return_types(py)?.getattr(kind)?.cast_into::<PyType>()?;
    let items: Vec<PyTensor> = ts.into_iter().map(wrap).collect();
    cls.call1(PyTuple::new(py, items)?)
}

/// Large inputs run with the GIL released.
fn detached<R: Send>(
    py: Python<'_>,
    t: &Tensor,
    f: impl FnOnce() -> crate::Result<R> + Send,
) -> PyResult<R> {
    if t.numel() >= 1 << 12 {
        Ok(py.detach(f)?)
    } else {
        Ok(f()?)
    }
}

bind_functions! { register_linalg:
    /// `torch.linalg.solve`: X with AX = B (XA = B when `left=False`).
    #[pyo3(signature = (A, B, *, left=true))]
    #[allow(non_snake_case)]
    pub fn solve<'py>(py: Python<'py>, A: &Bound<'py, PyAny>, B: &Bound<'py, PyAny>, left: bool) -> PyResult<Py<PyAny>> {
        vmap_rule!(solve as "linalg.solve", [A, B], [left]);
        let (a, b) = (tensor_arg(A, "linalg.solve", "A", 1)?, tensor_arg(B, "linalg.solve", "B", 2)?);
        wrap(detached(py, &a, || a.linalg_solve(&b, left))?).into_py_any(py)
    }
    /// `torch.linalg.solve_ex`: `(result, info)`.
    #[pyo3(signature = (A, B, *, left=true, check_errors=false))]
    #[allow(non_snake_case)]
    pub fn solve_ex<'py>(py: Python<'py>, A: &Bound<'py, PyAny>, B: &Bound<'py, PyAny>, left: bool, check_errors: bool) -> PyResult<Py<PyAny>> {
        vmap_rule!(solve_ex as "linalg.solve_ex", [A, B], [left, check_errors]);
        let (a, b) = (tensor_arg(A, "linalg.solve_ex", "A", 1)?, tensor_arg(B, "linalg.solve_ex", "B", 2)?);
        let (x, info) = match check_errors {
            true => {
                let x = detached(py, &a, || a.linalg_solve(&b, left))?;
                let info = Tensor::zeros(&x.shape()[..a.ndim().max(2) - 2], crate::DType::I64);
                (x, info)
            }
            false => detached(py, &a, || a.linalg_solve_ex(&b, left))?,
        };
        Ok(named(py, "linalg_solve_ex", vec![x, info])?.unbind())
    }
    /// `torch.linalg.inv`.
    #[allow(non_snake_case)]
    @vmap(Trailing(2))
    pub fn inv(py: Python<'_>, A: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let a = A.inner.clone();
        Ok(wrap(detached(py, &a, || a.linalg_inv())?))
    }
    /// `torch.linalg.inv_ex`: `(inverse, info)`.
    #[pyo3(signature = (A, *, check_errors=false))]
    #[allow(non_snake_case)]
    @vmap(Trailing(2))
    pub fn inv_ex<'py>(py: Python<'py>, A: PyRef<'_, PyTensor>, check_errors: bool) -> PyResult<Bound<'py, PyAny>> {
        let a = A.inner.clone();
        let (inv, info) = detached(py, &a, || a.linalg_inv_ex())?;
        if check_errors {
            a.linalg_inv_check(&info)?;
        }
        named(py, "linalg_inv_ex", vec![inv, info])
    }
    /// `torch.linalg.det`.
    #[allow(non_snake_case)]
    @vmap(Trailing(2))
    pub fn det(A: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(wrap(A.inner.linalg_det()?))
    }
    /// `torch.linalg.slogdet`: `(sign, logabsdet)`.
    #[allow(non_snake_case)]
    @vmap(Trailing(2))
    pub fn slogdet<'py>(py: Python<'py>, A: PyRef<'_, PyTensor>) -> PyResult<Bound<'py, PyAny>> {
        let (s, l) = A.inner.linalg_slogdet()?;
        named(py, "linalg_slogdet", vec![s, l])
    }
    /// `torch.linalg.cholesky`.
    #[pyo3(signature = (A, *, upper=false))]
    #[allow(non_snake_case)]
    @vmap(Trailing(2))
    pub fn cholesky(py: Python<'_>, A: PyRef<'_, PyTensor>, upper: bool) -> PyResult<PyTensor> {
        let a = A.inner.clone();
        Ok(wrap(detached(py, &a, || a.linalg_cholesky(upper))?))
    }
    /// `torch.linalg.cholesky_ex`: `(L, info)`.
    #[pyo3(signature = (A, *, upper=false, check_errors=false))]
    #[allow(non_snake_case)]
    @vmap(Trailing(2))
    pub fn cholesky_ex<'py>(py: Python<'py>, A: PyRef<'_, PyTensor>, upper: bool, check_errors: bool) -> PyResult<Bound<'py, PyAny>> {
        let a = A.inner.clone();
        let (l, info) = match check_errors {
            true => {
                let l = detached(py, &a, || a.linalg_cholesky(upper))?;
                let info = Tensor::zeros(&a.shape()[..a.ndim() - 2], crate::DType::I64);
                (l, info)
            }
            false => detached(py, &a, || a.linalg_cholesky_ex(upper))?,
        };
        named(py, "linalg_cholesky_ex", vec![l, info])
    }
    /// `torch.linalg.solve_triangular`.
    #[pyo3(signature = (A, B, *, upper, left=true, unitriangular=false))]
    #[allow(non_snake_case)]
    pub fn solve_triangular<'py>(py: Python<'py>, A: &Bound<'py, PyAny>, B: &Bound<'py, PyAny>, upper: bool, left: bool, unitriangular: bool) -> PyResult<Py<PyAny>> {
        vmap_rule!(solve_triangular as "linalg.solve_triangular", [A, B], [upper, left, unitriangular]);
        let name = "linalg.solve_triangular";
        let (a, b) = (tensor_arg(A, name, "A", 1)?, tensor_arg(B, name, "B", 2)?);
        wrap(detached(py, &a, || a.linalg_solve_triangular(&b, upper, left, unitriangular))?).into_py_any(py)
    }
    /// `torch.linalg.qr`: `(Q, R)`.
    #[pyo3(signature = (A, mode="reduced"))]
    #[allow(non_snake_case)]
    @vmap(Trailing(2))
    pub fn qr<'py>(py: Python<'py>, A: PyRef<'_, PyTensor>, mode: &str) -> PyResult<Bound<'py, PyAny>> {
        let a = A.inner.clone();
        let mode = mode.to_string();
        let (q, r) = detached(py, &a, || a.linalg_qr(&mode))?;
        named(py, "linalg_qr", vec![q, r])
    }
    /// `torch.linalg.svd`: `(U, S, Vh)`.
    #[pyo3(signature = (A, full_matrices=true, *, driver=None))]
    #[allow(non_snake_case)]
    @vmap(Trailing(2))
    pub fn svd<'py>(py: Python<'py>, A: PyRef<'_, PyTensor>, full_matrices: bool, driver: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        check_driver(driver)?;
        let a = A.inner.clone();
        let (u, s, vh) = detached(py, &a, || a.linalg_svd(full_matrices))?;
        named(py, "linalg_svd", vec![u, s, vh])
    }
    /// `torch.linalg.svdvals`.
    #[pyo3(signature = (A, *, driver=None))]
    #[allow(non_snake_case)]
    @vmap(Trailing(2))
    pub fn svdvals(py: Python<'_>, A: PyRef<'_, PyTensor>, driver: Option<&str>) -> PyResult<PyTensor> {
        check_driver(driver)?;
        let a = A.inner.clone();
        Ok(wrap(detached(py, &a, || a.linalg_svdvals())?))
    }
    /// `torch.linalg.eigh`: `(eigenvalues, eigenvectors)`.
    #[pyo3(signature = (A, UPLO="L"))]
    #[allow(non_snake_case)]
    @vmap(Trailing(2))
    pub fn eigh<'py>(py: Python<'py>, A: PyRef<'_, PyTensor>, UPLO: &str) -> PyResult<Bound<'py, PyAny>> {
        let a = A.inner.clone();
        let uplo = UPLO.to_string();
        let (l, v) = detached(py, &a, || a.linalg_eigh(&uplo))?;
        named(py, "linalg_eigh", vec![l, v])
    }
    /// `torch.linalg.eigvalsh`.
    #[pyo3(signature = (A, UPLO="L"))]
    #[allow(non_snake_case)]
    @vmap(Trailing(2))
    pub fn eigvalsh(py: Python<'_>, A: PyRef<'_, PyTensor>, UPLO: &str) -> PyResult<PyTensor> {
        let a = A.inner.clone();
        let uplo = UPLO.to_string();
        Ok(wrap(detached(py, &a, || a.linalg_eigvalsh(&uplo))?))
    }
}

/// torch's check of `driver=` (a CUDA-only option).
fn check_driver(driver: Option<&str>) -> PyResult<()> {
    match driver {
        None => Ok(()),
        Some(_) => Err(pyo3::exceptions::PyRuntimeError::new_err(
            "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend.",
        )),
    }
}

impl Tensor {
    fn linalg_inv_check(&self, info: &Tensor) -> crate::Result<()> {
        crate::ops::decomp::check_info("linalg.inv", &info.to_vec::<i64>(), self.ndim() > 2, |v| {
            format!("The diagonal element {v} is zero, the inversion could not be completed because the input matrix is singular.")
        })
    }
}

bind_methods! { decomp_fns, register_fns:
    /// `torch.det`.
    fn det(&self) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.linalg_det()?))
    }
    /// `torch.logdet`.
    fn logdet(&self) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.logdet()?))
    }
    /// `torch.slogdet`: `(sign, logabsdet)`.
    fn slogdet<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (s, l) = self.inner.linalg_slogdet()?;
        named(py, "slogdet", vec![s, l])
    }
    /// `torch.inverse`.
    fn inverse(&self) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.linalg_inv()?))
    }
    /// `torch.cholesky` (deprecated in torch for `linalg.cholesky`).
    #[pyo3(signature = (upper=false))]
    fn cholesky(&self, upper: bool) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.linalg_cholesky(upper)?))
    }
    /// `torch.svd`: `(U, S, V)` (V, not V^T; reduced unless `some=False`).
    #[pyo3(signature = (some=true, compute_uv=true))]
    fn svd<'py>(&self, py: Python<'py>, some: bool, compute_uv: bool) -> PyResult<Bound<'py, PyAny>> {
        let (u, s, v) = self.inner.svd_v(some, compute_uv)?;
        named(py, "svd", vec![u, s, v])
    }
    /// `torch.qr` (deprecated in torch for `linalg.qr`).
    #[pyo3(signature = (some=true))]
    fn qr<'py>(&self, py: Python<'py>, some: bool) -> PyResult<Bound<'py, PyAny>> {
        let (q, r) = self.inner.linalg_qr(if some { "reduced" } else { "complete" })?;
        named(py, "qr", vec![q, r])
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let rt = return_types(py)?;
    let namedtuple = py.import("collections")?.getattr("namedtuple")?;
    for (name, fields) in RESULTS {
        if rt.hasattr(*name)? {
            continue;
        }
        let kwargs = PyDict::new(py);
        kwargs.set_item("module", "ferrograd.return_types")?;
        let cls = namedtuple.call((*name, fields.to_vec()), Some(&kwargs))?;
        rt.add(*name, cls)?;
    }
    register_fns(m)?;
    let linalg = m.getattr("_linalg")?.cast_into::<PyModule>()?;
    register_linalg(&linalg)?;
    linalg.add("LinAlgError", py.get_type::<LinAlgError>())?;
    Ok(())
}
