//! Storage: one typed buffer shared by a tensor and all of its views.

use super::dtype::{DType, Element};
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// A buffer of `T`: owned by Rust, or borrowed from a foreign owner (a NumPy
/// array) that is kept alive for as long as the buffer exists.
pub enum Buf<T> {
    Owned(Vec<T>),
    Foreign {
        ptr: NonNull<T>,
        len: usize,
        _owner: Box<dyn Send + Sync>,
    },
}

impl<T> Buf<T> {
    /// Wraps foreign memory.
    ///
    /// # Safety
    /// `ptr` must be aligned for `T` and point at `len` initialised values of
    /// `T` that stay valid, and are not freed, while `owner` is alive. Every
    /// bit pattern found there must be a valid `T`.
    pub unsafe fn foreign(ptr: NonNull<T>, len: usize, owner: Box<dyn Send + Sync>) -> Self {
        Buf::Foreign {
            ptr,
            len,
            _owner: owner,
        }
    }
}

// SAFETY: a foreign buffer is only reachable through the storage's RwLock,
// exactly like the owned Vec; the owner box is itself Send + Sync.
unsafe impl<T: Send> Send for Buf<T> {}
unsafe impl<T: Sync> Sync for Buf<T> {}

impl<T> Deref for Buf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Buf::Owned(v) => v,
            // SAFETY: see `Buf::foreign`: ptr/len describe live, valid memory
            // for as long as `self` (which owns `_owner`) exists.
            Buf::Foreign { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts(ptr.as_ptr(), *len)
            },
        }
    }
}

impl<T> DerefMut for Buf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            Buf::Owned(v) => v,
            // SAFETY: as in `deref`; `&mut self` proves exclusive access
            // through this buffer (the storage's write lock is held).
            Buf::Foreign { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(ptr.as_ptr(), *len)
            },
        }
    }
}

/// The typed data of a storage.
pub enum StorageData {
    Bool(Buf<bool>),
    U8(Buf<u8>),
    I8(Buf<i8>),
    I16(Buf<i16>),
    I32(Buf<i32>),
    I64(Buf<i64>),
    F16(Buf<half::f16>),
    BF16(Buf<half::bf16>),
    F32(Buf<f32>),
    F64(Buf<f64>),
}

/// Runs `$body` with `$b` bound to the typed buffer inside `$data`,
/// whichever element type it holds.
macro_rules! with_buffer {
    ($data:expr, $b:ident => $body:expr) => {
        match $data {
            StorageData::Bool($b) => $body,
            StorageData::U8($b) => $body,
            StorageData::I8($b) => $body,
            StorageData::I16($b) => $body,
            StorageData::I32($b) => $body,
            StorageData::I64($b) => $body,
            StorageData::F16($b) => $body,
            StorageData::BF16($b) => $body,
            StorageData::F32($b) => $body,
            StorageData::F64($b) => $body,
        }
    };
}

impl StorageData {
    pub fn dtype(&self) -> DType {
        match self {
            StorageData::Bool(_) => DType::Bool,
            StorageData::U8(_) => DType::U8,
            StorageData::I8(_) => DType::I8,
            StorageData::I16(_) => DType::I16,
            StorageData::I32(_) => DType::I32,
            StorageData::I64(_) => DType::I64,
            StorageData::F16(_) => DType::F16,
            StorageData::BF16(_) => DType::BF16,
            StorageData::F32(_) => DType::F32,
            StorageData::F64(_) => DType::F64,
        }
    }
    pub fn len(&self) -> usize {
        with_buffer!(self, b => b.len())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// True for memory Rust allocated (not borrowed from NumPy).
    pub fn is_owned(&self) -> bool {
        with_buffer!(self, b => matches!(b, Buf::Owned(_)))
    }
    /// The buffer as `T`. Callers dispatch on the tensor's dtype first, so a
    /// mismatch is a bug in ferrograd.
    pub fn as_slice<T: Element>(&self) -> &[T] {
        T::slice(self).expect("storage dtype mismatch")
    }
    pub fn as_mut_slice<T: Element>(&mut self) -> &mut [T] {
        T::slice_mut(self).expect("storage dtype mismatch")
    }
}

/// Bytes held by `d`, for the profiler's memory accounting.
fn storage_bytes(d: &StorageData) -> i64 {
    (d.len() * d.dtype().itemsize()) as i64
}

/// Where allocations and frees are reported while someone (the profiler)
/// listens: set once, switched on and off by [`observe_memory`].
static MEMORY_OBSERVER: OnceLock<fn(i64)> = OnceLock::new();
static OBSERVING: AtomicBool = AtomicBool::new(false);

/// Reports every storage allocation (+bytes) and free (-bytes) to
/// `observer` while `on`; one observer per process (the first one set).
pub fn observe_memory(observer: fn(i64), on: bool) {
    let _ = MEMORY_OBSERVER.set(observer);
    OBSERVING.store(on, Ordering::Relaxed);
}

fn memory_event(bytes: impl FnOnce() -> i64) {
    if OBSERVING.load(Ordering::Relaxed) {
        if let Some(f) = MEMORY_OBSERVER.get() {
            f(bytes());
        }
    }
}

/// Shared, lockable storage. Readers (kernels) take the read lock; in-place
/// ops take the write lock.
pub struct Storage {
    data: RwLock<StorageData>,
}

impl Storage {
    pub fn new(data: StorageData) -> Self {
        memory_event(|| storage_bytes(&data));
        Storage {
            data: RwLock::new(data),
        }
    }
    pub fn from_vec<T: Element>(v: Vec<T>) -> Self {
        Self::new(T::wrap(v))
    }
    pub fn read(&self) -> RwLockReadGuard<'_, StorageData> {
        self.data.read()
    }
    /// A read lock that may be taken twice by one thread (an op reading the
    /// same storage as both operands).
    pub fn read_recursive(&self) -> RwLockReadGuard<'_, StorageData> {
        self.data.read_recursive()
    }
    pub fn write(&self) -> RwLockWriteGuard<'_, StorageData> {
        self.data.write()
    }
    pub fn dtype(&self) -> DType {
        self.data.read().dtype()
    }
    /// Address of the first element (for `data_ptr()` and aliasing checks).
    pub fn data_ptr(&self) -> usize {
        with_buffer!(&*self.data.read(), b => b.as_ptr() as usize)
    }
}

impl Drop for Storage {
    /// Reports the free to the profiler; big buffers go to the buffer cache
    /// (`super::pool`) for reuse.
    fn drop(&mut self) {
        let data = self.data.get_mut();
        memory_event(|| -storage_bytes(data));
        if super::pool::wants(data) {
            let empty = StorageData::Bool(Buf::Owned(Vec::new()));
            super::pool::give(std::mem::replace(data, empty));
        }
    }
}
