use ferrograd::ops::combine::{meshgrid, stack_kind, StackKind};
use ferrograd::Tensor;

mod common;
use common::t;

#[test]
fn combining_ops() {
    let a = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let b = t(&[0.0, 1.0, 1.0, 0.0], &[2, 2]);
    let k = a.kron(&b).unwrap();
    assert_eq!(k.shape(), &[4, 4]);
    assert_eq!(&k.to_f64_vec()[..4], &[0.0, 1.0, 0.0, 2.0]);
    assert_eq!(
        a.tensordot(&b, &[1], &[0]).unwrap().to_f64_vec(),
        a.mm(&b).unwrap().to_f64_vec()
    );
    let x = t(&[1.0, 0.0, 0.0], &[3]);
    let y = t(&[0.0, 1.0, 0.0], &[3]);
    assert_eq!(x.cross(&y, 0).unwrap().to_f64_vec(), vec![0.0, 0.0, 1.0]);
    let s = t(&[1.0, 4.0, 9.0], &[3]);
    assert_eq!(
        s.diff(1, -1, None, None).unwrap().to_f64_vec(),
        vec![3.0, 5.0]
    );
    assert_eq!(
        a.rot90(1, &[0, 1]).unwrap().to_f64_vec(),
        vec![2.0, 4.0, 1.0, 3.0]
    );
    let idx = Tensor::from_vec(vec![1i64, 0], &[2, 1]).unwrap();
    assert_eq!(
        a.take_along_dim(&idx, Some(1)).unwrap().to_f64_vec(),
        vec![2.0, 3.0]
    );
    let g = meshgrid(&[t(&[1.0, 2.0], &[2]), t(&[5.0, 6.0, 7.0], &[3])], false).unwrap();
    assert_eq!(g[1].shape(), &[2, 3]);
    assert_eq!(g[1].to_f64_vec(), vec![5.0, 6.0, 7.0, 5.0, 6.0, 7.0]);
    let v = stack_kind(&[x.clone(), y.clone()], StackKind::V).unwrap();
    assert_eq!(v.shape(), &[2, 3]);
    let n = t(&[f64::NAN, f64::INFINITY, 2.0], &[3]);
    assert_eq!(
        n.nan_to_num(0.0, Some(1.0), None).unwrap().to_f64_vec(),
        vec![0.0, 1.0, 2.0]
    );
    assert_eq!(
        n.nansum(&[], false, None).unwrap().to_f64_vec(),
        vec![f64::INFINITY]
    );
    assert_eq!(n.count_nonzero(&[]).unwrap().to_vec::<i64>(), vec![3]);
}

#[test]
fn repeat_interleave_counts() {
    let x = t(&[1.0, 2.0, 3.0], &[3]);
    let r = x.repeat_interleave(&[2, 0, 1], Some(0)).unwrap();
    assert_eq!(r.to_f64_vec(), vec![1.0, 1.0, 3.0]);
    assert_eq!(x.repeat_interleave(&[2], None).unwrap().numel(), 6);
    assert!(x.repeat_interleave(&[1, 2], Some(0)).is_err());
    assert!(x.repeat_interleave(&[-1], None).is_err());
}
