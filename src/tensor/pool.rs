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

use super::dtype::Element;
use super::storage::StorageData;
use parking_lot::Mutex;
use std::sync::OnceLock;

/// Buffers smaller than this go straight back to the system allocator.
pub const MIN_BYTES: usize = 1 << 20;

struct Cache {
    /// Oldest first. Each holds initialised elements (`len` of them).
    bufs: Vec<StorageData>,
    bytes: usize,
}

static CACHE: Mutex<Cache> = Mutex::new(Cache {
    bufs: Vec::new(),
    bytes: 0,
});

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
        let mut c = CACHE.lock();
        c.bytes += nbytes(&d);
        c.bufs.push(d);
        while c.bytes > limit() {
            let old = c.bufs.remove(0);
            c.bytes -= nbytes(&old);
            evicted.push(old);
        }
    }
    drop(evicted); // unmapped outside the lock
}

/// A cached buffer of `T` with at least `n` elements (and not much more),
/// the most recently freed first.
fn take_cached<T: Element>(n: usize) -> Option<Vec<T>> {
    if n * std::mem::size_of::<T>() < MIN_BYTES {
        return None;
    }
    let mut c = CACHE.lock();
    let i = c
        .bufs
        .iter()
        .rposition(|d| d.dtype() == T::DTYPE && d.len() >= n && d.len() - n <= n / 8)?;
    let d = c.bufs.remove(i);
    c.bytes -= nbytes(&d);
    drop(c);
    T::into_vec(d).ok()
}

/// A buffer of exactly `n` initialised elements whose values are
/// unspecified: for kernels that overwrite every element.
pub fn buffer<T: Element>(n: usize) -> Vec<T> {
    match take_cached::<T>(n) {
        Some(mut v) => {
            v.truncate(n);
            v
        }
        None => vec![T::zero(); n],
    }
}

/// An empty vector with room for `n` elements (for `extend` and
/// `collect_into_vec`).
pub fn with_capacity<T: Element>(n: usize) -> Vec<T> {
    match take_cached::<T>(n) {
        Some(mut v) => {
            v.clear();
            v
        }
        None => Vec::with_capacity(n),
    }
}

/// Releases every cached buffer.
pub fn empty_cache() {
    let bufs = {
        let mut c = CACHE.lock();
        c.bytes = 0;
        std::mem::take(&mut c.bufs)
    };
    drop(bufs);
}

/// Bytes currently held by the cache.
pub fn cached_bytes() -> usize {
    CACHE.lock().bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_a_freed_buffer_of_the_same_size() {
        let n = (MIN_BYTES / 4) * 3;
        let v: Vec<f32> = vec![1.5; n];
        let ptr = v.as_ptr();
        drop(crate::tensor::Tensor::from_vec(v, &[n]).unwrap());
        let again = buffer::<f32>(n);
        assert_eq!(again.len(), n);
        // Another test may have taken it in between; only then is it new.
        if again.as_ptr() == ptr {
            assert!(again.iter().all(|&x| x == 1.5));
        }
        let small = buffer::<f64>(16);
        assert_eq!(small, vec![0.0; 16]);
    }
}
