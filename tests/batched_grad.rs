//! `autograd::batched_grad::grad_batched` (`is_grads_batched=True`): each
//! batch row is the vjp of that row of the grad_outputs, and torch's errors.

use ferrograd::autograd::batched_grad::grad_batched;
use ferrograd::{autograd, ErrorKind, Tensor};

mod common;
use common::{leaf, t};

#[test]
fn rows_are_the_vjps_of_the_rows() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let y = x.mul(&x).unwrap(); // dy/dx = diag(2x)
    let gos = t(
        &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0],
        &[4, 3],
    );
    let g = grad_batched(
        std::slice::from_ref(&y),
        std::slice::from_ref(&x),
        &[Some(gos)],
        None,
        false,
        false,
        false,
    )
    .unwrap();
    let g = g[0].as_ref().unwrap();
    assert_eq!(g.shape(), &[4, 3]);
    assert_eq!(
        g.to_f64_vec(),
        vec![2.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 6.0, 2.0, 4.0, 6.0]
    );
    // The graph was kept between rows and released after the last one.
    let again = autograd::grad(&[y], &[x], &[None], None, false, false, false);
    assert!(again.is_err());
}

#[test]
fn create_graph_gives_differentiable_rows() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = x.mul(&x).unwrap().mul(&x).unwrap(); // 3x^2 on the diagonal
    let eye = t(&[1.0, 0.0, 0.0, 1.0], &[2, 2]);
    let j = grad_batched(
        std::slice::from_ref(&y),
        std::slice::from_ref(&x),
        &[Some(eye)],
        Some(true),
        true,
        false,
        false,
    )
    .unwrap();
    let s = j[0].as_ref().unwrap().sum().unwrap();
    let h = autograd::grad(&[s], &[x], &[None], None, false, false, false).unwrap();
    assert_eq!(h[0].as_ref().unwrap().to_f64_vec(), vec![6.0, 12.0]);
}

#[test]
fn errors_are_torchs() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let run = |go: Tensor| {
        let y = x.mul_scalar(2.0).unwrap();
        grad_batched(
            &[y],
            std::slice::from_ref(&x),
            &[Some(go)],
            None,
            false,
            false,
            false,
        )
    };
    let e = run(t(&[1.0; 8], &[2, 4])).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Runtime);
    assert!(e.to_string().contains("is_grads_batched=True"));
    let e = run(Tensor::from_vec(Vec::<f64>::new(), &[0, 3]).unwrap()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Index);
    let y = x.mul_scalar(2.0).unwrap();
    let z = x.mul_scalar(3.0).unwrap();
    let e = grad_batched(
        &[y, z],
        std::slice::from_ref(&x),
        &[Some(t(&[1.0; 6], &[2, 3])), Some(t(&[1.0; 12], &[4, 3]))],
        None,
        false,
        false,
        false,
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Value);
}
