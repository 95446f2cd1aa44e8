//! `_C._optim`: the per-group update calls of `ferrograd.optim` (the rules
//! are `crate::optim`'s) and their argument checks.

use super::tensor::{wrap, PyTensor};
use crate::optim::{adam_update, sgd_update, AdamOptions, AdamState, SgdOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

fn same_lengths(lens: &[usize]) -> PyResult<()> {
    if lens.windows(2).any(|w| w[0] != w[1]) {
        return Err(PyValueError::new_err(
            "optimizer step: the per-parameter lists differ in length",
        ));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn sgd_options(
    lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    nesterov: bool,
    maximize: bool,
) -> PyResult<SgdOptions> {
    let o = SgdOptions {
        lr,
        momentum,
        dampening,
        weight_decay,
        nesterov,
        maximize,
    };
    o.check()?;
    Ok(o)
}

/// Checks SGD's hyper-parameters (torch's ValueErrors).
#[pyfunction]
#[pyo3(signature = (*, lr, momentum, dampening, weight_decay, nesterov, maximize))]
fn sgd_check(
    lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    nesterov: bool,
    maximize: bool,
) -> PyResult<()> {
    sgd_options(lr, momentum, dampening, weight_decay, nesterov, maximize).map(|_| ())
}

/// One SGD step over a group's parameters that have gradients; returns
/// the momentum buffers (created on the first step).
#[pyfunction]
#[pyo3(signature = (params, grads, buffers, *, lr, momentum, dampening, weight_decay, nesterov, maximize))]
#[allow(clippy::too_many_arguments)]
fn sgd_step(
    params: Vec<PyRef<'_, PyTensor>>,
    grads: Vec<PyRef<'_, PyTensor>>,
    buffers: Vec<Option<PyRef<'_, PyTensor>>>,
    lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    nesterov: bool,
    maximize: bool,
) -> PyResult<Vec<Option<PyTensor>>> {
    let o = sgd_options(lr, momentum, dampening, weight_decay, nesterov, maximize)?;
    same_lengths(&[params.len(), grads.len(), buffers.len()])?;
    let mut out = Vec::with_capacity(params.len());
    for ((p, g), b) in params.iter().zip(&grads).zip(buffers) {
        let mut buf = b.map(|b| b.inner.clone());
        sgd_update(&p.inner, &g.inner, &mut buf, &o)?;
        out.push(buf.map(wrap));
    }
    Ok(out)
}

fn adam_options(
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    weight_decay: f64,
    amsgrad: bool,
    maximize: bool,
    decoupled_weight_decay: bool,
) -> PyResult<AdamOptions> {
    let o = AdamOptions {
        lr,
        betas,
        eps,
        weight_decay,
        amsgrad,
        maximize,
        decoupled_weight_decay,
    };
    o.check()?;
    Ok(o)
}

/// Checks Adam's hyper-parameters (torch's ValueErrors).
#[pyfunction]
#[pyo3(signature = (*, lr, betas, eps, weight_decay, amsgrad, maximize, decoupled_weight_decay))]
fn adam_check(
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    weight_decay: f64,
    amsgrad: bool,
    maximize: bool,
    decoupled_weight_decay: bool,
) -> PyResult<()> {
    let o = (lr, betas, eps, weight_decay);
    adam_options(
        o.0,
        o.1,
        o.2,
        o.3,
        amsgrad,
        maximize,
        decoupled_weight_decay,
    )
    .map(|_| ())
}

/// A parameter's fresh Adam state: (step, exp_avg, exp_avg_sq,
/// max_exp_avg_sq or None).
#[pyfunction]
fn adam_init_state(
    param: PyRef<'_, PyTensor>,
    amsgrad: bool,
) -> (PyTensor, PyTensor, PyTensor, Option<PyTensor>) {
    let s = AdamState::new(&param.inner, amsgrad);
    (
        wrap(s.step),
        wrap(s.exp_avg),
        wrap(s.exp_avg_sq),
        s.max_exp_avg_sq.map(wrap),
    )
}

/// One Adam/AdamW step over a group's parameters that have gradients,
/// updating their states in place.
#[pyfunction]
#[pyo3(signature = (params, grads, steps, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, *, lr, betas, eps, weight_decay, amsgrad, maximize, decoupled_weight_decay))]
#[allow(clippy::too_many_arguments)]
fn adam_step(
    params: Vec<PyRef<'_, PyTensor>>,
    grads: Vec<PyRef<'_, PyTensor>>,
    steps: Vec<PyRef<'_, PyTensor>>,
    exp_avgs: Vec<PyRef<'_, PyTensor>>,
    exp_avg_sqs: Vec<PyRef<'_, PyTensor>>,
    max_exp_avg_sqs: Vec<Option<PyRef<'_, PyTensor>>>,
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    weight_decay: f64,
    amsgrad: bool,
    maximize: bool,
    decoupled_weight_decay: bool,
) -> PyResult<()> {
    let o = adam_options(
        lr,
        betas,
        eps,
        weight_decay,
        amsgrad,
        maximize,
        decoupled_weight_decay,
    )?;
    same_lengths(&[
        params.len(),
        grads.len(),
        steps.len(),
        exp_avgs.len(),
        exp_avg_sqs.len(),
        max_exp_avg_sqs.len(),
    ])?;
    for i in 0..params.len() {
        let s = AdamState {
            step: steps[i].inner.clone(),
            exp_avg: exp_avgs[i].inner.clone(),
            exp_avg_sq: exp_avg_sqs[i].inner.clone(),
            max_exp_avg_sq: if amsgrad {
                max_exp_avg_sqs[i].as_ref().map(|t| t.inner.clone())
            } else {
                None
            },
        };
        adam_update(&params[i].inner, &grads[i].inner, &s, &o)?;
    }
    Ok(())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let optim = PyModule::new(m.py(), "_optim")?;
    optim.add_function(wrap_pyfunction!(sgd_check, &optim)?)?;
    optim.add_function(wrap_pyfunction!(sgd_step, &optim)?)?;
    optim.add_function(wrap_pyfunction!(adam_check, &optim)?)?;
    optim.add_function(wrap_pyfunction!(adam_init_state, &optim)?)?;
    optim.add_function(wrap_pyfunction!(adam_step, &optim)?)?;
    m.add_submodule(&optim)
}
