"""Builds the source distribution from the files git tracks.

    python3 tools/sdist.py OUT_DIR      # prints the path of the .tar.gz

The files git tracks are copied, as they are in the work tree, to a
temporary directory, and ``python -m build --sdist`` runs there (without
isolation: the build backend of this environment). scikit-build-core takes
an sdist's files from the filesystem, so building in the checkout itself
would pack whatever untracked files lie there; an export packs exactly the
tracked ones.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tracked_files(root: Path = ROOT) -> list[str]:
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True,
                         capture_output=True).stdout
    return [name for name in out.decode().split("\0") if name]


def export(dest: Path, root: Path = ROOT) -> list[str]:
    """Copies the tracked files present in the work tree to ``dest``."""
    copied = []
    for name in tracked_files(root):
        source = root / name
        if source.is_file():  # a tracked file deleted in the work tree is left out
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
            copied.append(name)
    return copied


def build_sdist(out_dir: Path, root: Path = ROOT) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dnnl_ocl_interop-export.") as tmp:
        tree = Path(tmp) / "tree"
        export(tree, root)
        result = subprocess.run(
            [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out_dir), str(tree)],
            capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"sdist: python -m build failed:\n{result.stdout}\n{result.stderr}")
    made = sorted(out_dir.glob("dnnl_ocl_interop-*.tar.gz"), key=lambda p: p.stat().st_mtime)
    return made[-1]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(build_sdist(Path(sys.argv[1]).resolve()))
