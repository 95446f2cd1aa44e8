//! flip, roll, repeat/tile, tril/triu, diagonal/diag/trace, movedim and
//! swapaxes: Tensor methods and module functions.

use crate::python::core::args::ints;
use crate::python::core::args::shape_arg;
use crate::python::core::batched::{self, tensor_input, vmap_rule};
use crate::python::core::bind::{bind_functions, bind_methods};
use crate::python::core::tensor::{view_result, wrap, PyTensor};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::IntoPyObjectExt;

/// `dims` given as varargs ints, one sequence, or the `dims=` keyword.
fn dims_arg(args: &Bound<'_, PyTuple>, dims: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<i64>> {
    match dims {
        Some(d) => ints(d),
        None => shape_arg(args),
    }
}

bind_methods! { shape_fns, register_fns:
    #[pyo3(signature = (offset=0, dim1=0, dim2=1))]
    fn diagonal(slf: &Bound<'_, Self>, offset: i64, dim1: i64, dim2: i64) -> PyResult<PyTensor> {
        let t = slf.borrow().inner.diagonal(offset, dim1, dim2)?;
        Ok(view_result(slf, t))
    }
    fn movedim(
        slf: &Bound<'_, Self>,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let t = slf
            .borrow()
            .inner
            .movedim(&ints(source)?, &ints(destination)?)?;
        Ok(view_result(slf, t))
    }
    fn swapaxes(slf: &Bound<'_, Self>, axis0: i64, axis1: i64) -> PyResult<PyTensor> {
        let t = slf.borrow().inner.transpose(axis0, axis1)?;
        Ok(view_result(slf, t))
    }
    #[pyo3(signature = (diagonal=0))]
    fn diag(&self, diagonal: i64) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.diag(diagonal)?))
    }
    #[pyo3(signature = (shifts, dims=None))]
    fn roll(
        &self,
        shifts: &Bound<'_, PyAny>,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let dims = match dims {
            Some(d) if !d.is_none() => ints(d)?,
            _ => vec![],
        };
        Ok(wrap(self.inner.roll(&ints(shifts)?, &dims)?))
    }
    fn trace(&self) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.trace()?))
    }
    #[pyo3(signature = (diagonal=0))]
    fn tril(&self, diagonal: i64) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.tril(diagonal)?))
    }
    #[pyo3(signature = (diagonal=0))]
    fn triu(&self, diagonal: i64) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.triu(diagonal)?))
    }
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (*args, dims=None))]
    fn flip(
        &self,
        args: &Bound<'_, PyTuple>,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.flip(&dims_arg(args, dims)?)?))
    }
    #[pyo3(signature = (*sizes))]
    fn repeat(&self, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.repeat(&shape_arg(sizes)?)?))
    }
    #[pyo3(signature = (*dims))]
    fn tile(&self, dims: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.tile(&shape_arg(dims)?)?))
    }
    #[pyo3(signature = (diagonal=0))]
    fn tril_(slf: PyRef<'_, Self>, diagonal: i64) -> PyResult<PyRef<'_, Self>> {
        slf.inner
            .apply_inplace("tril_", &[], |s| s.tril(diagonal))?;
        Ok(slf)
    }
    #[pyo3(signature = (diagonal=0))]
    fn triu_(slf: PyRef<'_, Self>, diagonal: i64) -> PyResult<PyRef<'_, Self>> {
        slf.inner
            .apply_inplace("triu_", &[], |s| s.triu(diagonal))?;
        Ok(slf)
    }
    fn moveaxis(
        slf: &Bound<'_, Self>,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        Self::movedim(slf, source, destination)
    }
    fn swapdims(slf: &Bound<'_, Self>, dim0: i64, dim1: i64) -> PyResult<PyTensor> {
        let t = slf.borrow().inner.transpose(dim0, dim1)?;
        Ok(view_result(slf, t))
    }
}

bind_functions! { register_functions:
    fn flip(input: PyRef<'_, PyTensor>, dims: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(wrap(input.inner.flip(&ints(dims)?)?))
    }
    fn tile<'py>(input: &Bound<'py, PyAny>, dims: Vec<i64>) -> PyResult<Py<PyAny>> {
        vmap_rule!(tile as "tile", [input], [dims]);
        let x = &tensor_input(input, "tile")?.borrow().inner;
        wrap(x.tile(&dims)?).into_py_any(input.py())
    }
    /// `torch.einsum(equation, *operands)`; the operands may also come as one
    /// list or tuple.
    #[pyo3(signature = (equation, *operands))]
    fn einsum<'py>(equation: &str, operands: &Bound<'py, PyTuple>) -> PyResult<Py<PyAny>> {
        let py = operands.py();
        let objs: Vec<Bound<'py, PyAny>> = match operands.len() {
            1 if !operands.get_item(0)?.is_instance_of::<PyTensor>()
                && !batched::is_batched(&operands.get_item(0)?) =>
            {
                operands.get_item(0)?.try_iter()?.collect::<PyResult<_>>()?
            }
            _ => operands.iter().collect(),
        };
        if objs.iter().any(batched::is_batched) {
            let func = pyo3::wrap_pyfunction!(einsum, py)?;
            return batched::einsum(func.as_any(), equation, objs);
        }
        let ts = objs
            .iter()
            .map(|o| Ok(o.cast::<PyTensor>()?.borrow().inner.clone()))
            .collect::<PyResult<Vec<crate::Tensor>>>()?;
        wrap(crate::ops::einsum::einsum(equation, &ts)?).into_py_any(py)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_fns(m)?;
    register_functions(m)?;
    m.add("moveaxis", m.getattr("movedim")?)?;
    m.add("swapdims", m.getattr("swapaxes")?)?;
    Ok(())
}
