//! Tensor creation from Python: `tensor`, `as_tensor`, `zeros`, `ones`,
//! `empty`, `full`, `arange`, `linspace`, `eye` here; the random factories
//! in `random.rs`, the `*_like` family in `like.rs`, `Tensor.new_*`,
//! `Tensor.to`/`type`/`cpu` in `methods.rs`; default dtype, seeds and RNG
//! state here.

pub(crate) mod like;
pub(crate) mod memory;
pub(crate) mod methods;
pub(crate) mod random;

use crate::python::core::args::*;
use crate::python::core::bind::bind_functions;
use crate::python::core::data::*;
use crate::python::core::device::*;
use crate::python::core::dtype::PyDType;
use crate::python::core::identity::Fresh;
use crate::python::core::numpy;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::Scalar;
use crate::{DType, Tensor};
use pyo3::exceptions::{PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyTuple};

/// A fresh leaf with `requires_grad` set (floating dtypes only, like torch).
/// A factory's result; one that requires grad (a leaf the user will see
/// again as `AccumulateGrad.variable` or a saved input) is remembered as
/// its tensor's Python object (see `identity`).
pub(crate) fn finish(t: Tensor, requires_grad: bool) -> PyResult<Fresh> {
    if requires_grad {
        if !t.dtype().is_floating() {
            return Err(PyRuntimeError::new_err(
                "Only Tensors of floating point and complex dtype can require gradients",
            ));
        }
        t.set_requires_grad(true)?;
    }
    Ok(Fresh(wrap(t)))
}

// ---------------------------------------------------------------------------
// tensor(data)
// ---------------------------------------------------------------------------

bind_functions! { register_functions:
    #[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false, pin_memory=false))]
    pub(crate) fn tensor(
        data: &Bound<'_, PyAny>,
        dtype: Option<DTypeArg>,
        device: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
        pin_memory: bool,
    ) -> PyResult<Fresh> {
        check_device(device)?;
        check_pin_memory(pin_memory)?;
        finish(tensor_from_py(data, dt(dtype))?, requires_grad)
    }
    /// `as_tensor`: shares memory with a tensor or NumPy array when no
    /// conversion is needed, else copies as `tensor()` does.
    #[pyo3(signature = (data, dtype=None, device=None))]
    pub(crate) fn as_tensor(
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        dtype: Option<DTypeArg>,
        device: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        check_device(device)?;
        let dtype = dt(dtype);
        if let Ok(t) = data.cast::<PyTensor>() {
            let inner = t.borrow().inner.clone();
            return match dtype {
                Some(d) if d != inner.dtype() => {
                    Ok(Py::new(py, wrap(inner.to_dtype(d)?))?.into_any())
                }
                _ => Ok(data.clone().unbind()),
            };
        }
        if let Some(t) = numpy::share_ndarray(data, dtype)? {
            return Ok(Py::new(py, wrap(t))?.into_any());
        }
        Ok(Py::new(py, wrap(tensor_from_py(data, dtype)?))?.into_any())
    }
    /// `empty`: values unspecified (a reused buffer's old ones, or zeros),
    /// never uninitialised memory.
    #[pyo3(signature = (*shape, size=None, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false, memory_format=None))]
    pub(crate) fn empty(
        shape: &Bound<'_, PyTuple>,
        size: Option<&Bound<'_, PyAny>>,
        dtype: Option<DTypeArg>,
        layout: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        pin_memory: bool,
        requires_grad: bool,
        memory_format: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Fresh> {
        let _ = (layout, memory_format);
        check_device(device)?;
        check_pin_memory(pin_memory)?;
        let s = shape_from(shape, size, "empty")?;
        finish(Tensor::try_empty(&s, default_float(dtype))?, requires_grad)
    }
    #[pyo3(signature = (size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
    pub(crate) fn full(
        size: &Bound<'_, PyAny>,
        fill_value: &Bound<'_, PyAny>,
        dtype: Option<DTypeArg>,
        layout: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        pin_memory: bool,
        requires_grad: bool,
    ) -> PyResult<Fresh> {
        cpu_only(layout, device, pin_memory)?;
        let s = checked_dims(&seq_shape(size, "full")?)?;
        let v = fill_scalar(fill_value)?;
        let d = dt(dtype).unwrap_or(v.dtype());
        finish(Tensor::try_full(&s, v.checked_to(d)?, d)?, requires_grad)
    }
    #[pyo3(signature = (*args, start=None, end=None, step=None, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
    pub(crate) fn arange(
        args: &Bound<'_, PyTuple>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        step: Option<&Bound<'_, PyAny>>,
        dtype: Option<DTypeArg>,
        layout: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        pin_memory: bool,
        requires_grad: bool,
    ) -> PyResult<Fresh> {
        cpu_only(layout, device, pin_memory)?;
        let pos: Vec<Bound<'_, PyAny>> = args.iter().collect();
        let (s, e, st) = match (pos.len(), start, end, step) {
            (0, s, Some(e), st) => (s.cloned(), e.clone(), st.cloned()),
            (1, None, None, st) => (None, pos[0].clone(), st.cloned()),
            (1, None, Some(e), st) => (Some(pos[0].clone()), e.clone(), st.cloned()),
            (2, None, None, st) => (Some(pos[0].clone()), pos[1].clone(), st.cloned()),
            (3, None, None, None) => (Some(pos[0].clone()), pos[1].clone(), Some(pos[2].clone())),
            _ => {
                return Err(PyTypeError::new_err(
                    "arange() received an invalid combination of arguments: expected (end), (start, end) or (start, end, step)",
                ))
            }
        };
        let e = range_scalar(&e, "end")?;
        let s = s
            .map(|s| range_scalar(&s, "start"))
            .transpose()?
            .unwrap_or(Scalar::Int(0));
        let st = st
            .map(|s| range_scalar(&s, "step"))
            .transpose()?
            .unwrap_or(Scalar::Int(1));
        let any_float = [s, e, st].iter().any(|x| matches!(x, Scalar::Float(_)));
        let d = dt(dtype).unwrap_or(if any_float {
            crate::tensor::dtype::default_float()
        } else {
            DType::I64
        });
        if d == DType::Bool {
            return Err(PyNotImplementedError::new_err(
                "\"arange_cpu\" not implemented for 'Bool'",
            ));
        }
        if d.is_integral() && st.to_f64() != 0.0 && (st.to_f64() as i64) == 0 {
            return Err(PyValueError::new_err("step must be nonzero"));
        }
        finish(Tensor::arange(s, e, st, d)?, requires_grad)
    }
    #[pyo3(signature = (start, end, steps, *, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
    pub(crate) fn linspace(
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        steps: i64,
        dtype: Option<DTypeArg>,
        layout: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        pin_memory: bool,
        requires_grad: bool,
    ) -> PyResult<Fresh> {
        cpu_only(layout, device, pin_memory)?;
        if steps < 0 {
            return Err(PyRuntimeError::new_err(
                "number of steps must be non-negative",
            ));
        }
        let s = range_scalar(start, "start")?.to_f64();
        let e = range_scalar(end, "end")?.to_f64();
        let d = default_float(dtype);
        if d == DType::Bool {
            return Err(PyNotImplementedError::new_err(
                "\"linspace_cpu\" not implemented for 'Bool'",
            ));
        }
        finish(Tensor::linspace(s, e, steps as usize, d)?, requires_grad)
    }
    #[pyo3(signature = (n, m=None, *, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
    pub(crate) fn eye(
        n: i64,
        m: Option<i64>,
        dtype: Option<DTypeArg>,
        layout: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        pin_memory: bool,
        requires_grad: bool,
    ) -> PyResult<Fresh> {
        cpu_only(layout, device, pin_memory)?;
        if n < 0 {
            return Err(PyRuntimeError::new_err(format!(
                "n must be greater or equal to 0, got {n}"
            )));
        }
        let m = m.unwrap_or(n);
        if m < 0 {
            return Err(PyRuntimeError::new_err(format!(
                "m must be greater or equal to 0, got {m}"
            )));
        }
        checked_dims(&[n, m])?;
        finish(
            Tensor::eye(n as usize, m as usize, default_float(dtype))?,
            requires_grad,
        )
    }
    pub(crate) fn get_default_dtype() -> PyDType {
        crate::tensor::dtype::default_float().into()
    }
    /// The smallest dtype both `type1` and `type2` convert to without
    /// losing their category (uint8 with int8 gives int16).
    pub(crate) fn promote_types(type1: PyDType, type2: PyDType) -> PyDType {
        DType::promote(type1.dtype, type2.dtype).into()
    }
    /// Whether torch's casting rules allow an op to write a `from_` result
    /// into a `to` tensor: no float to integer, no number to bool.
    pub(crate) fn can_cast(from_: PyDType, to: PyDType) -> bool {
        let (f, t) = (from_.dtype, to.dtype);
        !(f.is_floating() && !t.is_floating() || f != DType::Bool && t == DType::Bool)
    }
    /// The dtype of an arithmetic op on `tensor` and `other` (tensors or
    /// Python numbers), by torch's promotion rules.
    pub(crate) fn result_type(
        tensor: &Bound<'_, PyAny>,
        other: &Bound<'_, PyAny>,
    ) -> PyResult<PyDType> {
        let (mut tensors, mut scalars) = (Vec::new(), Vec::new());
        for obj in [tensor, other] {
            if let Ok(t) = obj.cast::<PyTensor>() {
                tensors.push(t.borrow().inner.clone());
            } else if let Some(s) = as_scalar(obj) {
                scalars.push(s);
            } else {
                return Err(PyTypeError::new_err(format!(
                    "result_type(): argument must be Tensor or Number, not {}",
                    obj.get_type().name()?
                )));
            }
        }
        let refs: Vec<&Tensor> = tensors.iter().collect();
        Ok(crate::ops::pointwise::result_type_of(&refs, &scalars).into())
    }
    pub(crate) fn set_default_dtype(d: &Bound<'_, PyAny>) -> PyResult<()> {
        let Ok(d) = d.extract::<PyDType>() else {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "set_default_dtype(): argument 'd' must be torch.dtype, not {}",
                d.get_type().name()?
            )));
        };
        Ok(crate::tensor::dtype::set_default_float(d.dtype)?)
    }
    pub(crate) fn is_tensor(obj: &Bound<'_, PyAny>) -> bool {
        obj.is_instance_of::<PyTensor>()
    }
    pub(crate) fn is_floating_point(input: PyRef<'_, PyTensor>) -> bool {
        input.inner.dtype().is_floating()
    }
    pub(crate) fn is_inference(input: PyRef<'_, PyTensor>) -> bool {
        input.inner.is_inference()
    }
    pub(crate) fn numel(input: PyRef<'_, PyTensor>) -> usize {
        input.inner.numel()
    }
    /// Panics inside Rust, to test that a panic becomes a Python exception
    /// (pyo3's PanicException) and leaves the interpreter alive.
    pub(crate) fn _test_panic() {
        panic!("ferrograd._C._test_panic: deliberate panic for testing");
    }
}

pub(crate) fn check_pin_memory(pin_memory: bool) -> PyResult<()> {
    if pin_memory {
        return Err(PyRuntimeError::new_err(
            "pin_memory=True needs an accelerator; ferrograd is CPU-only",
        ));
    }
    Ok(())
}

/// The factory arguments ferrograd only checks: `layout` (any), `device`
/// (the CPU) and `pin_memory` (False).
pub(crate) fn cpu_only(
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    pin_memory: bool,
) -> PyResult<()> {
    let _ = layout;
    check_device(device)?;
    check_pin_memory(pin_memory)
}

// ---------------------------------------------------------------------------
// factories
// ---------------------------------------------------------------------------

pub(crate) fn default_float(d: Option<DTypeArg>) -> DType {
    dt(d).unwrap_or(crate::tensor::dtype::default_float())
}

/// `name(*shape, size=None, dtype=None, layout=None, device=None,
/// pin_memory=False, requires_grad=False)` factories: `|shape, dtype| make`;
/// `name [generator]` also takes `generator=None` after `size`.
macro_rules! shape_factories {
    ($($(#[$meta:meta])* $name:ident $([$generator:ident])? => |$s:ident, $d:ident| $make:expr;)*) => {$(
        $(#[$meta])*
        #[pyfunction]
        #[pyo3(signature = (*shape, size=None, $($generator=None,)? dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
        pub(crate) fn $name(
            shape: &Bound<'_, PyTuple>,
            size: Option<&Bound<'_, PyAny>>,
            $($generator: Option<&Bound<'_, PyAny>>,)?
            dtype: Option<DTypeArg>,
            layout: Option<&Bound<'_, PyAny>>,
            device: Option<&Bound<'_, PyAny>>,
            pin_memory: bool,
            requires_grad: bool,
        ) -> PyResult<Fresh> {
            cpu_only(layout, device, pin_memory)?;
            $(let $generator = crate::python::core::generator::generator_arg($generator, stringify!($name))?;)?
            let $s = shape_from(shape, size, stringify!($name))?;
            let $d = default_float(dtype);
            finish($make, requires_grad)
        }
    )*};
}
pub(crate) use shape_factories;

shape_factories! {
    /// A tensor of zeros.
    zeros => |s, d| Tensor::try_full(&s, Scalar::Int(0), d)?;
    /// A tensor of ones.
    ones => |s, d| Tensor::try_full(&s, Scalar::Int(1), d)?;
}

/// A fill value and the dtype torch infers from it.
pub(crate) fn fill_scalar(v: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    if let Some(s) = value_scalar(v)? {
        return Ok(s);
    }
    if let Ok(t) = v.cast::<PyTensor>() {
        let t = &t.borrow().inner;
        if t.ndim() == 0 {
            return Ok(t.item()?);
        }
        return Err(PyRuntimeError::new_err(format!(
            "fill_value must be a number or a 0-dim tensor, but got a {}-dim tensor",
            t.ndim()
        )));
    }
    if v.is_instance_of::<PyInt>() {
        return Err(pyo3::exceptions::PyOverflowError::new_err(
            "int too big to convert",
        ));
    }
    Err(PyTypeError::new_err(format!(
        "fill_value must be a number, not {}",
        v.get_type().name()?
    )))
}

/// A number argument of a range function (Python number, NumPy scalar or
/// one-element tensor).
pub(crate) fn range_scalar(v: &Bound<'_, PyAny>, what: &str) -> PyResult<Scalar> {
    if let Some(s) = value_scalar(v)? {
        return Ok(s);
    }
    if let Ok(t) = v.cast::<PyTensor>() {
        let t = &t.borrow().inner;
        if t.numel() == 1 {
            return Ok(t.item()?);
        }
    }
    Err(PyTypeError::new_err(format!(
        "argument '{what}' must be Number, not {}",
        v.get_type().name()?
    )))
}

// ---------------------------------------------------------------------------
// Tensor methods: new_*, to, type, cpu
// ---------------------------------------------------------------------------

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    m.add_class::<crate::python::core::device::PyDevice>()?;
    m.add_function(wrap_pyfunction!(_set_size_class, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(ones, m)?)?;
    m.add_function(wrap_pyfunction!(random::rand, m)?)?;
    m.add_function(wrap_pyfunction!(random::randn, m)?)?;
    m.add_function(wrap_pyfunction!(random::randint, m)?)?;
    m.add_function(wrap_pyfunction!(random::randperm, m)?)?;
    crate::python::core::generator::register(m)?;
    m.add_function(wrap_pyfunction!(like::zeros_like, m)?)?;
    m.add_function(wrap_pyfunction!(like::ones_like, m)?)?;
    m.add_function(wrap_pyfunction!(like::empty_like, m)?)?;
    m.add_function(wrap_pyfunction!(like::full_like, m)?)?;
    m.add_function(wrap_pyfunction!(like::rand_like, m)?)?;
    m.add_function(wrap_pyfunction!(like::randn_like, m)?)?;
    m.add_function(wrap_pyfunction!(like::randint_like, m)?)?;
    Ok(())
}
