"""The oneDNN problems the binding works around (cpp/common/workarounds.cpp,
seen as ``_core._known_problems``) and docs/known-problems.md name the same
ones, and each applies to the oneDNN this package runs (none is fixed yet)."""

import pathlib
import re

import dnnl_ocl_interop as dnnl

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "known-problems.md"


def _documented_ids():
    return re.findall(r"^\*\*Id:\*\* `([a-z0-9-]+)`$", DOCS.read_text(), re.M)


def test_every_workaround_is_documented_once_and_every_documented_id_is_one():
    ids = [problem[0] for problem in dnnl._core._known_problems]
    documented = _documented_ids()
    assert len(set(ids)) == len(ids)
    assert sorted(documented) == sorted(ids)


def test_each_problem_applies_to_the_running_onednn():
    """None has a fixed release yet, so each applies to every oneDNN (the
    strict xfails of the tests say when one is fixed)."""
    for problem_id, what, applies in dnnl._core._known_problems:
        assert what and applies, problem_id
