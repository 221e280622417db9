#!/usr/bin/env bash
# Builds a wheel of this checkout (pip wheel: isolated build, bundled oneDNN
# when none is installed, taken from the build cache), installs it into a new
# virtual environment, and there runs `python -m dnnl_ocl_interop`, the demo
# and the test suite against the installed wheel. Not part of CI's run (it
# rebuilds the extension from scratch): run it before a release.
#   bash tools/check_wheel.sh [PYTEST ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/dnnl_ocl_interop-wheel.XXXXXX)
echo "wheel check in $work"
start=$(date +%s)
python3 -m pip wheel --no-deps -w "$work/dist" -Cbuild-dir="$work/build" . 2>&1 | tail -3
wheel=$(ls "$work"/dist/dnnl_ocl_interop-*.whl)
echo "built $(basename "$wheel"): $(du -h "$wheel" | cut -f1) in $(( $(date +%s) - start )) s"
python3 -m zipfile -l "$wheel" | awk 'NR>1 {print "  " $1}' | grep -E '\.so|licenses/' || true
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel[emulation,test]"
cd "$work"  # not the checkout: import the installed package
"$work/venv/bin/python" -m dnnl_ocl_interop.emulation "$work/venv/bin/python" -m dnnl_ocl_interop
"$work/venv/bin/python" "$OLDPWD/examples/demo.py"
"$work/venv/bin/python" -m pytest -p no:cacheprovider --rootdir "$OLDPWD" -c "$OLDPWD/pyproject.toml" "$OLDPWD/tests" "$@"
