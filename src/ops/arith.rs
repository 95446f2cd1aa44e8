//! Binary pointwise arithmetic, declared once each in a table (this file's
//! `arith_ops!`; `trig.rs` and `special.rs` hold the `atan2`/`hypot` and
//! `xlogy` tables), and `neg`.
//!
//! A table of binary ops states per op, in one entry:
//!
//! ```text
//! /// docstring (shown in Python and the stubs)
//! name, name_[, name_scalar] [alias, alias_]: "NodeBackward0",
//!     rule(check) [exact_scalars], |a, b| kernel, domain-of-self domain-of-other,
//!     saves |grad, self, other, result| d/dself, d/dother;
//!     py form [dunders];
//! ```
//!
//! - `rule`: the dtypes. `numeric`: computed in the promoted dtype (bool
//!   operands in int64, cast back); `float`: in the promoted floating dtype
//!   (integers and bools in the default float dtype). `check` (optional) is
//!   a function run on both operands first (torch's refusals: bool
//!   subtraction, integer hypot). `exact_scalars` (optional): a 0-dim
//!   operand (a Python number) beside a float16/bfloat16 tensor enters the
//!   float32 computation at its own precision, as torch's mul and div read
//!   CPU scalars; without it, it is rounded to the 2-byte dtype first (as
//!   torch's add and sub do).
//! - the kernel: one scalar expression, instantiated for every dtype of the
//!   rule;
//! - the sample domains of self and other, read by the op registry's tests;
//! - `saves`: `Nothing`, `Inputs` (self, other) or `InputsResult`; the
//!   derivatives get `self`, `other` and `result` as closures that unpack the
//!   saved tensor when called (so an input modified in place breaks only the
//!   derivative that reads it, as in torch);
//! - d/dself and d/dother, written in differentiable ops;
//! - `py form`: the Python binding's shape. `plain` (`other` a tensor or a
//!   number), `alpha` (and `alpha=`, `self + alpha * other`), `written`
//!   (the name's method and function are written out, for an irregular
//!   signature; aliases, in-place and dunders still come from here); the
//!   dunders: `fwd __add__`, `rev __radd__` (other ⊕ self; `= f` calls
//!   `Tensor::f(self, number)` instead), `inp __iadd__`.
//!
//! From it come `Tensor::name(&self, other)` (recorded), `Tensor::name_`
//! (the kernel on self's memory when nothing is recorded and the result
//! dtype is self's, else through `apply_inplace`), `Tensor::name_scalar`
//! (a Python number, wrapped), the aliases, the Python method, in-place
//! method, module function with `out=` and the dunders
//! (`python/core/bind.rs::bind_binary_ops!`), and the row of `ops::table`
//! that the stubs, docs and registry tests read. Binary ops broadcast, so
//! their batching rule is `Broadcast`.
//!
//! | op             | d/dself            | d/dother                   | saves         |
//! |----------------|--------------------|----------------------------|---------------|
//! | add            | grad               | grad                       |               |
//! | sub            | grad               | -grad                      |               |
//! | rsub(number)   | -grad              |                            |               |
//! | mul            | grad * other       | grad * self                | self, other   |
//! | div            | grad / other       | -grad * (self / other) / other | self, other |
//! | neg            | -grad              |                            |               |
//!
//! `number / tensor` is `tensor.reciprocal() * number`, as in torch (it
//! saves reciprocal's result, not the tensor).

use crate::autograd::record;
use crate::buffer::Element;
use crate::kernels::binary::map2;
use crate::kernels::unary::map1;
use crate::tensor::{DType, Scalar, Tensor};
use crate::{bail, Result};

/// Applies a numeric binary op in `dt`; bool operands compute in int64
/// and are cast back to bool.
macro_rules! numeric2 {
    ($a:expr, $b:expr, $dt:expr, |$x:ident, $y:ident| $e:expr) => {{
        let dt: DType = $dt;
        match dt {
            DType::F32 => map2::<f32, f32>($a, $b, |$x, $y| $e).map(Tensor::from),
            DType::F64 => map2::<f64, f64>($a, $b, |$x, $y| $e).map(Tensor::from),
            DType::Bool => {
                let (a, b) = ($a.cast_raw(DType::I64), $b.cast_raw(DType::I64));
                Ok(
                    Tensor::from(map2::<i64, i64>(&a, &b, |$x: i64, $y: i64| $e)?)
                        .cast_raw(DType::Bool),
                )
            }
            DType::F16 | DType::BF16 => {
                $crate::kernels::binary::map2_reduced($a, $b, |$x: f32, $y: f32| $e)
                    .map(Tensor::from)
            }
            // In int64, truncated back: torch's wrapping arithmetic.
            _ => $crate::kernels::binary::int_map2($a, $b, |$x, $y| $e).map(Tensor::from),
        }
    }};
}

/// A table kernel's result (see the module docs for the rules).
macro_rules! binary_kernel {
    (numeric, $exact:expr, $s:expr, $o:expr, |$a:ident, $b:ident| $k:expr) => {{
        let (s, o): (&Tensor, &Tensor) = ($s, $o);
        let dt = s.result_type(o);
        if dt.is_reduced_float() {
            $crate::ops::unary::reduced_map2!(s, o, dt, $exact, |$a, $b| $k)
        } else {
            let (x, y) = (s.cast_raw(dt), o.cast_raw(dt));
            $crate::ops::arith::numeric2!(&x, &y, dt, |$a, $b| $k)?
        }
    }};
    (float, $exact:expr, $s:expr, $o:expr, |$a:ident, $b:ident| $k:expr) => {
        $crate::ops::unary::float_map2!($s, $o, $exact, |$a, $b| $k)
    };
}

/// Whether an entry marked `exact_scalars` reads a 0-dim operand beside a
/// float16/bfloat16 one unrounded (see the module docs).
macro_rules! exact_scalars {
    () => {
        false
    };
    (exact_scalars) => {
        true
    };
}

/// Whether a table kernel runs in the memory of a tensor of dtype `dt`.
macro_rules! binary_inplace_ok {
    (numeric, $dt:expr) => {
        $dt != DType::Bool
    };
    (float, $dt:expr) => {
        $dt.is_floating()
    };
}

/// A table kernel in self's memory, `o` already of self's dtype (one that
/// `binary_inplace_ok!` accepts).
macro_rules! binary_kernel_inplace {
    ($rule:ident, $s:expr, $o:expr, |$a:ident, $b:ident| $k:expr) => {{
        use $crate::kernels::binary::apply2_inplace;
        let (s, o): (&Tensor, &Tensor) = ($s, $o);
        $crate::ops::arith::binary_kernel_inplace!(@$rule, s, o, |$a, $b| $k)
    }};
    (@numeric, $s:ident, $o:ident, |$a:ident, $b:ident| $k:expr) => {
        match $s.dtype() {
            DType::F32 | DType::F64 => $crate::ops::arith::binary_kernel_inplace!(@float, $s, $o, |$a, $b| $k),
            int => $crate::dispatch_ints!(int, T => apply2_inplace::<T>($s, $o, |x: T, y: T| {
                use $crate::buffer::Element;
                let ($a, $b) = (x.to_i64(), y.to_i64());
                T::from_i64($k)
            })),
        }
    };
    (@float, $s:ident, $o:ident, |$a:ident, $b:ident| $k:expr) => {
        match $s.dtype() {
            DType::F32 => apply2_inplace::<f32>($s, $o, |$a, $b| $k),
            _ => apply2_inplace::<f64>($s, $o, |$a, $b| $k),
        }
    };
}

/// The saves of a table entry, in their fixed slots (self 0, other 1,
/// result 2).
macro_rules! binary_saves {
    (Nothing, $rec:expr, $s:expr, $o:expr) => {
        $rec
    };
    (Inputs, $rec:expr, $s:expr, $o:expr) => {
        $rec.save("self", $s).save("other", $o)
    };
    (InputsResult, $rec:expr, $s:expr, $o:expr) => {
        $rec.save("self", $s)
            .save("other", $o)
            .save_output("result", 0)
    };
}

/// The Python-number form and the aliases of a binary or comparison table
/// entry (in an `impl Tensor`).
macro_rules! binary_forms {
    ($name:ident, $inplace:ident $(, $scalar:ident)? [$($alias:ident, $alias_:ident),*]) => {
        $(
            #[doc = concat!("`", stringify!($name), "` with a Python number (wrapped).")]
            pub fn $scalar(&self, other: impl Into<Scalar>) -> Result<Tensor> {
                self.$name(&self.wrap_scalar(other.into()))
            }
        )?
        $(
            #[doc = concat!("Alias of `", stringify!($name), "`.")]
            pub fn $alias(&self, other: &Tensor) -> Result<Tensor> {
                self.$name(other)
            }
            #[doc = concat!("Alias of `", stringify!($inplace), "`.")]
            pub fn $alias_(&self, other: &Tensor) -> Result<()> {
                self.$inplace(other)
            }
        )*
    };
}

/// The op-table row of a binary or comparison table entry.
macro_rules! binary_row {
    (
        $name:ident $inplace:ident [$($alias:ident)*] $node:literal [$($doc:literal)*] $domain:expr,
        $rule:ident $form:ident [$($dn:ident)*]
    ) => {
        $crate::ops::table::OpRow {
            name: stringify!($name),
            inplace: stringify!($inplace),
            aliases: &[$(stringify!($alias)),*],
            node: $node,
            doc: concat!($($doc, "\n"),*),
            domain: $domain,
            kind: $crate::ops::table::OpKind::Binary($crate::ops::table::DtypeRule::$rule),
            batch: $crate::ops::table::BatchRule::Broadcast,
            form: stringify!($form),
            dunders: &[$(stringify!($dn)),*],
        }
    };
}

/// Makes the Rust ops of a binary table (see the module docs):
/// `Tensor::name`, `Tensor::name_`, `Tensor::name_scalar` and the aliases,
/// and the table's rows (`BINARY_ROWS`, read by `ops::table`).
macro_rules! define_binary_ops {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident, $inplace:ident $(, $scalar:ident)? [$($alias:ident, $alias_:ident),*]: $node:literal,
            $rule:ident($($check:path)?) $($exact:ident)?, |$a:ident, $b:ident| $k:expr, $d1:ident $d2:ident,
            $saves:ident |$g:ident, $x:ident, $y:ident, $r:ident| $dx:expr, $dy:expr;
            py $form:ident [$($dk:ident $dn:ident $(= $df:ident)?),*];
    )*) => {
        impl Tensor {
            $(
                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!("d/dself = `", stringify!($dx), "`; d/dother = `", stringify!($dy), "`")]
                pub fn $name(&self, other: &Tensor) -> Result<Tensor> {
                    crate::autograd::check_history_first(&[self, other])?;
                    $($check(self, other)?;)?
                    let rec = record($node, &[self, other]);
                    let out = $crate::ops::arith::binary_kernel!(
                        $rule,
                        $crate::ops::arith::exact_scalars!($($exact)?),
                        self,
                        other,
                        |$a, $b| $k
                    );
                    $crate::ops::arith::binary_saves!($saves, rec, self, other).finish(out, |c| {
                        let $g = c.grad();
                        let $x = || c.saved(0);
                        let $y = || c.saved(1);
                        let $r = || c.saved(2);
                        let _ = (&$x, &$y, &$r);
                        Ok(vec![c.grad_for(0, || $dx)?, c.grad_for(1, || $dy)?])
                    })
                }
                #[doc = concat!("`", stringify!($name), "` in place.")]
                pub fn $inplace(&self, other: &Tensor) -> Result<()> {
                    $($check(self, other)?;)?
                    let ok = $crate::ops::arith::binary_inplace_ok!($rule, self.dtype());
                    let done = self.try_fast_binary_inplace(stringify!($inplace), other, ok, |s, o| {
                        $crate::ops::arith::binary_kernel_inplace!($rule, s, o, |$a, $b| $k)
                    })?;
                    if done {
                        return Ok(());
                    }
                    self.apply_inplace(stringify!($inplace), &[other], |s| s.$name(other))
                }
                $crate::ops::arith::binary_forms!($name, $inplace $(, $scalar)? [$($alias, $alias_),*]);
            )*
        }

        /// This family's rows of the op table.
        pub(crate) const BINARY_ROWS: &[$crate::ops::table::OpRow] = &[$(
            $crate::ops::arith::binary_row!(
                $name $inplace [$($alias)*] $node [$($doc)*] concat!(stringify!($d1), " ", stringify!($d2)),
                $rule $form [$($dn)*]
            ),
        )*];
    };
}
pub(crate) use {
    binary_forms, binary_inplace_ok, binary_kernel, binary_kernel_inplace, binary_row,
    binary_saves, define_binary_ops, exact_scalars, numeric2,
};

/// torch's refusal of bool operands in `a - b`.
fn sub_check(a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() == DType::Bool && b.dtype() == DType::Bool {
        bail!(runtime, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.");
    }
    if a.dtype() == DType::Bool || b.dtype() == DType::Bool {
        bail!(runtime, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
    }
    Ok(())
}

/// Addition, subtraction, multiplication and true division.
macro_rules! arith_ops {
    ($then:ident) => {
        $then! {
            /// Adds `other` (scaled by `alpha`) to `self`, with broadcasting and promotion.
            add, add_, add_scalar []: "AddBackward0", numeric(), |a, b| a + b, normal normal,
                Nothing |g, _x, _y, _r| Ok(g.clone()), Ok(g.clone());
                py alpha [fwd __add__, rev __radd__, inp __iadd__];
            /// Subtracts `other` (scaled by `alpha`) from `self`, with broadcasting and promotion.
            sub, sub_, sub_scalar []: "SubBackward0", numeric(sub_check), |a, b| a - b, normal normal,
                Nothing |g, _x, _y, _r| Ok(g.clone()), g.neg();
                py alpha [fwd __sub__, rev __rsub__ = rsub_scalar, inp __isub__];
            /// Multiplies `self` by `other`, with broadcasting and promotion.
            mul, mul_, mul_scalar []: "MulBackward0", numeric() exact_scalars, |a, b| a * b, normal normal,
                Inputs |g, x, y, _r| g.mul(&y()?), g.mul(&x()?);
                py plain [fwd __mul__, rev __rmul__, inp __imul__];
            /// Divides `self` by `other` (true division: integers give a float result).
            div, div_, div_scalar [true_divide, true_divide_]: "DivBackward0", float() exact_scalars,
                |a, b| a / b, normal away,
                Inputs |g, x, y, _r| g.div(&y()?), {
                    // torch's -grad * ((self / other) / other): exactly
                    // -grad / other where self == other
                    let y = y()?;
                    g.neg()?.mul(&x()?.div(&y)?.div(&y)?)
                };
                py written [fwd __truediv__, rev __rtruediv__ = rdiv_scalar, inp __itruediv__];
        }
    };
}
#[cfg_attr(not(feature = "python"), allow(unused_imports))]
pub(crate) use arith_ops;

arith_ops!(define_binary_ops);

/// torch's checks of `alpha` in `self ± alpha * other` computed in `dt`: a
/// bool alpha needs a bool result, a float alpha a floating one.
fn alpha_check(dt: DType, alpha: Scalar) -> Result<()> {
    if matches!(alpha, Scalar::Bool(_)) && dt != DType::Bool {
        bail!(runtime, "Boolean alpha only supported for Boolean results.");
    }
    if !dt.is_floating() && matches!(alpha, Scalar::Float(_)) {
        bail!(
            runtime,
            "For integral input tensors, argument alpha must not be a floating point number."
        );
    }
    Ok(())
}

impl Tensor {
    /// `self + alpha * other` (torch's `add(other, alpha=)`): one
    /// AddBackward0 node that saves nothing; d/dother = alpha * grad.
    /// `alpha * other` is computed in the operands' result type.
    pub fn add_alpha(&self, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
        self.alpha_op(other, alpha, false)
    }
    /// `self - alpha * other` (torch's `sub(other, alpha=)`): one
    /// SubBackward0 node that saves nothing; d/dother = -alpha * grad.
    pub fn sub_alpha(&self, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
        self.alpha_op(other, alpha, true)
    }
    /// `add_alpha` in place.
    pub fn add_alpha_(&self, other: &Tensor, alpha: Scalar) -> Result<()> {
        self.alpha_op_(other, alpha, false)
    }
    /// `sub_alpha` in place.
    pub fn sub_alpha_(&self, other: &Tensor, alpha: Scalar) -> Result<()> {
        self.alpha_op_(other, alpha, true)
    }
    /// `op` (`"add"`, `"sub"`, or their in-place names: the result is then
    /// `self`) with `alpha`, for the bindings.
    pub fn with_alpha(&self, op: &str, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
        match op {
            "add" => self.add_alpha(other, alpha),
            "sub" => self.sub_alpha(other, alpha),
            "add_" => self.add_alpha_(other, alpha).map(|()| self.clone()),
            "sub_" => self.sub_alpha_(other, alpha).map(|()| self.clone()),
            _ => bail!(runtime, "{op}() takes no alpha"),
        }
    }

    /// `alpha * other` in the result type of `self` and `other`, after
    /// torch's checks (in its order: the view's history, bool
    /// subtraction, alpha).
    fn alpha_scaled(&self, other: &Tensor, alpha: Scalar, sub: bool) -> Result<Tensor> {
        if sub {
            sub_check(self, other)?;
        }
        let dt = self.result_type(other);
        alpha_check(dt, alpha)?;
        let _g = crate::autograd::no_grad();
        // alpha converted to the result type, as torch's kernel reads it
        let o = other.to_dtype(dt)?;
        o.mul(&Tensor::scalar(alpha, dt))
    }

    fn alpha_op(&self, other: &Tensor, alpha: Scalar, sub: bool) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self, other])?;
        let scaled = self.alpha_scaled(other, alpha, sub)?;
        let out = {
            let _g = crate::autograd::no_grad();
            if sub {
                self.sub(&scaled)?
            } else {
                self.add(&scaled)?
            }
        };
        let (node, k) = if sub {
            ("SubBackward0", -alpha.to_f64())
        } else {
            ("AddBackward0", alpha.to_f64())
        };
        let rec = record(node, &[self, other]).attr("alpha", alpha);
        rec.finish(out, move |c| {
            let g = c.grad();
            Ok(vec![Some(g.clone()), c.grad_for(1, || g.mul_scalar(k))?])
        })
    }

    fn alpha_op_(&self, other: &Tensor, alpha: Scalar, sub: bool) -> Result<()> {
        let scaled = self.alpha_scaled(other, alpha, sub)?;
        self.check_write(&[other])?;
        let recorded = (crate::autograd::is_grad_enabled()
            && (self.requires_grad() || other.requires_grad()))
            || self.has_fw_grad()
            || other.has_fw_grad();
        if !recorded {
            // the scaled operand through the plain in-place op (its fast path)
            return if sub {
                self.sub_(&scaled)
            } else {
                self.add_(&scaled)
            };
        }
        let name = if sub { "sub_" } else { "add_" };
        self.apply_inplace(name, &[other], |s| s.alpha_op(other, alpha, sub))
    }

    /// `number - self`, the number wrapped as a 0-dim tensor (`wrap_scalar`):
    /// torch's `rsub(Tensor, Scalar)`, which `number - tensor` calls
    /// (RsubBackward1, differentiable in `self` only).
    pub fn rsub_scalar(&self, number: &Tensor) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        sub_check(number, self)?;
        let dt = number.result_type(self);
        let (a, b) = (number.cast_raw(dt), self.cast_raw(dt));
        let rec = record("RsubBackward1", &[self]);
        let out = numeric2!(&a, &b, dt, |x, y| x - y)?;
        rec.finish(out, |c| Ok(vec![Some(c.grad().neg()?)]))
    }

    /// `number / self`, the number wrapped as a 0-dim tensor: torch's
    /// `Tensor.__rtruediv__`, `self.reciprocal() * number` (MulBackward0
    /// over ReciprocalBackward0, which saves its result, not self).
    pub fn rdiv_scalar(&self, number: &Tensor) -> Result<Tensor> {
        self.reciprocal()?.mul(number)
    }

    pub fn neg(&self) -> Result<Tensor> {
        let rec = record("NegBackward0", &[self]);
        let out = match self.dtype() {
            DType::F32 => Tensor::from(map1::<f32, f32>(self, |x| -x)),
            DType::F64 => Tensor::from(map1::<f64, f64>(self, |x| -x)),
            DType::F16 => Tensor::from(map1::<half::f16, half::f16>(self, |x| -x)),
            DType::BF16 => Tensor::from(map1::<half::bf16, half::bf16>(self, |x| -x)),
            DType::Bool => bail!(runtime, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."),
            int => crate::dispatch_ints!(int, T => Tensor::from(map1::<T, T>(self, |x| {
                T::from_i64(x.to_i64().wrapping_neg())
            }))),
        };
        rec.finish(out, |c| Ok(vec![Some(c.grad().neg()?)]))
    }
}
