//! Pointwise ops from Rust: numeric float64 gradchecks (first and second
//! order) of the unary and binary op tables, and torch's values at edge
//! cases.

use ferrograd::{DType, Scalar, Tensor};

mod common;
use common::{assert_close, away, gradcheck, gradgradcheck, grads, leaf, same, t, uniform, Op};

fn one(v: Vec<f64>) -> Vec<(Vec<f64>, Vec<usize>)> {
    vec![(v, vec![3, 4])]
}

// ----- the op table -----

#[allow(clippy::type_complexity)]
fn unary_ops() -> Vec<(&'static str, &'static Op, Vec<f64>, bool)> {
    // (name, op, input values (3x4), smooth enough for a second-order check)
    let n = 12;
    vec![
        ("exp", &|x| x[0].exp(), uniform(n, 1, -2.0, 2.0), true),
        ("log", &|x| x[0].log(), uniform(n, 2, 0.5, 2.0), true),
        ("log1p", &|x| x[0].log1p(), uniform(n, 3, 0.5, 2.0), true),
        ("expm1", &|x| x[0].expm1(), uniform(n, 4, -2.0, 2.0), true),
        ("sqrt", &|x| x[0].sqrt(), uniform(n, 5, 0.5, 2.0), true),
        ("rsqrt", &|x| x[0].rsqrt(), uniform(n, 6, 0.5, 2.0), true),
        ("abs", &|x| x[0].abs(), away(n, 7), true),
        (
            "sign",
            &|x| x[0].sign()?.add(&x[0].mul_scalar(0.5)?),
            away(n, 8),
            false,
        ),
        ("sin", &|x| x[0].sin(), uniform(n, 9, -3.0, 3.0), true),
        ("asin", &|x| x[0].asin(), uniform(n, 71, -0.9, 0.9), true),
        ("acos", &|x| x[0].acos(), uniform(n, 72, -0.9, 0.9), true),
        ("atan", &|x| x[0].atan(), uniform(n, 73, -3.0, 3.0), true),
        ("sinh", &|x| x[0].sinh(), uniform(n, 74, -2.0, 2.0), true),
        ("cosh", &|x| x[0].cosh(), uniform(n, 75, -2.0, 2.0), true),
        ("asinh", &|x| x[0].asinh(), uniform(n, 76, -3.0, 3.0), true),
        ("acosh", &|x| x[0].acosh(), uniform(n, 77, 1.5, 3.0), true),
        ("atanh", &|x| x[0].atanh(), uniform(n, 78, -0.9, 0.9), true),
        ("log2", &|x| x[0].log2(), uniform(n, 79, 0.5, 2.0), true),
        ("log10", &|x| x[0].log10(), uniform(n, 80, 0.5, 2.0), true),
        ("exp2", &|x| x[0].exp2(), uniform(n, 81, -2.0, 2.0), true),
        ("erf", &|x| x[0].erf(), uniform(n, 82, -2.0, 2.0), true),
        ("erfc", &|x| x[0].erfc(), uniform(n, 83, -2.0, 2.0), true),
        (
            "erfinv",
            &|x| x[0].erfinv(),
            uniform(n, 84, -0.9, 0.9),
            true,
        ),
        ("cos", &|x| x[0].cos(), uniform(n, 10, -3.0, 3.0), true),
        ("tan", &|x| x[0].tan(), uniform(n, 11, -1.0, 1.0), true),
        ("tanh", &|x| x[0].tanh(), uniform(n, 12, -2.0, 2.0), true),
        (
            "sigmoid",
            &|x| x[0].sigmoid(),
            uniform(n, 13, -3.0, 3.0),
            true,
        ),
        ("relu", &|x| x[0].relu(), away(n, 14), true),
        (
            "gelu",
            &|x| x[0].gelu("none"),
            uniform(n, 15, -3.0, 3.0),
            true,
        ),
        (
            "gelu_tanh",
            &|x| x[0].gelu("tanh"),
            uniform(n, 16, -3.0, 3.0),
            true,
        ),
        ("silu", &|x| x[0].silu(), uniform(n, 17, -3.0, 3.0), true),
        (
            "softplus",
            &|x| x[0].softplus(1.0, 20.0),
            uniform(n, 18, -3.0, 3.0),
            true,
        ),
        (
            "softplus_beta_threshold",
            &|x| x[0].mul_scalar(3.0)?.softplus(2.0, 1.0),
            away(n, 19),
            true,
        ),
        ("reciprocal", &|x| x[0].reciprocal(), away(n, 20), true),
        (
            "square",
            &|x| x[0].square(),
            uniform(n, 21, -2.0, 2.0),
            true,
        ),
        (
            "pow2",
            &|x| x[0].pow_scalar(2),
            uniform(n, 22, -2.0, 2.0),
            true,
        ),
        (
            "pow3",
            &|x| x[0].pow_scalar(3),
            uniform(n, 23, -2.0, 2.0),
            true,
        ),
        (
            "pow_half",
            &|x| x[0].pow_scalar(0.5),
            uniform(n, 24, 0.5, 2.0),
            true,
        ),
        (
            "pow_neg",
            &|x| x[0].pow_scalar(-1.5),
            uniform(n, 25, 0.5, 2.0),
            true,
        ),
        ("pow_m1", &|x| x[0].pow_scalar(-1), away(n, 26), true),
        ("pow_m2", &|x| x[0].pow_scalar(-2), away(n, 27), true),
        (
            "pow_2_5",
            &|x| x[0].pow_scalar(2.5),
            uniform(n, 28, 0.5, 2.0),
            true,
        ),
        (
            "pow0",
            &|x| x[0].pow_scalar(0)?.add(&x[0]),
            uniform(n, 29, -2.0, 2.0),
            true,
        ),
        (
            "rpow",
            &|x| Tensor::scalar_pow(2, &x[0]),
            uniform(n, 30, -2.0, 2.0),
            true,
        ),
        (
            "rpow_frac",
            &|x| Tensor::scalar_pow(0.5, &x[0]),
            uniform(n, 31, -2.0, 2.0),
            true,
        ),
        (
            "clamp",
            &|x| x[0].clamp(Some(Scalar::Float(-0.5)), Some(Scalar::Float(0.7))),
            away(n, 32),
            true,
        ),
        ("clamp_min", &|x| x[0].clamp_min(0.5), away(n, 33), true),
        ("clamp_max", &|x| x[0].clamp_max(-0.5), away(n, 34), true),
        (
            "where_scalar",
            &|x| {
                let c = x[0].gt_scalar(0.0)?;
                Tensor::where_cond(
                    &c,
                    &x[0].mul(&x[0])?,
                    &Tensor::scalar(Scalar::Float(0.5), DType::F64),
                )
            },
            away(n, 35),
            true,
        ),
        ("neg", &|x| x[0].neg(), uniform(n, 36, -2.0, 2.0), true),
    ]
}

#[test]
fn unary_gradcheck() {
    for (name, f, v, _) in unary_ops() {
        gradcheck(name, f, &one(v));
    }
}

#[test]
fn unary_gradgradcheck() {
    for (name, f, v, smooth) in unary_ops() {
        if smooth {
            gradgradcheck(name, f, &one(v));
        }
    }
}

#[test]
fn unary_gradcheck_non_contiguous() {
    // the op reads a transposed view of a (4, 3) leaf
    for (name, f, v, _) in unary_ops() {
        let base = leaf(&v, &[4, 3]);
        let out = f(&[base.t().unwrap()]).unwrap();
        assert_eq!(out.shape(), &[3, 4], "{name}");
        out.sum().unwrap().backward().unwrap();
        let g_strided = base.grad().unwrap().t().unwrap().to_f64_vec();
        // same values through a contiguous leaf
        let vt = t(&v, &[4, 3])
            .t()
            .unwrap()
            .contiguous()
            .unwrap()
            .to_f64_vec();
        let x = leaf(&vt, &[3, 4]);
        let out2 = f(std::slice::from_ref(&x)).unwrap();
        assert_close(&out.to_f64_vec(), &out2.to_f64_vec(), 1e-15, name);
        out2.sum().unwrap().backward().unwrap();
        assert_close(&g_strided, &x.grad().unwrap().to_f64_vec(), 1e-15, name);
    }
}

/// An input of `shape` with values in [-2, 2).
fn arg(shape: &[usize], seed: u64) -> (Vec<f64>, Vec<usize>) {
    (
        uniform(shape.iter().product(), seed, -2.0, 2.0),
        shape.to_vec(),
    )
}

#[allow(clippy::type_complexity)]
fn binary_ops() -> Vec<(&'static str, &'static Op, Vec<(Vec<f64>, Vec<usize>)>, bool)> {
    vec![
        (
            "pow",
            &|x| x[0].pow(&x[1]),
            vec![(uniform(6, 40, 0.5, 2.0), vec![2, 3]), arg(&[2, 3], 41)],
            true,
        ),
        (
            "pow_broadcast",
            &|x| x[0].pow(&x[1]),
            vec![(uniform(2, 42, 0.5, 2.0), vec![2, 1]), arg(&[3], 43)],
            true,
        ),
        (
            "maximum",
            &|x| x[0].maximum(&x[1]),
            vec![arg(&[2, 3], 44), arg(&[3], 45)],
            false,
        ),
        (
            "minimum",
            &|x| x[0].minimum(&x[1]),
            vec![arg(&[2, 3], 46), arg(&[2, 3], 47)],
            false,
        ),
        (
            "clamp_tensor",
            &|x| x[0].clamp_tensor(Some(&x[1].sub_scalar(0.5)?), Some(&x[2].add_scalar(0.5)?)),
            vec![
                arg(&[2, 3], 48),
                (away(3, 49), vec![3]),
                (away(2, 50), vec![2, 1]),
            ],
            false,
        ),
        (
            "clamp_min_tensor",
            &|x| x[0].clamp_min_tensor(&x[1]),
            vec![arg(&[2, 3], 51), arg(&[2, 3], 52)],
            false,
        ),
        (
            "clamp_max_tensor",
            &|x| x[0].clamp_tensor(None, Some(&x[1])),
            vec![arg(&[2, 3], 53), arg(&[1, 3], 54)],
            false,
        ),
        (
            "atan2",
            &|x| x[0].atan2(&x[1]),
            vec![(away(6, 61), vec![2, 3]), (away(3, 62), vec![3])],
            true,
        ),
        (
            "hypot",
            &|x| x[0].hypot(&x[1]),
            vec![(away(6, 63), vec![2, 3]), (away(6, 64), vec![2, 3])],
            true,
        ),
        (
            "xlogy",
            &|x| x[0].xlogy(&x[1]),
            vec![arg(&[2, 3], 65), (uniform(3, 66, 0.5, 2.0), vec![3])],
            true,
        ),
        (
            "logaddexp",
            &|x| x[0].logaddexp(&x[1]),
            vec![arg(&[2, 3], 67), arg(&[2, 3], 68)],
            true,
        ),
        (
            "lerp",
            &|x| {
                x[0].lerp(
                    &x[1],
                    &ferrograd::ops::ternary::Weight::Tensor(x[2].clone()),
                )
            },
            vec![
                arg(&[2, 3], 69),
                arg(&[3], 70),
                (uniform(6, 85, -1.0, 2.0), vec![2, 3]),
            ],
            true,
        ),
        (
            "addcdiv",
            &|x| x[0].addcdiv(&x[1], &x[2], Scalar::Float(0.5)),
            vec![arg(&[2, 3], 86), arg(&[2, 3], 87), (away(3, 88), vec![3])],
            true,
        ),
        (
            "remainder",
            &|x| x[0].remainder(&x[1]),
            vec![
                (uniform(6, 57, -3.0, 3.0), vec![2, 3]),
                (away(3, 58), vec![3]),
            ],
            false,
        ),
        (
            "fmod",
            &|x| x[0].fmod(&x[1]),
            vec![
                (uniform(6, 59, -3.0, 3.0), vec![2, 3]),
                (away(6, 60), vec![2, 3]),
            ],
            false,
        ),
        (
            "where",
            &|x| Tensor::where_cond(&x[0].gt(&x[1])?, &x[0].sin()?, &x[1].mul(&x[1])?),
            vec![arg(&[2, 3], 55), arg(&[3], 56)],
            true,
        ),
    ]
}

#[test]
fn binary_gradcheck() {
    for (name, f, inputs, smooth) in binary_ops() {
        gradcheck(name, f, &inputs);
        if smooth {
            gradgradcheck(name, f, &inputs);
        }
    }
}

// ----- torch's values at edge cases -----

const INF: f64 = f64::INFINITY;
const NAN: f64 = f64::NAN;

#[test]
fn pow_grads_at_zero_match_torch() {
    let x: &[f64] = &[0.0, 0.0, 2.0, -1.0, 0.0];
    let e: &[f64] = &[0.0, 2.0, 0.0, 0.5, -1.0];
    let g = grads(|v| v[0].pow(&v[1]), &[x, e]);
    same(&g[0], &[0.0, 0.0, 0.0, NAN, -INF]);
    same(&g[1], &[0.0, 0.0, 2f64.ln(), NAN, -INF]);
    same(&grads(|v| v[0].pow_scalar(0), &[x])[0], &[0.0; 5]);
    same(
        &grads(|v| v[0].pow_scalar(0.5), &[x])[0],
        &[INF, INF, 0.5 / 2f64.sqrt(), NAN, INF],
    );
    same(
        &grads(|v| v[0].pow_scalar(-1), &[x])[0],
        &[-INF, -INF, -0.25, -1.0, -INF],
    );
    same(
        &grads(|v| Tensor::scalar_pow(0, &v[0]), &[e])[0],
        &[0.0, 0.0, 0.0, 0.0, -INF],
    );
}

#[test]
fn maximum_minimum_split_ties() {
    let a: &[f64] = &[1.0, 2.0, 3.0, NAN];
    let b: &[f64] = &[1.0, 3.0, 2.0, 1.0];
    let g = grads(|v| v[0].maximum(&v[1]), &[a, b]);
    same(&g[0], &[0.5, 0.0, 1.0, 1.0]);
    same(&g[1], &[0.5, 1.0, 0.0, 1.0]);
    let g = grads(|v| v[0].minimum(&v[1]), &[a, b]);
    same(&g[0], &[0.5, 1.0, 0.0, 1.0]);
    same(&g[1], &[0.5, 0.0, 1.0, 1.0]);
    let m = t(a, &[4]).maximum(&t(b, &[4])).unwrap().to_f64_vec();
    same(&m, &[1.0, 3.0, 3.0, NAN]);
}

#[test]
fn clamp_boundaries_match_torch() {
    let x: &[f64] = &[0.0, 1.0, 1.5, 2.0, 3.0, NAN];
    let g = grads(
        |v| v[0].clamp(Some(Scalar::Int(1)), Some(Scalar::Int(2))),
        &[x],
    );
    same(&g[0], &[0.0, 1.0, 1.0, 1.0, 0.0, 0.0]);
    let out = t(x, &[6])
        .clamp(Some(Scalar::Int(1)), Some(Scalar::Int(2)))
        .unwrap()
        .to_f64_vec();
    same(&out, &[1.0, 1.0, 1.5, 2.0, 2.0, NAN]);
    let g = grads(
        |v| v[0].clamp_tensor(Some(&v[1]), Some(&v[2])),
        &[
            &[0.0, 1.0, 1.5, 2.0, 3.0],
            &[1.0, 1.0, 1.0, 1.0, 3.5],
            &[2.0, 2.0, 2.0, 2.0, 3.0],
        ],
    );
    same(&g[0], &[0.0, 1.0, 1.0, 1.0, 0.0]);
    same(&g[1], &[1.0, 0.0, 0.0, 0.0, 0.0]);
    same(&g[2], &[0.0, 0.0, 0.0, 0.0, 1.0]);
    let nan_bound = t(&[1.0, 2.0], &[2])
        .clamp(Some(Scalar::Float(NAN)), Some(Scalar::Int(3)))
        .unwrap();
    assert!(nan_bound.to_f64_vec().iter().all(|v| v.is_nan()));
}

#[test]
fn kinks_use_torch_subgradients() {
    same(
        &grads(|v| v[0].relu(), &[&[0.0, -1.0, 1.0, NAN]])[0],
        &[0.0, 0.0, 1.0, 1.0],
    );
    same(
        &grads(|v| v[0].abs(), &[&[0.0, -1.0, 1.0, NAN]])[0],
        &[0.0, -1.0, 1.0, 0.0],
    );
    same(&grads(|v| v[0].sqrt(), &[&[0.0, 4.0]])[0], &[INF, 0.25]);
    same(
        &grads(|v| v[0].sign(), &[&[2.0, -1.0, 0.0]])[0],
        &[0.0, 0.0, 0.0],
    );
    same(
        &t(&[NAN, -0.0, 3.0, -2.0], &[4])
            .sign()
            .unwrap()
            .to_f64_vec(),
        &[0.0, 0.0, 1.0, -1.0],
    );
    same(
        &t(&[NAN, -1.0], &[2]).relu().unwrap().to_f64_vec(),
        &[NAN, 0.0],
    );
}

#[test]
fn softplus_threshold_and_gelu_values() {
    let x: &[f64] = &[0.0, 0.5, 0.6, 3.0];
    let out = t(x, &[4]).softplus(2.0, 1.0).unwrap().to_f64_vec();
    assert_close(
        &out,
        &[2f64.ln() / 2.0, (1.0 + 1f64.exp()).ln() / 2.0, 0.6, 3.0],
        1e-15,
        "softplus",
    );
    let g = grads(|v| v[0].softplus(2.0, 1.0), &[x]);
    assert_close(
        &g[0],
        &[0.5, 1.0 / (1.0 + (-1f64).exp()), 1.0, 1.0],
        1e-15,
        "softplus grad",
    );
    // gelu(1) = Φ(1)
    let gl = t(&[1.0], &[1]).gelu("none").unwrap().to_f64_vec()[0];
    assert!((gl - 0.841_344_746_068_542_9).abs() < 1e-15);
    let gt = t(&[1.0], &[1]).gelu("tanh").unwrap().to_f64_vec()[0];
    let k = (2.0 / std::f64::consts::PI).sqrt();
    assert!((gt - 0.5 * (1.0 + (k * 1.044715f64).tanh())).abs() < 1e-15);
}
