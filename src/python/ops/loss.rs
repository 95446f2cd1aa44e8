//! `nn.functional.linear` and the losses, in `_C._nn` with torch's
//! signatures (legacy `size_average`/`reduce` included).

use crate::ops::loss::{self, Reduction};
use crate::python::core::args::type_name;
use crate::python::core::batched;
use crate::python::core::bind::{add_functions, bind_functions};
use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

/// The reduction, from `reduction=` or torch's legacy `size_average` and
/// `reduce` flags (which win when either is given).
fn reduction(
    size_average: Option<bool>,
    reduce: Option<bool>,
    reduction: &str,
) -> PyResult<Reduction> {
    if size_average.is_none() && reduce.is_none() {
        return Ok(Reduction::parse(reduction)?);
    }
    Ok(
        match (reduce.unwrap_or(true), size_average.unwrap_or(true)) {
            (false, _) => Reduction::None,
            (true, true) => Reduction::Mean,
            (true, false) => Reduction::Sum,
        },
    )
}

/// A tensor argument of `fname` (torch's TypeError for anything else).
fn tensor_param(fname: &str, obj: &Bound<'_, PyAny>, name: &str, pos: usize) -> PyResult<Tensor> {
    match obj.cast::<PyTensor>() {
        Ok(t) => Ok(t.borrow().inner.clone()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{fname}(): argument '{name}' (position {pos}) must be Tensor, not {}",
            type_name(obj)
        ))),
    }
}

/// An optional tensor parameter (None as absent).
fn optional_param(
    fname: &str,
    obj: Option<&Bound<'_, PyAny>>,
    name: &str,
    pos: usize,
) -> PyResult<Option<Tensor>> {
    obj.filter(|o| !o.is_none())
        .map(|o| tensor_param(fname, o, name, pos))
        .transpose()
}

/// The given ones of a batched loss's other tensor arguments.
fn extra<const N: usize>(
    args: [(&'static str, Option<&Bound<'_, PyAny>>); N],
) -> Vec<(&'static str, Py<PyAny>)> {
    args.into_iter()
        .filter_map(|(k, v)| v.filter(|v| !v.is_none()).map(|v| (k, v.clone().unbind())))
        .collect()
}

fn opt(t: &Option<PyRef<'_, PyTensor>>) -> Option<Tensor> {
    t.as_ref().map(|t| t.inner.clone())
}

bind_functions! { register_nn_fns:
    #[pyo3(signature = (input, weight, bias=None))]
    fn linear(
        input: &Bound<'_, PyAny>,
        weight: &Bound<'_, PyAny>,
        bias: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let py = input.py();
        let bias = bias.filter(|b| !b.is_none());
        if batched::any_batched(&[input, weight]) || bias.is_some_and(|b| batched::any_batched(&[b])) {
            return batched::linear(input, weight, bias);
        }
        let input = tensor_param("linear", input, "input", 1)?;
        let weight = tensor_param("linear", weight, "weight", 2)?;
        let bias = bias.map(|b| tensor_param("linear", b, "bias", 3)).transpose()?;
        let out = loss::linear(&input, &weight, bias.as_ref())?;
        Ok(Bound::new(py, wrap(out))?.into_any().unbind())
    }
    #[pyo3(signature = (input, target, size_average=None, reduce=None, reduction="mean", beta=1.0))]
    fn smooth_l1_loss(
        input: &Bound<'_, PyAny>,
        target: &Bound<'_, PyAny>,
        size_average: Option<bool>,
        reduce: Option<bool>,
        reduction: &str,
        beta: f64,
    ) -> PyResult<Py<PyAny>> {
        let r = self::reduction(size_average, reduce, reduction)?;
        let py = input.py();
        let extra = [("beta", beta.into_py_any(py)?)];
        if let Some(out) = batched_loss("smooth_l1_loss", input, target, r, &extra) {
            return out;
        }
        let x = tensor_param("smooth_l1_loss", input, "input", 1)?;
        let y = tensor_param("smooth_l1_loss", target, "target", 2)?;
        wrap(loss::smooth_l1_loss(&x, &y, r, beta)?).into_py_any(py)
    }
    #[pyo3(signature = (input, target, reduction="mean", delta=1.0))]
    fn huber_loss(
        input: &Bound<'_, PyAny>,
        target: &Bound<'_, PyAny>,
        reduction: &str,
        delta: f64,
    ) -> PyResult<Py<PyAny>> {
        let r = Reduction::parse(reduction)?;
        let py = input.py();
        let extra = [("delta", delta.into_py_any(py)?)];
        if let Some(out) = batched_loss("huber_loss", input, target, r, &extra) {
            return out;
        }
        let x = tensor_param("huber_loss", input, "input", 1)?;
        let y = tensor_param("huber_loss", target, "target", 2)?;
        wrap(loss::huber_loss(&x, &y, r, delta)?).into_py_any(py)
    }
    #[pyo3(signature = (input, target, weight=None, size_average=None, reduce=None, reduction="mean"))]
    fn binary_cross_entropy(
        input: &Bound<'_, PyAny>,
        target: &Bound<'_, PyAny>,
        weight: Option<&Bound<'_, PyAny>>,
        size_average: Option<bool>,
        reduce: Option<bool>,
        reduction: &str,
    ) -> PyResult<Py<PyAny>> {
        let r = self::reduction(size_average, reduce, reduction)?;
        let name = "binary_cross_entropy";
        if let Some(out) = batched_loss(name, input, target, r, &extra([("weight", weight)])) {
            return out;
        }
        let (x, y) = (tensor_param(name, input, "input", 1)?, tensor_param(name, target, "target", 2)?);
        let w = optional_param(name, weight, "weight", 3)?;
        wrap(loss::binary_cross_entropy(&x, &y, w.as_ref(), r)?).into_py_any(input.py())
    }
    #[pyo3(signature = (input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None))]
    fn binary_cross_entropy_with_logits(
        input: &Bound<'_, PyAny>,
        target: &Bound<'_, PyAny>,
        weight: Option<&Bound<'_, PyAny>>,
        size_average: Option<bool>,
        reduce: Option<bool>,
        reduction: &str,
        pos_weight: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let r = self::reduction(size_average, reduce, reduction)?;
        let name = "binary_cross_entropy_with_logits";
        let ex = extra([("weight", weight), ("pos_weight", pos_weight)]);
        if let Some(out) = batched_loss(name, input, target, r, &ex) {
            return out;
        }
        let (x, y) = (tensor_param(name, input, "input", 1)?, tensor_param(name, target, "target", 2)?);
        let w = optional_param(name, weight, "weight", 3)?;
        let p = optional_param(name, pos_weight, "pos_weight", 7)?;
        wrap(loss::binary_cross_entropy_with_logits(&x, &y, w.as_ref(), r, p.as_ref())?)
            .into_py_any(input.py())
    }
    #[pyo3(signature = (input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"))]
    fn nll_loss(
        input: &Bound<'_, PyAny>,
        target: &Bound<'_, PyAny>,
        weight: Option<PyRef<'_, PyTensor>>,
        size_average: Option<bool>,
        ignore_index: i64,
        reduce: Option<bool>,
        reduction: &str,
    ) -> PyResult<Py<PyAny>> {
        let py = input.py();
        if batched::any_batched(&[input, target]) {
            if weight.is_some() || size_average.is_some() || reduce.is_some() {
                return Err(batched::fallback("nll_loss"));
            }
            let plain = py.import("ferrograd._C")?.getattr("_nn")?.getattr("nll_loss")?;
            return batched::cross_entropy(input, target, ignore_index, reduction, &plain);
        }
        let x = tensor_param("nll_loss", input, "input", 1)?;
        let y = tensor_param("nll_loss", target, "target", 2)?;
        let r = self::reduction(size_average, reduce, reduction)?;
        let w = opt(&weight);
        wrap(loss::nll_loss(&x, &y, w.as_ref(), ignore_index, r)?).into_py_any(py)
    }
    #[pyo3(signature = (input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0))]
    fn cross_entropy(
        input: &Bound<'_, PyAny>,
        target: &Bound<'_, PyAny>,
        weight: Option<PyRef<'_, PyTensor>>,
        size_average: Option<bool>,
        ignore_index: i64,
        reduce: Option<bool>,
        reduction: &str,
        label_smoothing: f64,
    ) -> PyResult<Py<PyAny>> {
        let py = input.py();
        if batched::any_batched(&[input, target]) {
            if weight.is_some() || size_average.is_some() || reduce.is_some() || label_smoothing != 0.0 {
                return Err(batched::fallback("cross_entropy"));
            }
            let plain = py.import("ferrograd._C")?.getattr("_nn")?.getattr("cross_entropy")?;
            return batched::cross_entropy(input, target, ignore_index, reduction, &plain);
        }
        let input = tensor_param("cross_entropy", input, "input", 1)?;
        let target = tensor_param("cross_entropy", target, "target", 2)?;
        let r = self::reduction(size_average, reduce, reduction)?;
        let w = opt(&weight);
        let out = loss::cross_entropy(&input, &target, w.as_ref(), ignore_index, r, label_smoothing)?;
        Ok(Bound::new(py, wrap(out))?.into_any().unbind())
    }
}

/// Inside vmap, a pointwise loss with a batched input or target: the
/// unreduced loss by the pointwise rule (`extra`: its other arguments),
/// then each sample's mean or sum over its own dims.
fn batched_loss(
    name: &str,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    r: Reduction,
    extra: &[(&str, Py<PyAny>)],
) -> Option<PyResult<Py<PyAny>>> {
    if !batched::any_batched(&[input, target]) {
        return None;
    }
    let py = input.py();
    let run = || -> PyResult<Py<PyAny>> {
        let kw = pyo3::types::PyDict::new(py);
        for (k, v) in extra {
            kw.set_item(*k, v)?;
        }
        kw.set_item("reduction", "none")?;
        // input and target of the same shape (the losses check it)
        let args = batched::batched_alike(&[input, target])?;
        let out = batched::pointwise_function("ferrograd._C._nn", name, args, Some(kw))?;
        match r {
            Reduction::None => Ok(out),
            Reduction::Mean => Ok(out.bind(py).call_method0("mean")?.unbind()),
            Reduction::Sum => Ok(out.bind(py).call_method0("sum")?.unbind()),
        }
    };
    Some(run())
}

/// Losses of (input, target, size_average, reduce, reduction).
macro_rules! pointwise_losses {
    ($($name:ident),*) => {$(
        #[pyfunction]
        #[pyo3(signature = (input, target, size_average=None, reduce=None, reduction="mean"))]
        fn $name(
            input: &Bound<'_, PyAny>,
            target: &Bound<'_, PyAny>,
            size_average: Option<bool>,
            reduce: Option<bool>,
            reduction: &str,
        ) -> PyResult<Py<PyAny>> {
            let r = self::reduction(size_average, reduce, reduction)?;
            if let Some(out) = batched_loss(stringify!($name), input, target, r, &[]) {
                return out;
            }
            let x = tensor_param(stringify!($name), input, "input", 1)?;
            let y = tensor_param(stringify!($name), target, "target", 2)?;
            wrap(loss::$name(&x, &y, r)?).into_py_any(input.py())
        }
    )*};
}
pointwise_losses!(mse_loss, l1_loss);

/// Adds the functions to `_C._nn` (made by `ops_pointwise::register`).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let nn = m.getattr("_nn")?.cast_into::<PyModule>()?;
    register_nn_fns(&nn)?;
    add_functions!(&nn => mse_loss, l1_loss);
    Ok(())
}
