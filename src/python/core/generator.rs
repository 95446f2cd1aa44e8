//! `ferrograd.Generator` (torch.Generator on the CPU), the default
//! generator, `manual_seed`/`seed`/`initial_seed` and
//! `get_rng_state`/`set_rng_state`.
//!
//! A state is torch's `CPUGeneratorImplState` bytes. ferrograd has no uint8
//! dtype yet, so `get_state` returns them as an int64 tensor of byte values;
//! `set_state` takes that, or any array-like of bytes (a torch ByteTensor,
//! a NumPy uint8 array), so states move between the two libraries.

use crate::python::core::bind::bind_functions;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::random::Generator;
use crate::{DType, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

#[pyclass(name = "Generator", module = "ferrograd._C", frozen)]
pub(crate) struct PyGenerator {
    pub(crate) inner: Generator,
}

/// A seed as torch unpacks it: any int in [-2**63, 2**64), negatives
/// wrapping to their two's complement.
fn seed_arg(seed: &Bound<'_, PyAny>) -> PyResult<u64> {
    if let Ok(s) = seed.extract::<u64>() {
        return Ok(s);
    }
    if let Ok(s) = seed.extract::<i64>() {
        return Ok(s as u64);
    }
    if seed.is_instance_of::<pyo3::types::PyInt>() {
        return Err(PyRuntimeError::new_err("Overflow when unpacking long"));
    }
    Err(PyTypeError::new_err(format!(
        "manual_seed expected a long, but got {}",
        seed.get_type().name()?
    )))
}

fn state_tensor(bytes: Vec<u8>) -> PyResult<PyTensor> {
    let n = bytes.len();
    Ok(wrap(Tensor::from_vec(
        bytes.into_iter().map(i64::from).collect::<Vec<_>>(),
        &[n],
    )?))
}

/// The bytes of a state: an int64 ferrograd tensor of byte values, or an
/// array-like of uint8 (a torch ByteTensor, NumPy array, bytes).
fn state_bytes(state: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(t) = state.cast::<PyTensor>() {
        let t = &t.borrow().inner;
        if t.dtype() != DType::I64 || t.ndim() != 1 {
            return Err(PyTypeError::new_err(format!(
                "expected a state from get_rng_state() (a 1-D int64 tensor of bytes), but got a {}-D {} tensor",
                t.ndim(),
                t.dtype().scalar_type_name()
            )));
        }
        let v = t.to_vec::<i64>();
        if v.iter().any(|b| !(0..=255).contains(b)) {
            return Err(PyRuntimeError::new_err(
                "RNG state values must be bytes in [0, 255]",
            ));
        }
        return Ok(v.into_iter().map(|b| b as u8).collect());
    }
    if let Ok(b) = state.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    let py = state.py();
    let arr = if state.hasattr("numpy")? {
        state.call_method0("numpy")?
    } else {
        state.clone()
    };
    let np = py.import("numpy")?;
    let is_u8 = np
        .call_method1("asarray", (&arr,))
        .and_then(|a| a.getattr("dtype"))
        .and_then(|d| d.eq(np.getattr("uint8")?))
        .unwrap_or(false);
    if !is_u8 {
        return Err(PyTypeError::new_err(format!(
            "expected a torch.ByteTensor, but got {}",
            state.get_type().name()?
        )));
    }
    let raw = np
        .call_method1("asarray", (&arr,))?
        .call_method0("tobytes")?;
    Ok(raw.cast::<PyBytes>()?.as_bytes().to_vec())
}

#[pymethods]
impl PyGenerator {
    #[new]
    #[pyo3(signature = (device=None))]
    fn new(device: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        super::device::check_device(device)?;
        Ok(PyGenerator {
            inner: Generator::new(),
        })
    }
    /// Seeds the generator; returns it.
    fn manual_seed<'py>(
        slf: Bound<'py, Self>,
        seed: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        slf.get().inner.manual_seed(seed_arg(seed)?);
        Ok(slf)
    }
    /// Seeds from a non-deterministic source; returns the seed.
    fn seed(&self) -> u64 {
        self.inner.seed()
    }
    fn initial_seed(&self) -> u64 {
        self.inner.initial_seed()
    }
    fn get_state(&self) -> PyResult<PyTensor> {
        state_tensor(self.inner.get_state())
    }
    fn set_state<'py>(
        slf: Bound<'py, Self>,
        new_state: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let b = state_bytes(new_state)?;
        slf.get().inner.set_state(&b)?;
        Ok(slf)
    }
    #[getter]
    fn device<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("ferrograd")?.getattr("device")?.call1(("cpu",))
    }
    fn __repr__(&self) -> String {
        "<ferrograd._C.Generator object>".into()
    }
}

/// The `generator=` argument: None means the default generator.
pub(crate) fn generator_arg(
    g: Option<&Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<Option<Generator>> {
    match g {
        None => Ok(None),
        Some(g) if g.is_none() => Ok(None),
        Some(g) => match g.cast::<PyGenerator>() {
            Ok(g) => Ok(Some(g.get().inner.clone())),
            Err(_) => Err(PyTypeError::new_err(format!(
                "{what}(): argument 'generator' must be torch.Generator, not {}",
                g.get_type().name()?
            ))),
        },
    }
}

fn default_generator(py: Python<'_>) -> PyResult<Bound<'_, PyGenerator>> {
    static DEFAULT: pyo3::sync::PyOnceLock<Py<PyGenerator>> = pyo3::sync::PyOnceLock::new();
    let g = DEFAULT.get_or_try_init(py, || {
        Py::new(
            py,
            PyGenerator {
                inner: Generator::default_generator(),
            },
        )
    })?;
    Ok(g.bind(py).clone())
}

bind_functions! { register_rng_fns:
    /// Seeds the default generator; returns it (torch.manual_seed).
    fn manual_seed<'py>(
        py: Python<'py>,
        seed: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyGenerator>> {
        let g = default_generator(py)?;
        g.get().inner.manual_seed(seed_arg(seed)?);
        Ok(g)
    }
    /// Seeds the default generator non-deterministically; returns the seed.
    fn seed(py: Python<'_>) -> PyResult<u64> {
        Ok(default_generator(py)?.get().seed())
    }
    fn initial_seed() -> u64 {
        Generator::default_generator().initial_seed()
    }
    fn get_rng_state() -> PyResult<PyTensor> {
        state_tensor(Generator::default_generator().get_state())
    }
    fn set_rng_state(new_state: &Bound<'_, PyAny>) -> PyResult<()> {
        let b = state_bytes(new_state)?;
        Ok(Generator::default_generator().set_state(&b)?)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_rng_fns(m)?;
    m.add_class::<PyGenerator>()?;
    m.add("default_generator", default_generator(m.py())?)?;
    Ok(())
}
