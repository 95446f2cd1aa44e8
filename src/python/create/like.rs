//! The `*_like` factories.

use super::random::*;
use super::*;
use crate::python::core::args::*;
use crate::python::core::device::*;
use crate::python::core::identity::Fresh;
use crate::python::core::tensor::PyTensor;
use crate::tensor::Scalar;
use crate::{DType, Tensor};
use pyo3::prelude::*;

pub(crate) fn like_dtype(input: &Tensor, dtype: Option<DTypeArg>) -> DType {
    dt(dtype).unwrap_or(input.dtype())
}

/// `name(input, [args], *, dtype=None, layout=None, device=None,
/// requires_grad=False, memory_format=None)`: `|input, dtype| make`, dtype
/// defaulting to the input's; `fn $register(m)` adds them all.
macro_rules! like_factories {
    ($register:ident: $(
        $(#[$meta:meta])* $name:ident($($arg:ident: $ty:ty $(= $def:tt)?),*)
            => |$t:ident, $d:ident| $make:expr;
    )*) => {$(
        $(#[$meta])*
        #[pyfunction]
        #[pyo3(signature = (input, $($arg $(= $def)?,)* *, dtype=None, layout=None, device=None, requires_grad=false, memory_format=None))]
        pub(crate) fn $name(
            input: PyRef<'_, PyTensor>,
            $($arg: $ty,)*
            dtype: Option<DTypeArg>,
            layout: Option<&Bound<'_, PyAny>>,
            device: Option<&Bound<'_, PyAny>>,
            requires_grad: bool,
            memory_format: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<Fresh> {
            let _ = (layout, memory_format);
            check_device(device)?;
            let $t = &input.inner;
            let $d = like_dtype($t, dtype);
            let made: PyResult<Tensor> = $make;
            finish(made?, requires_grad)
        }
    )*
    pub(crate) fn $register(m: &Bound<'_, PyModule>) -> PyResult<()> {
        $(m.add_function(wrap_pyfunction!($name, m)?)?;)*
        Ok(())
    }};
}

like_factories! { register_like:
    /// Zeros of the input's shape.
    zeros_like() => |t, d| Ok(Tensor::try_full(t.shape(), Scalar::Int(0), d)?);
    /// Ones of the input's shape.
    ones_like() => |t, d| Ok(Tensor::try_full(t.shape(), Scalar::Int(1), d)?);
    /// A tensor of the input's shape (zero-filled in ferrograd).
    empty_like() => |t, d| Ok(Tensor::try_empty(t.shape(), d)?);
    /// Uniform random numbers in [0, 1) of the input's shape.
    rand_like() => |t, d| {
        random_float(d, "check_uniform_bounds")?;
        Ok(Tensor::rand(t.shape(), d)?)
    };
    /// Standard normal random numbers of the input's shape.
    randn_like() => |t, d| {
        random_float(d, "normal_kernel_cpu")?;
        Ok(Tensor::randn(t.shape(), d)?)
    };
    full_like(fill_value: &Bound<'_, PyAny>) => |t, d| {
        let v = fill_scalar(fill_value)?;
        Ok(Tensor::try_full(t.shape(), v, d)?)
    };
    /// `randint_like(input, high)` or `randint_like(input, low, high)`.
    randint_like(low_or_high: &Bound<'_, PyAny>, high: Option<&Bound<'_, PyAny>> = None) => |t, d| {
        let (lo, hi) = match high {
            Some(h) => (int_bound(low_or_high, "low")?, int_bound(h, "high")?),
            None => (0, int_bound(low_or_high, "high")?),
        };
        Ok(Tensor::randint(lo, hi, t.shape(), d)?)
    };
}

// ---------------------------------------------------------------------------
// module-level helpers
// ---------------------------------------------------------------------------
