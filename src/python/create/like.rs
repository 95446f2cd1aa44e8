//! The `*_like` factories.

use super::random::*;
use super::*;
use crate::python::core::args::*;
use crate::python::core::device::*;
use crate::python::core::tensor::PyTensor;
use crate::{DType, Tensor};
use pyo3::prelude::*;

pub(crate) fn like_dtype(input: &Tensor, dtype: Option<DTypeArg>) -> DType {
    dt(dtype).unwrap_or(input.dtype())
}

#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, layout=None, device=None, requires_grad=false, memory_format=None))]
pub(crate) fn zeros_like(
    input: PyRef<'_, PyTensor>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    check_device(device)?;
    let t = &input.inner;
    finish(
        Tensor::zeros(t.shape(), like_dtype(t, dtype)),
        requires_grad,
    )
}

#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, layout=None, device=None, requires_grad=false, memory_format=None))]
pub(crate) fn ones_like(
    input: PyRef<'_, PyTensor>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    check_device(device)?;
    let t = &input.inner;
    finish(Tensor::ones(t.shape(), like_dtype(t, dtype)), requires_grad)
}

#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, layout=None, device=None, requires_grad=false, memory_format=None))]
pub(crate) fn empty_like(
    input: PyRef<'_, PyTensor>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    check_device(device)?;
    let t = &input.inner;
    finish(
        Tensor::zeros(t.shape(), like_dtype(t, dtype)),
        requires_grad,
    )
}

#[pyfunction]
#[pyo3(signature = (input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=false, memory_format=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn full_like(
    input: PyRef<'_, PyTensor>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    check_device(device)?;
    let t = &input.inner;
    let v = fill_scalar(fill_value)?;
    finish(
        Tensor::full(t.shape(), v, like_dtype(t, dtype)),
        requires_grad,
    )
}

#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, layout=None, device=None, requires_grad=false, memory_format=None))]
pub(crate) fn rand_like(
    input: PyRef<'_, PyTensor>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    check_device(device)?;
    let t = &input.inner;
    let d = like_dtype(t, dtype);
    random_float(d, "check_uniform_bounds")?;
    finish(Tensor::rand(t.shape(), d)?, requires_grad)
}

#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, layout=None, device=None, requires_grad=false, memory_format=None))]
pub(crate) fn randn_like(
    input: PyRef<'_, PyTensor>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    check_device(device)?;
    let t = &input.inner;
    let d = like_dtype(t, dtype);
    random_float(d, "normal_kernel_cpu")?;
    finish(Tensor::randn(t.shape(), d)?, requires_grad)
}

/// `randint_like(input, high)` or `randint_like(input, low, high)`.
#[pyfunction]
#[pyo3(signature = (input, low_or_high, high=None, *, dtype=None, layout=None, device=None, requires_grad=false, memory_format=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn randint_like(
    input: PyRef<'_, PyTensor>,
    low_or_high: &Bound<'_, PyAny>,
    high: Option<&Bound<'_, PyAny>>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    check_device(device)?;
    let (lo, hi) = match high {
        Some(h) => (int_bound(low_or_high, "low")?, int_bound(h, "high")?),
        None => (0, int_bound(low_or_high, "high")?),
    };
    let t = &input.inner;
    finish(
        Tensor::randint(lo, hi, t.shape(), like_dtype(t, dtype))?,
        requires_grad,
    )
}

// ---------------------------------------------------------------------------
// module-level helpers
// ---------------------------------------------------------------------------
