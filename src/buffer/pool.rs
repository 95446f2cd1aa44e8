//! A cache of big freed buffers.
//!
//! A fresh multi-megabyte buffer is mapped by the system allocator and every
//! page of it faults (and is zero-filled by the kernel) on first touch, which
//! costs more than the elementwise kernel that writes it. Eager autograd
//! frees and re-creates buffers of the same sizes every step, so storages of
//! at least [`MIN_BYTES`] return their buffer here when dropped, and kernels
//! that overwrite every element of their output take one back.
//!
//! The cache holds at most `FERROGRAD_BUFFER_CACHE_MB` megabytes (default
//! 512; 0 turns it off), dropping the oldest buffers first;
//! [`empty_cache`] releases everything.

use super::dtype::{DType, Element};
use super::storage::StorageData;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Buffers smaller than this go straight back to the system allocator.
/// (glibc returns freed blocks of a few hundred KiB at the top of its heap
/// to the system, so even they fault again when reallocated; and a reused
/// block below that is zeroed again by `calloc`: a 100x100 float32 add
/// spent 6% of its time in that memset.)
pub const MIN_BYTES: usize = 16 << 10;

#[derive(Default)]
struct Cache {
    /// Freed buffers by (dtype, length), most recent last, each stamped with
    /// the order it came in (for evicting the oldest first).
    bufs: HashMap<(DType, usize), Vec<(u64, StorageData)>>,
    bytes: usize,
    stamp: u64,
}

impl Cache {
    /// Drops the oldest buffer; false when the cache is empty.
    fn evict_oldest(&mut self, into: &mut Vec<StorageData>) -> bool {
        let Some(key) = self
            .bufs
            .iter()
            .filter_map(|(k, v)| v.first().map(|(s, _)| (*s, *k)))
            .min()
            .map(|(_, k)| k)
        else {
            return false;
        };
        let list = self.bufs.get_mut(&key).expect("key just found");
        let (_, d) = list.remove(0);
        if list.is_empty() {
            self.bufs.remove(&key);
        }
        self.bytes -= nbytes(&d);
        into.push(d);
        true
    }
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

fn limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var("FERROGRAD_BUFFER_CACHE_MB")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(512)
            .saturating_mul(1 << 20)
    })
}

fn nbytes(d: &StorageData) -> usize {
    d.len() * d.dtype().itemsize()
}

/// True when a dropped storage's buffer should come here.
pub(crate) fn wants(d: &StorageData) -> bool {
    d.is_owned() && nbytes(d) >= MIN_BYTES && nbytes(d) <= limit()
}

/// Keeps a freed buffer (see [`wants`]) for reuse.
pub(crate) fn give(d: StorageData) {
    let mut evicted = Vec::new();
    {
        let mut guard = CACHE.lock();
        let c = guard.get_or_insert_with(Cache::default);
        c.bytes += nbytes(&d);
        c.stamp += 1;
        let stamp = c.stamp;
        c.bufs
            .entry((d.dtype(), d.len()))
            .or_default()
            .push((stamp, d));
        while c.bytes > limit() && c.evict_oldest(&mut evicted) {}
    }
    drop(evicted); // freed outside the lock
}

/// Returns a scratch buffer (from [`try_buffer`]) for reuse, as a dropped
/// storage's buffer would be.
pub fn recycle<T: Element>(v: Vec<T>) {
    let d = T::wrap(v);
    if wants(&d) {
        give(d);
    }
}

/// A cached buffer of exactly `n` elements of `T`, the most recently freed.
fn take_cached<T: Element>(n: usize) -> Option<Vec<T>> {
    if n * std::mem::size_of::<T>() < MIN_BYTES {
        return None;
    }
    let mut guard = CACHE.lock();
    let c = guard.as_mut()?;
    let key = (T::DTYPE, n);
    let list = c.bufs.get_mut(&key)?;
    let (_, d) = list.pop()?;
    if list.is_empty() {
        c.bufs.remove(&key);
    }
    c.bytes -= nbytes(&d);
    drop(guard);
    T::into_vec(d).ok()
}

/// A buffer of exactly `n` initialised elements whose values are
/// unspecified: for kernels that overwrite every element. An allocation
/// the system refuses panics with torch's message (an error the caller can
/// see, never an abort); [`try_buffer`] returns it instead.
pub fn buffer<T: Element>(n: usize) -> Vec<T> {
    or_panic(try_buffer(n))
}

/// The value of a fallible allocation (`try_buffer` or a kernel built on
/// it) in code that cannot return an error: a refused allocation panics
/// with torch's message (Python sees `PanicException`, never an abort).
pub fn or_panic<T>(r: crate::Result<T>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

/// [`buffer`], failing with torch's out-of-memory error (RuntimeError)
/// when the system refuses the allocation.
pub fn try_buffer<T: Element>(n: usize) -> crate::Result<Vec<T>> {
    if let Some(v) = take_cached::<T>(n) {
        return Ok(v);
    }
    let v = zeroed_vec::<T>(n)?;
    advise_huge_pages(v.as_ptr().cast(), std::mem::size_of_val(&v[..]));
    Ok(v)
}

/// torch's message for an allocation the system refused.
pub(crate) fn alloc_error(bytes: usize) -> crate::Error {
    crate::Error::runtime(format!(
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate {bytes} bytes. Error code 12 (Cannot allocate memory)"
    ))
}

/// `n` zeros from `alloc_zeroed` (calloc: fresh pages stay untouched until
/// written), or the out-of-memory error where `vec![zero; n]` would abort.
fn zeroed_vec<T: Element>(n: usize) -> crate::Result<Vec<T>> {
    let bytes = n.saturating_mul(std::mem::size_of::<T>());
    let layout = std::alloc::Layout::array::<T>(n).map_err(|_| alloc_error(bytes))?;
    if layout.size() == 0 {
        return Ok(vec![T::zero(); n]);
    }
    // SAFETY: `layout` has a non-zero size (checked above).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return Err(alloc_error(bytes));
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout
    // of `[T; n]` (so capacity `n` and `T`'s alignment), and all its bytes
    // are zero, which is a valid value of every element type (bool false,
    // integer 0, float +0.0), so all `n` elements are initialised.
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// An empty vector with room for `n` elements (for `extend` and
/// `collect_into_vec`). Panics with torch's message when the system
/// refuses the allocation.
pub fn with_capacity<T: Element>(n: usize) -> Vec<T> {
    match take_cached::<T>(n) {
        Some(mut v) => {
            v.clear();
            v
        }
        None => {
            let mut v: Vec<T> = Vec::new();
            if v.try_reserve_exact(n).is_err() {
                panic!(
                    "{}",
                    alloc_error(n.saturating_mul(std::mem::size_of::<T>()))
                );
            }
            advise_huge_pages(v.as_ptr().cast(), n * std::mem::size_of::<T>());
            v
        }
    }
}

/// Fresh buffers of at least this many bytes ask for huge pages (NumPy's
/// threshold for the same request).
const HUGE_PAGES_MIN_BYTES: usize = 4 << 20;

/// Asks Linux to back the 2 MiB-aligned inside of a fresh, untouched
/// allocation with transparent huge pages, as NumPy does for its big
/// arrays: a kernel streaming through tens of megabytes then misses the TLB
/// far less (measured: 4-15% faster `a * b` on 10M float32 with 2 threads).
/// Where the kernel does not do huge pages this changes nothing.
fn advise_huge_pages(ptr: *const u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    if bytes >= HUGE_PAGES_MIN_BYTES {
        const HUGE: usize = 2 << 20;
        let start = (ptr as usize).next_multiple_of(HUGE);
        let end = (ptr as usize + bytes) / HUGE * HUGE;
        if end > start {
            // SAFETY: [start, end) lies inside one live allocation of ours;
            // MADV_HUGEPAGE only changes how the kernel backs those pages,
            // never their contents or validity. The result is ignored: a
            // kernel without transparent huge pages keeps small ones.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, bytes);
}

/// Releases every cached buffer.
pub fn empty_cache() {
    let cache = CACHE.lock().take();
    drop(cache);
}

/// Bytes currently held by the cache.
pub fn cached_bytes() -> usize {
    CACHE.lock().as_ref().map_or(0, |c| c.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_a_freed_buffer_of_the_same_size() {
        let n = (MIN_BYTES / 4) * 3;
        let v: Vec<f32> = vec![1.5; n];
        let ptr = v.as_ptr();
        drop(super::super::Storage::from_vec(v));
        let again = buffer::<f32>(n);
        assert_eq!(again.len(), n);
        // Another test may have taken it in between; only then is it new.
        if again.as_ptr() == ptr {
            assert!(again.iter().all(|&x| x == 1.5));
        }
        let small = buffer::<f64>(16);
        assert_eq!(small, vec![0.0; 16]);
    }

    #[test]
    #[cfg_attr(miri, ignore)] // madvise (huge pages) is a foreign call Miri cannot run
    fn fresh_big_buffers_are_usable() {
        // Past the huge-page threshold, and an odd length so the buffer
        // does not end on a 2 MiB boundary. (Whether the kernel grants huge
        // pages depends on the machine; only the contents are checked.) No
        // other test frees a buffer of this length, so this one is fresh.
        let n = HUGE_PAGES_MIN_BYTES / 8 * 3 + 13;
        let mut v = buffer::<f64>(n);
        assert!(v.len() == n && v.iter().all(|&x| x == 0.0));
        v[n - 1] = 2.0;
        assert_eq!(v[n - 1], 2.0);
        let mut w = with_capacity::<f32>(n);
        w.extend((0..n).map(|i| i as f32));
        assert_eq!((w.len(), w[n - 1]), (n, (n - 1) as f32));
    }
}
