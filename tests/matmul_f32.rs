//! The float32 matrix kernel on products big enough for ferrograd's own
//! kernel (all of m, n, k at least 32 and m*n*k at least 2^21): against the
//! plain loop in float64 for odd sizes, several depth and column blocks, and
//! transposed, sliced, stepped and broadcast operands; bitwise equal for 1,
//! 2 and 3 threads.
//!
//! `set_num_threads` is process-global, so each test takes `LOCK`.

use ferrograd::kernels::matmul::{matmul, matmul_reference};
use ferrograd::{set_num_threads, DType, Tensor};
use parking_lot::Mutex;

static LOCK: Mutex<()> = Mutex::new(());

/// Deterministic pseudo-random float32 tensor with values in [-1, 1).
fn rand(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(6364136223846793005) | 1;
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect();
    Tensor::from_vec(v, shape).unwrap()
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec::<f32>().iter().map(|v| v.to_bits()).collect()
}

/// Checks `a @ b` against the float64 loop: each element within float32
/// rounding of a k-term sum of terms below 1 in magnitude.
fn check(a: &Tensor, b: &Tensor) -> Vec<u32> {
    let got = matmul(a, b).unwrap();
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    assert_eq!(got.shape(), &[m, n]);
    assert_eq!(got.dtype(), DType::F32);
    let want = matmul_reference(
        &a.to_dtype(DType::F64).unwrap(),
        &b.to_dtype(DType::F64).unwrap(),
    )
    .unwrap()
    .to_f64_vec();
    let tol = 4.0 * k as f64 * f32::EPSILON as f64;
    for (i, (x, y)) in got.to_f64_vec().iter().zip(&want).enumerate() {
        assert!(
            (x - y).abs() <= tol,
            "[{m}x{k}] @ [{k}x{n}] element ({}, {}): {x} vs {y}",
            i / n,
            i % n
        );
    }
    bits(&got)
}

/// Runs `f` with 1, 2 and 3 threads and checks it gives the same bits.
fn same_for_thread_counts(f: impl Fn() -> Vec<u32>) {
    set_num_threads(1);
    let one = f();
    for n in [2, 3] {
        set_num_threads(n);
        assert!(f() == one, "result differs between 1 and {n} threads");
    }
    set_num_threads(2);
}

#[test]
fn odd_sizes_and_several_blocks() {
    let _g = LOCK.lock();
    // (m, k, n): not multiples of the 6x16 tile; k above one depth block
    // (512); n above one column block (1024); rows above one row block.
    // With 2 and 3 threads the wide ones (n >= 64 per thread) are split
    // into column bands, some ending in a partial panel, and the narrow
    // ones into row blocks.
    for &(m, k, n) in &[
        (128, 128, 128),
        (131, 300, 77),
        (37, 600, 100),
        (64, 1100, 48),
        (100, 64, 1100),
        (256, 33, 250),
    ] {
        let a = rand(&[m, k], 1);
        let b = rand(&[k, n], 2);
        same_for_thread_counts(|| check(&a, &b));
    }
}

#[test]
fn strided_operands_read_in_place() {
    let _g = LOCK.lock();
    let (m, k, n) = (150, 140, 170);
    let a = rand(&[m, k], 3);
    let b = rand(&[k, n], 4);
    // Transposed: columns contiguous.
    let a_t = rand(&[k, m], 5).t().unwrap();
    let b_t = rand(&[n, k], 6).t().unwrap();
    // Sliced at an offset, every other column.
    let a_step = rand(&[m + 3, 2 * k], 7)
        .slice(0, Some(2), Some(2 + m as i64), 1)
        .unwrap()
        .slice(1, Some(1), None, 2)
        .unwrap();
    let b_step = rand(&[2 * k, n + 5], 8)
        .slice(0, Some(0), None, 2)
        .unwrap()
        .narrow(1, 5, n)
        .unwrap();
    // Broadcast: one row repeated (row stride 0), one column repeated.
    let a_bcast = rand(&[1, k], 9).expand(&[m as i64, k as i64]).unwrap();
    let b_bcast = rand(&[k, 1], 10).expand(&[k as i64, n as i64]).unwrap();
    for (x, y) in [
        (&a_t, &b),
        (&a, &b_t),
        (&a_t, &b_t),
        (&a_step, &b_step),
        (&a_step, &b_t),
        (&a_bcast, &b),
        (&a, &b_bcast),
    ] {
        assert_eq!((x.shape(), y.shape()), (&[m, k][..], &[k, n][..]));
        let contiguous = check(&x.contiguous().unwrap(), &y.contiguous().unwrap());
        same_for_thread_counts(|| {
            let got = check(x, y);
            // Strides change the packing, never the arithmetic.
            assert!(got == contiguous, "strided result differs from contiguous");
            got
        });
    }
}

#[test]
fn batched_products_each_on_the_kernel() {
    let _g = LOCK.lock();
    // Three products of 130x150x140, b broadcast over the batch.
    let a = rand(&[3, 130, 150], 11);
    let b = rand(&[1, 150, 140], 12).expand(&[3, 150, 140]).unwrap();
    same_for_thread_counts(|| {
        let got = matmul(&a, &b).unwrap();
        let mut all = Vec::new();
        for i in 0..3 {
            let gi = got.select(0, i).unwrap();
            let want = check(&a.select(0, i).unwrap(), &b.select(0, i).unwrap());
            assert!(bits(&gi) == want, "batch {i} differs from its own product");
            all.extend(want);
        }
        all
    });
}

#[test]
fn special_values_propagate() {
    let _g = LOCK.lock();
    let (m, k, n) = (128, 128, 130);
    let mut av = rand(&[m, k], 13).to_vec::<f32>();
    av[5 * k + 7] = f32::INFINITY; // row 5
    av[70 * k + 3] = f32::NAN; // row 70
    let a = Tensor::from_vec(av, &[m, k]).unwrap();
    let b = rand(&[k, n], 14);
    let got = matmul(&a, &b).unwrap().to_vec::<f32>();
    for j in 0..n {
        assert!(got[5 * n + j].is_infinite() || got[5 * n + j].is_nan());
        assert!(got[70 * n + j].is_nan());
        // Other rows stay finite: the padding of edge tiles leaks nothing.
        assert!(got[6 * n + j].is_finite() && got[127 * n + j].is_finite());
    }
}
