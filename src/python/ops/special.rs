//! Logarithms and exponentials in other bases and the error functions (the
//! table of `crate::ops::special`), xlogy and logaddexp.

use crate::ops::special::{special_binary_ops, special_unary_ops};
use crate::python::core::bind::{bind_binary_ops, bind_methods, bind_unary_float_ops};
use crate::python::core::tensor::{wrap, PyTensor};
use pyo3::prelude::*;

special_unary_ops!(bind_unary_float_ops);

special_binary_ops!(bind_binary_ops);

bind_methods! { special_fns, register_fns:
    fn logaddexp(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.logaddexp(&other.inner)?))
    }
    fn logaddexp2(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.logaddexp2(&other.inner)?))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_fns(m)?;
    register_table(m)?;
    register_binary_table(m)
}
