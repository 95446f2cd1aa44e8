//! Reductions, softmax and matrix products from Rust: kernels against naive
//! loops (odd shapes, strided, transposed and broadcast operands), values,
//! gradients (numeric, first and second order) and error kinds.

use ferrograd::{autograd, DType, ErrorKind, Tensor};

mod common;
use common::{
    assert_close, assert_msg, central_diff, close, grad1, leaf, matmul, matmul_reference, rand,
    rand_leaf, t, values,
};

/// Plain triple loop over row-major copies: `[m, k] @ [k, n]`.
fn naive_mm(a: &Tensor, b: &Tensor) -> Vec<f64> {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k).map(|p| av[i * k + p] * bv[p * n + j]).sum();
        }
    }
    out
}

// ----- matmul kernel -----

#[test]
fn gemm_matches_naive_on_odd_shapes_both_dtypes() {
    for &(m, k, n) in &[
        (1, 1, 1),
        (1, 7, 1),
        (7, 13, 5),
        (17, 1, 33),
        (33, 17, 1),
        (3, 0, 4),
        (64, 65, 63), // above the threading threshold
    ] {
        for dt in [DType::F64, DType::F32] {
            let a = rand(&[m, k], 1).to_dtype(dt).unwrap();
            let b = rand(&[k, n], 2).to_dtype(dt).unwrap();
            let got = matmul(&a, &b).unwrap();
            assert_eq!(got.shape(), &[m, n]);
            assert_eq!(got.dtype(), dt);
            let tol = if dt == DType::F32 { 1e-5 } else { 1e-12 };
            close(&got.to_f64_vec(), &naive_mm(&a, &b), tol);
            close(
                &got.to_f64_vec(),
                &matmul_reference(&a, &b).unwrap().to_f64_vec(),
                tol,
            );
        }
    }
}

#[test]
fn gemm_reads_strided_operands_in_place() {
    // Transposed, sliced (with offset and step) and broadcast (stride 0).
    let base_a = rand(&[9, 14], 3);
    let base_b = rand(&[11, 8], 4);
    let a_t = base_a.transpose(0, 1).unwrap(); // [14, 9], column-major
    let b_s = base_b.slice(0, Some(1), Some(10), 1).unwrap(); // [9, 8] at an offset
    let b_step = base_b
        .slice(1, Some(1), None, 2)
        .unwrap()
        .narrow(0, 2, 9)
        .unwrap(); // [9, 4]
    let row = rand(&[1, 9], 5).expand(&[6, 9]).unwrap(); // stride-0 rows
    for (a, b) in [
        (&a_t, &b_s),
        (&a_t, &b_step),
        (&row, &b_s),
        (
            &a_t,
            &b_s.transpose(0, 1)
                .unwrap()
                .contiguous()
                .unwrap()
                .t()
                .unwrap(),
        ),
    ] {
        assert!(!a.is_contiguous() || !b.is_contiguous());
        let got = matmul(a, b).unwrap();
        let want = naive_mm(&a.contiguous().unwrap(), &b.contiguous().unwrap());
        close(&got.to_f64_vec(), &want, 1e-12);
    }
}

#[test]
fn batched_gemm_with_broadcast_batch_and_many_small_products() {
    // 40 products of 16x16x16: the "many small products in parallel" path.
    let a = rand(&[40, 16, 16], 6);
    let b = rand(&[1, 16, 16], 7).expand(&[40, 16, 16]).unwrap();
    let got = matmul(&a, &b).unwrap();
    let want = matmul_reference(&a, &b).unwrap();
    close(&got.to_f64_vec(), &want.to_f64_vec(), 1e-12);
    for i in [0usize, 17, 39] {
        let ai = a.select(0, i as i64).unwrap();
        let bi = b.select(0, i as i64).unwrap();
        let gi = got.select(0, i as i64).unwrap();
        close(&gi.to_f64_vec(), &naive_mm(&ai, &bi), 1e-12);
    }
}

#[test]
fn int64_matmul_wraps() {
    let a = Tensor::from_vec(vec![1i64, 2, 3, 4], &[2, 2]).unwrap();
    let r = a.matmul(&a).unwrap();
    assert_eq!(r.dtype(), DType::I64);
    assert_eq!(r.to_vec::<i64>(), vec![7, 10, 15, 22]);
    let big = Tensor::from_vec(vec![i64::MAX, 2], &[1, 2]).unwrap();
    let col = Tensor::from_vec(vec![2i64, 1], &[2, 1]).unwrap();
    assert_eq!(
        big.matmul(&col).unwrap().to_vec::<i64>(),
        vec![i64::MAX.wrapping_mul(2).wrapping_add(2)]
    );
}

// ----- matmul op: shapes, gradients, errors -----

#[test]
fn matmul_shape_rules() {
    let cases: &[(&[usize], &[usize], &[usize])] = &[
        (&[3], &[3], &[]),
        (&[2, 3], &[3], &[2]),
        (&[3], &[3, 4], &[4]),
        (&[2, 3], &[3, 4], &[2, 4]),
        (&[5, 2, 3], &[3, 4], &[5, 2, 4]),
        (&[5, 2, 3], &[3], &[5, 2]),
        (&[3], &[5, 3, 4], &[5, 4]),
        (&[2, 3], &[5, 3, 4], &[5, 2, 4]),
        (&[2, 1, 2, 3], &[4, 3, 5], &[2, 4, 2, 5]),
    ];
    for (i, (sa, sb, so)) in cases.iter().enumerate() {
        let r = rand(sa, i as u64)
            .matmul(&rand(sb, 100 + i as u64))
            .unwrap();
        assert_eq!(r.shape(), *so, "case {i}");
    }
}

#[test]
fn matmul_broadcast_gradients_are_summed_over_batch() {
    let a = rand_leaf(&[2, 1, 2, 3], 8);
    let b = rand_leaf(&[4, 3, 5], 9);
    let out = a.matmul(&b).unwrap();
    out.sum().unwrap().backward().unwrap();
    let (ga, gb) = (a.grad().unwrap(), b.grad().unwrap());
    assert_eq!(ga.shape(), a.shape());
    assert_eq!(gb.shape(), b.shape());
    // d sum(A @ B) / dA[.., i, p] = sum over batches of B and columns.
    let bsum = b.sum_dims(&[0, 2], false, None).unwrap().to_f64_vec(); // [3]
    for (i, g) in ga.to_f64_vec().iter().enumerate() {
        assert!((g - bsum[i % 3]).abs() < 1e-12);
    }
    let asum = a.sum_dims(&[0, 1, 2], false, None).unwrap().to_f64_vec(); // [3]
    for (i, g) in gb.to_f64_vec().iter().enumerate() {
        assert!((g - asum[(i / 5) % 3]).abs() < 1e-12);
    }
}

#[test]
fn matmul_errors_have_torch_kinds_and_messages() {
    let e = rand(&[2, 3], 1).matmul(&rand(&[4, 5], 2)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Runtime);
    assert_eq!(
        e.msg,
        "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
    );
    let e = rand(&[3], 1).dot(&rand(&[4], 2)).unwrap_err();
    assert_msg(&e, "inconsistent tensor size");
    let e = Tensor::zeros(&[], DType::F64)
        .matmul(&rand(&[3], 1))
        .unwrap_err();
    assert_msg(&e, "at least 1D");
    let f32m = Tensor::zeros(&[2, 2], DType::F32);
    let e = f32m.mm(&rand(&[2, 2], 1)).unwrap_err();
    assert_eq!(
        e.msg,
        "expected m1 and m2 to have the same dtype, but got: float != double"
    );
    let b = Tensor::zeros(&[2, 2], DType::Bool);
    assert!(b.mm(&b).is_err());
}

// ----- numeric gradients -----

/// Checks the gradient of `sum(f(x) * w)` against central differences, and
/// its second derivative (gradient of `sum(grad * v)`).
fn gradcheck(f: &dyn Fn(&Tensor) -> Tensor, shape: &[usize], seed: u64) {
    let n: usize = shape.iter().product();
    let x0 = values(n, seed);
    let w = rand(&f(&t(&x0, shape)).dims(), seed + 1);
    let v = rand(shape, seed + 2);
    let scalar = |x: &Tensor| f(x).mul(&w).unwrap().sum().unwrap();
    let grad_at = |vals: &[f64], create: bool| {
        let x = leaf(vals, shape);
        let g = grad1(&scalar(&x), &x, create);
        (x, g)
    };
    let (x, g) = grad_at(&x0, true);
    // second order: d/dx sum(g * v) (0 when g is constant in x)
    let gg = if g.requires_grad() {
        autograd::grad(
            &[g.mul(&v).unwrap().sum().unwrap()],
            &[x],
            &[None],
            None,
            false,
            true,
            false,
        )
        .unwrap()[0]
            .clone()
            .map(|t| t.to_f64_vec())
            .unwrap_or_else(|| vec![0.0; n])
    } else {
        vec![0.0; n]
    };
    let vv = v.to_f64_vec();
    let x0 = [x0];
    let num = central_diff(&x0, |p| scalar(&t(&p[0], shape)).item().unwrap().to_f64());
    assert_close(&g.to_f64_vec(), &num[0], 1e-6, "grad");
    let num2 = central_diff(&x0, |p| {
        let g = grad_at(&p[0], false).1.to_f64_vec();
        g.iter().zip(&vv).map(|(a, b)| a * b).sum()
    });
    assert_close(&gg, &num2[0], 1e-5, "gradgrad");
}

#[test]
fn gradcheck_reductions() {
    gradcheck(&|x| x.sum_dims(&[1], false, None).unwrap(), &[3, 4], 10);
    gradcheck(
        &|x| x.mean_dims(&[0, -1], true, None).unwrap(),
        &[2, 3, 2],
        11,
    );
    gradcheck(&|x| x.prod_dim(1, false, None).unwrap(), &[3, 4], 12);
    gradcheck(&|x| x.prod(None).unwrap(), &[2, 3], 13);
    gradcheck(&|x| x.amax(&[1], false).unwrap(), &[3, 4], 14);
    gradcheck(&|x| x.max_dim(0, true).unwrap().0, &[3, 4], 15);
    gradcheck(&|x| x.var(&[1], 1.0, false).unwrap(), &[3, 4], 16);
    gradcheck(&|x| x.std(&[], 0.0, false).unwrap(), &[3, 4], 17);
    gradcheck(&|x| x.norm(2.0, &[1], false, None).unwrap(), &[3, 4], 18);
    gradcheck(&|x| x.norm(3.0, &[], true, None).unwrap(), &[3, 4], 19);
    gradcheck(&|x| x.logsumexp(&[0], false).unwrap(), &[3, 4], 20);
    gradcheck(&|x| x.cumsum(1, None).unwrap().mul(x).unwrap(), &[3, 4], 21);
}

#[test]
fn gradcheck_softmax_and_products() {
    gradcheck(&|x| x.softmax(1, None).unwrap(), &[3, 4], 30);
    gradcheck(&|x| x.log_softmax(0, None).unwrap(), &[3, 4], 31);
    gradcheck(&|x| x.matmul(&x.t().unwrap()).unwrap(), &[3, 4], 32);
    gradcheck(
        &|x| x.matmul(&x.transpose(-1, -2).unwrap()).unwrap(),
        &[2, 2, 3],
        33,
    );
    gradcheck(&|x| x.mv(&x.select(0, 0).unwrap()).unwrap(), &[4, 4], 34);
    gradcheck(
        &|x| {
            x.select(0, 1)
                .unwrap()
                .dot(&x.select(0, 0).unwrap())
                .unwrap()
        },
        &[2, 5],
        35,
    );
}

// ----- values -----

#[test]
fn reductions_over_non_trailing_and_strided_dims() {
    let x = rand(&[3, 4, 5], 40);
    let xt = x.permute(&[2, 0, 1]).unwrap(); // [5, 3, 4], non-contiguous
    let v = x.to_f64_vec();
    let at = |i: usize, j: usize, k: usize| v[(i * 4 + j) * 5 + k];
    // sum over dims (0, 2) of x, i.e. over (1, 0) of xt
    let s = xt.sum_dims(&[0, 1], false, None).unwrap();
    let want: Vec<f64> = (0..4)
        .map(|j| {
            (0..3)
                .flat_map(|i| (0..5).map(move |k| (i, k)))
                .map(|(i, k)| at(i, j, k))
                .sum()
        })
        .collect();
    close(&s.to_f64_vec(), &want, 1e-12);
    // max over dim 1 of x with indices
    let (mv, mi) = x.max_dim(1, false).unwrap();
    let mut want_v = vec![];
    let mut want_i = vec![];
    for i in 0..3 {
        for k in 0..5 {
            let (bj, bv) = (0..4)
                .map(|j| (j, at(i, j, k)))
                .fold((0, f64::NEG_INFINITY), |b, c| if c.1 > b.1 { c } else { b });
            want_v.push(bv);
            want_i.push(bj as i64);
        }
    }
    assert_eq!(mv.to_f64_vec(), want_v);
    assert_eq!(mi.to_vec::<i64>(), want_i);
    assert_eq!(x.argmax(Some(1), false).unwrap().to_vec::<i64>(), want_i);
    // cumsum along a middle dim of a transposed view
    let c = xt.cumsum(1, None).unwrap();
    let cv = c.to_f64_vec();
    for k in 0..5 {
        for j in 0..4 {
            let mut acc = 0.0;
            for i in 0..3 {
                acc += at(i, j, k);
                assert!((cv[(k * 3 + i) * 4 + j] - acc).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn large_parallel_reductions_match_sequential_sums() {
    let x = rand(&[300, 257], 50);
    let s1 = x.sum_dims(&[1], false, None).unwrap().to_f64_vec();
    let s0 = x.sum_dims(&[0], false, None).unwrap().to_f64_vec();
    let v = x.to_f64_vec();
    for i in 0..300 {
        let want: f64 = v[i * 257..(i + 1) * 257].iter().sum();
        assert!((s1[i] - want).abs() < 1e-10);
    }
    for j in 0..257 {
        let want: f64 = (0..300).map(|i| v[i * 257 + j]).sum();
        assert!((s0[j] - want).abs() < 1e-10);
    }
    let sm = x
        .softmax(0, None)
        .unwrap()
        .sum_dims(&[0], false, None)
        .unwrap();
    close(&sm.to_f64_vec(), &vec![1.0; 257], 1e-12);
}

#[test]
fn reductions_over_long_non_trailing_dims_are_the_same_for_any_thread_count() {
    // Wide contiguous kept dims with many reduced rows (folded in blocks
    // of rows, each block a unit of work): bitwise equal at 1, 2 and 3
    // threads, float32 and float64, with an outer kept dim and transposed.
    let x64 = rand(&[3, 700, 600], 11);
    let x32 = x64.to_dtype(DType::F32).unwrap();
    let run = || {
        let mut out = Vec::new();
        for x in [&x64, &x32] {
            out.push(x.sum_dims(&[1], false, None).unwrap().to_f64_vec());
            out.push(x.amax(&[1], false).unwrap().to_f64_vec());
            let t = x.transpose(1, 2).unwrap();
            out.push(t.sum_dims(&[2], true, None).unwrap().to_f64_vec());
        }
        out
    };
    let before = ferrograd::parallel::num_threads();
    let mut runs = Vec::new();
    for threads in [1, 2, 3] {
        ferrograd::parallel::set_num_threads(threads);
        runs.push(run());
    }
    ferrograd::parallel::set_num_threads(before);
    let v = x64.to_f64_vec();
    for (k, s) in runs[0][0].iter().enumerate() {
        let (b, j) = (k / 600, k % 600);
        let want: f64 = (0..700).map(|i| v[(b * 700 + i) * 600 + j]).sum();
        assert!((s - want).abs() < 1e-9);
    }
    for r in &runs[1..] {
        for (a, b) in r.iter().zip(&runs[0]) {
            assert!(a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits()));
        }
    }
}

#[test]
fn softmax_is_stable_and_logsumexp_handles_infinities() {
    let x = Tensor::from_vec(vec![1000.0f32, 999.0, -1000.0], &[3]).unwrap();
    let s = x.softmax(0, None).unwrap().to_f64_vec();
    assert!(s.iter().all(|v| v.is_finite()));
    assert!((s[0] - 1.0 / (1.0 + (-1.0f64).exp())).abs() < 1e-6);
    let l = x.log_softmax(0, None).unwrap().to_f64_vec();
    assert!((l[2] + 2000.0 + (1.0 + (-1.0f64).exp()).ln()).abs() < 1e-2);
    let inf = Tensor::from_vec(
        vec![f64::NEG_INFINITY, f64::NEG_INFINITY, f64::INFINITY, 1.0],
        &[2, 2],
    )
    .unwrap();
    let r = inf.logsumexp(&[1], false).unwrap().to_f64_vec();
    assert_eq!(r, vec![f64::NEG_INFINITY, f64::INFINITY]);
}

#[test]
fn prod_gradient_with_zeros() {
    let x = Tensor::from_vec(vec![2.0, 0.0, 3.0, 0.0, 0.0, 5.0], &[2, 3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    x.prod_dim(1, false, None)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(
        x.grad().unwrap().to_f64_vec(),
        vec![0.0, 6.0, 0.0, 0.0, 0.0, 0.0]
    );
}

#[test]
fn bad_dims_are_index_errors() {
    let x = rand(&[2, 3], 60);
    for e in [
        x.sum_dims(&[2], false, None).unwrap_err(),
        x.softmax(-3, None).unwrap_err(),
        x.cumsum(5, None).unwrap_err(),
        x.max_dim(2, false).unwrap_err(),
        x.argmin(Some(-3), false).unwrap_err(),
        x.logsumexp(&[2], false).unwrap_err(),
    ] {
        assert_eq!(e.kind, ErrorKind::Index, "{}", e.msg);
        assert!(e.msg.starts_with("Dimension out of range"), "{}", e.msg);
    }
    let e = x.sum_dims(&[0, -2], false, None).unwrap_err();
    assert_eq!(e.msg, "dim 0 appears multiple times in the list of dims");
}
