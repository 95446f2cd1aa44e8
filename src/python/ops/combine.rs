//! meshgrid, atleast_nd, the *stack family, tensordot, kron, cross,
//! diff, take_along_dim, rot90 (`crate::ops::combine`) and nan_to_num,
//! nansum, nanmean, count_nonzero (`crate::ops::nan`): Tensor methods,
//! module functions and `_C._linalg.cross` / `vector_norm`.

use crate::ops::combine::{self, StackKind};
use crate::python::core::args::dims;
use crate::python::core::args::tensor_arg;
use crate::python::core::args::tensor_list;
use crate::python::core::batched::{self, vmap_rule};
use crate::python::core::bind::bind_functions;
use crate::python::core::bind::bind_methods;
use crate::python::core::dtype::PyDType;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use pyo3::exceptions::{PyRuntimeError, PyUserWarning};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::IntoPyObjectExt;

/// Tensors given as varargs or as one list/tuple.
fn tensor_args(args: &Bound<'_, PyTuple>) -> PyResult<Vec<Tensor>> {
    let list: Vec<PyRef<'_, PyTensor>> = match args.len() {
        1 if !args.get_item(0)?.is_instance_of::<PyTensor>() => args.get_item(0)?.extract()?,
        _ => args.extract()?,
    };
    Ok(list.iter().map(|t| t.inner.clone()).collect())
}

/// torch.cross's dim when none is given: the first of size 3 (deprecated).
fn cross_dim(py: Python<'_>, a: &Tensor, b: &Tensor, dim: Option<i64>) -> PyResult<i64> {
    if let Some(d) = dim {
        return Ok(d);
    }
    PyErr::warn(
        py,
        &py.get_type::<PyUserWarning>(),
        c"Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree with that of linalg.cross in a future release.",
        1,
    )?;
    let shape = crate::tensor::layout::broadcast_shapes(a.shape(), b.shape())?;
    match shape.iter().position(|&s| s == 3) {
        Some(d) => Ok(d as i64),
        None => Err(PyRuntimeError::new_err(format!(
            "no dimension of size 3 in input; shapes {:?} and {:?}",
            a.shape(),
            b.shape()
        ))),
    }
}

/// A `*stack` function: its batching rule inside vmap, else the join.
fn stack_of(tensors: &Bound<'_, PyAny>, kind: StackKind, name: &str) -> PyResult<Py<PyAny>> {
    if let Some(r) = batched::stack_kind(tensors, kind)? {
        return Ok(r);
    }
    wrap(combine::stack_kind(&tensor_list(tensors, name)?, kind)?).into_py_any(tensors.py())
}

bind_methods! { combine_fns, register_fns:
    fn kron(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.kron(&tensor_arg(other, "kron", "other", 1)?)?))
    }
    #[pyo3(signature = (other, dim=None))]
    fn cross(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        dim: Option<i64>,
    ) -> PyResult<PyTensor> {
        let other = tensor_arg(other, "cross", "other", 1)?;
        let d = cross_dim(py, &self.inner, &other, dim)?;
        Ok(wrap(self.inner.cross(&other, d)?))
    }
    #[pyo3(signature = (n=1, dim=-1, prepend=None, append=None))]
    fn diff(
        &self,
        n: i64,
        dim: i64,
        prepend: Option<&Bound<'_, PyAny>>,
        append: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let arg = |t: Option<&Bound<'_, PyAny>>, name: &str| {
            t.filter(|t| !t.is_none())
                .map(|t| tensor_arg(t, "diff", name, 3))
                .transpose()
        };
        let (p, a) = (arg(prepend, "prepend")?, arg(append, "append")?);
        Ok(wrap(self.inner.diff(n, dim, p.as_ref(), a.as_ref())?))
    }
    #[pyo3(signature = (indices, dim=None))]
    fn take_along_dim(&self, indices: &Bound<'_, PyAny>, dim: Option<i64>) -> PyResult<PyTensor> {
        let indices = tensor_arg(indices, "take_along_dim", "indices", 1)?;
        Ok(wrap(self.inner.take_along_dim(&indices, dim)?))
    }
    #[pyo3(signature = (k=1, dims=vec![0, 1]))]
    fn rot90(&self, k: i64, dims: Vec<i64>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.rot90(k, &dims)?))
    }
    #[pyo3(signature = (repeats, dim=None, *, output_size=None))]
    fn repeat_interleave(
        &self,
        repeats: &Bound<'_, PyAny>,
        dim: Option<i64>,
        output_size: Option<i64>,
    ) -> PyResult<PyTensor> {
        let _ = output_size;
        let counts = match repeats.cast::<PyTensor>() {
            Ok(t) => t.borrow().inner.to_vec::<i64>(),
            Err(_) => vec![repeats.extract::<i64>()?],
        };
        Ok(wrap(self.inner.repeat_interleave(&counts, dim)?))
    }
    #[pyo3(signature = (nan=0.0, posinf=None, neginf=None))]
    fn nan_to_num(&self, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.nan_to_num(nan, posinf, neginf)?))
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn nansum(
        &self,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<PyDType>,
    ) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.nansum(
            &dims(dim)?,
            keepdim,
            dtype.map(|d| d.dtype),
        )?))
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn nanmean(&self, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.nanmean(&dims(dim)?, keepdim)?))
    }
    #[pyo3(signature = (dim=None))]
    fn count_nonzero(&self, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.count_nonzero(&dims(dim)?)?))
    }
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (nan=0.0, posinf=None, neginf=None))]
    fn nan_to_num_(
        slf: PyRef<'_, Self>,
        nan: f64,
        posinf: Option<f64>,
        neginf: Option<f64>,
    ) -> PyResult<PyRef<'_, Self>> {
        slf.inner
            .apply_inplace("nan_to_num_", &[], |t| t.nan_to_num(nan, posinf, neginf))?;
        Ok(slf)
    }
}

bind_functions! { register_functions:
    #[pyo3(signature = (*tensors, indexing=None))]
    pub fn meshgrid<'py>(
        py: Python<'py>,
        tensors: &Bound<'py, PyTuple>,
        indexing: Option<&str>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let xy = match indexing {
            None => {
                PyErr::warn(
                    py,
                    &py.get_type::<PyUserWarning>(),
                    c"torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                    1,
                )?;
                false
            }
            Some("ij") => false,
            Some("xy") => true,
            Some(other) => {
                return Err(PyRuntimeError::new_err(format!(
                "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {other}"
            )))
            }
        };
        let first = tensors.get_item(0).ok();
        let items: Vec<Bound<'py, PyAny>> = match first {
            Some(f) if tensors.len() == 1 && !f.is_instance_of::<PyTensor>() && !batched::is_batched(&f) => {
                f.try_iter()?.collect::<PyResult<_>>()?
            }
            _ => tensors.iter().collect(),
        };
        if let Some(grids) = batched::meshgrid(&items, xy)? {
            return Ok(grids);
        }
        let grids = combine::meshgrid(&tensor_args(tensors)?, xy)?;
        PyTuple::new(py, grids.into_iter().map(wrap))
    }
    #[pyo3(signature = (*tensors))]
    pub fn atleast_1d<'py>(
        py: Python<'py>,
        tensors: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        atleast(py, tensors, 1)
    }
    #[pyo3(signature = (*tensors))]
    pub fn atleast_2d<'py>(
        py: Python<'py>,
        tensors: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        atleast(py, tensors, 2)
    }
    #[pyo3(signature = (*tensors))]
    pub fn atleast_3d<'py>(
        py: Python<'py>,
        tensors: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        atleast(py, tensors, 3)
    }
    pub fn vstack(tensors: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        stack_of(tensors, StackKind::V, "vstack")
    }
    pub fn hstack(tensors: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        stack_of(tensors, StackKind::H, "hstack")
    }
    pub fn dstack(tensors: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        stack_of(tensors, StackKind::D, "dstack")
    }
    pub fn column_stack(tensors: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        stack_of(tensors, StackKind::Column, "column_stack")
    }
    pub fn broadcast_to(input: PyRef<'_, PyTensor>, size: Vec<i64>) -> PyResult<PyTensor> {
        Ok(wrap(input.inner.broadcast_to(&size)?))
    }
    /// `dims`: an int n (the last n dims of a with the first n of b), or a
    /// pair of dim lists.
    #[pyo3(signature = (a, b, dims=None))]
    pub fn tensordot<'py>(
        a: &Bound<'py, PyAny>,
        b: &Bound<'py, PyAny>,
        dims: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if batched::any_batched(&[a, b]) {
            let func = pyo3::wrap_pyfunction!(tensordot, a.py())?;
            return batched::tensordot(func.as_any(), a, b, dims);
        }
        let py = a.py();
        let a = batched::tensor_input(a, "tensordot")?.borrow();
        let b: PyRef<'_, PyTensor> = b.extract()?;
        let (da, db): (Vec<i64>, Vec<i64>) = match dims {
            None => tail_head(&a.inner, 2)?,
            Some(d) => match d.extract::<i64>() {
                Ok(n) => tail_head(&a.inner, n)?,
                Err(_) => {
                    let (x, y): (Bound<'_, PyAny>, Bound<'_, PyAny>) = d.extract()?;
                    let list = |o: &Bound<'_, PyAny>| match o.extract::<i64>() {
                        Ok(i) => Ok(vec![i]),
                        Err(_) => o.extract::<Vec<i64>>(),
                    };
                    (list(&x)?, list(&y)?)
                }
            },
        };
        wrap(a.inner.tensordot(&b.inner, &da, &db)?).into_py_any(py)
    }
}

bind_functions! { register_linalg_fns:
    /// `torch.linalg.cross` (dim -1 by default).
    #[pyo3(name = "cross", signature = (input, other, *, dim=-1))]
    pub fn linalg_cross<'py>(
        input: &Bound<'py, PyAny>,
        other: &Bound<'py, PyAny>,
        dim: i64,
    ) -> PyResult<Py<PyAny>> {
        vmap_rule!(linalg_cross as "linalg.cross", [input, other], [dim]);
        let a = tensor_arg(input, "linalg.cross", "input", 1)?;
        let b = tensor_arg(other, "linalg.cross", "other", 2)?;
        wrap(a.cross(&b, dim)?).into_py_any(input.py())
    }
    /// `torch.linalg.vector_norm`.
    #[pyo3(signature = (x, ord=2.0, dim=None, keepdim=false, *, dtype=None))]
    pub fn vector_norm(
        x: PyRef<'_, PyTensor>,
        ord: f64,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<PyDType>,
    ) -> PyResult<PyTensor> {
        Ok(wrap(x.inner.norm(
            ord,
            &dims(dim)?,
            keepdim,
            dtype.map(|d| d.dtype),
        )?))
    }
}

/// atleast_nd of one tensor (a tensor back) or several (a tuple).
fn atleast<'py>(
    py: Python<'py>,
    args: &Bound<'py, PyTuple>,
    n: usize,
) -> PyResult<Bound<'py, PyAny>> {
    if args.len() == 1 && args.get_item(0)?.is_instance_of::<PyTensor>() {
        let item = args.get_item(0)?;
        let input = item.cast::<PyTensor>()?;
        let t = input.borrow().inner.atleast(n)?;
        // the tensor itself when it has n dims already, as torch
        return crate::python::core::tensor::same_or_new(input, t);
    }
    let out: Vec<PyTensor> = tensor_args(args)?
        .iter()
        .map(|t| t.atleast(n).map(wrap))
        .collect::<crate::Result<_>>()?;
    Ok(PyTuple::new(py, out)?.into_any())
}

fn tail_head(a: &Tensor, n: i64) -> PyResult<(Vec<i64>, Vec<i64>)> {
    if n < 0 {
        return Err(PyRuntimeError::new_err(format!(
            "tensordot expects dims >= 0, but got dims={n}"
        )));
    }
    let nd = a.ndim() as i64;
    Ok(((nd - n..nd).collect(), (0..n).collect()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    register_fns(m)?;
    m.add("row_stack", m.getattr("vstack")?)?;
    let linalg = PyModule::new(m.py(), "_linalg")?;
    register_linalg_fns(&linalg)?;
    m.add_submodule(&linalg)?;
    Ok(())
}
