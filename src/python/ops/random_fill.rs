//! `uniform_`, `normal_`, `bernoulli_`, `exponential_` (in place),
//! `bernoulli`, and `dropout` (module function and `_C._nn.dropout`).

use crate::python::core::bind::bind_functions;
use crate::python::core::bind::bind_methods;
use crate::python::core::generator::generator_arg;
use crate::python::core::tensor::{wrap, PyTensor};
use pyo3::prelude::*;

bind_methods! { random_fill_fns, register_fns:
    #[pyo3(signature = (*, generator=None))]
    fn bernoulli(&self, generator: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let g = generator_arg(generator, "bernoulli")?;
        Ok(wrap(self.inner.bernoulli_gen(g.as_ref())?))
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
        let g = generator_arg(generator, "uniform_")?;
        slf.inner.uniform_gen_(r#from, to, g.as_ref())?;
        Ok(slf)
    }
    #[pyo3(signature = (mean=0.0, std=1.0, *, generator=None))]
    fn normal_<'py>(
        slf: PyRef<'py, Self>,
        mean: f64,
        std: f64,
        generator: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRef<'py, Self>> {
        let g = generator_arg(generator, "normal_")?;
        slf.inner.normal_gen_(mean, std, g.as_ref())?;
        Ok(slf)
    }
    #[pyo3(signature = (p=0.5, *, generator=None))]
    fn bernoulli_<'py>(
        slf: PyRef<'py, Self>,
        p: f64,
        generator: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRef<'py, Self>> {
        let g = generator_arg(generator, "bernoulli_")?;
        slf.inner.bernoulli_scalar_gen_(p, g.as_ref())?;
        Ok(slf)
    }
    #[pyo3(signature = (lambd=1.0, *, generator=None))]
    fn exponential_<'py>(
        slf: PyRef<'py, Self>,
        lambd: f64,
        generator: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRef<'py, Self>> {
        let g = generator_arg(generator, "exponential_")?;
        slf.inner.exponential_gen_(lambd, g.as_ref())?;
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
    register_multinomial(m)?;
    let nn = m.getattr("_nn")?.cast_into::<PyModule>()?;
    register_nn_fns(&nn)?;
    nn.add_function(wrap_pyfunction!(feature_dropout, &nn)?)
}

bind_methods! { multinomial_fns, register_multinomial:
    /// Indices sampled from the rows' weights (torch's CPU algorithm).
    #[pyo3(signature = (num_samples, replacement=false, *, generator=None))]
    fn multinomial(&self, num_samples: i64, replacement: bool, generator: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let g = generator_arg(generator, "multinomial")?;
        Ok(wrap(self.inner.multinomial_gen(num_samples, replacement, g.as_ref())?))
    }
}

#[pymethods]
impl PyTensor {
    /// `random_()`, `random_(to)`, `random_(from, to)` (`to=None`: the
    /// dtype's largest integer).
    #[pyo3(signature = (*args, generator=None, **kwargs))]
    fn random_<'py>(
        slf: PyRef<'py, Self>,
        args: &Bound<'py, pyo3::types::PyTuple>,
        generator: Option<&Bound<'py, PyAny>>,
        kwargs: Option<&Bound<'py, pyo3::types::PyDict>>,
    ) -> PyResult<PyRef<'py, Self>> {
        let g = generator_arg(generator, "random_")?;
        let mut from: Option<Bound<'py, PyAny>> = None;
        let mut to: Option<Bound<'py, PyAny>> = None;
        let mut has_to = false;
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                match k.extract::<String>()?.as_str() {
                    "from" => from = Some(v),
                    "to" => {
                        to = Some(v);
                        has_to = true;
                    }
                    other => {
                        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                            "random_() got an unexpected keyword argument '{other}'"
                        )))
                    }
                }
            }
        }
        match args.len() {
            0 => {}
            1 if from.is_none() && !has_to => {
                to = Some(args.get_item(0)?);
                has_to = true;
            }
            1 => from = Some(args.get_item(0)?),
            2 => {
                from = Some(args.get_item(0)?);
                to = Some(args.get_item(1)?);
                has_to = true;
            }
            _ => {
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "random_() received an invalid combination of arguments",
                ))
            }
        }
        let to = to.filter(|t| !t.is_none());
        if from.is_none() && !has_to {
            slf.inner.random_default_gen_(g.as_ref())?;
        } else {
            let from = from.map(|f| f.extract::<i64>()).transpose()?.unwrap_or(0);
            let to = to.map(|t| t.extract::<i64>()).transpose()?;
            slf.inner.random_range_gen_(from, to, g.as_ref())?;
        }
        Ok(slf)
    }
}
