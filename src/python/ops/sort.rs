//! sort, argsort, msort, topk and kthvalue: Tensor methods and module
//! functions; the pairs come back as torch.return_types namedtuples.

use crate::python::core::args::values_indices;
use crate::python::core::tensor::{wrap, PyTensor};
use pyo3::prelude::*;

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (dim=-1, descending=false, *, stable=false))]
    fn sort<'py>(
        &self,
        py: Python<'py>,
        dim: i64,
        descending: bool,
        stable: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = stable; // always stable
        values_indices(py, "sort", self.inner.sort(dim, descending)?)
    }
    #[pyo3(signature = (dim=-1, descending=false, *, stable=false))]
    fn argsort(&self, dim: i64, descending: bool, stable: bool) -> PyResult<PyTensor> {
        let _ = stable;
        Ok(wrap(self.inner.argsort(dim, descending)?))
    }
    fn msort(&self) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.sort(0, false)?.0))
    }
    #[pyo3(signature = (k, dim=-1, largest=true, sorted=true))]
    fn topk<'py>(
        &self,
        py: Python<'py>,
        k: i64,
        dim: i64,
        largest: bool,
        sorted: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = sorted; // always sorted
        values_indices(py, "topk", self.inner.topk(k, dim, largest)?)
    }
    #[pyo3(signature = (k, dim=-1, keepdim=false))]
    fn kthvalue<'py>(
        &self,
        py: Python<'py>,
        k: i64,
        dim: i64,
        keepdim: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        values_indices(py, "kthvalue", self.inner.kthvalue(k, dim, keepdim)?)
    }
}

mod functions {
    use super::*;

    #[pyfunction]
    #[pyo3(signature = (input, dim=-1, descending=false, *, stable=false))]
    pub fn sort<'py>(
        py: Python<'py>,
        input: PyRef<'py, PyTensor>,
        dim: i64,
        descending: bool,
        stable: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        input.sort(py, dim, descending, stable)
    }
    #[pyfunction]
    #[pyo3(signature = (input, dim=-1, descending=false, *, stable=false))]
    pub fn argsort(
        input: PyRef<'_, PyTensor>,
        dim: i64,
        descending: bool,
        stable: bool,
    ) -> PyResult<PyTensor> {
        input.argsort(dim, descending, stable)
    }
    #[pyfunction]
    pub fn msort(input: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        input.msort()
    }
    #[pyfunction]
    #[pyo3(signature = (input, k, dim=-1, largest=true, sorted=true))]
    pub fn topk<'py>(
        py: Python<'py>,
        input: PyRef<'py, PyTensor>,
        k: i64,
        dim: i64,
        largest: bool,
        sorted: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        input.topk(py, k, dim, largest, sorted)
    }
    #[pyfunction]
    #[pyo3(signature = (input, k, dim=-1, keepdim=false))]
    pub fn kthvalue<'py>(
        py: Python<'py>,
        input: PyRef<'py, PyTensor>,
        k: i64,
        dim: i64,
        keepdim: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        input.kthvalue(py, k, dim, keepdim)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    use functions::*;
    m.add_function(wrap_pyfunction!(sort, m)?)?;
    m.add_function(wrap_pyfunction!(argsort, m)?)?;
    m.add_function(wrap_pyfunction!(msort, m)?)?;
    m.add_function(wrap_pyfunction!(topk, m)?)?;
    m.add_function(wrap_pyfunction!(kthvalue, m)?)?;
    Ok(())
}
