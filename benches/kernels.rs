//! Kernel benchmarks (divan): `cargo bench --bench kernels`.
//!
//! Elementwise f32 ops on 1M elements, a full sum, square matmuls (and the
//! one-thread 256^3 GEMM alone and two side by side) and a 1000-op autograd
//! chain (forward + backward). Threads: `FERROGRAD_BENCH_THREADS`
//! (default 2, matching `benches/compare.py`).

use divan::{black_box, Bencher};
use ferrograd::{DType, Tensor};

const N: usize = 1 << 20;

fn main() {
    let threads = std::env::var("FERROGRAD_BENCH_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    ferrograd::set_num_threads(threads);
    ferrograd::manual_seed(0);
    divan::main();
}

fn randn(shape: &[usize]) -> Tensor {
    Tensor::randn(shape, DType::F32).expect("randn")
}

mod elementwise {
    use super::*;

    fn bytes(n_arrays: usize) -> divan::counter::BytesCount {
        divan::counter::BytesCount::new(n_arrays * N * std::mem::size_of::<f32>())
    }

    #[divan::bench]
    fn add_f32_1m(bencher: Bencher) {
        let (a, b) = (randn(&[N]), randn(&[N]));
        bencher
            .counter(bytes(3))
            .bench_local(|| black_box(&a).add(black_box(&b)).unwrap());
    }

    #[divan::bench]
    fn mul_f32_1m(bencher: Bencher) {
        let (a, b) = (randn(&[N]), randn(&[N]));
        bencher
            .counter(bytes(3))
            .bench_local(|| black_box(&a).mul(black_box(&b)).unwrap());
    }

    #[divan::bench]
    fn tanh_f32_1m(bencher: Bencher) {
        let a = randn(&[N]);
        bencher
            .counter(bytes(2))
            .bench_local(|| black_box(&a).tanh().unwrap());
    }

    #[divan::bench]
    fn exp_f32_1m(bencher: Bencher) {
        let a = randn(&[N]);
        bencher
            .counter(bytes(2))
            .bench_local(|| black_box(&a).exp().unwrap());
    }

    #[divan::bench]
    fn sum_f32_1m(bencher: Bencher) {
        let a = randn(&[N]);
        bencher
            .counter(bytes(1))
            .bench_local(|| black_box(&a).sum().unwrap());
    }
}

mod matmul {
    use super::*;

    #[divan::bench(args = [256, 1024])]
    fn matmul_f32(bencher: Bencher, n: usize) {
        let (a, b) = (randn(&[n, n]), randn(&[n, n]));
        // Counted in FLOPs (2 n^3); divan prints them as "items".
        bencher
            .counter(divan::counter::ItemsCount::new(2 * n * n * n))
            .bench_local(|| black_box(&a).matmul(black_box(&b)).unwrap());
    }
}

/// The float32 kernel itself on one thread: a 256^3 product alone, and two
/// side by side on the pool as the wide graph's backward runs them.
#[cfg(target_arch = "x86_64")]
mod sgemm_one_thread {
    use super::*;
    use ferrograd::kernels::sgemm::{available, sgemm, Isa, Operand};

    const M: usize = 256;
    const FLOPS: usize = 2 * M * M * M;

    /// `c = a @ b` (all 256 x 256, row-major) on this thread alone, on the
    /// AVX2 micro-kernel.
    fn product(a: &[f32], b: &[f32], c: &mut [f32]) {
        assert!(available() && a.len() == M * M && b.len() == M * M && c.len() == M * M);
        let op = |x: &[f32]| Operand {
            ptr: x.as_ptr(),
            rs: M,
            cs: 1,
        };
        // SAFETY: AVX2 and FMA are available and the three slices hold
        // 256 x 256 floats each (asserted); c is exclusively borrowed, so it
        // overlaps neither operand.
        unsafe { sgemm(Isa::Avx2, [M, M, M], op(a), op(b), c.as_mut_ptr(), 1) }
    }

    fn operands() -> (Vec<f32>, Vec<f32>) {
        let v = |t: Tensor| t.to_vec::<f32>();
        (v(randn(&[M, M])), v(randn(&[M, M])))
    }

    /// One product, the other core idle.
    #[divan::bench]
    fn alone(bencher: Bencher) {
        if !available() {
            return;
        }
        let (a, b) = operands();
        let mut c = vec![0f32; M * M];
        bencher
            .counter(divan::counter::ItemsCount::new(FLOPS))
            .bench_local(|| product(&a, &b, &mut c));
    }

    /// Two products at once, each on its own pool thread: against `alone`,
    /// how much two busy cores slow each other (counted: both products).
    #[divan::bench]
    fn two_side_by_side(bencher: Bencher) {
        if !available() || ferrograd::num_threads() < 2 {
            return;
        }
        let (a, b) = operands();
        let (mut c1, mut c2) = (vec![0f32; M * M], vec![0f32; M * M]);
        let pool = ferrograd::parallel::pool();
        let (a, b) = (&a[..], &b[..]);
        bencher
            .counter(divan::counter::ItemsCount::new(2 * FLOPS))
            .bench_local(|| {
                pool.install(|| rayon::join(|| product(a, b, &mut c1), || product(a, b, &mut c2)))
            });
    }
}

mod autograd {
    use super::*;

    /// 1000 alternating mul/add/tanh ops on 16 elements, then backward
    /// (workload 3 of `benches/compare.py`, without Python).
    #[divan::bench]
    fn chain_1000_fwd_bwd(bencher: Bencher) {
        let x = randn(&[16]).requires_grad_(true).unwrap();
        let w = randn(&[16]).requires_grad_(true).unwrap();
        let b = randn(&[16]).requires_grad_(true).unwrap();
        bencher
            .counter(divan::counter::ItemsCount::new(1000usize))
            .bench_local(|| {
                for p in [&x, &w, &b] {
                    p.set_grad(None).unwrap();
                }
                let mut h = x.clone();
                for i in 0..1000 {
                    h = match i % 3 {
                        0 => h.mul(&w),
                        1 => h.add(&b),
                        _ => h.tanh(),
                    }
                    .unwrap();
                }
                h.sum().unwrap().backward().unwrap();
            });
    }
}
