//! `repr(tensor)` / `str(tensor)` / `format(tensor)` and
//! `set_printoptions`: torch's text of a tensor, formatted by
//! `tensor::print` (a subclass prints its own name as the prefix).

use crate::python::core::bind::bind_functions;
use crate::python::core::tensor::PyTensor;
use crate::tensor::print;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn prefix_for(slf: &Bound<'_, PyTensor>) -> PyResult<String> {
    let ty = slf.get_type();
    if ty.is(slf.py().get_type::<PyTensor>()) {
        return Ok("tensor(".into());
    }
    let name = ty.name()?.to_string();
    Ok(if name == "Parameter" {
        "tensor(".into()
    } else {
        format!("{name}(")
    })
}

#[pymethods]
impl PyTensor {
    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let prefix = prefix_for(slf)?;
        let t = slf.borrow().inner.clone();
        // Formatting reads the storage only; let other threads run.
        Ok(slf.py().detach(|| print::repr_with_prefix(&t, &prefix)))
    }
    fn __str__(slf: &Bound<'_, Self>) -> PyResult<String> {
        Self::__repr__(slf)
    }
    /// `f"{t:.2f}"` formats the value of a 0-dim tensor, like torch.
    fn __format__(slf: &Bound<'_, Self>, format_spec: &str) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let t = slf.borrow().inner.clone();
        if t.ndim() == 0 {
            let v = crate::python::core::args::scalar_to_py(py, t.item()?)?;
            return Ok(v.call_method1("__format__", (format_spec,))?.unbind());
        }
        if !format_spec.is_empty() {
            return Err(PyTypeError::new_err(
                "unsupported format string passed to Tensor.__format__",
            ));
        }
        Ok(Self::__repr__(slf)?.into_pyobject(py)?.into_any().unbind())
    }
}

bind_functions! { register_functions:
    /// torch.set_printoptions.
    #[pyo3(signature = (precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None))]
    fn set_printoptions(
        precision: Option<usize>,
        threshold: Option<f64>,
        edgeitems: Option<usize>,
        linewidth: Option<usize>,
        profile: Option<&str>,
        sci_mode: Option<bool>,
    ) -> PyResult<()> {
        let mut o = print::print_options();
        if let Some(name) = profile {
            o = o.with_profile(name)?;
        }
        o.precision = precision.unwrap_or(o.precision);
        o.threshold = threshold.unwrap_or(o.threshold);
        o.edgeitems = edgeitems.unwrap_or(o.edgeitems);
        o.linewidth = linewidth.unwrap_or(o.linewidth);
        o.sci_mode = sci_mode;
        print::set_print_options(o);
        Ok(())
    }
    /// torch.get_printoptions: a dict usable as `set_printoptions(**opts)`.
    fn get_printoptions(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
        let o = print::print_options();
        let d = PyDict::new(py);
        d.set_item("precision", o.precision)?;
        if o.threshold.is_finite() && o.threshold.fract() == 0.0 {
            d.set_item("threshold", o.threshold as i64)?;
        } else {
            d.set_item("threshold", o.threshold)?;
        }
        d.set_item("edgeitems", o.edgeitems)?;
        d.set_item("linewidth", o.linewidth)?;
        d.set_item("sci_mode", o.sci_mode)?;
        Ok(d)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    Ok(())
}
