//! Pointwise ops from Rust, continued: dtype promotion, in-place variants,
//! errors, and the other op families called from Rust (rounding, einsum,
//! losses, sorting, addmm, random fills).

use ferrograd::{autograd, DType, Result, Scalar, Tensor};

mod common;
use common::{assert_close, assert_msg, away, gradcheck, grads, leaf, same, t, tb1, ti1, uniform};

const NAN: f64 = f64::NAN;

// ----- dtypes -----

#[test]
fn dtype_promotion() {
    let i = ti1(&[1, -2]);
    let b = tb1(&[true, false]);
    assert_eq!(i.exp().unwrap().dtype(), DType::F32);
    assert_eq!(b.sigmoid().unwrap().dtype(), DType::F32);
    assert_eq!(i.abs().unwrap().dtype(), DType::I64);
    assert_eq!(i.relu().unwrap().dtype(), DType::I64);
    assert_eq!(b.sign().unwrap().dtype(), DType::Bool);
    assert_eq!(b.square().unwrap().dtype(), DType::I64);
    assert_eq!(i.pow_scalar(2).unwrap().dtype(), DType::I64);
    assert_eq!(i.pow_scalar(0.5).unwrap().dtype(), DType::F32);
    assert_eq!(Tensor::scalar_pow(2, &i).unwrap().dtype(), DType::I64);
    assert_eq!(Tensor::scalar_pow(2.5, &i).unwrap().dtype(), DType::F32);
    assert_eq!(
        i.clamp(Some(Scalar::Float(0.5)), None).unwrap().dtype(),
        DType::F32
    );
    assert_eq!(
        i.clamp(Some(Scalar::Int(0)), Some(Scalar::Int(3)))
            .unwrap()
            .dtype(),
        DType::I64
    );
    assert_eq!(i.lt_scalar(1.5).unwrap().dtype(), DType::Bool);
    assert_eq!(i.bitwise_xor(&b).unwrap().dtype(), DType::I64);
    assert_eq!(
        b.maximum(&tb1(&[false, false])).unwrap().dtype(),
        DType::Bool
    );
    let f = t(&[1.0, 2.0], &[2]).to_dtype(DType::F32).unwrap();
    assert_eq!(f.maximum(&i).unwrap().dtype(), DType::F32);
    assert_eq!(
        Tensor::where_cond(&b, &i, &Tensor::scalar(Scalar::Float(2.5), DType::F32))
            .unwrap()
            .dtype(),
        DType::F32
    );
}

#[test]
fn integer_and_bool_values() {
    assert_eq!(
        ti1(&[2, -1, 1, 0, -2])
            .pow(&ti1(&[-1, -1, -1, -1, -2]))
            .unwrap()
            .to_vec::<i64>(),
        vec![0, -1, 1, 0, 0]
    );
    assert_eq!(
        ti1(&[3, -2]).pow_scalar(3).unwrap().to_vec::<i64>(),
        vec![27, -8]
    );
    assert_eq!(
        ti1(&[1, -2]).bitwise_not().unwrap().to_vec::<i64>(),
        vec![-2, 1]
    );
    assert_eq!(
        tb1(&[true, false]).bitwise_not().unwrap().to_vec::<bool>(),
        vec![false, true]
    );
    assert_eq!(
        ti1(&[0, 2, 0])
            .logical_xor(&t(&[0.0, 0.0, NAN], &[3]))
            .unwrap()
            .to_vec::<bool>(),
        vec![false, true, true]
    );
    assert_eq!(
        ti1(&[1, 5, 9])
            .clamp(Some(Scalar::Int(2)), Some(Scalar::Int(6)))
            .unwrap()
            .to_vec::<i64>(),
        vec![2, 5, 6]
    );
    let a = t(&[1.0, 2.0, NAN], &[3]);
    let b = t(&[2.0, 2.0, NAN], &[3]);
    assert_eq!(a.lt(&b).unwrap().to_vec::<bool>(), vec![true, false, false]);
    assert_eq!(a.le(&b).unwrap().to_vec::<bool>(), vec![true, true, false]);
    assert_eq!(a.eq(&b).unwrap().to_vec::<bool>(), vec![false, true, false]);
    assert_eq!(a.ne(&b).unwrap().to_vec::<bool>(), vec![true, false, true]);
    assert_eq!(
        a.ge_scalar(1.5).unwrap().to_vec::<bool>(),
        vec![false, true, false]
    );
    assert_eq!(
        a.isnan().unwrap().to_vec::<bool>(),
        vec![false, false, true]
    );
}

// ----- in-place -----

#[test]
fn inplace_on_non_leaf_bumps_version_and_gives_grads() {
    type Pair = (
        &'static str,
        fn(&Tensor) -> Result<()>,
        fn(&Tensor) -> Result<Tensor>,
    );
    let cases: Vec<Pair> = vec![
        ("exp_", |t| t.exp_(), |t| t.exp()),
        ("tanh_", |t| t.tanh_(), |t| t.tanh()),
        ("sigmoid_", |t| t.sigmoid_(), |t| t.sigmoid()),
        ("relu_", |t| t.relu_(), |t| t.relu()),
        ("sin_", |t| t.sin_(), |t| t.sin()),
        ("square_", |t| t.square_(), |t| t.square()),
        ("reciprocal_", |t| t.reciprocal_(), |t| t.reciprocal()),
        ("abs_", |t| t.abs_(), |t| t.abs()),
        ("neg_", |t| t.neg_(), |t| t.neg()),
        (
            "clamp_",
            |t| t.clamp_(Some(Scalar::Float(-0.5)), Some(Scalar::Float(0.5))),
            |t| t.clamp(Some(Scalar::Float(-0.5)), Some(Scalar::Float(0.5))),
        ),
        ("pow_", |t| t.pow_scalar_(3), |t| t.pow_scalar(3)),
        ("gelu_", |t| t.gelu_("tanh"), |t| t.gelu("tanh")),
        ("silu_", |t| t.silu_(), |t| t.silu()),
    ];
    let v = away(6, 60);
    let w = t(&uniform(6, 61, -1.0, 1.0), &[2, 3]);
    for (name, inplace, outofplace) in cases {
        let x0 = leaf(&v, &[2, 3]);
        let r = outofplace(&x0.mul_scalar(1.0).unwrap()).unwrap();
        r.mul(&w).unwrap().sum().unwrap().backward().unwrap();

        let x = leaf(&v, &[2, 3]);
        let y = x.mul_scalar(1.0).unwrap();
        let before = y.version();
        inplace(&y).unwrap();
        assert_eq!(y.version(), before + 1, "{name}");
        assert_close(&y.to_f64_vec(), &r.to_f64_vec(), 1e-15, name);
        y.mul(&w).unwrap().sum().unwrap().backward().unwrap();
        assert_close(
            &x.grad().unwrap().to_f64_vec(),
            &x0.grad().unwrap().to_f64_vec(),
            1e-15,
            name,
        );
    }
}

#[test]
fn inplace_fast_path_without_grad() {
    let v = uniform(8, 62, -2.0, 2.0);
    let x = t(&v, &[2, 4]);
    x.exp_().unwrap();
    assert_eq!(x.version(), 1);
    assert_close(
        &x.to_f64_vec(),
        &v.iter().map(|a| a.exp()).collect::<Vec<_>>(),
        1e-15,
        "exp_",
    );
    // a transposed (non-contiguous) view, float32
    let base = t(&v, &[2, 4]).to_dtype(DType::F32).unwrap();
    let view = base.t().unwrap();
    view.sigmoid_().unwrap();
    assert_eq!(base.version(), 1);
    let expect: Vec<f64> = v
        .iter()
        .map(|a| 1.0 / (1.0 + (-(*a as f32) as f64).exp()))
        .collect();
    assert_close(&base.to_f64_vec(), &expect, 1e-6, "sigmoid_ on view");
    // integers keep their dtype
    let i = ti1(&[-3, 4]);
    i.relu_().unwrap();
    i.abs_().unwrap();
    assert_eq!(i.to_vec::<i64>(), vec![0, 4]);
    assert_eq!(i.version(), 2);
    // a leaf that requires grad may be modified under no_grad
    let l = leaf(&[1.0, 4.0], &[2]);
    {
        let _g = autograd::no_grad();
        l.sqrt_().unwrap();
    }
    assert_eq!(l.to_f64_vec(), vec![1.0, 2.0]);
    assert_eq!(l.version(), 1);
}

#[test]
fn inplace_on_broadcast_view_is_refused_as_torch_refuses_it() {
    // an expanded view has elements sharing memory: torch raises, and
    // nothing is written
    let base = t(&[1.0, 2.0], &[2, 1]);
    let ex = base.expand(&[2, 3]).unwrap();
    let err = ex.exp_().unwrap_err().to_string();
    assert!(err.contains("single memory location"), "{err}");
    assert!(ex.add_(&t(&[1.0], &[1])).is_err());
    assert_eq!(base.to_f64_vec(), vec![1.0, 2.0]);
    assert_eq!(base.version(), 0);
}

#[test]
fn inplace_on_leaf_requiring_grad_is_an_error() {
    let x = leaf(&[1.0, 2.0], &[2]);
    for r in [
        x.exp_(),
        x.relu_(),
        x.clamp_min_(0.0),
        x.pow_scalar_(2),
        x.sigmoid_(),
    ] {
        let e = r.unwrap_err();
        assert_msg(&e, "a leaf Variable that requires grad");
    }
    assert_eq!(x.version(), 0);
    assert_eq!(x.to_f64_vec(), vec![1.0, 2.0]);
    let e = x.t().unwrap().tanh_().unwrap_err();
    assert_msg(&e, "view of a leaf Variable");
}

#[test]
fn inplace_with_tensor_operands() {
    let x = leaf(&[0.5, 1.5, 2.5], &[3]);
    let hi = leaf(&[1.0, 1.0, 3.0], &[3]);
    let y = x.mul_scalar(1.0).unwrap();
    y.clamp_tensor_(None, Some(&hi)).unwrap();
    y.sum().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_f64_vec(), vec![1.0, 0.0, 1.0]);
    assert_eq!(hi.grad().unwrap().to_f64_vec(), vec![0.0, 1.0, 0.0]);

    let b = leaf(&[1.5, 2.0], &[2]);
    let e = leaf(&[2.0, 3.0], &[2]);
    let z = b.mul_scalar(1.0).unwrap();
    z.pow_(&e).unwrap();
    z.sum().unwrap().backward().unwrap();
    assert_close(
        &e.grad().unwrap().to_f64_vec(),
        &[1.5f64.powi(2) * 1.5f64.ln(), 8.0 * 2f64.ln()],
        1e-15,
        "pow_ d/de",
    );
    assert_close(
        &b.grad().unwrap().to_f64_vec(),
        &[3.0, 12.0],
        1e-15,
        "pow_ d/db",
    );

    let m = tb1(&[true, false, true]);
    m.bitwise_and_(&tb1(&[true, true, false])).unwrap();
    assert_eq!(m.to_vec::<bool>(), vec![true, false, false]);
    let f = t(&[1.5, 0.0], &[2]);
    f.logical_not_().unwrap();
    assert_eq!(f.to_f64_vec(), vec![0.0, 1.0]);
    assert_eq!(f.dtype(), DType::F64);
}

// ----- errors -----

#[test]
fn errors_match_torch() {
    let msg = |r: Result<Tensor>| r.unwrap_err().msg;
    assert!(msg(tb1(&[true]).neg()).contains("Negation, the `-` operator, on a bool tensor"));
    assert!(msg(tb1(&[true]).abs()).contains("\"abs_cpu\" not implemented for 'Bool'"));
    assert!(msg(tb1(&[true]).relu()).contains("Boolean inputs not supported for relu"));
    assert!(msg(ti1(&[1]).pow_scalar(-1)).contains("Integers to negative integer powers"));
    assert!(msg(tb1(&[true]).pow(&tb1(&[true]))).contains("\"pow\" not implemented for 'Bool'"));
    assert!(
        msg(Tensor::where_cond(&ti1(&[1]), &ti1(&[1]), &ti1(&[2]))).contains(
            "where expected condition to be a boolean tensor, but got a tensor with dtype Long"
        )
    );
    assert!(msg(t(&[1.0], &[1]).clamp(None, None)).contains("At least one of 'min' or 'max'"));
    assert!(
        msg(t(&[1.0], &[1]).clamp_tensor(None, None)).contains("At least one of 'min' or 'max'")
    );
    assert!(msg(t(&[1.0], &[1]).gelu("exact"))
        .contains("approximate argument must be either none or tanh"));
    assert!(msg(ti1(&[1]).gelu("none")).contains("\"GeluKernelImpl\" not implemented for 'Long'"));
    assert!(msg(ti1(&[1]).silu()).contains("\"silu_cpu\" not implemented for 'Long'"));
    assert!(
        msg(ti1(&[1]).softplus(1.0, 20.0)).contains("\"softplus_cpu\" not implemented for 'Long'")
    );
    assert!(msg(t(&[1.0], &[1]).bitwise_and(&tb1(&[true])))
        .contains("\"bitwise_and_cpu\" not implemented for 'Double'"));
    assert!(msg(t(&[1.0], &[1]).bitwise_not()).contains("\"bitwise_not_cpu\" not implemented"));
    assert!(
        msg(t(&[1.0, 2.0], &[2]).lt(&t(&[1.0, 2.0, 3.0], &[3]))).contains("must match the size")
    );
    // failed in-place ops change nothing
    let i = ti1(&[1, 2]);
    assert!(i.exp_().unwrap_err().msg.contains("can't be cast"));
    assert_eq!(i.to_vec::<i64>(), vec![1, 2]);
    assert_eq!(i.version(), 0);
    let f = t(&[1.0, 2.0], &[2]);
    let e = f.pow_(&t(&[1.0, 2.0], &[2, 1])).unwrap_err();
    assert_msg(&e, "doesn't match the broadcast shape");
    assert_eq!(f.to_f64_vec(), vec![1.0, 2.0]);
    assert_eq!(f.version(), 0);
}

#[test]
fn comparisons_are_not_differentiable() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let c = x.gt_scalar(1.0).unwrap();
    assert!(!c.requires_grad());
    assert_eq!(c.to_vec::<bool>(), vec![false, true]);
    let y = x.sigmoid().unwrap();
    assert_eq!(y.grad_fn().unwrap().name(), "SigmoidBackward0");
    assert_eq!(x.relu().unwrap().grad_fn().unwrap().name(), "ReluBackward0");
    assert_eq!(
        x.square().unwrap().grad_fn().unwrap().name(),
        "PowBackward0"
    );
    assert_eq!(x.pow(&x).unwrap().grad_fn().unwrap().name(), "PowBackward1");
    assert_eq!(
        Tensor::scalar_pow(2, &x).unwrap().grad_fn().unwrap().name(),
        "PowBackward2"
    );
    assert_eq!(
        x.clamp_min(0.0).unwrap().grad_fn().unwrap().name(),
        "ClampMinBackward0"
    );
}

#[test]
fn truth_reductions_and_closeness() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 0.0, f64::NAN, 2.0], &[2, 2])?;
    assert_eq!(x.all(None, false)?.to_f64_vec(), vec![0.0]);
    assert_eq!(x.any(None, false)?.to_f64_vec(), vec![1.0]);
    assert_eq!(x.all(Some(&[1]), false)?.to_f64_vec(), vec![0.0, 1.0]);
    assert_eq!(x.all(Some(&[]), false)?.shape(), &[2, 2]);
    assert_eq!(x.any(Some(&[0]), true)?.shape(), &[1, 2]);

    let a = Tensor::from_vec(vec![1.0f32, 2.0, f32::NAN, f32::INFINITY], &[4])?;
    let b = Tensor::from_vec(vec![1.0f32, 2.00001, f32::NAN, f32::INFINITY], &[4])?;
    let close = |eq_nan| a.isclose(&b, 1e-5, 1e-8, eq_nan).map(|t| t.to_f64_vec());
    assert_eq!(close(false)?, vec![1.0, 1.0, 0.0, 1.0]);
    assert_eq!(close(true)?, vec![1.0, 1.0, 1.0, 1.0]);
    assert!(!a.allclose(&b, 0.0, 0.0, true)?);
    assert!(a.allclose(&b, 1e-5, 1e-8, true)?);
    let err = a
        .isclose(&a.to_dtype(DType::F64)?, 1e-5, 1e-8, false)
        .unwrap_err();
    assert_eq!(err.msg, "Float did not match Double");
    assert!(a.isclose(&b, -1.0, 0.0, false).is_err());

    assert!(!a.equal(&a.to_dtype(DType::F64)?)?); // NaN != NaN
    let i = Tensor::from_vec(vec![1i64, 2], &[2])?;
    assert!(i.equal(&Tensor::from_vec(vec![1.0f32, 2.0], &[2])?)?);
    assert!(!i.equal(&Tensor::from_vec(vec![1i64, 2], &[1, 2])?)?);
    Ok(())
}

#[test]
fn rounding_and_rounding_division() {
    use ferrograd::ops::rounding::RoundingMode;
    let a = t(&[5.5, -5.5, 3.0, -0.0, 2.5, -2.5], &[6]);
    let b = t(&[2.0, 2.0, -2.0, 3.0, 2.0, 2.0], &[6]);
    same(
        &a.remainder(&b).unwrap().to_f64_vec(),
        &[1.5, 0.5, -1.0, 0.0, 0.5, 1.5],
    );
    same(
        &a.fmod(&b).unwrap().to_f64_vec(),
        &[1.5, -1.5, 1.0, 0.0, 0.5, -0.5],
    );
    same(
        &a.floor_divide(&b).unwrap().to_f64_vec(),
        &[2.0, -3.0, -2.0, 0.0, 1.0, -2.0],
    );
    let trunc = a.div_rounding(&b, Some(RoundingMode::Trunc)).unwrap();
    same(&trunc.to_f64_vec(), &[2.0, -2.0, -1.0, 0.0, 1.0, -1.0]);
    same(
        &a.round(0).unwrap().to_f64_vec(),
        &[6.0, -6.0, 3.0, 0.0, 2.0, -2.0],
    );
    same(
        &a.floor().unwrap().to_f64_vec(),
        &[5.0, -6.0, 3.0, 0.0, 2.0, -3.0],
    );
    same(
        &a.frac().unwrap().to_f64_vec(),
        &[0.5, -0.5, 0.0, 0.0, 0.5, -0.5],
    );
    // Integers: Python's floor semantics, and zero divisors rejected.
    let (i, j) = (ti1(&[7, -7]), ti1(&[2, 2]));
    assert_eq!(i.remainder(&j).unwrap().to_vec::<i64>(), vec![1, 1]);
    assert_eq!(i.floor_divide(&j).unwrap().to_vec::<i64>(), vec![3, -4]);
    assert!(i.fmod(&ti1(&[1, 0])).is_err());
    assert!(RoundingMode::parse(Some("round")).is_err());
    // d/dother of remainder is -floor(self / other); rounding has none.
    let g = grads(|x| x[0].remainder(&x[1]), &[&[5.5, -5.5], &[2.0, 2.0]]);
    same(&g[0], &[1.0, 1.0]);
    same(&g[1], &[-2.0, 3.0]);
    same(&grads(|x| x[0].ceil(), &[&[0.3]])[0], &[0.0]);
}

#[test]
fn rearranging_ops() {
    let m = t(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]);
    same(
        &m.flip(&[1]).unwrap().to_f64_vec(),
        &[2.0, 1.0, 0.0, 5.0, 4.0, 3.0],
    );
    same(
        &m.roll(&[1], &[1]).unwrap().to_f64_vec(),
        &[2.0, 0.0, 1.0, 5.0, 3.0, 4.0],
    );
    same(
        &m.repeat(&[1, 2]).unwrap().to_f64_vec(),
        &[0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0],
    );
    same(
        &m.triu(0).unwrap().to_f64_vec(),
        &[0.0, 1.0, 2.0, 0.0, 4.0, 5.0],
    );
    same(&m.diagonal(1, 0, 1).unwrap().to_f64_vec(), &[1.0, 5.0]);
    same(&m.trace().unwrap().to_f64_vec(), &[4.0]);
    assert_eq!(m.movedim(&[0], &[1]).unwrap().shape(), &[3, 2]);
    // Gradients: repeat sums the tiles; diagonal scatters onto zeros.
    let g = grads(|x| x[0].repeat(&[3]), &[&[1.0, 2.0]]);
    same(&g[0], &[3.0, 3.0]);
    let g = grads(
        |x| x[0].reshape(&[2, 2])?.diagonal(0, 0, 1),
        &[&[1.0, 2.0, 3.0, 4.0]],
    );
    same(&g[0], &[1.0, 0.0, 0.0, 1.0]);
    gradcheck(
        "flip",
        &|x| x[0].flip(&[0, 1]),
        &[(uniform(6, 90, -1.0, 1.0), vec![2, 3])],
    );
    gradcheck(
        "tril",
        &|x| x[0].tril(-1),
        &[(uniform(9, 91, -1.0, 1.0), vec![3, 3])],
    );
}

#[test]
fn einsum_contracts_and_differentiates() {
    use ferrograd::ops::einsum::einsum;
    let a = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = t(&[1.0, 0.0, 0.0, 1.0, 1.0, 1.0], &[3, 2]);
    same(
        &einsum("ij,jk->ik", &[a.clone(), b.clone()])
            .unwrap()
            .to_f64_vec(),
        &[4.0, 5.0, 10.0, 11.0],
    );
    same(
        &einsum("ij->j", std::slice::from_ref(&a))
            .unwrap()
            .to_f64_vec(),
        &[5.0, 7.0, 9.0],
    );
    same(
        &einsum("ij,ij", &[a.clone(), a.clone()])
            .unwrap()
            .to_f64_vec(),
        &[91.0],
    );
    assert!(einsum("ij->kk", std::slice::from_ref(&a)).is_err());
    gradcheck(
        "einsum",
        &|x| einsum("ij,jk,k->i", &[x[0].clone(), x[1].clone(), x[2].clone()]),
        &[
            (uniform(6, 92, -1.0, 1.0), vec![2, 3]),
            (uniform(12, 93, -1.0, 1.0), vec![3, 4]),
            (uniform(4, 94, -1.0, 1.0), vec![4]),
        ],
    );
}

#[test]
fn losses_from_rust() {
    use ferrograd::ops::loss::{cross_entropy, mse_loss, Reduction};
    let x = t(&[1.0, 2.0, 4.0], &[3]);
    let y = t(&[0.0, 2.0, 1.0], &[3]);
    same(
        &mse_loss(&x, &y, Reduction::Sum).unwrap().to_f64_vec(),
        &[10.0],
    );
    assert!(Reduction::parse("avg").is_err());
    let logits = leaf(&[2.0, 0.0, 0.0, 0.0, 0.0, 3.0], &[2, 3]);
    let target = ti1(&[0, 2]);
    let loss = cross_entropy(&logits, &target, None, -100, Reduction::Mean, 0.0).unwrap();
    loss.backward().unwrap();
    // d/dlogits = (softmax - onehot) / batch: each row sums to zero.
    let g = logits.grad().unwrap().to_f64_vec();
    assert!((g[0] + g[1] + g[2]).abs() < 1e-12 && g[0] < 0.0 && g[1] > 0.0);
    assert!(cross_entropy(&logits, &ti1(&[0, 3]), None, -100, Reduction::Mean, 0.0).is_err());
}

#[test]
fn sorting_from_rust() {
    let x = t(&[3.0, 1.0, f64::NAN, 2.0, 1.0], &[5]);
    let (v, i) = x.sort(0, false).unwrap();
    assert_eq!(i.to_vec::<i64>(), vec![1, 4, 3, 0, 2]);
    same(&v.to_f64_vec(), &[1.0, 1.0, 2.0, 3.0, f64::NAN]);
    let (v, _) = t(&[3.0, 1.0, 2.0], &[3]).topk(2, 0, true).unwrap();
    same(&v.to_f64_vec(), &[3.0, 2.0]);
    assert!(t(&[1.0], &[1]).topk(2, 0, true).is_err());
    let g = grads(
        |x| x[0].sort(0, true)?.0.mul(&t(&[1.0, 2.0, 3.0], &[3])),
        &[&[2.0, 3.0, 1.0]],
    );
    same(&g[0], &[2.0, 1.0, 3.0]);
}

#[test]
fn addmm_family_from_rust() {
    let x = t(&[1.0, 1.0, 1.0, 1.0], &[2, 2]);
    let a = t(&[1.0; 6], &[2, 3]);
    let b = t(&[2.0; 6], &[3, 2]);
    let r = x.addmm(&a, &b, Scalar::Float(0.5), Scalar::Int(2)).unwrap();
    same(&r.to_f64_vec(), &[12.5; 4]);
    let nan = t(&[f64::NAN; 4], &[2, 2]);
    same(
        &nan.addmm(&a, &b, Scalar::Int(0), Scalar::Int(1))
            .unwrap()
            .to_f64_vec(),
        &[6.0; 4],
    );
    gradcheck(
        "addmm",
        &|x| x[0].addmm(&x[1], &x[2], Scalar::Float(0.5), Scalar::Float(-2.0)),
        &[
            (uniform(4, 95, -1.0, 1.0), vec![2, 2]),
            (uniform(6, 96, -1.0, 1.0), vec![2, 3]),
            (uniform(6, 97, -1.0, 1.0), vec![3, 2]),
        ],
    );
}

#[test]
fn random_fills_from_rust() {
    ferrograd::manual_seed(5);
    let x = Tensor::zeros(&[10_000], DType::F64);
    x.uniform_(-1.0, 1.0).unwrap();
    let v = x.to_f64_vec();
    assert!(v.iter().all(|&u| (-1.0..1.0).contains(&u)));
    assert!((v.iter().sum::<f64>() / v.len() as f64).abs() < 0.05);
    assert!(x.normal_(0.0, -1.0).is_err());
    let i = Tensor::zeros(&[100], DType::I64);
    i.bernoulli_(1.0).unwrap();
    assert_eq!(i.to_vec::<i64>().iter().sum::<i64>(), 100);
}
