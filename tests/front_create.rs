//! Tensor constructors and the global RNG (no Python needed).

use ferrograd::tensor::random;
use ferrograd::{DType, Scalar, Tensor};

#[test]
fn arange_values_and_dtypes() {
    let t = Tensor::arange(Scalar::Int(0), Scalar::Int(5), Scalar::Int(1), DType::I64).unwrap();
    assert_eq!(t.to_vec::<i64>(), vec![0, 1, 2, 3, 4]);
    let t = Tensor::arange(Scalar::Int(10), Scalar::Int(0), Scalar::Int(-3), DType::I64).unwrap();
    assert_eq!(t.to_vec::<i64>(), vec![10, 7, 4, 1]);
    let t = Tensor::arange(
        Scalar::Float(1.0),
        Scalar::Float(3.0),
        Scalar::Float(0.5),
        DType::F32,
    )
    .unwrap();
    assert_eq!(t.to_vec::<f32>(), vec![1.0, 1.5, 2.0, 2.5]);
    let t = Tensor::arange(
        Scalar::Float(0.0),
        Scalar::Float(1.0),
        Scalar::Float(0.1),
        DType::F64,
    )
    .unwrap();
    assert_eq!(t.shape(), &[10]);
    assert_eq!(t.to_vec::<f64>()[3], 0.1f64.mul_add(3.0, 0.0));
    let empty = Tensor::arange(Scalar::Int(3), Scalar::Int(3), Scalar::Int(1), DType::I64).unwrap();
    assert_eq!(empty.shape(), &[0]);
}

#[test]
fn arange_errors() {
    let err =
        |s: Scalar, e: Scalar, st: Scalar, d: DType| Tensor::arange(s, e, st, d).unwrap_err().msg;
    assert_eq!(
        err(Scalar::Int(0), Scalar::Int(5), Scalar::Int(0), DType::I64),
        "step must be nonzero"
    );
    assert_eq!(
        err(Scalar::Int(5), Scalar::Int(0), Scalar::Int(1), DType::I64),
        "upper bound and lower bound inconsistent with step sign"
    );
    assert_eq!(
        err(
            Scalar::Int(0),
            Scalar::Float(f64::INFINITY),
            Scalar::Int(1),
            DType::F32
        ),
        "unsupported range: 0 -> inf"
    );
    // An integer dtype casts the step first: 0.5 becomes 0.
    assert_eq!(
        err(
            Scalar::Int(0),
            Scalar::Int(5),
            Scalar::Float(0.5),
            DType::I64
        ),
        "step must be nonzero"
    );
    assert!(Tensor::arange(Scalar::Int(0), Scalar::Int(2), Scalar::Int(1), DType::Bool).is_err());
}

#[test]
fn linspace_endpoints_and_dtypes() {
    let t = Tensor::linspace(0.0, 1.0, 5, DType::F32).unwrap();
    assert_eq!(t.to_vec::<f32>(), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    let t = Tensor::linspace(-3.3, 7.9, 101, DType::F64).unwrap();
    let v = t.to_vec::<f64>();
    assert_eq!((v[0], v[100]), (-3.3, 7.9)); // both ends exact
    assert!(v.windows(2).all(|w| w[1] > w[0]));
    assert_eq!(
        Tensor::linspace(3.0, 4.0, 1, DType::F32)
            .unwrap()
            .to_vec::<f32>(),
        vec![3.0]
    );
    assert_eq!(
        Tensor::linspace(0.0, 1.0, 0, DType::F32).unwrap().shape(),
        &[0]
    );
    // Integer dtypes truncate the ends, compute in f64 and truncate.
    let t = Tensor::linspace(0.0, 10.0, 5, DType::I64).unwrap();
    assert_eq!(t.to_vec::<i64>(), vec![0, 2, 5, 7, 10]);
    assert!(Tensor::linspace(0.0, 1.0, 3, DType::Bool).is_err());
}

#[test]
fn eye_and_full() {
    let t = Tensor::eye(2, 3, DType::I64).unwrap();
    assert_eq!(t.to_vec::<i64>(), vec![1, 0, 0, 0, 1, 0]);
    assert_eq!(t.shape(), &[2, 3]);
    let t = Tensor::full(&[2], Scalar::Float(2.5), DType::F64);
    assert_eq!(t.to_vec::<f64>(), vec![2.5, 2.5]);
}

#[test]
fn arange_infers_its_dtype_and_refuses_a_step_that_truncates_to_zero() {
    let ints = Tensor::arange(Scalar::Int(0), Scalar::Int(3), Scalar::Int(1), None).unwrap();
    assert_eq!(ints.dtype(), DType::I64);
    let floats = Tensor::arange(Scalar::Int(0), Scalar::Float(1.0), Scalar::Int(1), None).unwrap();
    assert_eq!(floats.dtype(), DType::F32);
    // torch: ValueError for a float step of an integer range, RuntimeError for 0
    let e = Tensor::arange(
        Scalar::Int(0),
        Scalar::Int(5),
        Scalar::Float(0.5),
        DType::I64,
    );
    assert_eq!(e.unwrap_err().kind, ferrograd::ErrorKind::Value);
    let e = Tensor::arange(Scalar::Int(0), Scalar::Int(5), Scalar::Int(0), None);
    assert_eq!(e.unwrap_err().kind, ferrograd::ErrorKind::Runtime);
}

#[test]
fn from_scalars_converts_as_torch_tensor_does() {
    let mixed = [Scalar::Bool(true), Scalar::Int(-2), Scalar::Float(2.75)];
    let t = Tensor::from_scalars(&mixed, &[3], DType::F64).unwrap();
    assert_eq!(t.to_vec::<f64>(), vec![1.0, -2.0, 2.75]);
    let t = Tensor::from_scalars(&mixed, &[1, 3], DType::I64).unwrap();
    assert_eq!(
        (t.shape(), t.to_vec::<i64>()),
        (&[1usize, 3][..], vec![1, -2, 2])
    );
    let t = Tensor::from_scalars(&mixed, &[3], DType::Bool).unwrap();
    assert_eq!(t.to_vec::<bool>(), vec![true, true, true]);
    // uint8 takes -1 (wrapping to 255) but not 256
    let t = Tensor::from_scalars(&[Scalar::Int(-1)], &[1], DType::U8).unwrap();
    assert_eq!(t.to_vec::<i64>(), vec![255]);
    let e = Tensor::from_scalars(&[Scalar::Int(256)], &[1], DType::U8).unwrap_err();
    assert_eq!(
        e.msg,
        "value cannot be converted to type uint8 without overflow"
    );
    // an integer above 2^53 rounds once into float32, not through float64
    let big = (1i64 << 60) + (1 << 36) + 1;
    let t = Tensor::from_scalars(&[Scalar::Int(big)], &[1], DType::F32).unwrap();
    assert_eq!(t.to_vec::<f32>(), vec![big as f32]);
}

/// Everything touching the global generator lives in one test: tests in a
/// binary run in parallel and would otherwise interleave their draws.
#[test]
fn global_generator() {
    random::manual_seed(42);
    assert_eq!(random::initial_seed(), 42);
    let a = Tensor::rand(&[1000], DType::F32).unwrap().to_vec::<f32>();
    random::manual_seed(42);
    let b = Tensor::rand(&[1000], DType::F32).unwrap().to_vec::<f32>();
    assert_eq!(a, b);
    assert!(a.iter().all(|&x| (0.0..1.0).contains(&x)));

    let d = Tensor::rand(&[1000], DType::F64).unwrap().to_vec::<f64>();
    assert!(d.iter().all(|&x| (0.0..1.0).contains(&x)));

    let n = Tensor::randn(&[20000], DType::F64).unwrap().to_vec::<f64>();
    let mean = n.iter().sum::<f64>() / n.len() as f64;
    let var = n.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n.len() as f64;
    assert!(mean.abs() < 0.03 && (var - 1.0).abs() < 0.05);

    let r = Tensor::randint(-2, 3, &[5000], DType::I64)
        .unwrap()
        .to_vec::<i64>();
    assert_eq!(*r.iter().min().unwrap(), -2);
    assert_eq!(*r.iter().max().unwrap(), 2);
    assert!(Tensor::randint(5, 5, &[1], DType::I64).is_err());

    let mut p = Tensor::randperm(100).unwrap().to_vec::<i64>();
    p.sort();
    assert_eq!(p, (0..100).collect::<Vec<_>>());

    let state = random::rng_state();
    let x = Tensor::randn(&[8], DType::F32).unwrap().to_vec::<f32>();
    random::set_rng_state(&state).unwrap();
    assert_eq!(Tensor::randn(&[8], DType::F32).unwrap().to_vec::<f32>(), x);
    assert!(random::set_rng_state(&[0, 0, 0, 0, 1]).is_err());

    assert!(Tensor::rand(&[2], DType::I64).is_err());
    assert!(Tensor::randn(&[2], DType::Bool).is_err());
}
