//! Which kernel a float product runs on: [`gemm_path`] picks a
//! [`GemmPath`] from the dtype, the sizes and the CPU, unless tests or
//! benches forced one with [`force_gemm_path`].

use crate::buffer::DType;
use std::sync::atomic::{AtomicU8, Ordering};

/// The kernels a float product can run on (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GemmPath {
    /// Our direct small-matrix kernel (x86-64, AVX2 and FMA).
    Small,
    /// Our BLIS-style AVX2/FMA float32 kernel (x86-64; float64 products
    /// forced onto it run on [`GemmPath::Crate`]).
    OwnAvx2,
    /// The same kernel with its AVX-512 micro-kernel (x86-64 with
    /// avx512f; float64 products forced onto it run on the crate).
    OwnAvx512,
    /// The `gemm` crate, with its own dispatch (AVX-512 where the CPU has
    /// avx512f, see [`crate_uses_avx512`]).
    Crate,
}

impl GemmPath {
    pub const ALL: [GemmPath; 4] = [
        GemmPath::Small,
        GemmPath::OwnAvx2,
        GemmPath::OwnAvx512,
        GemmPath::Crate,
    ];

    /// Whether this CPU runs the path.
    pub fn supported(self) -> bool {
        match self {
            GemmPath::Small | GemmPath::OwnAvx2 => has_avx2_fma(),
            GemmPath::OwnAvx512 => has_avx512(),
            GemmPath::Crate => true,
        }
    }

    /// The paths this CPU runs.
    pub fn supported_paths() -> Vec<GemmPath> {
        Self::ALL.into_iter().filter(|p| p.supported()).collect()
    }

    /// The path's key in `FERROGRAD_GEMM_PATH` and the benchmark's
    /// `GEMM_PATHS`.
    pub fn key(self) -> &'static str {
        match self {
            GemmPath::Small => "small",
            GemmPath::OwnAvx2 => "own",
            GemmPath::OwnAvx512 => "own512",
            GemmPath::Crate => "crate",
        }
    }

    /// A short name, with the instruction set the crate runs here.
    pub fn name(self) -> &'static str {
        match self {
            GemmPath::Small => "small (AVX2)",
            GemmPath::OwnAvx2 => "own sgemm (AVX2)",
            GemmPath::OwnAvx512 => "own sgemm (AVX-512)",
            GemmPath::Crate if crate_uses_avx512() => "gemm crate (AVX-512)",
            GemmPath::Crate => "gemm crate (AVX2)",
        }
    }
}

pub(super) fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        super::super::sgemm::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether our kernel's AVX-512 micro-kernel runs on this CPU.
pub(super) fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        super::super::sgemm::Isa::Avx512.available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the `gemm` crate runs its AVX-512 micro-kernels on this CPU
/// (it checks avx512f itself, once, as we do here).
pub fn crate_uses_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static V4: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *V4.get_or_init(|| is_x86_feature_detected!("avx512f"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The forced path: 0 for none, else 1 + its index in [`GemmPath::ALL`].
static FORCED: AtomicU8 = AtomicU8::new(0);

/// Forces the path named by `FERROGRAD_GEMM_PATH` (small, own, own512 or
/// crate; for benchmarks: the same run with another kernel), once, before
/// the first product or [`force_gemm_path`] call. A name that is unknown or
/// that this CPU lacks is ignored (with a warning on stderr).
fn force_from_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Ok(name) = std::env::var("FERROGRAD_GEMM_PATH") else {
            return;
        };
        match GemmPath::ALL.into_iter().find(|p| p.key() == name) {
            Some(p) if p.supported() => FORCED.store(forced_code(Some(p)), Ordering::Relaxed),
            _ => eprintln!("ferrograd: FERROGRAD_GEMM_PATH={name:?} is not a path this CPU runs"),
        }
    });
}

/// Makes every float product run on `path` (`None`: the usual choice by
/// size and CPU), process-wide; for tests and benchmarks. Panics if this
/// CPU lacks the path.
pub fn force_gemm_path(path: Option<GemmPath>) {
    force_from_env();
    if let Some(p) = path {
        assert!(p.supported(), "{p:?} is not supported on this CPU");
    }
    FORCED.store(forced_code(path), Ordering::Relaxed);
}

/// [`FORCED`]'s value for `path`.
fn forced_code(path: Option<GemmPath>) -> u8 {
    match path {
        None => 0,
        Some(p) => 1 + GemmPath::ALL.iter().position(|&q| q == p).expect("listed") as u8,
    }
}

/// The path set by [`force_gemm_path`] (or `FERROGRAD_GEMM_PATH`).
pub fn forced_gemm_path() -> Option<GemmPath> {
    force_from_env();
    match FORCED.load(Ordering::Relaxed) {
        0 => None,
        v => Some(GemmPath::ALL[v as usize - 1]),
    }
}

/// Largest m and n of a float32 product on the small kernel (unless
/// forced); its depth at most [`SMALL_MAX_K`]. Measured one product per
/// thread on batches (`cargo bench --bench gemm_paths -- small`, `-- mid`):
/// products up to 48 ran at 1.1-3x the next kernel's rate (tiny ones
/// 3-10x: the others' set-up per product dominates), 64-96 about level
/// with our big kernel, from 128 behind it.
pub const SMALL_MAX_F32: usize = 96;

/// Largest depth of a float32 product on the small kernel: its B panel
/// (k x 16 floats) then still fits in the L1 cache (it has no depth blocks).
pub const SMALL_MAX_K: usize = 256;

/// Largest m, n and k of a float64 product on the small kernel: level with
/// the crate at 64, behind it from 96.
pub const SMALL_MAX_F64: usize = 64;

/// Whether a product of these sizes runs on the small kernel by default.
fn small_fits(dtype: DType, [m, n, k]: [usize; 3]) -> bool {
    match dtype {
        DType::F32 => m.max(n) <= SMALL_MAX_F32 && k <= SMALL_MAX_K,
        _ => m.max(n).max(k) <= SMALL_MAX_F64,
    }
}

/// The kernel a float product of `dtype` and sizes `[m, n, k]` runs on
/// (`None` for the integer dtypes and bool, which use the plain loop).
pub fn gemm_path(dtype: DType, mnk: [usize; 3]) -> Option<GemmPath> {
    match dtype {
        DType::F32 | DType::F64 => {}
        _ => return None,
    }
    if let Some(p) = forced_gemm_path() {
        if matches!(p, GemmPath::OwnAvx2 | GemmPath::OwnAvx512) && dtype != DType::F32 {
            return Some(GemmPath::Crate);
        }
        return Some(p);
    }
    Some(if has_avx2_fma() && small_fits(dtype, mnk) {
        GemmPath::Small
    } else if dtype == DType::F32 && crate_uses_avx512() {
        if own_avx512_preferred() && mnk.iter().all(|&d| d >= OWN_AVX512_MIN) {
            GemmPath::OwnAvx512
        } else {
            GemmPath::Crate
        }
    } else if dtype == DType::F32 && own_kernel(mnk) {
        GemmPath::OwnAvx2
    } else {
        GemmPath::Crate
    })
}

/// Smallest m, n and k of an f32 product on our AVX-512 kernel (where
/// [`own_avx512_preferred`]). Measured one product per thread on AMD Zen 5
/// (`gemm_paths -- mid`, `-- attention`, `-- big`): from 256 level with
/// the crate's AVX-512 kernel; at 64-128 the crate was 5-30% faster (our
/// 32-column tiles waste more at the edges).
pub const OWN_AVX512_MIN: usize = 128;

/// Whether big f32 products on an AVX-512 CPU default to our kernel rather
/// than the crate's: on AMD (and other vendors), not on Intel. Measured
/// (2026-11-27): on AMD Zen 5 both run at about the same rate alone
/// (`gemm_paths -- big`, 1 and 2 threads), and our kernel made the
/// published wide-graph, matmul and MLP workloads 12-25% faster (2
/// threads); on an Intel Xeon (family 6 model 207) the crate's kernel ran
/// 8-23% more GFLOP/s on one thread in three runs on two machines, and a
/// 6x64 variant of ours did no better. (With 8 and 16 threads ours ran
/// `benches/scaling.py`'s GEMM workloads faster there, matmul 1024 fwd+bwd
/// 13.0 / 9.5 ms against 14.8 / 12.5-15.0; a choice by thread count would
/// make results differ between thread counts, which no kernel choice may.)
pub fn own_avx512_preferred() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static OWN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *OWN.get_or_init(|| has_avx512() && !cpu_vendor_is_intel())
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether CPUID's vendor string is Intel's.
#[cfg(target_arch = "x86_64")]
fn cpu_vendor_is_intel() -> bool {
    let id = std::arch::x86_64::__cpuid(0);
    let mut vendor = [0u8; 12];
    vendor[..4].copy_from_slice(&id.ebx.to_le_bytes());
    vendor[4..8].copy_from_slice(&id.edx.to_le_bytes());
    vendor[8..].copy_from_slice(&id.ecx.to_le_bytes());
    &vendor == b"GenuineIntel"
}

/// Smallest m, n and k that our own f32 kernel takes: below it the `gemm`
/// crate's small-matrix paths are faster (measured single-threaded).
pub const OWN_KERNEL_MIN: usize = 32;

/// Whether an f32 product of this size (not one for the small kernel) is
/// big enough for our own kernel: from 64^3 multiply-adds. Measured one
/// product per thread (`gemm_paths -- mid`, `-- attention`): 128 x 64 x
/// 128 and the attention block's products ran at 1.05-1.2x the crate's
/// rate, 100^3 and 200 x 50 x 200 level.
fn own_kernel([m, n, k]: [usize; 3]) -> bool {
    m.min(n).min(k) >= OWN_KERNEL_MIN && m * n * k >= 1 << 18 && has_avx2_fma()
}
