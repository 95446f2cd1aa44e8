//! Property tests (proptest) of the layout / view / iteration layers through
//! the public Rust API:
//! - random views (transpose, permute, narrow, strided slice, select,
//!   unsqueeze, squeeze, expand, reshape) of random shapes, read, copied,
//!   mapped, zipped (same, mixed and broadcast layouts), reduced and written
//!   in place, against a naive reference that walks indices;
//! - shape and view arguments, random and huge: broadcasting, expand, view /
//!   reshape, narrow, slice, select, permute, transpose, unsqueeze, flatten
//!   and `getitem` index lists either succeed with the reference's result or
//!   return an error; they never panic.
//!
//! Known deviations (found by these properties, reported on issue 24, not
//! fixed yet): they are skipped unless `PROPERTIES_STRICT=1`, which runs
//! every check as written. (K1 expand past i64::MAX elements, K2 reshape
//! sizes whose product overflows, K3 narrow of a 0-d tensor, K5 an empty
//! tensor that was not `is_contiguous()` and K6 narrow with a huge length
//! were found here and are fixed; their checks run.)
//! - K4: `getitem` accepts two ellipses (`x[..., ...]`); torch: "an index
//!   can only have a single ellipsis ('...')".
//!
//! `PROPTEST_CASES=N` changes the number of cases (default 256 per
//! property); under Miri the properties run a few cases each (see
//! HACKING.md, "Checking unsafe code").

use ferrograd::buffer::layout::broadcast_shapes;
use ferrograd::ops::index::TensorIndex;
use ferrograd::{DType, Result, Tensor};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Whether the known deviations listed above are checked too.
fn strict() -> bool {
    std::env::var("PROPERTIES_STRICT").is_ok_and(|v| v == "1")
}

fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(miri) { 4 } else { 256 });
    // A fixed seed unless PROPTEST_RNG_SEED names one: the suite (and CI)
    // sees the same cases every run; explore with other seeds and more cases
    // (PROPTEST_RNG_SEED=$RANDOM PROPTEST_CASES=20000, in a debug build so
    // that integer overflow panics).
    let rng_seed = if std::env::var_os("PROPTEST_RNG_SEED").is_some() {
        Config::default().rng_seed
    } else {
        RngSeed::Fixed(0x5eed_f0e6)
    };
    Config {
        cases,
        rng_seed,
        // No files: the regressions found are written into the tests below.
        failure_persistence: None,
        ..Config::default()
    }
}

// ---------------------------------------------------------------------------
// The reference: an n-d array of base-element indices, in row-major order
// ---------------------------------------------------------------------------

/// What a view shows: its shape and, for each of its elements in row-major
/// order, the index of the base tensor's element it is. Every view op is
/// written as "which old multi-index does each new multi-index read".
#[derive(Clone, Debug)]
struct Ref {
    shape: Vec<usize>,
    idx: Vec<usize>,
}

fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Every multi-index of `shape`, row-major.
fn multi_indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut cur = vec![0; shape.len()];
    for _ in 0..n {
        out.push(cur.clone());
        for d in (0..shape.len()).rev() {
            cur[d] += 1;
            if cur[d] < shape[d] {
                break;
            }
            cur[d] = 0;
        }
    }
    out
}

impl Ref {
    fn base(shape: &[usize]) -> Ref {
        Ref {
            shape: shape.to_vec(),
            idx: (0..shape.iter().product()).collect(),
        }
    }
    fn at(&self, m: &[usize]) -> usize {
        let s = row_major_strides(&self.shape);
        self.idx[m.iter().zip(&s).map(|(a, b)| a * b).sum::<usize>()]
    }
    /// The view of `shape` whose element `m` is this one's `old(m)`.
    fn map(&self, shape: Vec<usize>, old: impl Fn(&[usize]) -> Vec<usize>) -> Ref {
        let idx = multi_indices(&shape)
            .iter()
            .map(|m| self.at(&old(m)))
            .collect();
        Ref { shape, idx }
    }
    fn transpose(&self, a: usize, b: usize) -> Ref {
        let mut shape = self.shape.clone();
        shape.swap(a, b);
        self.map(shape, |m| {
            let mut o = m.to_vec();
            o.swap(a, b);
            o
        })
    }
    fn permute(&self, p: &[usize]) -> Ref {
        let shape = p.iter().map(|&d| self.shape[d]).collect();
        self.map(shape, |m| {
            let mut o = vec![0; m.len()];
            for (i, &d) in p.iter().enumerate() {
                o[d] = m[i];
            }
            o
        })
    }
    fn slice(&self, d: usize, start: usize, len: usize, step: usize) -> Ref {
        let mut shape = self.shape.clone();
        shape[d] = len;
        self.map(shape, |m| {
            let mut o = m.to_vec();
            o[d] = start + m[d] * step;
            o
        })
    }
    fn select(&self, d: usize, i: usize) -> Ref {
        let mut shape = self.shape.clone();
        shape.remove(d);
        self.map(shape, |m| {
            let mut o = m.to_vec();
            o.insert(d, i);
            o
        })
    }
    fn unsqueeze(&self, d: usize) -> Ref {
        let mut shape = self.shape.clone();
        shape.insert(d, 1);
        self.map(shape, |m| {
            let mut o = m.to_vec();
            o.remove(d);
            o
        })
    }
    fn squeeze(&self) -> Ref {
        let shape = self.shape.iter().copied().filter(|&d| d != 1).collect();
        self.map(shape, |m| {
            let mut it = m.iter();
            self.shape
                .iter()
                .map(|&d| if d == 1 { 0 } else { *it.next().unwrap() })
                .collect()
        })
    }
    fn expand(&self, shape: &[usize]) -> Ref {
        let lead = shape.len() - self.shape.len();
        self.map(shape.to_vec(), |m| {
            m[lead..]
                .iter()
                .zip(&self.shape)
                .map(|(&i, &d)| if d == 1 { 0 } else { i })
                .collect()
        })
    }
    fn reshape(&self, shape: &[usize]) -> Ref {
        Ref {
            shape: shape.to_vec(),
            idx: self.idx.clone(),
        }
    }
    /// Whether two elements of the view are one base element.
    fn overlaps(&self) -> bool {
        let mut seen = std::collections::HashSet::new();
        !self.idx.iter().all(|i| seen.insert(*i))
    }
}

// ---------------------------------------------------------------------------
// Random views
// ---------------------------------------------------------------------------

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
    let repeats = ferrograd::kernels::iter::has_internal_overlap(vc.layout());
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

// ---------------------------------------------------------------------------
// Shape and argument math: errors, never panics
// ---------------------------------------------------------------------------

/// Runs `f`, turning a panic into a test failure that names `what`.
fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> std::result::Result<T, TestCaseError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        TestCaseError::fail(format!("{what} panicked: {msg}"))
    })
}

/// A size: mostly small, sometimes huge (up to usize::MAX).
fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..5,
        1 => Just(usize::MAX),
        1 => (1usize << 20)..(1usize << 40),
        1 => any::<usize>(),
    ]
}

/// An i64 argument: mostly small, sometimes extreme.
fn arg() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => -6i64..6,
        1 => Just(i64::MIN),
        1 => Just(i64::MAX),
        1 => any::<i64>(),
        1 => (1i64 << 31)..(1i64 << 62),
    ]
}

/// Reference broadcast (numpy rules).
fn broadcast_ref(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            let da = if i + a.len() >= n {
                a[i + a.len() - n]
            } else {
                1
            };
            let db = if i + b.len() >= n {
                b[i + b.len() - n]
            } else {
                1
            };
            match (da, db) {
                _ if da == db => Some(da),
                (1, _) => Some(db),
                (_, 1) => Some(da),
                _ => None,
            }
        })
        .collect()
}

/// `Some(product)` of `shape` when it does not overflow.
fn checked_numel(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// A tensor of `shape` (small numel) whose elements are 0, 1, 2, ...
fn small(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f64).collect::<Vec<f64>>(), shape).unwrap()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn broadcast_shapes_match_numpy_rules(
        a in prop::collection::vec(size(), 0..5),
        b in prop::collection::vec(size(), 0..5),
    ) {
        let got = no_panic("broadcast_shapes", || broadcast_shapes(&a, &b))?;
        match (got, broadcast_ref(&a, &b)) {
            (Ok(g), Some(r)) => prop_assert_eq!(g.to_vec(), r),
            (Err(_), None) => {}
            (g, r) => prop_assert!(false, "{:?} vs reference {:?}", g, r),
        }
    }

    /// expand of a tensor with size-1 dims to random (huge) sizes: the
    /// expanded shape when the sizes are valid, else an error.
    #[test]
    fn expand_to_random_sizes(
        ones in 0usize..4,
        target in prop::collection::vec(arg(), 0..6),
    ) {
        let t = small(&vec![1; ones]);
        let got = no_panic("expand", || t.expand(&target))?;
        let valid = target.len() >= ones
            && target.iter().enumerate().all(|(i, &d)| d >= 0 || (d == -1 && i >= target.len() - ones));
        let shape: Vec<usize> = target
            .iter()
            .map(|&d| if d == -1 { 1 } else { d.max(0) as usize })
            .collect();
        if !valid {
            prop_assert!(got.is_err(), "expand({:?}) of {:?}: {:?}", target, t.shape(), got);
        } else if checked_numel(&shape).is_some_and(|n| n <= i64::MAX as usize) {
            let e = got.unwrap();
            prop_assert_eq!(e.shape(), &shape[..]);
            // Reading a small expanded view walks the broadcast correctly.
            if e.numel() <= 4096 {
                prop_assert_eq!(e.to_f64_vec(), vec![0.0; e.numel()]);
            }
        } else {
            // numel would overflow: torch says "numel: integer
            // multiplication overflow".
            prop_assert!(got.is_err(), "expand({:?}): numel overflows, yet {:?}", target, got);
        }
    }

    /// view / reshape with random (huge, negative, several -1) sizes.
    #[test]
    fn reshape_to_random_sizes(
        shape in prop::collection::vec(0usize..4, 0..4),
        target in prop::collection::vec(arg(), 0..5),
    ) {
        let t = small(&shape);
        let n = t.numel();
        let got = no_panic("reshape", || t.reshape(&target))?;
        let infer = target.iter().filter(|&&d| d == -1).count();
        let known: Option<usize> = target
            .iter()
            .filter(|&&d| d != -1)
            .try_fold(1usize, |k, &d| usize::try_from(d).ok().and_then(|d| k.checked_mul(d)));
        let ok = target.iter().all(|&d| d >= -1)
            && infer <= 1
            && match (infer, known) {
                (0, Some(k)) => k == n,
                (1, Some(k)) => k != 0 && n.is_multiple_of(k),
                _ => false,
            };
        match got {
            Ok(r) => {
                prop_assert!(ok, "reshape({:?}) of {:?} gave {:?}", target, shape, r.shape());
                prop_assert_eq!(r.numel(), n);
                prop_assert_eq!(r.to_f64_vec(), t.to_f64_vec());
            }
            Err(_) => prop_assert!(!ok, "reshape({:?}) of {:?} failed", target, shape),
        }
    }

    /// narrow / slice / select / transpose / permute / unsqueeze / flatten
    /// with random (extreme) arguments on small tensors: the reference's
    /// result or an error.
    #[test]
    fn view_arguments(
        shape in prop::collection::vec(0usize..5, 0..4),
        x in arg(),
        y in arg(),
        len in size(),
        dims in prop::collection::vec(arg(), 0..5),
    ) {
        let t = small(&shape);
        let r = Ref::base(&shape);
        let nd = shape.len() as i64;
        let wrap = |d: i64, n: i64| -> Option<usize> {
            let n1 = n.max(1);
            (d >= -n1 && d < n1).then(|| if d < 0 { d + n1 } else { d } as usize)
        };
        let values = |t: &Tensor| t.to_f64_vec();
        let ref_values = |r: &Ref| r.idx.iter().map(|&i| i as f64).collect::<Vec<f64>>();

        // narrow(dim, start, length)
        let got = no_panic("narrow", || t.narrow(x, y, len))?;
        let want = wrap(x, nd).filter(|_| nd > 0).and_then(|d| {
            let size = shape[d] as i64;
            let start = if y < 0 { y.checked_add(size)? } else { y };
            (0..=size).contains(&start).then_some(())?;
            (start as usize).checked_add(len).filter(|&e| e <= shape[d])?;
            Some(r.slice(d, start as usize, len, 1))
        });
        match (&got, &want) {
            (Ok(g), Some(w)) => prop_assert_eq!(values(g), ref_values(w)),
            (Err(_), None) => {}
            _ => prop_assert!(false, "narrow({}, {}, {}) of {:?}: {:?}", x, y, len, shape, got.map(|g| g.dims())),
        }

        // slice(dim, start, stop, step) with Python rules
        let step = (len % 7) as i64 - 1; // -1..=5
        let got = no_panic("slice", || t.slice(x, Some(y), dims.first().copied(), step))?;
        let want = wrap(x, nd).filter(|_| nd > 0 && step > 0).map(|d| {
            let size = shape[d] as i64;
            let clamp = |v: i64| if v < 0 { (v.saturating_add(size)).max(0) } else { v.min(size) };
            let s = clamp(y);
            let e = clamp(dims.first().copied().unwrap_or(size)).max(s);
            let len = ((e - s) as usize).div_ceil(step as usize);
            r.slice(d, s as usize, len, step as usize)
        });
        match (&got, &want) {
            (Ok(g), Some(w)) => prop_assert_eq!(values(g), ref_values(w)),
            (Err(_), None) => {}
            _ => prop_assert!(false, "slice({}, {}, {:?}, {}) of {:?}: {:?}", x, y, dims.first(), step, shape, got.map(|g| g.dims())),
        }

        // select(dim, index)
        let got = no_panic("select", || t.select(x, y))?;
        let want = wrap(x, nd).filter(|_| nd > 0).and_then(|d| {
            let size = shape[d] as i64;
            (y >= -size && y < size).then(|| r.select(d, if y < 0 { y + size } else { y } as usize))
        });
        match (&got, &want) {
            (Ok(g), Some(w)) => prop_assert_eq!(values(g), ref_values(w)),
            (Err(_), None) => {}
            _ => prop_assert!(false, "select({}, {}) of {:?}: {:?}", x, y, shape, got.map(|g| g.dims())),
        }

        // transpose(dim0, dim1)
        let got = no_panic("transpose", || t.transpose(x, y))?;
        let want = wrap(x, nd).zip(wrap(y, nd)).map(|(a, b)| {
            if nd == 0 { r.clone() } else { r.transpose(a, b) }
        });
        match (&got, &want) {
            (Ok(g), Some(w)) => prop_assert_eq!(values(g), ref_values(w)),
            (Err(_), None) => {}
            _ => prop_assert!(false, "transpose({}, {}) of {:?}: {:?}", x, y, shape, got.map(|g| g.dims())),
        }

        // permute(dims)
        let got = no_panic("permute", || t.permute(&dims))?;
        let wrapped: Option<Vec<usize>> = dims.iter().map(|&d| wrap(d, nd)).collect();
        let want = wrapped.filter(|p| {
            let mut s = p.clone();
            s.sort_unstable();
            s.dedup();
            p.len() == shape.len() && s.len() == p.len()
        }).map(|p| r.permute(&p));
        match (&got, &want) {
            (Ok(g), Some(w)) => prop_assert_eq!(values(g), ref_values(w)),
            (Err(_), None) => {}
            _ => prop_assert!(false, "permute({:?}) of {:?}: {:?}", dims, shape, got.map(|g| g.dims())),
        }

        // unsqueeze(dim), flatten(start, end), squeeze(dims)
        let got = no_panic("unsqueeze", || t.unsqueeze(x))?;
        match (&got, wrap(x, nd + 1)) {
            (Ok(g), Some(d)) => prop_assert_eq!(g.shape(), &r.unsqueeze(d).shape[..]),
            (Err(_), None) => {}
            _ => prop_assert!(false, "unsqueeze({}) of {:?}: {:?}", x, shape, got.map(|g| g.dims())),
        }
        let got = no_panic("flatten", || t.flatten(x, y))?;
        if let Ok(g) = &got {
            prop_assert_eq!(g.to_f64_vec(), t.to_f64_vec());
        }
        let got = no_panic("squeeze", || t.squeeze(Some(&dims)))?;
        let all_valid = dims.iter().all(|&d| wrap(d, nd).is_some());
        prop_assert_eq!(got.is_ok(), all_valid, "squeeze({:?}) of {:?}", dims, shape);
    }
}

// ---------------------------------------------------------------------------
// Index lists (`x[...]`)
// ---------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Item {
    Int(i64),
    Slice(Option<i64>, Option<i64>, i64),
    NewAxis,
    Ellipsis,
    Bool(bool),
    /// An int64 index tensor of these values.
    Ints(Vec<i64>),
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        3 => arg().prop_map(Item::Int),
        3 => (prop::option::of(arg()), prop::option::of(arg()), -1i64..4)
            .prop_map(|(a, b, s)| Item::Slice(a, b, s)),
        1 => Just(Item::NewAxis),
        1 => Just(Item::Ellipsis),
        1 => any::<bool>().prop_map(Item::Bool),
        1 => prop::collection::vec(arg(), 0..4).prop_map(Item::Ints),
    ]
}

impl Item {
    fn index(&self) -> TensorIndex {
        match self {
            Item::Int(i) => TensorIndex::Int(*i),
            Item::Slice(start, stop, step) => TensorIndex::Slice {
                start: *start,
                stop: *stop,
                step: *step,
            },
            Item::NewAxis => TensorIndex::None,
            Item::Ellipsis => TensorIndex::Ellipsis,
            Item::Bool(b) => TensorIndex::Bool(*b),
            Item::Ints(v) => TensorIndex::Tensor(Tensor::from_vec(v.clone(), &[v.len()]).unwrap()),
        }
    }
}

/// The reference of basic indexing (ints, slices, None, one ellipsis):
/// `None` when torch raises.
fn basic_index_ref(r: &Ref, items: &[Item]) -> Option<Ref> {
    let consumed = items
        .iter()
        .filter(|i| matches!(i, Item::Int(_) | Item::Slice(..)))
        .count();
    let ellipses = items.iter().filter(|i| matches!(i, Item::Ellipsis)).count();
    let nd = r.shape.len();
    if ellipses > 1 || consumed > nd {
        return None;
    }
    let mut r = r.clone();
    let mut d = 0; // the dim of `r` the next item applies to
    for it in items {
        match it {
            Item::Int(i) => {
                let size = r.shape[d] as i64;
                if *i < -size || *i >= size {
                    return None;
                }
                r = r.select(d, if *i < 0 { i + size } else { *i } as usize);
            }
            Item::Slice(start, stop, step) => {
                if *step <= 0 {
                    return None;
                }
                let size = r.shape[d] as i64;
                let clamp = |v: i64| {
                    if v < 0 {
                        v.saturating_add(size).max(0)
                    } else {
                        v.min(size)
                    }
                };
                let s = clamp(start.unwrap_or(0));
                let e = clamp(stop.unwrap_or(size)).max(s);
                let len = ((e - s) as usize).div_ceil(*step as usize);
                r = r.slice(d, s as usize, len, *step as usize);
                d += 1;
            }
            Item::NewAxis => {
                r = r.unsqueeze(d);
                d += 1;
            }
            Item::Ellipsis => d += nd - consumed,
            _ => unreachable!("basic items only"),
        }
    }
    Some(r)
}

proptest! {
    #![proptest_config(config())]

    /// `getitem` on random index lists never panics; basic index lists give
    /// the reference's view, or an error exactly when the reference has
    /// none.
    #[test]
    fn index_lists(
        shape in prop::collection::vec(0usize..5, 0..4),
        items in prop::collection::vec(item(), 0..5),
    ) {
        let ellipses = items.iter().filter(|i| matches!(i, Item::Ellipsis)).count();
        prop_assume!(strict() || ellipses <= 1, "K4");
        let t = small(&shape);
        let index: Vec<TensorIndex> = items.iter().map(Item::index).collect();
        let got = no_panic("getitem", || t.getitem(&index))?;
        let basic = items.iter().all(|i| {
            matches!(i, Item::Int(_) | Item::Slice(..) | Item::NewAxis | Item::Ellipsis)
        });
        if basic {
            let want = basic_index_ref(&Ref::base(&shape), &items);
            match (&got, &want) {
                (Ok(g), Some(w)) => {
                    prop_assert_eq!(g.shape(), &w.shape[..]);
                    prop_assert_eq!(g.to_f64_vec(), w.idx.iter().map(|&i| i as f64).collect::<Vec<_>>());
                }
                (Err(_), None) => {}
                _ => prop_assert!(false, "{:?} of {:?}: {:?} vs reference {:?}", items, shape, got.map(|g| g.dims()), want.map(|w| w.shape)),
            }
        }
        // Writing through the same index list: never a panic either.
        let target = t.clone_tensor().unwrap();
        no_panic("setitem", || target.setitem_scalar(&index, 7.0.into()))?.ok();
    }
}

/// Cases the property tests found in a debug build (integer overflow
/// panics there, wraps in release).
#[test]
fn expand_of_empty_shape_with_huge_sizes() {
    let t = small(&[]);
    let e = t.expand(&[i64::MAX, 0, i64::MAX]).unwrap();
    assert_eq!(e.numel(), 0);
    assert_eq!(e.to_f64_vec(), Vec::<f64>::new());
}

#[test]
fn index_list_out_of_range_is_an_error() {
    let t = small(&[3, 4]);
    let rows = Tensor::from_vec(vec![2i64, i64::MAX / 2], &[2]).unwrap();
    let cols = Tensor::from_vec(vec![3i64, i64::MAX / 2], &[2]).unwrap();
    let got = t.getitem(&[TensorIndex::Tensor(rows), TensorIndex::Tensor(cols)]);
    assert!(got.is_err(), "{:?}", got.map(|g| g.dims()));
}
