//! The float matrix kernels: against the plain loop in float64 for odd
//! sizes, tile edges, several depth and column blocks, and transposed,
//! sliced, stepped and broadcast operands, and bitwise equal for 1, 2 and 3
//! threads. The first tests run the usual choice of kernel (ferrograd's own
//! float32 kernel for products of at least 32 in each dimension and 2^21
//! multiply-adds on AVX2 CPUs); the `every_path_*` ones force each kernel
//! this CPU runs (`GemmPath::supported_paths`: on an AVX-512 CPU the gemm
//! crate's path is its AVX-512 one) onto every size; the `batched_*` ones
//! check that a batch, split over the threads or not, gives each product's
//! own bits.
//!
//! `set_num_threads` and `force_gemm_path` are process-global, so each
//! test takes `lock_threads()` (through `Forced` where it forces a path).

use ferrograd::kernels::matmul::{
    crate_uses_avx512, force_gemm_path, gemm_path, own_avx512_preferred, GemmPath,
};
use ferrograd::{set_num_threads, DType, Tensor};

mod common;
use common::{bits, lock_threads, matmul, matmul_reference, same_for_thread_counts, ThreadsLock};

/// Holds the thread-count lock with no path forced; unforces any path
/// forced meanwhile when dropped (a failed assertion included).
struct Forced(#[allow(dead_code)] ThreadsLock);

impl Forced {
    fn new() -> Forced {
        let g = lock_threads();
        force_gemm_path(None);
        Forced(g)
    }
    fn set(&self, path: Option<GemmPath>) {
        force_gemm_path(path);
    }
}

impl Drop for Forced {
    fn drop(&mut self) {
        force_gemm_path(None);
    }
}

/// Deterministic pseudo-random float32 tensor with values in [-1, 1), all
/// multiples of 2^-23, so small products' float64 sums come out exact
/// whatever their order. (Not `common::rand`: with its values, float64
/// strided products on the sgemm path differed bitwise from contiguous ones
/// in `every_path_reads_strided_operands_in_place`.)
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

/// Checks `a @ b` against the float64 loop: each element within float32
/// rounding of a k-term sum of terms below 1 in magnitude.
fn check(a: &Tensor, b: &Tensor) -> Vec<u64> {
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

#[test]
fn odd_sizes_and_several_blocks() {
    let _g = lock_threads();
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
        same_for_thread_counts(&[2, 3], "product", || check(&a, &b));
    }
}

/// `[m, k] @ [k, n]` operand pairs in `dtype`, at least one of each pair
/// strided: transposed (columns contiguous), sliced at an offset with every
/// other column, or broadcast (one row or one column repeated).
fn strided_pairs(m: usize, k: usize, n: usize, dtype: DType) -> Vec<(Tensor, Tensor)> {
    let r = |shape: &[usize], seed: u64| rand(shape, seed).to_dtype(dtype).unwrap();
    let a = r(&[m, k], 3);
    let b = r(&[k, n], 4);
    let a_t = r(&[k, m], 5).t().unwrap();
    let b_t = r(&[n, k], 6).t().unwrap();
    let a_step = r(&[m + 3, 2 * k], 7)
        .slice(0, Some(2), Some(2 + m as i64), 1)
        .unwrap()
        .slice(1, Some(1), None, 2)
        .unwrap();
    let b_step = r(&[2 * k, n + 5], 8)
        .slice(0, Some(0), None, 2)
        .unwrap()
        .narrow(1, 5, n)
        .unwrap();
    let a_bcast = r(&[1, k], 9).expand(&[m as i64, k as i64]).unwrap();
    let b_bcast = r(&[k, 1], 10).expand(&[k as i64, n as i64]).unwrap();
    vec![
        (a_t.clone(), b.clone()),
        (a.clone(), b_t.clone()),
        (a_t, b_t.clone()),
        (a_step.clone(), b_step),
        (a_step, b_t),
        (a_bcast, b),
        (a, b_bcast),
    ]
}

#[test]
fn strided_operands_read_in_place() {
    let _g = lock_threads();
    let (m, k, n) = (150, 140, 170);
    for (x, y) in strided_pairs(m, k, n, DType::F32) {
        assert_eq!((x.shape(), y.shape()), (&[m, k][..], &[k, n][..]));
        let contiguous = check(&x.contiguous().unwrap(), &y.contiguous().unwrap());
        same_for_thread_counts(&[2, 3], "strided product", || {
            let got = check(&x, &y);
            // Strides change the packing, never the arithmetic.
            assert!(got == contiguous, "strided result differs from contiguous");
            got
        });
    }
}

#[test]
fn batched_products_each_on_the_kernel() {
    let _g = lock_threads();
    // Three products of 130x150x140, b broadcast over the batch.
    let a = rand(&[3, 130, 150], 11);
    let b = rand(&[1, 150, 140], 12).expand(&[3, 150, 140]).unwrap();
    same_for_thread_counts(&[2, 3], "batched product", || {
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
    let f = Forced::new();
    for (m, k, n) in [(128, 128, 130), (13, 9, 11)] {
        let mut av = rand(&[m, k], 13).to_vec::<f32>();
        av[5 * k + 7] = f32::INFINITY; // row 5
        av[(m - 3) * k + 3] = f32::NAN; // row m - 3
        let a = Tensor::from_vec(av, &[m, k]).unwrap();
        let b = rand(&[k, n], 14);
        for p in GemmPath::supported_paths() {
            f.set(Some(p));
            let got = matmul(&a, &b).unwrap().to_vec::<f32>();
            for j in 0..n {
                assert!(got[5 * n + j].is_infinite() || got[5 * n + j].is_nan());
                assert!(got[(m - 3) * n + j].is_nan());
                // Other rows stay finite: the padding of edge tiles leaks
                // nothing.
                assert!(got[6 * n + j].is_finite() && got[(m - 1) * n + j].is_finite());
            }
        }
    }
}

/// The products of `a` and `b` (any batch dims) in float64 by the plain loop.
fn reference64(a: &Tensor, b: &Tensor) -> Vec<f64> {
    matmul_reference(
        &a.to_dtype(DType::F64).unwrap(),
        &b.to_dtype(DType::F64).unwrap(),
    )
    .unwrap()
    .to_f64_vec()
}

/// Checks `a @ b` (batched or not, float32 or float64) against `want` (the
/// float64 loop) within `tol` per element and returns its bits.
fn check_against(a: &Tensor, b: &Tensor, want: &[f64], tol: f64, what: &str) -> Vec<u64> {
    let got = matmul(a, b).unwrap();
    assert_eq!(got.dtype(), a.dtype());
    let v = got.to_f64_vec();
    assert_eq!(v.len(), want.len());
    for (i, (x, y)) in v.iter().zip(want).enumerate() {
        assert!((x - y).abs() <= tol, "{what}: element {i}: {x} vs {y}");
    }
    bits(&got)
}

/// Tolerance for k-term sums of products below 1 in magnitude.
fn tol(dtype: DType, k: usize) -> f64 {
    let eps = if dtype == DType::F32 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    4.0 * k.max(1) as f64 * eps
}

/// (m, k, n): 1s, the small kernel's tile edges (6 rows, 8 and 16 float
/// columns, 4 and 8 double columns), its size limit (64), and our big
/// kernel's edges (6x16 tiles, depth blocks of 512, column blocks of 1024).
const PATH_SIZES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (1, 5, 7),
    (3, 1, 9),
    (2, 2, 2),
    (4, 4, 4),
    (5, 7, 3),
    (6, 16, 16),
    (7, 9, 17),
    (12, 3, 33),
    (13, 64, 31),
    (16, 16, 16),
    (33, 20, 8),
    (64, 64, 64),
    (65, 33, 70),
    (128, 128, 128),
    (131, 300, 77),
    (37, 600, 100),
    (100, 64, 1100),
];

#[test]
fn every_path_on_odd_sizes_and_block_edges() {
    let f = Forced::new();
    let paths = GemmPath::supported_paths();
    assert!(paths.contains(&GemmPath::Crate));
    for dtype in [DType::F32, DType::F64] {
        for &(m, k, n) in PATH_SIZES {
            let a = rand(&[m, k], 21).to_dtype(dtype).unwrap();
            let b = rand(&[k, n], 22).to_dtype(dtype).unwrap();
            let want = reference64(&a, &b);
            for &p in &paths {
                f.set(Some(p));
                let what = format!("{dtype:?} [{m}x{k}] @ [{k}x{n}] on {}", p.name());
                same_for_thread_counts(&[2, 3], &what, || {
                    check_against(&a, &b, &want, tol(dtype, k), &what)
                });
            }
        }
    }
}

#[test]
fn every_path_reads_strided_operands_in_place() {
    let f = Forced::new();
    for dtype in [DType::F32, DType::F64] {
        for (m, k, n) in [(13, 17, 9), (40, 24, 20), (150, 140, 170)] {
            for (x, y) in strided_pairs(m, k, n, dtype) {
                let (x, y) = (&x, &y);
                let want = reference64(x, y);
                for p in GemmPath::supported_paths() {
                    f.set(Some(p));
                    let what = format!("{dtype:?} strided [{m}x{k}] @ [{k}x{n}] on {}", p.name());
                    let xc = x.contiguous().unwrap();
                    let yc = y.contiguous().unwrap();
                    let contiguous = check_against(&xc, &yc, &want, tol(dtype, k), &what);
                    same_for_thread_counts(&[2, 3], &what, || {
                        let got = check_against(x, y, &want, tol(dtype, k), &what);
                        // Our kernels' strides change the packing, never the
                        // arithmetic (the crate's take other paths by layout).
                        if p != GemmPath::Crate {
                            assert!(got == contiguous, "{what}: strided differs from contiguous");
                        }
                        got
                    });
                }
            }
        }
    }
}

/// `a @ b` for batched operands, checked entry by entry against the 2-D
/// product of the entries (bitwise) and the float64 loop, for 1-3 threads
/// and on every path (`None`: the usual choice).
fn batched_case(f: &Forced, a: &Tensor, b: &Tensor, what: &str) {
    let nb = a.shape()[0];
    let k = a.shape()[2];
    let dtype = a.dtype();
    let want = reference64(a, b);
    let mut paths: Vec<Option<GemmPath>> = vec![None];
    paths.extend(GemmPath::supported_paths().into_iter().map(Some));
    for p in paths {
        f.set(p);
        let what = format!("{what} ({dtype:?}, path {p:?})");
        let got = same_for_thread_counts(&[2, 3], &what, || {
            check_against(a, b, &want, tol(dtype, k), &what)
        });
        // Each entry is its own product's bits (at 1 thread).
        set_num_threads(1);
        let per = got.len() / nb;
        for i in 0..nb {
            let (ai, bi) = (
                a.select(0, i as i64).unwrap(),
                b.select(0, i as i64).unwrap(),
            );
            let w = &want[i * per..(i + 1) * per];
            let one = check_against(&ai, &bi, w, tol(dtype, k), &what);
            assert!(one == got[i * per..(i + 1) * per], "{what}: entry {i}");
        }
    }
}

#[test]
fn batched_small_products_split_over_the_batch() {
    let f = Forced::new();
    for dtype in [DType::F32, DType::F64] {
        // Enough work to split over the threads (64 x 16^3 multiply-adds),
        // with b broadcast over the batch (batch stride 0) or transposed.
        let a = rand(&[64, 16, 16], 31).to_dtype(dtype).unwrap();
        let b = rand(&[64, 16, 16], 32).to_dtype(dtype).unwrap();
        let b1 = rand(&[1, 16, 16], 33)
            .to_dtype(dtype)
            .unwrap()
            .expand(&[64, 16, 16])
            .unwrap();
        let bt = rand(&[64, 16, 16], 34)
            .to_dtype(dtype)
            .unwrap()
            .transpose(-1, -2)
            .unwrap();
        batched_case(&f, &a, &b, "[64,16,16] @ [64,16,16]");
        batched_case(&f, &a, &b1, "[64,16,16] @ broadcast [16,16]");
        batched_case(&f, &a, &bt, "[64,16,16] @ transposed");
        // Odd sizes, a sliced batch (every other matrix).
        let a = rand(&[300, 5, 7], 35).to_dtype(dtype).unwrap();
        let b = rand(&[600, 7, 9], 36)
            .to_dtype(dtype)
            .unwrap()
            .slice(0, Some(0), None, 2)
            .unwrap();
        batched_case(&f, &a, &b, "[300,5,7] @ every other [7,9]");
    }
}

#[test]
fn batched_attention_shapes() {
    let f = Forced::new();
    // q @ k^T and p @ v of 9 heads of 128 x 64: 1M multiply-adds each;
    // with 2 threads the batch is split, with 3 each product is.
    let q = rand(&[9, 128, 64], 41);
    let kt = rand(&[9, 128, 64], 42).transpose(-1, -2).unwrap();
    batched_case(&f, &q, &kt, "q @ k^T");
    let p = rand(&[9, 128, 128], 43);
    let v = rand(&[9, 128, 64], 44);
    batched_case(&f, &p, &v, "p @ v");
    let pt = p.transpose(-1, -2).unwrap();
    batched_case(&f, &pt, &v, "p^T @ v");
}

#[test]
fn batched_int64_is_exact() {
    let _f = Forced::new();
    let ints = |shape: &[usize], seed: u64| {
        let t = rand(shape, seed).to_vec::<f32>();
        let v: Vec<i64> = t.iter().map(|x| (x * 1000.0) as i64).collect();
        Tensor::from_vec(v, shape).unwrap()
    };
    let a = ints(&[200, 9, 11], 51);
    let b = ints(&[200, 13, 11], 52).transpose(-1, -2).unwrap();
    let want = matmul_reference(&a, &b).unwrap().to_vec::<i64>();
    for threads in 1..=3 {
        set_num_threads(threads);
        assert!(
            matmul(&a, &b).unwrap().to_vec::<i64>() == want,
            "{threads} threads"
        );
    }
}

#[test]
fn single_products_split_without_changing_sums() {
    let _f = Forced::new();
    // Split over the threads inside the product: depth above 512 (the gemm
    // crate's depth blocks then depend on whether m <= 64, so its products
    // are not cut into row blocks), a last row block of one row, and
    // narrow outputs.
    for dtype in [DType::F32, DType::F64] {
        for (m, k, n) in [
            (100, 1000, 64),
            (100, 1000, 20),
            (33, 2000, 40),
            (400, 300, 9),
            (400, 300, 300),
        ] {
            let a = rand(&[m, k], 61).to_dtype(dtype).unwrap();
            let b = rand(&[k, n], 62).to_dtype(dtype).unwrap();
            // b column-major too: the crate's handling of it depends on m.
            let bt = rand(&[n, k], 63).to_dtype(dtype).unwrap().t().unwrap();
            for (b, layout) in [(b, "rows"), (bt, "columns")] {
                let want = reference64(&a, &b);
                let what = format!("{dtype:?} [{m}x{k}] @ [{k}x{n}] ({layout})");
                same_for_thread_counts(&[2, 3], &what, || {
                    check_against(&a, &b, &want, tol(dtype, k), &what)
                });
            }
        }
    }
}

#[test]
fn routing_by_size_and_cpu() {
    let _f = Forced::new();
    assert_eq!(gemm_path(DType::I64, [16, 16, 16]), None);
    let avx2 = GemmPath::Small.supported();
    let small = if avx2 {
        GemmPath::Small
    } else {
        GemmPath::Crate
    };
    assert_eq!(gemm_path(DType::F32, [16, 16, 16]), Some(small));
    assert_eq!(gemm_path(DType::F64, [4, 64, 8]), Some(small));
    let big = if crate_uses_avx512() {
        if own_avx512_preferred() {
            GemmPath::OwnAvx512
        } else {
            GemmPath::Crate
        }
    } else if avx2 {
        GemmPath::OwnAvx2
    } else {
        GemmPath::Crate
    };
    assert_eq!(gemm_path(DType::F32, [256, 256, 256]), Some(big));
    assert_eq!(
        gemm_path(DType::F64, [256, 256, 256]),
        Some(GemmPath::Crate)
    );
    force_gemm_path(Some(GemmPath::Crate));
    assert_eq!(
        gemm_path(DType::F32, [256, 256, 256]),
        Some(GemmPath::Crate)
    );
    for own in [GemmPath::OwnAvx2, GemmPath::OwnAvx512] {
        if own.supported() {
            force_gemm_path(Some(own));
            assert_eq!(gemm_path(DType::F32, [2, 2, 2]), Some(own));
            assert_eq!(gemm_path(DType::F64, [2, 2, 2]), Some(GemmPath::Crate));
        }
    }
}

/// Matrix-vector products (`n == 1`, and `m == 1` as vector @ matrix) on
/// their own path: rows as dot products or columns added in order, for a
/// matrix with contiguous rows, contiguous columns (a transpose), a strided
/// vector, lengths around the 32-lane blocks; against the float64 loop, and
/// bitwise equal at 1 and 2 threads.
#[test]
fn matrix_vector_products_on_every_layout() {
    let f = Forced::new();
    f.set(None);
    for (m, k) in [(1000, 1000), (1, 77), (300, 31), (33, 1), (640, 2049)] {
        let a = rand(&[m, k], 11);
        let at = rand(&[k, m], 12).t().unwrap();
        let wide = rand(&[k, 3], 13);
        let xs = [
            rand(&[k, 1], 14),
            wide.narrow(1, 1, 1).unwrap(), // a column: stride 3
        ];
        for mat in [&a, &at] {
            for x in &xs {
                same_for_thread_counts(&[2], &format!("{m}x{k} @ vector"), || check(mat, x));
                // the transpose: vector @ matrix
                let (xt, mt) = (x.t().unwrap(), mat.t().unwrap());
                same_for_thread_counts(&[2], &format!("vector @ {k}x{m}"), || check(&xt, &mt));
            }
        }
    }
}
