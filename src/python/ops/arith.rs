//! Arithmetic from Python: the binary table of `crate::ops::arith` (add,
//! sub, mul, div's `true_divide`, their in-place forms and operators).
//! `div`/`divide` (with `rounding_mode=`) are written in `rounding.rs`.

use crate::ops::arith::arith_ops;
use crate::python::core::bind::bind_binary_ops;

arith_ops!(bind_binary_ops);

pub fn register(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
    register_binary_table(m)
}
