//! `_C._nn`'s spatial ops: unfold/fold, convolutions, pooling and
//! interpolation's resampling (the ops are `crate::ops::{conv, pool,
//! interpolate}`). Sizes are an int or a sequence.

use crate::ops::conv::ConvPadding;
use crate::ops::interpolate::InterpMode;
use crate::python::core::args::{ints, tensor_arg};
use crate::python::core::batched;
use crate::python::core::bind::{add_functions, bind_functions};
use crate::python::core::tensor::{wrap, PyTensor};
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

/// An int or a sequence of ints; `None` or `[]` (a pool's default stride)
/// gives an empty list.
fn sizes(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<i64>> {
    match obj {
        None => Ok(vec![]),
        Some(o) if o.is_none() => Ok(vec![]),
        Some(o) => ints(o),
    }
}

/// [`sizes`], with `default` when not given.
fn sizes_or(obj: Option<&Bound<'_, PyAny>>, default: i64) -> PyResult<Vec<i64>> {
    let v = sizes(obj)?;
    Ok(if v.is_empty() { vec![default] } else { v })
}

bind_functions! { register_nn_fns:
    #[pyo3(signature = (input, kernel_size, dilation=None, padding=None, stride=None))]
    @vmap(Samples(3))
    fn unfold(
        input: PyRef<'_, PyTensor>,
        kernel_size: &Bound<'_, PyAny>,
        dilation: Option<&Bound<'_, PyAny>>,
        padding: Option<&Bound<'_, PyAny>>,
        stride: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        Ok(wrap(input.inner.unfold_blocks(
            &ints(kernel_size)?,
            &sizes_or(dilation, 1)?,
            &sizes_or(padding, 0)?,
            &sizes_or(stride, 1)?,
        )?))
    }
    #[pyo3(signature = (input, output_size, kernel_size, dilation=None, padding=None, stride=None))]
    @vmap(Samples(2))
    fn fold(
        input: PyRef<'_, PyTensor>,
        output_size: &Bound<'_, PyAny>,
        kernel_size: &Bound<'_, PyAny>,
        dilation: Option<&Bound<'_, PyAny>>,
        padding: Option<&Bound<'_, PyAny>>,
        stride: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let out = match ints(output_size)? {
            v if v.len() == 1 => vec![v[0]; 2],
            v => v,
        };
        Ok(wrap(input.inner.fold_blocks(
            &out,
            &ints(kernel_size)?,
            &sizes_or(dilation, 1)?,
            &sizes_or(padding, 0)?,
            &sizes_or(stride, 1)?,
        )?))
    }
    #[pyo3(signature = (input, kernel_size, stride=None, padding=None, ceil_mode=false, count_include_pad=true))]
    @vmap(Samples(2))
    fn avg_pool1d(
        input: PyRef<'_, PyTensor>,
        kernel_size: &Bound<'_, PyAny>,
        stride: Option<&Bound<'_, PyAny>>,
        padding: Option<&Bound<'_, PyAny>>,
        ceil_mode: bool,
        count_include_pad: bool,
    ) -> PyResult<PyTensor> {
        avg_pool(
            1,
            input,
            kernel_size,
            stride,
            padding,
            ceil_mode,
            count_include_pad,
            None,
        )
    }
    /// `interpolate`'s resampling, once `nn.functional.interpolate` has worked
    /// out the output sizes (and kept the scale factors they came from).
    @vmap(SamplesFirst)
    fn _interpolate(
        input: PyRef<'_, PyTensor>,
        output_size: Vec<usize>,
        scale_factors: Option<Vec<f64>>,
        mode: &str,
        align_corners: bool,
    ) -> PyResult<PyTensor> {
        let mode = match mode {
            "nearest" => InterpMode::Nearest,
            "nearest-exact" => InterpMode::NearestExact,
            "linear" | "bilinear" | "trilinear" => InterpMode::Linear,
            "area" => InterpMode::Area,
            other => {
                return Err(pyo3::exceptions::PyNotImplementedError::new_err(format!(
                    "ferrograd: interpolate mode '{other}' is not supported"
                )))
            }
        };
        Ok(wrap(input.inner.interpolate(
            &output_size,
            scale_factors.as_deref(),
            mode,
            align_corners,
        )?))
    }
}

/// conv{s}d: a padding string ('same', 'valid') or sizes.
macro_rules! conv_fn {
    ($name:ident, $s:expr) => {
        #[pyfunction]
        #[pyo3(signature = (input, weight, bias=None, stride=None, padding=None, dilation=None, groups=1))]
        fn $name(
            input: &Bound<'_, PyAny>,
            weight: &Bound<'_, PyAny>,
            bias: Option<&Bound<'_, PyAny>>,
            stride: Option<&Bound<'_, PyAny>>,
            padding: Option<&Bound<'_, PyAny>>,
            dilation: Option<&Bound<'_, PyAny>>,
            groups: i64,
        ) -> PyResult<Py<PyAny>> {
            let py = input.py();
            let bias = bias.filter(|b| !b.is_none());
            let kw = [("stride", stride), ("padding", padding), ("dilation", dilation)];
            if let Some(r) = conv_if_batched(stringify!($name), $s, [input, weight], bias, groups, &kw)? {
                return Ok(r);
            }
            let name = stringify!($name);
            let x = tensor_arg(input, name, "input", 1)?;
            let w = tensor_arg(weight, name, "weight", 2)?;
            let b = bias.map(|b| tensor_arg(b, name, "bias", 3)).transpose()?;
            let padding = match padding.map(|p| p.extract::<String>()) {
                Some(Ok(p)) => ConvPadding::parse(&p)?,
                _ => ConvPadding::Explicit(sizes_or(padding, 0)?),
            };
            wrap(x.conv(
                &w,
                b.as_ref(),
                &sizes_or(stride, 1)?,
                &padding,
                &sizes_or(dilation, 1)?,
                groups,
                $s,
            )?)
            .into_py_any(py)
        }
    };
}
/// A convolution function's batched path (vmap): `batched::conv` with the
/// keyword arguments as given, when an operand is batched.
fn conv_if_batched<'py>(
    name: &str,
    s: usize,
    [input, weight]: [&Bound<'py, PyAny>; 2],
    bias: Option<&Bound<'py, PyAny>>,
    groups: i64,
    kwargs: &[(&str, Option<&Bound<'py, PyAny>>)],
) -> PyResult<Option<Py<PyAny>>> {
    let mut operands = vec![input, weight];
    operands.extend(bias);
    if !batched::any_batched(&operands) {
        return Ok(None);
    }
    let kw = pyo3::types::PyDict::new(input.py());
    for (k, v) in kwargs {
        kw.set_item(k, v)?;
    }
    batched::conv(name, s, input, weight, bias, groups, kw).map(Some)
}

conv_fn!(conv1d, 1);
conv_fn!(conv2d, 2);
conv_fn!(conv3d, 3);

macro_rules! conv_transpose_fn {
    ($name:ident, $s:expr) => {
        #[pyfunction]
        #[pyo3(signature = (input, weight, bias=None, stride=None, padding=None, output_padding=None, groups=1, dilation=None))]
        fn $name(
            input: &Bound<'_, PyAny>,
            weight: &Bound<'_, PyAny>,
            bias: Option<&Bound<'_, PyAny>>,
            stride: Option<&Bound<'_, PyAny>>,
            padding: Option<&Bound<'_, PyAny>>,
            output_padding: Option<&Bound<'_, PyAny>>,
            groups: i64,
            dilation: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<Py<PyAny>> {
            let py = input.py();
            let bias = bias.filter(|b| !b.is_none());
            let kw = [
                ("stride", stride),
                ("padding", padding),
                ("output_padding", output_padding),
                ("dilation", dilation),
            ];
            if let Some(r) = conv_if_batched(stringify!($name), $s, [input, weight], bias, groups, &kw)? {
                return Ok(r);
            }
            let name = stringify!($name);
            let x = tensor_arg(input, name, "input", 1)?;
            let w = tensor_arg(weight, name, "weight", 2)?;
            let b = bias.map(|b| tensor_arg(b, name, "bias", 3)).transpose()?;
            wrap(x.conv_transpose(
                &w,
                b.as_ref(),
                &sizes_or(stride, 1)?,
                &sizes_or(padding, 0)?,
                &sizes_or(output_padding, 0)?,
                groups,
                &sizes_or(dilation, 1)?,
                $s,
            )?)
            .into_py_any(py)
        }
    };
}
conv_transpose_fn!(conv_transpose1d, 1);
conv_transpose_fn!(conv_transpose2d, 2);
conv_transpose_fn!(conv_transpose3d, 3);

/// A max pool's result: the values, or (values, indices).
fn pooled(
    py: Python<'_>,
    values: crate::Tensor,
    indices: crate::Tensor,
    return_indices: bool,
) -> PyResult<Bound<'_, PyAny>> {
    let values = Bound::new(py, wrap(values))?.into_any();
    if !return_indices {
        return Ok(values);
    }
    let indices = Bound::new(py, wrap(indices))?.into_any();
    Ok(pyo3::types::PyTuple::new(py, [values, indices])?.into_any())
}

macro_rules! max_pool_fn {
    ($name:ident, $with_indices:ident, $s:expr) => {
        #[pyfunction]
        #[pyo3(signature = (input, kernel_size, stride=None, padding=None, dilation=None, ceil_mode=false, return_indices=false))]
        fn $name<'py>(
            py: Python<'py>,
            input: &Bound<'py, PyAny>,
            kernel_size: &Bound<'py, PyAny>,
            stride: Option<&Bound<'py, PyAny>>,
            padding: Option<&Bound<'py, PyAny>>,
            dilation: Option<&Bound<'py, PyAny>>,
            ceil_mode: bool,
            return_indices: bool,
        ) -> PyResult<Bound<'py, PyAny>> {
            if batched::is_batched(input) {
                let f = |x: &Bound<'py, PyTensor>| {
                    let r = $name(py, x.as_any(), kernel_size, stride, padding, dilation, ceil_mode, return_indices);
                    r.map(|r| r.unbind())
                };
                return batched::fold_samples(stringify!($name), $s + 1, input, f).map(|r| r.into_bound(py));
            }
            let input = batched::tensor_input(input, stringify!($name))?.borrow();
            let (kernel, stride) = (ints(kernel_size)?, sizes(stride)?);
            let (padding, dilation) = (sizes_or(padding, 0)?, sizes_or(dilation, 1)?);
            if !return_indices {
                let geometry = [&kernel[..], &stride, &padding, &dilation];
                let values = input.inner.max_pool_values($s, geometry, ceil_mode)?;
                return Ok(Bound::new(py, wrap(values))?.into_any());
            }
            let (values, indices) =
                input.inner.max_pool($s, &kernel, &stride, &padding, &dilation, ceil_mode)?;
            pooled(py, values, indices, true)
        }

        #[pyfunction]
        #[pyo3(signature = (input, kernel_size, stride=None, padding=None, dilation=None, ceil_mode=false))]
        fn $with_indices<'py>(
            py: Python<'py>,
            input: &Bound<'py, PyAny>,
            kernel_size: &Bound<'py, PyAny>,
            stride: Option<&Bound<'py, PyAny>>,
            padding: Option<&Bound<'py, PyAny>>,
            dilation: Option<&Bound<'py, PyAny>>,
            ceil_mode: bool,
        ) -> PyResult<Bound<'py, PyAny>> {
            $name(py, input, kernel_size, stride, padding, dilation, ceil_mode, true)
        }
    };
}
max_pool_fn!(max_pool1d, max_pool1d_with_indices, 1);
max_pool_fn!(max_pool2d, max_pool2d_with_indices, 2);
max_pool_fn!(max_pool3d, max_pool3d_with_indices, 3);

fn avg_pool(
    s: usize,
    input: PyRef<'_, PyTensor>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> PyResult<PyTensor> {
    let padding = sizes_or(padding, 0)?;
    Ok(wrap(input.inner.avg_pool(
        s,
        &ints(kernel_size)?,
        &sizes(stride)?,
        &padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )?))
}

macro_rules! avg_pool_fn {
    ($name:ident, $s:expr) => {
        #[pyfunction]
        #[pyo3(signature = (input, kernel_size, stride=None, padding=None, ceil_mode=false, count_include_pad=true, divisor_override=None))]
        fn $name(
            input: &Bound<'_, PyAny>,
            kernel_size: &Bound<'_, PyAny>,
            stride: Option<&Bound<'_, PyAny>>,
            padding: Option<&Bound<'_, PyAny>>,
            ceil_mode: bool,
            count_include_pad: bool,
            divisor_override: Option<i64>,
        ) -> PyResult<Py<PyAny>> {
            if batched::is_batched(input) {
                let f = |x: &Bound<'_, PyTensor>| {
                    $name(x.as_any(), kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
                };
                return batched::fold_samples(stringify!($name), $s + 1, input, f);
            }
            avg_pool(
                $s,
                batched::tensor_input(input, stringify!($name))?.borrow(),
                kernel_size,
                stride,
                padding,
                ceil_mode,
                count_include_pad,
                divisor_override,
            )?
            .into_py_any(input.py())
        }
    };
}
avg_pool_fn!(avg_pool2d, 2);
avg_pool_fn!(avg_pool3d, 3);

macro_rules! adaptive_avg_pool_fn {
    ($name:ident, $s:expr) => {
        #[pyfunction]
        fn $name(input: &Bound<'_, PyAny>, output_size: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
            if batched::is_batched(input) {
                let f = |x: &Bound<'_, PyTensor>| $name(x.as_any(), output_size);
                return batched::fold_samples(stringify!($name), $s + 1, input, f);
            }
            let x = batched::tensor_input(input, stringify!($name))?.borrow();
            wrap(
                x.inner
                    .adaptive_avg_pool($s, &adaptive_size(output_size)?)?,
            )
            .into_py_any(input.py())
        }
    };
}
/// An adaptive pool's output size: an int, or a sequence of ints or None.
fn adaptive_size(output_size: &Bound<'_, PyAny>) -> PyResult<Vec<Option<i64>>> {
    match output_size.extract::<i64>() {
        Ok(v) => Ok(vec![Some(v)]),
        Err(_) => output_size.extract(),
    }
}

macro_rules! adaptive_max_pool_fn {
    ($name:ident, $with_indices:ident, $s:expr) => {
        #[pyfunction]
        #[pyo3(signature = (input, output_size, return_indices=false))]
        fn $name<'py>(
            py: Python<'py>,
            input: &Bound<'py, PyAny>,
            output_size: &Bound<'py, PyAny>,
            return_indices: bool,
        ) -> PyResult<Bound<'py, PyAny>> {
            if batched::is_batched(input) {
                let f = |x: &Bound<'py, PyTensor>| {
                    $name(py, x.as_any(), output_size, return_indices).map(|r| r.unbind())
                };
                return batched::fold_samples(stringify!($name), $s + 1, input, f)
                    .map(|r| r.into_bound(py));
            }
            let input = batched::tensor_input(input, stringify!($name))?.borrow();
            let (values, indices) = input
                .inner
                .adaptive_max_pool($s, &adaptive_size(output_size)?)?;
            pooled(py, values, indices, return_indices)
        }

        #[pyfunction]
        fn $with_indices<'py>(
            py: Python<'py>,
            input: &Bound<'py, PyAny>,
            output_size: &Bound<'py, PyAny>,
        ) -> PyResult<Bound<'py, PyAny>> {
            $name(py, input, output_size, true)
        }
    };
}
adaptive_max_pool_fn!(adaptive_max_pool1d, adaptive_max_pool1d_with_indices, 1);
adaptive_max_pool_fn!(adaptive_max_pool2d, adaptive_max_pool2d_with_indices, 2);
adaptive_max_pool_fn!(adaptive_max_pool3d, adaptive_max_pool3d_with_indices, 3);

adaptive_avg_pool_fn!(adaptive_avg_pool1d, 1);
adaptive_avg_pool_fn!(adaptive_avg_pool2d, 2);
adaptive_avg_pool_fn!(adaptive_avg_pool3d, 3);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let nn = m.getattr("_nn")?.cast_into::<PyModule>()?;
    register_nn_fns(&nn)?;
    add_functions!(&nn => conv1d, conv2d, conv3d);
    add_functions!(&nn => conv_transpose1d, conv_transpose2d, conv_transpose3d);
    add_functions!(&nn => max_pool1d, max_pool2d, max_pool3d, avg_pool2d, avg_pool3d);
    add_functions!(&nn => max_pool1d_with_indices, max_pool2d_with_indices, max_pool3d_with_indices);
    add_functions!(&nn => adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d);
    add_functions!(&nn => adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d);
    add_functions!(&nn => adaptive_max_pool1d_with_indices, adaptive_max_pool2d_with_indices);
    add_functions!(&nn => adaptive_max_pool3d_with_indices);
    Ok(())
}
