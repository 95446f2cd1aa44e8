//! Which SIMD build of a kernel runs: the CPU's best path, detected once, or
//! one forced per thread by tests; and [`dispatched!`], which compiles one
//! generic loop body for the baseline, for AVX2+FMA and for AVX-512 and
//! picks the build at run time.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

/// A code path for the slice kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimdPath {
    /// The x86-64 baseline (SSE2) or the target's default.
    Baseline,
    /// AVX2 + FMA, when the CPU has them.
    Avx2,
    /// AVX-512 (F, DQ, VL, BW) with AVX2 + FMA, when the CPU has them.
    Avx512,
}

thread_local! {
    /// 0: pick by CPU; 1: force baseline; 2: force AVX2, 3: force AVX-512
    /// (each if available, else the best path below it).
    /// Per thread: tests run side by side in threads, and one test's
    /// forcing must not switch the path under another.
    static FORCED: Cell<u8> = const { Cell::new(0) };
}

/// Set once any thread forces a path: until then [`simd_path`] skips the
/// thread-local (a TLS lookup per kernel call costs a short row's time in
/// the extension module).
static EVER_FORCED: AtomicBool = AtomicBool::new(false);

/// Forces a code path for kernels run on the calling thread (tests call
/// the slice kernels directly); `None` restores the automatic choice.
/// Forcing a path the CPU lacks gives the best path it has below it.
pub fn force_simd_path(path: Option<SimdPath>) {
    let v = match path {
        None => 0,
        Some(SimdPath::Baseline) => 1,
        Some(SimdPath::Avx2) => 2,
        Some(SimdPath::Avx512) => 3,
    };
    if v != 0 {
        // Before the thread-local: this thread's later simd_path() reads
        // the flag after its own store.
        EVER_FORCED.store(true, Ordering::Relaxed);
    }
    FORCED.with(|f| f.set(v));
}

/// The best path this CPU runs (detected once).
pub fn best_simd_path() -> SimdPath {
    #[cfg(target_arch = "x86_64")]
    {
        static BEST: std::sync::OnceLock<SimdPath> = std::sync::OnceLock::new();
        *BEST.get_or_init(|| {
            let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
            let avx512 = is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512dq")
                && is_x86_feature_detected!("avx512vl")
                && is_x86_feature_detected!("avx512bw");
            match (avx2, avx512) {
                (true, true) => SimdPath::Avx512,
                (true, false) => SimdPath::Avx2,
                _ => SimdPath::Baseline,
            }
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        SimdPath::Baseline
    }
}

/// The path the slice kernels take now: the best one, or the one forced
/// on this thread if the CPU has it.
pub fn simd_path() -> SimdPath {
    let best = best_simd_path();
    if !EVER_FORCED.load(Ordering::Relaxed) {
        return best;
    }
    match FORCED.with(Cell::get) {
        1 => SimdPath::Baseline,
        2 if best == SimdPath::Avx512 => SimdPath::Avx2,
        _ => best,
    }
}

/// Every path this CPU runs (for tests that compare them).
pub fn simd_paths() -> Vec<SimdPath> {
    let best = best_simd_path();
    [SimdPath::Baseline, SimdPath::Avx2, SimdPath::Avx512]
        .into_iter()
        .filter(|&p| p as u8 <= best as u8)
        .collect()
}

/// Defines `$name` (dispatching), its baseline body `$plain`, its
/// AVX2+FMA build `$avx2` and an AVX-512 build from one generic body.
macro_rules! dispatched {
    (
        $(#[$doc:meta])*
        pub fn $name:ident / $plain:ident / $avx2:ident
            <$($g:ident $(: $bound:path)?),*>($($arg:ident: $ty:ty),*) $(-> $ret:ty)?
            $(where $($wt:ident: $wb:path),*)?
            $body:block
    ) => {
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn $plain<$($g $(: $bound)?),*>($($arg: $ty),*) $(-> $ret)?
            $(where $($wt: $wb),*)?
            $body

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $avx2<$($g $(: $bound)?),*>($($arg: $ty),*) $(-> $ret)?
            $(where $($wt: $wb),*)?
        {
            $plain::<$($g),*>($($arg),*)
        }

        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        pub fn $name<$($g $(: $bound)?),*>($($arg: $ty),*) $(-> $ret)?
            $(where $($wt: $wb),*)?
        {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn avx512<$($g $(: $bound)?),*>($($arg: $ty),*) $(-> $ret)?
                    $(where $($wt: $wb),*)?
                {
                    $plain::<$($g),*>($($arg),*)
                }
                match $crate::kernels::simd::simd_path() {
                    // SAFETY: simd_path() is Avx512 only when the CPU
                    // reports every feature `avx512` is compiled for.
                    $crate::kernels::simd::SimdPath::Avx512 => return unsafe { avx512::<$($g),*>($($arg),*) },
                    // SAFETY: simd_path() is Avx2 (or better) only when the
                    // CPU reports AVX2 and FMA, the features of `$avx2`.
                    $crate::kernels::simd::SimdPath::Avx2 => return unsafe { $avx2::<$($g),*>($($arg),*) },
                    $crate::kernels::simd::SimdPath::Baseline => {}
                }
            }
            $plain::<$($g),*>($($arg),*)
        }
    };
}
pub(crate) use dispatched;
