//! Throughput of each matrix kernel this CPU runs (`GemmPath`), forced in
//! turn: batches of small products on one thread, and big products on one
//! thread and on all of them. Prints a table (median of 5 samples).
//!
//!     cargo bench --bench gemm_paths                 # both sections
//!     cargo bench --bench gemm_paths -- small        # or: batches, mid, attention, big
//!     cargo bench --bench gemm_paths -- checksum     # hashes of the results
//!     cargo bench --bench gemm_paths -- small "[8192,8,8] @ b^T"  # one row
//!     GEMM_PATHS=small,crate cargo bench --bench gemm_paths   # some paths
//!
//! `scripts/check_simd_paths.sh` runs it to compare our kernels (AVX2, and
//! AVX-512 where the CPU has it) with the gemm crate's.

use ferrograd::kernels::matmul::{force_gemm_path, matmul, GemmPath};
use ferrograd::{set_num_threads, DType, Tensor};
use std::hint::black_box;
use std::time::Instant;

fn randn(shape: &[usize], dtype: DType) -> Tensor {
    ferrograd::manual_seed(0);
    Tensor::randn(shape, DType::F32)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

/// Calls of `f` that take about 50 ms.
fn calls(f: &dyn Fn()) -> usize {
    f();
    let mut n = 1usize;
    loop {
        let t = Instant::now();
        (0..n).for_each(|_| f());
        let dt = t.elapsed().as_secs_f64();
        if dt > 0.01 {
            return ((n as f64) * 0.05 / dt).ceil() as usize;
        }
        n *= 4;
    }
}

/// Median seconds per call of each of `fs`, over 5 samples each, taken in
/// turn (f0, f1, .., f0, f1, ..) so that a change in the machine's speed
/// reaches them all alike.
fn time_interleaved(fs: &[&dyn Fn()]) -> Vec<f64> {
    let ns: Vec<usize> = fs.iter().map(|f| calls(*f)).collect();
    let mut samples = vec![Vec::new(); fs.len()];
    for _ in 0..5 {
        for (i, f) in fs.iter().enumerate() {
            let t = Instant::now();
            (0..ns[i]).for_each(|_| f());
            samples[i].push(t.elapsed().as_secs_f64() / ns[i] as f64);
        }
    }
    samples
        .into_iter()
        .map(|mut s| {
            s.sort_by(f64::total_cmp);
            s[2]
        })
        .collect()
}

/// The paths to time: every supported one, or those named in `GEMM_PATHS`
/// (comma-separated keys: small, own, own512, crate).
fn paths(dtype: DType) -> Vec<GemmPath> {
    let only = std::env::var("GEMM_PATHS").ok();
    let named = |p: GemmPath| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|x| x == p.key()))
    };
    GemmPath::supported_paths()
        .into_iter()
        .filter(|&p| {
            (dtype == DType::F32 || !matches!(p, GemmPath::OwnAvx2 | GemmPath::OwnAvx512))
                && named(p)
        })
        .collect()
}

/// The rows to run: those whose label contains the second argument.
fn wanted(what: &str) -> bool {
    let filter = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .nth(1);
    filter.is_none_or(|f| what.contains(&f))
}

fn row(what: &str, flops: f64, a: &Tensor, b: &Tensor, dtype: DType) {
    if !wanted(what) {
        return;
    }
    let mut line = format!("{what:34}");
    let ps = paths(dtype);
    // One closure per path (forcing it), then the usual choice.
    let mut fs: Vec<Box<dyn Fn()>> = ps
        .iter()
        .map(|&p| {
            Box::new(move || {
                force_gemm_path(Some(p));
                black_box(matmul(black_box(a), black_box(b)).unwrap());
            }) as Box<dyn Fn()>
        })
        .collect();
    let auto = std::env::var("GEMM_PATHS").is_err();
    if auto {
        fs.push(Box::new(|| {
            force_gemm_path(None);
            black_box(matmul(black_box(a), black_box(b)).unwrap());
        }));
    }
    let refs: Vec<&dyn Fn()> = fs.iter().map(|f| f.as_ref()).collect();
    let t = time_interleaved(&refs);
    for (p, t) in ps.iter().zip(&t) {
        line += &format!(" | {:>20}: {:8.1} GFLOP/s", p.name(), flops / t * 1e-9);
    }
    if auto {
        line += &format!(" | auto {:8.1}", flops / t[ps.len()] * 1e-9);
    }
    force_gemm_path(None);
    println!("{line}");
}

fn small() {
    set_num_threads(1);
    println!("batches of small products, 1 thread (b^T: a transposed view)");
    for dtype in [DType::F32, DType::F64] {
        for s in [4, 8, 16, 24, 32, 48, 64, 96, 128] {
            let batch = ((1usize << 22) / (s * s * s)).max(1);
            let a = randn(&[batch, s, s], dtype);
            let b = randn(&[batch, s, s], dtype);
            let bt = b.transpose(-1, -2).unwrap();
            let flops = 2.0 * (batch * s * s * s) as f64;
            for (name, bb) in [("b", &b), ("b^T", &bt)] {
                let what = format!("{dtype:?} [{batch},{s},{s}] @ {name}");
                row(&what, flops, &a, bb, dtype);
            }
        }
    }
}

/// Batches as `benches/batched_matmul.py` runs them (operands in L3 or
/// memory), on one thread and on all.
fn batches() {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    for threads in [1, all] {
        set_num_threads(threads);
        println!("batches, {threads} thread(s)");
        for (batch, s) in [(64, 32), (512, 32), (4096, 32), (64, 64), (512, 64)] {
            let a = randn(&[batch, s, s], DType::F32);
            let b = randn(&[batch, s, s], DType::F32);
            let bt = b.transpose(-1, -2).unwrap();
            let flops = 2.0 * (batch * s * s * s) as f64;
            for (name, bb) in [("b", &b), ("b^T", &bt)] {
                let what = format!("F32 [{batch},{s},{s}] @ {name}");
                row(&what, flops, &a, bb, DType::F32);
            }
        }
    }
}

/// Batches of mid-sized float32 products (between the small kernel's limit
/// and our big kernel's usual sizes), one thread.
fn mid() {
    set_num_threads(1);
    println!("mid-sized products, 1 thread");
    for (m, k, n) in [
        (65, 32, 65),
        (96, 32, 96),
        (80, 80, 80),
        (128, 64, 128),
        (100, 100, 100),
        (256, 32, 256),
        (200, 50, 200),
        (32, 256, 32),
        (128, 256, 128),
    ] {
        let batch = ((1usize << 23) / (m * n * k)).max(1);
        let a = randn(&[batch, m, k], DType::F32);
        let b = randn(&[batch, k, n], DType::F32);
        let what = format!("F32 [{batch},{m},{k}] @ [{k},{n}]");
        row(&what, 2.0 * (batch * m * n * k) as f64, &a, &b, DType::F32);
    }
}

/// The products of an attention block's forward and backward (64 heads of
/// 128 x 64), on one thread and on all.
fn attention() {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let dtype = DType::F32;
    let (h, s, d) = (64, 128, 64);
    let q = randn(&[h, s, d], dtype);
    let kt = randn(&[h, s, d], dtype).transpose(-1, -2).unwrap();
    let p = randn(&[h, s, s], dtype);
    let pt = p.transpose(-1, -2).unwrap();
    let v = randn(&[h, s, d], dtype);
    let vt = v.transpose(-1, -2).unwrap();
    let flops = 2.0 * (h * s * s * d) as f64;
    for threads in [1, all] {
        set_num_threads(threads);
        println!("attention products, [64,128,64] heads, {threads} thread(s)");
        row("q @ k^T (128x64 @ 64x128)", flops, &q, &kt, dtype);
        row("p @ v (128x128 @ 128x64)", flops, &p, &v, dtype);
        row("g @ v^T (128x64 @ 64x128)", flops, &q, &vt, dtype);
        row("p^T @ g (128x128^T @ 128x64)", flops, &pt, &v, dtype);
    }
}

fn big() {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    for threads in [1, all] {
        set_num_threads(threads);
        println!("big products, {threads} thread(s)");
        for (dtype, n) in [
            (DType::F32, 256),
            (DType::F32, 1024),
            (DType::F32, 2048),
            (DType::F64, 1024),
        ] {
            let a = randn(&[n, n], dtype);
            let b = randn(&[n, n], dtype);
            let what = format!("{dtype:?} {n}^3");
            row(&what, 2.0 * (n * n * n) as f64, &a, &b, dtype);
        }
        // The MLP's products (784-512-512-10, batch 256), forward and
        // backward, one of each.
        let x = randn(&[256, 784], DType::F32);
        let w1 = randn(&[784, 512], DType::F32);
        let h = randn(&[256, 512], DType::F32);
        let w2 = randn(&[512, 512], DType::F32);
        let flops = 2.0 * (256 * 784 * 512 + 256 * 512 * 512) as f64;
        let mut line = format!("{:34}", "MLP chain 784-512-512 (x@w1, h@w2)");
        let ps = paths(DType::F32);
        let fs: Vec<Box<dyn Fn()>> = ps
            .iter()
            .map(|&p| {
                let (x, w1, h, w2) = (&x, &w1, &h, &w2);
                Box::new(move || {
                    force_gemm_path(Some(p));
                    black_box(matmul(x, w1).unwrap());
                    black_box(matmul(h, w2).unwrap());
                }) as Box<dyn Fn()>
            })
            .collect();
        let refs: Vec<&dyn Fn()> = fs.iter().map(|f| f.as_ref()).collect();
        for (p, t) in ps.iter().zip(time_interleaved(&refs)) {
            line += &format!(" | {:>20}: {:8.1} GFLOP/s", p.name(), flops / t * 1e-9);
        }
        force_gemm_path(None);
        println!("{line}");
    }
}

/// A hash of every path's results on a few sizes (float32 and float64):
/// two builds (say with and without the gemm crate's `x86-v4` feature) or
/// two machines compute the same bits where these agree.
fn checksum() {
    set_num_threads(2);
    for dtype in [DType::F32, DType::F64] {
        for (m, k, n) in [
            (7, 9, 17),
            (64, 64, 64),
            (130, 300, 77),
            (256, 256, 256),
            (100, 1000, 20),
        ] {
            let a = randn(&[3, m, k], dtype);
            let b = randn(&[3, k, n], dtype);
            let mut line = format!("{dtype:?} [3,{m},{k}] @ [3,{k},{n}]:");
            for p in paths(dtype) {
                force_gemm_path(Some(p));
                let r = ferrograd::Tensor::from(matmul(&a, &b).unwrap()).to_f64_vec();
                // FNV-1a over the values' bits (float32 ones exact in f64).
                let h = r.iter().fold(0xcbf29ce484222325u64, |h, v| {
                    (h ^ v.to_bits()).wrapping_mul(0x100000001b3)
                });
                line += &format!(" {} {h:016x}", p.name());
            }
            force_gemm_path(None);
            println!("{line}");
        }
    }
}

fn main() {
    let arg = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    println!(
        "paths on this CPU: {:?}",
        GemmPath::supported_paths()
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
    );
    match arg.as_deref() {
        Some("small") => small(),
        Some("big") => big(),
        Some("attention") => attention(),
        Some("mid") => mid(),
        Some("batches") => batches(),
        Some("checksum") => checksum(),
        _ => {
            small();
            mid();
            attention();
            big();
        }
    }
}
