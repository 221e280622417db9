#!/usr/bin/env bash
# The sdist, installed without network in a new environment:
#   bash tools/check_sdist.sh
# 1. builds the sdist from the files git tracks (tools/sdist.py);
# 2. with network, downloads into a wheelhouse what installing it needs: the
#    build requirements (with cmake and ninja), the run-time and emulation
#    dependencies, read from pyproject.toml;
# 3. without network (a new network namespace, `unshare -n`, where this user
#    may make one; otherwise pip's --no-index alone, said so), installs the
#    sdist into a new virtual environment from that wheelhouse: pip's own
#    isolated build, oneDNN from the build cache, or built from
#    ONEDNN_SOURCE_DIR (passed through) when the cache has none;
# 4. outside the checkout, imports the installed package and runs the demo.
# A full compile of the extension (the isolated build environment's paths
# defeat ccache). The work directory is removed after a pass.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
PYTHON=${PYTHON:-python3}
work=$(mktemp -d /tmp/dnnl_ocl_interop-sdist.XXXXXX)
start=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - start )) s)"; }
echo "== sdist check in $work"

step "building the sdist from the tracked files"
sdist=$("$PYTHON" tools/sdist.py "$work/dist")
echo "$(basename "$sdist") ($(du -h "$sdist" | cut -f1), $(tar -tzf "$sdist" | wc -l) files)"

step "downloading the wheelhouse (network)"
"$PYTHON" -m venv "$work/venv"
py=$work/venv/bin/python
mapfile -t requirements < <("$PYTHON" - <<'EOF'
import tomllib
with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)
for r in (project["build-system"]["requires"] + ["cmake", "ninja"] + project["project"]["dependencies"]
          + project["project"]["optional-dependencies"]["emulation"]):
    print(r)
EOF
)
"$py" -m pip download -q --disable-pip-version-check --only-binary :all: -d "$work/wheelhouse" "${requirements[@]}"
echo "$(ls "$work/wheelhouse" | wc -l) wheels for: ${requirements[*]}"

offline=()
if unshare -n true 2>/dev/null; then
  offline=(unshare -n)
  interfaces=$("${offline[@]}" "$py" -c 'import socket; print(" ".join(n for _, n in socket.if_nameindex()))')
  if [ "$interfaces" != lo ]; then
    echo "the new network namespace has interfaces besides loopback: $interfaces" >&2; exit 1
  fi
  step "installing the sdist with no network (a new network namespace: interfaces '$interfaces'; ONEDNN_SOURCE_DIR=${ONEDNN_SOURCE_DIR:-unset})"
else
  step "installing the sdist with pip --no-index (no network namespace available to this user: the network is not cut)"
fi
if ! "${offline[@]}" "$py" -m pip install -v --disable-pip-version-check --no-index \
       --find-links "$work/wheelhouse" "$sdist[emulation]" > "$work/install.log" 2>&1; then
  tail -40 "$work/install.log"; echo "install failed; log: $work/install.log" >&2; exit 1
fi
grep -E 'oneDNN bundle|oneDNN [0-9.]+: |Successfully installed' "$work/install.log" | sed 's/^ *//'

cd "$work"  # not the checkout: the installed package is imported
step "the installed package"
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
"$py" -c 'import dnnl_ocl_interop, sys; f = dnnl_ocl_interop.__file__; print(f); sys.exit(not f.startswith(sys.argv[1]))' "$site"
"$py" "$root/examples/demo.py"
step "sdist check passed: $(basename "$sdist")"
rm -rf "$work"
