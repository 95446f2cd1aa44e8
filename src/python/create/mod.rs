//! Tensor creation from Python (`tensor`, `zeros`, `arange`, `randn`, the
//! `*_like` and `Tensor.new_*` families), argument parsing shared by them
//! (`dtype=`, `device=`, shapes), `ferrograd.device`, `ferrograd.Size`
//! plumbing, `Tensor.to`/`type`/`cpu`, and the RNG entry points.

pub(crate) mod memory;

use crate::python::core::dtype::PyDType;
use crate::python::core::numpy;
use crate::python::core::tensor::{as_scalar, dims_usize, wrap, PyTensor};
use crate::tensor::Scalar;
use crate::{DType, Tensor};
use pyo3::exceptions::{PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PySequence, PyString, PyTuple, PyType,
};

// ---------------------------------------------------------------------------
// dtype= and device= arguments
// ---------------------------------------------------------------------------

/// A `dtype=` argument: a `ferrograd.dtype`, or one of the Python types
/// `float` (float64), `int` (int64) and `bool`, as torch accepts.
#[derive(Clone, Copy)]
pub struct DTypeArg(pub DType);

impl<'a, 'py> FromPyObject<'a, 'py> for DTypeArg {
    type Error = PyErr;
    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(d) = obj.cast::<PyDType>() {
            return Ok(DTypeArg(d.get().dtype));
        }
        let py = obj.py();
        if obj.is(py.get_type::<PyFloat>()) {
            return Ok(DTypeArg(DType::F64));
        }
        if obj.is(py.get_type::<PyBool>()) {
            return Ok(DTypeArg(DType::Bool));
        }
        if obj.is(py.get_type::<PyInt>()) {
            return Ok(DTypeArg(DType::I64));
        }
        Err(PyTypeError::new_err(format!(
            "argument 'dtype' must be ferrograd.dtype, not {}",
            obj.get_type().name()?
        )))
    }
}

fn dt(d: Option<DTypeArg>) -> Option<DType> {
    d.map(|d| d.0)
}

/// Device types torch knows; only "cpu" is usable in ferrograd.
const DEVICE_TYPES: &[&str] = &[
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
                r#type
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
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
pub fn check_device(device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let Some(d) = device.filter(|d| !d.is_none()) else {
        return Ok(());
    };
    let dev = parse_device(d)?;
    if dev.kind != "cpu" {
        return Err(not_cpu(&dev.label()));
    }
    Ok(())
}

fn not_cpu(label: &str) -> PyErr {
    PyRuntimeError::new_err(format!(
        "ferrograd supports only the 'cpu' device, got '{label}'"
    ))
}

/// A device given as a `ferrograd.device`, a string or (as torch allows) an
/// accelerator ordinal.
fn parse_device(d: &Bound<'_, PyAny>) -> PyResult<PyDevice> {
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

fn is_device_like(d: &Bound<'_, PyAny>) -> bool {
    d.is_instance_of::<PyDevice>()
        || d.is_instance_of::<PyString>()
        || (d.is_instance_of::<PyInt>() && !d.is_instance_of::<PyBool>())
}

// ---------------------------------------------------------------------------
// ferrograd.Size
// ---------------------------------------------------------------------------

/// `ferrograd.Size` (defined in Python, handed over at import) and
/// `tuple.__new__`, which builds one from a tuple without re-validating.
static SIZE_CLASS: PyOnceLock<(Py<PyType>, Py<PyAny>)> = PyOnceLock::new();

#[pyfunction]
fn _set_size_class(py: Python<'_>, cls: Bound<'_, PyType>) -> PyResult<()> {
    let tuple_new = py.get_type::<PyTuple>().getattr("__new__")?.unbind();
    // A second call (module reload) keeps the first class.
    let _ = SIZE_CLASS.set(py, (cls.unbind(), tuple_new));
    Ok(())
}

/// A shape as a `ferrograd.Size` (a plain tuple before the Python package
/// registered the class).
pub fn make_size<'py>(py: Python<'py>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let tup = PyTuple::new(py, shape)?;
    match SIZE_CLASS.get(py) {
        Some((cls, tuple_new)) => tuple_new.bind(py).call1((cls.bind(py), tup)),
        None => Ok(tup.into_any()),
    }
}

// ---------------------------------------------------------------------------
// shapes
// ---------------------------------------------------------------------------

fn int_arg(obj: &Bound<'_, PyAny>, fname: &str, pos: usize) -> PyResult<i64> {
    if obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{fname}(): argument 'size' must be tuple of ints, but found element of type {} at pos {pos}",
            obj.get_type().name()?
        )));
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.borrow().inner;
        if t.numel() == 1 && !t.dtype().is_floating() {
            if let Scalar::Int(i) = t.item()? {
                return Ok(i);
            }
        }
    }
    obj.extract::<i64>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{fname}(): argument 'size' must be tuple of ints, but found element of type {} at pos {pos}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })
}

/// A sequence of ints (list, tuple, Size) as a shape.
fn seq_shape(obj: &Bound<'_, PyAny>, fname: &str) -> PyResult<Vec<i64>> {
    if obj.is_instance_of::<PyString>()
        || !(obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>())
    {
        return Err(PyTypeError::new_err(format!(
            "{fname}(): argument 'size' must be tuple of ints, not {}",
            obj.get_type().name()?
        )));
    }
    obj.try_iter()?
        .enumerate()
        .map(|(i, v)| int_arg(&v?, fname, i))
        .collect()
}

fn checked_dims(shape: &[i64]) -> PyResult<Vec<usize>> {
    let dims = dims_usize(shape)?;
    if dims
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .is_none_or(|n| n > isize::MAX as usize / 8)
    {
        return Err(PyRuntimeError::new_err(format!(
            "Storage size calculation overflowed with sizes={shape:?}"
        )));
    }
    Ok(dims)
}

/// A shape given as varargs ints, as one sequence, or as `size=`.
fn shape_from(
    args: &Bound<'_, PyTuple>,
    size_kw: Option<&Bound<'_, PyAny>>,
    fname: &str,
) -> PyResult<Vec<usize>> {
    let shape = match (args.len(), size_kw) {
        (0, Some(s)) => seq_shape(s, fname)?,
        (0, None) => {
            return Err(PyTypeError::new_err(format!(
                "{fname}() missing 1 required positional arguments: \"size\""
            )))
        }
        (_, Some(_)) => {
            return Err(PyTypeError::new_err(format!(
                "{fname}() got multiple values for argument 'size'"
            )))
        }
        (1, None) => {
            let a = args.get_item(0)?;
            if a.is_instance_of::<PyList>() || a.is_instance_of::<PyTuple>() {
                seq_shape(&a, fname)?
            } else {
                vec![int_arg(&a, fname, 0)?]
            }
        }
        (_, None) => args
            .iter()
            .enumerate()
            .map(|(i, a)| int_arg(&a, fname, i))
            .collect::<PyResult<_>>()?,
    };
    checked_dims(&shape)
}

/// A shape given as one sequence or as varargs (for `Tensor.new_*`).
fn shape_varargs(args: &Bound<'_, PyTuple>, fname: &str) -> PyResult<Vec<usize>> {
    if args.is_empty() {
        return Err(PyTypeError::new_err(format!(
            "{fname}() missing 1 required positional arguments: \"size\""
        )));
    }
    shape_from(args, None, fname)
}

/// A fresh leaf with `requires_grad` set (floating dtypes only, like torch).
fn finish(t: Tensor, requires_grad: bool) -> PyResult<PyTensor> {
    if requires_grad {
        if !t.dtype().is_floating() {
            return Err(PyRuntimeError::new_err(
                "Only Tensors of floating point and complex dtype can require gradients",
            ));
        }
        t.set_requires_grad(true)?;
    }
    Ok(wrap(t))
}

// ---------------------------------------------------------------------------
// tensor(data)
// ---------------------------------------------------------------------------

/// One element of nested Python data, before the dtype is known.
#[derive(Clone, Copy)]
pub(crate) enum Val {
    B(bool),
    I(i64),
    F(f64),
}

fn py_int(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    obj.extract::<i64>()
        .map_err(|_| PyValueError::new_err("Overflow when unpacking long long"))
}

struct Flattener {
    shape: Vec<usize>,
    /// Number of dims, fixed by the first scalar met.
    ndim: Option<usize>,
    vals: Vec<Val>,
    /// The promoted dtype of everything seen so far.
    dtype: Option<DType>,
    /// Whether NumPy is loaded (so NumPy scalars may appear).
    numpy: bool,
}

impl Flattener {
    fn see(&mut self, d: DType) {
        self.dtype = Some(self.dtype.map_or(d, |x| x.max(d)));
    }

    fn scalar(&mut self, obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<bool> {
        let (val, d) = if obj.is_exact_instance_of::<PyFloat>() {
            (
                Val::F(obj.extract::<f64>()?),
                crate::tensor::dtype::default_float(),
            )
        } else if obj.is_instance_of::<PyBool>() {
            (Val::B(obj.extract::<bool>()?), DType::Bool)
        } else if obj.is_exact_instance_of::<PyInt>() {
            (Val::I(py_int(obj)?), DType::I64)
        } else if let Some(v) = numpy::numpy_scalar(obj, self.numpy)? {
            v
        } else if obj.is_instance_of::<PyInt>() {
            (Val::I(py_int(obj)?), DType::I64)
        } else if obj.is_instance_of::<PyFloat>() {
            (
                Val::F(obj.extract::<f64>()?),
                crate::tensor::dtype::default_float(),
            )
        } else if let Ok(t) = obj.cast::<PyTensor>() {
            let t = &t.borrow().inner;
            if t.numel() != 1 {
                return Err(PyValueError::new_err(
                    "only one element tensors can be converted to Python scalars",
                ));
            }
            let v = match t.item()? {
                Scalar::Bool(b) => Val::B(b),
                Scalar::Int(i) => Val::I(i),
                Scalar::Float(f) => Val::F(f),
            };
            (v, t.dtype())
        } else {
            return Ok(false);
        };
        match self.ndim {
            None if depth == self.shape.len() => self.ndim = Some(depth),
            Some(n) if n == depth => {}
            _ => return Err(PyTypeError::new_err("not a sequence")),
        }
        self.see(d);
        self.vals.push(val);
        Ok(true)
    }

    fn walk(&mut self, obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<()> {
        if self.scalar(obj, depth)? {
            return Ok(());
        }
        if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
            return Err(PyTypeError::new_err(format!(
                "new(): invalid data type '{}'",
                obj.get_type().name()?
            )));
        }
        if obj.is_instance_of::<pyo3::types::PyComplex>() {
            return Err(PyTypeError::new_err(
                "ferrograd has no complex dtype: can't make a tensor of complex numbers",
            ));
        }
        if self.numpy && numpy::is_ndarray(obj) {
            if numpy::is_object_array(obj) {
                let items = obj.call_method0(pyo3::intern!(obj.py(), "tolist"))?;
                return self.walk(&items, depth);
            }
            // An array nested in a list: its own conversion is exact and
            // fast; splice it in as a block of values.
            let t = numpy::tensor_from_ndarray(obj, None)?;
            return self.splice(&t, depth);
        }
        let seq = match obj.cast::<PySequence>() {
            Ok(s) if !obj.is_instance_of::<PyDict>() => s,
            _ => {
                return Err(PyRuntimeError::new_err(format!(
                    "Could not infer dtype of {}",
                    obj.get_type().name()?
                )))
            }
        };
        if let Some(n) = self.ndim {
            if depth >= n {
                return Err(PyTypeError::new_err(format!(
                    "'{}' object cannot be interpreted as a number",
                    obj.get_type().name()?
                )));
            }
        }
        let len = seq.len()?;
        if depth == self.shape.len() {
            self.shape.push(len);
        } else if self.shape[depth] != len {
            return Err(PyValueError::new_err(format!(
                "expected sequence of length {} at dim {} (got {})",
                self.shape[depth], depth, len
            )));
        }
        if let Ok(list) = obj.cast::<PyList>() {
            for i in 0..len {
                self.walk(&list.get_item(i)?, depth + 1)?;
            }
        } else if let Ok(tup) = obj.cast::<PyTuple>() {
            for it in tup.iter() {
                self.walk(&it, depth + 1)?;
            }
        } else {
            for i in 0..len {
                self.walk(&seq.get_item(i)?, depth + 1)?;
            }
        }
        Ok(())
    }

    /// Adds a whole tensor's values at `depth` (a nested numpy array).
    fn splice(&mut self, t: &Tensor, depth: usize) -> PyResult<()> {
        let shape = t.shape();
        for (i, &d) in shape.iter().enumerate() {
            let k = depth + i;
            if k == self.shape.len() {
                if self.ndim.is_some() {
                    return Err(PyTypeError::new_err("not a sequence"));
                }
                self.shape.push(d);
            } else if self.shape[k] != d {
                return Err(PyValueError::new_err(format!(
                    "expected sequence of length {} at dim {} (got {})",
                    self.shape[k], k, d
                )));
            }
        }
        let n = depth + shape.len();
        match self.ndim {
            None if n == self.shape.len() => self.ndim = Some(n),
            Some(m) if m == n => {}
            _ => return Err(PyTypeError::new_err("not a sequence")),
        }
        self.see(t.dtype());
        match t.dtype() {
            DType::Bool => self.vals.extend(t.to_vec::<bool>().into_iter().map(Val::B)),
            DType::I64 => self.vals.extend(t.to_vec::<i64>().into_iter().map(Val::I)),
            _ => self.vals.extend(t.to_vec::<f64>().into_iter().map(Val::F)),
        }
        Ok(())
    }
}

fn vals_to_tensor(vals: &[Val], shape: &[usize], dtype: DType) -> PyResult<Tensor> {
    Ok(match dtype {
        DType::Bool => Tensor::from_vec(
            vals.iter()
                .map(|v| match *v {
                    Val::B(b) => b,
                    Val::I(i) => i != 0,
                    Val::F(f) => f != 0.0,
                })
                .collect::<Vec<_>>(),
            shape,
        )?,
        DType::I64 => Tensor::from_vec(
            vals.iter()
                .map(|v| match *v {
                    Val::B(b) => b as i64,
                    Val::I(i) => i,
                    Val::F(f) => f as i64,
                })
                .collect::<Vec<_>>(),
            shape,
        )?,
        DType::F32 => Tensor::from_vec(
            vals.iter()
                .map(|v| match *v {
                    Val::B(b) => b as i64 as f32,
                    Val::I(i) => i as f32,
                    Val::F(f) => f as f32,
                })
                .collect::<Vec<_>>(),
            shape,
        )?,
        DType::F64 => Tensor::from_vec(
            vals.iter()
                .map(|v| match *v {
                    Val::B(b) => b as i64 as f64,
                    Val::I(i) => i as f64,
                    Val::F(f) => f,
                })
                .collect::<Vec<_>>(),
            shape,
        )?,
    })
}

/// A new tensor (own memory, no history) holding a copy of `data`: nested
/// sequences of numbers, a number, a NumPy array or scalar, or a tensor.
///
/// Inferred dtypes follow torch: bool < int64 < float32 (Python floats take
/// the default dtype) < float64 (NumPy float64 data and float64 tensors).
pub fn tensor_from_py(data: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Tensor> {
    if let Ok(t) = data.cast::<PyTensor>() {
        let src = t.borrow().inner.detach();
        let d = dtype.unwrap_or(src.dtype());
        return Ok(if d == src.dtype() {
            src.clone_tensor()?.detach()
        } else {
            src.cast_raw(d)
        });
    }
    let numpy = numpy::numpy_loaded(data.py());
    if numpy && numpy::is_ndarray(data) && !numpy::is_object_array(data) {
        return numpy::tensor_from_ndarray(data, dtype);
    }
    let mut f = Flattener {
        shape: Vec::new(),
        ndim: None,
        vals: Vec::new(),
        dtype: None,
        numpy,
    };
    f.walk(data, 0)?;
    let d = dtype.unwrap_or(f.dtype.unwrap_or(crate::tensor::dtype::default_float()));
    vals_to_tensor(&f.vals, &f.shape, d)
}

#[pyfunction]
#[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false, pin_memory=false))]
fn tensor(
    data: &Bound<'_, PyAny>,
    dtype: Option<DTypeArg>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<PyTensor> {
    check_device(device)?;
    check_pin_memory(pin_memory)?;
    finish(tensor_from_py(data, dt(dtype))?, requires_grad)
}

fn check_pin_memory(pin_memory: bool) -> PyResult<()> {
    if pin_memory {
        return Err(PyRuntimeError::new_err(
            "pin_memory=True needs an accelerator; ferrograd is CPU-only",
        ));
    }
    Ok(())
}

/// `as_tensor`: shares memory with a tensor or NumPy array when no
/// conversion is needed, else copies as `tensor()` does.
#[pyfunction]
#[pyo3(signature = (data, dtype=None, device=None))]
fn as_tensor(
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
            Some(d) if d != inner.dtype() => Ok(Py::new(py, wrap(inner.to_dtype(d)?))?.into_any()),
            _ => Ok(data.clone().unbind()),
        };
    }
    if let Some(t) = numpy::share_ndarray(data, dtype)? {
        return Ok(Py::new(py, wrap(t))?.into_any());
    }
    Ok(Py::new(py, wrap(tensor_from_py(data, dtype)?))?.into_any())
}

// ---------------------------------------------------------------------------
// factories
// ---------------------------------------------------------------------------

fn default_float(d: Option<DTypeArg>) -> DType {
    dt(d).unwrap_or(crate::tensor::dtype::default_float())
}

#[pyfunction]
#[pyo3(signature = (*shape, size=None, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
#[allow(clippy::too_many_arguments)]
fn zeros(
    shape: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    pin_memory: bool,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let _ = layout;
    check_device(device)?;
    check_pin_memory(pin_memory)?;
    let s = shape_from(shape, size, "zeros")?;
    finish(Tensor::zeros(&s, default_float(dtype)), requires_grad)
}

#[pyfunction]
#[pyo3(signature = (*shape, size=None, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
#[allow(clippy::too_many_arguments)]
fn ones(
    shape: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    pin_memory: bool,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let _ = layout;
    check_device(device)?;
    check_pin_memory(pin_memory)?;
    let s = shape_from(shape, size, "ones")?;
    finish(Tensor::ones(&s, default_float(dtype)), requires_grad)
}

/// `empty`: ferrograd zero-fills, so "uninitialised" memory is zeros.
#[pyfunction]
#[pyo3(signature = (*shape, size=None, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false, memory_format=None))]
#[allow(clippy::too_many_arguments)]
fn empty(
    shape: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    pin_memory: bool,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    check_device(device)?;
    check_pin_memory(pin_memory)?;
    let s = shape_from(shape, size, "empty")?;
    finish(Tensor::zeros(&s, default_float(dtype)), requires_grad)
}

/// A fill value and the dtype torch infers from it.
fn fill_scalar(v: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    if let Some(s) = numpy::numpy_scalar(v, numpy::numpy_loaded(v.py()))? {
        return Ok(match s.0 {
            Val::B(b) => Scalar::Bool(b),
            Val::I(i) => Scalar::Int(i),
            Val::F(f) => Scalar::Float(f),
        });
    }
    if let Some(s) = as_scalar(v) {
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

#[pyfunction]
#[pyo3(signature = (size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
#[allow(clippy::too_many_arguments)]
fn full(
    size: &Bound<'_, PyAny>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    pin_memory: bool,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let _ = layout;
    check_device(device)?;
    check_pin_memory(pin_memory)?;
    let s = checked_dims(&seq_shape(size, "full")?)?;
    let v = fill_scalar(fill_value)?;
    let d = dt(dtype).unwrap_or(v.dtype());
    finish(Tensor::full(&s, v, d), requires_grad)
}

/// A number argument of a range function (Python number, NumPy scalar or
/// one-element tensor).
fn range_scalar(v: &Bound<'_, PyAny>, what: &str) -> PyResult<Scalar> {
    if let Some(s) = numpy::numpy_scalar(v, numpy::numpy_loaded(v.py()))? {
        return Ok(match s.0 {
            Val::B(b) => Scalar::Bool(b),
            Val::I(i) => Scalar::Int(i),
            Val::F(f) => Scalar::Float(f),
        });
    }
    if let Some(s) = as_scalar(v) {
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

#[pyfunction]
#[pyo3(signature = (*args, start=None, end=None, step=None, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
#[allow(clippy::too_many_arguments)]
fn arange(
    args: &Bound<'_, PyTuple>,
    start: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
    step: Option<&Bound<'_, PyAny>>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    pin_memory: bool,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let _ = layout;
    check_device(device)?;
    check_pin_memory(pin_memory)?;
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
    if d == DType::I64 && st.to_f64() != 0.0 && (st.to_f64() as i64) == 0 {
        return Err(PyValueError::new_err("step must be nonzero"));
    }
    finish(Tensor::arange(s, e, st, d)?, requires_grad)
}

#[pyfunction]
#[pyo3(signature = (start, end, steps, *, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
#[allow(clippy::too_many_arguments)]
fn linspace(
    start: &Bound<'_, PyAny>,
    end: &Bound<'_, PyAny>,
    steps: i64,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    pin_memory: bool,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let _ = layout;
    check_device(device)?;
    check_pin_memory(pin_memory)?;
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

#[pyfunction]
#[pyo3(signature = (n, m=None, *, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
#[allow(clippy::too_many_arguments)]
fn eye(
    n: i64,
    m: Option<i64>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    pin_memory: bool,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let _ = layout;
    check_device(device)?;
    check_pin_memory(pin_memory)?;
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

fn check_generator(generator: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    match generator {
        Some(g) if !g.is_none() => Err(PyNotImplementedError::new_err(
            "ferrograd has no Generator objects: use ferrograd.manual_seed() to seed the global generator",
        )),
        _ => Ok(()),
    }
}

fn random_float(d: DType, what: &str) -> PyResult<()> {
    if !d.is_floating() {
        return Err(PyNotImplementedError::new_err(format!(
            "\"{what}\" not implemented for '{}'",
            d.scalar_type_name()
        )));
    }
    Ok(())
}

#[pyfunction]
#[pyo3(signature = (*shape, size=None, generator=None, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
#[allow(clippy::too_many_arguments)]
fn rand(
    shape: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    generator: Option<&Bound<'_, PyAny>>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    pin_memory: bool,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let _ = layout;
    check_device(device)?;
    check_pin_memory(pin_memory)?;
    check_generator(generator)?;
    let s = shape_from(shape, size, "rand")?;
    let d = default_float(dtype);
    random_float(d, "check_uniform_bounds")?;
    finish(Tensor::rand(&s, d)?, requires_grad)
}

#[pyfunction]
#[pyo3(signature = (*shape, size=None, generator=None, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
#[allow(clippy::too_many_arguments)]
fn randn(
    shape: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    generator: Option<&Bound<'_, PyAny>>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    pin_memory: bool,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let _ = layout;
    check_device(device)?;
    check_pin_memory(pin_memory)?;
    check_generator(generator)?;
    let s = shape_from(shape, size, "randn")?;
    let d = default_float(dtype);
    random_float(d, "normal_kernel_cpu")?;
    finish(Tensor::randn(&s, d)?, requires_grad)
}

fn int_bound(v: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    match range_scalar(v, what)? {
        Scalar::Float(f) => Ok(f as i64),
        s => Ok(s.to_f64() as i64),
    }
}

/// `randint(high, size)`, `randint(low, high, size)` and keyword forms.
#[pyfunction]
#[pyo3(signature = (*args, low=None, high=None, size=None, generator=None, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
#[allow(clippy::too_many_arguments)]
fn randint(
    args: &Bound<'_, PyTuple>,
    low: Option<&Bound<'_, PyAny>>,
    high: Option<&Bound<'_, PyAny>>,
    size: Option<&Bound<'_, PyAny>>,
    generator: Option<&Bound<'_, PyAny>>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    pin_memory: bool,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let _ = layout;
    check_device(device)?;
    check_pin_memory(pin_memory)?;
    check_generator(generator)?;
    let pos: Vec<Bound<'_, PyAny>> = args.iter().collect();
    let bad = || {
        PyTypeError::new_err(
            "randint() received an invalid combination of arguments: expected (high, size) or (low, high, size)",
        )
    };
    let (lo, hi, sz) = match (pos.len(), low, high, size) {
        (3, None, None, None) => (Some(pos[0].clone()), pos[1].clone(), pos[2].clone()),
        (2, None, None, None) => (None, pos[0].clone(), pos[1].clone()),
        (2, None, None, Some(s)) => (Some(pos[0].clone()), pos[1].clone(), s.clone()),
        (1, None, None, Some(s)) => (None, pos[0].clone(), s.clone()),
        (1, None, Some(h), Some(s)) => (Some(pos[0].clone()), h.clone(), s.clone()),
        (0, l, Some(h), Some(s)) => (l.cloned(), h.clone(), s.clone()),
        _ => return Err(bad()),
    };
    let lo = lo.map(|l| int_bound(&l, "low")).transpose()?.unwrap_or(0);
    let hi = int_bound(&hi, "high")?;
    let s = checked_dims(&seq_shape(&sz, "randint")?)?;
    let d = dt(dtype).unwrap_or(DType::I64);
    finish(Tensor::randint(lo, hi, &s, d)?, requires_grad)
}

#[pyfunction]
#[pyo3(signature = (n, *, generator=None, dtype=None, layout=None, device=None, pin_memory=false, requires_grad=false))]
#[allow(clippy::too_many_arguments)]
fn randperm(
    n: i64,
    generator: Option<&Bound<'_, PyAny>>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    pin_memory: bool,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let _ = layout;
    check_device(device)?;
    check_pin_memory(pin_memory)?;
    check_generator(generator)?;
    let n = checked_dims(&[n])?[0];
    let d = dt(dtype).unwrap_or(DType::I64);
    if d == DType::Bool {
        return Err(PyNotImplementedError::new_err(
            "\"randperm_cpu\" not implemented for 'Bool'",
        ));
    }
    finish(Tensor::randperm(n)?.cast_raw(d), requires_grad)
}

// ----- *_like -----

fn like_dtype(input: &Tensor, dtype: Option<DTypeArg>) -> DType {
    dt(dtype).unwrap_or(input.dtype())
}

#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, layout=None, device=None, requires_grad=false, memory_format=None))]
fn zeros_like(
    input: PyRef<'_, PyTensor>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    check_device(device)?;
    let t = &input.inner;
    finish(
        Tensor::zeros(t.shape(), like_dtype(t, dtype)),
        requires_grad,
    )
}

#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, layout=None, device=None, requires_grad=false, memory_format=None))]
fn ones_like(
    input: PyRef<'_, PyTensor>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    check_device(device)?;
    let t = &input.inner;
    finish(Tensor::ones(t.shape(), like_dtype(t, dtype)), requires_grad)
}

#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, layout=None, device=None, requires_grad=false, memory_format=None))]
fn empty_like(
    input: PyRef<'_, PyTensor>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    check_device(device)?;
    let t = &input.inner;
    finish(
        Tensor::zeros(t.shape(), like_dtype(t, dtype)),
        requires_grad,
    )
}

#[pyfunction]
#[pyo3(signature = (input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=false, memory_format=None))]
#[allow(clippy::too_many_arguments)]
fn full_like(
    input: PyRef<'_, PyTensor>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    check_device(device)?;
    let t = &input.inner;
    let v = fill_scalar(fill_value)?;
    finish(
        Tensor::full(t.shape(), v, like_dtype(t, dtype)),
        requires_grad,
    )
}

#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, layout=None, device=None, requires_grad=false, memory_format=None))]
fn rand_like(
    input: PyRef<'_, PyTensor>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    check_device(device)?;
    let t = &input.inner;
    let d = like_dtype(t, dtype);
    random_float(d, "check_uniform_bounds")?;
    finish(Tensor::rand(t.shape(), d)?, requires_grad)
}

#[pyfunction]
#[pyo3(signature = (input, *, dtype=None, layout=None, device=None, requires_grad=false, memory_format=None))]
fn randn_like(
    input: PyRef<'_, PyTensor>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    check_device(device)?;
    let t = &input.inner;
    let d = like_dtype(t, dtype);
    random_float(d, "normal_kernel_cpu")?;
    finish(Tensor::randn(t.shape(), d)?, requires_grad)
}

/// `randint_like(input, high)` or `randint_like(input, low, high)`.
#[pyfunction]
#[pyo3(signature = (input, low_or_high, high=None, *, dtype=None, layout=None, device=None, requires_grad=false, memory_format=None))]
#[allow(clippy::too_many_arguments)]
fn randint_like(
    input: PyRef<'_, PyTensor>,
    low_or_high: &Bound<'_, PyAny>,
    high: Option<&Bound<'_, PyAny>>,
    dtype: Option<DTypeArg>,
    layout: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    memory_format: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let _ = (layout, memory_format);
    check_device(device)?;
    let (lo, hi) = match high {
        Some(h) => (int_bound(low_or_high, "low")?, int_bound(h, "high")?),
        None => (0, int_bound(low_or_high, "high")?),
    };
    let t = &input.inner;
    finish(
        Tensor::randint(lo, hi, t.shape(), like_dtype(t, dtype))?,
        requires_grad,
    )
}

// ---------------------------------------------------------------------------
// module-level helpers
// ---------------------------------------------------------------------------

#[pyfunction]
fn get_default_dtype() -> PyDType {
    crate::tensor::dtype::default_float().into()
}

#[pyfunction]
fn set_default_dtype(d: &Bound<'_, PyAny>) -> PyResult<()> {
    let Ok(d) = d.extract::<PyDType>() else {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "set_default_dtype(): argument 'd' must be torch.dtype, not {}",
            d.get_type().name()?
        )));
    };
    Ok(crate::tensor::dtype::set_default_float(d.dtype)?)
}

#[pyfunction]
fn is_tensor(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyTensor>()
}

#[pyfunction]
fn is_floating_point(input: PyRef<'_, PyTensor>) -> bool {
    input.inner.dtype().is_floating()
}

#[pyfunction]
fn numel(input: PyRef<'_, PyTensor>) -> usize {
    input.inner.numel()
}

/// The seed the global generator was last seeded with.
#[pyfunction]
fn initial_seed() -> u64 {
    crate::tensor::random::initial_seed()
}

/// Seeds the global generator from the clock; returns the seed.
#[pyfunction]
fn seed() -> u64 {
    let s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
        & ((1u64 << 63) - 1);
    crate::manual_seed(s);
    s
}

/// The global generator's state, as an int64 tensor (opaque: pass it back to
/// `set_rng_state`).
#[pyfunction]
fn get_rng_state() -> PyResult<PyTensor> {
    let st = crate::tensor::random::rng_state();
    Ok(wrap(Tensor::from_vec(
        st.iter().map(|&w| w as i64).collect::<Vec<_>>(),
        &[st.len()],
    )?))
}

#[pyfunction]
fn set_rng_state(new_state: PyRef<'_, PyTensor>) -> PyResult<()> {
    let t = &new_state.inner;
    if t.dtype() != DType::I64 || t.shape() != [5] {
        return Err(PyRuntimeError::new_err(
            "set_rng_state expects a state returned by ferrograd.get_rng_state()",
        ));
    }
    let v = t.to_vec::<i64>();
    let mut st = [0u64; 5];
    for (s, x) in st.iter_mut().zip(v) {
        *s = x as u64;
    }
    crate::tensor::random::set_rng_state(st).map_err(PyErr::from)
}

/// Panics inside Rust, to test that a panic becomes a Python exception
/// (pyo3's PanicException) and leaves the interpreter alive.
#[pyfunction]
fn _test_panic() {
    panic!("ferrograd._C._test_panic: deliberate panic for testing");
}

// ---------------------------------------------------------------------------
// Tensor methods: new_*, to, type, cpu
// ---------------------------------------------------------------------------

fn type_name(d: DType) -> &'static str {
    match d {
        DType::Bool => "ferrograd.BoolTensor",
        DType::I64 => "ferrograd.LongTensor",
        DType::F32 => "ferrograd.FloatTensor",
        DType::F64 => "ferrograd.DoubleTensor",
    }
}

fn dtype_from_type_name(s: &str) -> Option<DType> {
    let short = s
        .strip_prefix("ferrograd.")
        .or_else(|| s.strip_prefix("torch."))?;
    Some(match short {
        "BoolTensor" => DType::Bool,
        "LongTensor" => DType::I64,
        "FloatTensor" => DType::F32,
        "DoubleTensor" => DType::F64,
        _ => return None,
    })
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

    #[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false, layout=None, pin_memory=false))]
    fn new_zeros(
        &self,
        size: &Bound<'_, PyTuple>,
        dtype: Option<DTypeArg>,
        device: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
        layout: Option<&Bound<'_, PyAny>>,
        pin_memory: bool,
    ) -> PyResult<PyTensor> {
        let _ = layout;
        check_device(device)?;
        check_pin_memory(pin_memory)?;
        let s = shape_varargs(size, "new_zeros")?;
        finish(
            Tensor::zeros(&s, like_dtype(&self.inner, dtype)),
            requires_grad,
        )
    }
    #[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false, layout=None, pin_memory=false))]
    fn new_ones(
        &self,
        size: &Bound<'_, PyTuple>,
        dtype: Option<DTypeArg>,
        device: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
        layout: Option<&Bound<'_, PyAny>>,
        pin_memory: bool,
    ) -> PyResult<PyTensor> {
        let _ = layout;
        check_device(device)?;
        check_pin_memory(pin_memory)?;
        let s = shape_varargs(size, "new_ones")?;
        finish(
            Tensor::ones(&s, like_dtype(&self.inner, dtype)),
            requires_grad,
        )
    }
    #[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false, layout=None, pin_memory=false))]
    fn new_empty(
        &self,
        size: &Bound<'_, PyTuple>,
        dtype: Option<DTypeArg>,
        device: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
        layout: Option<&Bound<'_, PyAny>>,
        pin_memory: bool,
    ) -> PyResult<PyTensor> {
        let _ = layout;
        check_device(device)?;
        check_pin_memory(pin_memory)?;
        let s = shape_varargs(size, "new_empty")?;
        finish(
            Tensor::zeros(&s, like_dtype(&self.inner, dtype)),
            requires_grad,
        )
    }
    #[pyo3(signature = (size, fill_value, *, dtype=None, device=None, requires_grad=false, layout=None, pin_memory=false))]
    #[allow(clippy::too_many_arguments)]
    fn new_full(
        &self,
        size: &Bound<'_, PyAny>,
        fill_value: &Bound<'_, PyAny>,
        dtype: Option<DTypeArg>,
        device: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
        layout: Option<&Bound<'_, PyAny>>,
        pin_memory: bool,
    ) -> PyResult<PyTensor> {
        let _ = layout;
        check_device(device)?;
        check_pin_memory(pin_memory)?;
        let s = checked_dims(&seq_shape(size, "new_full")?)?;
        let v = fill_scalar(fill_value)?;
        finish(
            Tensor::full(&s, v, like_dtype(&self.inner, dtype)),
            requires_grad,
        )
    }
    #[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false, layout=None, pin_memory=false))]
    #[allow(clippy::too_many_arguments)]
    fn new_tensor(
        &self,
        data: &Bound<'_, PyAny>,
        dtype: Option<DTypeArg>,
        device: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
        layout: Option<&Bound<'_, PyAny>>,
        pin_memory: bool,
    ) -> PyResult<PyTensor> {
        let _ = layout;
        check_device(device)?;
        check_pin_memory(pin_memory)?;
        let t = tensor_from_py(data, Some(like_dtype(&self.inner, dtype)))?;
        finish(t, requires_grad)
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
                    b.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDevice>()?;
    m.add_function(wrap_pyfunction!(_set_size_class, m)?)?;
    m.add_function(wrap_pyfunction!(tensor, m)?)?;
    m.add_function(wrap_pyfunction!(as_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(ones, m)?)?;
    m.add_function(wrap_pyfunction!(empty, m)?)?;
    m.add_function(wrap_pyfunction!(full, m)?)?;
    m.add_function(wrap_pyfunction!(arange, m)?)?;
    m.add_function(wrap_pyfunction!(linspace, m)?)?;
    m.add_function(wrap_pyfunction!(eye, m)?)?;
    m.add_function(wrap_pyfunction!(rand, m)?)?;
    m.add_function(wrap_pyfunction!(randn, m)?)?;
    m.add_function(wrap_pyfunction!(randint, m)?)?;
    m.add_function(wrap_pyfunction!(randperm, m)?)?;
    m.add_function(wrap_pyfunction!(zeros_like, m)?)?;
    m.add_function(wrap_pyfunction!(ones_like, m)?)?;
    m.add_function(wrap_pyfunction!(empty_like, m)?)?;
    m.add_function(wrap_pyfunction!(full_like, m)?)?;
    m.add_function(wrap_pyfunction!(rand_like, m)?)?;
    m.add_function(wrap_pyfunction!(randn_like, m)?)?;
    m.add_function(wrap_pyfunction!(randint_like, m)?)?;
    m.add_function(wrap_pyfunction!(get_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(set_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(is_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(is_floating_point, m)?)?;
    m.add_function(wrap_pyfunction!(numel, m)?)?;
    m.add_function(wrap_pyfunction!(initial_seed, m)?)?;
    m.add_function(wrap_pyfunction!(seed, m)?)?;
    m.add_function(wrap_pyfunction!(get_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(set_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(_test_panic, m)?)?;
    Ok(())
}
