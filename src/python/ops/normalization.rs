//! `_C._nn.layer_norm`, `batch_norm`, `embedding` and the BatchNorm
//! module's forward (`crate::ops::normalization`).

use crate::ops::normalization::batch_norm_module;
use crate::python::core::batched;
use crate::python::core::bind::bind_functions;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use pyo3::exceptions::PyNotImplementedError;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

type Opt<'py> = Option<PyRef<'py, PyTensor>>;

fn inner<'a>(t: &'a Opt<'_>) -> Option<&'a Tensor> {
    t.as_ref().map(|t| &t.inner)
}

/// A shape given as an int or a sequence of ints.
fn shape_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    match obj.extract::<usize>() {
        Ok(n) => Ok(vec![n]),
        Err(_) => obj.extract(),
    }
}

bind_functions! { register_nn_fns:
    #[pyo3(signature = (input, normalized_shape, weight=None, bias=None, eps=1e-5))]
    fn layer_norm(
        input: &Bound<'_, PyAny>,
        normalized_shape: &Bound<'_, PyAny>,
        weight: Opt<'_>,
        bias: Opt<'_>,
        eps: f64,
    ) -> PyResult<Py<PyAny>> {
        let shape = shape_of(normalized_shape)?;
        let run = |x: &Bound<'_, PyTensor>| {
            let y = x
                .borrow()
                .inner
                .layer_norm(&shape, inner(&weight), inner(&bias), eps)?;
            wrap(y).into_py_any(x.py())
        };
        if batched::is_batched(input) {
            // the normalized dims trail: the batch dims lead, as any others
            let rule = batched::PhysicalRule::Trailing(shape.len());
            return batched::on_physical(rule, "layer_norm", input, run);
        }
        run(batched::tensor_input(input, "layer_norm")?)
    }
    #[pyo3(signature = (input, num_groups, weight=None, bias=None, eps=1e-5))]
    @vmap(SamplesFirst)
    fn group_norm(
        input: PyRef<'_, PyTensor>,
        num_groups: i64,
        weight: Opt<'_>,
        bias: Opt<'_>,
        eps: f64,
    ) -> PyResult<PyTensor> {
        let y = input
            .inner
            .group_norm(num_groups, inner(&weight), inner(&bias), eps)?;
        Ok(wrap(y))
    }
    #[pyo3(signature = (input, running_mean, running_var, weight=None, bias=None, training=false, momentum=0.1, eps=1e-5))]
    fn batch_norm(
        input: &Bound<'_, PyAny>,
        running_mean: Opt<'_>,
        running_var: Opt<'_>,
        weight: Opt<'_>,
        bias: Opt<'_>,
        training: bool,
        momentum: f64,
        eps: f64,
    ) -> PyResult<Py<PyAny>> {
        let (rm, rv) = (inner(&running_mean), inner(&running_var));
        // per-channel parameters, each repeated `b` times (the batch in
        // the channels)
        let run = |x: &Bound<'_, PyTensor>, b: usize| {
            let rep = |t: Option<&Tensor>| t.map(|t| t.repeat(&[b as i64])).transpose();
            let (w, bi) = (rep(inner(&weight))?, rep(inner(&bias))?);
            let y = x.borrow().inner.batch_norm(rm, rv, w.as_ref(), bi.as_ref(), training, momentum, eps)?;
            wrap(y).into_py_any(x.py())
        };
        if batched::is_batched(input) {
            if !training {
                // per element: the batch joins the samples
                let rule = batched::PhysicalRule::SamplesFirst;
                return batched::on_physical(rule, "batch_norm", input, |x| run(x, 1));
            }
            if rm.is_some() || rv.is_some() {
                // per-sample running statistics: torch's vmap refuses them
                return Err(batched::fallback("batch_norm"));
            }
            return batched::fold_channels("batch_norm", input, run);
        }
        run(batched::tensor_input(input, "batch_norm")?, 1)
    }
    /// nn.BatchNorm's forward (see `batch_norm_module`).
    fn _batch_norm_module(
        input: PyRef<'_, PyTensor>,
        running_mean: Opt<'_>,
        running_var: Opt<'_>,
        num_batches_tracked: Opt<'_>,
        weight: Opt<'_>,
        bias: Opt<'_>,
        training: bool,
        track_running_stats: bool,
        momentum: Option<f64>,
        eps: f64,
    ) -> PyResult<PyTensor> {
        let y = batch_norm_module(
            &input.inner,
            inner(&running_mean),
            inner(&running_var),
            inner(&num_batches_tracked),
            inner(&weight),
            inner(&bias),
            training,
            track_running_stats,
            momentum,
            eps,
        )?;
        Ok(wrap(y))
    }
}

#[pyfunction]
#[pyo3(signature = (input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=false, sparse=false))]
fn embedding(
    input: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    padding_idx: Option<i64>,
    max_norm: Option<f64>,
    norm_type: f64,
    scale_grad_by_freq: bool,
    sparse: bool,
) -> PyResult<Py<PyAny>> {
    let _ = norm_type;
    if max_norm.is_some() || scale_grad_by_freq || sparse {
        return Err(PyNotImplementedError::new_err(
            "ferrograd: embedding's max_norm, scale_grad_by_freq and sparse are not supported",
        ));
    }
    if batched::is_batched(weight) {
        if padding_idx.is_some() {
            return Err(batched::fallback("embedding"));
        }
        return batched::embedding_weight(input, weight, |i, w| {
            embedding(i, w, None, None, norm_type, false, false)
        });
    }
    let weight = crate::python::core::args::tensor_arg(weight, "embedding", "weight", 2)?;
    let run = |x: &Bound<'_, PyTensor>| {
        let y = x.borrow().inner.embedding(&weight, padding_idx)?;
        wrap(y).into_py_any(x.py())
    };
    if batched::is_batched(input) {
        // each index becomes its row: batched indices, batched rows
        let rule = batched::PhysicalRule::Elementwise;
        return batched::on_physical(rule, "embedding", input, run);
    }
    run(batched::tensor_input(input, "embedding")?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let nn = m.getattr("_nn")?.cast_into::<PyModule>()?;
    register_nn_fns(&nn)?;
    nn.add_function(wrap_pyfunction!(embedding, &nn)?)
}
