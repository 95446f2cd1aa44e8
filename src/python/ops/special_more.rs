//! `torch.special` (`_C._special`, re-exported with torch's aliases by
//! `ferrograd.special`), and the top-level lgamma, digamma, i0 (table
//! ops), polygamma, mvlgamma and logit with their Tensor methods.

use crate::kernels::special_math::Poly;
use crate::ops::special_more::special_more_ops;
use crate::python::core::args::{operands, tensor_arg};
use crate::python::core::batched::{tensor_input, vmap_rule};
use crate::python::core::bind::{bind_functions, bind_methods, bind_unary_float_ops};
use crate::python::core::tensor::{wrap, PyTensor};
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

special_more_ops!(bind_unary_float_ops);

/// Unary `_special` functions: (Python name => Tensor method, doc).
macro_rules! unary_fns {
    ($($name:ident => $method:ident, $doc:literal;)*) => {
        bind_functions! { register_unary:
            $(
                #[doc = $doc]
                @vmap(Elementwise)
                pub fn $name(input: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
                    Ok(wrap(input.inner.$method()?))
                }
            )*
        }
    };
}

unary_fns! {
    erfcx => special_erfcx, "`torch.special.erfcx`: exp(x^2) erfc(x).";
    ndtr => special_ndtr, "`torch.special.ndtr`: the standard normal CDF.";
    ndtri => special_ndtri, "`torch.special.ndtri`: the inverse of the standard normal CDF.";
    log_ndtr => special_log_ndtr, "`torch.special.log_ndtr`: log of the standard normal CDF.";
    entr => special_entr, "`torch.special.entr`: -x ln x.";
    i0e => special_i0e, "`torch.special.i0e`: exp(-|x|) I0(x).";
    i1 => special_i1, "`torch.special.i1`: the modified Bessel function I1.";
    i1e => special_i1e, "`torch.special.i1e`: exp(-|x|) I1(x).";
    bessel_j0 => special_bessel_j0, "`torch.special.bessel_j0`.";
    bessel_j1 => special_bessel_j1, "`torch.special.bessel_j1`.";
    bessel_y0 => special_bessel_y0, "`torch.special.bessel_y0`.";
    bessel_y1 => special_bessel_y1, "`torch.special.bessel_y1`.";
    modified_bessel_i0 => special_modified_bessel_i0, "`torch.special.modified_bessel_i0`.";
    modified_bessel_i1 => special_modified_bessel_i1, "`torch.special.modified_bessel_i1`.";
    modified_bessel_k0 => special_modified_bessel_k0, "`torch.special.modified_bessel_k0`.";
    modified_bessel_k1 => special_modified_bessel_k1, "`torch.special.modified_bessel_k1`.";
    scaled_modified_bessel_k0 => special_scaled_modified_bessel_k0, "`torch.special.scaled_modified_bessel_k0`: exp(x) K0(x).";
    scaled_modified_bessel_k1 => special_scaled_modified_bessel_k1, "`torch.special.scaled_modified_bessel_k1`: exp(x) K1(x).";
    spherical_bessel_j0 => special_spherical_bessel_j0, "`torch.special.spherical_bessel_j0`: sin(x) / x.";
}

/// The orthogonal polynomials: (Python name => kind).
macro_rules! poly_fns {
    ($($name:ident => $kind:ident, $node:literal;)*) => {
        bind_functions! { register_poly:
            $(
                #[doc = concat!("`torch.special.", stringify!($name), "(input, n)`.")]
                pub fn $name(input: &Bound<'_, PyAny>, n: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                    let (x, n) = operands(input, n)?;
                    Ok(wrap(x.special_polynomial(&n, Poly::$kind, $node)?))
                }
            )*
        }
    };
}

poly_fns! {
    chebyshev_polynomial_t => ChebyshevT, "special_chebyshev_polynomial_t";
    chebyshev_polynomial_u => ChebyshevU, "special_chebyshev_polynomial_u";
    chebyshev_polynomial_v => ChebyshevV, "special_chebyshev_polynomial_v";
    chebyshev_polynomial_w => ChebyshevW, "special_chebyshev_polynomial_w";
    hermite_polynomial_h => HermiteH, "special_hermite_polynomial_h";
    hermite_polynomial_he => HermiteHe, "special_hermite_polynomial_he";
    laguerre_polynomial_l => LaguerreL, "special_laguerre_polynomial_l";
    legendre_polynomial_p => LegendreP, "special_legendre_polynomial_p";
}

bind_functions! { register_special:
    /// `torch.special.shifted_chebyshev_polynomial_t(input, n)`: T_n(2x - 1).
    pub fn shifted_chebyshev_polynomial_t(input: &Bound<'_, PyAny>, n: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        shifted(input, n, Poly::ChebyshevT, "special_shifted_chebyshev_polynomial_t")
    }
    /// `torch.special.shifted_chebyshev_polynomial_u(input, n)`: U_n(2x - 1).
    pub fn shifted_chebyshev_polynomial_u(input: &Bound<'_, PyAny>, n: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        shifted(input, n, Poly::ChebyshevU, "special_shifted_chebyshev_polynomial_u")
    }
    /// `torch.special.shifted_chebyshev_polynomial_v(input, n)`: V_n(2x - 1).
    pub fn shifted_chebyshev_polynomial_v(input: &Bound<'_, PyAny>, n: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        shifted(input, n, Poly::ChebyshevV, "special_shifted_chebyshev_polynomial_v")
    }
    /// `torch.special.shifted_chebyshev_polynomial_w(input, n)`: W_n(2x - 1).
    pub fn shifted_chebyshev_polynomial_w(input: &Bound<'_, PyAny>, n: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        shifted(input, n, Poly::ChebyshevW, "special_shifted_chebyshev_polynomial_w")
    }
    /// `torch.special.xlog1py(input, other)`: input * log1p(other).
    pub fn xlog1py<'py>(input: &Bound<'py, PyAny>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        vmap_rule!(pointwise xlog1py, [input, other], []);
        let (x, y) = operands(input, other)?;
        wrap(x.special_xlog1py(&y)?).into_py_any(input.py())
    }
    /// `torch.special.zeta(input, other)`: the Hurwitz zeta function.
    pub fn zeta<'py>(input: &Bound<'py, PyAny>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        vmap_rule!(pointwise zeta, [input, other], []);
        let (x, q) = operands(input, other)?;
        wrap(x.special_zeta(&q)?).into_py_any(input.py())
    }
    /// `torch.special.gammainc(input, other)`: the regularized lower incomplete gamma function.
    pub fn gammainc<'py>(input: &Bound<'py, PyAny>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        vmap_rule!(pointwise gammainc, [input, other], []);
        gamma_inc(input, other, false, "gammainc")
    }
    /// `torch.special.gammaincc(input, other)`: the regularized upper incomplete gamma function.
    pub fn gammaincc<'py>(input: &Bound<'py, PyAny>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        vmap_rule!(pointwise gammaincc, [input, other], []);
        gamma_inc(input, other, true, "gammaincc")
    }
    /// `torch.special.multigammaln(input, p)`.
    pub fn multigammaln(input: PyRef<'_, PyTensor>, p: i64) -> PyResult<PyTensor> {
        Ok(wrap(input.inner.mvlgamma(p)?))
    }
}

/// The regularized incomplete gamma function of two tensors (`upper`: Q).
fn gamma_inc(
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    upper: bool,
    name: &str,
) -> PyResult<Py<PyAny>> {
    let x = tensor_arg(input, name, "input", 1)?;
    let a = tensor_arg(other, name, "other", 2)?;
    wrap(x.special_gammainc(&a, upper)?).into_py_any(input.py())
}

fn shifted(
    input: &Bound<'_, PyAny>,
    n: &Bound<'_, PyAny>,
    kind: Poly,
    node: &'static str,
) -> PyResult<PyTensor> {
    let (x, n) = operands(input, n)?;
    let x2 = x.mul_scalar(2.0)?.sub_scalar(1.0)?;
    Ok(wrap(x2.special_polynomial(&n, kind, node)?))
}

bind_methods! { special_more_fns, register_fns:
    /// `torch.mvlgamma(input, p)`: the multivariate log-gamma function.
    fn mvlgamma(&self, p: i64) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.mvlgamma(p)?))
    }
    /// `torch.logit(input, eps=None)`: log(x / (1 - x)).
    #[pyo3(signature = (eps=None))]
    fn logit(&self, eps: Option<f64>) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.logit(eps)?))
    }
}

#[pymethods]
impl PyTensor {
    /// `Tensor.polygamma(n)`: the n-th derivative of digamma.
    fn polygamma(&self, n: i64) -> PyResult<PyTensor> {
        Ok(wrap(self.inner.polygamma(n)?))
    }
}

bind_functions! { register_top:
    /// `torch.polygamma(n, input)`: the n-th derivative of digamma.
    #[pyo3(name = "polygamma")]
    pub fn polygamma_fn<'py>(n: i64, input: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        vmap_rule!(pointwise polygamma_fn, [input], [n]);
        wrap(tensor_input(input, "polygamma")?.borrow().inner.polygamma(n)?).into_py_any(input.py())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_table(m)?;
    register_fns(m)?;
    register_top(m)?;
    let special = PyModule::new(m.py(), "_special")?;
    register_unary(&special)?;
    register_poly(&special)?;
    register_special(&special)?;
    special.add("polygamma", m.getattr("polygamma")?)?;
    m.add_submodule(&special)?;
    Ok(())
}
