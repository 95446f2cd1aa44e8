//! The binding shapes op families share. A family table of floating unary
//! ops (`crate::ops::unary`'s grammar) passed to `bind_unary_float_ops!`
//! becomes `Tensor.name()`, `Tensor.name_()`, `ferrograd.name(input, *,
//! out=None)` and `ferrograd.name_(input)`, for the op and its aliases;
//! `bind_unary!` does the same for unary ops written out by hand.

use crate::python::core::identity;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use pyo3::exceptions::{PyRuntimeError, PyUserWarning};
use pyo3::prelude::*;
use std::ffi::CString;

/// torch's `out=`: writes `op()` into `out`. Refused when autograd would
/// have to record (torch's error); the result must cast to out's dtype
/// without changing category; an out of another shape is resized, with
/// torch's deprecation warning when it had elements.
pub(crate) fn write_out(
    name: &str,
    out: &Bound<'_, PyTensor>,
    inputs: &[&Tensor],
    op: impl FnOnce() -> crate::Result<Tensor>,
) -> PyResult<()> {
    let dst = out.borrow().inner.clone();
    let needs_grad = dst.requires_grad() || inputs.iter().any(|t| t.requires_grad());
    if crate::autograd::is_grad_enabled() && needs_grad {
        return Err(PyRuntimeError::new_err(format!(
            "{name}(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."
        )));
    }
    let r = op()?;
    crate::kernels::copy::check_can_cast(r.dtype(), dst.dtype())?;
    if r.shape() == dst.shape() {
        // The overlap checks see the op's inputs, not `r` (fresh memory).
        dst.check_write(inputs)?;
        return Ok(dst.copy_(&r)?);
    }
    if dst.numel() > 0 {
        let msg = format!(
            "An output with one or more elements was resized since it had shape {:?}, which does not match the required output shape {:?}. This behavior is deprecated, and in a future PyTorch release outputs will not be resized unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).",
            dst.shape(),
            r.shape()
        );
        let msg = CString::new(msg).expect("no NUL in the message");
        PyErr::warn(out.py(), &out.py().get_type::<PyUserWarning>(), &msg, 1)?;
    }
    let new = dst.replace_data(&r.cast_raw(dst.dtype()))?;
    out.borrow_mut().inner = new;
    identity::remember(out)
}

/// A unary module function: `op(input)`, or written into `out`.
pub(crate) fn unary_out<'py>(
    name: &str,
    input: &Bound<'py, PyTensor>,
    out: Option<&Bound<'py, PyTensor>>,
    op: impl FnOnce(&Tensor) -> crate::Result<Tensor>,
) -> PyResult<Bound<'py, PyTensor>> {
    let x = input.borrow().inner.clone();
    result_or_out(input.py(), name, out, &[&x], || op(&x))
}

/// A module function's result: a fresh tensor, or written into `out`
/// (see [`write_out`]) and `out` returned, as torch's `out=` does.
pub(crate) fn result_or_out<'py>(
    py: Python<'py>,
    name: &str,
    out: Option<&Bound<'py, PyTensor>>,
    inputs: &[&Tensor],
    op: impl FnOnce() -> crate::Result<Tensor>,
) -> PyResult<Bound<'py, PyTensor>> {
    match out {
        None => Bound::new(py, wrap(op()?)),
        Some(out) => {
            write_out(name, out, inputs, op)?;
            Ok(out.clone())
        }
    }
}

/// Unary ops given as `py, py_ => rust, rust_;` (with doc attributes):
/// Tensor methods, in-place methods, and module functions (with `out=`) in
/// a module `$fns` registered by `fn $register`.
macro_rules! bind_unary {
    ($fns:ident, $register:ident: $($(#[$meta:meta])* $py:ident, $py_:ident => $op:ident, $op_:ident;)*) => {
        #[pyo3::pymethods]
        impl $crate::python::core::tensor::PyTensor {
            $(
                $(#[$meta])*
                fn $py(&self) -> pyo3::PyResult<Self> {
                    Ok($crate::python::core::tensor::wrap(self.inner.$op()?))
                }
                #[doc = concat!("In-place version of `", stringify!($py), "`.")]
                fn $py_(slf: pyo3::PyRef<'_, Self>) -> pyo3::PyResult<pyo3::PyRef<'_, Self>> {
                    slf.inner.$op_()?;
                    Ok(slf)
                }
            )*
        }
        mod $fns {
            use pyo3::prelude::*;
            use $crate::python::core::tensor::PyTensor;
            $(
                $(#[$meta])*
                #[pyfunction]
                #[pyo3(signature = (input, *, out = None))]
                pub fn $py<'py>(
                    input: &Bound<'py, PyTensor>,
                    out: Option<&Bound<'py, PyTensor>>,
                ) -> PyResult<Bound<'py, PyTensor>> {
                    $crate::python::core::bind::unary_out(stringify!($py), input, out, |t| t.$op())
                }
                #[doc = concat!("In-place version of `", stringify!($py), "`.")]
                #[pyfunction]
                pub fn $py_(input: PyRef<'_, PyTensor>) -> PyResult<PyRef<'_, PyTensor>> {
                    input.inner.$op_()?;
                    Ok(input)
                }
            )*
        }
        fn $register(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
            use pyo3::prelude::*;
            $(
                m.add_function(pyo3::wrap_pyfunction!($fns::$py, m)?)?;
                m.add_function(pyo3::wrap_pyfunction!($fns::$py_, m)?)?;
            )*
            Ok(())
        }
    };
}
pub(crate) use bind_unary;

/// The bindings of a floating unary family table (see `crate::ops::unary`):
/// `fn register_table` adds its module functions.
macro_rules! bind_unary_float_ops {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident, $inplace:ident [$($alias:ident, $alias_:ident),*]: $node:literal,
            $kind:ident($($k:tt)*), $saves:ident, $domain:ident,
            |$g:ident, $s:ident| $d:expr;
    )*) => {
        $crate::python::core::bind::bind_unary! { table_fns, register_table:
            $($(#[doc = $doc])* $name, $inplace => $name, $inplace;)*
            $($(
                #[doc = concat!("Alias of `", stringify!($name), "`.")]
                $alias, $alias_ => $alias, $alias_;
            )*)*
        }
    };
}
pub(crate) use bind_unary_float_ops;

/// Binary ops given as `py, py_ => rust;`: `Tensor.py(other)` and
/// `Tensor.py_(other)` (other a tensor or a number; in place through
/// `apply_inplace`), and `ferrograd.py(input, other)` (either may be a
/// number) in a module `$fns` registered by `fn $register`.
macro_rules! bind_binary {
    ($fns:ident, $register:ident: $($py:ident, $py_:ident => $op:ident;)*) => {
        #[pyo3::pymethods]
        impl $crate::python::core::tensor::PyTensor {
            $(
                fn $py(&self, other: &pyo3::Bound<'_, pyo3::PyAny>) -> pyo3::PyResult<Self> {
                    let o = $crate::python::core::args::tensor_or_scalar(other, &self.inner)?;
                    Ok($crate::python::core::tensor::wrap(self.inner.$op(&o)?))
                }
                fn $py_<'py>(
                    slf: pyo3::PyRef<'py, Self>,
                    other: &pyo3::Bound<'py, pyo3::PyAny>,
                ) -> pyo3::PyResult<pyo3::PyRef<'py, Self>> {
                    let o = $crate::python::core::args::tensor_or_scalar(other, &slf.inner)?;
                    slf.inner.apply_inplace(stringify!($py_), &[&o], |s| s.$op(&o))?;
                    Ok(slf)
                }
            )*
        }
        mod $fns {
            use pyo3::prelude::*;
            use $crate::python::core::tensor::PyTensor;
            $(
                #[pyfunction]
                #[pyo3(signature = (input, other, *, out=None))]
                pub fn $py<'py>(
                    input: &Bound<'py, PyAny>,
                    other: &Bound<'py, PyAny>,
                    out: Option<&Bound<'py, PyTensor>>,
                ) -> PyResult<Bound<'py, PyTensor>> {
                    let (a, b) = $crate::python::core::args::operands(input, other)?;
                    $crate::python::core::bind::result_or_out(
                        input.py(), stringify!($py), out, &[&a, &b], || a.$op(&b),
                    )
                }
            )*
        }
        fn $register(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
            use pyo3::prelude::*;
            $(m.add_function(pyo3::wrap_pyfunction!($fns::$py, m)?)?;)*
            Ok(())
        }
    };
}
pub(crate) use bind_binary;
