//! `ferrograd.float32` & co.

use crate::DType;
use pyo3::prelude::*;

#[pyclass(name = "dtype", module = "ferrograd", frozen, eq, hash, from_py_object)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDType {
    pub dtype: DType,
}

#[pymethods]
impl PyDType {
    fn __repr__(&self) -> String {
        format!("ferrograd.{}", self.dtype.name())
    }
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.dtype.is_floating()
    }
    #[getter]
    fn itemsize(&self) -> usize {
        self.dtype.itemsize()
    }
    #[getter]
    fn is_signed(&self) -> bool {
        self.dtype.is_signed()
    }
    #[getter]
    fn is_complex(&self) -> bool {
        false
    }
    fn __reduce__(&self) -> String {
        self.dtype.name().to_string()
    }
}

impl From<DType> for PyDType {
    fn from(dtype: DType) -> Self {
        PyDType { dtype }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDType>()?;
    for (name, dt) in [
        ("float32", DType::F32),
        ("float", DType::F32),
        ("float64", DType::F64),
        ("double", DType::F64),
        ("int64", DType::I64),
        ("long", DType::I64),
        ("int32", DType::I32),
        ("int", DType::I32),
        ("int16", DType::I16),
        ("short", DType::I16),
        ("int8", DType::I8),
        ("uint8", DType::U8),
        ("bool", DType::Bool),
    ] {
        m.add(name, PyDType::from(dt))?;
    }
    Ok(())
}
