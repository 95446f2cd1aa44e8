//! `uniform_`, `normal_`, `bernoulli_`, `exponential_` (in place),
//! `bernoulli`, and `dropout` (module function and `_C._nn.dropout`).

use crate::python::core::bind::bind_functions;
use crate::python::core::bind::bind_methods;
use crate::python::core::tensor::{wrap, PyTensor};
use pyo3::prelude::*;

bind_methods! { random_fill_fns, register_fns:
    #[pyo3(signature = (*, generator=None))]
    fn bernoulli(&self, generator: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let _ = generator;
        Ok(wrap(self.inner.bernoulli()?))
    }
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (r#from=0.0, to=1.0, *, generator=None))]
    fn uniform_<'py>(
        slf: PyRef<'py, Self>,
        r#from: f64,
        to: f64,
        generator: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRef<'py, Self>> {
        let _ = generator; // the global generator
        slf.inner.uniform_(r#from, to)?;
        Ok(slf)
    }
    #[pyo3(signature = (mean=0.0, std=1.0, *, generator=None))]
    fn normal_<'py>(
        slf: PyRef<'py, Self>,
        mean: f64,
        std: f64,
        generator: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRef<'py, Self>> {
        let _ = generator;
        slf.inner.normal_(mean, std)?;
        Ok(slf)
    }
    #[pyo3(signature = (p=0.5, *, generator=None))]
    fn bernoulli_<'py>(
        slf: PyRef<'py, Self>,
        p: f64,
        generator: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRef<'py, Self>> {
        let _ = generator;
        slf.inner.bernoulli_(p)?;
        Ok(slf)
    }
    #[pyo3(signature = (lambd=1.0, *, generator=None))]
    fn exponential_<'py>(
        slf: PyRef<'py, Self>,
        lambd: f64,
        generator: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRef<'py, Self>> {
        let _ = generator;
        slf.inner.exponential_(lambd)?;
        Ok(slf)
    }
}

bind_functions! { register_nn_fns:
    /// torch's `dropout(input, p, train)` / `nn.functional.dropout`; in place
    /// it returns the input object.
    #[pyo3(signature = (input, p=0.5, training=true, inplace=false))]
    fn dropout<'py>(
        input: &Bound<'py, PyTensor>,
        p: f64,
        training: bool,
        inplace: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let t = input.borrow().inner.clone();
        if inplace {
            t.dropout_(p, training)?;
            return Ok(input.clone().into_any());
        }
        Ok(Bound::new(input.py(), wrap(t.dropout(p, training)?))?.into_any())
    }
}

/// Channel-wise dropout (`dropout1d`/`2d`/`3d` check the rank in Python).
#[pyfunction]
#[pyo3(signature = (input, p, training, inplace, batched=true))]
fn feature_dropout<'py>(
    input: &Bound<'py, PyTensor>,
    p: f64,
    training: bool,
    inplace: bool,
    batched: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let t = input.borrow().inner.clone();
    if inplace {
        t.feature_dropout_(p, training, batched)?;
        return Ok(input.clone().into_any());
    }
    let out = t.feature_dropout(p, training, batched)?;
    Ok(Bound::new(input.py(), wrap(out))?.into_any())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_fns(m)?;
    let nn = m.getattr("_nn")?.cast_into::<PyModule>()?;
    register_nn_fns(&nn)?;
    nn.add_function(wrap_pyfunction!(feature_dropout, &nn)?)
}
