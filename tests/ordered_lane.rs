//! The engine's ordered lane: custom Functions whose backward communicates
//! (`Function::ordered`) run one at a time, latest created first, whatever
//! the thread count and however long each takes, while the other nodes of
//! the backward run freely. Processes that issue collectives in these
//! backwards then issue them in the same order.

use ferrograd::autograd::custom::{Function, FunctionCtx};
use ferrograd::{set_num_threads, Result, Tensor};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod common;
use common::{leaf, lock_threads, values};

/// Identity forward; backward logs its id (start and end) and sleeps a
/// while, longer for the branches that would otherwise finish first.
struct Logged {
    id: usize,
    ordered: bool,
    sleep_ms: u64,
    log: Arc<Mutex<Vec<(usize, bool)>>>,
    running: Arc<AtomicUsize>,
    overlap: Arc<AtomicUsize>,
}

impl Function for Logged {
    fn forward(&mut self, _ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        Ok(vec![inputs[0].mul_scalar(1.0)?])
    }
    fn backward(&self, _ctx: &FunctionCtx, g: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        if self.running.fetch_add(1, Ordering::SeqCst) > 0 {
            self.overlap.fetch_add(1, Ordering::SeqCst);
        }
        self.log.lock().push((self.id, true));
        std::thread::sleep(Duration::from_millis(self.sleep_ms));
        self.log.lock().push((self.id, false));
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(vec![g[0].clone()])
    }
    fn ordered(&self) -> bool {
        self.ordered
    }
}

struct Run {
    log: Vec<(usize, bool)>,
    overlaps: usize,
}

/// `branches` independent branches from one leaf, each: big elementwise work
/// (spawned on the pool), a logged Function, more work; summed into one loss.
/// Branch `b` runs its Function after `b` extra ops in backward, so without
/// the lane the first-created branches would tend to reach it first.
fn run(branches: usize, ordered: bool) -> Run {
    let n = 1 << 16;
    let x = leaf(&values(n, 7), &[n]);
    let log = Arc::new(Mutex::new(Vec::new()));
    let running = Arc::new(AtomicUsize::new(0));
    let overlap = Arc::new(AtomicUsize::new(0));
    let mut total: Option<Tensor> = None;
    for b in 0..branches {
        let mut h = x.mul_scalar(1.0 + b as f64).unwrap();
        let f = Logged {
            id: b,
            ordered,
            sleep_ms: 2 + 3 * (branches - b) as u64,
            log: log.clone(),
            running: running.clone(),
            overlap: overlap.clone(),
        };
        h = f.apply(&[&h]).unwrap().remove(0);
        for _ in 0..(branches - b) {
            h = h.sin().unwrap();
        }
        let s = h.sum().unwrap();
        total = Some(match total {
            None => s,
            Some(t) => t.add(&s).unwrap(),
        });
    }
    total.unwrap().backward().unwrap();
    let log = log.lock().clone();
    Run {
        log,
        overlaps: overlap.load(Ordering::SeqCst),
    }
}

#[test]
fn ordered_nodes_run_one_at_a_time_latest_created_first() {
    let _g = lock_threads();
    for threads in [1, 2, 4] {
        set_num_threads(threads);
        for _ in 0..5 {
            let r = run(5, true);
            let expected: Vec<(usize, bool)> =
                (0..5).rev().flat_map(|b| [(b, true), (b, false)]).collect();
            assert_eq!(r.log, expected, "{threads} threads");
            assert_eq!(r.overlaps, 0);
        }
    }
    set_num_threads(2);
}

#[test]
fn unordered_nodes_still_run_all_and_give_the_same_gradient() {
    let _g = lock_threads();
    set_num_threads(4);
    let r = run(4, false);
    assert_eq!(r.log.len(), 8);
    set_num_threads(2);
}

#[test]
fn a_failing_ordered_node_stops_the_backward_without_hanging() {
    struct Fails;
    impl Function for Fails {
        fn forward(&mut self, _ctx: &FunctionCtx, i: &[Tensor]) -> Result<Vec<Tensor>> {
            Ok(vec![i[0].mul_scalar(2.0)?])
        }
        fn backward(
            &self,
            _c: &FunctionCtx,
            _g: Vec<Option<Tensor>>,
        ) -> Result<Vec<Option<Tensor>>> {
            Err(ferrograd::Error::runtime("peer failed"))
        }
        fn ordered(&self) -> bool {
            true
        }
    }
    let _g = lock_threads();
    let x = leaf(&values(8, 1), &[8]);
    let a = Fails.apply(&[&x]).unwrap().remove(0);
    let b = Fails.apply(&[&x]).unwrap().remove(0);
    let e = a.add(&b).unwrap().sum().unwrap().backward().unwrap_err();
    assert!(e.to_string().contains("peer failed"));
}
