//! Logarithms and exponentials in other bases and the error functions (the
//! table of `crate::ops::special`), xlogy and logaddexp.

use crate::ops::special::{special_binary_ops, special_unary_ops};
use crate::python::core::bind::{bind_binary_ops, bind_unary_float_ops};
use crate::python::core::tensor::{wrap, PyTensor};
use pyo3::prelude::*;

special_unary_ops!(bind_unary_float_ops);

special_binary_ops!(bind_binary_ops);

#[pymethods]
impl PyTensor {
    fn logaddexp(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.logaddexp(&other.inner)?))
    }
    fn logaddexp2(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.logaddexp2(&other.inner)?))
    }
}

mod functions {
    use super::*;

    #[pyfunction]
    pub fn logaddexp(input: PyRef<'_, PyTensor>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        input.logaddexp(other)
    }
    #[pyfunction]
    pub fn logaddexp2(
        input: PyRef<'_, PyTensor>,
        other: PyRef<'_, PyTensor>,
    ) -> PyResult<PyTensor> {
        input.logaddexp2(other)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_table(m)?;
    register_binary_table(m)?;
    m.add_function(wrap_pyfunction!(functions::logaddexp, m)?)?;
    m.add_function(wrap_pyfunction!(functions::logaddexp2, m)?)
}
