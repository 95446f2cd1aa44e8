//! Pointwise ops from Rust: numeric float64 gradchecks (first and second
//! order), torch's values at edge cases, dtype promotion, in-place variants
//! and errors.

use ferrograd::{autograd, DType, Result, Scalar, Tensor};

mod common;
use common::{assert_close, assert_msg, central_diff, leaf, t, tb1, ti1, uniform};

// ----- helpers -----

/// Values with |x| in [0.3, 1.5] and random signs (clear of kinks at 0).
fn away(n: usize, seed: u64) -> Vec<f64> {
    let m = uniform(n, seed, 0.3, 1.5);
    let s = uniform(n, seed + 99, -1.0, 1.0);
    m.iter()
        .zip(s)
        .map(|(m, s)| if s < 0.0 { -m } else { *m })
        .collect()
}

type Op = dyn Fn(&[Tensor]) -> Result<Tensor>;

/// Analytic gradients of `sum(f(x) * w)` (w fixed, pseudo-random) and the
/// value of that sum.
fn analytic(f: &Op, inputs: &[(Vec<f64>, Vec<usize>)]) -> Vec<Vec<f64>> {
    let xs: Vec<Tensor> = inputs.iter().map(|(v, s)| leaf(v, s)).collect();
    let out = f(&xs).unwrap();
    let w = t(&uniform(out.numel(), 77, -1.0, 1.0), out.shape());
    out.mul(&w).unwrap().sum().unwrap().backward().unwrap();
    xs.iter()
        .zip(inputs)
        .map(|(x, (v, _))| match x.grad() {
            Some(g) => g.to_f64_vec(),
            None => vec![0.0; v.len()],
        })
        .collect()
}

/// Central differences of `sum(f(x) * w)` (the `w` of `analytic`).
fn numeric(f: &Op, inputs: &[(Vec<f64>, Vec<usize>)]) -> Vec<Vec<f64>> {
    let base: Vec<Vec<f64>> = inputs.iter().map(|(v, _)| v.clone()).collect();
    central_diff(&base, |vals| {
        let _g = autograd::no_grad();
        let xs: Vec<Tensor> = vals.iter().zip(inputs).map(|(v, (_, s))| t(v, s)).collect();
        let out = f(&xs).unwrap();
        let w = uniform(out.numel(), 77, -1.0, 1.0);
        out.to_f64_vec().iter().zip(&w).map(|(a, b)| a * b).sum()
    })
}

fn gradcheck(name: &str, f: &Op, inputs: &[(Vec<f64>, Vec<usize>)]) {
    let a = analytic(f, inputs);
    let n = numeric(f, inputs);
    for (i, (a, n)) in a.iter().zip(&n).enumerate() {
        assert_close(a, n, 1e-6, &format!("{name} input {i}"));
    }
}

/// Gradchecks x -> sum_i <d(sum f(x) w)/dx_i, u_i> (built with create_graph),
/// i.e. the second derivatives of `f`.
fn gradgradcheck(name: &str, f: &'static Op, inputs: &[(Vec<f64>, Vec<usize>)]) {
    let shapes: Vec<Vec<usize>> = inputs.iter().map(|(_, s)| s.clone()).collect();
    let h = move |xs: &[Tensor]| -> Result<Tensor> {
        let _g = autograd::enable_grad();
        let xs: Vec<Tensor> = xs
            .iter()
            .map(|x| {
                if x.requires_grad() {
                    x.clone()
                } else {
                    x.detach().requires_grad_(true).unwrap()
                }
            })
            .collect();
        let out = f(&xs)?;
        let w = t(&uniform(out.numel(), 77, -1.0, 1.0), out.shape());
        let gs = autograd::grad(
            &[out.mul(&w)?.sum()?],
            &xs,
            &[None],
            None,
            true,
            true,
            false,
        )?;
        let mut total = Tensor::scalar(Scalar::Float(0.0), DType::F64);
        for (i, g) in gs.iter().enumerate() {
            if let Some(g) = g {
                let u = t(&uniform(g.numel(), 500 + i as u64, -1.0, 1.0), &shapes[i]);
                total = total.add(&g.mul(&u)?.sum()?)?;
            }
        }
        Ok(total)
    };
    let xs: Vec<Tensor> = inputs.iter().map(|(v, s)| leaf(v, s)).collect();
    let hv = h(&xs).unwrap();
    if hv.requires_grad() {
        // w for a 0-dim output is uniform(1, 77, ..): match it in `numeric`.
        let w = uniform(1, 77, -1.0, 1.0)[0];
        hv.mul_scalar(w).unwrap().backward().unwrap();
    }
    let ana: Vec<Vec<f64>> = xs
        .iter()
        .zip(inputs)
        .map(|(x, (v, _))| x.grad().map_or(vec![0.0; v.len()], |g| g.to_f64_vec()))
        .collect();
    let num = numeric(&h, inputs);
    for (i, (a, n)) in ana.iter().zip(&num).enumerate() {
        assert_close(a, n, 1e-5, &format!("{name} (second order) input {i}"));
    }
}

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

fn grads(f: impl Fn(&[Tensor]) -> Result<Tensor>, inputs: &[&[f64]]) -> Vec<Vec<f64>> {
    let xs: Vec<Tensor> = inputs.iter().map(|v| leaf(v, &[v.len()])).collect();
    f(&xs).unwrap().sum().unwrap().backward().unwrap();
    xs.iter().map(|x| x.grad().unwrap().to_f64_vec()).collect()
}

fn same(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x.is_nan() && y.is_nan()) || x == y, "{a:?} != {b:?}");
    }
}

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
