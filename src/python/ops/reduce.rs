//! Reductions, scans and the softmax family: Tensor methods and module
//! functions with torch's signatures. Argument parsing only; the math is in
//! `ops::reduce` / `ops::softmax`.

use crate::python::core::args::{dims, return_types, type_name, values_indices};
use crate::python::core::batched::{self, tensor_input, vmap_rule};
use crate::python::core::bind::bind_functions;
use crate::python::core::bind::bind_methods;
use crate::python::core::dtype::PyDType;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::{DType, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyModule, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

fn dt(d: Option<PyDType>) -> Option<DType> {
    d.map(|d| d.dtype)
}

/// max/min: no dim (full reduction), a dim (values, indices), or another
/// tensor (elementwise maximum/minimum, if that op is available).
fn max_min<'py>(
    py: Python<'py>,
    input: &Bound<'py, PyAny>,
    t: &Tensor,
    dim: Option<&Bound<'py, PyAny>>,
    keepdim: Option<bool>,
    want_max: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let kind = if want_max { "max" } else { "min" };
    let bad = |got: String| {
        PyTypeError::new_err(format!(
            "{kind}() received an invalid combination of arguments - got ({got}), but expected one of:\n * ()\n * (Tensor other)\n * (int dim, bool keepdim = False)"
        ))
    };
    let Some(d) = dim.filter(|d| !d.is_none()) else {
        if keepdim.is_some() {
            return Err(bad("keepdim=bool".into()));
        }
        let r = if want_max { t.max()? } else { t.min()? };
        return Ok(wrap(r).into_pyobject(py)?.into_any());
    };
    if d.cast::<PyTensor>().is_ok() {
        if keepdim.is_some() {
            return Err(bad("Tensor, keepdim=bool".into()));
        }
        let method = if want_max { "maximum" } else { "minimum" };
        if !input.hasattr(method)? {
            return Err(bad("Tensor".into()));
        }
        return input.call_method1(method, (d,));
    }
    if d.is_instance_of::<PyBool>() || !d.is_instance_of::<PyInt>() {
        return Err(bad(type_name(d)));
    }
    let dim: i64 = d.extract()?;
    let keepdim = keepdim.unwrap_or(false);
    let r = if want_max {
        t.max_dim(dim, keepdim)?
    } else {
        t.min_dim(dim, keepdim)?
    };
    values_indices(py, kind, r)
}

/// The correction of var/std from torch's overloads: `unbiased` (bool) or
/// `correction` (number), not both; default 1.
fn correction_arg(
    op: &str,
    unbiased: Option<&Bound<'_, PyAny>>,
    correction: Option<&Bound<'_, PyAny>>,
) -> PyResult<f64> {
    let unbiased = unbiased.filter(|u| !u.is_none());
    let correction = correction.filter(|c| !c.is_none());
    match (unbiased, correction) {
        (Some(_), Some(_)) => Err(PyTypeError::new_err(format!(
            "{op}() received an invalid combination of arguments - got (unbiased=bool, correction=Number), but expected one of:\n * (tuple of ints dim, bool unbiased = True, bool keepdim = False)\n * (tuple of ints dim = None, *, Number correction = None, bool keepdim = False)"
        ))),
        (Some(u), None) => {
            if !u.is_instance_of::<PyBool>() {
                return Err(PyTypeError::new_err(format!(
                    "{op}(): argument 'unbiased' must be bool, not {}",
                    type_name(u)
                )));
            }
            Ok(if u.extract::<bool>()? { 1.0 } else { 0.0 })
        }
        (None, Some(c)) => {
            if !(c.is_instance_of::<PyInt>() || c.is_instance_of::<PyFloat>()) {
                return Err(PyTypeError::new_err(format!(
                    "{op}(): argument 'correction' must be Number, not {}",
                    type_name(c)
                )));
            }
            c.extract::<f64>()
        }
        (None, None) => Ok(1.0),
    }
}

fn var_std(
    t: &Tensor,
    dim: Option<&Bound<'_, PyAny>>,
    unbiased: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
    correction: Option<&Bound<'_, PyAny>>,
    sqrt: bool,
) -> PyResult<PyTensor> {
    let op = if sqrt { "std" } else { "var" };
    // `x.var(False)`: the legacy overload whose first argument is `unbiased`.
    let (dim, unbiased) = match dim {
        Some(d) if d.is_instance_of::<PyBool>() && unbiased.is_none() => (None, Some(d)),
        _ => (dim, unbiased),
    };
    let c = correction_arg(op, unbiased, correction)?;
    let dims = dims(dim)?;
    Ok(wrap(if sqrt {
        t.std(&dims, c, keepdim)?
    } else {
        t.var(&dims, c, keepdim)?
    }))
}

/// The order of `norm`: a number, 'fro' (2 over at most 2 dims) or 'nuc'.
fn norm_order(p: Option<&Bound<'_, PyAny>>, dims: &[i64]) -> PyResult<f64> {
    let Some(p) = p.filter(|p| !p.is_none()) else {
        return fro(dims);
    };
    if p.is_instance_of::<PyString>() {
        let s: String = p.extract()?;
        return match s.as_str() {
            "fro" => fro(dims),
            "nuc" => Err(PyRuntimeError::new_err(
                "ferrograd: the nuclear norm (p='nuc') is not supported",
            )),
            _ => Err(PyRuntimeError::new_err(format!(
                "linalg.matrix_norm: Order {s} not supported."
            ))),
        };
    }
    if p.is_instance_of::<PyInt>() || p.is_instance_of::<PyFloat>() {
        return p.extract::<f64>();
    }
    Err(PyTypeError::new_err(format!(
        "norm(): argument 'p' must be Number or str, not {}",
        type_name(p)
    )))
}

fn fro(dims: &[i64]) -> PyResult<f64> {
    if dims.len() > 2 {
        let got: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
        return Err(PyRuntimeError::new_err(format!(
            "linalg.matrix_norm: dim must be a 2-tuple. Got {}",
            got.join(" ")
        )));
    }
    Ok(2.0)
}

fn norm(
    t: &Tensor,
    p: Option<&Bound<'_, PyAny>>,
    dim: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
    dtype: Option<PyDType>,
) -> PyResult<PyTensor> {
    let dims = dims(dim)?;
    let p = norm_order(p, &dims)?;
    Ok(wrap(t.norm(p, &dims, keepdim, dt(dtype))?))
}

fn prod(t: &Tensor, dim: Option<i64>, keepdim: bool, dtype: Option<PyDType>) -> PyResult<PyTensor> {
    Ok(wrap(match dim {
        None => t.prod(dt(dtype))?,
        Some(d) => t.prod_dim(d, keepdim, dt(dtype))?,
    }))
}

/// `name(dim=None, keepdim=False)` reductions over `dim` (an int, a
/// sequence, or None: all dims), with `*, dtype=None` where a `dtype` is
/// named: Tensor methods and module functions.
macro_rules! dim_reductions {
    ($($name:ident => $op:ident($($dtype:ident)?);)*) => {
        bind_methods! { dim_fns, register_dims:
            $(
                #[pyo3(signature = (dim=None, keepdim=false $(, *, $dtype=None)?))]
                fn $name(
                    &self,
                    dim: Option<&Bound<'_, PyAny>>,
                    keepdim: bool,
                    $($dtype: Option<PyDType>,)?
                ) -> PyResult<PyTensor> {
                    Ok(wrap(self.inner.$op(&dims(dim)?, keepdim $(, dt($dtype))?)?))
                }
            )*
        }
    };
}

dim_reductions! {
    sum => sum_dims(dtype);
    mean => mean_dims(dtype);
    amax => amax();
    amin => amin();
}

bind_methods! { reduce_fns, register_fns:
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn prod(&self, dim: Option<i64>, keepdim: bool, dtype: Option<PyDType>) -> PyResult<PyTensor> {
        prod(&self.inner, dim, keepdim, dtype)
    }
    #[pyo3(signature = (dim=None, keepdim=None))]
    fn max<'py>(
        slf: &Bound<'py, Self>,
        dim: Option<&Bound<'py, PyAny>>,
        keepdim: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let t = slf.borrow().inner.clone();
        max_min(slf.py(), slf.as_any(), &t, dim, keepdim, true)
    }
    #[pyo3(signature = (dim=None, keepdim=None))]
    fn min<'py>(
        slf: &Bound<'py, Self>,
        dim: Option<&Bound<'py, PyAny>>,
        keepdim: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let t = slf.borrow().inner.clone();
        max_min(slf.py(), slf.as_any(), &t, dim, keepdim, false)
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmax(&self, dim: Option<i64>, keepdim: bool) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.argmax(dim, keepdim)?))
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmin(&self, dim: Option<i64>, keepdim: bool) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.argmin(dim, keepdim)?))
    }
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn var(
        &self,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        correction: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        var_std(&self.inner, dim, unbiased, keepdim, correction, false)
    }
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn std(
        &self,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        correction: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        var_std(&self.inner, dim, unbiased, keepdim, correction, true)
    }
    #[pyo3(signature = (dim, keepdim=false))]
    fn logsumexp(&self, dim: &Bound<'_, PyAny>, keepdim: bool) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.logsumexp(&dims(Some(dim))?, keepdim)?))
    }
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumsum(&self, dim: i64, dtype: Option<PyDType>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.cumsum(dim, dt(dtype))?))
    }
    #[pyo3(signature = (dim, dtype=None))]
    fn softmax(&self, dim: i64, dtype: Option<PyDType>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.softmax(dim, dt(dtype))?))
    }
    #[pyo3(signature = (dim, dtype=None))]
    fn log_softmax(&self, dim: i64, dtype: Option<PyDType>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.log_softmax(dim, dt(dtype))?))
    }
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (p=None, dim=None, keepdim=false, dtype=None))]
    fn norm(
        &self,
        p: Option<&Bound<'_, PyAny>>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<PyDType>,
    ) -> PyResult<PyTensor> {
        norm(&self.inner, p, dim, keepdim, dtype)
    }
    /// `sum_to_size(*size)`: sums the broadcast dims away so the result has
    /// `size` (the reverse of `expand`).
    #[pyo3(signature = (*size))]
    fn sum_to_size(&self, size: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let size = crate::python::core::args::shape_arg(size)?;
        if size.iter().any(|&d| d < 0) {
            return Err(PyRuntimeError::new_err(format!(
                "size {{{size:?}}} is not expandable to size {{{:?}}}.",
                self.inner.shape()
            )));
        }
        let size: Vec<usize> = size.iter().map(|&d| d as usize).collect();
        Ok(wrap(self.inner.sum_to_size(&size)?))
    }
}

/// var_mean / std_mean: (var or std, mean) over the same dims.
macro_rules! spread_mean {
    ($($name:ident, $sqrt:literal;)*) => {
        bind_functions! { register_spread_mean: $(
            #[pyo3(signature = (input, dim=None, unbiased=None, keepdim=false, *, correction=None))]
            fn $name<'py>(
                input: &Bound<'py, PyAny>,
                dim: Option<&Bound<'py, PyAny>>,
                unbiased: Option<&Bound<'py, PyAny>>,
                keepdim: bool,
                correction: Option<&Bound<'py, PyAny>>,
            ) -> PyResult<Py<PyAny>> {
                vmap_rule!($name as stringify!($name), [input], [dim, unbiased, keepdim, correction]);
                let t = &tensor_input(input, stringify!($name))?.borrow().inner;
                let spread = var_std(t, dim, unbiased, keepdim, correction, $sqrt)?;
                let mean_dims = match dim {
                    Some(d) if d.is_instance_of::<PyBool>() => vec![],
                    _ => dims(dim)?,
                };
                let mean = wrap(t.mean_dims(&mean_dims, keepdim, None)?);
                (spread, mean).into_py_any(input.py())
            }
        )* }
    };
}
spread_mean! {
    var_mean, false;
    std_mean, true;
}

bind_functions! { register_functions:
    #[pyo3(name = "norm", signature = (input, p=None, dim=None, keepdim=false, out=None, dtype=None))]
    fn norm_fn<'py>(
        input: &Bound<'py, PyAny>,
        p: Option<&Bound<'py, PyAny>>,
        dim: Option<&Bound<'py, PyAny>>,
        keepdim: bool,
        out: Option<&Bound<'py, PyAny>>,
        dtype: Option<PyDType>,
    ) -> PyResult<Py<PyAny>> {
        if out.is_some_and(|o| !o.is_none()) {
            return Err(PyTypeError::new_err("norm(): out= is not supported"));
        }
        if batched::is_batched(input) {
            // the rule of `Tensor.norm`, whose parameters these are
            let kw = pyo3::types::PyDict::new(input.py());
            for (k, v) in [("p", p), ("dim", dim)] {
                batched::VmapArg::put(&v, input.py(), k, &kw)?;
            }
            batched::VmapArg::put(&keepdim, input.py(), "keepdim", &kw)?;
            batched::VmapArg::put(&dtype, input.py(), "dtype", &kw)?;
            return batched::method_call(input, "norm", kw);
        }
        let x = &tensor_input(input, "norm")?.borrow().inner;
        norm(x, p, dim, keepdim, dtype)?.into_py_any(input.py())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    register_spread_mean(m)?;
    register_dims(m)?;
    register_fns(m)?;
    m.add("return_types", return_types(m.py())?)?;
    Ok(())
}
