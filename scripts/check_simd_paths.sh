#!/usr/bin/env bash
# Checks every SIMD code path this CPU can run (issue 22): the elementwise
# loops and vmath functions of each `SimdPath` (baseline, AVX2, AVX-512)
# agree bitwise and meet their accuracy tests, and every matrix kernel
# (`GemmPath`: our AVX2 kernels, the gemm crate with AVX-512 where the CPU
# has it) gives the checked results; then prints the kernels' checksums and
# throughput. Run it on any machine whose CPU differs from yours (an Intel
# Xeon with AVX-512, an AMD Zen 3 without it): the test suite only exercises
# the paths of the CPU it runs on.
#
#     scripts/check_simd_paths.sh               # builds with cargo
#     SIMD_BINS=dir scripts/check_simd_paths.sh # prebuilt binaries, no Rust:
#                                               # dir/lib_tests, dir/matmul_f32, dir/gemm_paths
#
# Make such a dir on a build machine with `scripts/check_simd_paths.sh --build dir`.
set -euo pipefail
cd "$(dirname "$0")/.."

exe_of() { # the executable cargo printed for a test or bench target
    grep -o '(target/[^)]*)' | tr -d '()' | tail -1
}

if [[ "${1:-}" == "--build" ]]; then
    out=${2:?usage: --build DIR}
    mkdir -p "$out"
    cp "$(cargo test --release --lib --no-run 2>&1 | exe_of)" "$out/lib_tests"
    cp "$(cargo test --release --test matmul_f32 --no-run 2>&1 | exe_of)" "$out/matmul_f32"
    cp "$(cargo bench --bench gemm_paths --no-run 2>&1 | exe_of)" "$out/gemm_paths"
    echo "binaries in $out"
    exit 0
fi

if [[ -n "${SIMD_BINS:-}" ]]; then
    lib_tests=$SIMD_BINS/lib_tests
    matmul_f32=$SIMD_BINS/matmul_f32
    gemm_paths=$SIMD_BINS/gemm_paths
else
    lib_tests=$(cargo test --release --lib --no-run 2>&1 | exe_of)
    matmul_f32=$(cargo test --release --test matmul_f32 --no-run 2>&1 | exe_of)
    gemm_paths=$(cargo bench --bench gemm_paths --no-run 2>&1 | exe_of)
fi

echo "== CPU"
grep -m1 'model name' /proc/cpuinfo || true
echo "SIMD: $(grep -m1 -o -w -E 'avx2|fma' /proc/cpuinfo | sort -u | tr '\n' ' ')$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^avx512(f|bw|dq|vl)$' | sort | tr '\n' ' ')"
echo "== elementwise loops and vmath: every path, bitwise agreement and accuracy"
"$lib_tests" -q kernels::
echo "== matrix kernels: every GemmPath forced in turn"
"$matmul_f32" -q
echo "== matrix kernels: checksums of each path's results"
"$gemm_paths" checksum
echo "== matrix kernels: throughput of each path"
"$gemm_paths" big
