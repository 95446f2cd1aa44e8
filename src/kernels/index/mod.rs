//! Gather / scatter loops for the indexing ops. No autograd here: the ops in
//! `src/ops/index/` validate arguments, call these, and record history.
//!
//! Every kernel validates all of its indices before it writes anything, so a
//! bad index leaves the destination untouched, and reads its value operands
//! into a buffer before it takes the destination's write lock (a value may
//! alias the destination).
//!
//! The files: this one holds what they share (the [`Accumulate`] addition,
//! its dtype dispatch, [`wrap_index`]) and the masked kernels
//! ([`masked_fill`], [`logical_not`]); `nonzero.rs` finds the true elements
//! of a mask ([`nonzero`], [`nonzero_rows`]); `advanced.rs` is advanced
//! indexing and index_select's backward ([`AdvPlan`], [`index_gather`],
//! [`index_gather_as`], [`index_scatter`], [`index_add_new`]); `gather.rs` and `scatter.rs` are
//! torch's [`gather`] and [`scatter`] along one dim, with the argument
//! checks they share in `checks.rs`.

use super::copy::{expanded, to_vec_as};
use super::elementwise::update;
use super::PAR_THRESHOLD;
use crate::buffer::{Element, StorageData, Strided};
use crate::{bail, Result};

/// Addition for accumulating kernels (wrapping for int64, `or` for bool).
pub trait Accumulate: Element {
    fn acc(self, other: Self) -> Self;
}
impl Accumulate for f32 {
    #[inline(always)]
    fn acc(self, o: Self) -> Self {
        self + o
    }
}
impl Accumulate for f64 {
    #[inline(always)]
    fn acc(self, o: Self) -> Self {
        self + o
    }
}
macro_rules! int_accumulate {
    ($($t:ty),*) => {
        $(impl Accumulate for $t {
            #[inline(always)]
            fn acc(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
        })*
    };
}
int_accumulate!(u8, i8, i16, i32, i64);
// float16/bfloat16 add in float32 and round each sum, as torch's
// accumulating index kernels do.
impl Accumulate for half::f16 {
    #[inline(always)]
    fn acc(self, o: Self) -> Self {
        self + o
    }
}
impl Accumulate for half::bf16 {
    #[inline(always)]
    fn acc(self, o: Self) -> Self {
        self + o
    }
}
impl Accumulate for bool {
    #[inline(always)]
    fn acc(self, o: Self) -> Self {
        self || o
    }
}

/// Dispatches on any dtype with `$T: Accumulate`.
macro_rules! dispatch_acc {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::dispatch_all!($dtype, $T => $body)
    };
}

/// `i` wrapped into `0..size` (negative counts from the end), or torch's
/// IndexError for dimension `dim`.
#[inline]
pub fn wrap_index(i: i64, size: usize, dim: usize) -> Result<usize> {
    let s = size as i64;
    if i < -s || i >= s {
        bail!(
            index,
            "index {} is out of bounds for dimension {} with size {}",
            i,
            dim,
            size
        );
    }
    Ok(if i < 0 { (i + s) as usize } else { i as usize })
}

mod advanced;
mod checks;
mod gather;
mod nonzero;
mod scatter;

pub use advanced::{index_add_new, index_gather, index_gather_as, index_scatter, AdvPlan};
pub use gather::gather;
pub use nonzero::{nonzero, nonzero_rows};
pub use scatter::{scatter, ScatterSrc};

/// Elements of gather's output per unit of work.
const GATHER_UNIT: usize = 1 << 14;

/// Writes `value` into `dst` wherever `mask` (bool, broadcast to `dst`'s
/// shape) is true. Does not bump versions.
pub fn masked_fill(dst: &Strided, mask: &Strided, value: crate::buffer::Scalar) -> Result<()> {
    if mask.dtype() != crate::buffer::DType::Bool {
        bail!(
            runtime,
            "masked_fill: the mask must be bool, got {}",
            mask.dtype().name()
        );
    }
    let mask = expanded(mask, dst.shape())?;
    fn go<T: Element>(dst: &Strided, mask: &Strided, x: T) -> Result<()> {
        let fill = move |v: T, m: bool| if m { x } else { v };
        if super::overlap::has_internal_overlap(dst.layout()) {
            // torch lets masked_fill_ write an expanded tensor (deprecated):
            // one thread, element by element, as every repeat of an element
            // is written through the same location.
            let m = to_vec_as::<bool>(mask)?;
            let mut st = dst.storage().write();
            let d = st.as_mut_slice::<T>();
            let l = dst.layout();
            let mut k = 0;
            crate::buffer::layout::for_each_offset(&l.shape, &l.strides, l.offset, |o| {
                d[o] = fill(d[o], m[k]);
                k += 1;
            });
            return Ok(());
        }
        if std::sync::Arc::ptr_eq(dst.storage(), mask.storage()) {
            // The mask is (a view of) dst itself: read it first.
            let m = to_vec_as::<bool>(mask)?;
            let lm = crate::buffer::Layout::contiguous(mask.shape());
            let mut st = dst.storage().write();
            return update(
                st.as_mut_slice::<T>(),
                dst.layout(),
                &m,
                &lm,
                PAR_THRESHOLD,
                &fill,
            );
        }
        let m = mask.storage().read_recursive();
        let mut st = dst.storage().write();
        update(
            st.as_mut_slice::<T>(),
            dst.layout(),
            m.as_slice::<bool>(),
            mask.layout(),
            PAR_THRESHOLD,
            &fill,
        )
    }
    crate::dispatch_all!(dst.dtype(), T => go::<T>(dst, &mask, value.cast::<T>()))
}

/// `!mask` for a bool tensor, contiguous.
pub fn logical_not(mask: &Strided) -> Strided {
    let v: Vec<bool> = crate::buffer::pool::or_panic(to_vec_as::<bool>(mask))
        .into_iter()
        .map(|b| !b)
        .collect();
    Strided::contiguous(
        StorageData::Bool(crate::buffer::storage::Buf::Owned(v)),
        mask.shape(),
    )
}
