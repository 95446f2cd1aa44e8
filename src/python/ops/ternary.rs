//! The three-operand ops (lerp, addcmul, addcdiv): Tensor methods,
//! in-place methods and module functions.

use crate::ops::ternary::Weight;
use crate::python::core::args::as_scalar;
use crate::python::core::bind::bind_methods;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::Scalar;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// A lerp weight argument: a tensor or a Python number.
fn weight(w: &Bound<'_, PyAny>) -> PyResult<Weight> {
    if let Ok(t) = w.cast::<PyTensor>() {
        return Ok(Weight::Tensor(t.borrow().inner.clone()));
    }
    match as_scalar(w) {
        Some(s) => Ok(Weight::Scalar(s.to_f64())),
        None => Err(PyTypeError::new_err(format!(
            "lerp(): argument 'weight' must be Tensor or Number, not {}",
            w.get_type().name()?
        ))),
    }
}

/// The `value=` of addcmul/addcdiv (`op` names the function in the error).
fn value(v: Option<&Bound<'_, PyAny>>, op: &str) -> PyResult<Scalar> {
    match v {
        None => Ok(Scalar::Int(1)),
        Some(v) => as_scalar(v).ok_or_else(|| {
            PyTypeError::new_err(format!("{op}(): argument 'value' must be Number"))
        }),
    }
}

bind_methods! { ternary_fns, register_fns:
    fn lerp(&self, end: PyRef<'_, PyTensor>, weight: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.lerp(&end.inner, &self::weight(weight)?)?))
    }
}

#[pymethods]
impl PyTensor {
    fn lerp_<'py>(
        slf: PyRef<'py, Self>,
        end: PyRef<'py, PyTensor>,
        weight: &Bound<'py, PyAny>,
    ) -> PyResult<PyRef<'py, Self>> {
        slf.inner.lerp_(&end.inner, &self::weight(weight)?)?;
        Ok(slf)
    }
}

/// `name(tensor1, tensor2, *, value=1)` (method and module function) and
/// its in-place form.
macro_rules! addc_methods {
    ($($name:ident, $inplace:ident);*) => {
        bind_methods! { addc_fns, register_addc:
            $(
                #[pyo3(signature = (tensor1, tensor2, *, value=None))]
                fn $name(
                    &self,
                    tensor1: PyRef<'_, PyTensor>,
                    tensor2: PyRef<'_, PyTensor>,
                    value: Option<&Bound<'_, PyAny>>,
                ) -> PyResult<PyTensor> {
                    let v = self::value(value, stringify!($name))?;
                    Ok(wrap(self.inner.$name(&tensor1.inner, &tensor2.inner, v)?))
                }
            )*
        }
        #[pymethods]
        impl PyTensor {
            $(
                #[pyo3(signature = (tensor1, tensor2, *, value=None))]
                fn $inplace<'py>(
                    slf: PyRef<'py, Self>,
                    tensor1: PyRef<'py, PyTensor>,
                    tensor2: PyRef<'py, PyTensor>,
                    value: Option<&Bound<'py, PyAny>>,
                ) -> PyResult<PyRef<'py, Self>> {
                    let v = self::value(value, stringify!($name))?;
                    slf.inner.$inplace(&tensor1.inner, &tensor2.inner, v)?;
                    Ok(slf)
                }
            )*
        }
    };
}
addc_methods!(addcmul, addcmul_; addcdiv, addcdiv_);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_fns(m)?;
    register_addc(m)
}
