//! Every argument converter of the bindings: Python values to the Rust
//! types the ops take (shapes, dims, scalars, operands), and back.

use crate::python::core::dtype::PyDType;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::Scalar;
use crate::{DType, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

/// A shape as Python sees it: a `ferrograd.Size`.
pub(crate) fn size<'py>(py: Python<'py>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    make_size(py, shape)
}

pub(crate) fn scalar_to_py(py: Python<'_>, s: Scalar) -> PyResult<Bound<'_, PyAny>> {
    Ok(match s {
        Scalar::Bool(b) => pyo3::types::PyBool::new(py, b).to_owned().into_any(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any(),
        Scalar::Float(f) => f.into_pyobject(py)?.into_any(),
    })
}

/// `dim=` as torch takes it: None, an int, or a sequence of ints.
pub(crate) fn dims_arg(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<i64>> {
    match dim {
        None => Ok(Vec::new()),
        Some(d) if d.is_none() => Ok(Vec::new()),
        Some(d) => match d.extract::<i64>() {
            Ok(i) => Ok(vec![i]),
            Err(_) => d.extract::<Vec<i64>>(),
        },
    }
}

/// Two operands where either may be a Python number (not both).
pub(crate) fn operands(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<(Tensor, Tensor)> {
    if let Ok(t) = a.cast::<PyTensor>() {
        let t = t.borrow().inner.clone();
        let o = tensor_or_scalar(b, &t)?;
        return Ok((t, o));
    }
    let t = b.cast::<PyTensor>()?.borrow().inner.clone();
    Ok((tensor_or_scalar(a, &t)?, t))
}

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

pub(crate) fn dt(d: Option<DTypeArg>) -> Option<DType> {
    d.map(|d| d.0)
}

/// `ferrograd.Size` (defined in Python, handed over at import) and
/// `tuple.__new__`, which builds one from a tuple without re-validating.
pub(crate) static SIZE_CLASS: PyOnceLock<(Py<PyType>, Py<PyAny>)> = PyOnceLock::new();

#[pyfunction]
pub(crate) fn _set_size_class(py: Python<'_>, cls: Bound<'_, PyType>) -> PyResult<()> {
    let tuple_new = py.get_type::<PyTuple>().getattr("__new__")?.unbind();
    // A second call (module reload) keeps the first class.
    let _ = SIZE_CLASS.set(py, (cls.unbind(), tuple_new));
    Ok(())
}

/// A shape as a `ferrograd.Size` (a plain tuple before the Python package
/// registered the class).
pub(crate) fn make_size<'py>(py: Python<'py>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let tup = PyTuple::new(py, shape)?;
    match SIZE_CLASS.get(py) {
        Some((cls, tuple_new)) => tuple_new.bind(py).call1((cls.bind(py), tup)),
        None => Ok(tup.into_any()),
    }
}

// ---------------------------------------------------------------------------
// shapes
// ---------------------------------------------------------------------------

pub(crate) fn int_arg(obj: &Bound<'_, PyAny>, fname: &str, pos: usize) -> PyResult<i64> {
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
pub(crate) fn seq_shape(obj: &Bound<'_, PyAny>, fname: &str) -> PyResult<Vec<i64>> {
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

pub(crate) fn checked_dims(shape: &[i64]) -> PyResult<Vec<usize>> {
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
pub(crate) fn shape_from(
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
pub(crate) fn shape_varargs(args: &Bound<'_, PyTuple>, fname: &str) -> PyResult<Vec<usize>> {
    if args.is_empty() {
        return Err(PyTypeError::new_err(format!(
            "{fname}() missing 1 required positional arguments: \"size\""
        )));
    }
    shape_from(args, None, fname)
}

/// A Python number, or a NumPy scalar (`np.float32(2)`, `np.int64(3)`,
/// `np.bool_(True)`), as a Scalar, if it is one. NumPy scalars count as
/// Python numbers, as in torch (`t + np.float32(1)` keeps t's dtype): ints
/// as ints, floats and (as torch reads them) bools as floats. 0-d arrays are
/// not scalars here.
pub(crate) fn as_scalar(obj: &Bound<'_, PyAny>) -> Option<Scalar> {
    if obj.is_instance_of::<PyBool>() {
        return obj.extract::<bool>().ok().map(Scalar::Bool);
    }
    if obj.is_instance_of::<PyInt>() {
        return obj.extract::<i64>().ok().map(Scalar::Int);
    }
    if obj.is_instance_of::<PyFloat>() {
        return obj.extract::<f64>().ok().map(Scalar::Float);
    }
    if obj.is_instance_of::<PyTensor>() || crate::python::core::numpy::is_ndarray(obj) {
        return None;
    }
    let numpy = crate::python::core::numpy::numpy_loaded(obj.py());
    match crate::python::core::numpy::numpy_scalar(obj, numpy).ok()?? {
        // torch reads np.bool_ as a float number (`int_t + np.bool_(True)`
        // is float32)
        (Scalar::Bool(b), _) => Some(Scalar::Float(if b { 1.0 } else { 0.0 })),
        (s, _) => Some(s),
    }
}

/// A value whose kind sets a dtype (a fill value, a range end): a NumPy
/// scalar as its own kind (`np.bool_` a bool, unlike [`as_scalar`]), else
/// a Python number.
pub(crate) fn value_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    let numpy = crate::python::core::numpy::numpy_loaded(obj.py());
    if let Some((s, _)) = crate::python::core::numpy::numpy_scalar(obj, numpy)? {
        return Ok(Some(s));
    }
    Ok(as_scalar(obj))
}

/// A tensor argument, or a Python number wrapped against `like` (torch's
/// wrapped-number promotion).
pub(crate) fn tensor_or_scalar(obj: &Bound<'_, PyAny>, like: &Tensor) -> PyResult<Tensor> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(t.borrow().inner.clone());
    }
    if let Some(s) = as_scalar(obj) {
        return Ok(like.wrap_scalar(s));
    }
    Err(not_an_operand(obj))
}

/// A tensor argument that must be a Tensor (torch's `Tensor other`).
pub(crate) fn tensor_arg(
    obj: &Bound<'_, PyAny>,
    fname: &str,
    arg: &str,
    pos: usize,
) -> PyResult<Tensor> {
    match obj.cast::<PyTensor>() {
        Ok(t) => Ok(t.borrow().inner.clone()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{}(): argument '{}' (position {}) must be Tensor, not {}",
            fname,
            arg,
            pos,
            obj.get_type().name()?
        ))),
    }
}

/// The TypeError for an argument that is neither a tensor nor a number.
pub(crate) fn not_an_operand(obj: &Bound<'_, PyAny>) -> PyErr {
    match obj.get_type().name() {
        Ok(name) => PyTypeError::new_err(format!("expected Tensor or number, but got {name}")),
        Err(e) => e,
    }
}

/// The right-hand operand of an operator: a tensor or a Python number, or
/// None for anything else (the operator then returns NotImplemented, so
/// Python asks the other operand, as it does for torch tensors).
fn operator_operand(other: &Bound<'_, PyAny>, like: &Tensor) -> Option<Tensor> {
    if let Ok(t) = other.cast::<PyTensor>() {
        return Some(t.borrow().inner.clone());
    }
    as_scalar(other).map(|s| like.wrap_scalar(s))
}

/// `op(self, other)` for a binary operator, NotImplemented for a foreign
/// operand.
pub(crate) fn operator(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    reflected: bool,
    op: fn(&Tensor, &Tensor) -> crate::Result<Tensor>,
) -> PyResult<Py<PyAny>> {
    operator_of(py, a, other, reflected, false, op)
}

/// [`operator`], where `numpy` also takes a NumPy array as the other
/// operand (torch's `==`).
pub(crate) fn operator_of(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    reflected: bool,
    numpy: bool,
    op: fn(&Tensor, &Tensor) -> crate::Result<Tensor>,
) -> PyResult<Py<PyAny>> {
    if numpy && crate::python::core::numpy::is_ndarray(other) {
        let b = crate::python::core::numpy::tensor_from_ndarray(other, None)?;
        return Ok(Py::new(py, wrap(op(a, &b)?))?.into_any());
    }
    let Some(b) = operator_operand(other, a) else {
        return Ok(py.NotImplemented());
    };
    let r = if reflected { op(&b, a)? } else { op(a, &b)? };
    Ok(Py::new(py, wrap(r))?.into_any())
}

/// A shape given either as varargs ints or as one tuple/list/Size.
pub(crate) fn shape_arg(args: &Bound<'_, PyTuple>) -> PyResult<Vec<i64>> {
    if args.len() == 1 {
        let a = args.get_item(0)?;
        if let Ok(v) = a.extract::<Vec<i64>>() {
            return Ok(v);
        }
    }
    args.extract::<Vec<i64>>()
}

pub(crate) fn dims_usize(shape: &[i64]) -> PyResult<Vec<usize>> {
    shape
        .iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| {
                pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "Trying to create tensor with negative dimension {}: {:?}",
                    d, shape
                ))
            })
        })
        .collect()
}

/// `dim=` as an int or a sequence of ints (None: all dims).
pub(crate) fn dims(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<i64>> {
    if let Some(d) = dim {
        if d.is_instance_of::<PyBool>() {
            return Err(PyTypeError::new_err(
                "dim must be an int or a tuple of ints, not bool",
            ));
        }
    }
    crate::python::core::args::dims_arg(dim)
}

// ----- torch.return_types -----

static RETURN_TYPES: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The `return_types` namespace: namedtuples `max`, `min`, `sort`, `topk`
/// and `kthvalue` with fields `values` and `indices` (torch.return_types.max
/// & co).
pub(crate) fn return_types(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    let m = RETURN_TYPES.get_or_try_init(py, || -> PyResult<Py<PyModule>> {
        let m = PyModule::new(py, "return_types")?;
        let namedtuple = py.import("collections")?.getattr("namedtuple")?;
        for name in ["max", "min", "sort", "topk", "kthvalue"] {
            let kwargs = pyo3::types::PyDict::new(py);
            kwargs.set_item("module", "ferrograd.return_types")?;
            let cls = namedtuple.call((name, ("values", "indices")), Some(&kwargs))?;
            m.add(name, cls)?;
        }
        Ok(m.unbind())
    })?;
    Ok(m.bind(py))
}

pub(crate) fn values_indices<'py>(
    py: Python<'py>,
    kind: &str,
    (v, i): (Tensor, Tensor),
) -> PyResult<Bound<'py, PyAny>> {
    let cls = return_types(py)?.getattr(kind)?.cast_into::<PyType>()?;
    cls.call1((wrap(v), wrap(i)))
}

/// A tuple/list of tensors (`tensors` argument of cat/stack).
pub(crate) fn tensor_list(obj: &Bound<'_, PyAny>, fname: &str) -> PyResult<Vec<Tensor>> {
    if obj.is_instance_of::<PyTensor>()
        || !(obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>())
    {
        return Err(PyTypeError::new_err(format!(
            "{}(): argument 'tensors' (position 1) must be tuple of Tensors, not {}",
            fname,
            type_name(obj)
        )));
    }
    obj.try_iter()?
        .enumerate()
        .map(|(i, it)| {
            let it = it?;
            match it.cast::<PyTensor>() {
                Ok(t) => Ok(t.borrow().inner.clone()),
                Err(_) => Err(PyTypeError::new_err(format!(
                    "expected Tensor as element {} in argument 0, but got {}",
                    i,
                    type_name(&it)
                ))),
            }
        })
        .collect()
}

/// An int or a sequence of ints.
pub(crate) fn ints(obj: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    match obj.extract::<i64>() {
        Ok(i) => Ok(vec![i]),
        Err(_) => obj.extract::<Vec<i64>>(),
    }
}

/// The short type name torch's argument parser prints ("Tensor", "int").
pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
}
