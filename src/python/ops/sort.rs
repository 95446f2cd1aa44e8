//! sort, argsort, msort, topk and kthvalue: Tensor methods and module
//! functions; the pairs come back as torch.return_types namedtuples.

use crate::python::core::args::values_indices;
use crate::python::core::bind::bind_methods;
use crate::python::core::tensor::{wrap, PyTensor};
use pyo3::prelude::*;

bind_methods! { sort_fns, register:
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
