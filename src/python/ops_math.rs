//! Inverse trigonometric and hyperbolic functions, other bases, the error
//! functions, two-operand math (atan2, hypot, xlogy, logaddexp) and the
//! three-operand ops (lerp, addcmul, addcdiv): Tensor methods, in-place
//! methods and module functions, with NumPy's `arc*` aliases as torch has.

use super::ops_view::operands;
use super::tensor::{as_scalar, tensor_or_scalar, wrap, PyTensor};
use crate::ops::ternary::Weight;
use crate::tensor::Scalar;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// Methods `name(self)` and `name_(self)` (in place) for unary ops.
macro_rules! unary_methods {
    ($($name:ident, $inplace:ident => $op:ident);* $(;)?) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $name(&self) -> PyResult<PyTensor> {
                    Ok(wrap(self.inner.$op()?))
                }
                fn $inplace(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
                    slf.inner.apply_inplace(&[], |s| s.$op())?;
                    Ok(slf)
                }
            )*
        }
    };
}

unary_methods! {
    asin, asin_ => asin; acos, acos_ => acos; atan, atan_ => atan;
    arcsin, arcsin_ => asin; arccos, arccos_ => acos; arctan, arctan_ => atan;
    sinh, sinh_ => sinh; cosh, cosh_ => cosh;
    asinh, asinh_ => asinh; acosh, acosh_ => acosh; atanh, atanh_ => atanh;
    arcsinh, arcsinh_ => asinh; arccosh, arccosh_ => acosh; arctanh, arctanh_ => atanh;
    deg2rad, deg2rad_ => deg2rad; rad2deg, rad2deg_ => rad2deg;
    log2, log2_ => log2; log10, log10_ => log10; exp2, exp2_ => exp2;
    erf, erf_ => erf; erfc, erfc_ => erfc; erfinv, erfinv_ => erfinv;
}

/// Methods `name(self, other)` and `name_(self, other)` for binary ops
/// whose other operand may be a tensor or a Python number.
macro_rules! binary_methods {
    ($($name:ident, $inplace:ident => $op:ident);* $(;)?) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $name(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                    Ok(wrap(self.inner.$op(&tensor_or_scalar(other, &self.inner)?)?))
                }
                fn $inplace<'py>(
                    slf: PyRef<'py, Self>,
                    other: &Bound<'py, PyAny>,
                ) -> PyResult<PyRef<'py, Self>> {
                    let o = tensor_or_scalar(other, &slf.inner)?;
                    slf.inner.apply_inplace(&[&o], |s| s.$op(&o))?;
                    Ok(slf)
                }
            )*
        }
    };
}

binary_methods! {
    atan2, atan2_ => atan2; arctan2, arctan2_ => atan2; hypot, hypot_ => hypot;
    xlogy, xlogy_ => xlogy;
}

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

#[pymethods]
impl PyTensor {
    fn logaddexp(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.logaddexp(&other.inner)?))
    }
    fn logaddexp2(&self, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.logaddexp2(&other.inner)?))
    }
    fn lerp(&self, end: PyRef<'_, PyTensor>, weight: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.lerp(&end.inner, &self::weight(weight)?)?))
    }
    fn lerp_<'py>(
        slf: PyRef<'py, Self>,
        end: PyRef<'py, PyTensor>,
        weight: &Bound<'py, PyAny>,
    ) -> PyResult<PyRef<'py, Self>> {
        slf.inner.lerp_(&end.inner, &self::weight(weight)?)?;
        Ok(slf)
    }
}

/// `name(tensor1, tensor2, *, value=1)` and its in-place form.
macro_rules! addc_methods {
    ($($name:ident, $inplace:ident);*) => {
        #[pymethods]
        impl PyTensor {
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

mod functions {
    use super::*;

    macro_rules! unary_functions {
        ($($name:ident => $op:ident),*) => {$(
            #[pyfunction]
            pub fn $name(input: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
                Ok(wrap(input.inner.$op()?))
            }
        )*};
    }
    unary_functions!(
        asin => asin, acos => acos, atan => atan, sinh => sinh, cosh => cosh,
        asinh => asinh, acosh => acosh, atanh => atanh, deg2rad => deg2rad,
        rad2deg => rad2deg, log2 => log2, log10 => log10, exp2 => exp2, erf => erf,
        erfc => erfc, erfinv => erfinv
    );

    macro_rules! binary_functions {
        ($($name:ident => $op:ident),*) => {$(
            #[pyfunction]
            pub fn $name(input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                let (a, b) = operands(input, other)?;
                Ok(wrap(a.$op(&b)?))
            }
        )*};
    }
    binary_functions!(atan2 => atan2, hypot => hypot, xlogy => xlogy);

    #[pyfunction]
    pub fn logaddexp(input: PyRef<'_, PyTensor>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(wrap(input.inner.logaddexp(&other.inner)?))
    }
    #[pyfunction]
    pub fn logaddexp2(
        input: PyRef<'_, PyTensor>,
        other: PyRef<'_, PyTensor>,
    ) -> PyResult<PyTensor> {
        Ok(wrap(input.inner.logaddexp2(&other.inner)?))
    }
    #[pyfunction]
    pub fn lerp(
        input: PyRef<'_, PyTensor>,
        end: PyRef<'_, PyTensor>,
        weight: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        Ok(wrap(input.inner.lerp(&end.inner, &super::weight(weight)?)?))
    }
    #[pyfunction]
    #[pyo3(signature = (input, tensor1, tensor2, *, value=None))]
    pub fn addcmul(
        input: PyRef<'_, PyTensor>,
        tensor1: PyRef<'_, PyTensor>,
        tensor2: PyRef<'_, PyTensor>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        input.addcmul(tensor1, tensor2, value)
    }
    #[pyfunction]
    #[pyo3(signature = (input, tensor1, tensor2, *, value=None))]
    pub fn addcdiv(
        input: PyRef<'_, PyTensor>,
        tensor1: PyRef<'_, PyTensor>,
        tensor2: PyRef<'_, PyTensor>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        input.addcdiv(tensor1, tensor2, value)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    use functions::*;
    for f in [
        wrap_pyfunction!(asin, m)?,
        wrap_pyfunction!(acos, m)?,
        wrap_pyfunction!(atan, m)?,
        wrap_pyfunction!(sinh, m)?,
        wrap_pyfunction!(cosh, m)?,
        wrap_pyfunction!(asinh, m)?,
        wrap_pyfunction!(acosh, m)?,
        wrap_pyfunction!(atanh, m)?,
        wrap_pyfunction!(deg2rad, m)?,
        wrap_pyfunction!(rad2deg, m)?,
        wrap_pyfunction!(log2, m)?,
        wrap_pyfunction!(log10, m)?,
        wrap_pyfunction!(exp2, m)?,
        wrap_pyfunction!(erf, m)?,
        wrap_pyfunction!(erfc, m)?,
        wrap_pyfunction!(erfinv, m)?,
        wrap_pyfunction!(atan2, m)?,
        wrap_pyfunction!(hypot, m)?,
        wrap_pyfunction!(xlogy, m)?,
        wrap_pyfunction!(logaddexp, m)?,
        wrap_pyfunction!(logaddexp2, m)?,
        wrap_pyfunction!(lerp, m)?,
        wrap_pyfunction!(addcmul, m)?,
        wrap_pyfunction!(addcdiv, m)?,
    ] {
        m.add_function(f)?;
    }
    for (alias, name) in [
        ("arcsin", "asin"),
        ("arccos", "acos"),
        ("arctan", "atan"),
        ("arcsinh", "asinh"),
        ("arccosh", "acosh"),
        ("arctanh", "atanh"),
        ("arctan2", "atan2"),
    ] {
        m.add(alias, m.getattr(name)?)?;
    }
    Ok(())
}
