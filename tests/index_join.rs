//! Indexing and joining ops from Rust: kernels, values, views, gradients
//! (central differences in float64, first and second order) and errors.

use ferrograd::autograd;
use ferrograd::kernels::index as k;
use ferrograd::ops::index::{plan_indices, TensorIndex};
use ferrograd::ops::join::{cat, stack};
use ferrograd::{DType, ErrorKind, Result, Scalar, Tensor};

mod common;
use common::{assert_close, assert_msg, central_diff, close, rand, rand_leaf, t, tb, ti, EPS};

type Op<'a> = dyn Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'a;

/// Checks the gradient of `f` at `inputs` (float64 leaves) against central
/// differences, then the double backward: differentiating the VJP with
/// respect to the output gradient must give the JVP (a directional
/// finite difference).
fn gradcheck(f: &Op, inputs: &[Tensor]) {
    let tol = 1e-6;
    let fresh = |vals: &[Vec<f64>]| -> Vec<Tensor> {
        vals.iter()
            .zip(inputs)
            .map(|(v, x)| t(v, x.shape()))
            .collect()
    };
    let base: Vec<Vec<f64>> = inputs.iter().map(|x| x.to_f64_vec()).collect();
    let ys = f(inputs).unwrap();
    let ws: Vec<Tensor> = ys
        .iter()
        .enumerate()
        .map(|(i, y)| rand(y.shape(), 100 + i as u64))
        .collect();
    let loss_val = |vals: &[Vec<f64>]| -> f64 {
        let _g = autograd::no_grad();
        let ys = f(&fresh(vals)).unwrap();
        ys.iter()
            .zip(&ws)
            .map(|(y, w)| {
                y.to_f64_vec()
                    .iter()
                    .zip(w.to_f64_vec())
                    .map(|(a, b)| a * b)
                    .sum::<f64>()
            })
            .sum()
    };
    // first order
    let mut loss = ys[0].mul(&ws[0]).unwrap().sum().unwrap();
    for (y, w) in ys.iter().zip(&ws).skip(1) {
        loss = loss.add(&y.mul(w).unwrap().sum().unwrap()).unwrap();
    }
    let grads = autograd::grad(&[loss], inputs, &[None], None, false, true, true).unwrap();
    let num = central_diff(&base, loss_val);
    for (j, g) in grads.iter().enumerate() {
        let what = format!("gradient of input {j}");
        assert_close(&g.as_ref().unwrap().to_f64_vec(), &num[j], tol, &what);
    }
    // second order
    let ys = f(inputs).unwrap();
    let gos: Vec<Tensor> = ys
        .iter()
        .enumerate()
        .map(|(i, y)| rand_leaf(y.shape(), 200 + i as u64))
        .collect();
    let go_opts: Vec<Option<Tensor>> = gos.iter().cloned().map(Some).collect();
    let gs = autograd::grad(&ys, inputs, &go_opts, None, true, true, true).unwrap();
    let dirs: Vec<Tensor> = inputs
        .iter()
        .enumerate()
        .map(|(j, x)| rand(x.shape(), 300 + j as u64))
        .collect();
    let mut s2: Option<Tensor> = None;
    for (g, d) in gs.iter().zip(&dirs) {
        let term = g.as_ref().unwrap().mul(d).unwrap().sum().unwrap();
        s2 = Some(match s2 {
            None => term,
            Some(s) => s.add(&term).unwrap(),
        });
    }
    let jv = autograd::grad(&[s2.unwrap()], &gos, &[None], None, false, true, true).unwrap();
    let shift = |sign: f64| -> Vec<Tensor> {
        let vals: Vec<Vec<f64>> = base
            .iter()
            .zip(&dirs)
            .map(|(b, d)| {
                b.iter()
                    .zip(d.to_f64_vec())
                    .map(|(x, dx)| x + sign * EPS * dx)
                    .collect()
            })
            .collect();
        let _g = autograd::no_grad();
        f(&fresh(&vals)).unwrap()
    };
    let (plus, minus) = (shift(1.0), shift(-1.0));
    for (i, g) in jv.iter().enumerate() {
        let num: Vec<f64> = plus[i]
            .to_f64_vec()
            .iter()
            .zip(minus[i].to_f64_vec())
            .map(|(a, b)| (a - b) / (2.0 * EPS))
            .collect();
        close(&g.as_ref().unwrap().to_f64_vec(), &num, tol);
    }
}

fn one(r: Result<Tensor>) -> Result<Vec<Tensor>> {
    r.map(|t| vec![t])
}

// ------------------------------------------------------------ kernels

#[test]
fn kernel_gather_and_scatter() {
    let x = t(&[0., 1., 2., 3., 4., 5.], &[2, 3]);
    let idx = ti(&[2, 0, 1, 1], &[2, 2]);
    let g = Tensor::from(k::gather(&x, 1, &idx).unwrap());
    assert_eq!(g.to_f64_vec(), vec![2., 0., 4., 4.]);
    // non-contiguous source
    let xt = x.transpose(0, 1).unwrap(); // [[0,3],[1,4],[2,5]]
    let g = Tensor::from(k::gather(&xt, 0, &ti(&[2, 0], &[1, 2])).unwrap());
    assert_eq!(g.to_f64_vec(), vec![2., 3.]);

    let dst = Tensor::zeros(&[2, 3], DType::F64);
    let src = t(&[1., 2., 3., 4.], &[2, 2]);
    k::scatter(&dst, 1, &idx, k::ScatterSrc::Array(&src), true).unwrap();
    assert_eq!(dst.to_f64_vec(), vec![2., 0., 1., 0., 7., 0.]);
    k::scatter(
        &dst,
        0,
        &ti(&[1], &[1, 1]),
        k::ScatterSrc::Value(Scalar::Float(9.0)),
        false,
    )
    .unwrap();
    assert_eq!(dst.to_f64_vec(), vec![2., 0., 1., 9., 7., 0.]);
    // int64 accumulation is exact
    let di = Tensor::zeros(&[1], DType::I64);
    let big = ti(&[1 << 60, 1], &[2]);
    k::scatter(&di, 0, &ti(&[0, 0], &[2]), k::ScatterSrc::Array(&big), true).unwrap();
    assert_eq!(di.to_vec::<i64>(), vec![(1 << 60) + 1]);
}

#[test]
fn kernel_errors_do_not_panic_or_write() {
    let x = t(&[0., 1., 2., 3., 4., 5.], &[2, 3]);
    let e = k::gather(&x, 1, &ti(&[3], &[1, 1])).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Runtime);
    assert!(e
        .msg
        .contains("index 3 is out of bounds for dimension 1 with size 3"));
    assert!(k::gather(&x, 0, &ti(&[-1], &[1, 1])).is_err());
    let dst = Tensor::zeros(&[2, 3], DType::F64);
    let src = t(&[1., 2.], &[1, 2]);
    assert!(k::scatter(
        &dst,
        1,
        &ti(&[0, 7], &[1, 2]),
        k::ScatterSrc::Array(&src),
        true
    )
    .is_err());
    assert_eq!(dst.to_f64_vec(), vec![0.0; 6]);
    let plan = plan_indices(&[2, 3], &[Some(ti(&[0, 2], &[2]))]).unwrap();
    let e = k::index_gather(&x, &plan).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Index);
    assert!(k::index_scatter(&dst, &plan, &t(&[1.0], &[]), false).is_err());
    assert_eq!(dst.to_f64_vec(), vec![0.0; 6]);
}

#[test]
fn kernel_index_plan_placement() {
    let x = Tensor::from_vec(
        (0..120).map(|v| v as f64).collect::<Vec<_>>(),
        &[2, 3, 4, 5],
    )
    .unwrap();
    let i = || Some(ti(&[0, 1], &[2]));
    // adjacent: stays in place
    let p = plan_indices(x.shape(), &[None, i(), i()]).unwrap();
    assert_eq!(p.out_shape(x.shape()).as_slice(), &[2, 2, 5]);
    // non-adjacent: broadcast dims first
    let p = plan_indices(x.shape(), &[i(), None, i()]).unwrap();
    assert_eq!(p.out_shape(x.shape()).as_slice(), &[2, 3, 5]);
    let r = Tensor::from(k::index_gather(&x, &p).unwrap());
    // r[b, j, l] = x[b, j, b, l]
    assert_eq!(r.to_f64_vec()[0..5], x.to_f64_vec()[0..5]);
    let want = 60.0 + 20.0 + 5.0; // x[1, 1, 1, 0]
    assert_eq!(r.to_f64_vec()[15 + 5], want);
    // masks expand to their nonzero coordinates
    let m = tb(&[true, false, false, true, true, false], &[2, 3]);
    let p = plan_indices(x.shape(), &[Some(m)]).unwrap();
    assert_eq!(p.out_shape(x.shape()).as_slice(), &[3, 4, 5]);
    assert_eq!(k::nonzero(&tb(&[false, true, true], &[3])).0, 2);
}

#[test]
fn kernel_masked_fill_and_accumulating_index_put() {
    let x = Tensor::zeros(&[2, 3], DType::F32);
    k::masked_fill(&x, &tb(&[true, false, true], &[3]), Scalar::Float(1.5)).unwrap();
    assert_eq!(x.to_f64_vec(), vec![1.5, 0., 1.5, 1.5, 0., 1.5]);
    let plan = plan_indices(
        &[2, 3],
        &[Some(ti(&[1, 1, 1], &[3])), Some(ti(&[0, 0, 2], &[3]))],
    )
    .unwrap();
    k::index_scatter(
        &x,
        &plan,
        &Tensor::scalar(Scalar::Float(1.0), DType::F32),
        true,
    )
    .unwrap();
    assert_eq!(x.to_f64_vec(), vec![1.5, 0., 1.5, 3.5, 0., 2.5]);
}

// ------------------------------------------------------------ getitem / setitem

fn sl(start: Option<i64>, stop: Option<i64>, step: i64) -> TensorIndex {
    TensorIndex::Slice { start, stop, step }
}

#[test]
fn getitem_basic_is_a_view() {
    let x = rand(&[4, 5], 1);
    let y = x
        .getitem(&[TensorIndex::Int(-1), sl(None, None, 2)])
        .unwrap();
    assert!(y.is_view());
    assert_eq!(y.shape(), &[3]);
    let xv = x.to_f64_vec();
    assert_eq!(y.to_f64_vec(), vec![xv[15], xv[17], xv[19]]);
    let y = x
        .getitem(&[TensorIndex::Ellipsis, TensorIndex::None])
        .unwrap();
    assert_eq!(y.shape(), &[4, 5, 1]);
    let y = x.getitem(&[]).unwrap();
    assert!(y.is_view() && y.shape() == [4, 5]);
    // writes through the view reach the base and bump the shared version
    let v = x.getitem(&[TensorIndex::Int(1)]).unwrap();
    v.fill_(Scalar::Float(0.0)).unwrap();
    assert_eq!(x.version(), 1);
    assert!(x.to_f64_vec()[5..10].iter().all(|&e| e == 0.0));
}

#[test]
fn getitem_advanced_copies() {
    let x = rand(&[3, 4], 2);
    let xv = x.to_f64_vec();
    let y = x
        .getitem(&[
            TensorIndex::Tensor(ti(&[0, 2], &[2])),
            TensorIndex::Tensor(ti(&[1, -1], &[2])),
        ])
        .unwrap();
    assert!(!y.is_view());
    assert_eq!(y.to_f64_vec(), vec![xv[1], xv[11]]);
    let m = tb(&[true, false, true, false], &[4]);
    let y = x
        .getitem(&[TensorIndex::full(), TensorIndex::Tensor(m)])
        .unwrap();
    assert_eq!(y.shape(), &[3, 2]);
    assert_eq!(
        y.to_f64_vec(),
        vec![xv[0], xv[2], xv[4], xv[6], xv[8], xv[10]]
    );
    let y = x.getitem(&[TensorIndex::Bool(false)]).unwrap();
    assert_eq!(y.shape(), &[0, 3, 4]);
}

#[test]
fn getitem_gradcheck() {
    let items = |x: &Tensor| {
        x.getitem(&[
            TensorIndex::Tensor(ti(&[0, 2, 0], &[3])),
            sl(Some(1), None, 2),
            TensorIndex::Tensor(ti(&[1, 0, 1], &[3])),
        ])
    };
    gradcheck(
        &|a: &[Tensor]| one(items(&a[0])),
        &[rand_leaf(&[3, 4, 2], 3)],
    );
    gradcheck(
        &|a: &[Tensor]| {
            one(a[0].getitem(&[
                TensorIndex::Tensor(tb(&[true, false, true], &[3])),
                TensorIndex::Int(1),
            ]))
        },
        &[rand_leaf(&[3, 4], 4)],
    );
}

#[test]
fn setitem_on_non_leaf_flows_to_base_and_value() {
    let x = rand_leaf(&[3, 4], 5);
    let v = rand_leaf(&[2], 6);
    let a = x.mul_scalar(2.0).unwrap();
    a.setitem(
        &[
            TensorIndex::Tensor(ti(&[0, 2], &[2])),
            TensorIndex::Tensor(ti(&[1, 3], &[2])),
        ],
        &v,
    )
    .unwrap();
    a.setitem_scalar(&[TensorIndex::Int(1)], Scalar::Float(0.5))
        .unwrap();
    assert_eq!(a.version(), 2);
    a.sum().unwrap().backward().unwrap();
    assert_eq!(
        x.grad().unwrap().to_f64_vec(),
        vec![2., 0., 2., 2., 0., 0., 0., 0., 2., 2., 2., 0.]
    );
    assert_eq!(v.grad().unwrap().to_f64_vec(), vec![1., 1.]);
    // the same through gradcheck (writes through a view: CopySlices)
    gradcheck(
        &|a: &[Tensor]| {
            let b = a[0].mul_scalar(1.0)?;
            b.setitem(
                &[TensorIndex::full(), TensorIndex::Tensor(ti(&[2, 0], &[2]))],
                &a[1],
            )?;
            Ok(vec![b])
        },
        &[rand_leaf(&[3, 4], 7), rand_leaf(&[3, 2], 8)],
    );
}

#[test]
fn setitem_errors_change_nothing() {
    let x = rand_leaf(&[3, 4], 9);
    let e = x
        .setitem_scalar(&[TensorIndex::Int(0)], Scalar::Float(1.0))
        .unwrap_err();
    assert_msg(&e, "leaf Variable that requires grad");
    let y = Tensor::zeros(&[3, 4], DType::F32);
    let bad = [
        vec![TensorIndex::Int(3)],
        vec![TensorIndex::Tensor(ti(&[0, 3], &[2]))],
        vec![
            TensorIndex::Int(0),
            TensorIndex::Int(0),
            TensorIndex::Int(0),
        ],
    ];
    for items in &bad {
        let e = y.setitem_scalar(items, Scalar::Float(1.0)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Index);
    }
    let e = y.getitem(&[sl(None, None, -1)]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Value);
    assert_eq!(y.version(), 0);
    assert!(y.to_f64_vec().iter().all(|&v| v == 0.0));
}

// ------------------------------------------------------------ ops

#[test]
fn gather_scatter_index_select_values() {
    let x = t(&[0., 1., 2., 3., 4., 5.], &[2, 3]);
    let s = x.index_select(1, &ti(&[2, 2, 0], &[3])).unwrap();
    assert_eq!(s.to_f64_vec(), vec![2., 2., 0., 5., 5., 3.]);
    let e = x.index_select(1, &ti(&[3], &[1])).unwrap_err();
    assert_eq!(
        (e.kind, e.msg.as_str()),
        (ErrorKind::Index, "index out of range in self")
    );
    let g = x.gather(0, &ti(&[1, 0, 1], &[1, 3])).unwrap();
    assert_eq!(g.to_f64_vec(), vec![3., 1., 5.]);
    let sa = x
        .scatter_add(0, &ti(&[1, 1, 0], &[1, 3]), &t(&[10., 20., 30.], &[1, 3]))
        .unwrap();
    assert_eq!(sa.to_f64_vec(), vec![0., 1., 32., 13., 24., 5.]);
    let sv = x
        .scatter_value(1, &ti(&[0], &[1, 1]), Scalar::Int(-1))
        .unwrap();
    assert_eq!(sv.to_f64_vec(), vec![-1., 1., 2., 3., 4., 5.]);
    let tk = x.take(&ti(&[5, -6], &[2])).unwrap();
    assert_eq!(tk.to_f64_vec(), vec![5., 0.]);
    let mf = x
        .masked_fill_scalar(&tb(&[true, false, true], &[3]), Scalar::Float(7.0))
        .unwrap();
    assert_eq!(mf.to_f64_vec(), vec![7., 1., 7., 7., 4., 7.]);
    let ms = x.masked_select(&tb(&[false, true, false], &[3])).unwrap();
    assert_eq!(ms.to_f64_vec(), vec![1., 4.]);
    let nz = t(&[0., 1., 1., 0.], &[2, 2]).nonzero().unwrap();
    assert_eq!(nz.to_vec::<i64>(), vec![0, 1, 1, 0]);
}

#[test]
fn ops_gradcheck() {
    let idx = ti(&[0, 2, 1, 0, 2, 2], &[2, 3]);
    let cases: Vec<(&str, Box<Op<'static>>, Vec<Tensor>)> = vec![
        (
            "gather",
            Box::new(move |a: &[Tensor]| one(a[0].gather(0, &ti(&[0, 2, 1, 0, 2, 2], &[2, 3])))),
            vec![rand_leaf(&[3, 3], 10)],
        ),
        (
            "gather_nc",
            Box::new(|a: &[Tensor]| one(a[0].transpose(0, 1)?.gather(1, &ti(&[1, 0], &[2, 1])))),
            vec![rand_leaf(&[2, 3], 11)],
        ),
        (
            "scatter_add",
            Box::new(move |a: &[Tensor]| one(a[0].scatter_add(0, &idx, &a[1]))),
            vec![rand_leaf(&[3, 3], 12), rand_leaf(&[2, 3], 13)],
        ),
        (
            "scatter_add_src_larger",
            Box::new(|a: &[Tensor]| one(a[0].scatter_add(1, &ti(&[2, 0], &[2, 1]), &a[1]))),
            vec![rand_leaf(&[3, 3], 14), rand_leaf(&[3, 2], 15)],
        ),
        (
            "scatter",
            Box::new(|a: &[Tensor]| one(a[0].scatter(1, &ti(&[2, 0, 1], &[3, 1]), &a[1]))),
            vec![rand_leaf(&[3, 3], 16), rand_leaf(&[3, 1], 17)],
        ),
        (
            "scatter_value",
            Box::new(|a: &[Tensor]| {
                one(a[0].scatter_value(0, &ti(&[2, 0, 1], &[1, 3]), Scalar::Float(2.0)))
            }),
            vec![rand_leaf(&[3, 3], 18)],
        ),
        (
            "index_select",
            Box::new(|a: &[Tensor]| one(a[0].index_select(1, &ti(&[2, 2, 0], &[3])))),
            vec![rand_leaf(&[2, 3], 19)],
        ),
        (
            "take",
            Box::new(|a: &[Tensor]| one(a[0].t()?.take(&ti(&[1, 1, -1], &[3])))),
            vec![rand_leaf(&[2, 3], 20)],
        ),
        (
            "masked_fill",
            Box::new(|a: &[Tensor]| one(a[0].masked_fill(&tb(&[true, false, true], &[3]), &a[1]))),
            vec![rand_leaf(&[2, 3], 21), rand_leaf(&[], 22)],
        ),
        (
            "masked_fill_broadcast",
            Box::new(|a: &[Tensor]| {
                one(a[0].masked_fill_scalar(&tb(&[true, false], &[2, 1, 1]), Scalar::Int(1)))
            }),
            vec![rand_leaf(&[2, 3], 23)],
        ),
        (
            "masked_select",
            Box::new(|a: &[Tensor]| one(a[0].masked_select(&tb(&[true, false, true], &[3])))),
            vec![rand_leaf(&[2, 3], 24)],
        ),
        (
            "index_put",
            Box::new(|a: &[Tensor]| {
                one(a[0].index_put(&[None, Some(ti(&[2, 0], &[2]))], &a[1], false))
            }),
            vec![rand_leaf(&[2, 3], 25), rand_leaf(&[2], 26)],
        ),
        (
            "index_put_acc",
            Box::new(|a: &[Tensor]| {
                one(a[0].index_put(&[Some(ti(&[1, 1, 0], &[3]))], &a[1], true))
            }),
            vec![rand_leaf(&[2, 3], 27), rand_leaf(&[3, 3], 28)],
        ),
        (
            "cat",
            Box::new(|a: &[Tensor]| one(cat(&[a[0].clone(), a[1].t()?, a[0].clone()], 0))),
            vec![rand_leaf(&[1, 2], 29), rand_leaf(&[2, 3], 30)],
        ),
        (
            "stack",
            Box::new(|a: &[Tensor]| one(stack(&[a[0].clone(), a[1].clone()], 1))),
            vec![rand_leaf(&[2, 2], 31), rand_leaf(&[2, 2], 32)],
        ),
        (
            "split",
            Box::new(|a: &[Tensor]| a[0].split(2, 1)),
            vec![rand_leaf(&[2, 5], 33)],
        ),
        (
            "split_with_sizes",
            Box::new(|a: &[Tensor]| a[0].split_with_sizes(&[2, 0, 1], 0)),
            vec![rand_leaf(&[3, 2], 34)],
        ),
        (
            "chunk_partial",
            Box::new(|a: &[Tensor]| Ok(vec![a[0].chunk(3, -1)?[1].clone()])),
            vec![rand_leaf(&[2, 7], 35)],
        ),
        (
            "unbind",
            Box::new(|a: &[Tensor]| a[0].unbind(1)),
            vec![rand_leaf(&[2, 3], 36)],
        ),
    ];
    for (name, f, inputs) in cases {
        eprintln!("gradcheck {name}");
        gradcheck(f.as_ref(), &inputs);
    }
}

#[test]
fn join_values_shapes_and_promotion() {
    let a = t(&[1., 2., 3., 4.], &[2, 2]);
    let b = ti(&[5, 6], &[2, 1]);
    let c = cat(&[a.clone(), b.clone()], -1).unwrap();
    assert_eq!(c.dtype(), DType::F64);
    assert_eq!(c.shape(), &[2, 3]);
    assert_eq!(c.to_f64_vec(), vec![1., 2., 5., 3., 4., 6.]);
    // legacy: 1-D empty tensors are skipped
    let c = cat(&[Tensor::zeros(&[0], DType::F32), a.clone()], 1).unwrap();
    assert_eq!(c.shape(), &[2, 2]);
    let s = stack(&[a.clone(), a.clone()], 2).unwrap();
    assert_eq!(s.shape(), &[2, 2, 2]);
    assert_eq!(s.to_f64_vec(), vec![1., 1., 2., 2., 3., 3., 4., 4.]);
    let parts = a.split(1, 0).unwrap();
    assert!(parts.iter().all(|p| p.is_view() && p.shape() == [1, 2]));
    let parts = Tensor::zeros(&[6], DType::F32).chunk(4, 0).unwrap();
    assert_eq!(parts.len(), 3);
    let rows = a.unbind(0).unwrap();
    assert_eq!(rows[1].to_f64_vec(), vec![3., 4.]);
    assert!(rows[1].is_view());
}

#[test]
fn join_errors() {
    let a = Tensor::zeros(&[3, 4], DType::F32);
    let e = cat(&[a.clone(), Tensor::zeros(&[2, 3], DType::F32)], 0).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Runtime);
    assert_eq!(e.msg, "Sizes of tensors must match except in dimension 0. Expected size 4 but got size 3 for tensor number 1 in the list.");
    assert_eq!(cat(&[], 0).unwrap_err().kind, ErrorKind::Value);
    assert_eq!(
        cat(std::slice::from_ref(&a), 2).unwrap_err().kind,
        ErrorKind::Index
    );
    let e = stack(&[a.clone(), Tensor::zeros(&[4, 3], DType::F32)], 0).unwrap_err();
    assert_eq!(e.msg, "stack expects each tensor to be equal size, but got [3, 4] at entry 0 and [4, 3] at entry 1");
    assert!(a.split_with_sizes(&[1, 1], 0).is_err());
    assert!(a.chunk(0, 0).is_err());
    assert_eq!(
        Tensor::scalar(Scalar::Int(1), DType::F32)
            .unbind(0)
            .unwrap_err()
            .kind,
        ErrorKind::Index
    );
}

#[test]
fn inplace_ops_record_history_and_versions() {
    let x = rand_leaf(&[2, 3], 40);
    let src = rand_leaf(&[1, 3], 41);
    let a = x.mul_scalar(1.0).unwrap();
    a.scatter_add_(0, &ti(&[1, 0, 1], &[1, 3]), &src).unwrap();
    a.masked_fill_scalar_(&tb(&[false, false, true], &[3]), Scalar::Int(0))
        .unwrap();
    a.index_put_(&[Some(ti(&[0], &[1]))], &t(&[5.0], &[1]), true)
        .unwrap();
    assert_eq!(a.version(), 3);
    assert_eq!(a.grad_fn().unwrap().name(), "IndexPutBackward0");
    a.sum().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_f64_vec(), vec![1., 1., 0., 1., 1., 0.]);
    assert_eq!(src.grad().unwrap().to_f64_vec(), vec![1., 1., 0.]);
    // in-place on a leaf that requires grad fails and changes nothing
    let e = x
        .masked_fill_scalar_(&tb(&[true, true, true], &[3]), Scalar::Int(0))
        .unwrap_err();
    assert_msg(&e, "leaf Variable");
    assert!(x.to_f64_vec().iter().any(|&v| v != 0.0));
}

/// `index_gather_as` into torch's layout holds the values of the contiguous
/// gather on every source layout and index placement, at any thread count
/// (its runs, split over threads, write one output).
#[test]
fn kernel_index_gather_as_matches_contiguous_gather() {
    let _lock = common::lock_threads();
    let n = 8 * 16 * 20 * 24;
    let base = Tensor::from_vec(
        (0..n).map(|v| v as f64).collect::<Vec<_>>(),
        &[8, 16, 20, 24],
    )
    .unwrap();
    let sources = [
        base.clone(),
        base.permute(&[3, 1, 0, 2]).unwrap(),
        base.transpose(0, 2).unwrap(),
        base.slice(3, None, None, 2)
            .unwrap()
            .transpose(1, 3)
            .unwrap(),
    ];
    for x in &sources {
        let s = x.shape().to_vec();
        let idx = |d: usize| Some(ti(&[s[d] as i64 - 1, 0, 1, -1, 2, 0], &[6]));
        let plans = [
            vec![idx(0)],
            vec![None, idx(1)],
            vec![None, None, idx(2), idx(3)],
            vec![idx(0), None, idx(2)],
            vec![None, Some(ti(&[1, 0, 1, 1, 0, 0], &[2, 3]))],
        ];
        for p in plans {
            let plan = plan_indices(x.shape(), &p).unwrap();
            let want = Tensor::from(k::index_gather(x, &plan).unwrap()).to_f64_vec();
            let layout = plan.torch_layout(x.layout());
            let got = common::same_for_thread_counts(&[2, 3], "index_gather_as", || {
                let r = Tensor::from(k::index_gather_as(x, &plan, &layout).unwrap());
                assert_eq!(r.layout().strides, layout.strides);
                r.to_f64_vec()
            });
            assert_eq!(got, want);
        }
    }
}
