//! The random factories: `rand`, `randn`, `randint`, `randperm`.

use super::*;
use crate::python::core::args::*;
use crate::python::core::generator::generator_arg;
use crate::python::core::identity::Fresh;
use crate::tensor::Scalar;
use crate::{DType, Tensor};
use pyo3::exceptions::{PyNotImplementedError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

pub(crate) fn random_float(d: DType, what: &str) -> PyResult<()> {
    if !d.is_floating() {
        return Err(PyNotImplementedError::new_err(format!(
            "\"{what}\" not implemented for '{}'",
            d.scalar_type_name()
        )));
    }
    Ok(())
}

factories! { register_random:
    /// Uniform random numbers in [0, 1).
    fn rand(*shape, size=None, generator=None,)(
        shape: &Bound<'_, PyTuple>,
        size: Option<&Bound<'_, PyAny>>,
        generator: Option<&Bound<'_, PyAny>>,
    ) |dtype| {
        let generator = generator_arg(generator, "rand")?;
        let (s, d) = (shape_from(shape, size, "rand")?, float_or_default(dtype));
        random_float(d, "check_uniform_bounds")?;
        Tensor::rand_gen(&s, d, generator.as_ref())?
    }
    /// Standard normal random numbers.
    fn randn(*shape, size=None, generator=None,)(
        shape: &Bound<'_, PyTuple>,
        size: Option<&Bound<'_, PyAny>>,
        generator: Option<&Bound<'_, PyAny>>,
    ) |dtype| {
        let generator = generator_arg(generator, "randn")?;
        let (s, d) = (shape_from(shape, size, "randn")?, float_or_default(dtype));
        random_float(d, "normal_kernel_cpu")?;
        Tensor::randn_gen(&s, d, generator.as_ref())?
    }
    /// `randint(high, size)`, `randint(low, high, size)` and keyword forms.
    fn randint(*args, low=None, high=None, size=None, generator=None,)(
        args: &Bound<'_, PyTuple>,
        low: Option<&Bound<'_, PyAny>>,
        high: Option<&Bound<'_, PyAny>>,
        size: Option<&Bound<'_, PyAny>>,
        generator: Option<&Bound<'_, PyAny>>,
    ) |dtype| {
        let generator = generator_arg(generator, "randint")?;
        let pos: Vec<Bound<'_, PyAny>> = args.iter().collect();
        let (lo, hi, sz) = match (pos.len(), low, high, size) {
            (3, None, None, None) => (Some(pos[0].clone()), pos[1].clone(), pos[2].clone()),
            (2, None, None, None) => (None, pos[0].clone(), pos[1].clone()),
            (2, None, None, Some(s)) => (Some(pos[0].clone()), pos[1].clone(), s.clone()),
            (1, None, None, Some(s)) => (None, pos[0].clone(), s.clone()),
            (1, None, Some(h), Some(s)) => (Some(pos[0].clone()), h.clone(), s.clone()),
            (0, l, Some(h), Some(s)) => (l.cloned(), h.clone(), s.clone()),
            _ => return Err(PyTypeError::new_err(
                "randint() received an invalid combination of arguments: expected (high, size) or (low, high, size)",
            )),
        };
        let lo = lo.map(|l| int_bound(&l, "low")).transpose()?.unwrap_or(0);
        let hi = int_bound(&hi, "high")?;
        let s = checked_dims(&seq_shape(&sz, "randint")?)?;
        Tensor::randint_gen(lo, hi, &s, dtype.unwrap_or(DType::I64), generator.as_ref())?
    }
    fn randperm(n, *, generator=None,)(n: i64, generator: Option<&Bound<'_, PyAny>>) |dtype| {
        let generator = generator_arg(generator, "randperm")?;
        let n = checked_dims(&[n])?[0];
        let d = dtype.unwrap_or(DType::I64);
        if d == DType::Bool {
            return Err(PyNotImplementedError::new_err(
                "\"randperm\" not implemented for 'Bool'",
            ));
        }
        Tensor::randperm_gen(n, generator.as_ref())?.cast_raw(d)
    }
}

pub(crate) fn int_bound(v: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    match range_scalar(v, what)? {
        Scalar::Float(f) => Ok(f as i64),
        s => Ok(s.to_f64() as i64),
    }
}
