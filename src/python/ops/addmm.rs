//! addmm, addmv, baddbmm, addbmm (methods, in-place forms, module
//! functions), inner and vdot.

use crate::python::core::args::{as_scalar, tensor_arg};
use crate::python::core::batched;
use crate::python::core::bind::{add_functions, bind_methods};
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::Scalar;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

/// A `beta=`/`alpha=` argument (default 1).
fn coefficient(v: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Scalar> {
    match v {
        None => Ok(Scalar::Int(1)),
        Some(v) => as_scalar(v)
            .ok_or_else(|| PyTypeError::new_err(format!("argument '{name}' must be Number"))),
    }
}

/// `name(self, a, b, *, beta=1, alpha=1)`, its in-place form and the module
/// function `name(input, a, b, *, beta=1, alpha=1)`.
macro_rules! add_product {
    ($($name:ident, $inplace:ident, $function:ident, $pyname:literal);*) => {
        #[pymethods]
        impl PyTensor {
            $(
                #[pyo3(signature = (a, b, *, beta=None, alpha=None))]
                fn $name(
                    &self,
                    a: PyRef<'_, PyTensor>,
                    b: PyRef<'_, PyTensor>,
                    beta: Option<&Bound<'_, PyAny>>,
                    alpha: Option<&Bound<'_, PyAny>>,
                ) -> PyResult<PyTensor> {
                    let (be, al) = (coefficient(beta, "beta")?, coefficient(alpha, "alpha")?);
                    Ok(wrap(self.inner.$name(&a.inner, &b.inner, be, al)?))
                }
                #[pyo3(signature = (a, b, *, beta=None, alpha=None))]
                fn $inplace<'py>(
                    slf: PyRef<'py, Self>,
                    a: PyRef<'py, PyTensor>,
                    b: PyRef<'py, PyTensor>,
                    beta: Option<&Bound<'py, PyAny>>,
                    alpha: Option<&Bound<'py, PyAny>>,
                ) -> PyResult<PyRef<'py, Self>> {
                    let (be, al) = (coefficient(beta, "beta")?, coefficient(alpha, "alpha")?);
                    let (x, y) = (a.inner.clone(), b.inner.clone());
                    slf.inner.apply_inplace(stringify!($inplace), &[&x, &y], |s| s.$name(&x, &y, be, al))?;
                    Ok(slf)
                }
            )*
        }
        $(
            #[pyfunction]
            #[pyo3(name = $pyname, signature = (input, a, b, *, beta=None, alpha=None))]
            fn $function<'py>(
                input: &Bound<'py, PyAny>,
                a: &Bound<'py, PyAny>,
                b: &Bound<'py, PyAny>,
                beta: Option<&Bound<'py, PyAny>>,
                alpha: Option<&Bound<'py, PyAny>>,
            ) -> PyResult<Py<PyAny>> {
                if batched::any_batched(&[input, a, b]) {
                    return batched::add_product(stringify!($name), input, a, b, beta, alpha);
                }
                let x = batched::tensor_input(input, $pyname)?.borrow();
                x.$name(a.extract()?, b.extract()?, beta, alpha)?.into_py_any(input.py())
            }
        )*
    };
}

add_product!(
    addmm, addmm_, addmm_fn, "addmm";
    addmv, addmv_, addmv_fn, "addmv";
    baddbmm, baddbmm_, baddbmm_fn, "baddbmm";
    addbmm, addbmm_, addbmm_fn, "addbmm"
);

bind_methods! { addmm_fns, register_fns:
    fn inner(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.inner(&tensor_arg(other, "inner", "other", 1)?)?))
    }
    fn vdot(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.vdot(&tensor_arg(other, "vdot", "other", 1)?)?))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_fns(m)?;
    add_functions!(m => addmm_fn, addmv_fn, baddbmm_fn, addbmm_fn);
    Ok(())
}
