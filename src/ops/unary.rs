//! Unary pointwise ops, declared once each in a table.
//!
//! A table of floating unary ops (this file's `unary_ops!`, and the
//! families in `trig.rs` and `special.rs`) states per op, in one entry:
//!
//! ```text
//! /// docstring (shown in Python and the stubs)
//! name, name_ [alias, alias_]: "NodeBackward0", kernel, saves, sample-domain,
//!     |grad, saved| d/dself;
//! ```
//!
//! - `kernel`: `simd(K)`, a branch-free function type of
//!   `kernels::unary::vmath`, or `each(|v| expr)`, a scalar expression
//!   instantiated for f32 and f64;
//! - `saves`: `Input` (the derivative's `saved` is self) or `Output` (the
//!   result);
//! - `sample-domain`: where the op is smooth (`normal`, `pos`, `unit`,
//!   `away` from 0, `gt1`), read by the op registry's tests;
//! - the derivative: d/dself written in differentiable ops, so every order
//!   of gradient follows.
//!
//! From it come `Tensor::name` (recorded for autograd), `Tensor::name_` (the
//! same kernel on self's memory when no graph is recorded), the aliases, the
//! Python method, in-place method and module function with `out=`
//! (`python/ops/*.rs` pass the same table to `bind_unary_float_ops!`), and
//! the row of `ops::table` that the stubs, docs and registry tests read.
//! Integer and bool inputs compute in the default float dtype, as torch's.
//! Each table op is elementwise, so its batching rule is `Elementwise`.
//!
//! Ops whose dtypes or arguments do not fit the table are written out:
//!
//! | op          | d/dself                                              | saves  |
//! |-------------|------------------------------------------------------|--------|
//! | abs         | grad * sign(self)                                    | self   |
//! | sign        | 0                                                    |        |
//! | relu        | threshold_backward(grad, result) = grad * (result > 0) | result |
//! | square      | pow(self, 2): grad * 2 * self                        | self   |
//!
//! (gelu, silu, softplus and the `*_backward` derivative ops live in
//! `activation.rs`.)

use crate::autograd::{is_grad_enabled, record, Record};
use crate::kernels::unary::vmath;
use crate::kernels::unary::{f, int_apply1_inplace, int_map1, map1, try_map1_reduced};
use crate::tensor::{DType, Layout, Tensor};
use crate::{bail, Result};

/// `f(v)` over every element, computed in `x`'s floating dtype (integers and
/// bools are read as the default float dtype; float16 and bfloat16 in
/// float32, rounded back).
/// `x` itself (a shared handle) when floating, else `x` cast to the default
/// float dtype: torch's promotion of integer and bool inputs of float ops.
pub(crate) fn as_floating(x: &Tensor) -> Result<Tensor> {
    if x.dtype().is_floating() {
        return Ok(x.clone());
    }
    x.try_cast_raw(crate::tensor::dtype::default_float())
}

macro_rules! float_map {
    ($x:expr, |$v:ident| $e:expr) => {{
        let x = &$crate::ops::unary::as_floating($x)?;
        match x.dtype() {
            $crate::tensor::DType::F64 => Tensor::from(
                $crate::kernels::unary::try_map1::<f64, f64>(x, |$v: f64| $e)?,
            ),
            $crate::tensor::DType::F32 => Tensor::from(
                $crate::kernels::unary::try_map1::<f32, f32>(x, |$v: f32| $e)?,
            ),
            _ => Tensor::from($crate::kernels::unary::try_map1_reduced(x, |$v: f32| $e)?),
        }
    }};
}
pub(crate) use float_map;

/// As `float_map!`, computed by a branch-free SIMD function of
/// `kernels::unary::vmath`, given as its type (one for both float types).
macro_rules! float_map_simd {
    ($x:expr, $k:ty) => {{
        use $crate::kernels::vmap::map1;
        use $crate::tensor::DType;
        let x = &$crate::ops::unary::as_floating($x)?;
        match x.dtype() {
            DType::F64 => Tensor::from(map1::<f64, $k>(x)?),
            DType::F32 => Tensor::from(map1::<f32, $k>(x)?),
            _ => Tensor::from($crate::kernels::vmap::map1_reduced::<$k>(x)?),
        }
    }};
}
pub(crate) use float_map_simd;

/// `K(a, b)` elementwise with broadcasting, in the promoted floating dtype,
/// for a two-argument SIMD function type of `vmath`.
macro_rules! float_map2_simd {
    ($a:expr, $b:expr, $k:ty) => {{
        let (a, b): (&Tensor, &Tensor) = ($a, $b);
        let dt = a.result_type(b).to_floating();
        if dt.is_reduced_float() && (a.ndim() == 0) != (b.ndim() == 0) {
            // a 0-dim operand keeps its own precision (torch's CPU scalars):
            // the whole op in float32, rounded once
            let (a, b) = (a.cast_raw(DType::F32), b.cast_raw(DType::F32));
            Tensor::from(vmap::map2_simd::<f32, $k>(&a, &b)?).try_cast_raw(dt)?
        } else {
            let (a, b) = (a.cast_raw(dt), b.cast_raw(dt));
            match dt {
                DType::F64 => Tensor::from(vmap::map2_simd::<f64, $k>(&a, &b)?),
                DType::F32 => Tensor::from(vmap::map2_simd::<f32, $k>(&a, &b)?),
                _ => Tensor::from(vmap::map2_simd_reduced::<$k>(&a, &b)?),
            }
        }
    }};
}
pub(crate) use float_map2_simd;

/// `f(a, b)` for a float16/bfloat16 result `$dt`, in float32, rounded once.
/// A 0-dim operand beside a dimensioned one is read into float32 at its own
/// precision when `$exact` (torch's mul and div read CPU scalars so),
/// else rounded to `$dt` first (torch's add and sub, and the rest).
macro_rules! reduced_map2 {
    ($a:expr, $b:expr, $dt:expr, $exact:expr, |$x:ident, $y:ident| $e:expr) => {{
        let (a, b, dt): (
            &$crate::tensor::Tensor,
            &$crate::tensor::Tensor,
            $crate::tensor::DType,
        ) = ($a, $b, $dt);
        use $crate::kernels::{binary::map2_reduced, unary::try_map1_reduced};
        let scalar = |t: &$crate::tensor::Tensor| -> $crate::Result<f32> {
            let v = t.item()?.to_f64() as f32;
            Ok(if $exact {
                v
            } else {
                $crate::kernels::reduced::round_to(dt, v)
            })
        };
        if b.ndim() == 0 && a.ndim() > 0 {
            let $y = scalar(b)?;
            Tensor::from(try_map1_reduced(&a.cast_raw(dt), move |$x: f32| $e)?)
        } else if a.ndim() == 0 && b.ndim() > 0 {
            let $x = scalar(a)?;
            Tensor::from(try_map1_reduced(&b.cast_raw(dt), move |$y: f32| $e)?)
        } else {
            Tensor::from(map2_reduced(
                &a.cast_raw(dt),
                &b.cast_raw(dt),
                |$x: f32, $y: f32| $e,
            )?)
        }
    }};
}
pub(crate) use reduced_map2;

/// `f(a, b)` elementwise with broadcasting, in the promoted floating dtype.
macro_rules! float_map2 {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $e:expr) => {
        $crate::ops::unary::float_map2!($a, $b, false, |$x, $y| $e)
    };
    ($a:expr, $b:expr, $exact:expr, |$x:ident, $y:ident| $e:expr) => {{
        let (a, b): (&$crate::tensor::Tensor, &$crate::tensor::Tensor) = ($a, $b);
        let dt = a.result_type(b).to_floating();
        if dt.is_reduced_float() {
            $crate::ops::unary::reduced_map2!(a, b, dt, $exact, |$x, $y| $e)
        } else {
            let (a, b) = (a.cast_raw(dt), b.cast_raw(dt));
            match dt {
                $crate::tensor::DType::F64 => Tensor::from($crate::kernels::binary::map2::<
                    f64,
                    f64,
                >(
                    &a, &b, |$x: f64, $y: f64| $e
                )?),
                _ => Tensor::from($crate::kernels::binary::map2::<f32, f32>(
                    &a,
                    &b,
                    |$x: f32, $y: f32| $e,
                )?),
            }
        }
    }};
}
pub(crate) use float_map2;

/// Whether two elements of `l` share one memory location (a broadcast view).
fn has_internal_overlap(l: &Layout) -> bool {
    l.shape
        .iter()
        .zip(&l.strides)
        .any(|(&d, &s)| d > 1 && s == 0)
}

/// What a unary op's backward reads.
pub(crate) enum Saves {
    Nothing,
    Input,
    Output,
}

impl Tensor {
    /// Attaches a unary op's node: `d(grad, saved)` is its derivative.
    pub(crate) fn unary_record<F>(
        &self,
        r: Record,
        out: Tensor,
        saves: Saves,
        d: F,
    ) -> Result<Tensor>
    where
        F: Fn(&Tensor, Option<Tensor>) -> Result<Tensor> + Send + Sync + 'static,
    {
        let (r, has) = match saves {
            Saves::Nothing => (r, false),
            Saves::Input => (r.save("self", self), true),
            Saves::Output => (r.save_output("result", 0), true),
        };
        r.finish(out, move |c| {
            let s = if has { Some(c.saved(0)?) } else { None };
            Ok(vec![Some(d(c.grad(), s)?)])
        })
    }

    /// The in-place fast path: when no graph is recorded, runs `kernel` on
    /// self's memory directly (after torch's in-place checks) and bumps the
    /// version. Returns false when the caller must take the recorded path
    /// (`apply_inplace`): grad is being recorded, the dtype is not handled
    /// (`dtype_ok`; float16 and bfloat16 compute out of place, in float32),
    /// or elements of self overlap in memory.
    pub(crate) fn try_fast_inplace(
        &self,
        op: &'static str,
        dtype_ok: bool,
        kernel: impl FnOnce(&Tensor),
    ) -> Result<bool> {
        let dtype_ok = dtype_ok && !self.dtype().is_reduced_float();
        self.try_fast_inplace_any_dtype(op, dtype_ok, kernel)
    }

    /// [`Tensor::try_fast_inplace`] for a kernel that handles every dtype
    /// as stored (a copy, a fill).
    pub(crate) fn try_fast_inplace_any_dtype(
        &self,
        op: &'static str,
        dtype_ok: bool,
        kernel: impl FnOnce(&Tensor),
    ) -> Result<bool> {
        if !dtype_ok
            || (is_grad_enabled() && self.requires_grad())
            || self.has_fw_grad()
            || has_internal_overlap(self.layout())
        {
            return Ok(false);
        }
        self.check_inplace(&[])?;
        self.before_write()?;
        kernel(self);
        self.modified_by(op);
        Ok(true)
    }

    /// An in-place unary op: `kernel` in place when no graph or tangent
    /// is involved (and `eligible`), else `op` through `apply_inplace`.
    pub(crate) fn unary_inplace(
        &self,
        name: &'static str,
        eligible: bool,
        kernel: impl FnOnce(&Tensor),
        op: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<()> {
        if self.try_fast_inplace(name, eligible, kernel)? {
            return Ok(());
        }
        self.apply_inplace(name, &[], op)
    }
}

/// A table kernel's result: `simd(K)` or `each(|v| expr)` over `x`.
macro_rules! float_kernel {
    (simd, $x:expr, $k:ty) => {
        $crate::ops::unary::float_map_simd!($x, $k)
    };
    (each, $x:expr, |$v:ident| $e:expr) => {
        $crate::ops::unary::float_map!($x, |$v| $e)
    };
}
pub(crate) use float_kernel;

/// A table kernel on a floating tensor's own memory.
macro_rules! float_kernel_inplace {
    (simd, $x:expr, $k:ty) => {{
        let x: &Tensor = $x;
        match x.dtype() {
            DType::F32 => $crate::kernels::vmap::apply1::<f32, $k>(x),
            _ => $crate::kernels::vmap::apply1::<f64, $k>(x),
        }
    }};
    (each, $x:expr, |$v:ident| $e:expr) => {{
        let x: &Tensor = $x;
        match x.dtype() {
            DType::F32 => $crate::kernels::unary::apply1_inplace::<f32>(x, |$v: f32| $e),
            _ => $crate::kernels::unary::apply1_inplace::<f64>(x, |$v: f64| $e),
        }
    }};
}
pub(crate) use float_kernel_inplace;

/// Makes the Rust ops of a floating unary table (see the module docs):
/// `Tensor::name`, `Tensor::name_` and the aliases, and the table's rows
/// (`ROWS`, read by `ops::table`).
macro_rules! define_unary_float_ops {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident, $inplace:ident [$($alias:ident, $alias_:ident),*]: $node:literal,
            $kind:ident($($k:tt)*), $saves:ident, $domain:ident,
            |$g:ident, $s:ident| $d:expr;
    )*) => {
        impl Tensor {
            $(
                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!("d/dself = `", stringify!($d), "`")]
                pub fn $name(&self) -> Result<Tensor> {
                    let rec = record($node, &[self]);
                    let out = $crate::ops::unary::float_kernel!($kind, self, $($k)*);
                    self.unary_record(rec, out, $crate::ops::unary::Saves::$saves, |$g, saved| {
                        let $s = &saved.expect("a table op saves one tensor");
                        $d
                    })
                }
                #[doc = concat!("`", stringify!($name), "` in place.")]
                pub fn $inplace(&self) -> Result<()> {
                    self.unary_inplace(
                        stringify!($inplace),
                        self.dtype().is_floating(),
                        |t| $crate::ops::unary::float_kernel_inplace!($kind, t, $($k)*),
                        |t| t.$name(),
                    )
                }
                $(
                    #[doc = concat!("Alias of `", stringify!($name), "`.")]
                    pub fn $alias(&self) -> Result<Tensor> {
                        self.$name()
                    }
                    #[doc = concat!("Alias of `", stringify!($inplace), "`.")]
                    pub fn $alias_(&self) -> Result<()> {
                        self.$inplace()
                    }
                )*
            )*
        }

        /// This family's rows of the op table.
        pub(crate) const ROWS: &[$crate::ops::table::OpRow] = &[$(
            $crate::ops::table::OpRow {
                name: stringify!($name),
                inplace: stringify!($inplace),
                aliases: &[$(stringify!($alias)),*],
                node: $node,
                doc: concat!($($doc, "\n"),*),
                domain: stringify!($domain),
                kind: $crate::ops::table::OpKind::UnaryFloat,
                batch: $crate::ops::table::BatchRule::Elementwise,
                form: "unary",
                dunders: &[],
            },
        )*];
    };
}
pub(crate) use define_unary_float_ops;

/// Exponentials, logarithms, roots, sin/cos/tan and the smooth activations.
macro_rules! unary_ops {
    ($then:ident) => {
        $then! {
            /// The exponential of each element, e^x.
            exp, exp_ []: "ExpBackward0", simd(vmath::Exp), Output, normal,
                |g, r| g.mul(r);
            /// The natural logarithm of each element.
            log, log_ []: "LogBackward0", simd(vmath::Ln), Input, pos,
                |g, x| g.div(x);
            /// log(1 + x), accurate for small x.
            log1p, log1p_ []: "Log1PBackward0", simd(vmath::Ln1p), Input, pos,
                |g, x| g.div(&x.add_scalar(1.0)?);
            /// e^x - 1, accurate for small x.
            expm1, expm1_ []: "Expm1Backward0", simd(vmath::ExpM1), Output, normal,
                |g, r| g.mul(&r.add_scalar(1.0)?);
            /// The square root of each element.
            sqrt, sqrt_ []: "SqrtBackward0", each(|v| v.sqrt()), Output, pos,
                |g, r| g.div(&r.mul_scalar(2.0)?);
            /// 1 / sqrt(x).
            rsqrt, rsqrt_ []: "RsqrtBackward0", each(|v| 1.0 / v.sqrt()), Output, pos,
                |g, r| g.mul(&r.pow_scalar(3)?)?.mul_scalar(-0.5);
            /// 1 / x.
            reciprocal, reciprocal_ []: "ReciprocalBackward0", each(|v| 1.0 / v), Output, away,
                |g, r| g.neg()?.mul(&r.mul(r)?);
            /// The sine of each element (radians).
            sin, sin_ []: "SinBackward0", simd(vmath::Sin), Input, normal,
                |g, x| g.mul(&x.cos()?);
            /// The cosine of each element (radians).
            cos, cos_ []: "CosBackward0", simd(vmath::Cos), Input, normal,
                |g, x| g.mul(&x.sin()?.neg()?);
            /// The tangent of each element (radians).
            tan, tan_ []: "TanBackward0", simd(vmath::Tan), Output, unit,
                |g, r| g.mul(&r.mul(r)?.add_scalar(1.0)?);
            /// The hyperbolic tangent of each element.
            tanh, tanh_ []: "TanhBackward0", simd(vmath::Tanh), Output, normal,
                |g, r| g.tanh_backward(r);
            /// The logistic sigmoid, 1 / (1 + e^-x).
            sigmoid, sigmoid_ []: "SigmoidBackward0", simd(vmath::Sigmoid), Output, normal,
                |g, r| g.sigmoid_backward(r);
            /// The normalized sinc, sin(pi x) / (pi x), 1 at 0.
            sinc, sinc_ []: "SincBackward0", each(|v| sinc_of(v as f64) as _), Input, away,
                |g, x| g.mul(&sinc_slope(x)?);
        }
    };
}
// The Python bindings pass this table to their own macro.
#[cfg_attr(not(feature = "python"), allow(unused_imports))]
pub(crate) use unary_ops;

unary_ops!(define_unary_float_ops);

/// sin(pi v) / (pi v), 1 at 0 (computed in float64).
fn sinc_of(v: f64) -> f64 {
    if v == 0.0 {
        return 1.0;
    }
    let p = v * std::f64::consts::PI;
    p.sin() / p
}

/// sinc'(x) = (cos(pi x) - sinc(x)) / x, 0 at 0 (torch's formula).
fn sinc_slope(x: &Tensor) -> Result<Tensor> {
    let slope = x
        .mul_scalar(std::f64::consts::PI)?
        .cos()?
        .sub(&x.sinc()?)?
        .div(x)?;
    let zero = x.eq_scalar(0.0)?;
    Tensor::where_cond(&zero, &slope.zeros_like(), &slope)
}

impl Tensor {
    // ----- sign-like -----

    /// d/dself = grad * sign(self). Integers stay integers; bool is an error.
    pub fn abs(&self) -> Result<Tensor> {
        let rec = record("AbsBackward0", &[self]);
        let out = match self.dtype() {
            dt if dt.is_reduced_float() => Tensor::from(try_map1_reduced(self, |v| v.abs())?),
            DType::F32 => Tensor::from(map1::<f32, f32>(self, |v| v.abs())),
            DType::F64 => Tensor::from(map1::<f64, f64>(self, |v| v.abs())),
            DType::Bool => bail!(not_implemented, "\"abs_cpu\" not implemented for 'Bool'"),
            _ => Tensor::from(int_map1(self, |v| v.wrapping_abs())),
        };
        self.unary_record(rec, out, Saves::Input, |g, s| g.mul(&s.unwrap().sign()?))
    }
    /// d/dself = 0. `(0 < x) - (x < 0)`: NaN gives 0; bool stays bool.
    pub fn sign(&self) -> Result<Tensor> {
        let rec = record("SignBackward0", &[self]);
        let out = match self.dtype() {
            dt if dt.is_reduced_float() => Tensor::from(try_map1_reduced(self, f::sign)?),
            DType::F32 => Tensor::from(map1::<f32, f32>(self, f::sign)),
            DType::F64 => Tensor::from(map1::<f64, f64>(self, f::sign)),
            DType::Bool => Tensor::from(map1::<bool, bool>(self, |v| v)),
            _ => Tensor::from(int_map1(self, |v| v.signum())),
        };
        self.unary_record(rec, out, Saves::Nothing, |g, _| Ok(g.zeros_like()))
    }
    /// `sgn` is `sign` for real tensors.
    pub fn sgn(&self) -> Result<Tensor> {
        self.sign()
    }
    /// `pow(self, 2)`: d/dself = grad * 2 * self. Bool squares to int64.
    pub fn square(&self) -> Result<Tensor> {
        self.pow_scalar(2)
    }
    /// `max(self, 0)` (NaN stays NaN); d/dself = threshold_backward(grad,
    /// result). Integers stay integers; bool is an error.
    pub fn relu(&self) -> Result<Tensor> {
        let rec = record("ReluBackward0", &[self]);
        let out = match self.dtype() {
            dt if dt.is_reduced_float() => Tensor::from(try_map1_reduced(self, f::relu)?),
            DType::F32 => Tensor::from(map1::<f32, f32>(self, f::relu)),
            DType::F64 => Tensor::from(map1::<f64, f64>(self, f::relu)),
            DType::Bool => bail!(runtime, "Boolean inputs not supported for relu"),
            _ => Tensor::from(int_map1(self, |v| v.max(0))),
        };
        self.unary_record(rec, out, Saves::Output, |g, r| {
            g.threshold_backward(&r.unwrap())
        })
    }

    // ----- in-place variants -----

    pub fn abs_(&self) -> Result<()> {
        self.unary_inplace(
            "abs_",
            self.dtype() != DType::Bool,
            |t| match t.dtype() {
                dt if dt.is_integral() => int_apply1_inplace(t, |v| v.wrapping_abs()),
                _ => float_kernel_inplace!(each, t, |v| v.abs()),
            },
            |t| t.abs(),
        )
    }
    pub fn neg_(&self) -> Result<()> {
        self.unary_inplace(
            "neg_",
            self.dtype() != DType::Bool,
            |t| match t.dtype() {
                dt if dt.is_integral() => int_apply1_inplace(t, |v| v.wrapping_neg()),
                _ => float_kernel_inplace!(each, t, |v| -v),
            },
            |t| t.neg(),
        )
    }
    pub fn sign_(&self) -> Result<()> {
        self.unary_inplace(
            "sign_",
            self.dtype() != DType::Bool,
            |t| match t.dtype() {
                dt if dt.is_integral() => int_apply1_inplace(t, |v| v.signum()),
                _ => float_kernel_inplace!(each, t, |v| f::sign(v)),
            },
            |t| t.sign(),
        )
    }
    pub fn sgn_(&self) -> Result<()> {
        self.sign_()
    }
    pub fn square_(&self) -> Result<()> {
        self.pow_scalar_(2)
    }
    pub fn relu_(&self) -> Result<()> {
        self.unary_inplace(
            "relu_",
            self.dtype() != DType::Bool,
            |t| match t.dtype() {
                dt if dt.is_integral() => int_apply1_inplace(t, |v| v.max(0)),
                _ => float_kernel_inplace!(each, t, |v| f::relu(v)),
            },
            |t| t.relu(),
        )
    }
}
