//! The thread pool the engine and the kernels run on. `set_num_threads`
//! replaces it; work already running keeps the pool it started on.

use parking_lot::RwLock;
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::Arc;

static POOL: RwLock<Option<Arc<ThreadPool>>> = RwLock::new(None);

fn default_threads() -> usize {
    std::env::var("FERROGRAD_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn build(n: usize) -> Arc<ThreadPool> {
    Arc::new(
        ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("ferrograd-{i}"))
            .build()
            .expect("failed to start the ferrograd thread pool"),
    )
}

pub fn pool() -> Arc<ThreadPool> {
    if let Some(p) = POOL.read().as_ref() {
        return p.clone();
    }
    let mut w = POOL.write();
    w.get_or_insert_with(|| build(default_threads())).clone()
}

pub fn num_threads() -> usize {
    pool().current_num_threads()
}

pub fn set_num_threads(n: usize) {
    let n = n.max(1);
    if POOL
        .read()
        .as_ref()
        .is_some_and(|p| p.current_num_threads() == n)
    {
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
