//! Comparisons, logical and bitwise ops, closeness checks and
//! classification (isnan, isinf, isfinite): bool or integer outputs, not
//! differentiable. The comparison table (`compare_ops!`) declares each
//! binary op once: its kernel, its in-place twin and its registry row.

use crate::kernels::binary::{int_map2_to, map2};
use crate::kernels::unary::map1;
use crate::tensor::{DType, Float, Scalar, Tensor};
use crate::{bail, dispatch_all, Result};

/// A comparison table's kernel: `compare` in the promoted dtype (bool
/// out), `logical` on truth values (nonzero, NaN is true), `bitwise` on
/// bool and int64 only (floats are torch's "not implemented" with the
/// kernel's name).
macro_rules! compare_kernel {
    (compare(), $s:expr, $o:expr, |$a:ident, $b:ident| $k:expr) => {{
        let dt = $s.result_type($o);
        let (a, b) = ($s.cast_raw(dt), $o.cast_raw(dt));
        dispatch_all!(dt, T => map2::<T, bool>(&a, &b, |$a: T, $b: T| $k).map(Tensor::from))
    }};
    (logical(), $s:expr, $o:expr, |$a:ident, $b:ident| $k:expr) => {{
        let (a, b) = ($s.cast_raw(DType::Bool), $o.cast_raw(DType::Bool));
        map2::<bool, bool>(&a, &b, |$a, $b| $k).map(Tensor::from)
    }};
    (bitwise($kname:literal), $s:expr, $o:expr, |$a:ident, $b:ident| $k:expr) => {{
        let dt = $s.result_type($o);
        let (a, b) = ($s.cast_raw(dt), $o.cast_raw(dt));
        match dt {
            DType::Bool => map2::<bool, bool>(&a, &b, |$a, $b| $k).map(Tensor::from),
            int if int.is_integral() => $crate::dispatch_ints!(int, T => map2::<T, T>(&a, &b, |$a, $b| $k).map(Tensor::from)),
            _ => bail!(not_implemented, "\"{}\" not implemented for '{}'", $kname, dt.scalar_type_name()),
        }
    }};
}

/// The dtype of a comparison table op's result.
macro_rules! compare_dtype {
    (bitwise($kname:literal), $s:expr, $o:expr) => {
        $s.result_type($o)
    };
    ($rule:ident(), $s:expr, $o:expr) => {
        DType::Bool
    };
}

/// Makes the Rust ops of a comparison table: as `ops::arith`'s binary
/// tables, without a derivative (bool or integer results record nothing),
/// the rule `compare()`, `logical()` or `bitwise("kernel_cpu")`. The
/// in-place twin keeps self's dtype (holding 0/1 for a comparison).
macro_rules! define_compare_ops {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident, $inplace:ident $(, $scalar:ident)? [$($alias:ident, $alias_:ident),*]:
            $rule:ident($($kname:literal)?), |$a:ident, $b:ident| $k:expr;
            py $form:ident [$($dk:ident $dn:ident $(= $df:ident)?),*];
    )*) => {
        impl Tensor {
            $(
                $(#[doc = $doc])*
                #[allow(clippy::bool_comparison)] // instantiated for bool too
                pub fn $name(&self, other: &Tensor) -> Result<Tensor> {
                    compare_kernel!($rule($($kname)?), self, other, |$a, $b| $k)
                }
                #[doc = concat!("`", stringify!($name), "` in place: self keeps its dtype.")]
                pub fn $inplace(&self, other: &Tensor) -> Result<()> {
                    // torch refuses a result dtype self cannot hold first.
                    let dt = compare_dtype!($rule($($kname)?), self, other);
                    crate::kernels::copy::check_can_cast(dt, self.dtype())?;
                    self.apply_inplace(stringify!($inplace), &[other], |s| s.$name(other))
                }
                $crate::ops::arith::binary_forms!($name, $inplace $(, $scalar)? [$($alias, $alias_),*]);
            )*
        }

        /// This family's rows of the op table.
        pub(crate) const COMPARE_ROWS: &[$crate::ops::table::OpRow] = &[$(
            $crate::ops::arith::binary_row!(
                $name $inplace [$($alias)*] "" [$($doc)*] "normal normal", $rule $form [$($dn)*]
            ),
        )*];
    };
}

/// Comparisons, logical and bitwise ops (see `define_compare_ops!`; `py
/// first`: the module function's first operand must be a tensor, `py
/// tensor`: both; the
/// dunder kind `fwd_np`: `==` also compares with a NumPy array).
macro_rules! compare_ops {
    ($then:ident) => {
        $then! {
            /// `self == other`, elementwise (bool).
            eq, eq_, eq_scalar []: compare(), |x, y| x == y;
                py first [fwd_np __eq__];
            /// `self != other`, elementwise (bool; true for NaN).
            ne, ne_, ne_scalar [not_equal, not_equal_]: compare(), |x, y| x != y;
                py first [fwd __ne__];
            /// `self < other`, elementwise (bool).
            lt, lt_, lt_scalar [less, less_]: compare(), |x, y| x < y;
                py first [fwd __lt__];
            /// `self <= other`, elementwise (bool).
            le, le_, le_scalar [less_equal, less_equal_]: compare(), |x, y| x <= y;
                py first [fwd __le__];
            /// `self > other`, elementwise (bool).
            gt, gt_, gt_scalar [greater, greater_]: compare(), |x, y| x > y;
                py first [fwd __gt__];
            /// `self >= other`, elementwise (bool).
            ge, ge_, ge_scalar [greater_equal, greater_equal_]: compare(), |x, y| x >= y;
                py first [fwd __ge__];
            /// Elementwise logical AND of the operands' truth values (bool).
            logical_and, logical_and_ []: logical(), |x, y| x & y;
                py tensor [];
            /// Elementwise logical OR of the operands' truth values (bool).
            logical_or, logical_or_ []: logical(), |x, y| x | y;
                py tensor [];
            /// Elementwise logical XOR of the operands' truth values (bool).
            logical_xor, logical_xor_ []: logical(), |x, y| x ^ y;
                py tensor [];
            /// Elementwise bitwise AND of integer or bool tensors.
            bitwise_and, bitwise_and_ []: bitwise("bitwise_and_cpu"), |x, y| x & y;
                py first [fwd __and__, rev __rand__, inp __iand__];
            /// Elementwise bitwise OR of integer or bool tensors.
            bitwise_or, bitwise_or_ []: bitwise("bitwise_or_cpu"), |x, y| x | y;
                py first [fwd __or__, rev __ror__, inp __ior__];
            /// Elementwise bitwise XOR of integer or bool tensors.
            bitwise_xor, bitwise_xor_ []: bitwise("bitwise_xor_cpu"), |x, y| x ^ y;
                py first [fwd __xor__, rev __rxor__, inp __ixor__];
        }
    };
}
#[cfg_attr(not(feature = "python"), allow(unused_imports))]
pub(crate) use compare_ops;

compare_ops!(define_compare_ops);

impl Tensor {
    /// torch.isclose: `self == other`, or both NaN with `equal_nan`, or a
    /// finite `|self - other| <= atol + |rtol * other|`, in the operands'
    /// dtype as torch computes it (int64's bound in float32, bool as
    /// float32). Both of one dtype; broadcast; bool output.
    pub fn isclose(&self, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<Tensor> {
        if self.dtype() != other.dtype() {
            bail!(
                runtime,
                "{} did not match {}",
                self.dtype().scalar_type_name(),
                other.dtype().scalar_type_name()
            );
        }
        for (name, v) in [("rtol", rtol), ("atol", atol)] {
            if v.is_nan() || v < 0.0 {
                bail!(
                    runtime,
                    "{name} must be greater than or equal to zero, but got {}",
                    crate::error::cpp_double(v)
                );
            }
        }
        // Zero tolerances leave only equality, as in torch.
        let tol = rtol != 0.0 || atol != 0.0;
        fn close<T: Float>(x: T, y: T, rtol: T, atol: T, equal_nan: bool, tol: bool) -> bool {
            if x == y || (equal_nan && x.is_nan() && y.is_nan()) {
                return true;
            }
            let err = (x - y).abs();
            tol && err.is_finite() && err <= atol + (rtol * y).abs()
        }
        let (r32, a32) = (rtol as f32, atol as f32);
        match self.dtype() {
            DType::F32 => map2::<f32, bool>(self, other, move |x, y| {
                close(x, y, r32, a32, equal_nan, tol)
            })
            .map(Tensor::from),
            DType::F64 => map2::<f64, bool>(self, other, move |x, y| {
                close(x, y, rtol, atol, equal_nan, tol)
            })
            .map(Tensor::from),
            DType::Bool => map2::<bool, bool>(self, other, move |x, y| {
                let f = |b: bool| if b { 1f32 } else { 0.0 };
                close(f(x), f(y), r32, a32, equal_nan, tol)
            })
            .map(Tensor::from),
            _ => int_map2_to::<bool>(self, other, move |x, y| {
                let err = x.wrapping_sub(y).wrapping_abs() as f32;
                x == y || (tol && err <= a32 + (r32 * y as f32).abs())
            })
            .map(Tensor::from),
        }
    }

    /// torch.allclose: every element [`Tensor::isclose`].
    pub fn allclose(&self, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<bool> {
        let close = self.isclose(other, rtol, atol, equal_nan)?;
        Ok(matches!(
            close.all(None, false)?.item()?,
            Scalar::Bool(true)
        ))
    }

    /// torch.equal: the same shape and equal elements (compared in the
    /// promoted dtype; NaN is never equal).
    pub fn equal(&self, other: &Tensor) -> Result<bool> {
        if self.shape() != other.shape() {
            return Ok(false);
        }
        Ok(matches!(
            self.eq(other)?.all(None, false)?.item()?,
            Scalar::Bool(true)
        ))
    }
}

impl Tensor {
    pub fn logical_not(&self) -> Result<Tensor> {
        Ok(Tensor::from(map1::<bool, bool>(
            &self.cast_raw(DType::Bool),
            |v| !v,
        )))
    }
    pub fn logical_not_(&self) -> Result<()> {
        self.apply_inplace("logical_not_", &[], |s| s.logical_not())
    }
    /// `~self`: logical not for bool, two's complement not for integers.
    pub fn bitwise_not(&self) -> Result<Tensor> {
        match self.dtype() {
            DType::Bool => Ok(Tensor::from(map1::<bool, bool>(self, |v| !v))),
            int if int.is_integral() => {
                crate::dispatch_ints!(int, T => Ok(Tensor::from(map1::<T, T>(self, |v| !v))))
            }
            dt => bail!(
                not_implemented,
                "\"bitwise_not_cpu\" not implemented for '{}'",
                dt.scalar_type_name()
            ),
        }
    }
    pub fn bitwise_not_(&self) -> Result<()> {
        self.apply_inplace("bitwise_not_", &[], |s| s.bitwise_not())
    }
    pub fn isnan(&self) -> Result<Tensor> {
        Ok(match self.dtype() {
            DType::F32 => Tensor::from(map1::<f32, bool>(self, |v| v.is_nan())),
            DType::F64 => Tensor::from(map1::<f64, bool>(self, |v| v.is_nan())),
            DType::F16 => Tensor::from(map1::<half::f16, bool>(self, |v| v.is_nan())),
            DType::BF16 => Tensor::from(map1::<half::bf16, bool>(self, |v| v.is_nan())),
            _ => Tensor::full(self.shape(), Scalar::Bool(false), DType::Bool),
        })
    }
    pub fn isinf(&self) -> Result<Tensor> {
        Ok(match self.dtype() {
            DType::F32 => Tensor::from(map1::<f32, bool>(self, |v| v.is_infinite())),
            DType::F64 => Tensor::from(map1::<f64, bool>(self, |v| v.is_infinite())),
            DType::F16 => Tensor::from(map1::<half::f16, bool>(self, |v| v.is_infinite())),
            DType::BF16 => Tensor::from(map1::<half::bf16, bool>(self, |v| v.is_infinite())),
            _ => Tensor::full(self.shape(), Scalar::Bool(false), DType::Bool),
        })
    }
    pub fn isfinite(&self) -> Result<Tensor> {
        Ok(match self.dtype() {
            DType::F32 => Tensor::from(map1::<f32, bool>(self, |v| v.is_finite())),
            DType::F64 => Tensor::from(map1::<f64, bool>(self, |v| v.is_finite())),
            DType::F16 => Tensor::from(map1::<half::f16, bool>(self, |v| v.is_finite())),
            DType::BF16 => Tensor::from(map1::<half::bf16, bool>(self, |v| v.is_finite())),
            _ => Tensor::full(self.shape(), Scalar::Bool(true), DType::Bool),
        })
    }
}
