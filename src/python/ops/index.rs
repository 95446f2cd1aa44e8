//! Indexing from Python: `x[...]`, `x[...] = v`, gather / scatter /
//! index_select / masked_fill / take / index_put / index_add / index_copy /
//! index_fill / nonzero. Argument parsing only; the semantics live in
//! `src/ops/index/`.

use crate::ops::index::TensorIndex;
use crate::python::core::args::type_name;
use crate::python::core::args::{as_scalar, tensor_arg};
use crate::python::core::bind::bind_methods;
use crate::python::core::data::tensor_from_py;
use crate::python::core::tensor::{view_result, wrap, PyTensor};
use crate::tensor::Scalar;
use crate::{DType, Tensor};
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PyFloat, PyInt, PyList, PySlice, PyString, PyTuple};

/// The type's `tp_name` ("int", "numpy.ndarray"), as torch's indexing
/// messages print it.
fn qual_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .fully_qualified_name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
}

/// A slice bound: None, an int (clamped to i64), or a 1-element int tensor.
fn slice_bound(obj: Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if obj.is_none() {
        return Ok(None);
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        return match t.borrow().inner.item()? {
            Scalar::Int(i) => Ok(Some(i)),
            _ => Err(PyTypeError::new_err(
                "slice indices must be integers or None or have an __index__ method",
            )),
        };
    }
    match obj.extract::<i64>() {
        Ok(i) => Ok(Some(i)),
        Err(e) => {
            // Python ints beyond i64 clamp (the slice is clamped anyway)
            if obj.is_instance_of::<PyInt>() {
                Ok(Some(if obj.lt(0)? { i64::MIN } else { i64::MAX }))
            } else if obj.hasattr("__index__")? {
                Err(e)
            } else {
                Err(PyTypeError::new_err(
                    "slice indices must be integers or None or have an __index__ method",
                ))
            }
        }
    }
}

/// A Python sequence used as an index tensor (`x[[0, 2]]`, `x[[True, False]]`).
fn sequence_index(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let obj = if obj.hasattr("tolist")? && !obj.is_instance_of::<PyList>() {
        obj.call_method0("tolist")?
    } else {
        obj.clone()
    };
    let t = tensor_from_py(&obj, None)?;
    if t.numel() == 0 && t.dtype().is_floating() {
        return Ok(t.cast_raw(DType::I64));
    }
    Ok(t)
}

fn parse_item(obj: &Bound<'_, PyAny>) -> PyResult<TensorIndex> {
    if obj.is_none() {
        return Ok(TensorIndex::None);
    }
    if obj.is_instance_of::<PyEllipsis>() {
        return Ok(TensorIndex::Ellipsis);
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(TensorIndex::Bool(obj.extract::<bool>()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return match obj.extract::<i64>() {
            Ok(i) => Ok(TensorIndex::Int(i)),
            Err(_) => Err(PyIndexError::new_err(format!(
                "index {} is out of bounds",
                obj.str()?
            ))),
        };
    }
    if let Ok(s) = obj.cast::<PySlice>() {
        let step = slice_bound(s.getattr("step")?)?.unwrap_or(1);
        if step == 0 {
            return Err(PyValueError::new_err("slice step cannot be zero"));
        }
        return Ok(TensorIndex::Slice {
            start: slice_bound(s.getattr("start")?)?,
            stop: slice_bound(s.getattr("stop")?)?,
            step,
        });
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(TensorIndex::Tensor(t.borrow().inner.clone()));
    }
    if obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "new(): invalid data type '{}'",
            type_name(obj)
        )));
    }
    if !obj.is_instance_of::<PyFloat>() {
        if obj.cast::<pyo3::types::PySequence>().is_ok() || obj.hasattr("__array__")? {
            return Ok(TensorIndex::Tensor(sequence_index(obj)?));
        }
        if obj.hasattr("__index__")? {
            return Ok(TensorIndex::Int(obj.extract::<i64>()?));
        }
    }
    Err(PyIndexError::new_err(format!(
        "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got {})",
        qual_name(obj)
    )))
}

/// torch's treatSequenceAsTuple: a short list holding slices, Ellipsis,
/// None, tensors or sequences is a tuple of indices (numpy's legacy rule).
fn sequence_as_tuple(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let Ok(list) = obj.cast::<PyList>() else {
        return Ok(false);
    };
    if list.len() >= 32 {
        return Ok(false);
    }
    for it in list.iter() {
        if it.is_none()
            || it.is_instance_of::<PyEllipsis>()
            || it.is_instance_of::<PySlice>()
            || it.is_instance_of::<PyTensor>()
            || it.is_instance_of::<PyList>()
            || it.is_instance_of::<PyTuple>()
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A whole `x[...]` index as a list of items.
fn parse_index(obj: &Bound<'_, PyAny>) -> PyResult<Vec<TensorIndex>> {
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t.iter().map(|i| parse_item(&i)).collect();
    }
    if sequence_as_tuple(obj)? {
        return obj.try_iter()?.map(|i| parse_item(&i?)).collect();
    }
    Ok(vec![parse_item(obj)?])
}

/// The `indices` argument of index_put: a tuple/list of tensors or None.
fn index_list(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Option<Tensor>>> {
    if obj.is_instance_of::<PyTensor>() {
        return Err(PyTypeError::new_err(
            "index_put(): argument 'indices' must be tuple of Tensors, not Tensor",
        ));
    }
    obj.try_iter()?
        .map(|it| {
            let it = it?;
            if it.is_none() {
                return Ok(None);
            }
            match it.cast::<PyTensor>() {
                Ok(t) => Ok(Some(t.borrow().inner.clone())),
                Err(_) => Ok(Some(sequence_index(&it)?)),
            }
        })
        .collect()
}

fn tuple_of(py: Python<'_>, ts: Vec<Tensor>) -> PyResult<Bound<'_, PyTuple>> {
    PyTuple::new(py, ts.into_iter().map(wrap))
}

/// The value of scatter/masked_fill: a tensor or a Python number.
enum TensorOrScalar {
    T(Tensor),
    S(Scalar),
}

fn tensor_or_number(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<TensorOrScalar> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(TensorOrScalar::T(t.borrow().inner.clone()));
    }
    if let Some(s) = as_scalar(obj) {
        return Ok(TensorOrScalar::S(s));
    }
    if let Ok(f) = obj.extract::<f64>() {
        return Ok(TensorOrScalar::S(Scalar::Float(f)));
    }
    Err(PyTypeError::new_err(format!(
        "{}(): argument 'value' must be Number or Tensor, not {}",
        what,
        type_name(obj)
    )))
}

fn scatter_args<'a>(
    src: Option<&Bound<'a, PyAny>>,
    value: Option<&Bound<'a, PyAny>>,
    reduce: Option<&str>,
) -> PyResult<TensorOrScalar> {
    if let Some(r) = reduce {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "scatter(): reduce='{}' is not supported; use scatter_add or scatter_reduce",
            r
        )));
    }
    match (src, value) {
        (Some(s), None) => tensor_or_number(s, "scatter"),
        (None, Some(v)) => match tensor_or_number(v, "scatter")? {
            TensorOrScalar::T(t) if t.ndim() == 0 => Ok(TensorOrScalar::S(t.item()?)),
            TensorOrScalar::T(_) => Err(PyTypeError::new_err(
                "scatter(): argument 'value' must be Number, not Tensor",
            )),
            s => Ok(s),
        },
        _ => Err(PyTypeError::new_err(
            "scatter() expects exactly one of 'src' and 'value'",
        )),
    }
}

fn scatter_out(t: &Tensor, dim: i64, index: &Tensor, v: TensorOrScalar) -> crate::Result<Tensor> {
    match v {
        TensorOrScalar::T(s) => t.scatter(dim, index, &s),
        TensorOrScalar::S(s) => t.scatter_value(dim, index, s),
    }
}

fn masked_fill_out(t: &Tensor, mask: &Tensor, v: TensorOrScalar) -> crate::Result<Tensor> {
    match v {
        TensorOrScalar::T(s) => t.masked_fill(mask, &s),
        TensorOrScalar::S(s) => t.masked_fill_scalar(mask, s),
    }
}

fn index_fill_out(
    t: &Tensor,
    dim: i64,
    index: &Tensor,
    v: TensorOrScalar,
) -> crate::Result<Tensor> {
    match v {
        TensorOrScalar::T(s) => t.index_fill(dim, index, &s),
        TensorOrScalar::S(s) => t.index_fill_scalar(dim, index, s),
    }
}

/// index_add's `alpha=`: a number (or a one-element tensor), 1 when absent.
fn alpha_arg(alpha: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Scalar> {
    let Some(a) = alpha else {
        return Ok(Scalar::Int(1));
    };
    if let Some(s) = as_scalar(a) {
        return Ok(s);
    }
    if a.is_instance_of::<PyInt>() {
        // beyond int64: Python's OverflowError, as torch raises
        return Ok(Scalar::Int(a.extract::<i64>()?));
    }
    if let Ok(t) = a.cast::<PyTensor>() {
        if t.borrow().inner.numel() == 1 {
            return Ok(t.borrow().inner.item()?);
        }
    }
    Err(PyTypeError::new_err(format!(
        "{}(): argument 'alpha' must be Number, not {}",
        what,
        type_name(a)
    )))
}

bind_methods! { index_fns, register:
    fn index_select(&self, dim: i64, index: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.index_select(dim, &index.inner)?))
    }
    #[pyo3(signature = (dim, index, *, sparse_grad=false))]
    fn gather(
        &self,
        dim: i64,
        index: PyRef<'_, PyTensor>,
        sparse_grad: bool,
    ) -> PyResult<PyTensor> {
        let _ = sparse_grad;
        Ok(wrap(self.inner.gather(dim, &index.inner)?))
    }
    fn scatter_add(
        &self,
        dim: i64,
        index: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let index = tensor_arg(index, "scatter_add", "index", 2)?;
        let src = tensor_arg(src, "scatter_add", "src", 3)?;
        Ok(wrap(self.inner.scatter_add(dim, &index, &src)?))
    }
    #[pyo3(signature = (dim, index, src=None, value=None, *, reduce=None))]
    fn scatter(
        &self,
        dim: i64,
        index: PyRef<'_, PyTensor>,
        src: Option<&Bound<'_, PyAny>>,
        value: Option<&Bound<'_, PyAny>>,
        reduce: Option<&str>,
    ) -> PyResult<PyTensor> {
        let v = scatter_args(src, value, reduce)?;
        Ok(wrap(scatter_out(&self.inner, dim, &index.inner, v)?))
    }
    fn masked_fill(
        &self,
        mask: PyRef<'_, PyTensor>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let v = tensor_or_number(value, "masked_fill")?;
        Ok(wrap(masked_fill_out(&self.inner, &mask.inner, v)?))
    }
    fn masked_select(&self, mask: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.masked_select(&mask.inner)?))
    }
    fn take(&self, index: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.take(&index.inner)?))
    }
    #[pyo3(signature = (dim, index, source, *, alpha=None))]
    fn index_add(
        &self,
        dim: i64,
        index: PyRef<'_, PyTensor>,
        source: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let a = alpha_arg(alpha, "index_add")?;
        let source = tensor_arg(source, "index_add", "source", 3)?;
        Ok(wrap(self.inner.index_add(dim, &index.inner, &source, a)?))
    }
    fn index_copy(
        &self,
        dim: i64,
        index: PyRef<'_, PyTensor>,
        source: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let source = tensor_arg(source, "index_copy", "source", 3)?;
        Ok(wrap(self.inner.index_copy(dim, &index.inner, &source)?))
    }
    fn index_fill(
        &self,
        dim: i64,
        index: PyRef<'_, PyTensor>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let v = tensor_or_number(value, "index_fill")?;
        Ok(wrap(index_fill_out(&self.inner, dim, &index.inner, v)?))
    }
    #[pyo3(signature = (indices, values, accumulate=false))]
    fn index_put(
        &self,
        indices: &Bound<'_, PyAny>,
        values: PyRef<'_, PyTensor>,
        accumulate: bool,
    ) -> PyResult<PyTensor> {
        let idx = index_list(indices)?;
        Ok(wrap(self.inner.index_put(
            &idx,
            &values.inner,
            accumulate,
        )?))
    }
    #[pyo3(signature = (*, as_tuple=false))]
    fn nonzero<'py>(&self, py: Python<'py>, as_tuple: bool) -> PyResult<Bound<'py, PyAny>> {
        nonzero_impl(py, &self.inner, as_tuple)
    }
}

#[pymethods]
impl PyTensor {
    fn __getitem__(slf: &Bound<'_, Self>, index: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let me = slf.borrow();
        if index.is_instance_of::<PySlice>() {
            if let TensorIndex::Slice { start, stop, step } = parse_item(index)? {
                let t = me.inner.getitem_slice(start, stop, step)?;
                return Ok(view_result(slf, t));
            }
        }
        let items = parse_index(index)?;
        let t = me.inner.getitem(&items)?;
        Ok(view_result(slf, t))
    }

    fn __setitem__(&self, index: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        crate::python::core::batched::refuse_write_into_plain(value)?;
        let items = parse_index(index)?;
        if let Ok(v) = value.cast::<PyTensor>() {
            let v = v.borrow().inner.clone();
            return Ok(self.inner.setitem(&items, &v)?);
        }
        if let Some(s) = as_scalar(value) {
            return Ok(self.inner.setitem_scalar(&items, s)?);
        }
        if !value.is_instance_of::<PyString>() {
            if let Ok(f) = value.extract::<f64>() {
                return Ok(self.inner.setitem_scalar(&items, Scalar::Float(f))?);
            }
        }
        Err(PyTypeError::new_err(format!(
            "can't assign a {} to a torch.{}Tensor",
            qual_name(value),
            self.inner.dtype().scalar_type_name()
        )))
    }

    fn scatter_add_<'py>(
        slf: PyRef<'py, Self>,
        dim: i64,
        index: PyRef<'py, PyTensor>,
        src: &Bound<'py, PyAny>,
    ) -> PyResult<PyRef<'py, Self>> {
        crate::python::core::batched::refuse_write_into_plain(src)?;
        let src = tensor_arg(src, "scatter_add_", "src", 3)?;
        slf.inner.scatter_add_(dim, &index.inner, &src)?;
        Ok(slf)
    }

    #[pyo3(signature = (dim, index, src=None, value=None, *, reduce=None))]
    fn scatter_<'py>(
        slf: PyRef<'py, Self>,
        dim: i64,
        index: PyRef<'py, PyTensor>,
        src: Option<&Bound<'py, PyAny>>,
        value: Option<&Bound<'py, PyAny>>,
        reduce: Option<&str>,
    ) -> PyResult<PyRef<'py, Self>> {
        match scatter_args(src, value, reduce)? {
            TensorOrScalar::T(s) => slf.inner.scatter_(dim, &index.inner, &s)?,
            TensorOrScalar::S(s) => slf.inner.scatter_value_(dim, &index.inner, s)?,
        }
        Ok(slf)
    }

    fn masked_fill_<'py>(
        slf: PyRef<'py, Self>,
        mask: PyRef<'py, PyTensor>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<PyRef<'py, Self>> {
        match tensor_or_number(value, "masked_fill_")? {
            TensorOrScalar::T(v) => slf.inner.masked_fill_(&mask.inner, &v)?,
            TensorOrScalar::S(s) => slf.inner.masked_fill_scalar_(&mask.inner, s)?,
        }
        Ok(slf)
    }

    #[pyo3(signature = (dim, index, source, *, alpha=None))]
    fn index_add_<'py>(
        slf: PyRef<'py, Self>,
        dim: i64,
        index: PyRef<'py, PyTensor>,
        source: &Bound<'py, PyAny>,
        alpha: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRef<'py, Self>> {
        crate::python::core::batched::refuse_write_into_plain(source)?;
        let a = alpha_arg(alpha, "index_add_")?;
        let source = tensor_arg(source, "index_add_", "source", 3)?;
        slf.inner.index_add_(dim, &index.inner, &source, a)?;
        Ok(slf)
    }

    fn index_copy_<'py>(
        slf: PyRef<'py, Self>,
        dim: i64,
        index: PyRef<'py, PyTensor>,
        source: &Bound<'py, PyAny>,
    ) -> PyResult<PyRef<'py, Self>> {
        crate::python::core::batched::refuse_write_into_plain(source)?;
        let source = tensor_arg(source, "index_copy_", "source", 3)?;
        slf.inner.index_copy_(dim, &index.inner, &source)?;
        Ok(slf)
    }

    fn index_fill_<'py>(
        slf: PyRef<'py, Self>,
        dim: i64,
        index: PyRef<'py, PyTensor>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<PyRef<'py, Self>> {
        crate::python::core::batched::refuse_write_into_plain(value)?;
        match tensor_or_number(value, "index_fill_")? {
            TensorOrScalar::T(v) => slf.inner.index_fill_(dim, &index.inner, &v)?,
            TensorOrScalar::S(s) => slf.inner.index_fill_scalar_(dim, &index.inner, s)?,
        }
        Ok(slf)
    }

    #[pyo3(signature = (indices, values, accumulate=false))]
    fn index_put_<'py>(
        slf: PyRef<'py, Self>,
        indices: &Bound<'py, PyAny>,
        values: PyRef<'py, PyTensor>,
        accumulate: bool,
    ) -> PyResult<PyRef<'py, Self>> {
        let idx = index_list(indices)?;
        slf.inner.index_put_(&idx, &values.inner, accumulate)?;
        Ok(slf)
    }
}

fn nonzero_impl<'py>(py: Python<'py>, t: &Tensor, as_tuple: bool) -> PyResult<Bound<'py, PyAny>> {
    let nz = t.nonzero()?;
    if !as_tuple {
        return Ok(wrap(nz).into_pyobject(py)?.into_any());
    }
    if t.ndim() == 0 {
        let n = nz.shape()[0];
        let z = Tensor::zeros(&[n], DType::I64);
        return Ok(tuple_of(py, vec![z])?.into_any());
    }
    let cols: Vec<Tensor> = nz
        .unbind(1)?
        .into_iter()
        .map(|c| c.contiguous())
        .collect::<crate::Result<_>>()?;
    Ok(tuple_of(py, cols)?.into_any())
}
