//! Helpers shared by the integration tests: each `tests/*.rs` file that needs
//! them declares `mod common;` and imports what it uses. Every test binary
//! compiles its own copy of this module, so the items one binary leaves
//! unused are allowed below.
#![allow(dead_code)]

use ferrograd::kernels::matmul as kernel;
use ferrograd::{autograd, set_num_threads, DType, Error, Result, Scalar, Tensor};
use parking_lot::{Mutex, MutexGuard};

// ----- tensors from values -----

/// A float64 tensor of `shape` holding `v`.
pub fn t(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

/// `t(v, shape)` as a leaf that requires grad.
pub fn leaf(v: &[f64], shape: &[usize]) -> Tensor {
    t(v, shape).requires_grad_(true).unwrap()
}

/// A 1-D float64 tensor holding `v`.
pub fn t1(v: &[f64]) -> Tensor {
    t(v, &[v.len()])
}

/// `t1(v)` as a leaf that requires grad.
pub fn leaf1(v: &[f64]) -> Tensor {
    leaf(v, &[v.len()])
}

/// An int64 tensor of `shape` holding `v`.
pub fn ti(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

/// A 1-D int64 tensor holding `v`.
pub fn ti1(v: &[i64]) -> Tensor {
    ti(v, &[v.len()])
}

/// A bool tensor of `shape` holding `v`.
pub fn tb(v: &[bool], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

/// A 1-D bool tensor holding `v`.
pub fn tb1(v: &[bool]) -> Tensor {
    tb(v, &[v.len()])
}

// ----- deterministic pseudo-random values -----

/// `n` values in [lo, hi) from a small LCG seeded by `seed`: deterministic,
/// no global RNG involved.
pub fn uniform(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

/// `uniform(n, seed, -1.0, 1.0)`.
pub fn values(n: usize, seed: u64) -> Vec<f64> {
    uniform(n, seed, -1.0, 1.0)
}

/// A float64 tensor of `shape` with `uniform` values in [lo, hi).
pub fn rand_between(shape: &[usize], seed: u64, lo: f64, hi: f64) -> Tensor {
    t(&uniform(shape.iter().product(), seed, lo, hi), shape)
}

/// A float64 tensor of `shape` with `uniform` values in [-1, 1).
pub fn rand(shape: &[usize], seed: u64) -> Tensor {
    rand_between(shape, seed, -1.0, 1.0)
}

/// `rand(shape, seed)` as a leaf that requires grad.
pub fn rand_leaf(shape: &[usize], seed: u64) -> Tensor {
    rand(shape, seed).requires_grad_(true).unwrap()
}

// ----- comparisons -----

/// Asserts `a` and `b` have the same length and agree within
/// `tol * (1 + |b|)` element by element.
pub fn assert_close(a: &[f64], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: length of {a:?} vs {b:?}");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{what}[{i}]: {x} vs {y}"
        );
    }
}

/// `assert_close` without a name.
pub fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_close(a, b, tol, "element");
}

/// Asserts the error's message contains `needle` (showing it if not).
pub fn assert_msg(e: &Error, needle: &str) {
    assert!(e.msg.contains(needle), "{:?} not in {:?}", needle, e.msg);
}

/// The bits of every element (float32 ones widened), for bitwise
/// comparisons between runs.
pub fn bits(t: &Tensor) -> Vec<u64> {
    match t.dtype() {
        DType::F32 => t
            .to_vec::<f32>()
            .iter()
            .map(|v| v.to_bits() as u64)
            .collect(),
        _ => t.to_f64_vec().iter().map(|v| v.to_bits()).collect(),
    }
}

// ----- gradients -----

/// The step of the central differences below.
pub const EPS: f64 = 1e-6;

/// Central differences of the scalar function `f` of several flat inputs at
/// `base`: one vector per input, `(f(x + EPS e) - f(x - EPS e)) / (2 EPS)`
/// for each element `e`.
pub fn central_diff(base: &[Vec<f64>], f: impl Fn(&[Vec<f64>]) -> f64) -> Vec<Vec<f64>> {
    (0..base.len())
        .map(|j| {
            (0..base[j].len())
                .map(|e| {
                    let (mut p, mut m) = (base.to_vec(), base.to_vec());
                    p[j][e] += EPS;
                    m[j][e] -= EPS;
                    (f(&p) - f(&m)) / (2.0 * EPS)
                })
                .collect()
        })
        .collect()
}

/// `autograd::grad` of one output for one input (no retained graph beyond
/// what `create_graph` keeps, unused inputs an error, no materialising).
pub fn grad1(y: &Tensor, x: &Tensor, create_graph: bool) -> Tensor {
    autograd::grad(
        std::slice::from_ref(y),
        std::slice::from_ref(x),
        &[None],
        None,
        create_graph,
        false,
        false,
    )
    .unwrap()
    .remove(0)
    .unwrap()
}

// ----- matrix products -----

/// The matrix kernel's product as a tensor.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    kernel::matmul(a, b).map(Tensor::from)
}

/// The plain-loop reference product as a tensor.
pub fn matmul_reference(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    kernel::matmul_reference(a, b).map(Tensor::from)
}

// ----- thread counts -----

static THREADS: Mutex<()> = Mutex::new(());

/// Holds the lock that every test changing the (process-global) thread
/// count takes, and sets the count back to 2 when dropped, a failed
/// assertion included.
pub struct ThreadsLock(#[allow(dead_code)] MutexGuard<'static, ()>);

impl Drop for ThreadsLock {
    fn drop(&mut self) {
        set_num_threads(2);
    }
}

/// Takes the thread-count lock (see `ThreadsLock`).
pub fn lock_threads() -> ThreadsLock {
    ThreadsLock(THREADS.lock())
}

/// Runs `f` with 1 thread, then with each count in `counts`, and asserts
/// every run gives what the 1-thread run gave; returns that. The caller
/// holds `lock_threads()`.
pub fn same_for_thread_counts<T: PartialEq>(counts: &[usize], what: &str, f: impl Fn() -> T) -> T {
    set_num_threads(1);
    let one = f();
    for &n in counts {
        set_num_threads(n);
        assert!(
            f() == one,
            "{what}: result differs between 1 and {n} threads"
        );
    }
    one
}

// ----- gradchecks of op closures (first and second order) -----

/// Values with |x| in [0.3, 1.5] and random signs (clear of kinks at 0).
pub fn away(n: usize, seed: u64) -> Vec<f64> {
    let m = uniform(n, seed, 0.3, 1.5);
    let s = uniform(n, seed + 99, -1.0, 1.0);
    m.iter()
        .zip(s)
        .map(|(m, s)| if s < 0.0 { -m } else { *m })
        .collect()
}

pub type Op = dyn Fn(&[Tensor]) -> Result<Tensor>;

/// Analytic gradients of `sum(f(x) * w)` (w fixed, pseudo-random) and the
/// value of that sum.
pub fn analytic(f: &Op, inputs: &[(Vec<f64>, Vec<usize>)]) -> Vec<Vec<f64>> {
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
pub fn numeric(f: &Op, inputs: &[(Vec<f64>, Vec<usize>)]) -> Vec<Vec<f64>> {
    let base: Vec<Vec<f64>> = inputs.iter().map(|(v, _)| v.clone()).collect();
    central_diff(&base, |vals| {
        let _g = autograd::no_grad();
        let xs: Vec<Tensor> = vals.iter().zip(inputs).map(|(v, (_, s))| t(v, s)).collect();
        let out = f(&xs).unwrap();
        let w = uniform(out.numel(), 77, -1.0, 1.0);
        out.to_f64_vec().iter().zip(&w).map(|(a, b)| a * b).sum()
    })
}

pub fn gradcheck(name: &str, f: &Op, inputs: &[(Vec<f64>, Vec<usize>)]) {
    let a = analytic(f, inputs);
    let n = numeric(f, inputs);
    for (i, (a, n)) in a.iter().zip(&n).enumerate() {
        assert_close(a, n, 1e-6, &format!("{name} input {i}"));
    }
}

/// Gradchecks x -> sum_i <d(sum f(x) w)/dx_i, u_i> (built with create_graph),
/// i.e. the second derivatives of `f`.
pub fn gradgradcheck(name: &str, f: &'static Op, inputs: &[(Vec<f64>, Vec<usize>)]) {
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

pub fn grads(f: impl Fn(&[Tensor]) -> Result<Tensor>, inputs: &[&[f64]]) -> Vec<Vec<f64>> {
    let xs: Vec<Tensor> = inputs.iter().map(|v| leaf(v, &[v.len()])).collect();
    f(&xs).unwrap().sum().unwrap().backward().unwrap();
    xs.iter().map(|x| x.grad().unwrap().to_f64_vec()).collect()
}

pub fn same(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x.is_nan() && y.is_nan()) || x == y, "{a:?} != {b:?}");
    }
}
