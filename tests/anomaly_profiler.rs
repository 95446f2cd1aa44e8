//! Anomaly mode's NaN check and the profiler's events, from Rust (no
//! Python). One test function: both are process-global switches.

use ferrograd::autograd::anomaly;
use ferrograd::autograd::profiler::{self, EventKind};
use ferrograd::Tensor;

fn leaf(v: &[f64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()])
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

#[test]
fn anomaly_and_profiler() {
    // Off: NaN gradients pass, as in torch.
    let x = leaf(&[0.0, 1.0]);
    x.div(&x).unwrap().sum().unwrap().backward().unwrap();

    // On: torch's error, naming the node and the output index.
    anomaly::set_enabled(true, true);
    assert!(anomaly::is_enabled() && anomaly::check_nan_enabled());
    let x = leaf(&[0.0, 1.0]);
    let err = x.div(&x).unwrap().sum().unwrap().backward().unwrap_err();
    assert_eq!(
        err.msg,
        "Function 'DivBackward0' returned nan values in its 1th output."
    );
    // check_nan off: no error.
    anomaly::set_enabled(true, false);
    let x = leaf(&[0.0, 1.0]);
    x.div(&x).unwrap().sum().unwrap().backward().unwrap();
    anomaly::set_enabled(false, true);
    assert!(!anomaly::is_enabled());

    // Profiler: forward ops and backward nodes, nested self times.
    assert!(!profiler::is_enabled());
    let x = leaf(&[1.0, 2.0, 3.0]);
    profiler::start(true).unwrap();
    assert!(profiler::start(false).is_err());
    let y = x.exp().unwrap().sum().unwrap();
    {
        let _r = profiler::user_range("mine".to_string());
        y.backward().unwrap();
    }
    let events = profiler::stop();
    assert!(!profiler::is_enabled());
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
    assert_eq!(profiler::forward_op_name("MulBackward0"), "aten::mul");
}
