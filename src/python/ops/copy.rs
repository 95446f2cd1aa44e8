//! `copy.deepcopy` and pickling of tensors, as torch does them: a deep copy
//! keeps views of one storage sharing one copied storage (through the memo),
//! copies `requires_grad`, the gradient and the instance `__dict__`, and is
//! refused for non-leaves; a pickle carries the values (little-endian
//! bytes), dtype, shape and `requires_grad`, not the gradient.

use crate::python::core::tensor::{wrap, PyTensor};
use crate::{DType, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple, PyType};

/// A Python object of `cls` (Tensor or a subclass) wrapping `t`.
fn object_of<'py>(cls: &Bound<'py, PyType>, t: Tensor) -> PyResult<Bound<'py, PyAny>> {
    let py = cls.py();
    if cls.is(py.get_type::<PyTensor>()) {
        return Ok(Bound::new(py, wrap(t))?.into_any());
    }
    // The base class's `__new__` with a tensor makes a `cls` around it.
    py.get_type::<PyTensor>()
        .getattr("__new__")?
        .call1((cls, wrap(t)))
}

#[pymethods]
impl PyTensor {
    fn __deepcopy__<'py>(
        slf: &Bound<'py, Self>,
        memo: &Bound<'py, PyDict>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let t = slf.borrow().inner.clone();
        if !t.is_leaf() {
            return Err(PyRuntimeError::new_err(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment.  If you were attempting to deepcopy a module, this may be because of a torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001",
            ));
        }
        let id = slf.as_ptr() as usize;
        if let Some(done) = memo.get_item(id)? {
            return Ok(done);
        }
        // One copy per storage: every tensor over it is rebuilt on the copy.
        let key = ("ferrograd.storage", t.storage().data_ptr());
        let storage_copy = match memo.get_item(key)? {
            Some(s) => s.cast_into::<PyTensor>()?.borrow().inner.clone(),
            None => {
                let all = crate::tensor::Layout::contiguous(&[t.storage().read().len()]);
                let copy = t.alias_with_layout(all).clone_tensor()?;
                memo.set_item(key, wrap(copy.clone()))?;
                copy
            }
        };
        let new = storage_copy.alias_with_layout(t.layout().clone()).data();
        new.set_requires_grad(t.requires_grad())?;
        let obj = object_of(&slf.get_type(), new.clone())?;
        memo.set_item(id, &obj)?;
        let deepcopy = py.import("copy")?.getattr("deepcopy")?;
        if let Ok(g) = slf.getattr("grad")?.cast_into::<PyTensor>() {
            let g = deepcopy.call1((g, memo))?.cast_into::<PyTensor>()?;
            new.set_grad(Some(g.borrow().inner.clone()))?;
        }
        let dict = slf.getattr("__dict__")?;
        if dict.len()? > 0 {
            obj.setattr("__dict__", deepcopy.call1((dict, memo))?)?;
        }
        Ok(obj)
    }

    fn __reduce_ex__<'py>(slf: &Bound<'py, Self>, _protocol: i64) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let t = slf.borrow().inner.clone();
        let bytes = t.to_le_bytes()?;
        let rebuild = py.import("ferrograd._C")?.getattr("_rebuild_tensor")?;
        let args = (
            slf.get_type(),
            PyBytes::new(py, &bytes),
            t.dtype().name(),
            t.shape().to_vec(),
            t.requires_grad(),
        );
        PyTuple::new(py, [rebuild, args.into_pyobject(py)?.into_any()])
    }
}

/// Unpickles a tensor (see `__reduce_ex__`).
#[pyfunction]
fn _rebuild_tensor<'py>(
    cls: &Bound<'py, PyType>,
    data: &[u8],
    dtype: &str,
    shape: Vec<usize>,
    requires_grad: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let dt = DType::from_name(dtype)
        .ok_or_else(|| PyValueError::new_err(format!("unknown dtype {dtype}")))?;
    let t = Tensor::from_le_bytes(data, dt, &shape)?;
    t.set_requires_grad(requires_grad)?;
    object_of(cls, t)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_rebuild_tensor, m)?)
}
