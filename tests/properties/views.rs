//! Random views read, copied, mapped, zipped, reduced and written in place, against the reference.

use super::*;

/// One view op with raw random arguments, resolved against the shape it
/// meets (always to valid arguments: invalid ones are the business of the
/// argument properties below).
#[derive(Clone, Debug)]
struct Op {
    kind: u8,
    a: u32,
    b: u32,
    c: u32,
}

fn op() -> impl Strategy<Value = Op> {
    (0u8..9, any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(kind, a, b, c)| Op {
        kind,
        a,
        b,
        c,
    })
}

/// Applies `op` to the tensor and to its reference.
fn apply(t: &Tensor, r: &Ref, op: &Op) -> Result<(Tensor, Ref)> {
    let nd = r.shape.len();
    let (a, b, c) = (op.a as usize, op.b as usize, op.c as usize);
    Ok(match op.kind {
        0 if nd > 0 => {
            let (d0, d1) = (a % nd, b % nd);
            // Negative dims half of the time.
            let neg = |d: usize| {
                if c % 2 == 0 {
                    d as i64
                } else {
                    d as i64 - nd as i64
                }
            };
            (t.transpose(neg(d0), neg(d1))?, r.transpose(d0, d1))
        }
        1 if nd > 0 => {
            let mut p: Vec<usize> = (0..nd).collect();
            let mut s = a;
            for i in (1..nd).rev() {
                p.swap(i, s % (i + 1));
                s = s / (i + 1) + b;
            }
            let pi: Vec<i64> = p.iter().map(|&d| d as i64).collect();
            (t.permute(&pi)?, r.permute(&p))
        }
        2 if nd > 0 => {
            let d = a % nd;
            let size = r.shape[d];
            let start = b % (size + 1);
            let len = c % (size - start + 1);
            (
                t.narrow(d as i64, start as i64, len)?,
                r.slice(d, start, len, 1),
            )
        }
        3 if nd > 0 => {
            let d = a % nd;
            let size = r.shape[d];
            let start = b % (size + 1);
            let stop = start + (c >> 2) % (size - start + 1);
            let step = 1 + c % 4;
            let len = (stop - start).div_ceil(step);
            (
                t.slice(d as i64, Some(start as i64), Some(stop as i64), step as i64)?,
                r.slice(d, start, len, step),
            )
        }
        4 if nd > 0 && r.shape[a % nd] > 0 => {
            let d = a % nd;
            let i = b % r.shape[d];
            let index = if c % 2 == 0 {
                i as i64
            } else {
                i as i64 - r.shape[d] as i64
            };
            (t.select(d as i64, index)?, r.select(d, i))
        }
        5 if nd < 6 => {
            let d = a % (nd + 1);
            (t.unsqueeze(d as i64)?, r.unsqueeze(d))
        }
        6 => (t.squeeze(None)?, r.squeeze()),
        7 if nd < 6 => {
            // Size-1 dims grow to 0..3, maybe behind a new leading dim.
            let mut shape: Vec<usize> = r
                .shape
                .iter()
                .enumerate()
                .map(|(i, &d)| if d == 1 { (a >> i) % 4 } else { d })
                .collect();
            if b % 3 == 0 {
                shape.insert(0, 1 + c % 3);
            }
            let si: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
            (t.expand(&si)?, r.expand(&shape))
        }
        8 => {
            // Flatten, merge two neighbouring dims, or split one.
            let n: usize = r.shape.iter().product();
            let shape: Vec<usize> = match a % 3 {
                0 => vec![n],
                1 if nd >= 2 => {
                    let d = b % (nd - 1);
                    let mut s = r.shape.clone();
                    let m = s.remove(d + 1);
                    s[d] *= m;
                    s
                }
                _ if nd > 0 => {
                    let d = b % nd;
                    let size = r.shape[d];
                    let k = (1..=size)
                        .filter(|&k| size.is_multiple_of(k))
                        .nth(c % 3)
                        .unwrap_or(1);
                    let mut s = r.shape.clone();
                    s[d] = size / k.max(1);
                    s.insert(d, k);
                    s
                }
                _ => vec![n],
            };
            // -1 for one dim when the others do not multiply to 0.
            let mut si: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
            if !si.is_empty() && shape.iter().all(|&d| d > 0) {
                let j = c % si.len();
                si[j] = -1;
            }
            (t.reshape(&si)?, r.reshape(&shape))
        }
        _ => (t.clone(), r.clone()),
    })
}

/// A base shape: up to 4 dims of 0..6, sometimes one long dim (to reach the
/// tiled and threaded paths of the iteration layer).
fn base_shape() -> impl Strategy<Value = Vec<usize>> {
    let small = prop::collection::vec(0usize..6, 0..5);
    let long = (
        prop::collection::vec(1usize..5, 1..4),
        40usize..400,
        any::<u8>(),
    )
        .prop_map(|(mut s, long, at)| {
            let at = at as usize % (s.len() + 1);
            s.insert(at, long);
            s
        });
    if cfg!(miri) {
        small.boxed()
    } else {
        prop_oneof![3 => small, 1 => long].boxed()
    }
}

/// The base tensor's element values: distinct in float64; in float32 kept
/// small so that sums stay exact.
fn value(i: usize, dtype: DType) -> f64 {
    match dtype {
        DType::F32 => (i % 251) as f64 - 125.0,
        _ => i as f64 * 0.5 - 3.0,
    }
}

fn base_tensor(shape: &[usize], dtype: DType, salt: f64) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| value(i, dtype) * salt).collect();
    Tensor::from_vec(v, shape).unwrap().to_dtype(dtype).unwrap()
}

fn views(base: &Tensor, ops: &[Op]) -> Result<(Tensor, Ref)> {
    let mut t = base.clone();
    let mut r = Ref::base(base.shape());
    for op in ops {
        (t, r) = apply(&t, &r, op)?;
        assert_eq!(t.shape(), &r.shape[..], "after {op:?}");
    }
    Ok((t, r))
}

fn values_of(r: &Ref, dtype: DType, salt: f64) -> Vec<f64> {
    r.idx.iter().map(|&i| value(i, dtype) * salt).collect()
}

fn check_same(got: &[f64], want: &[f64], what: &str) -> std::result::Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len(), "{}: length", what);
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        prop_assert!(
            g == w || (g - w).abs() <= 1e-9 * w.abs().max(1.0),
            "{}: element {}: {} vs {}",
            what,
            k,
            g,
            w
        );
    }
    Ok(())
}

fn view_case(shape: &[usize], ops: &[Op], f32: bool) -> std::result::Result<(), TestCaseError> {
    let dtype = if f32 { DType::F32 } else { DType::F64 };
    let base = base_tensor(shape, dtype, 1.0);
    let (v, r) = views(&base, ops).map_err(|e| TestCaseError::fail(e.msg))?;
    let want = values_of(&r, dtype, 1.0);

    // Copy layer: reading, contiguous copies.
    check_same(&v.to_f64_vec(), &want, "to_f64_vec")?;
    let c = v.contiguous().unwrap();
    prop_assert!(c.is_contiguous(), "K5");
    check_same(&c.to_f64_vec(), &want, "contiguous")?;

    // Elementwise: map, zip over equal layouts, over mixed layouts (strided
    // with contiguous, a permuted copy viewed back), and broadcast.
    let twice: Vec<f64> = want.iter().map(|x| 2.0 * x).collect();
    check_same(&v.mul_scalar(2.0).unwrap().to_f64_vec(), &twice, "map")?;
    let base2 = base_tensor(shape, dtype, -3.0);
    let (w, _) = views(&base2, ops).unwrap();
    let want2 = values_of(&r, dtype, -3.0);
    let sum: Vec<f64> = want.iter().zip(&want2).map(|(a, b)| a + b).collect();
    check_same(&v.add(&w).unwrap().to_f64_vec(), &sum, "zip, same layouts")?;
    check_same(
        &v.add(&w.contiguous().unwrap()).unwrap().to_f64_vec(),
        &sum,
        "zip, strided + contiguous",
    )?;
    let nd = r.shape.len();
    if nd >= 2 {
        // w's values in a transposed buffer, viewed back in v's shape.
        let wt = w
            .transpose(0, -1)
            .unwrap()
            .contiguous()
            .unwrap()
            .transpose(0, -1)
            .unwrap();
        check_same(
            &v.sub(&wt).unwrap().to_f64_vec(),
            &want
                .iter()
                .zip(&want2)
                .map(|(a, b)| a - b)
                .collect::<Vec<_>>(),
            "zip, strided - transposed",
        )?;
    }
    if nd >= 1 {
        let last = r.shape[nd - 1];
        let row: Vec<f64> = (0..last).map(|j| j as f64 + 0.25).collect();
        let row_t = Tensor::from_vec(row.clone(), &[last])
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let want_b: Vec<f64> = want
            .iter()
            .enumerate()
            .map(|(k, x)| x + row[k % last.max(1)])
            .collect();
        check_same(&v.add(&row_t).unwrap().to_f64_vec(), &want_b, "broadcast")?;
        check_same(
            &row_t.add(&v).unwrap().to_f64_vec(),
            &want_b,
            "broadcast, swapped",
        )?;
    }

    // Reductions: all, and along each dim.
    let total: f64 = want.iter().sum();
    check_same(&v.sum().unwrap().to_f64_vec(), &[total], "sum")?;
    for d in 0..nd {
        let mut out_shape = r.shape.clone();
        out_shape[d] = 1;
        let mut acc = vec![0.0; out_shape.iter().product()];
        let mut mx = vec![f64::NEG_INFINITY; acc.len()];
        let os = row_major_strides(&out_shape);
        for (m, x) in multi_indices(&r.shape).iter().zip(&want) {
            let o: usize = m
                .iter()
                .zip(&os)
                .enumerate()
                .map(|(i, (a, s))| if i == d { 0 } else { a * s })
                .sum();
            acc[o] += x;
            mx[o] = mx[o].max(*x);
        }
        check_same(
            &v.sum_dims(&[d as i64], true, None).unwrap().to_f64_vec(),
            &acc,
            &format!("sum over dim {d}"),
        )?;
        if r.shape[d] > 0 {
            check_same(
                &v.amax(&[d as i64], true).unwrap().to_f64_vec(),
                &mx,
                &format!("amax over dim {d}"),
            )?;
        }
    }

    // In place through the view: every element of the view once, nothing
    // else; refused (and nothing written) when the view overlaps itself.
    let base_c = base.clone_tensor().unwrap();
    let (vc, _) = views(&base_c, ops).unwrap();
    let shares = std::sync::Arc::ptr_eq(vc.storage(), base_c.storage());
    let before = base_c.to_f64_vec();
    let res = vc.add_(&Tensor::scalar(1000.0.into(), dtype));
    // (A reshape that had to copy gives a fresh tensor, which a later
    // expand can still make overlap itself.)
    let repeats = ferrograd::kernels::overlap::has_internal_overlap(vc.layout());
    if (shares && r.overlaps()) || repeats {
        prop_assert!(
            res.is_err(),
            "in-place add on an overlapping view must fail"
        );
        check_same(&base_c.to_f64_vec(), &before, "nothing written")?;
    } else {
        prop_assert!(res.is_ok(), "in-place add failed: {:?}", res.err());
        let plus: Vec<f64> = want.iter().map(|x| x + 1000.0).collect();
        check_same(&vc.to_f64_vec(), &plus, "in-place add, the view")?;
        if shares {
            let mut expect = before.clone();
            for &i in &r.idx {
                expect[i] += 1000.0;
            }
            check_same(&base_c.to_f64_vec(), &expect, "in-place add, the base")?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn views_read_map_zip_reduce_and_write_as_the_reference(
        shape in base_shape(),
        ops in prop::collection::vec(op(), 0..7),
        f32 in any::<bool>(),
    ) {
        view_case(&shape, &ops, f32)?;
    }
}
