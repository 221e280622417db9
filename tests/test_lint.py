"""The repository passes ruff with the configuration in pyproject.toml
([tool.ruff]: errors and likely bugs, lines of up to 120 characters, the
generated stubs left out)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(120)
def test_ruff_finds_nothing():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "No module named ruff" not in result.stderr, "ruff is missing: pip install -e '.[test]'"
    assert result.returncode == 0, result.stdout + result.stderr
