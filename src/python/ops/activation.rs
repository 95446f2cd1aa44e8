//! `_C._nn`'s activations (gelu, silu, softplus and the rest), `one_hot`, `pad` and `normalize` (the
//! ops are `crate::ops::{activation, encode, pad}`). With `inplace=True`
//! an activation returns its input, modified.

use crate::ops::activation::{SELU_ALPHA, SELU_SCALE};
use crate::ops::pad::PadMode;
use crate::python::core::batched;
use crate::python::core::bind::bind_functions;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

type Out<'py> = PyResult<Bound<'py, PyAny>>;

/// The op's result, or the input after the in-place form.
fn activation<'py>(
    input: &Bound<'py, PyTensor>,
    inplace: bool,
    op: impl FnOnce(&Tensor) -> crate::Result<Tensor>,
    op_: impl FnOnce(&Tensor) -> crate::Result<()>,
) -> Out<'py> {
    let t = input.borrow().inner.clone();
    if inplace {
        op_(&t)?;
        return Ok(input.clone().into_any());
    }
    Ok(Bound::new(input.py(), wrap(op(&t)?))?.into_any())
}

bind_functions! { register_nn_fns:
    #[pyo3(signature = (input, negative_slope=0.01, inplace=false))]
    @vmap(Elementwise, inplace)
    fn leaky_relu<'py>(
        input: &Bound<'py, PyTensor>,
        negative_slope: f64,
        inplace: bool,
    ) -> Out<'py> {
        activation(
            input,
            inplace,
            |t| t.leaky_relu(negative_slope),
            |t| t.leaky_relu_(negative_slope),
        )
    }
    #[pyo3(signature = (input, min_val=-1.0, max_val=1.0, inplace=false))]
    @vmap(Elementwise, inplace)
    fn hardtanh<'py>(
        input: &Bound<'py, PyTensor>,
        min_val: f64,
        max_val: f64,
        inplace: bool,
    ) -> Out<'py> {
        activation(
            input,
            inplace,
            |t| t.hardtanh(min_val, max_val),
            |t| t.hardtanh_(min_val, max_val),
        )
    }
    #[pyo3(signature = (input, inplace=false))]
    @vmap(Elementwise, inplace)
    fn relu6<'py>(input: &Bound<'py, PyTensor>, inplace: bool) -> Out<'py> {
        activation(input, inplace, |t| t.relu6(), |t| t.hardtanh_(0.0, 6.0))
    }
    #[pyo3(signature = (input, alpha=1.0, inplace=false))]
    @vmap(Elementwise, inplace)
    fn elu<'py>(input: &Bound<'py, PyTensor>, alpha: f64, inplace: bool) -> Out<'py> {
        activation(
            input,
            inplace,
            |t| t.elu(alpha, 1.0, 1.0),
            |t| t.elu_(alpha, 1.0, 1.0),
        )
    }
    #[pyo3(signature = (input, inplace=false))]
    @vmap(Elementwise, inplace)
    fn selu<'py>(input: &Bound<'py, PyTensor>, inplace: bool) -> Out<'py> {
        activation(
            input,
            inplace,
            |t| t.selu(),
            |t| t.elu_(SELU_ALPHA, SELU_SCALE, 1.0),
        )
    }
    #[pyo3(signature = (input, alpha=1.0, inplace=false))]
    @vmap(Elementwise, inplace)
    fn celu<'py>(input: &Bound<'py, PyTensor>, alpha: f64, inplace: bool) -> Out<'py> {
        activation(
            input,
            inplace,
            |t| t.celu(alpha),
            |t| t.elu_(alpha, 1.0, 1.0 / alpha),
        )
    }
    @vmap(Elementwise)
    fn logsigmoid(input: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(wrap(input.inner.logsigmoid()?))
    }
    #[pyo3(signature = (tensor, num_classes=-1))]
    fn one_hot(tensor: PyRef<'_, PyTensor>, num_classes: i64) -> PyResult<PyTensor> {
        Ok(wrap(tensor.inner.one_hot(num_classes)?))
    }
    #[pyo3(signature = (input, pad, mode="constant", value=None))]
    fn pad(
        input: &Bound<'_, PyAny>,
        pad: Vec<i64>,
        mode: &str,
        value: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let padded = PadMode::parse(mode)?;
        let run = |x: &Bound<'_, PyTensor>| {
            wrap(x.borrow().inner.pad(&pad, padded, value)?).into_py_any(x.py())
        };
        if batched::is_batched(input) {
            // constant: the padded dims trail, any leading dims are kept;
            // the other modes take (N, C, *dims) or (C, *dims)
            let k = pad.len() / 2;
            return match padded {
                PadMode::Constant => {
                    batched::on_physical(batched::PhysicalRule::Trailing(k), "pad", input, run)
                }
                _ => batched::fold_samples("pad", k + 1, input, run),
            };
        }
        run(batched::tensor_input(input, "pad")?)
    }
    #[pyo3(signature = (input, p=2.0, dim=1, eps=1e-12, out=None))]
    fn normalize<'py>(
        input: &Bound<'py, PyAny>,
        p: f64,
        dim: i64,
        eps: f64,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if out.is_some_and(|o| !o.is_none()) {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "ferrograd: normalize(out=...) is not supported",
            ));
        }
        batched::vmap_rule!(normalize as "normalize", [input], [p, dim, eps]);
        let x = &batched::tensor_input(input, "normalize")?.borrow().inner;
        wrap(x.normalize(p, dim, eps)?).into_py_any(input.py())
    }
    #[pyo3(signature = (input, approximate="none"))]
    @vmap(Elementwise)
    pub fn gelu(input: PyRef<'_, PyTensor>, approximate: &str) -> PyResult<PyTensor> {
        Ok(wrap(input.inner.gelu(approximate)?))
    }
    #[pyo3(signature = (input, approximate="none"))]
    pub fn gelu_<'py>(
        input: PyRef<'py, PyTensor>,
        approximate: &str,
    ) -> PyResult<PyRef<'py, PyTensor>> {
        input.inner.gelu_(approximate)?;
        Ok(input)
    }
    @vmap(Elementwise)
    pub fn silu(input: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        Ok(wrap(input.inner.silu()?))
    }
    pub fn silu_(input: PyRef<'_, PyTensor>) -> PyResult<PyRef<'_, PyTensor>> {
        input.inner.silu_()?;
        Ok(input)
    }
    #[pyo3(signature = (input, beta=1.0, threshold=20.0))]
    @vmap(Elementwise)
    pub fn softplus(input: PyRef<'_, PyTensor>, beta: f64, threshold: f64) -> PyResult<PyTensor> {
        Ok(wrap(input.inner.softplus(beta, threshold)?))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let nn = m.getattr("_nn")?.cast_into::<PyModule>()?;
    register_nn_fns(&nn)?;
    Ok(())
}
