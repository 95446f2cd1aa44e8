//! The element operations of the standard folds (`FoldElem` for the floats,
//! int64 and bool) and the folds themselves: `Sum`, `Prod`, `Extreme`.

use super::*;

/// Element operations the standard folds need.
pub trait FoldElem: Copy + Default + Send + Sync + 'static {
    fn add(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
    /// The larger of the two; NaN wins (and stays).
    fn max_nan(a: Self, b: Self) -> Self;
    /// The smaller of the two; NaN wins (and stays).
    fn min_nan(a: Self, b: Self) -> Self;
    /// [`FoldElem::max_nan`] for an accumulator held in registers (a fold
    /// along a lane): a compare and two selects, where `max_nan`'s form
    /// (safe for accumulators in memory) left the lane folds 6x slower.
    #[inline(always)]
    fn max_acc(acc: Self, x: Self) -> Self {
        Self::max_nan(acc, x)
    }
    /// [`FoldElem::max_acc`] for the minimum.
    #[inline(always)]
    fn min_acc(acc: Self, x: Self) -> Self {
        Self::min_nan(acc, x)
    }
    fn zero() -> Self;
    fn one() -> Self;
    /// The identity of max (-inf, or the type's minimum).
    fn lowest() -> Self;
    fn highest() -> Self;
    /// Whether add, mul, max and min are exact and associative (integers,
    /// bool): any fold order gives the same result, so a lane is folded
    /// by one plain loop (see [`slices::fold_exact`]).
    const EXACT: bool = false;
    /// `f` folded over `x` from `init`: [`slices::fold_exact`] for exact
    /// types, [`slices::fold_wide`]'s fixed partials for floats.
    #[inline(always)]
    fn fold_run<F: Fn(Self, Self) -> Self>(x: &[Self], init: Self, f: &F) -> Self {
        if Self::EXACT {
            slices::fold_exact(x, init, f)
        } else {
            slices::fold_wide(x, init, f)
        }
    }
    /// The NaN-propagating maximum (`max`) or minimum of `x` (the
    /// identity for an empty `x`): [`FoldElem::fold_run`] of
    /// [`FoldElem::max_acc`] / [`FoldElem::min_acc`]; floats take
    /// [`slices::fold_probed`] and fold again only where it saw a NaN or
    /// an infinity.
    #[inline(always)]
    fn fold_extreme(x: &[Self], max: bool) -> Self {
        Self::fold_extreme_exact(x, max)
    }
    /// [`FoldElem::fold_extreme`] by the NaN-propagating fold (the floats'
    /// fallback).
    #[inline(always)]
    fn fold_extreme_exact(x: &[Self], max: bool) -> Self {
        if max {
            Self::fold_run(x, Self::lowest(), &Self::max_acc)
        } else {
            Self::fold_run(x, Self::highest(), &Self::min_acc)
        }
    }
    /// [`FoldElem::fold_extreme`] of each lane of `len` at `x[k * stride..]`.
    fn fold_extreme_lanes(x: &[Self], len: usize, stride: usize, max: bool, out: &mut [Self]) {
        Self::fold_extreme_lanes_exact(x, len, stride, max, out)
    }
    /// [`FoldElem::fold_extreme_lanes`] by the NaN-propagating fold.
    fn fold_extreme_lanes_exact(
        x: &[Self],
        len: usize,
        stride: usize,
        max: bool,
        out: &mut [Self],
    ) {
        if max {
            Self::fold_lanes(x, len, stride, Self::lowest(), &Self::max_acc, out)
        } else {
            Self::fold_lanes(x, len, stride, Self::highest(), &Self::min_acc, out)
        }
    }
    /// [`FoldElem::fold_run`] of each lane of `len` at `x[k * stride..]`.
    #[inline(always)]
    fn fold_lanes<F: Fn(Self, Self) -> Self>(
        x: &[Self],
        len: usize,
        stride: usize,
        init: Self,
        f: &F,
        out: &mut [Self],
    ) {
        if Self::EXACT {
            slices::fold_lanes_exact(x, len, stride, init, f, out)
        } else {
            slices::fold_lanes(x, len, stride, init, f, out)
        }
    }
}

/// Shortest float lane folded by [`slices::fold_probed`] for a max or min:
/// on shorter ones (rows of 64-100 float32) its set-up cost more than the
/// NaN tests it saves (softmax over rows of 64 took 1.5x as long).
const PROBED_MIN: usize = 256;

macro_rules! float_fold_elem {
    ($t:ty) => {
        impl FoldElem for $t {
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self {
                a + b
            }
            #[inline(always)]
            fn mul(a: Self, b: Self) -> Self {
                a * b
            }
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn max_nan(a: Self, b: Self) -> Self {
                // A select between two computed values (never "keep the
                // old value", which compiles to masked stores, slow on
                // Zen); a NaN operand makes `a + b` NaN.
                let m = a.max(b);
                if (a != a) | (b != b) {
                    a + b
                } else {
                    m
                }
            }
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn min_nan(a: Self, b: Self) -> Self {
                let m = a.min(b);
                if (a != a) | (b != b) {
                    a + b
                } else {
                    m
                }
            }
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn max_acc(acc: Self, x: Self) -> Self {
                // `x` when unordered: a NaN `x` is taken, a NaN `acc` kept.
                let m = if acc > x { acc } else { x };
                if acc != acc {
                    acc
                } else {
                    m
                }
            }
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn min_acc(acc: Self, x: Self) -> Self {
                let m = if acc < x { acc } else { x };
                if acc != acc {
                    acc
                } else {
                    m
                }
            }
            #[inline(always)]
            fn fold_extreme(x: &[Self], max: bool) -> Self {
                if x.len() < PROBED_MIN {
                    return Self::fold_extreme_exact(x, max);
                }
                let (r, probe) = if max {
                    slices::fold_probed(x, <$t>::NEG_INFINITY, 0.0, &|a: $t, v| {
                        if a > v {
                            a
                        } else {
                            v
                        }
                    })
                } else {
                    slices::fold_probed(x, <$t>::INFINITY, 0.0, &|a: $t, v| {
                        if a < v {
                            a
                        } else {
                            v
                        }
                    })
                };
                if probe == 0.0 {
                    r
                } else {
                    Self::fold_extreme_exact(x, max)
                }
            }
            fn fold_extreme_lanes(
                x: &[Self],
                len: usize,
                stride: usize,
                max: bool,
                out: &mut [Self],
            ) {
                if len < PROBED_MIN {
                    return Self::fold_extreme_lanes_exact(x, len, stride, max, out);
                }
                let mut folds = vec![(0.0, 0.0); out.len()];
                if max {
                    let pick = |a: $t, v| if a > v { a } else { v };
                    let init = <$t>::NEG_INFINITY;
                    slices::fold_probed_lanes(x, len, stride, init, 0.0, &pick, &mut folds);
                } else {
                    let pick = |a: $t, v| if a < v { a } else { v };
                    let init = <$t>::INFINITY;
                    slices::fold_probed_lanes(x, len, stride, init, 0.0, &pick, &mut folds);
                }
                for (k, (o, &(r, probe))) in out.iter_mut().zip(&folds).enumerate() {
                    *o = if probe == 0.0 {
                        r
                    } else {
                        Self::fold_extreme_exact(&x[k * stride..k * stride + len], max)
                    };
                }
            }
            fn zero() -> Self {
                0.0
            }
            fn one() -> Self {
                1.0
            }
            fn lowest() -> Self {
                <$t>::NEG_INFINITY
            }
            fn highest() -> Self {
                <$t>::INFINITY
            }
        }
    };
}
float_fold_elem!(f32);
float_fold_elem!(f64);

macro_rules! int_fold_elem {
    ($t:ty) => {
        impl FoldElem for $t {
            const EXACT: bool = true;
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
            #[inline(always)]
            fn mul(a: Self, b: Self) -> Self {
                a.wrapping_mul(b)
            }
            #[inline(always)]
            fn max_nan(a: Self, b: Self) -> Self {
                a.max(b)
            }
            #[inline(always)]
            fn min_nan(a: Self, b: Self) -> Self {
                a.min(b)
            }
            fn zero() -> Self {
                0
            }
            fn one() -> Self {
                1
            }
            fn lowest() -> Self {
                <$t>::MIN
            }
            fn highest() -> Self {
                <$t>::MAX
            }
        }
    };
}
int_fold_elem!(i64);
int_fold_elem!(i32);
int_fold_elem!(i16);
int_fold_elem!(i8);
int_fold_elem!(u8);

impl FoldElem for bool {
    const EXACT: bool = true;
    #[inline(always)]
    fn add(a: Self, b: Self) -> Self {
        a | b
    }
    #[inline(always)]
    fn mul(a: Self, b: Self) -> Self {
        a & b
    }
    #[inline(always)]
    fn max_nan(a: Self, b: Self) -> Self {
        a | b
    }
    #[inline(always)]
    fn min_nan(a: Self, b: Self) -> Self {
        a & b
    }
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
    fn lowest() -> Self {
        false
    }
    fn highest() -> Self {
        true
    }
}

/// Sum (any for bool), optionally scaled at the end (a mean).
pub struct Sum<T> {
    pub scale: Option<T>,
}

impl<T: FoldElem> Fold<T> for Sum<T> {
    fn init(&self) -> T {
        T::zero()
    }
    #[inline]
    fn run(&self, acc: T, x: &[T]) -> T {
        T::add(acc, T::fold_run(x, T::zero(), &T::add))
    }
    #[inline]
    fn rows(&self, acc: &mut [T], row: &[T]) {
        slices::update(acc, row, &T::add)
    }
    fn rows_many(&self, acc: &mut [T], x: &[T], stride: usize, n: usize) {
        slices::update_rows(acc, x, stride, n, &T::add)
    }
    fn run_many(&self, x: &[T], len: usize, stride: usize, out: &mut [T]) {
        if !T::EXACT && slices::short_lane(len, std::mem::size_of::<T>()) {
            slices::fold_lanes_short(x, len, stride, 1, T::zero(), &|v| v, &T::add, out)
        } else {
            T::fold_lanes(x, len, stride, T::zero(), &T::add, out)
        }
    }
    #[inline(always)]
    fn finish(&self, acc: T) -> T {
        match self.scale {
            Some(s) => T::mul(acc, s),
            None => acc,
        }
    }
}

/// Product (all for bool).
pub struct Prod;

impl<T: FoldElem> Fold<T> for Prod {
    fn init(&self) -> T {
        T::one()
    }
    #[inline]
    fn run(&self, acc: T, x: &[T]) -> T {
        T::mul(acc, T::fold_run(x, T::one(), &T::mul))
    }
    #[inline]
    fn rows(&self, acc: &mut [T], row: &[T]) {
        slices::update(acc, row, &T::mul)
    }
    fn rows_many(&self, acc: &mut [T], x: &[T], stride: usize, n: usize) {
        slices::update_rows(acc, x, stride, n, &T::mul)
    }
    fn run_many(&self, x: &[T], len: usize, stride: usize, out: &mut [T]) {
        T::fold_lanes(x, len, stride, T::one(), &T::mul, out)
    }
}

/// NaN-propagating maximum (`max: true`) or minimum.
pub struct Extreme {
    pub max: bool,
}

impl<T: FoldElem> Fold<T> for Extreme {
    fn init(&self) -> T {
        if self.max {
            T::lowest()
        } else {
            T::highest()
        }
    }
    #[inline]
    fn run(&self, acc: T, x: &[T]) -> T {
        if self.max {
            T::max_acc(acc, T::fold_extreme(x, true))
        } else {
            T::min_acc(acc, T::fold_extreme(x, false))
        }
    }
    #[inline]
    fn rows(&self, acc: &mut [T], row: &[T]) {
        if self.max {
            slices::update(acc, row, &T::max_nan)
        } else {
            slices::update(acc, row, &T::min_nan)
        }
    }
    fn rows_many(&self, acc: &mut [T], x: &[T], stride: usize, n: usize) {
        if self.max {
            slices::update_rows(acc, x, stride, n, &T::max_nan)
        } else {
            slices::update_rows(acc, x, stride, n, &T::min_nan)
        }
    }
    fn run_many(&self, x: &[T], len: usize, stride: usize, out: &mut [T]) {
        T::fold_extreme_lanes(x, len, stride, self.max, out)
    }
}
