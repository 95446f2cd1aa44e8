use ferrograd::nn::{clip, init};
use ferrograd::{DType, Tensor};

#[test]
fn fans_and_gains() {
    let w = Tensor::zeros(&[3, 4, 5], DType::F32);
    assert_eq!(init::fans(&w).unwrap(), (20, 15));
    assert!(init::fans(&Tensor::zeros(&[3], DType::F32)).is_err());
    assert_eq!(init::gain("relu", None).unwrap(), 2f64.sqrt());
    assert!((init::gain("leaky_relu", None).unwrap() - (2.0 / 1.0001f64).sqrt()).abs() < 1e-15);
    assert!(init::gain("cosine", None).is_err());
}

#[test]
fn linear_reset_stays_in_range() {
    ferrograd::manual_seed(0);
    let w = Tensor::zeros(&[200, 25], DType::F64);
    let b = Tensor::zeros(&[200], DType::F64);
    init::reset_linear_(&w, Some(&b)).unwrap();
    for t in [&w, &b] {
        let max = t.to_f64_vec().iter().fold(0f64, |m, v| m.max(v.abs()));
        assert!(max <= 0.2 && max > 0.19, "{max}");
    }
}

#[test]
fn trunc_normal_respects_bounds() {
    ferrograd::manual_seed(1);
    let t = Tensor::zeros(&[10000], DType::F32);
    init::trunc_normal_(&t, 0.5, 1.0, 0.0, 1.0).unwrap();
    let v = t.to_f64_vec();
    assert!(v.iter().all(|&x| (0.0..=1.0).contains(&x)));
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    assert!((mean - 0.5).abs() < 0.02, "{mean}");
}

#[test]
fn dropout_scales_kept_elements() {
    ferrograd::manual_seed(2);
    let x = Tensor::full(&[1000], 3.0.into(), DType::F64)
        .requires_grad_(true)
        .unwrap();
    let y = x.dropout(0.5, true).unwrap();
    let v = y.to_f64_vec();
    assert!(v.iter().all(|&e| e == 0.0 || e == 6.0));
    let kept = v.iter().filter(|&&e| e != 0.0).count();
    assert!((400..600).contains(&kept), "{kept}");
    y.sum().unwrap().backward().unwrap();
    let g = x.grad().unwrap().to_f64_vec();
    assert!(g.iter().zip(&v).all(|(g, y)| *g == y / 3.0));
    assert_eq!(x.dropout(0.5, false).unwrap().to_f64_vec(), vec![3.0; 1000]);
    assert!(x.dropout(1.5, true).is_err());
}

#[test]
fn clip_by_total_norm_and_value() {
    let a = Tensor::zeros(&[2], DType::F64)
        .requires_grad_(true)
        .unwrap();
    let b = Tensor::zeros(&[1], DType::F64)
        .requires_grad_(true)
        .unwrap();
    let grads = |x: Vec<f64>, y: Vec<f64>| {
        a.set_grad(Some(Tensor::from_vec(x, &[2]).unwrap()))
            .unwrap();
        b.set_grad(Some(Tensor::from_vec(y, &[1]).unwrap()))
            .unwrap();
    };
    grads(vec![3.0, 4.0], vec![12.0]);
    let params = [a.clone(), b.clone()];
    let total = clip::clip_grad_norm_(&params, 1.0, 2.0, false).unwrap();
    assert_eq!(total.to_f64_vec(), vec![13.0]);
    let scale = 1.0 / (13.0 + 1e-6);
    assert_eq!(
        a.grad().unwrap().to_f64_vec(),
        vec![3.0 * scale, 4.0 * scale]
    );
    // Below the limit nothing changes.
    grads(vec![3.0, 4.0], vec![12.0]);
    clip::clip_grad_norm_(&params, 100.0, f64::INFINITY, false).unwrap();
    assert_eq!(b.grad().unwrap().to_f64_vec(), vec![12.0]);
    clip::clip_grad_value_(&params, 3.5).unwrap();
    assert_eq!(a.grad().unwrap().to_f64_vec(), vec![3.0, 3.5]);
    grads(vec![f64::NAN, 0.0], vec![0.0]);
    assert!(clip::clip_grad_norm_(&params, 1.0, 2.0, true).is_err());
}

#[test]
fn activations_pad_one_hot_normalize() {
    use ferrograd::ops::pad::PadMode;
    let x = Tensor::from_vec(vec![-2.0, -0.5, 0.5, 3.0], &[4])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let y = x.leaky_relu(0.1).unwrap();
    assert_eq!(y.to_f64_vec(), vec![-0.2, -0.05, 0.5, 3.0]);
    y.sum().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_f64_vec(), vec![0.1, 0.1, 1.0, 1.0]);
    assert_eq!(
        x.hardtanh(-1.0, 1.0).unwrap().to_f64_vec(),
        vec![-1.0, -0.5, 0.5, 1.0]
    );
    let e = x.elu(1.0, 1.0, 1.0).unwrap().to_f64_vec();
    assert!((e[0] - ((-2f64).exp() - 1.0)).abs() < 1e-15 && e[3] == 3.0);
    let ls = x.logsigmoid().unwrap().to_f64_vec();
    assert!((ls[2] - (1.0 / (1.0 + (-0.5f64).exp())).ln()).abs() < 1e-15);
    let a = Tensor::from_vec(vec![0.0, 1.0, 2.0], &[1, 3]).unwrap();
    let p = a.pad(&[2, 2], PadMode::Reflect, None).unwrap();
    assert_eq!(p.to_f64_vec(), vec![2.0, 1.0, 0.0, 1.0, 2.0, 1.0, 0.0]);
    let p = a.pad(&[1, 0, 0, 1], PadMode::Constant, Some(5.0)).unwrap();
    assert_eq!(p.shape(), &[2, 4]);
    assert_eq!(p.to_f64_vec(), vec![5.0, 0.0, 1.0, 2.0, 5.0, 5.0, 5.0, 5.0]);
    assert!(a.pad(&[3, 0], PadMode::Reflect, None).is_err());
    let h = Tensor::from_vec(vec![2i64, 0], &[2])
        .unwrap()
        .one_hot(-1)
        .unwrap();
    assert_eq!(h.to_vec::<i64>(), vec![0, 0, 1, 1, 0, 0]);
    let n = Tensor::from_vec(vec![3.0, 4.0], &[1, 2])
        .unwrap()
        .normalize(2.0, 1, 1e-12)
        .unwrap();
    assert_eq!(n.to_f64_vec(), vec![0.6, 0.8]);
}

#[test]
fn layer_norm_batch_norm_embedding() {
    let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 5.0, 5.0, 8.0], &[2, 3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let y = x.layer_norm(&[3], None, None, 0.0).unwrap().to_f64_vec();
    let s = (2.0f64 / 3.0).sqrt();
    assert!(
        (y[0] + 1.0 / s).abs() < 1e-12 && y[1].abs() < 1e-12,
        "{y:?}"
    );
    assert!(x.layer_norm(&[4], None, None, 1e-5).is_err());
    // Batch norm over the batch dim: columns (1, 5), (2, 5), (3, 8).
    let rm = Tensor::zeros(&[3], DType::F64);
    let rv = Tensor::ones(&[3], DType::F64);
    let y = x
        .batch_norm(Some(&rm), Some(&rv), None, None, true, 0.5, 0.0)
        .unwrap();
    assert_eq!(y.to_f64_vec(), vec![-1.0, -1.0, -1.0, 1.0, 1.0, 1.0]);
    assert_eq!(rm.to_f64_vec(), vec![1.5, 1.75, 2.75]);
    // unbiased batch variances 8, 4.5, 12.5
    assert_eq!(rv.to_f64_vec(), vec![4.5, 2.75, 6.75]);
    let w = Tensor::from_vec(vec![0.0, 1.0, 10.0, 11.0, 20.0, 21.0], &[3, 2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let idx = Tensor::from_vec(vec![2i64, 0, 2], &[3]).unwrap();
    let e = idx.embedding(&w, Some(0)).unwrap();
    assert_eq!(e.to_f64_vec(), vec![20.0, 21.0, 0.0, 1.0, 20.0, 21.0]);
    e.sum().unwrap().backward().unwrap();
    assert_eq!(
        w.grad().unwrap().to_f64_vec(),
        vec![0.0, 0.0, 0.0, 0.0, 2.0, 2.0]
    );
}
