//! The Python `Tensor` class: core properties and autograd methods. Op
//! methods live in one `#[pymethods]` block per op family (ops_*.rs).

use crate::python::core::args::as_scalar;
use crate::python::core::args::type_name;
use crate::python::core::dtype::PyDType;
use crate::tensor::Scalar;
use crate::{DType, Tensor};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

#[pyclass(name = "Tensor", module = "ferrograd", subclass, weakref, dict)]
pub struct PyTensor {
    pub inner: Tensor,
    /// A view made by a view op's binding ([`view_result`]): its base's
    /// Python object, so that `v._base is base` as in torch (where the
    /// base's object lives as long as its views too). Visited by the cyclic
    /// garbage collector.
    base: Option<Py<PyAny>>,
}

impl Clone for PyTensor {
    fn clone(&self) -> Self {
        let base = self
            .base
            .as_ref()
            .map(|b| Python::attach(|py| b.clone_ref(py)));
        PyTensor {
            inner: self.inner.clone(),
            base,
        }
    }
}

impl From<Tensor> for PyTensor {
    fn from(inner: Tensor) -> Self {
        PyTensor { inner, base: None }
    }
}

pub fn wrap(t: Tensor) -> PyTensor {
    PyTensor {
        inner: t,
        base: None,
    }
}

/// A view op's result made from `slf`: remembers the Python object of the
/// view's base (`slf` itself, or the base `slf` remembers when `slf` is a
/// view of the same base), for `_base`. One reference count, no table.
pub fn view_result(slf: &Bound<'_, PyTensor>, t: Tensor) -> PyTensor {
    let me = slf.borrow();
    let base = match t.view_base() {
        Some(b) if b.same(&me.inner) => Some(slf.clone().into_any().unbind()),
        Some(b) if me.inner.view_base().is_some_and(|m| m.same(b)) => {
            me.base.as_ref().map(|o| o.clone_ref(slf.py()))
        }
        _ => None,
    };
    PyTensor { inner: t, base }
}

/// An op's result as a Python object: `slf` itself when the op returned
/// its input (torch returns the very same object there: `t.contiguous() is
/// t` when contiguous, `t.flatten() is t` for 1-d, `t.float() is t` for
/// float32), else a new object. A pointer comparison, no table lookup.
pub fn same_or_new<'py>(slf: &Bound<'py, PyTensor>, t: Tensor) -> PyResult<Bound<'py, PyAny>> {
    if t.same(&slf.borrow().inner) {
        return Ok(slf.clone().into_any());
    }
    Ok(Bound::new(slf.py(), view_result(slf, t))?.into_any())
}

#[pymethods]
impl PyTensor {
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::python::core::args::size(py, self.inner.shape())
    }
    #[pyo3(signature = (dim=None))]
    fn size<'py>(&self, py: Python<'py>, dim: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        match dim {
            Some(d) => Ok(self.inner.size(d)?.into_pyobject(py)?.into_any()),
            None => crate::python::core::args::size(py, self.inner.shape()),
        }
    }
    #[getter]
    fn dtype(&self) -> PyDType {
        self.inner.dtype().into()
    }
    #[getter]
    fn ndim(&self) -> usize {
        self.inner.ndim()
    }
    fn dim(&self) -> usize {
        self.inner.ndim()
    }
    fn numel(&self) -> usize {
        self.inner.numel()
    }
    fn nelement(&self) -> usize {
        self.inner.numel()
    }
    fn __len__(&self) -> PyResult<usize> {
        if self.inner.ndim() == 0 {
            return Err(PyTypeError::new_err("len() of a 0-d tensor"));
        }
        Ok(self.inner.shape()[0])
    }
    #[pyo3(signature = (dim=None))]
    fn stride<'py>(&self, py: Python<'py>, dim: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        match dim {
            Some(d) => {
                let d = crate::tensor::layout::wrap_dim(d, self.inner.ndim())?;
                Ok(self.inner.strides()[d].into_pyobject(py)?.into_any())
            }
            None => Ok(PyTuple::new(py, self.inner.strides())?.into_any()),
        }
    }
    fn storage_offset(&self) -> usize {
        self.inner.storage_offset()
    }
    fn is_contiguous(&self) -> bool {
        self.inner.is_contiguous()
    }
    fn is_floating_point(&self) -> bool {
        self.inner.dtype().is_floating()
    }
    fn is_signed(&self) -> bool {
        self.inner.dtype().is_signed()
    }
    fn data_ptr(&self) -> usize {
        self.inner.data_ptr()
    }
    fn element_size(&self) -> usize {
        self.inner.dtype().itemsize()
    }
    #[getter]
    fn device(&self) -> crate::python::core::device::PyDevice {
        crate::python::core::device::PyDevice::cpu()
    }
    #[getter]
    fn is_cuda(&self) -> bool {
        false
    }
    /// Inference tensors keep no version counter (torch raises too).
    #[getter]
    fn _version(&self) -> PyResult<u64> {
        if self.inner.is_inference() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "Inference tensors do not track version counter.",
            ));
        }
        Ok(self.inner.version())
    }
    /// Made in inference mode, or a view of a tensor that was.
    fn is_inference(&self) -> bool {
        self.inner.is_inference()
    }
    fn _is_view(&self) -> bool {
        self.inner.is_view()
    }
    /// The very object the view was made from when a view op's binding
    /// made it ([`view_result`]), else the base's object (see `identity`).
    #[getter]
    fn _base<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(base) = self.inner.view_base() else {
            return Ok(None);
        };
        if let Some(o) = &self.base {
            let o = o.bind(py);
            if o.cast::<PyTensor>()
                .is_ok_and(|t| t.borrow().inner.same(base))
            {
                return Ok(Some(o.clone()));
            }
        }
        crate::python::core::identity::object(py, base.clone()).map(Some)
    }
    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        if let Some(b) = &self.base {
            visit.call(b)?;
        }
        Ok(())
    }
    fn __clear__(&mut self) {
        self.base = None;
    }

    // ----- autograd -----
    #[getter]
    fn get_requires_grad(&self) -> bool {
        self.inner.requires_grad()
    }
    /// A tensor made to require grad is a leaf the user will meet again in
    /// the graph (`AccumulateGrad.variable`, saved inputs): its object is
    /// remembered (see `identity`).
    #[setter]
    fn set_requires_grad(slf: &Bound<'_, Self>, value: bool) -> PyResult<()> {
        slf.borrow().inner.set_requires_grad_attr(value)?;
        if value {
            crate::python::core::identity::remember(slf)?;
        }
        Ok(())
    }
    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_<'py>(
        slf: Bound<'py, Self>,
        requires_grad: bool,
    ) -> PyResult<Bound<'py, Self>> {
        slf.borrow().inner.set_requires_grad(requires_grad)?;
        if requires_grad {
            crate::python::core::identity::remember(&slf)?;
        }
        Ok(slf)
    }
    /// Raises, as torch's reads the view's `grad_fn`, for a view whose
    /// history may not be rebuilt after its base was modified in place.
    #[getter]
    fn is_leaf(&self) -> PyResult<bool> {
        self.inner.check_view_history()?;
        Ok(self.inner.is_leaf())
    }
    /// The same object on every access while it lives (see `identity`).
    #[getter]
    fn get_grad<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner
            .grad()
            .map(|g| crate::python::core::identity::object(py, g))
            .transpose()
    }
    #[setter]
    fn set_grad(&self, value: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let value = match value.filter(|v| !v.is_none()) {
            None => None,
            Some(v) => Some(v.cast_into::<PyTensor>().map_err(|e| {
                PyTypeError::new_err(format!(
                    "assigned grad expected to be a Tensor or None but got grad of type {}",
                    type_name(&e.into_inner())
                ))
            })?),
        };
        self.inner
            .set_grad(value.as_ref().map(|v| v.borrow().inner.clone()))?;
        if let Some(v) = &value {
            crate::python::core::identity::remember(v)?;
        }
        Ok(())
    }
    /// A new tensor on every access: the same memory, no history, and its
    /// own version counter (see `Tensor::data`).
    #[getter]
    fn get_data(&self) -> PyTensor {
        wrap(self.inner.data())
    }
    /// Swaps in another tensor's memory, keeping this object, its version
    /// counter and its autograd state (see `Tensor::replace_data`).
    #[setter]
    fn set_data(slf: &Bound<'_, Self>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let data = match value.cast::<PyTensor>() {
            Ok(t) => t.borrow().inner.clone(),
            Err(_) => {
                return Err(PyTypeError::new_err(format!(
                    "Variable data has to be a tensor, but got {}",
                    value.get_type().name()?
                )))
            }
        };
        let new = slf.borrow().inner.replace_data(&data)?;
        slf.borrow_mut().inner = new;
        crate::python::core::identity::remember(slf)
    }
    #[deleter]
    fn delete_data(&self) -> PyResult<()> {
        Err(pyo3::exceptions::PyRuntimeError::new_err(
            "Deleting tensor data is not allowed. Delete tensor instead!",
        ))
    }
    /// `del t.grad` clears it, as in torch.
    #[deleter]
    fn delete_grad(&self) -> PyResult<()> {
        self.inner.set_grad(None)?;
        Ok(())
    }
    #[getter]
    fn output_nr(&self) -> usize {
        self.inner.output_nr()
    }
    fn retain_grad(&self) -> PyResult<()> {
        Ok(self.inner.retain_grad()?)
    }
    #[getter]
    fn retains_grad(&self) -> bool {
        self.inner.retains_grad()
    }
    fn detach(&self) -> PyTensor {
        wrap(self.inner.detach())
    }
    fn detach_(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        slf.inner.detach_()?;
        Ok(slf)
    }

    // ----- values -----
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::python::core::args::scalar_to_py(py, self.inner.item()?)
    }
    fn __float__(&self) -> PyResult<f64> {
        Ok(self.python_scalar()?.to_f64())
    }
    fn __int__(&self) -> PyResult<i64> {
        Ok(match self.python_scalar()? {
            Scalar::Int(i) => i,
            other => other.to_f64() as i64,
        })
    }
    fn __bool__(&self) -> PyResult<bool> {
        if self.inner.numel() != 1 {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "Boolean value of Tensor with more than one value is ambiguous",
            ));
        }
        Ok(self.inner.item()?.to_f64() != 0.0)
    }

    fn type_as<'py>(
        slf: &Bound<'py, Self>,
        other: PyRef<'py, PyTensor>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let t = slf.borrow().inner.to_dtype(other.inner.dtype())?;
        same_or_new(slf, t)
    }
    /// The tensor itself when it is contiguous (every empty tensor is).
    fn contiguous<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let t = slf.borrow().inner.contiguous()?;
        same_or_new(slf, t)
    }

    // (the arithmetic operators and methods come from the binary tables:
    // `python/ops/arith.rs`)
    fn __neg__(&self) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.neg()?))
    }
    fn zero_(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        slf.inner.zero_()?;
        Ok(slf)
    }
    fn fill_<'py>(slf: PyRef<'py, Self>, value: &Bound<'py, PyAny>) -> PyResult<PyRef<'py, Self>> {
        match as_scalar(value) {
            Some(s) => slf.inner.fill_(s)?,
            None => match value.cast::<PyTensor>() {
                Ok(t) => slf.inner.fill_tensor_(&t.borrow().inner)?,
                Err(_) => slf.inner.fill_(slf_item(value)?)?,
            },
        }
        Ok(slf)
    }
    fn copy_<'py>(slf: PyRef<'py, Self>, src: &Bound<'py, PyAny>) -> PyResult<PyRef<'py, Self>> {
        crate::python::core::batched::refuse_write_into_plain(src)?;
        let src = crate::python::core::args::tensor_arg(src, "copy_", "src", 1)?;
        slf.inner.copy_(&src)?;
        Ok(slf)
    }
}

impl PyTensor {
    /// The value of a one-element tensor for float()/int() (ValueError otherwise, as torch).
    fn python_scalar(&self) -> PyResult<Scalar> {
        if self.inner.numel() != 1 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "only one element tensors can be converted to Python scalars",
            ));
        }
        Ok(self.inner.item()?)
    }
}

fn slf_item(value: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    let t = value.cast::<PyTensor>()?;
    Ok(t.borrow().inner.item()?)
}

/// The dtype conversion methods (`Tensor.float()`, `.int()`, ...): each
/// returns the tensor itself when it has the dtype already.
macro_rules! dtype_conversions {
    ($($name:ident => $dtype:ident),* $(,)?) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $name<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
                    let t = slf.borrow().inner.to_dtype(DType::$dtype)?;
                    same_or_new(slf, t)
                }
            )*
        }
    };
}

dtype_conversions! {
    float => F32,
    double => F64,
    half => F16,
    bfloat16 => BF16,
    long => I64,
    int => I32,
    short => I16,
    char => I8,
    byte => U8,
    bool => Bool,
}
