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

/// Runs `f` inside the pool (directly if already on one of its threads).
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    pool().install(f)
}
