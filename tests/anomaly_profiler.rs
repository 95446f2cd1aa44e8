//! Anomaly mode's NaN check and the profiler's events, from Rust (no
//! Python). One test function: both are process-global switches.

use ferrograd::autograd::anomaly;
use ferrograd::autograd::profiler::{self, EventKind};
use ferrograd::Tensor;

mod common;
use common::leaf1;

#[test]
fn anomaly_and_profiler() {
    // Off: NaN gradients pass, as in torch.
    let x = leaf1(&[0.0, 1.0]);
    x.div(&x).unwrap().sum().unwrap().backward().unwrap();

    // On: torch's error, naming the node and the output index.
    anomaly::set_enabled(true, true);
    assert!(anomaly::is_enabled() && anomaly::check_nan_enabled());
    let x = leaf1(&[0.0, 1.0]);
    let err = x.div(&x).unwrap().sum().unwrap().backward().unwrap_err();
    assert_eq!(
        err.msg,
        "Function 'DivBackward0' returned nan values in its 1th output."
    );
    // check_nan off: no error.
    anomaly::set_enabled(true, false);
    let x = leaf1(&[0.0, 1.0]);
    x.div(&x).unwrap().sum().unwrap().backward().unwrap();
    anomaly::set_enabled(false, true);
    assert!(!anomaly::is_enabled());

    // Profiler: forward ops and backward nodes, nested self times.
    assert!(!profiler::is_enabled());
    let x = leaf1(&[1.0, 2.0, 3.0]);
    profiler::start(false).unwrap();
    x.neg().unwrap();
    // A second start replaces the session (torch's nested profile()).
    profiler::start(true).unwrap();
    let y = x.exp().unwrap().sum().unwrap();
    {
        let _r = profiler::user_range("mine".to_string());
        y.backward().unwrap();
    }
    let events = profiler::stop();
    assert!(!profiler::is_enabled());
    assert!(events.iter().all(|e| e.name != "NegBackward0"));
    let find = |n: &str| events.iter().find(|e| e.name == n).unwrap();
    let exp = find("ExpBackward0");
    assert!(events
        .iter()
        .any(|e| e.kind == EventKind::Op && e.name == "ExpBackward0"));
    assert!(events
        .iter()
        .any(|e| e.kind == EventKind::Backward && e.name == "ExpBackward0"));
    assert_eq!(exp.shapes, vec![vec![3]]);
    let mine = find("mine");
    assert_eq!(mine.kind, EventKind::User);
    assert!(mine.self_ns <= mine.dur_ns);
    for e in &events {
        assert!(e.self_ns <= e.dur_ns);
        if e.kind == EventKind::Backward && e.tid == mine.tid {
            assert!(e.start_ns >= mine.start_ns);
        }
    }
    // Nothing is recorded with the profiler off.
    x.exp().unwrap();
    assert!(profiler::stop().is_empty());

    // profile_memory: storage bytes allocated (and freed) inside each range.
    profiler::start_with(profiler::Options {
        profile_memory: true,
        ..Default::default()
    })
    .unwrap();
    let big = Tensor::zeros(&[1000], ferrograd::DType::F32);
    {
        let _r = profiler::user_range("outer".to_string());
        let t = big.exp().unwrap(); // 4000 bytes, kept
        drop(t.neg().unwrap()); // 4000 bytes, freed inside "outer"
    }
    let events = profiler::stop();
    let find = |n: &str| events.iter().find(|e| e.name == n).unwrap();
    assert_eq!(find("ExpBackward0").memory, 4000);
    assert_eq!(find("ExpBackward0").self_memory, 4000);
    let outer = find("outer");
    // exp's output and neg's output allocated; neg's output and exp's output freed here
    assert_eq!(outer.memory, 0);
    assert_eq!(outer.self_memory, -8000);
    assert_eq!(profiler::forward_op_name("MulBackward0"), "aten::mul");
}
