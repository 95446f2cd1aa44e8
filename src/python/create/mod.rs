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
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
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

/// The dtype asked for, else the default float dtype.
pub(crate) fn float_or_default(d: Option<DType>) -> DType {
    d.unwrap_or(crate::tensor::dtype::default_float())
}

/// Factory `#[pyfunction]`s, each written once: its own parameters come
/// first (`fn name(signature...)(params...)`, the signature up to where
/// torch's factory keywords go), then torch's factory keywords `dtype=None,
/// layout=None, device=None, pin_memory=False, requires_grad=False`. The
/// layout is accepted, the device must be the CPU and pin_memory False; the
/// body sees the dtype asked for (`|dtype|`, an `Option<DType>`) and makes
/// the tensor, which then gets `requires_grad` ([`finish`]). `fn $register(m)`
/// adds them all to the module.
macro_rules! factories {
    ($register:ident: $(
        $(#[doc = $doc:literal])*
        fn $name:ident($($sig:tt)*)($($arg:ident: $ty:ty),* $(,)?) |$dtype:ident| $body:block
    )*) => {
        $(
            $(#[doc = $doc])*
            #[pyfunction]
            #[pyo3(signature = ($($sig)* dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
            #[allow(clippy::too_many_arguments)]
            pub(crate) fn $name(
                $($arg: $ty,)*
                dtype: Option<DTypeArg>,
                layout: Option<&Bound<'_, PyAny>>,
                device: Option<&Bound<'_, PyAny>>,
                pin_memory: bool,
                requires_grad: bool,
            ) -> PyResult<Fresh> {
                cpu_only(layout, device, pin_memory)?;
                let $dtype = dt(dtype);
                let make = || -> PyResult<Tensor> { Ok($body) };
                finish(make()?, requires_grad)
            }
        )*
        pub(crate) fn $register(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(m.add_function(wrap_pyfunction!($name, m)?)?;)*
            Ok(())
        }
    };
}
pub(crate) use factories;

factories! { register_factories:
    /// `empty`: values unspecified (a reused buffer's old ones, or zeros),
    /// never uninitialised memory.
    fn empty(*shape, size=None, memory_format=None,)(
        shape: &Bound<'_, PyTuple>,
        size: Option<&Bound<'_, PyAny>>,
        memory_format: Option<&Bound<'_, PyAny>>,
    ) |dtype| {
        let _ = memory_format;
        let s = shape_from(shape, size, "empty")?;
        Tensor::try_empty(&s, float_or_default(dtype))?
    }
    /// A tensor of zeros.
    fn zeros(*shape, size=None,)(shape: &Bound<'_, PyTuple>, size: Option<&Bound<'_, PyAny>>) |dtype| {
        let s = shape_from(shape, size, "zeros")?;
        Tensor::try_full(&s, Scalar::Int(0), float_or_default(dtype))?
    }
    /// A tensor of ones.
    fn ones(*shape, size=None,)(shape: &Bound<'_, PyTuple>, size: Option<&Bound<'_, PyAny>>) |dtype| {
        let s = shape_from(shape, size, "ones")?;
        Tensor::try_full(&s, Scalar::Int(1), float_or_default(dtype))?
    }
    fn full(size, fill_value, *,)(size: &Bound<'_, PyAny>, fill_value: &Bound<'_, PyAny>) |dtype| {
        let s = checked_dims(&seq_shape(size, "full")?)?;
        let v = fill_scalar(fill_value)?;
        let d = dtype.unwrap_or(v.dtype());
        Tensor::try_full(&s, v.checked_to(d)?, d)?
    }
    fn arange(*args, start=None, end=None, step=None,)(
        args: &Bound<'_, PyTuple>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        step: Option<&Bound<'_, PyAny>>,
    ) |dtype| {
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
        let number = |v: Option<Bound<'_, PyAny>>, what, default| match v {
            Some(v) => range_scalar(&v, what),
            None => Ok(Scalar::Int(default)),
        };
        Tensor::arange(number(s, "start", 0)?, e, number(st, "step", 1)?, dtype)?
    }
    fn linspace(start, end, steps, *,)(start: &Bound<'_, PyAny>, end: &Bound<'_, PyAny>, steps: i64) |dtype| {
        if steps < 0 {
            return Err(PyRuntimeError::new_err("number of steps must be non-negative"));
        }
        let s = range_scalar(start, "start")?.to_f64();
        let e = range_scalar(end, "end")?.to_f64();
        Tensor::linspace(s, e, steps as usize, float_or_default(dtype))?
    }
    fn eye(n, m=None, *,)(n: i64, m: Option<i64>) |dtype| {
        let m = m.unwrap_or(n);
        if let Some((k, v)) = [("n", n), ("m", m)].into_iter().find(|&(_, v)| v < 0) {
            return Err(PyRuntimeError::new_err(format!(
                "{k} must be greater or equal to 0, got {v}"
            )));
        }
        let [n, m] = checked_dims(&[n, m])?[..] else { unreachable!("two dims") };
        Tensor::eye(n, m, float_or_default(dtype))?
    }
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
    register_factories(m)?;
    random::register_random(m)?;
    crate::python::core::generator::register(m)?;
    like::register_like(m)?;
    Ok(())
}
