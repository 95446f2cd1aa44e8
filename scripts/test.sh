#!/usr/bin/env bash
# The whole test suite on a fresh clone, against the INSTALLED wheel:
#   1. a fresh virtualenv (.venv-test) with numpy + pytest
#   2. the release wheel built by maturin, installed into it
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
"$VPY" -m pip install --quiet --disable-pip-version-check "numpy==2.2.6" "pytest==9.2.0" "mypy==1.13.0" "mkdocs==1.6.1"

step "building the release wheel with maturin"
if command -v maturin >/dev/null 2>&1; then
    MATURIN=(maturin)
else
    "$VPY" -m pip install --quiet --disable-pip-version-check "maturin>=1.5,<2"
    MATURIN=("$VENV/bin/maturin")
fi
rm -rf "$DIST"
"${MATURIN[@]}" build --release --interpreter "$VPY" --out "$DIST"
shopt -s nullglob
wheel=("$DIST"/ferrograd-*.whl)
if [ "${#wheel[@]}" -ne 1 ]; then
    echo "expected exactly one wheel in $DIST, found ${#wheel[@]}" >&2
    exit 1
fi
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
