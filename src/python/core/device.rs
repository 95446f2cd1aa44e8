//! `ferrograd.device` and the `device=` argument (only "cpu" is usable).

use crate::python::core::args::type_name;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString, PyTuple};

/// Device types torch knows; only "cpu" is usable in ferrograd.
pub(crate) const DEVICE_TYPES: &[&str] = &[
    "cpu",
    "cuda",
    "ipu",
    "xpu",
    "mkldnn",
    "opengl",
    "opencl",
    "ideep",
    "hip",
    "ve",
    "fpga",
    "maia",
    "xla",
    "lazy",
    "vulkan",
    "mps",
    "meta",
    "hpu",
    "mtia",
    "privateuseone",
];

/// `ferrograd.device`: a device descriptor, as `torch.device`. Any device
/// torch knows can be described, but ferrograd computes only on "cpu".
#[pyclass(name = "device", module = "ferrograd", frozen, from_py_object)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyDevice {
    kind: String,
    index: Option<i64>,
}

impl PyDevice {
    pub fn cpu() -> Self {
        PyDevice {
            kind: "cpu".into(),
            index: None,
        }
    }
    fn parse(s: &str) -> PyResult<Self> {
        let (kind, index) = match s.split_once(':') {
            Some((k, i)) => {
                let idx = i
                    .parse::<i64>()
                    .ok()
                    .filter(|_| !i.starts_with('+') && !i.is_empty());
                match idx {
                    Some(v) => (k, Some(v)),
                    None => {
                        return Err(PyRuntimeError::new_err(format!(
                            "Invalid device string: '{s}'"
                        )))
                    }
                }
            }
            None => (s, None),
        };
        if !DEVICE_TYPES.contains(&kind) {
            return Err(PyRuntimeError::new_err(format!(
                "Expected one of {} device type at start of device string: {}",
                DEVICE_TYPES.join(", "),
                s
            )));
        }
        Self::checked(kind, index)
    }
    fn checked(kind: &str, index: Option<i64>) -> PyResult<Self> {
        if let Some(i) = index {
            if i < 0 {
                return Err(PyRuntimeError::new_err(format!(
                    "Device index must not be negative, got {i}"
                )));
            }
        }
        Ok(PyDevice {
            kind: kind.into(),
            index,
        })
    }
    fn label(&self) -> String {
        match self.index {
            Some(i) => format!("{}:{}", self.kind, i),
            None => self.kind.clone(),
        }
    }
}

#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (r#type, index=None))]
    fn py_new(r#type: &Bound<'_, PyAny>, index: Option<i64>) -> PyResult<Self> {
        if let Ok(d) = r#type.cast::<PyDevice>() {
            return Ok(d.get().clone());
        }
        let s: String = r#type.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "device(): argument 'type' must be str, not {}",
                type_name(r#type)
            ))
        })?;
        let d = Self::parse(&s)?;
        match (index, d.index) {
            (Some(_), Some(_)) => Err(PyRuntimeError::new_err(format!(
                "type (string) must not include an index because index was passed explicitly: {s}"
            ))),
            (Some(i), None) => Self::checked(&d.kind, Some(i)),
            _ => Ok(d),
        }
    }
    #[getter]
    fn r#type(&self) -> &str {
        &self.kind
    }
    #[getter]
    fn index(&self) -> Option<i64> {
        self.index
    }
    fn __repr__(&self) -> String {
        match self.index {
            Some(i) => format!("device(type='{}', index={})", self.kind, i),
            None => format!("device(type='{}')", self.kind),
        }
    }
    fn __str__(&self) -> String {
        self.label()
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyDevice>()
            .map(|o| *o.get() == *self)
            .unwrap_or(false)
    }
    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let d = slf.get();
        let args = match d.index {
            Some(i) => PyTuple::new(
                py,
                [
                    d.kind.clone().into_pyobject(py)?.into_any(),
                    i.into_pyobject(py)?.into_any(),
                ],
            )?,
            None => PyTuple::new(py, [d.kind.clone()])?,
        };
        PyTuple::new(py, [slf.get_type().into_any(), args.into_any()])
    }
}

/// Checks a `device=` argument (None, "cpu", "cpu:0", a `ferrograd.device`).
/// Anything but the CPU is a RuntimeError.
pub(crate) fn check_device(device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let Some(d) = device.filter(|d| !d.is_none()) else {
        return Ok(());
    };
    let dev = parse_device(d)?;
    if dev.kind != "cpu" {
        return Err(not_cpu(&dev.label()));
    }
    Ok(())
}

pub(crate) fn not_cpu(label: &str) -> PyErr {
    PyRuntimeError::new_err(format!(
        "ferrograd supports only the 'cpu' device, got '{label}'"
    ))
}

/// A device given as a `ferrograd.device`, a string or (as torch allows) an
/// accelerator ordinal.
pub(crate) fn parse_device(d: &Bound<'_, PyAny>) -> PyResult<PyDevice> {
    if let Ok(dev) = d.cast::<PyDevice>() {
        return Ok(dev.get().clone());
    }
    if let Ok(s) = d.cast::<PyString>() {
        return PyDevice::parse(&s.to_cow()?);
    }
    if d.is_instance_of::<PyInt>() && !d.is_instance_of::<PyBool>() {
        return Err(PyRuntimeError::new_err(format!(
            "ferrograd supports only the 'cpu' device, got accelerator ordinal {d}"
        )));
    }
    Err(PyTypeError::new_err(format!(
        "expected a ferrograd.device or a device string, but got {}",
        d.get_type().name()?
    )))
}

pub(crate) fn is_device_like(d: &Bound<'_, PyAny>) -> bool {
    d.is_instance_of::<PyDevice>()
        || d.is_instance_of::<PyString>()
        || (d.is_instance_of::<PyInt>() && !d.is_instance_of::<PyBool>())
}

// ---------------------------------------------------------------------------
// ferrograd.Size
// ---------------------------------------------------------------------------
