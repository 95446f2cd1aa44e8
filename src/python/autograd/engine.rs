//! autograd entry points and global switches exposed to Python.

use crate::autograd::grad_mode;
use crate::python::core::bind::bind_functions;
use crate::python::core::errors::error_from_py;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::OnceLock;

/// A tensor or a sequence of tensors, as torch accepts for `tensors=`/
/// `outputs=`/`inputs=`; a non-tensor entry fails as in torch: an output
/// with its AssertionError, an input with its RuntimeError.
fn checked_seq(obj: &Bound<'_, PyAny>, outputs: bool) -> PyResult<Vec<Tensor>> {
    seq_of(obj, |item| match item.cast::<PyTensor>() {
        Ok(t) => Ok(t.borrow().inner.clone()),
        Err(_) if outputs => Err(pyo3::exceptions::PyAssertionError::new_err(
            "Expected output to be a torch.Tensor",
        )),
        Err(_) => Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "all inputs have to be Tensors or GradientEdges, but got {}",
            item.get_type().name()?
        ))),
    })
}

fn seq_of<T>(
    obj: &Bound<'_, PyAny>,
    f: impl Fn(&Bound<'_, PyAny>) -> PyResult<T>,
) -> PyResult<Vec<T>> {
    if obj.is_instance_of::<PyTensor>() {
        return Ok(vec![f(obj)?]);
    }
    obj.try_iter()?.map(|item| f(&item?)).collect()
}

/// Like `checked_seq`, but entries may be None (gradients: anything else is
/// torch's TypeError).
fn opt_tensor_seq(obj: Option<&Bound<'_, PyAny>>, n: usize) -> PyResult<Vec<Option<Tensor>>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(vec![None; n]);
    };
    seq_of(obj, |item| {
        if item.is_none() {
            return Ok(None);
        }
        match item.cast::<PyTensor>() {
            Ok(t) => Ok(Some(t.borrow().inner.clone())),
            Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "gradients can be either Tensors or None, but got {}",
                item.get_type().name()?
            ))),
        }
    })
}

bind_functions! { register_functions:
    #[pyo3(signature = (tensors, grad_tensors=None, retain_graph=None, create_graph=false, grad_variables=None, inputs=None))]
    fn backward(
        py: Python<'_>,
        tensors: &Bound<'_, PyAny>,
        grad_tensors: Option<&Bound<'_, PyAny>>,
        retain_graph: Option<bool>,
        create_graph: bool,
        grad_variables: Option<&Bound<'_, PyAny>>,
        inputs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let tensors = checked_seq(tensors, true)?;
        let grads = opt_tensor_seq(grad_tensors.or(grad_variables), tensors.len())?;
        let inputs = inputs.map(|i| checked_seq(i, false)).transpose()?;
        py.detach(|| {
            crate::autograd::backward(
                &tensors,
                &grads,
                retain_graph,
                create_graph,
                inputs.as_deref(),
            )
        })?;
        Ok(())
    }
    #[pyo3(signature = (outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=false, only_inputs=true, allow_unused=None, is_grads_batched=false, materialize_grads=false))]
    fn grad<'py>(
        py: Python<'py>,
        outputs: &Bound<'_, PyAny>,
        inputs: &Bound<'_, PyAny>,
        grad_outputs: Option<&Bound<'_, PyAny>>,
        retain_graph: Option<bool>,
        create_graph: bool,
        only_inputs: bool,
        allow_unused: Option<bool>,
        is_grads_batched: bool,
        materialize_grads: bool,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = only_inputs;
        if materialize_grads && allow_unused == Some(false) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False.",
            ));
        }
        let outputs = checked_seq(outputs, true)?;
        let inputs = checked_seq(inputs, false)?;
        let grads = opt_tensor_seq(grad_outputs, outputs.len())?;
        let run = if is_grads_batched {
            crate::autograd::batched_grad::grad_batched
        } else {
            crate::autograd::grad
        };
        let result = py.detach(|| {
            run(
                &outputs,
                &inputs,
                &grads,
                retain_graph,
                create_graph,
                allow_unused.unwrap_or(false),
                materialize_grads,
            )
        })?;
        // A tuple, as torch.autograd.grad returns.
        PyTuple::new(py, result.into_iter().map(|g| g.map(wrap)))
    }
    fn is_grad_enabled() -> bool {
        grad_mode::is_grad_enabled()
    }
    fn _set_grad_enabled(enabled: bool) {
        grad_mode::set_grad_enabled(enabled)
    }
    fn is_inference_mode_enabled() -> bool {
        grad_mode::is_inference_mode_enabled()
    }
    fn _set_inference_mode(enabled: bool) {
        grad_mode::set_inference_mode(enabled)
    }
    /// Whether CPU autocast is on in this thread.
    fn _is_autocast_cpu_enabled() -> bool {
        crate::autograd::autocast::is_enabled()
    }
    fn _set_autocast_cpu_enabled(enabled: bool) {
        crate::autograd::autocast::set_enabled(enabled)
    }
    /// CPU autocast's lower-precision dtype (bfloat16 unless set).
    fn _get_autocast_cpu_dtype() -> crate::python::core::dtype::PyDType {
        crate::autograd::autocast::dtype().into()
    }
    fn _set_autocast_cpu_dtype(dtype: crate::python::core::dtype::PyDType) -> PyResult<()> {
        Ok(crate::autograd::autocast::set_dtype(dtype.dtype)?)
    }
    fn set_num_threads(n: usize) {
        crate::parallel::set_num_threads(n)
    }
    fn get_num_threads() -> usize {
        crate::parallel::num_threads()
    }
}

/// The thread that imported the extension: Python's main thread, the one
/// its SIGINT handler runs on.
static MAIN_THREAD: OnceLock<std::thread::ThreadId> = OnceLock::new();

/// The engine's interrupt check: on the main thread, runs Python's pending
/// signal handlers, so Ctrl-C raises KeyboardInterrupt out of a backward.
fn interrupt_check() -> crate::Result<()> {
    if MAIN_THREAD.get() != Some(&std::thread::current().id()) {
        return Ok(());
    }
    Python::attach(|py| py.check_signals().map_err(|e| error_from_py(py, e)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    let _ = MAIN_THREAD.set(std::thread::current().id());
    crate::autograd::engine::set_interrupt_check(interrupt_check);
    Ok(())
}

/// The Tensor methods that enter the engine or read the graph.
#[pymethods]
impl PyTensor {
    #[getter]
    fn grad_fn<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner.check_view_history()?;
        self.inner
            .grad_fn()
            .map(|node| super::function::node_to_py(py, node))
            .transpose()
    }
    #[pyo3(signature = (gradient=None, retain_graph=None, create_graph=false, inputs=None))]
    fn backward(
        &self,
        py: Python<'_>,
        gradient: Option<PyRef<'_, PyTensor>>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let inputs = inputs.map(|i| checked_seq(i, false)).transpose()?;
        let t = self.inner.clone();
        let g = gradient.map(|g| g.inner.clone());
        py.detach(|| {
            crate::autograd::backward(&[t], &[g], retain_graph, create_graph, inputs.as_deref())
        })?;
        Ok(())
    }
}
