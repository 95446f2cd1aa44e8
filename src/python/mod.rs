//! PyO3 bindings (feature "python"): the `ferrograd._C` extension module.
//! Each file registers one area; op families add `#[pymethods]` blocks to
//! `PyTensor` in their own `ops_*.rs` file.

mod anomaly;
mod autograd;
mod copy;
mod create;
mod dtype;
mod errors;
mod forward_ad;
mod function;
mod graph;
mod hooks;
mod identity;
mod memory;
mod nn_init;
mod nn_utils;
mod node;
mod numpy_interop;
mod ops_activation;
mod ops_addmm;
mod ops_combine;
mod ops_compare;
mod ops_conv;
mod ops_index;
mod ops_linalg;
mod ops_loss;
mod ops_math;
mod ops_normalization;
mod ops_pointwise;
mod ops_random;
mod ops_reduce;
mod ops_rounding;
mod ops_shape;
mod ops_sort;
mod ops_view;
mod optim;
mod profiler;
mod repr;
mod tensor;

use crate::tensor::Scalar;
use pyo3::prelude::*;

/// A shape as Python sees it: a `ferrograd.Size`.
pub(crate) fn size<'py>(py: Python<'py>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    create::make_size(py, shape)
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

#[pymodule]
#[pyo3(name = "_C")]
fn ferrograd_c(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<tensor::PyTensor>()?;
    dtype::register(m)?;
    node::register(m)?;
    hooks::register(m)?;
    autograd::register(m)?;
    anomaly::register(m)?;
    profiler::register(m)?;
    create::register(m)?;
    numpy_interop::register(m)?;
    function::register(m)?;
    forward_ad::register(m)?;
    graph::register(m)?;
    memory::register(m)?;
    ops_index::register(m)?;
    ops_linalg::register(m)?;
    ops_pointwise::register(m)?;
    ops_reduce::register(m)?;
    ops_compare::register(m)?;
    ops_view::register(m)?;
    ops_rounding::register(m)?;
    ops_math::register(m)?;
    ops_shape::register(m)?;
    ops_shape::register_einsum(m)?;
    ops_loss::register(m)?;
    ops_sort::register(m)?;
    ops_addmm::register(m)?;
    ops_random::register(m)?;
    optim::register(m)?;
    copy::register(m)?;
    nn_init::register(m)?;
    nn_utils::register(m)?;
    ops_activation::register(m)?;
    ops_normalization::register(m)?;
    ops_combine::register(m)?;
    ops_conv::register(m)?;
    repr::register(m)?;
    Ok(())
}
