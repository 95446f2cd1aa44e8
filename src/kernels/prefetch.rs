//! Memory the next kernels on this thread will read, brought into cache
//! while the current one computes.
//!
//! The backward engine knows which saved tensors the nodes after the
//! running one will read: in a chain of matmuls, weights and activations
//! saved in the forward, long evicted to memory. It queues their bytes with
//! [`Ahead::new`]; the float32 GEMM's micro-kernel, which is bound by
//! arithmetic, prefetches a few queued lines per tile ([`Cursor`]), so the
//! next matmul finds its operands in cache instead of waiting on memory in
//! its packing loops, which do nothing else meanwhile.
//!
//! A queued address is only ever prefetched, never dereferenced: a prefetch
//! does not fault, so a range freed or reused meanwhile costs nothing but
//! wasted lines.

use std::cell::RefCell;

/// Most ranges queued at once (further ones are dropped).
const MAX_RANGES: usize = 8;

/// Byte ranges to prefetch, in order, and how far that has got.
#[derive(Default)]
struct Queue {
    ranges: Vec<(usize, usize)>,
    /// The range being prefetched and the next address in it.
    current: usize,
    next: usize,
}

thread_local! {
    static QUEUE: RefCell<Queue> = RefCell::new(Queue::default());
}

/// Queues byte ranges `[start, end)` for this thread's kernels while it
/// lives (replacing what was queued); dropping it empties the queue.
pub struct Ahead(());

impl Ahead {
    pub fn new(ranges: impl IntoIterator<Item = (usize, usize)>) -> Ahead {
        let _ = QUEUE.try_with(|q| {
            if let Ok(mut q) = q.try_borrow_mut() {
                q.ranges.clear();
                let ranges = ranges.into_iter().filter(|(s, e)| e > s);
                q.ranges.extend(ranges.take(MAX_RANGES));
                q.current = 0;
                q.next = q.ranges.first().map_or(0, |r| r.0);
            }
        });
        Ahead(())
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        let _ = QUEUE.try_with(|q| {
            if let Ok(mut q) = q.try_borrow_mut() {
                q.ranges.clear();
            }
        });
    }
}

/// The queue, taken out of its thread-local for a kernel's loop (each
/// [`Cursor::next_run`] is then a few compares); put back on drop.
pub struct Cursor {
    q: Queue,
}

impl Cursor {
    pub fn take() -> Cursor {
        let q = QUEUE
            .try_with(|q| q.try_borrow_mut().map(|mut q| std::mem::take(&mut *q)))
            .ok()
            .and_then(|r| r.ok())
            .unwrap_or_default();
        Cursor { q }
    }

    /// The next run of at most `max` consecutive cache lines to prefetch:
    /// its first address and its length in lines (0 once all is done).
    #[inline(always)]
    pub fn next_run(&mut self, max: usize) -> (usize, usize) {
        let q = &mut self.q;
        while q.current < q.ranges.len() {
            let end = q.ranges[q.current].1;
            if q.next < end {
                let lines = (end - q.next).div_ceil(64).min(max);
                let start = q.next;
                q.next += 64 * lines;
                return (start, lines);
            }
            q.current += 1;
            q.next = q.ranges.get(q.current).map_or(0, |r| r.0);
        }
        (0, 0)
    }
}

impl Drop for Cursor {
    fn drop(&mut self) {
        let q = std::mem::take(&mut self.q);
        let _ = QUEUE.try_with(|cell| {
            if let Ok(mut cell) = cell.try_borrow_mut() {
                // A queue set while this cursor was out (a nested backward)
                // wins.
                if cell.ranges.is_empty() {
                    *cell = q;
                }
            }
        });
    }
}

/// Prefetches the cache lines of `len` bytes at `addr` (only ever
/// prefetched, never read: a stale or out-of-range address is harmless).
#[inline(always)]
pub fn prefetch_bytes(addr: usize, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let mut a = addr & !63;
        while a < addr + len {
            // SAFETY: prefetching never faults and has no visible effect
            // besides the cache; SSE is part of the x86-64 baseline.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(a as *const i8) };
            a += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (addr, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(max: usize) -> Vec<(usize, usize)> {
        let mut c = Cursor::take();
        std::iter::from_fn(|| Some(c.next_run(max)).filter(|r| r.1 > 0)).collect()
    }

    #[test]
    fn runs_walk_the_ranges_in_order_then_stop() {
        let _a = Ahead::new([(1000, 1000 + 64 * 3), (5000, 5000 + 64 * 5 + 1)]);
        // The second range's last line is partial: 6 lines.
        assert_eq!(drain(4), vec![(1000, 3), (5000, 4), (5000 + 4 * 64, 2)]);
        // Drained: the queue is put back empty.
        assert_eq!(drain(4), vec![]);
    }

    #[test]
    fn a_cursor_resumes_where_the_last_one_stopped() {
        let _a = Ahead::new([(0, 64 * 10)]);
        let mut c = Cursor::take();
        assert_eq!(c.next_run(3), (0, 3));
        drop(c);
        assert_eq!(drain(100), vec![(64 * 3, 7)]);
    }

    #[test]
    fn empty_ranges_are_skipped_and_dropping_the_guard_clears() {
        let a = Ahead::new([(100, 100), (200, 100), (300, 364)]);
        drop(a);
        assert_eq!(drain(8), vec![]);
        let _a = Ahead::new([(100, 100), (200, 100), (300, 364)]);
        assert_eq!(drain(8), vec![(300, 1)]);
    }
}
