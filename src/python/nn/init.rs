//! `_C._init`: torch.nn.init's functions (the schemes are `crate::nn::init`).
//! Each fills the tensor in place and returns it; `generator=` is accepted
//! and the global generator used.

use crate::nn::init;
use crate::python::core::args::as_scalar;
use crate::python::core::bind::{add_functions, bind_functions};
use crate::python::core::tensor::PyTensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

type Out<'py> = PyResult<PyRef<'py, PyTensor>>;

/// `name(tensor, <args>, generator=None)` schemes with the same arguments
/// as `crate::nn::init::name`.
macro_rules! schemes {
    ($($name:ident($($arg:ident: $ty:ty = $def:tt),*);)*) => {$(
        #[pyfunction]
        #[pyo3(signature = (tensor, $($arg = $def,)* generator=None))]
        fn $name<'py>(
            tensor: PyRef<'py, PyTensor>,
            $($arg: $ty,)*
            generator: Option<&Bound<'py, PyAny>>,
        ) -> Out<'py> {
            let _ = generator;
            init::$name(&tensor.inner, $($arg),*)?;
            Ok(tensor)
        }
    )*};
}

schemes! {
    uniform_(a: f64 = 0.0, b: f64 = 1.0);
    normal_(mean: f64 = 0.0, std: f64 = 1.0);
    xavier_uniform_(gain: f64 = 1.0);
    xavier_normal_(gain: f64 = 1.0);
    kaiming_uniform_(a: f64 = 0.0, mode: &str = "fan_in", nonlinearity: &str = "leaky_relu");
    kaiming_normal_(a: f64 = 0.0, mode: &str = "fan_in", nonlinearity: &str = "leaky_relu");
}

bind_functions! { register_i_fns:
    #[pyo3(signature = (tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None))]
    fn trunc_normal_<'py>(
        tensor: PyRef<'py, PyTensor>,
        mean: f64,
        std: f64,
        a: f64,
        b: f64,
        generator: Option<&Bound<'py, PyAny>>,
    ) -> Out<'py> {
        let _ = generator;
        init::trunc_normal_(&tensor.inner, mean, std, a, b)?;
        Ok(tensor)
    }
    fn constant_<'py>(tensor: PyRef<'py, PyTensor>, val: &Bound<'py, PyAny>) -> Out<'py> {
        let v =
            as_scalar(val).ok_or_else(|| PyTypeError::new_err("constant_(): val must be a number"))?;
        init::constant_(&tensor.inner, v)?;
        Ok(tensor)
    }
    fn ones_(tensor: PyRef<'_, PyTensor>) -> Out<'_> {
        init::constant_(&tensor.inner, 1.0.into())?;
        Ok(tensor)
    }
    fn zeros_(tensor: PyRef<'_, PyTensor>) -> Out<'_> {
        init::constant_(&tensor.inner, 0.0.into())?;
        Ok(tensor)
    }
    fn eye_(tensor: PyRef<'_, PyTensor>) -> Out<'_> {
        init::eye_(&tensor.inner)?;
        Ok(tensor)
    }
    #[pyo3(signature = (nonlinearity, param=None))]
    fn calculate_gain(nonlinearity: &str, param: Option<f64>) -> PyResult<f64> {
        Ok(init::gain(nonlinearity, param)?)
    }
    fn _calculate_fan_in_and_fan_out(tensor: PyRef<'_, PyTensor>) -> PyResult<(usize, usize)> {
        Ok(init::fans(&tensor.inner)?)
    }
    /// `Linear.reset_parameters`.
    fn _reset_linear_(
        weight: PyRef<'_, PyTensor>,
        bias: Option<PyRef<'_, PyTensor>>,
    ) -> PyResult<()> {
        Ok(init::reset_linear_(
            &weight.inner,
            bias.as_ref().map(|b| &b.inner),
        )?)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let i = PyModule::new(m.py(), "_init")?;
    register_i_fns(&i)?;
    add_functions!(&i => uniform_, normal_, xavier_uniform_, xavier_normal_);
    add_functions!(&i => kaiming_uniform_, kaiming_normal_);
    m.add_submodule(&i)
}
