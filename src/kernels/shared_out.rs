//! The one pointer through which several threads write one output buffer.

/// An output buffer written by several threads at once, each element by
/// one unit of work only.
///
/// Every kernel that splits its output over threads goes through this type,
/// so the crate's parallel writes rest on one invariant, stated here: the
/// units of work of one call partition the elements they write (no element
/// is written by two units, none is read by another unit while written),
/// and every offset written lies inside the buffer the pointer was taken
/// from, which outlives the call.
#[derive(Clone, Copy)]
pub(crate) struct SharedOut<T>(*mut T);

// SAFETY: see the type's invariant: units write disjoint elements, and
// T: Send makes handing those elements to another thread sound.
unsafe impl<T: Send> Send for SharedOut<T> {}
unsafe impl<T: Send> Sync for SharedOut<T> {}

impl<T> SharedOut<T> {
    /// The buffer `buf`, to be split between units of work.
    #[inline(always)]
    pub(crate) fn new(buf: &mut [T]) -> Self {
        SharedOut(buf.as_mut_ptr())
    }

    /// The raw pointer, for kernels that index it themselves (under the
    /// same invariant).
    #[inline(always)]
    pub(crate) fn ptr(self) -> *mut T {
        self.0
    }

    /// The elements `off..off + len` as a slice.
    ///
    /// # Safety
    /// The range is inside the buffer and owned by the caller's unit of
    /// work while the slice lives.
    #[inline(always)]
    pub(crate) unsafe fn run<'a>(self, off: usize, len: usize) -> &'a mut [T] {
        std::slice::from_raw_parts_mut(self.0.add(off), len)
    }

    /// Element `off`.
    ///
    /// # Safety
    /// As [`SharedOut::run`], for one element.
    #[inline(always)]
    pub(crate) unsafe fn at<'a>(self, off: usize) -> &'a mut T {
        &mut *self.0.add(off)
    }

    /// Writes `v` at `off`.
    ///
    /// # Safety
    /// As [`SharedOut::run`], for one element.
    #[inline(always)]
    pub(crate) unsafe fn write(self, off: usize, v: T) {
        *self.0.add(off) = v
    }
}
