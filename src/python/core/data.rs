//! Tensors from nested Python data (lists, tuples, numbers, NumPy arrays
//! and scalars, tensors): `tensor_from_py`.

use crate::python::core::numpy;
use crate::python::core::tensor::PyTensor;
use crate::tensor::Scalar;
use crate::{DType, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PySequence, PyString, PyTuple};

pub(crate) fn py_int(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    obj.extract::<i64>()
        .map_err(|_| PyValueError::new_err("Overflow when unpacking long long"))
}

pub(crate) struct Flattener {
    shape: Vec<usize>,
    /// Number of dims, fixed by the first scalar met.
    ndim: Option<usize>,
    vals: Vec<Scalar>,
    /// The promoted dtype of everything seen so far.
    dtype: Option<DType>,
    /// Whether NumPy is loaded (so NumPy scalars may appear).
    numpy: bool,
}

impl Flattener {
    fn see(&mut self, d: DType) {
        self.dtype = Some(self.dtype.map_or(d, |x| DType::promote(x, d)));
    }

    fn scalar(&mut self, obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<bool> {
        let (val, d) = if obj.is_exact_instance_of::<PyFloat>() {
            (
                Scalar::Float(obj.extract::<f64>()?),
                crate::tensor::dtype::default_float(),
            )
        } else if obj.is_instance_of::<PyBool>() {
            (Scalar::Bool(obj.extract::<bool>()?), DType::Bool)
        } else if obj.is_exact_instance_of::<PyInt>() {
            (Scalar::Int(py_int(obj)?), DType::I64)
        } else if let Some(v) = numpy::numpy_scalar(obj, self.numpy)? {
            v
        } else if obj.is_instance_of::<PyInt>() {
            (Scalar::Int(py_int(obj)?), DType::I64)
        } else if obj.is_instance_of::<PyFloat>() {
            (
                Scalar::Float(obj.extract::<f64>()?),
                crate::tensor::dtype::default_float(),
            )
        } else if let Ok(t) = obj.cast::<PyTensor>() {
            let t = &t.borrow().inner;
            if t.numel() != 1 {
                return Err(PyValueError::new_err(
                    "only one element tensors can be converted to Python scalars",
                ));
            }
            (t.item()?, t.dtype())
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
            DType::Bool => self
                .vals
                .extend(t.to_vec::<bool>().into_iter().map(Scalar::Bool)),
            d if d.is_integral() => self
                .vals
                .extend(t.to_vec::<i64>().into_iter().map(Scalar::Int)),
            _ => self
                .vals
                .extend(t.to_vec::<f64>().into_iter().map(Scalar::Float)),
        }
        Ok(())
    }
}

/// A new tensor (own memory, no history) holding a copy of `data`: nested
/// sequences of numbers, a number, a NumPy array or scalar, or a tensor.
///
/// Inferred dtypes follow torch: bool < int64 < float32 (Python floats take
/// the default dtype) < float64 (NumPy float64 data and float64 tensors).
pub(crate) fn tensor_from_py(data: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Tensor> {
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
    Ok(Tensor::from_scalars(&f.vals, &f.shape, d)?)
}
