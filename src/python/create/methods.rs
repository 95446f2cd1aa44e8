//! `Tensor(...)`, `Tensor.new_*`, `Tensor.to`/`type`/`cpu`/`cuda`.

use super::like::like_dtype;
use super::*;
use crate::python::core::args::as_scalar;
use crate::python::core::args::*;
use crate::python::core::data::*;
use crate::python::core::device::*;
use crate::python::core::identity::Fresh;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::Scalar;
use crate::{DType, Tensor};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString, PyTuple};

pub(crate) fn type_name(d: DType) -> String {
    format!("ferrograd.{}", d.legacy_tensor_name())
}

pub(crate) fn dtype_from_type_name(s: &str) -> Option<DType> {
    let short = s
        .strip_prefix("ferrograd.")
        .or_else(|| s.strip_prefix("torch."))?;
    DType::ALL
        .into_iter()
        .find(|d| d.legacy_tensor_name() == short)
}

/// `Tensor.new_*` methods, each written once: its own parameters (as in
/// [`factories!`]'s items), then torch's `dtype=None, device=None,
/// requires_grad=False, layout=None, pin_memory=False`; the body sees the
/// dtype (self's unless given) and makes the tensor, which then gets
/// `requires_grad`.
macro_rules! new_methods {
    ($($(#[doc = $doc:literal])* fn $name:ident($($sig:tt)*)($($arg:ident: $ty:ty),* $(,)?) |$d:ident| $body:block)*) => {
        #[pymethods]
        impl PyTensor {$(
            $(#[doc = $doc])*
            #[pyo3(signature = ($($sig)* dtype=None, device=None, requires_grad=false, layout=None, pin_memory=false))]
            #[allow(clippy::too_many_arguments)]
            fn $name(
                &self,
                $($arg: $ty,)*
                dtype: Option<DTypeArg>,
                device: Option<&Bound<'_, PyAny>>,
                requires_grad: bool,
                layout: Option<&Bound<'_, PyAny>>,
                pin_memory: bool,
            ) -> PyResult<Fresh> {
                cpu_only(layout, device, pin_memory)?;
                let $d = like_dtype(&self.inner, dtype);
                let make = || -> PyResult<Tensor> { Ok($body) };
                finish(make()?, requires_grad)
            }
        )*}
    };
}

new_methods! {
    fn new_zeros(*size,)(size: &Bound<'_, PyTuple>) |d| {
        Tensor::try_full(&shape_varargs(size, "new_zeros")?, Scalar::Int(0), d)?
    }
    fn new_ones(*size,)(size: &Bound<'_, PyTuple>) |d| {
        Tensor::try_full(&shape_varargs(size, "new_ones")?, Scalar::Int(1), d)?
    }
    fn new_empty(*size,)(size: &Bound<'_, PyTuple>) |d| {
        Tensor::try_full(&shape_varargs(size, "new_empty")?, Scalar::Int(0), d)?
    }
    fn new_full(size, fill_value, *,)(size: &Bound<'_, PyAny>, fill_value: &Bound<'_, PyAny>) |d| {
        let s = checked_dims(&seq_shape(size, "new_full")?)?;
        Tensor::try_full(&s, fill_scalar(fill_value)?.checked_to(d)?, d)?
    }
    fn new_tensor(data, *,)(data: &Bound<'_, PyAny>) |d| {
        tensor_from_py(data, Some(d))?
    }
}

#[pymethods]
impl PyTensor {
    /// The legacy constructor `Tensor(...)`: `Tensor()` is empty,
    /// `Tensor(2, 3)` / `Tensor(Size)` a float32 tensor of that shape,
    /// `Tensor(data)` float32 data, `Tensor(t)` an alias of `t`.
    #[new]
    #[pyo3(signature = (*args, device=None))]
    fn py_new(args: &Bound<'_, PyTuple>, device: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        check_device(device)?;
        let py = args.py();
        let f32_of = |shape: &[usize]| wrap(Tensor::zeros(shape, DType::F32));
        if args.is_empty() {
            return Ok(f32_of(&[0]));
        }
        let is_int =
            |a: &Bound<'_, PyAny>| a.is_instance_of::<PyInt>() && !a.is_instance_of::<PyBool>();
        if args.len() == 1 {
            let a = args.get_item(0)?;
            if let Ok(t) = a.cast::<PyTensor>() {
                return Ok(wrap(t.borrow().inner.clone()));
            }
            let is_size = match SIZE_CLASS.get(py) {
                Some((cls, _)) => a.is_instance(cls.bind(py))?,
                None => false,
            };
            if is_size || is_int(&a) {
                return Ok(f32_of(&shape_from(args, None, "new")?));
            }
            if as_scalar(&a).is_some() || a.is_none() {
                return Err(PyTypeError::new_err(format!(
                    "new(): data must be a sequence (got {})",
                    a.get_type().name()?
                )));
            }
            return Ok(wrap(tensor_from_py(&a, Some(DType::F32))?));
        }
        if args.iter().all(|a| is_int(&a)) {
            return Ok(f32_of(&shape_from(args, None, "new")?));
        }
        Err(PyTypeError::new_err(
            "new() received an invalid combination of arguments: expected (), (*size), (Size), (data) or (Tensor)",
        ))
    }

    /// `to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other)`, and the
    /// keyword forms. Returns `self` itself when nothing changes (unless
    /// `copy=True`), like torch.
    #[pyo3(signature = (*args, **kwargs))]
    fn to(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let mut dtype: Option<DType> = None;
        let mut copy = false;
        let pos: Vec<Bound<'_, PyAny>> = args.iter().collect();
        let bad = |why: String| {
            PyTypeError::new_err(format!(
                "to() received an invalid combination of arguments: {why}"
            ))
        };
        let mut i = 0;
        if let Some(a) = pos.first() {
            if let Ok(o) = a.cast::<PyTensor>() {
                dtype = Some(o.borrow().inner.dtype());
                i = 1;
            } else if is_device_like(a) {
                check_device(Some(a))?;
                i = 1;
                if let Some(b) = pos.get(1) {
                    if !b.is_instance_of::<PyBool>() {
                        dtype = Some(b.extract::<DTypeArg>()?.0);
                        i = 2;
                    }
                }
            } else if !a.is_instance_of::<PyBool>() {
                dtype = Some(a.extract::<DTypeArg>()?.0);
                i = 1;
            }
        }
        // Trailing positional non_blocking, copy.
        for (positional_nb, b) in pos[i..].iter().enumerate() {
            let v: bool = b.extract().map_err(|_| {
                bad(format!(
                    "unexpected argument of type {}",
                    crate::python::core::args::type_name(b)
                ))
            })?;
            match positional_nb {
                0 => {}
                1 => copy = v,
                _ => return Err(bad("too many arguments".into())),
            }
        }
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                let k: String = k.extract()?;
                match k.as_str() {
                    "dtype" => {
                        if !v.is_none() {
                            dtype = Some(v.extract::<DTypeArg>()?.0)
                        }
                    }
                    "device" => check_device(Some(&v))?,
                    "non_blocking" => {
                        let _: bool = v.extract()?;
                    }
                    "copy" => copy = v.extract()?,
                    "memory_format" => {}
                    other => return Err(bad(format!("unexpected keyword argument '{other}'"))),
                }
            }
        }
        let t = slf.borrow().inner.clone();
        let py = slf.py();
        match dtype {
            Some(d) if d != t.dtype() => Ok(Py::new(py, wrap(t.to_dtype(d)?))?.into_any()),
            _ if copy => Ok(Py::new(py, wrap(t.clone_tensor()?))?.into_any()),
            _ => Ok(slf.clone().into_any().unbind()),
        }
    }

    /// `type()` names the tensor type ("ferrograd.FloatTensor"); `type(dtype)`
    /// or `type("ferrograd.DoubleTensor")` converts.
    #[pyo3(signature = (dtype=None, non_blocking=false))]
    fn r#type(
        slf: &Bound<'_, Self>,
        dtype: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = non_blocking;
        let py = slf.py();
        let t = slf.borrow().inner.clone();
        let Some(d) = dtype.filter(|d| !d.is_none()) else {
            return Ok(type_name(t.dtype()).into_pyobject(py)?.into_any().unbind());
        };
        let target = if let Ok(s) = d.cast::<PyString>() {
            let s = s.to_cow()?;
            dtype_from_type_name(&s)
                .ok_or_else(|| PyValueError::new_err(format!("invalid type: '{s}'")))?
        } else {
            d.extract::<DTypeArg>()?.0
        };
        if target == t.dtype() {
            return Ok(slf.clone().into_any().unbind());
        }
        Ok(Py::new(py, wrap(t.to_dtype(target)?))?.into_any())
    }

    /// Already on the CPU: returns `self`.
    #[pyo3(signature = (memory_format=None))]
    fn cpu(slf: &Bound<'_, Self>, memory_format: Option<&Bound<'_, PyAny>>) -> Py<PyAny> {
        let _ = memory_format;
        slf.clone().into_any().unbind()
    }

    #[pyo3(signature = (device=None, non_blocking=false, memory_format=None))]
    fn cuda(
        &self,
        device: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
        memory_format: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let _ = (device, non_blocking, memory_format);
        Err(not_cpu("cuda"))
    }

    #[getter]
    fn is_cpu(&self) -> bool {
        true
    }
}
