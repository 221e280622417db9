"""The known-problems registry (cpp/common/known_problems.cpp, read as
dnnl.known_problems): its rows say where their evidence lies, its switches
work as documented, docs/known-problems.md agrees with it, and the probe's
report agrees with it on the device in use."""

import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import known_problems

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "known-problems.md"


def _documented_ids():
    return re.findall(r"^### `([a-z0-9-]+)`$", DOCS.read_text(), re.M)


def test_every_problem_has_one_entry_in_the_docs_and_every_entry_is_one():
    ids = [p.id for p in known_problems.problems()]
    assert len(set(ids)) == len(ids)
    assert _documented_ids() == ids  # (in the registry's order)


@pytest.mark.needs_build_tools
def test_the_docs_registry_is_generated_from_the_module():
    spec = importlib.util.spec_from_file_location("known_problems_doc", ROOT / "tools" / "known_problems_doc.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    text = DOCS.read_text()
    assert tool.rewritten(text) == text, "run python3 tools/known_problems_doc.py"


@pytest.mark.parametrize("problem", known_problems.problems(), ids=lambda p: p.id)
def test_each_row_says_where_its_evidence_lies(problem):
    assert problem.what and problem.devices and problem.case and problem.evidence
    assert problem.evidence_kind in ("source", "probe")
    assert problem.verified and all(re.fullmatch(r"\d+\.\d+\.\d+", r) for r in problem.verified)
    for impl in problem.implementations:
        assert impl.kind in dnnl.primitive.kind.__members__, impl
        assert re.fullmatch(r"[a-z_+-]+(:[a-z_+-]+)*", impl.name), impl
    if problem.evidence_kind == "source":
        assert re.search(r"src/[\w/]+\.(cl|cpp|hpp)", problem.evidence), \
            "source evidence names a file of oneDNN's sources"


def test_the_state_of_each_problem_in_this_process():
    """No row has a fixed release yet, so each applies to the loaded oneDNN
    (3.13.1, the release every row was verified in)."""
    version = dnnl.version()
    loaded = f"{version.major}.{version.minor}.{version.patch}"
    for p in known_problems.problems():
        assert p.enabled and p.fixed is None and p.applies, p.id
        assert p.verified_for_loaded == (loaded in p.verified), p.id


def test_a_switch_turns_one_rule_off_and_on_again():
    assert known_problems.get("eltwise-strides").applies
    with known_problems.disabled("eltwise-strides"):
        assert not known_problems.get("eltwise-strides").applies
        assert not known_problems.get("eltwise-strides").enabled
        assert known_problems.get("softmax-layouts").applies  # the others stay on
        with known_problems.disabled():  # every one, then back as it was
            assert not any(p.applies for p in known_problems.problems())
        assert known_problems.get("softmax-layouts").applies
        assert not known_problems.get("eltwise-strides").applies
    assert known_problems.get("eltwise-strides").applies
    known_problems.disable("eltwise-strides", "softmax-layouts")
    try:
        assert not known_problems.get("softmax-layouts").enabled
    finally:
        known_problems.enable("eltwise-strides", "softmax-layouts")
    assert all(p.enabled for p in known_problems.problems())


def test_a_switched_off_rule_lets_onednn_run_the_case(engine):
    """eltwise of a strided view: refused (naming the problem and the
    argument), and created with the rule off."""
    f32 = dnnl.memory.data_type.f32
    strided = dnnl.memory.desc([4, 3], f32, [6, 2])

    def make():
        return dnnl.eltwise_forward.primitive_desc(engine, dnnl.prop_kind.forward_inference,
                                                   dnnl.algorithm.eltwise_relu, strided, strided, 0.0, 0.0)

    if not known_problems.names("eltwise-strides", dnnl.primitive.kind.eltwise, _unrefused(make)):
        pytest.skip(f"{_unrefused(make)} runs eltwise here, which eltwise-strides does not name")
    with pytest.raises(dnnl.unimplemented, match="eltwise-strides") as refused:
        make()
    assert refused.value.known_problem == "eltwise-strides"
    assert refused.value.arguments == (dnnl.ARG_SRC,)
    with known_problems.disabled("eltwise-strides"):
        assert make().impl_info_str()


def _unrefused(make):
    with known_problems.disabled():
        return make().impl_info_str()


def test_errors_of_other_causes_name_no_problem(engine):
    with pytest.raises(dnnl.error) as info:
        dnnl.memory.desc([2, 3], dnnl.memory.data_type.f32, [1])
    assert info.value.known_problem is None and info.value.arguments == ()


@pytest.mark.parametrize("bad, error", [("no-such-problem", ValueError), (3, TypeError), (None, TypeError)])
def test_unknown_ids_are_refused_naming_them(bad, error):
    for call in (known_problems.disable, known_problems.enable, known_problems.get):
        with pytest.raises(error, match=str(bad) if error is ValueError else "str"):
            call(bad)
    with pytest.raises(error):
        with known_problems.disabled("eltwise-strides", bad):
            pass
    assert known_problems.get("eltwise-strides").enabled  # nothing switched off on the way


def test_the_command_lists_every_problem():
    done = subprocess.run([sys.executable, "-m", "dnnl_ocl_interop", "known-problems"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for p in known_problems.problems():
        assert f"\n{p.id}: on\n" in done.stdout, p.id
    assert f"{len(known_problems.problems())} known problems of oneDNN" in done.stdout


def test_the_probe_agrees_with_the_registry_on_this_device():
    """python -m dnnl_ocl_interop probe runs every problem's case with its
    rule on and off, and the sweep: exit 0 means every observation agrees
    (the binding acts exactly where oneDNN computes wrong) and every family
    computed right."""
    done = subprocess.run([sys.executable, "-m", "dnnl_ocl_interop", "probe"],
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "observations agree with the registry" in done.stdout
    for p in known_problems.problems():
        assert f"  {p.id}: " in done.stdout, p.id
