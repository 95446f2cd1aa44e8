//! The pool's helpers: a data-parallel section started from a pool job gets
//! help from the other workers, even when that job was picked up by a
//! helper spinning for the next section (a "hot" helper).
//!
//! `set_num_threads` is process-global; this file holds one test, so its
//! process has the pool to itself.

use ferrograd::parallel::{for_each_index, pool};
use ferrograd::set_num_threads;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Keeps the calling thread busy for `us` microseconds.
fn busy(us: u64) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_micros(us) {
        std::hint::spin_loop();
    }
}

#[test]
fn sections_started_by_a_pool_job_get_help() {
    set_num_threads(2);
    let pool = pool();
    // One worker sleeps in a job of its own for a while, so the job below
    // can only start on the other worker: the one left spinning by the
    // section that follows.
    pool.spawn(|| thread::sleep(Duration::from_millis(20)));
    thread::sleep(Duration::from_millis(2));
    for_each_index(4, &|_| busy(50));
    let (done, result) = mpsc::channel();
    pool.spawn(move || {
        let me = thread::current().id();
        let helped = AtomicUsize::new(0);
        // 300 sections of four 50 us indices: about 60 ms on one thread,
        // most of it after the sleeping worker is free again.
        for _ in 0..300 {
            for_each_index(4, &|_| {
                busy(50);
                if thread::current().id() != me {
                    helped.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        done.send(helped.into_inner()).unwrap();
    });
    let helped = result.recv_timeout(Duration::from_secs(60)).unwrap();
    // While the job ran, the other worker was idle for most of it: it must
    // have taken part in some of the 1200 indices.
    assert!(helped > 0, "no index of 1200 ran on another thread");
}
