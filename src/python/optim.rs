//! `_C._optim`: the boundary between `ferrograd.optim`'s bookkeeping and
//! the update rules of `crate::optim`. A rule reads its hyper-parameters
//! from the parameter group (a dict, by torch's names) and keeps each
//! parameter's state in that parameter's state dict (torch's keys), so
//! `state_dict()` holds what torch's does.

use crate::optim::*;
use crate::python::core::bind::bind_functions;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn get<'py, T: for<'a> FromPyObject<'a, 'py>>(
    group: &Bound<'py, PyDict>,
    key: &str,
) -> PyResult<T> {
    match group.get_item(key)? {
        Some(v) => v.extract().map_err(Into::into),
        None => Err(PyKeyError::new_err(key.to_string())),
    }
}

/// A value of `crate::optim` (a struct or an enum variant) from the dict's
/// entries of its field names (`field = "key"` where torch's name differs).
macro_rules! from_dict {
    ($d:expr => $($path:ident)::+ { $($field:ident $(= $key:literal)?),* $(,)? }) => {
        $($path)::+ { $($field: get($d, from_dict!(@key $field $($key)?))?,)* }
    };
    (@key $field:ident) => { stringify!($field) };
    (@key $field:ident $key:literal) => { $key };
}

fn sgd_options(g: &Bound<'_, PyDict>) -> PyResult<SgdOptions> {
    Ok(from_dict!(g => SgdOptions { lr, momentum, dampening, weight_decay, nesterov, maximize }))
}

fn adam_options(g: &Bound<'_, PyDict>) -> PyResult<AdamOptions> {
    Ok(from_dict!(g => AdamOptions {
        lr, betas, eps, weight_decay, amsgrad, maximize, decoupled_weight_decay
    }))
}

fn rmsprop_options(g: &Bound<'_, PyDict>) -> PyResult<RmspropOptions> {
    Ok(
        from_dict!(g => RmspropOptions { lr, alpha, eps, weight_decay, momentum, centered, maximize }),
    )
}

fn adagrad_options(g: &Bound<'_, PyDict>) -> PyResult<AdagradOptions> {
    Ok(from_dict!(g => AdagradOptions {
        lr, lr_decay, weight_decay, initial_accumulator_value, eps, maximize
    }))
}

fn unknown(rule: &str) -> PyErr {
    PyValueError::new_err(format!("unknown optimizer rule {rule:?}"))
}

bind_functions! { register_optim_fns:
    /// Checks a group's hyper-parameters (torch's ValueErrors).
    fn check(rule: &str, group: &Bound<'_, PyDict>) -> PyResult<()> {
        match rule {
            "sgd" => sgd_options(group)?.check(),
            "adam" => adam_options(group)?.check(),
            "rmsprop" => rmsprop_options(group)?.check(),
            "adagrad" => adagrad_options(group)?.check(),
            _ => return Err(unknown(rule)),
        }
        .map_err(Into::into)
    }
    /// Fills an empty state dict with the rule's initial state for `param`
    /// (a no-op for SGD, whose momentum buffer comes with the first step).
    fn init_state(
        rule: &str,
        param: PyRef<'_, PyTensor>,
        state: &Bound<'_, PyDict>,
        group: &Bound<'_, PyDict>,
    ) -> PyResult<()> {
        fill_state(rule, &param.inner, state, group)
    }
    /// One step of `rule` over `params` (each with a gradient), with their
    /// state dicts and the group's hyper-parameters.
    fn step(
        rule: &str,
        params: Vec<PyRef<'_, PyTensor>>,
        states: Vec<Bound<'_, PyDict>>,
        group: &Bound<'_, PyDict>,
    ) -> PyResult<()> {
        if params.len() != states.len() {
            return Err(PyValueError::new_err(
                "optimizer step: one state dict per parameter",
            ));
        }
        for (param, state) in params.iter().zip(&states) {
            let p = &param.inner;
            fill_state(rule, p, state, group)?;
            let Some(g) = p.grad() else { continue };
            match rule {
                "sgd" => {
                    let o = sgd_options(group)?;
                    let mut buf = entry(state, "momentum_buffer")?;
                    sgd_update(p, &g, &mut buf, &o)?;
                    put(state, "momentum_buffer", &buf)?;
                }
                "adam" => {
                    let o = adam_options(group)?;
                    let s = AdamState {
                        step: required(state, "step")?,
                        exp_avg: required(state, "exp_avg")?,
                        exp_avg_sq: required(state, "exp_avg_sq")?,
                        max_exp_avg_sq: if o.amsgrad {
                            Some(required(state, "max_exp_avg_sq")?)
                        } else {
                            None
                        },
                    };
                    adam_update(p, &g, &s, &o)?;
                }
                "rmsprop" => {
                    let o = rmsprop_options(group)?;
                    let s = RmspropState {
                        step: required(state, "step")?,
                        square_avg: required(state, "square_avg")?,
                        momentum_buffer: entry(state, "momentum_buffer")?,
                        grad_avg: entry(state, "grad_avg")?,
                    };
                    rmsprop_update(p, &g, &s, &o)?;
                }
                "adagrad" => {
                    let o = adagrad_options(group)?;
                    let s = AdagradState {
                        step: required(state, "step")?,
                        sum: required(state, "sum")?,
                    };
                    adagrad_update(p, &g, &s, &o)?;
                }
                _ => return Err(unknown(rule)),
            }
        }
        Ok(())
    }
    /// Checks a scheduler's hyper-parameters (torch's ValueErrors).
    fn schedule_check(kind: &str, hyper: &Bound<'_, PyDict>) -> PyResult<()> {
        Ok(schedule(kind, hyper, Some(1.0))?.check()?)
    }
    /// A group's rate for `epoch` (see `crate::optim::lr_schedule`).
    #[pyo3(signature = (kind, hyper, epoch, step_count, lr, base_lr, factor=None))]
    fn next_lr(
        kind: &str,
        hyper: &Bound<'_, PyDict>,
        epoch: i64,
        step_count: i64,
        lr: f64,
        base_lr: f64,
        factor: Option<f64>,
    ) -> PyResult<f64> {
        let tick = Tick { epoch, step_count };
        Ok(schedule(kind, hyper, factor)?.next_lr(tick, lr, base_lr))
    }
    /// `zero_grad` of optimisers and modules (see `crate::optim::zero_grad`).
    #[pyo3(name = "zero_grad")]
    fn py_zero_grad(params: Vec<PyRef<'_, PyTensor>>, set_to_none: bool) -> PyResult<()> {
        let params: Vec<Tensor> = params.iter().map(|p| p.inner.clone()).collect();
        Ok(crate::optim::zero_grad(&params, set_to_none)?)
    }
}

/// A state entry as a tensor (None when absent).
fn entry(state: &Bound<'_, PyDict>, key: &str) -> PyResult<Option<Tensor>> {
    match state.get_item(key)? {
        Some(v) if !v.is_none() => Ok(Some(v.cast::<PyTensor>()?.borrow().inner.clone())),
        _ => Ok(None),
    }
}

fn put(state: &Bound<'_, PyDict>, key: &str, t: &Option<Tensor>) -> PyResult<()> {
    match t {
        Some(t) => state.set_item(key, wrap(t.clone())),
        None => Ok(()),
    }
}

fn required(state: &Bound<'_, PyDict>, key: &str) -> PyResult<Tensor> {
    entry(state, key)?.ok_or_else(|| PyKeyError::new_err(key.to_string()))
}

fn fill_state(
    rule: &str,
    p: &Tensor,
    state: &Bound<'_, PyDict>,
    group: &Bound<'_, PyDict>,
) -> PyResult<()> {
    if !state.is_empty() {
        return Ok(());
    }
    match rule {
        "sgd" => {}
        "adam" => {
            let s = AdamState::new(p, get(group, "amsgrad")?);
            state.set_item("step", wrap(s.step))?;
            state.set_item("exp_avg", wrap(s.exp_avg))?;
            state.set_item("exp_avg_sq", wrap(s.exp_avg_sq))?;
            put(state, "max_exp_avg_sq", &s.max_exp_avg_sq)?;
        }
        "rmsprop" => {
            let s = RmspropState::new(p, &rmsprop_options(group)?);
            state.set_item("step", wrap(s.step))?;
            state.set_item("square_avg", wrap(s.square_avg))?;
            put(state, "momentum_buffer", &s.momentum_buffer)?;
            put(state, "grad_avg", &s.grad_avg)?;
        }
        "adagrad" => {
            let s = AdagradState::new(p, &adagrad_options(group)?)?;
            state.set_item("step", wrap(s.step))?;
            state.set_item("sum", wrap(s.sum))?;
        }
        _ => return Err(unknown(rule)),
    }
    Ok(())
}

/// A schedule from its kind and the scheduler's hyper-parameters (torch's
/// attribute names); `factor` is a Lambda/Multiplicative function's value.
fn schedule(kind: &str, h: &Bound<'_, PyDict>, factor: Option<f64>) -> PyResult<Schedule> {
    let factor = || factor.ok_or_else(|| PyValueError::new_err("the lambda's factor is missing"));
    Ok(match kind {
        "step" => from_dict!(h => Schedule::Step { step_size, gamma }),
        "multistep" => from_dict!(h => Schedule::MultiStep { milestones, gamma }),
        "exponential" => from_dict!(h => Schedule::Exponential { gamma }),
        "cosine" => from_dict!(h => Schedule::CosineAnnealing { t_max = "T_max", eta_min }),
        "linear" => from_dict!(h => Schedule::Linear { start_factor, end_factor, total_iters }),
        "constant" => from_dict!(h => Schedule::Constant { factor, total_iters }),
        "lambda" => Schedule::Lambda { factor: factor()? },
        "multiplicative" => Schedule::Multiplicative { factor: factor()? },
        _ => return Err(PyValueError::new_err(format!("unknown schedule {kind:?}"))),
    })
}

/// ReduceLROnPlateau's rule from its arguments.
#[pyclass(name = "Plateau", module = "ferrograd._C._optim", frozen)]
struct PyPlateau(Plateau);

#[pymethods]
impl PyPlateau {
    #[new]
    fn new(
        mode: &str,
        threshold_mode: &str,
        threshold: f64,
        factor: f64,
        eps: f64,
    ) -> PyResult<Self> {
        Ok(PyPlateau(Plateau::new(
            mode,
            threshold_mode,
            threshold,
            factor,
            eps,
        )?))
    }
    fn worst(&self) -> f64 {
        self.0.worst()
    }
    fn is_better(&self, current: f64, best: f64) -> bool {
        self.0.is_better(current, best)
    }
    fn reduced(&self, lr: f64, min_lr: f64) -> Option<f64> {
        self.0.reduced(lr, min_lr)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let optim = PyModule::new(m.py(), "_optim")?;
    register_optim_fns(&optim)?;
    optim.add_class::<PyPlateau>()?;
    m.add_submodule(&optim)
}
