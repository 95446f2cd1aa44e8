use ferrograd::ops::conv::ConvPadding;
use ferrograd::Tensor;

mod common;
use common::t;

fn arange(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    t(&(0..n).map(|i| i as f64).collect::<Vec<_>>(), shape)
}

#[test]
fn conv2d_sums_each_window() {
    let x = arange(&[1, 1, 3, 3]);
    let w = t(&[1.0; 4], &[1, 1, 2, 2]);
    let b = t(&[0.5], &[1]);
    let pad = ConvPadding::Explicit(vec![0]);
    let y = x.conv(&w, Some(&b), &[1], &pad, &[1], 1, 2).unwrap();
    assert_eq!(y.to_f64_vec(), vec![8.5, 12.5, 20.5, 24.5]);
    let pad = ConvPadding::Explicit(vec![1]);
    let y = x.conv(&w, None, &[1], &pad, &[2], 1, 2).unwrap();
    assert_eq!(
        y.to_f64_vec(),
        vec![4.0, 8.0, 4.0, 8.0, 16.0, 8.0, 4.0, 8.0, 4.0]
    );
    let same = x
        .conv(&w, None, &[1], &ConvPadding::Same, &[1], 1, 2)
        .unwrap();
    assert_eq!(same.shape(), &[1, 1, 3, 3]);
    let err = x.conv(&w, None, &[0], &pad, &[1], 1, 2).unwrap_err();
    assert!(err.to_string().contains("non-positive stride"));
}

#[test]
fn fold_is_the_adjoint_of_unfold() {
    // <unfold(x), c> == <x, fold(c)> for any x and c.
    let x = arange(&[2, 3, 4, 5]);
    let cols = x.unfold_blocks(&[2, 3], &[1, 2], &[1, 0], &[2, 1]).unwrap();
    let c = arange(cols.shape()).mul_scalar(0.5).unwrap();
    let folded = c
        .fold_blocks(&[4, 5], &[2, 3], &[1, 2], &[1, 0], &[2, 1])
        .unwrap();
    let dot = |a: &Tensor, b: &Tensor| a.mul(b).unwrap().sum().unwrap().to_f64_vec()[0];
    assert_eq!(dot(&cols, &c), dot(&x, &folded));
}

#[test]
fn pooling_values_indices_and_gradient() {
    let x = t(&[1.0, 3.0, 3.0, 2.0, 5.0, 4.0], &[1, 1, 6])
        .requires_grad_(true)
        .unwrap();
    let (v, i) = x.max_pool(1, &[3], &[1], &[0], &[1], false).unwrap();
    assert_eq!(v.to_f64_vec(), vec![3.0, 3.0, 5.0, 5.0]);
    assert_eq!(i.to_vec::<i64>(), vec![1, 1, 4, 4]);
    v.sum().unwrap().backward().unwrap();
    assert_eq!(
        x.grad().unwrap().to_f64_vec(),
        vec![0.0, 2.0, 0.0, 0.0, 2.0, 0.0]
    );
    let y = arange(&[1, 1, 5, 5]);
    let a = y.avg_pool(2, &[2], &[2], &[1], true, false, None).unwrap();
    assert_eq!(&a.to_f64_vec()[..3], &[0.0, 1.5, 3.5]);
    let g = y.adaptive_avg_pool(2, &[Some(1)]).unwrap();
    assert_eq!(g.to_f64_vec(), vec![12.0]);
}
