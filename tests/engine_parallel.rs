//! The parallel engine: gradients are bitwise identical whatever the thread
//! count, deep chains run without stack overflow, and backward inside a
//! backward (a hook calling `autograd::grad`) neither deadlocks nor mixes up
//! gradients.
//!
//! `set_num_threads` is process-global, so every test here takes
//! `lock_threads()`.

use ferrograd::{autograd, set_num_threads, DType, Tensor};
use parking_lot::Mutex;
use std::sync::Arc;

mod common;
use common::{bits, leaf, lock_threads, values};

/// Many independent branches, each reading both leaves, summed into one
/// loss: every leaf's AccumulateGrad receives one gradient per branch, in an
/// order that depends on scheduling unless the engine sums slots in order.
fn wide_graph_grads(branches: usize, width: usize) -> (Vec<u64>, Vec<u64>, Vec<f64>) {
    let x = leaf(&values(width, 1), &[4, width / 4]);
    let w = leaf(&values(width, 2), &[4, width / 4]);
    let coeffs = values(branches, 3);
    let mut total: Option<Tensor> = None;
    for &c in &coeffs {
        let a = x.mul_scalar(c).unwrap().mul(&w).unwrap();
        let b = x.mul(&x).unwrap().mul_scalar(c * 0.37).unwrap();
        let branch = a.add(&b).unwrap().sum_dims(&[1], false, None).unwrap();
        let branch = branch.t().unwrap().reshape(&[-1]).unwrap().sum().unwrap();
        total = Some(match total {
            None => branch,
            Some(t) => t.add(&branch).unwrap(),
        });
    }
    total.unwrap().backward().unwrap();
    let gx = x.grad().unwrap();
    (bits(&gx), bits(&w.grad().unwrap()), gx.to_f64_vec())
}

#[test]
fn wide_graph_grads_are_bitwise_equal_for_1_and_4_threads() {
    let _g = lock_threads();
    set_num_threads(1);
    assert_eq!(ferrograd::num_threads(), 1);
    let (gx1, gw1, gx_vals) = wide_graph_grads(128, 256);

    // The values are right, not only reproducible.
    let coeff_sum: f64 = values(128, 3).iter().sum();
    let (xv, wv) = (values(256, 1), values(256, 2));
    for i in 0..256 {
        let expected = coeff_sum * wv[i] + 2.0 * 0.37 * coeff_sum * xv[i];
        assert!(
            (gx_vals[i] - expected).abs() <= 1e-9 * expected.abs().max(1.0),
            "x.grad[{i}] = {} expected {expected}",
            gx_vals[i]
        );
    }

    for n in [4, 2, 4] {
        set_num_threads(n);
        assert_eq!(ferrograd::num_threads(), n);
        for _ in 0..3 {
            let (gx, gw, _) = wide_graph_grads(128, 256);
            assert!(gx == gx1, "x.grad differs between 1 and {n} threads");
            assert!(gw == gw1, "w.grad differs between 1 and {n} threads");
        }
    }
}

#[test]
fn deep_chain_with_4_threads() {
    let _g = lock_threads();
    for n in [4, 1] {
        set_num_threads(n);
        let x = leaf(&[1.5, -2.0], &[2]);
        let mut y = x.clone();
        for i in 0..50_000 {
            y = if i % 2 == 0 {
                y.mul_scalar(1.0).unwrap()
            } else {
                y.add_scalar(0.5).unwrap()
            };
        }
        assert_eq!(y.to_f64_vec(), vec![1.5 + 12_500.0, -2.0 + 12_500.0]);
        y.sum().unwrap().backward().unwrap();
        assert_eq!(x.grad().unwrap().to_f64_vec(), vec![1.0, 1.0]);
    }
}

#[test]
fn deep_chain_feeding_wide_fan_in() {
    let _g = lock_threads();
    set_num_threads(4);
    // 64 chains of 500 ops from one leaf, joined at the end.
    let x = leaf(&[0.25, 0.5, 1.0], &[3]);
    let mut ends = Vec::new();
    for k in 0..64 {
        let mut y = x.clone();
        for _ in 0..500 {
            y = y.mul_scalar(1.0).unwrap().add_scalar(k as f64).unwrap();
        }
        ends.push(y.sum().unwrap());
    }
    let mut total = ends[0].clone();
    for e in &ends[1..] {
        total = total.add(e).unwrap();
    }
    total.backward().unwrap();
    assert_eq!(x.grad().unwrap().to_f64_vec(), vec![64.0, 64.0, 64.0]);
}

fn reentrant_hook_run() -> (Vec<f64>, Vec<f64>) {
    let x = leaf(&[0.5, -1.0, 2.0], &[3]);
    let inner_result: Arc<Mutex<Vec<f64>>> = Arc::new(Mutex::new(Vec::new()));
    let y = x.mul(&x).unwrap();
    let sink = inner_result.clone();
    y.add_hook(
        ferrograd::autograd::node::next_hook_id(),
        Arc::new(move |g: Option<&Tensor>| {
            let Some(g) = g else { return Ok(None) };
            // A second backward pass, on its own graph, from inside a backward.
            let _on = autograd::enable_grad();
            let w = leaf(&[3.0], &[1]);
            let cube = w.mul(&w).unwrap().mul(&w).unwrap().sum().unwrap();
            let gw = autograd::grad(&[cube], &[w], &[None], None, false, false, false)?;
            sink.lock().extend(gw[0].as_ref().unwrap().to_f64_vec());
            Ok(Some(g.mul_scalar(2.0)?))
        }),
    );
    // Several branches so hooks run while other nodes are ready too.
    let mut total = y.sum().unwrap();
    for k in 1..8 {
        total = total
            .add(&x.mul_scalar(k as f64).unwrap().sum().unwrap())
            .unwrap();
    }
    total.backward().unwrap();
    let inner = inner_result.lock().clone();
    (x.grad().unwrap().to_f64_vec(), inner)
}

#[test]
fn reentrant_backward_in_hook_does_not_deadlock() {
    let _g = lock_threads();
    for n in [1, 2, 4] {
        set_num_threads(n);
        let (gx, inner) = reentrant_hook_run();
        // d/dx of sum(2 * x^2 hooked) + sum(28 x) = 4x + 28
        assert_eq!(gx, vec![30.0, 24.0, 36.0], "with {n} threads");
        assert_eq!(inner, vec![27.0], "with {n} threads");
    }
}

#[test]
fn many_graphs_from_many_threads() {
    let _g = lock_threads();
    set_num_threads(4);
    let handles: Vec<_> = (0..8)
        .map(|k| {
            std::thread::spawn(move || {
                let x = leaf(&[k as f64, 1.0], &[2]);
                let mut y = x.clone();
                for _ in 0..200 {
                    y = y.mul_scalar(1.0).unwrap().add(&x).unwrap();
                }
                y.sum().unwrap().backward().unwrap();
                x.grad().unwrap().to_f64_vec()
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), vec![201.0, 201.0]);
    }
}

#[test]
fn grads_keep_dtype_and_shape_under_threads() {
    let _g = lock_threads();
    set_num_threads(4);
    let x = Tensor::ones(&[3, 4], DType::F32)
        .requires_grad_(true)
        .unwrap();
    let b = Tensor::ones(&[4], DType::F64);
    let mut total = x.mul(&b).unwrap().sum().unwrap();
    for _ in 0..16 {
        total = total.add(&x.sum().unwrap()).unwrap();
    }
    total.backward().unwrap();
    let g = x.grad().unwrap();
    assert_eq!(g.dtype(), DType::F32);
    assert_eq!(g.shape(), &[3, 4]);
    assert_eq!(g.to_f64_vec(), vec![17.0; 12]);
}

/// Branches of float32 256x256 matmul + tanh layers (our own GEMM, with the
/// engine queueing each next matmul's saved operands for prefetching):
/// the weights' gradients for `threads` threads, as bits, and as values.
fn matmul_chain_grads(dtype: DType, threads: usize) -> (Vec<Vec<u64>>, Vec<Vec<f64>>) {
    set_num_threads(threads);
    let n = 256;
    let (branches, depth) = (3, 3);
    let scale = 1.0 / (n as f64).sqrt();
    let mk = |seed: u64, s: f64, grad: bool| {
        let v: Vec<f64> = values(n * n, seed).iter().map(|x| x * s * 1.7).collect();
        let t = Tensor::from_vec(v, &[n, n])
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        t.requires_grad_(grad).unwrap()
    };
    let ws: Vec<Vec<Tensor>> = (0..branches)
        .map(|b| {
            (0..depth)
                .map(|l| mk(100 + 10 * b + l, scale, true))
                .collect()
        })
        .collect();
    let mut total: Option<Tensor> = None;
    for (b, branch) in ws.iter().enumerate() {
        let mut h = mk(7 + b as u64, 1.0, false);
        for w in branch {
            h = h.mm(w).unwrap().tanh().unwrap();
        }
        let s = h.sum().unwrap();
        total = Some(match total {
            None => s,
            Some(t) => t.add(&s).unwrap(),
        });
    }
    total.unwrap().backward().unwrap();
    let grads: Vec<Tensor> = ws.iter().flatten().map(|w| w.grad().unwrap()).collect();
    (
        grads.iter().map(bits).collect(),
        grads.iter().map(Tensor::to_f64_vec).collect(),
    )
}

#[test]
fn float32_matmul_chains_are_bitwise_equal_for_1_and_2_threads_and_right() {
    let _g = lock_threads();
    let (bits1, vals1) = matmul_chain_grads(DType::F32, 1);
    for _ in 0..2 {
        let (bits2, _) = matmul_chain_grads(DType::F32, 2);
        assert!(bits1 == bits2, "gradients differ between 1 and 2 threads");
    }
    // Against the same computation in float64 (the gemm crate's kernel).
    let (_, vals64) = matmul_chain_grads(DType::F64, 2);
    for (g32, g64) in vals1.iter().zip(&vals64) {
        let scale = g64.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let worst = g32
            .iter()
            .zip(g64)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(
            worst <= 1e-4 * scale.max(1e-3),
            "max error {worst} (scale {scale})"
        );
    }
}
