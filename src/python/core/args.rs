//! Every argument converter of the bindings: Python values to the Rust
//! types the ops take (shapes, dims, scalars, operands), and back.

use crate::python::core::tensor::{tensor_or_scalar, PyTensor};
use crate::tensor::Scalar;
use crate::Tensor;
use pyo3::prelude::*;

/// A shape as Python sees it: a `ferrograd.Size`.
pub(crate) fn size<'py>(py: Python<'py>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    crate::python::create::make_size(py, shape)
}

pub(crate) fn scalar_to_py(py: Python<'_>, s: Scalar) -> PyResult<Bound<'_, PyAny>> {
    Ok(match s {
        Scalar::Bool(b) => pyo3::types::PyBool::new(py, b).to_owned().into_any(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any(),
        Scalar::Float(f) => f.into_pyobject(py)?.into_any(),
    })
}

/// `dim=` as torch takes it: None, an int, or a sequence of ints.
pub(crate) fn dims_arg(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<i64>> {
    match dim {
        None => Ok(Vec::new()),
        Some(d) if d.is_none() => Ok(Vec::new()),
        Some(d) => match d.extract::<i64>() {
            Ok(i) => Ok(vec![i]),
            Err(_) => d.extract::<Vec<i64>>(),
        },
    }
}

/// Two operands where either may be a Python number (not both).
pub(crate) fn operands(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<(Tensor, Tensor)> {
    if let Ok(t) = a.cast::<PyTensor>() {
        let t = t.borrow().inner.clone();
        let o = tensor_or_scalar(b, &t)?;
        return Ok((t, o));
    }
    let t = b.cast::<PyTensor>()?.borrow().inner.clone();
    Ok((tensor_or_scalar(a, &t)?, t))
}
