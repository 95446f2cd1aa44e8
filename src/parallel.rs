//! The threads the engine and the kernels run on: the thread that calls
//! into ferrograd and a pool. With `n` threads, data-parallel kernels split
//! their work between the caller and `n - 1` pool workers
//! ([`for_each_index`]); the backward engine runs its first chain on the
//! caller and spawns branches onto the pool's `n` workers (the caller
//! waits once its chain is done). `set_num_threads` replaces the pool; work
//! already running keeps the pool it started on.

use parking_lot::RwLock;
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::Arc;

/// The configured thread count and its pool.
static POOL: RwLock<Option<(usize, Arc<ThreadPool>)>> = RwLock::new(None);

fn default_threads() -> usize {
    std::env::var("FERROGRAD_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn build(n: usize) -> (usize, Arc<ThreadPool>) {
    let pool = ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("ferrograd-{i}"))
        .build()
        .expect("failed to start the ferrograd thread pool");
    (n, Arc::new(pool))
}

fn current() -> (usize, Arc<ThreadPool>) {
    if let Some((n, p)) = POOL.read().as_ref() {
        return (*n, p.clone());
    }
    let mut w = POOL.write();
    let (n, p) = w.get_or_insert_with(|| build(default_threads()));
    (*n, p.clone())
}

/// The worker pool.
pub fn pool() -> Arc<ThreadPool> {
    current().1
}

/// The configured number of threads.
pub fn num_threads() -> usize {
    current().0
}

pub fn set_num_threads(n: usize) {
    let n = n.max(1);
    if POOL.read().as_ref().is_some_and(|(m, _)| *m == n) {
        return;
    }
    *POOL.write() = Some(build(n));
}

/// Wraps every section that waits on the pool. The Python bindings set one
/// that releases the GIL if the calling thread holds it: pool threads may be
/// waiting for the GIL (a Python custom Function's backward), so holding it
/// while waiting for them would deadlock.
static BLOCKING_WRAPPER: std::sync::OnceLock<fn(&mut dyn FnMut())> = std::sync::OnceLock::new();

/// Sets the wrapper for sections that wait on the pool (first call wins).
pub fn set_blocking_wrapper(wrapper: fn(&mut dyn FnMut())) {
    let _ = BLOCKING_WRAPPER.set(wrapper);
}

/// Runs `run` inside the blocking wrapper, if one is set.
fn blocking<R>(run: impl FnOnce() -> R) -> R {
    match BLOCKING_WRAPPER.get() {
        None => run(),
        Some(wrapper) => {
            let mut run = Some(run);
            let mut out = None;
            wrapper(&mut || out = run.take().map(|r| r()));
            out.expect("the blocking wrapper runs its section once")
        }
    }
}

/// Runs `f` inside the pool (directly if already on one of its threads).
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    blocking(move || {
        if rayon::current_thread_index().is_some() {
            f()
        } else {
            pool().install(f)
        }
    })
}

/// Runs `f` on the calling thread inside a scope whose spawned jobs run on
/// the pool, and waits for them. A backward whose graph is a chain thus runs
/// entirely on the caller's thread (no hand-off to a worker and back);
/// branches spawned from it run in parallel on the pool.
pub fn in_place_scope<'s, R: Send>(f: impl FnOnce(&rayon::Scope<'s>) -> R + Send) -> R {
    blocking(move || pool().in_place_scope(f))
}

/// Runs `f(i)` for every `i` in `0..count`, each exactly once, on the
/// calling thread, with pool workers joining in while there are indices
/// left. A worker that wakes up after the caller has finished finds nothing
/// to do, so a cold pool costs a wake-up call, never a wait for a thread to
/// be scheduled (tens of microseconds on a VM): small data-parallel kernels
/// stay cheap. Panics in `f` reach the caller.
pub fn for_each_index(count: usize, f: &(dyn Fn(usize) + Sync)) {
    let (threads, pool) = current();
    let helpers = (threads - 1).min(count.saturating_sub(1));
    if helpers == 0 {
        (0..count).for_each(f);
        return;
    }
    // SAFETY (lifetime erasure): `Shared::f` is only called between a
    // successful `enter` and the matching `leave` (or by this thread), and
    // this function does not return before `close_and_wait` has seen every
    // entered helper leave; afterwards no helper can enter. So `f` outlives
    // every call made through the erased pointer.
    let f: &'static (dyn Fn(usize) + Sync) = unsafe { std::mem::transmute(f) };
    let shared = Arc::new(Shared {
        f,
        count,
        next: AtomicUsize::new(0),
        state: AtomicUsize::new(0),
        panic: parking_lot::Mutex::new(None),
    });
    // Helpers still spinning from an earlier section join through LATEST;
    // pool jobs are started for the rest.
    let hot = HOT.load(Ordering::Acquire).min(helpers);
    *LATEST.lock() = Some(shared.clone());
    EPOCH.fetch_add(1, Ordering::Release);
    for _ in hot..helpers {
        let s = shared.clone();
        pool.spawn(move || help(s, threads));
    }
    shared.work();
    shared.close_and_wait();
    {
        let mut latest = LATEST.lock();
        if latest.as_ref().is_some_and(|l| Arc::ptr_eq(l, &shared)) {
            *latest = None;
        }
    }
    let panic = shared.panic.lock().take();
    if let Some(p) = panic {
        std::panic::resume_unwind(p);
    }
}

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The section helpers may join now (set while its caller works).
static LATEST: parking_lot::Mutex<Option<Arc<Shared>>> = parking_lot::Mutex::new(None);
/// Bumped each time a section is published in `LATEST`.
static EPOCH: AtomicU64 = AtomicU64::new(0);
/// Helpers spinning for the next section (at most `threads - 1`; one
/// running a pool job from its spin loop is not counted meanwhile).
static HOT: AtomicUsize = AtomicUsize::new(0);
/// How long a helper stays hot after its section: eager code launches its
/// next big kernel within tens of microseconds, and a hot helper joins it at
/// once instead of being woken (as OpenMP's spinning threads do for torch).
/// `FERROGRAD_SPIN_US` microseconds (default 100; 0: helpers never spin).
fn hot_spin() -> std::time::Duration {
    static SPIN: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();
    *SPIN.get_or_init(|| {
        let us = std::env::var("FERROGRAD_SPIN_US")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(100);
        std::time::Duration::from_micros(us)
    })
}

/// A helper's job: work on `s`, then on sections published while it stays
/// hot.
fn help(mut s: Arc<Shared>, threads: usize) {
    loop {
        let seen = EPOCH.load(Ordering::Acquire);
        if s.enter() {
            s.work();
            s.leave();
        }
        drop(s);
        match wait_for_section(seen, threads) {
            Some(next) => s = next,
            None => return,
        }
    }
}

/// Counts the calling helper in `HOT`, unless `threads - 1` already are.
fn become_hot(threads: usize) -> bool {
    if HOT.fetch_add(1, Ordering::AcqRel) >= threads - 1 {
        HOT.fetch_sub(1, Ordering::AcqRel);
        return false;
    }
    true
}

/// Spins as a hot helper (counted in `HOT`) until a section newer than
/// epoch `seen` is published, or [`hot_spin`] has passed. Pool jobs waiting
/// meanwhile are run from here; while one runs, this thread is not counted
/// as hot (a section the job publishes, or one published meanwhile, starts
/// helpers of its own instead of waiting for this thread).
fn wait_for_section(mut seen: u64, threads: usize) -> Option<Arc<Shared>> {
    if hot_spin().is_zero() || !become_hot(threads) {
        return None;
    }
    let start = std::time::Instant::now();
    let mut spins = 0u32;
    let next = loop {
        let now = EPOCH.load(Ordering::Acquire);
        if now != seen {
            if let Some(s) = LATEST.lock().clone() {
                break Some(s);
            }
            seen = now;
        }
        spins += 1;
        if spins.is_multiple_of(64) {
            if start.elapsed() > hot_spin() {
                break None;
            }
            HOT.fetch_sub(1, Ordering::AcqRel);
            let ran = rayon::yield_now();
            if !become_hot(threads) {
                return None;
            }
            if let Some(rayon::Yield::Executed) = ran {
                continue;
            }
        }
        std::hint::spin_loop();
    };
    HOT.fetch_sub(1, Ordering::AcqRel);
    next
}

/// State shared by the caller of [`for_each_index`] and its helpers.
struct Shared {
    f: &'static (dyn Fn(usize) + Sync),
    count: usize,
    /// The next index to claim.
    next: AtomicUsize,
    /// Helpers inside `work`, plus `CLOSED` once the caller stops waiting
    /// for new ones.
    state: AtomicUsize,
    panic: parking_lot::Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

const CLOSED: usize = 1 << (usize::BITS - 1);

impl Shared {
    fn enter(&self) -> bool {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if s & CLOSED != 0 {
                return false;
            }
            match self
                .state
                .compare_exchange_weak(s, s + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
    }
    fn leave(&self) {
        self.state.fetch_sub(1, Ordering::Release);
    }
    /// Claims and runs indices until none are left; a panic stops this
    /// thread's claiming and is kept for the caller.
    fn work(&self) {
        let run = std::panic::AssertUnwindSafe(|| loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.count {
                break;
            }
            (self.f)(i);
        });
        if let Err(p) = std::panic::catch_unwind(run) {
            self.next.store(self.count, Ordering::Relaxed);
            self.panic.lock().get_or_insert(p);
        }
    }
    /// Stops new helpers from entering and waits for those inside.
    fn close_and_wait(&self) {
        self.state.fetch_or(CLOSED, Ordering::AcqRel);
        let mut spins = 0u32;
        while self.state.load(Ordering::Acquire) & !CLOSED != 0 {
            if spins < 1 << 12 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// Runs `f(start, chunk)` over consecutive chunks of `out` (`start` is the
/// chunk's first index), in parallel through [`for_each_index`] when `out`
/// has at least `min_len` elements and there is more than one thread. Chunk
/// bounds depend on the length and the thread count only; every element is
/// written by exactly one call.
pub fn for_each_chunk_mut<T: Send>(
    out: &mut [T],
    min_len: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    for_each_chunk_mut_aligned(out, min_len, 64, f)
}

/// [`for_each_chunk_mut`] with chunk lengths a multiple of `align` (e.g. a
/// row length), except the last.
pub fn for_each_chunk_mut_aligned<T: Send>(
    out: &mut [T],
    min_len: usize,
    align: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    let n = out.len();
    let threads = num_threads();
    if n < min_len.max(2) || threads < 2 {
        f(0, out);
        return;
    }
    // A few chunks per thread, so a late helper still finds work.
    let chunk = n
        .div_ceil(4 * threads)
        .max(min_len / 4)
        .next_multiple_of(align.max(1));
    for_each_block_mut(out, chunk, f)
}

/// Runs `f(start, block)` for consecutive blocks of `block_len` elements of
/// `out` (the last may be shorter) through [`for_each_index`].
pub fn for_each_block_mut<T: Send>(
    out: &mut [T],
    block_len: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    let block_len = block_len.max(1);
    let parts: Vec<parking_lot::Mutex<&mut [T]>> = out
        .chunks_mut(block_len)
        .map(parking_lot::Mutex::new)
        .collect();
    for_each_index(parts.len(), &|i| {
        let mut part = parts[i].lock();
        f(i * block_len, &mut part)
    });
}

/// `(0..count).map(f).collect()`, computed in parallel when `parallel`.
pub fn map_collect<R: Send>(count: usize, parallel: bool, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let mut out: Vec<Option<R>> = (0..count).map(|_| None).collect();
    let min_len = if parallel { 2 } else { usize::MAX };
    for_each_chunk_mut_aligned(&mut out, min_len, 1, |s, o| {
        for (k, slot) in o.iter_mut().enumerate() {
            *slot = Some(f(s + k));
        }
    });
    out.into_iter()
        .map(|r| r.expect("for_each_chunk_mut visits every index"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_runs_exactly_once() {
        for count in [0, 1, 2, 3, 17, 1000] {
            let hits: Vec<AtomicUsize> = (0..count).map(|_| AtomicUsize::new(0)).collect();
            for_each_index(count, &|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
        }
    }

    #[test]
    fn chunks_cover_the_slice_once_in_order() {
        let mut v = vec![0usize; 100_003];
        for_each_chunk_mut_aligned(&mut v, 1000, 7, |s, c| {
            for (k, x) in c.iter_mut().enumerate() {
                *x += s + k;
            }
        });
        assert!(v.iter().enumerate().all(|(i, &x)| x == i));
        let r = map_collect(5000, true, |i| i * 2);
        assert_eq!(r, (0..5000).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn a_panic_in_a_chunk_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| {
            for_each_index(64, &|i| {
                if i == 40 {
                    panic!("chunk 40 failed");
                }
            })
        });
        let msg = r.unwrap_err();
        assert_eq!(msg.downcast_ref::<&str>(), Some(&"chunk 40 failed"));
        // The pool still works afterwards.
        let r = map_collect(100, true, |i| i + 1);
        assert_eq!(r[99], 100);
    }
}
