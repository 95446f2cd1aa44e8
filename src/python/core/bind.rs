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
    differentiable: bool,
    op: impl FnOnce() -> crate::Result<Tensor>,
) -> PyResult<()> {
    let dst = out.borrow().inner.clone();
    let needs_grad = dst.requires_grad() || inputs.iter().any(|t| t.requires_grad());
    if differentiable && crate::autograd::is_grad_enabled() && needs_grad {
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
    result_or_out_of(py, name, out, inputs, true, op)
}

/// [`result_or_out`] of an op that is `differentiable` or not (a bool or
/// integer result: torch takes `out=` under autograd then).
pub(crate) fn result_or_out_of<'py>(
    py: Python<'py>,
    name: &str,
    out: Option<&Bound<'py, PyTensor>>,
    inputs: &[&Tensor],
    differentiable: bool,
    op: impl FnOnce() -> crate::Result<Tensor>,
) -> PyResult<Bound<'py, PyTensor>> {
    match out {
        None => Bound::new(py, wrap(op()?)),
        Some(out) => {
            write_out(name, out, inputs, differentiable, op)?;
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
                    input: &Bound<'py, PyAny>,
                    out: Option<&Bound<'py, PyTensor>>,
                ) -> PyResult<Bound<'py, PyAny>> {
                    use $crate::python::core::batched;
                    if out.is_none() && batched::is_batched(input) {
                        let kw = pyo3::types::PyDict::new(input.py());
                        let r = batched::method_call(input, stringify!($py), kw)?;
                        return Ok(r.into_bound(input.py()));
                    }
                    let input = batched::tensor_input(input, stringify!($py))?;
                    let r = $crate::python::core::bind::unary_out(stringify!($py), input, out, |t| t.$op())?;
                    Ok(r.into_any())
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

/// The bindings of a binary family table (see `crate::ops::arith`): per
/// op and alias, `Tensor.name(other)`, `Tensor.name_(other)` and
/// `ferrograd.name(input, other, *, out=None)` (either operand may be a
/// number; `alpha=` too for the `alpha` form; none of them for a `written`
/// name, whose aliases are `plain`), and the entry's dunders; `fn
/// register_binary_table` adds the module functions. The `tensor` form
/// takes only tensors (torch's `Tensor other`); `first` a tensor input and
/// a tensor or number other.
macro_rules! bind_binary_ops {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident, $inplace:ident $(, $scalar:ident)? [$($alias:ident, $alias_:ident),*]: $node:literal,
            $rule:ident($($check:path)?) $($exact:ident)?, |$a:ident, $b:ident| $k:expr, $d1:ident $d2:ident,
            $saves:ident |$g:ident, $x:ident, $y:ident, $r:ident| $dx:expr, $dy:expr;
            py $form:ident [$($dk:ident $dn:ident $(= $df:ident)?),*];
    )*) => {
        $crate::python::core::bind::bind_binary_ops!(@bind true $(
            [$(#[doc = $doc])*] $name $inplace [$($alias $alias_)*] $form [$($dk $dn $(= $df)?),*]
        )*);
    };

    // What a table's entries bind (both grammars reach here).
    (@bind $diff:literal $(
        [$($doc:tt)*] $name:ident $inplace:ident [$($alias:ident $alias_:ident)*] $form:ident
            [$($dk:ident $dn:ident $(= $df:ident)?),*]
    )*) => {
        $(
            $crate::python::core::bind::bind_binary_ops!(@methods $form, [$($doc)*], $name, $name, $inplace, $inplace);
            $(
                $crate::python::core::bind::bind_binary_ops!(@alias methods $form, [#[doc = concat!("Alias of `", stringify!($name), "`.")]], $alias, $name, $alias_, $inplace);
            )*
        )*
        // One block: PyO3 wants the rich comparisons together.
        $crate::python::core::bind::bind_binary_ops!(@dunders [] $($(($dk $dn $name $inplace $($df)?))*)*);
        mod binary_table_fns {
            $(
                $crate::python::core::bind::bind_binary_ops!(@function $form, $diff, [$($doc)*], $name, $name);
                $(
                    $crate::python::core::bind::bind_binary_ops!(@alias function $form, $diff, [#[doc = concat!("Alias of `", stringify!($name), "`.")]], $alias, $name);
                )*
            )*
        }
        fn register_binary_table(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
            $(
                $crate::python::core::bind::bind_binary_ops!(@register $form, m, $name);
                $($crate::python::core::bind::bind_binary_ops!(@alias register $form, m, $alias);)*
            )*
            Ok(())
        }
    };

    // An alias of a `written` name is `plain`.
    (@alias $what:ident written, $($rest:tt)*) => {
        $crate::python::core::bind::bind_binary_ops!(@$what plain, $($rest)*);
    };
    (@alias $what:ident $form:ident, $($rest:tt)*) => {
        $crate::python::core::bind::bind_binary_ops!(@$what $form, $($rest)*);
    };

    // ----- Tensor methods -----
    (@methods written, $($rest:tt)*) => {};
    (@methods alpha, [$($doc:tt)*], $py:ident, $op:ident, $py_:ident, $op_:ident) => {
        #[pyo3::pymethods]
        impl $crate::python::core::tensor::PyTensor {
            $($doc)*
            #[pyo3(signature = (other, *, alpha=None))]
            fn $py(
                &self,
                other: &pyo3::Bound<'_, pyo3::PyAny>,
                alpha: Option<&pyo3::Bound<'_, pyo3::PyAny>>,
            ) -> pyo3::PyResult<Self> {
                let o = $crate::python::core::args::tensor_or_scalar(other, &self.inner)?;
                Ok($crate::python::core::tensor::wrap(match alpha.and_then($crate::python::core::args::as_scalar) {
                    Some(a) => self.inner.with_alpha(stringify!($op), &o, a)?,
                    None => self.inner.$op(&o)?,
                }))
            }
            #[doc = concat!("In-place version of `", stringify!($py), "`.")]
            #[pyo3(signature = (other, *, alpha=None))]
            fn $py_<'py>(
                slf: pyo3::PyRef<'py, Self>,
                other: &pyo3::Bound<'py, pyo3::PyAny>,
                alpha: Option<&pyo3::Bound<'py, pyo3::PyAny>>,
            ) -> pyo3::PyResult<pyo3::PyRef<'py, Self>> {
                $crate::python::core::batched::refuse_write_into_plain(other)?;
                let o = $crate::python::core::args::tensor_or_scalar(other, &slf.inner)?;
                match alpha.and_then($crate::python::core::args::as_scalar) {
                    Some(a) => slf.inner.with_alpha(stringify!($op_), &o, a).map(|_| ())?,
                    None => slf.inner.$op_(&o)?,
                }
                Ok(slf)
            }
        }
    };
    (@methods $form:ident, [$($doc:tt)*], $py:ident, $op:ident, $py_:ident, $op_:ident) => {
        #[pyo3::pymethods]
        impl $crate::python::core::tensor::PyTensor {
            $($doc)*
            fn $py(&self, other: &pyo3::Bound<'_, pyo3::PyAny>) -> pyo3::PyResult<Self> {
                let o = $crate::python::core::bind::bind_binary_ops!(@other $form, other, &self.inner, $py);
                Ok($crate::python::core::tensor::wrap(self.inner.$op(&o)?))
            }
            #[doc = concat!("In-place version of `", stringify!($py), "`.")]
            fn $py_<'py>(
                slf: pyo3::PyRef<'py, Self>,
                other: &pyo3::Bound<'py, pyo3::PyAny>,
            ) -> pyo3::PyResult<pyo3::PyRef<'py, Self>> {
                $crate::python::core::batched::refuse_write_into_plain(other)?;
                let o = $crate::python::core::bind::bind_binary_ops!(@other $form, other, &slf.inner, $py_);
                slf.inner.$op_(&o)?;
                Ok(slf)
            }
        }
    };
    // A method's other operand: a tensor, or for all but `tensor` a number.
    (@other tensor, $o:ident, $like:expr, $f:ident) => {
        $crate::python::core::args::tensor_arg($o, stringify!($f), "other", 1)?
    };
    (@other $form:ident, $o:ident, $like:expr, $f:ident) => {
        $crate::python::core::args::tensor_or_scalar($o, $like)?
    };

    // ----- module functions -----
    (@function written, $($rest:tt)*) => {};
    (@function alpha, $diff:literal, [$($doc:tt)*], $py:ident, $op:ident) => {
        $($doc)*
        #[pyo3::pyfunction]
        #[pyo3(signature = (input, other, *, alpha=None, out=None))]
        pub fn $py<'py>(
            input: &pyo3::Bound<'py, pyo3::PyAny>,
            other: &pyo3::Bound<'py, pyo3::PyAny>,
            alpha: Option<&pyo3::Bound<'py, pyo3::PyAny>>,
            out: Option<&pyo3::Bound<'py, $crate::python::core::tensor::PyTensor>>,
        ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
            if let Some(r) = $crate::python::core::bind::bind_binary_ops!(@batched $py, input, other, out, alpha) {
                return r;
            }
            let (a, b) = $crate::python::core::args::operands(input, other)?;
            let alpha = alpha.and_then($crate::python::core::args::as_scalar);
            Ok($crate::python::core::bind::result_or_out_of(
                input.py(), stringify!($py), out, &[&a, &b], $diff, || match alpha {
                    Some(s) => a.with_alpha(stringify!($op), &b, s),
                    None => a.$op(&b),
                },
            )?.into_any())
        }
    };
    (@function $form:ident, $diff:literal, [$($doc:tt)*], $py:ident, $op:ident) => {
        $($doc)*
        #[pyo3::pyfunction]
        #[pyo3(signature = (input, other, *, out=None))]
        pub fn $py<'py>(
            input: &pyo3::Bound<'py, pyo3::PyAny>,
            other: &pyo3::Bound<'py, pyo3::PyAny>,
            out: Option<&pyo3::Bound<'py, $crate::python::core::tensor::PyTensor>>,
        ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
            if let Some(r) = $crate::python::core::bind::bind_binary_ops!(@batched $py, input, other, out) {
                return r;
            }
            let (a, b) = $crate::python::core::bind::bind_binary_ops!(@operands $form, input, other, $py);
            Ok($crate::python::core::bind::result_or_out_of(
                input.py(), stringify!($py), out, &[&a, &b], $diff, || a.$op(&b),
            )?.into_any())
        }
    };
    // Inside vmap: a batched operand runs the pointwise batching rule.
    (@batched $py:ident, $i:ident, $o:ident, $out:ident $(, $alpha:ident)?) => {{
        use $crate::python::core::batched;
        if $out.is_none() && (batched::is_batched($i) || batched::is_batched($o)) {
            let py = $i.py();
            let kw = pyo3::types::PyDict::new(py);
            $(if let Some(a) = $alpha {
                pyo3::types::PyDictMethods::set_item(&kw, "alpha", a)?;
            })?
            let kw = if pyo3::types::PyDictMethods::is_empty(&kw) { None } else { Some(kw) };
            Some(
                batched::pointwise_function("ferrograd._C", stringify!($py), vec![$i.clone(), $o.clone()], kw)
                    .map(|r| r.into_bound(py)),
            )
        } else {
            None
        }
    }};
    // A function's operands: `plain` either may be a number; `first` the
    // input must be a tensor, `tensor` both.
    (@operands plain, $i:ident, $o:ident, $f:ident) => {
        $crate::python::core::args::operands($i, $o)?
    };
    (@operands $form:ident, $i:ident, $o:ident, $f:ident) => {{
        let a = $crate::python::core::args::tensor_arg($i, stringify!($f), "input", 1)?;
        let b = $crate::python::core::bind::bind_binary_ops!(@other $form, $o, &a, $f);
        (a, b)
    }};
    (@register written, $m:ident, $py:ident) => {};
    (@register $form:ident, $m:ident, $py:ident) => {
        pyo3::types::PyModuleMethods::add_function(
            $m,
            pyo3::wrap_pyfunction!(binary_table_fns::$py, $m)?,
        )?;
    };

    // ----- dunders, one block: other a tensor or a number, else NotImplemented -----
    (@dunders [$($acc:tt)*]) => {
        #[pyo3::pymethods]
        impl $crate::python::core::tensor::PyTensor {
            $($acc)*
        }
    };
    (@dunders $acc:tt (fwd $dn:ident $op:ident $op_:ident) $($rest:tt)*) => {
        $crate::python::core::bind::bind_binary_ops!(@dunders $acc (op $dn $op false false) $($rest)*);
    };
    (@dunders $acc:tt (fwd_np $dn:ident $op:ident $op_:ident) $($rest:tt)*) => {
        $crate::python::core::bind::bind_binary_ops!(@dunders $acc (op $dn $op false true) $($rest)*);
    };
    (@dunders $acc:tt (rev $dn:ident $op:ident $op_:ident) $($rest:tt)*) => {
        $crate::python::core::bind::bind_binary_ops!(@dunders $acc (op $dn $op true false) $($rest)*);
    };
    (@dunders $acc:tt (rev $dn:ident $op:ident $op_:ident $f:ident) $($rest:tt)*) => {
        $crate::python::core::bind::bind_binary_ops!(@dunders $acc (op $dn $f false false) $($rest)*);
    };
    (@dunders [$($acc:tt)*] (op $dn:ident $op:ident $rev:literal $np:literal) $($rest:tt)*) => {
        $crate::python::core::bind::bind_binary_ops!(@dunders [$($acc)*
            fn $dn(
                &self,
                py: pyo3::Python<'_>,
                other: &pyo3::Bound<'_, pyo3::PyAny>,
            ) -> pyo3::PyResult<pyo3::Py<pyo3::PyAny>> {
                let a = &self.inner;
                $crate::python::core::args::operator_of(py, a, other, $rev, $np, $crate::Tensor::$op)
            }
        ] $($rest)*);
    };
    (@dunders [$($acc:tt)*] (inp $dn:ident $op:ident $op_:ident) $($rest:tt)*) => {
        $crate::python::core::bind::bind_binary_ops!(@dunders [$($acc)*
            fn $dn(&self, other: &pyo3::Bound<'_, pyo3::PyAny>) -> pyo3::PyResult<()> {
                $crate::python::core::batched::refuse_write_into_plain(other)?;
                let o = $crate::python::core::args::tensor_or_scalar(other, &self.inner)?;
                Ok(self.inner.$op_(&o)?)
            }
        ] $($rest)*);
    };
}
pub(crate) use bind_binary_ops;

/// The bindings of a comparison table (see `crate::ops::compare`), as
/// `bind_binary_ops!`'s.
macro_rules! bind_compare_ops {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident, $inplace:ident $(, $scalar:ident)? [$($alias:ident, $alias_:ident),*]:
            $rule:ident($($kname:literal)?), |$a:ident, $b:ident| $k:expr;
            py $form:ident [$($dk:ident $dn:ident $(= $df:ident)?),*];
    )*) => {
        $crate::python::core::bind::bind_binary_ops!(@bind false $(
            [$(#[doc = $doc])*] $name $inplace [$($alias $alias_)*] $form [$($dk $dn $(= $df)?),*]
        )*);
    };
}
pub(crate) use bind_compare_ops;

/// Tensor methods that torch also has as module functions taking the tensor
/// first, as `input`: each is written once, as the method (docs, then an
/// optional `#[pyo3(signature = ...)]`), and becomes `Tensor.name(...)` and
/// `ferrograd.name(input, ...)`, a function in a module `$fns` (added by
/// `fn $register`) that calls the method. The receiver `&self` makes the
/// function's `input` a `PyRef<PyTensor>`, `slf: &Bound<'py, Self>` a
/// `&Bound<'py, PyTensor>`, `slf: PyRef<'py, Self>` a `PyRef<'py, PyTensor>`.
/// Types other than the receiver's name `PyTensor`, not `Self`.
macro_rules! bind_methods {
    ($fns:ident, $register:ident: $(
        $(#[doc = $doc:literal])*
        $(#[pyo3(signature = ($($sig:tt)*))])?
        fn $name:ident $(<$lt:lifetime>)? ($($params:tt)*) -> $ret:ty $body:block
    )*) => {
        $(
            #[pyo3::pymethods]
            impl $crate::python::core::tensor::PyTensor {
                $(#[doc = $doc])*
                $(#[pyo3(signature = ($($sig)*))])?
                fn $name $(<$lt>)? ($($params)*) -> $ret $body
            }
        )*
        mod $fns {
            #[allow(unused_imports)]
            use super::*;
            $(
                $crate::python::core::bind::bind_methods!(@function
                    [$(#[doc = $doc])*] [$(($($sig)*))?] $name [$($lt)?] ($($params)*) $ret
                );
            )*
        }
        pub(crate) fn $register(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
            $(
                pyo3::types::PyModuleMethods::add_function(
                    m,
                    pyo3::wrap_pyfunction!($fns::$name, m)?,
                )?;
            )*
            Ok(())
        }
    };

    // The function's `input` for each receiver: how the method is handed it.
    (@function $doc:tt $sig:tt $name:ident $lt:tt
        (&$s:ident $(, $arg:ident: $ty:ty)* $(,)?) $ret:ty) => {
        $crate::python::core::bind::bind_methods!(@emit $doc $sig $name $lt
            [by_ref] [$($arg: $ty),*] $ret
        );
    };
    (@function $doc:tt $sig:tt $name:ident $lt:tt
        ($s:ident: &Bound<$l:lifetime, Self> $(, $arg:ident: $ty:ty)* $(,)?) $ret:ty) => {
        $crate::python::core::bind::bind_methods!(@emit $doc $sig $name $lt
            [by_bound] [$($arg: $ty),*] $ret
        );
    };
    (@function $doc:tt $sig:tt $name:ident $lt:tt
        ($s:ident: PyRef<$l:lifetime, Self> $(, $arg:ident: $ty:ty)* $(,)?) $ret:ty) => {
        $crate::python::core::bind::bind_methods!(@emit $doc $sig $name $lt
            [by_pyref] [$($arg: $ty),*] $ret
        );
    };
    // A batched `input` (inside vmap) goes to the method's batching rule,
    // its arguments by keyword; a tensor to the method itself.
    (@emit $doc:tt $sig:tt $name:ident [] $($rest:tt)*) => {
        $crate::python::core::bind::bind_methods!(@emit $doc $sig $name ['py] $($rest)*);
    };
    (@emit [$($doc:tt)*] [$(($($sig:tt)*))?] $name:ident [$lt:lifetime]
        [$get:ident] [$($arg:ident: $ty:ty),*] $ret:ty) => {
        $($doc)*
        #[pyo3::pyfunction]
        $(#[pyo3(signature = (input, $($sig)*))])?
        pub fn $name<$lt>(
            input: &pyo3::Bound<$lt, pyo3::PyAny> $(, $arg: $ty)*
        ) -> pyo3::PyResult<pyo3::Py<pyo3::PyAny>> {
            use $crate::python::core::batched;
            let py = input.py();
            if batched::is_batched(input) {
                let kw = pyo3::types::PyDict::new(py);
                $(batched::VmapArg::put(&$arg, py, stringify!($arg), &kw)?;)*
                return batched::method_call(input, stringify!($name), kw);
            }
            let input = batched::tensor_input(input, stringify!($name))?;
            let r: $ret = $crate::python::core::tensor::PyTensor::$name(
                $crate::python::core::bind::bind_methods!(@get $get input) $(, $arg)*
            );
            pyo3::IntoPyObjectExt::into_py_any(r?, py)
        }
    };
    (@get by_ref $i:ident) => { &$i.borrow() };
    (@get by_bound $i:ident) => { $i };
    (@get by_pyref $i:ident) => { $i.borrow() };
}
pub(crate) use bind_methods;

/// Module functions, each written once: the items given become
/// `#[pyfunction]`s (their docs and `#[pyo3(...)]` options kept) and
/// `fn $register(m)` adds them all to the module `m`, so no list of them
/// is kept apart from their definitions.
///
/// A function marked `@vmap(rule)` (after its attributes) has a batching
/// rule for its first tensor parameter (`PyRef<'_, PyTensor>` or
/// `&Bound<'_, PyTensor>`): called inside vmap with that argument batched,
/// it runs once on the physical tensor and its result is batched over the
/// same levels (`batched::on_physical`). `Elementwise`: every element on
/// its own; `Trailing(k)`: an op on the last `k` dims that takes any
/// leading dims as a batch (linalg). `@vmap(rule, flag)`: only when the
/// bool parameter `flag` (`inplace`) is false. Any other batched tensor
/// argument fails extraction and so takes vmap's per-slice fallback.
macro_rules! bind_functions {
    ($register:ident: $(
        $(#[$meta:meta])*
        $(@vmap($($vmap:tt)*))?
        $vis:vis fn $name:ident $(<$($lt:lifetime),*>)? ($($params:tt)*) $(-> $ret:ty)? $body:block
    )*) => {
        $(
            $crate::python::core::bind::bind_functions!(@item [$(#[$meta])*] [$($($vmap)*)?]
                $vis fn $name [$($($lt),*)?] ($($params)*) [$($ret)?] $body);
        )*
        pub(crate) fn $register(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
            $(
                pyo3::types::PyModuleMethods::add_function(m, pyo3::wrap_pyfunction!($name, m)?)?;
            )*
            Ok(())
        }
    };

    // No batching rule: the item as written.
    (@item [$($meta:tt)*] [] $vis:vis fn $name:ident [$($lt:lifetime),*] ($($params:tt)*)
        [$($ret:ty)?] $body:block) => {
        #[pyo3::pyfunction]
        $($meta)*
        $vis fn $name <$($lt),*> ($($params)*) $(-> $ret)? $body
    };
    // A batching rule: find the first tensor parameter, then emit.
    (@item $meta:tt $vmap:tt $vis:vis fn $name:ident $lts:tt ($($params:tt)*) [$ret:ty] $body:block) => {
        $crate::python::core::bind::bind_functions!(@scan [] ($($params)*,)
            ($meta $vmap $vis $name $lts ($($params)*) $ret $body));
    };
    (@scan [$($acc:tt)*] ($p:ident: PyRef<$l:lifetime, PyTensor>, $($rest:tt)*) $k:tt) => {
        $crate::python::core::bind::bind_functions!(@rest [$($acc)* $p: &pyo3::Bound<'py, pyo3::PyAny>,]
            ($($rest)*) [$p by_pyref] $k);
    };
    (@scan [$($acc:tt)*] ($p:ident: &Bound<$l:lifetime, PyTensor>, $($rest:tt)*) $k:tt) => {
        $crate::python::core::bind::bind_functions!(@rest [$($acc)* $p: &pyo3::Bound<'py, pyo3::PyAny>,]
            ($($rest)*) [$p by_bound] $k);
    };
    (@scan [$($acc:tt)*] ($p:ident: $t:ty, $($rest:tt)*) $k:tt) => {
        $crate::python::core::bind::bind_functions!(@scan [$($acc)* $p: $t,] ($($rest)*) $k);
    };
    (@rest [$($acc:tt)*] ($(,)?) $found:tt $k:tt) => {
        $crate::python::core::bind::bind_functions!(@emit [$($acc)*] $found $k);
    };
    (@rest [$($acc:tt)*] ($p:ident: $t:ty, $($rest:tt)*) $found:tt $k:tt) => {
        $crate::python::core::bind::bind_functions!(@rest [$($acc)* $p: $t,] ($($rest)*) $found $k);
    };
    (@emit [$($outer:tt)*] [$p:ident $get:ident]
        ([$($meta:tt)*] [$rule:ident $(($k:literal))? $(, $flag:ident)?] $vis:vis $name:ident
            [$($lt:lifetime),*] ($($pn:ident: $pt:ty),* $(,)?) $ret:ty $body:block)) => {
        #[pyo3::pyfunction]
        $($meta)*
        #[allow(non_snake_case)]
        $vis fn $name<'py>($($outer)*) -> pyo3::PyResult<pyo3::Py<pyo3::PyAny>> {
            #[allow(non_snake_case, clippy::too_many_arguments)]
            fn op<$($lt),*>($($pn: $pt),*) -> $ret $body
            use $crate::python::core::batched;
            let py = $p.py();
            if batched::is_batched($p) $(&& !$flag)? {
                let rule = batched::PhysicalRule::$rule$(($k))?;
                return batched::on_physical(rule, stringify!($name), $p, |$p| {
                    let $p = $crate::python::core::bind::bind_functions!(@get $get $p);
                    pyo3::IntoPyObjectExt::into_py_any(op($($pn),*)?, py)
                });
            }
            let $p = batched::tensor_input($p, stringify!($name))?;
            let $p = $crate::python::core::bind::bind_functions!(@get $get $p);
            pyo3::IntoPyObjectExt::into_py_any(op($($pn),*)?, py)
        }
    };
    (@get by_pyref $p:ident) => { $p.borrow() };
    (@get by_bound $p:ident) => { $p };
}
pub(crate) use bind_functions;

/// Adds `#[pyfunction]`s that a macro made per rank (`conv1d`..`conv3d`)
/// to a module: `add_functions!(m => f, g, h)`.
macro_rules! add_functions {
    ($m:expr => $($f:path),* $(,)?) => {
        $(pyo3::types::PyModuleMethods::add_function($m, pyo3::wrap_pyfunction!($f, $m)?)?;)*
    };
}
pub(crate) use add_functions;
