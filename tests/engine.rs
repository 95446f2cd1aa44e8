use ferrograd::{autograd, DType, Tensor};

mod common;
use common::{assert_msg, grad1, leaf, t};

#[test]
fn mul_add_sum_backward() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let y = x.mul(&x).unwrap().add(&x).unwrap().sum().unwrap();
    y.backward().unwrap();
    assert_eq!(x.grad().unwrap().to_f64_vec(), vec![3.0, 5.0, 7.0]);
}

#[test]
fn broadcast_grad_is_summed_to_input_shape() {
    let a = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = leaf(&[10.0, 20.0, 30.0], &[3]);
    a.mul(&b).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(b.grad().unwrap().shape(), &[3]);
    assert_eq!(b.grad().unwrap().to_f64_vec(), vec![5.0, 7.0, 9.0]);
    assert_eq!(
        a.grad().unwrap().to_f64_vec(),
        vec![10.0, 20.0, 30.0, 10.0, 20.0, 30.0]
    );
}

#[test]
fn diamond_and_accumulation_over_two_calls() {
    let x = leaf(&[2.0], &[1]);
    let a = x.mul_scalar(3.0).unwrap();
    let b = x.mul(&x).unwrap();
    let y = a.add(&b).unwrap().sum().unwrap();
    autograd::backward(std::slice::from_ref(&y), &[None], Some(true), false, None).unwrap();
    assert_eq!(x.grad().unwrap().to_f64_vec(), vec![7.0]);
    y.backward().unwrap();
    assert_eq!(x.grad().unwrap().to_f64_vec(), vec![14.0]);
    let err = y.backward().unwrap_err();
    assert_msg(&err, "backward through the graph a second time");
}

#[test]
fn grad_api_and_double_backward() {
    let x = leaf(&[3.0], &[1]);
    let y = x.mul(&x).unwrap().mul(&x).unwrap().sum().unwrap(); // x^3
    let g = grad1(&y, &x, true);
    assert_eq!(g.to_f64_vec(), vec![27.0]);
    let gg = grad1(&g.sum().unwrap(), &x, false);
    assert_eq!(gg.to_f64_vec(), vec![18.0]);
    assert!(x.grad().is_none());
}

#[test]
fn inplace_modification_of_saved_tensor_errors() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = x.mul_scalar(2.0).unwrap();
    let z = y.mul(&y).unwrap().sum().unwrap();
    y.add_(&Tensor::scalar(1.0.into(), DType::F64)).unwrap();
    let err = z.backward().unwrap_err();
    assert_msg(&err, "modified by an inplace operation");
    assert_msg(&err, "is at version 1; expected version 0");
    assert_msg(&err, "It was modified in place by add_.");
}

#[test]
fn inplace_on_view_flows_to_base() {
    let w = leaf(&[5.0], &[1]);
    let base = Tensor::zeros(&[3], DType::F64);
    let v = base.narrow(0, 1, 1).unwrap();
    v.copy_(&w.mul_scalar(2.0).unwrap()).unwrap();
    assert_eq!(base.to_f64_vec(), vec![0.0, 10.0, 0.0]);
    base.mul(&t(&[1.0, 2.0, 3.0], &[3]))
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(w.grad().unwrap().to_f64_vec(), vec![4.0]);
}

#[test]
fn views_transpose_reshape_backward() {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let y = x.t().unwrap().reshape(&[6]).unwrap();
    let w = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[6]);
    y.mul(&w).unwrap().sum().unwrap().backward().unwrap();
    // y = [1,4,2,5,3,6] -> grad for x[i][j] = w[j*2+i]
    assert_eq!(
        x.grad().unwrap().to_f64_vec(),
        vec![1.0, 3.0, 5.0, 2.0, 4.0, 6.0]
    );
}

#[test]
fn deep_chain_does_not_overflow() {
    let x = leaf(&[1.0], &[1]);
    let mut y = x.clone();
    for _ in 0..100_000 {
        y = y.add_scalar(1.0).unwrap();
    }
    y.sum().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_f64_vec(), vec![1.0]);
    drop(y);
}

// ----- hooks (engine order, as torch runs them) -----

use ferrograd::autograd::node::next_hook_id;
use std::sync::{Arc, Mutex};

#[test]
fn leaf_hooks_run_before_accumulate_grad_pre_hooks() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = x.mul_scalar(2.0).unwrap();
    let log: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let l = log.clone();
    x.add_hook(
        next_hook_id(),
        Arc::new(move |g: Option<&Tensor>| {
            l.lock().unwrap().push("tensor");
            g.map(|g| g.mul_scalar(10.0)).transpose()
        }),
    );
    let acc = x.grad_accumulator().unwrap();
    let l = log.clone();
    acc.add_pre_hook(Arc::new(move |g: &[Option<Tensor>]| {
        l.lock().unwrap().push("pre");
        // Sees the gradient the tensor hook replaced.
        assert_eq!(g[0].as_ref().unwrap().to_f64_vec(), vec![20.0, 20.0]);
        Ok(None)
    }));
    y.sum().unwrap().backward().unwrap();
    assert_eq!(*log.lock().unwrap(), vec!["tensor", "pre"]);
    assert_eq!(x.grad().unwrap().to_f64_vec(), vec![20.0, 20.0]);
}

#[test]
fn leaf_hooks_apply_to_captured_gradients() {
    let x = leaf(&[1.0, 2.0], &[2]);
    x.add_hook(
        next_hook_id(),
        Arc::new(|g: Option<&Tensor>| g.map(|g| g.mul_scalar(10.0)).transpose()),
    );
    let y = x.mul_scalar(2.0).unwrap().sum().unwrap();
    let g = grad1(&y, &x, false);
    assert_eq!(g.to_f64_vec(), vec![20.0, 20.0]);
    assert!(x.grad().is_none());
}

#[test]
fn executing_node_is_captured_before_its_tensor_hooks() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let z = x.mul_scalar(2.0).unwrap();
    z.add_hook(
        next_hook_id(),
        Arc::new(|g: Option<&Tensor>| g.map(|g| g.mul_scalar(10.0)).transpose()),
    );
    let s = z.sum().unwrap();
    // Only captured: hooks first.
    let g = autograd::grad(
        std::slice::from_ref(&s),
        std::slice::from_ref(&z),
        &[None],
        Some(true),
        false,
        false,
        false,
    )
    .unwrap();
    assert_eq!(g[0].as_ref().unwrap().to_f64_vec(), vec![10.0, 10.0]);
    // Captured and executed: captured raw, hooks act on what flows on.
    let g = autograd::grad(&[s], &[z, x], &[None], None, false, false, false).unwrap();
    assert_eq!(g[0].as_ref().unwrap().to_f64_vec(), vec![1.0, 1.0]);
    assert_eq!(g[1].as_ref().unwrap().to_f64_vec(), vec![20.0, 20.0]);
}

#[test]
fn built_in_node_with_no_incoming_gradient_returns_none() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = x.exp().unwrap();
    y.grad_fn()
        .unwrap()
        .add_pre_hook(Arc::new(|g: &[Option<Tensor>]| {
            Ok(Some(vec![None; g.len()]))
        }));
    y.sum().unwrap().backward().unwrap();
    assert!(x.grad().is_none());
}

#[test]
fn tensor_hooks_see_undefined_gradients_as_none() {
    // b is one output of unbind's node; only a is used, so b's gradient is
    // undefined when the node runs: its hook is called with None, and may
    // not replace it.
    let x = leaf(&[1.0, 2.0], &[2]);
    let parts = x.mul_scalar(1.0).unwrap().unbind(0).unwrap();
    let (a, b) = (&parts[0], &parts[1]);
    let seen: Arc<Mutex<Vec<Option<Vec<f64>>>>> = Arc::default();
    for t in [a, b] {
        let s = seen.clone();
        t.add_hook(
            next_hook_id(),
            Arc::new(move |g: Option<&Tensor>| {
                s.lock().unwrap().push(g.map(|g| g.to_f64_vec()));
                Ok(None)
            }),
        );
    }
    a.mul_scalar(3.0).unwrap().backward().unwrap();
    let mut got = seen.lock().unwrap().clone();
    got.sort_by_key(|g| g.is_some());
    assert_eq!(got, vec![None, Some(vec![3.0])]);
    assert_eq!(x.grad().unwrap().to_f64_vec(), vec![3.0, 0.0]);

    let y = leaf(&[1.0, 2.0], &[2]);
    let parts = y.mul_scalar(1.0).unwrap().unbind(0).unwrap();
    parts[1].add_hook(
        next_hook_id(),
        Arc::new(|_: Option<&Tensor>| Ok(Some(Tensor::from_vec(vec![5.0], &[]).unwrap()))),
    );
    let err = parts[0].mul_scalar(3.0).unwrap().backward().unwrap_err();
    assert!(err
        .to_string()
        .contains("can't replace a None gradient with a non-None value"));
}

#[test]
fn data_and_replace_data() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = x.mul_scalar(3.0).unwrap().sum().unwrap();
    // `data` shares memory but not history or the version counter.
    let d = x.data();
    assert!(!d.requires_grad() && d.data_ptr() == x.data_ptr());
    d.mul_(&t(&[2.0], &[1])).unwrap();
    assert_eq!((x.version(), d.version()), (0, 1));
    assert_eq!(x.to_f64_vec(), vec![2.0, 4.0]);
    // The replacement takes x's state; y's graph accumulates into it.
    let x2 = x.replace_data(&t(&[5.0, 6.0], &[2])).unwrap();
    assert!(x2.requires_grad() && !x.requires_grad());
    y.backward().unwrap();
    assert_eq!(x2.grad().unwrap().to_f64_vec(), vec![3.0, 3.0]);
    assert!(x.grad().is_none());
    // A non-floating replacement for a tensor that requires grad fails
    // and moves nothing.
    let ints = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    assert!(x2.replace_data(&ints).is_err());
    assert!(x2.requires_grad() && x2.grad().is_some());
    assert_eq!(x2.dtype(), DType::F64);
}

#[test]
fn inference_tensors_follow_torchs_rules() {
    let w = leaf(&[1.0, 2.0], &[2]);
    let a = {
        let _g = autograd::inference_mode();
        let r = w.mul_scalar(2.0).unwrap();
        assert!(!r.requires_grad() && r.is_inference());
        Tensor::ones(&[2], DType::F64)
    };
    assert!(a.is_inference() && !autograd::grad_mode::is_inference_mode_enabled());
    assert!(a.narrow(0, 0, 1).unwrap().is_inference() && a.detach().is_inference());
    assert!(!a.mul_scalar(2.0).unwrap().is_inference());
    let one = t(&[1.0, 1.0], &[2]);
    assert_msg(
        &a.add_(&one).unwrap_err(),
        "Inplace update to inference tensor",
    );
    assert_eq!(a.to_f64_vec(), vec![1.0, 1.0]);
    assert_msg(
        &w.mul(&a).unwrap_err(),
        "Inference tensors cannot be saved for backward",
    );
    assert_msg(
        &a.set_requires_grad(true).unwrap_err(),
        "Setting requires_grad=True on inference tensor",
    );
    // an op that saves nothing records normally, and clones are normal
    w.add(&a).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(w.grad().unwrap().to_f64_vec(), vec![1.0, 1.0]);
    let c = a.clone_tensor().unwrap();
    c.add_(&one).unwrap();
    assert!(!c.is_inference());
}
