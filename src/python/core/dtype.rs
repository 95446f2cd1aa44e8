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

/// `ferrograd.iinfo(dtype)`: the range of an integer dtype.
#[pyclass(name = "iinfo", module = "ferrograd", frozen)]
pub struct IInfo {
    #[pyo3(get)]
    bits: usize,
    #[pyo3(get)]
    min: i64,
    #[pyo3(get)]
    max: i64,
    /// The dtype's name, as torch gives it ("int32").
    #[pyo3(get)]
    dtype: &'static str,
}

#[pymethods]
impl IInfo {
    #[new]
    fn new(dtype: PyDType) -> PyResult<Self> {
        let d = dtype.dtype;
        let (min, max) = match d {
            DType::Bool => (0, 1),
            _ => d.int_bounds().ok_or_else(|| {
                pyo3::exceptions::PyTypeError::new_err(
                    "torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'",
                )
            })?,
        };
        Ok(IInfo {
            bits: d.itemsize() * 8,
            min,
            max,
            dtype: d.name(),
        })
    }
    fn __repr__(&self) -> String {
        format!(
            "iinfo(min={}, max={}, dtype={})",
            self.min, self.max, self.dtype
        )
    }
}

/// `ferrograd.finfo(dtype=None)`: the machine limits of a floating dtype
/// (the default dtype when none is given).
#[pyclass(name = "finfo", module = "ferrograd", frozen)]
pub struct FInfo {
    #[pyo3(get)]
    bits: usize,
    #[pyo3(get)]
    eps: f64,
    #[pyo3(get)]
    max: f64,
    #[pyo3(get)]
    min: f64,
    #[pyo3(get)]
    tiny: f64,
    #[pyo3(get)]
    smallest_normal: f64,
    #[pyo3(get)]
    resolution: f64,
    #[pyo3(get)]
    dtype: &'static str,
}

#[pymethods]
impl FInfo {
    #[new]
    #[pyo3(signature = (dtype=None))]
    fn new(dtype: Option<PyDType>) -> PyResult<Self> {
        let d = dtype.map_or_else(crate::tensor::dtype::default_float, |d| d.dtype);
        let Some(l) = d.float_limits() else {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "torch.finfo() requires a floating point input type. Use torch.iinfo to handle 'torch.finfo'",
            ));
        };
        Ok(FInfo {
            bits: d.itemsize() * 8,
            eps: l.eps,
            max: l.max,
            min: -l.max,
            tiny: l.tiny,
            smallest_normal: l.tiny,
            resolution: l.resolution,
            dtype: d.name(),
        })
    }
    fn __repr__(&self) -> String {
        format!(
            "finfo(resolution={:e}, min={:e}, max={:e}, eps={:e}, smallest_normal={:e}, tiny={:e}, dtype={})",
            self.resolution, self.min, self.max, self.eps, self.smallest_normal, self.tiny, self.dtype
        )
    }
}

impl From<DType> for PyDType {
    fn from(dtype: DType) -> Self {
        PyDType { dtype }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDType>()?;
    m.add_class::<IInfo>()?;
    m.add_class::<FInfo>()?;
    for (name, dt) in [
        ("float32", DType::F32),
        ("float", DType::F32),
        ("float64", DType::F64),
        ("double", DType::F64),
        ("float16", DType::F16),
        ("half", DType::F16),
        ("bfloat16", DType::BF16),
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
        // an alias is the same object as its dtype (`torch.half is torch.float16`)
        match m.getattr(dt.name()).ok() {
            Some(obj) => m.add(name, obj)?,
            None => m.add(name, PyDType::from(dt))?,
        }
    }
    Ok(())
}
