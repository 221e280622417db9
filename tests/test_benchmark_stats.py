"""The benchmark's verdicts (benchmarks/run.py): a median with a bootstrap
interval over rounds, judged against the goal as meets, misses or
inconclusive."""

from pathlib import Path

import pytest

from helpers import load_script

run = load_script("benchmark_run", Path(__file__).resolve().parent.parent / "benchmarks" / "run.py")


def test_interval_contains_the_median_and_narrows_with_agreement():
    median, low, high = run.bootstrap_interval([1.0, 1.1, 0.9, 1.05, 0.95])
    assert low <= median <= high and median == pytest.approx(1.0)
    tight = run.bootstrap_interval([1.0] * 9)
    assert tight == (1.0, 1.0, 1.0)
    spread = run.bootstrap_interval([0.5, 1.0, 1.5, 0.2, 1.8])
    assert spread[2] - spread[1] > high - low


def test_interval_is_reproducible():
    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0]
    assert run.bootstrap_interval(values) == run.bootstrap_interval(values)


@pytest.mark.parametrize("low, high, expected", [
    (0.2, 1.4, "meets"), (1.6, 2.0, "misses"), (1.2, 1.8, "inconclusive"), (1.5, 1.5, "meets"),
])
def test_verdict(low, high, expected):
    assert run.verdict(low, high, 1.5) == expected


def test_plot_draws_each_judged_row(tmp_path):
    row = {"name": "execute(in-order)", "ratio": 1.4, "ratio_ci95": [1.2, 1.6], "cpp_us": 3.0,
           "verdict": "meets", "goal_limit": ["overhead", 1.5]}
    report = {"date": "2026-11-23", "onednn_version": "3.13.1", "rounds": 5,
              "rows": [row, {**row, "name": "large matmul", "verdict": "misses", "goal_limit": ["ratio", 1.02]},
                       {**row, "name": "opencl kernel enqueue", "verdict": None, "goal_limit": None}]}
    path = tmp_path / "bench.png"
    run.plot(report, str(path))
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_one_median_for_both_sides():
    """The baseline prints its samples; run.py takes both sides' medians with
    median_of, which for an even count is the mean of the two middle samples
    (the baseline used to take the upper one)."""
    assert run.median_of([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert run.median_of([3.0, 1.0, 2.0]) == 2.0


def test_output_digests_are_checked_against_numpy():
    expected = run.attention_reference(2, 16, 16)
    good = run.digest(expected.astype("float32"))
    run.check_digest("C++", "graph execute with allocator", good, expected)
    for spoiled in ({**good, "sum": good["sum"] + 1.0}, {**good, "n": good["n"] - 1},
                    {**good, "head": [v + 0.01 for v in good["head"]]}):
        with pytest.raises(RuntimeError, match="differs from NumPy"):
            run.check_digest("C++", "graph execute with allocator", spoiled, expected)
    with pytest.raises(RuntimeError, match="no NumPy reference"):
        run.check_outputs([("Python", {"a row nobody checks": good}, ())], {})


def test_every_measured_row_is_checked_and_every_failure_of_both_sides_is_told():
    relu = run.expected_outputs(64, 0)["execute(in-order)"]
    good, poisoned = run.digest(relu), run.digest(run.np.full(64, run.POISON))
    expected = {"execute(in-order)": relu, "chain of 100 executes": relu}
    run.check_outputs([("C++", {"execute(in-order)": good}, {"execute(in-order)": 1.0}),
                       ("Python", {"execute(in-order)": good}, {"execute(in-order)": 1.0})], expected)
    with pytest.raises(RuntimeError) as info:
        run.check_outputs([("C++", {"execute(in-order)": poisoned}, {"execute(in-order)": 1.0}),
                           ("Python", {"execute(in-order)": poisoned},
                            {"execute(in-order)": 1.0, "chain of 100 executes": 2.0})], expected)
    message = str(info.value)
    assert message.startswith("3 output check(s) failed")
    assert "C++ row 'execute(in-order)': output differs" in message
    assert "Python row 'execute(in-order)': output differs" in message
    assert "Python row 'chain of 100 executes': measured without an output check" in message


def test_the_poison_is_no_rows_output():
    """An execute that did nothing leaves POISON: no row's expected output
    may be all POISON, nor contain it (a partial write would go unseen)."""
    for row, values in run.expected_outputs(512, 300).items():
        assert run.POISON not in run.np.asarray(values, dtype=float), row


def test_memory_facts_name_the_kind_the_storage_and_the_size():
    assert run.memory_facts("usm", True, 256) == [0.0, 1.0, 256.0]
    assert run.memory_facts("buffer", False, 256) == [1.0, 0.0, 256.0]
    expected = run.expected_outputs(64, 0)
    assert expected["make_memory(cl_mem)"] == run.memory_facts("buffer", True, 4 * run.TINY)
    assert expected["get_memory_kind"] == [1.0]  # dnnl_ocl_interop_buffer: oneDNN's default


def test_network_reference_is_the_layers_by_hand():
    """network_reference() (NumPy convolution, ReLU, pooling, inner product)
    against a direct loop on one output."""
    import numpy as np
    out = run.network_reference()
    n, ic, oc, hw, classes = 8, 3, 16, 32, 10
    x = run.pattern(n * ic * hw * hw).astype(np.float64).reshape(n, ic, hw, hw)
    w = run.pattern(oc * ic * 9).astype(np.float64).reshape(oc, ic, 3, 3)
    b = run.pattern(oc).astype(np.float64)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((n, oc, hw, hw))
    for i in range(3):
        for j in range(3):
            conv += np.einsum("nchw,oc->nohw", padded[:, :, i:i + hw, j:j + hw], w[:, :, i, j])
    pooled = np.maximum(conv + b[None, :, None, None], 0).reshape(n, oc, 16, 2, 16, 2).max(axis=(3, 5))
    fw = run.pattern(classes * oc * 256).astype(np.float64).reshape(classes, -1)
    np.testing.assert_allclose(out, pooled.reshape(n, -1) @ fw.T + run.pattern(classes), rtol=1e-12)


def test_budgets_scale_with_the_unit():
    """Budgets over C++ are units of the unit call measured in the run: the
    same row gets twice the µs on a machine twice as slow."""
    notes = {"allocations per execute": 1}
    for name in ("get_memory_kind", "graph execute with allocator", "graph execute with caching pool",
                 "large matmul", "graph throughput, 4 threads", "matmul throughput, 2 threads"):
        fast, slow = run.goal_of(name, notes, 0.05, 10.0), run.goal_of(name, notes, 0.10, 10.0)
        assert fast[1][0] == slow[1][0] == "overhead", name
        assert slow[1][1] == pytest.approx(2 * fast[1][1]), name
    # The issues' budgets in µs where the unit takes its reference time.
    reference = run.UNIT_REFERENCE_US
    assert run.goal_of("get_memory_kind", notes, reference)[1][1] == pytest.approx(1.5, rel=0.02)
    assert run.goal_of("graph execute with allocator", notes, reference)[1][1] == pytest.approx(4.5, rel=0.02)
    assert run.goal_of("graph execute with caching pool", notes, reference)[1][1] == pytest.approx(3.0, rel=0.02)
    assert run.goal_of("ops call (cached)", notes, reference)[1][1] == pytest.approx(2.0, rel=0.02)
    assert run.goal_of("execute beside a busy thread", notes, 0.05)[1] == ("ratio", 2.0)


def test_millisecond_rows_may_add_a_share_of_their_time():
    """The rows whose time is the device's work are judged within the larger
    of their calls' budget and RELATIVE_BUDGET of their C++ time; the other
    rows keep their calls' budget whatever their time."""
    notes, unit = {"allocations per execute": 1}, run.UNIT_REFERENCE_US
    calls = run.goal_of("large matmul", notes, unit, 100.0)[1][1]  # 2 calls' budget: 3 µs
    assert calls == pytest.approx(3.0, rel=0.02)
    assert run.goal_of("large matmul", notes, unit, 37_000.0)[1][1] == pytest.approx(370.0)
    assert run.goal_of("primitive creation (cold, fresh process)", notes, unit, 365_000.0)[1][1] == \
        pytest.approx(3650.0)
    assert run.goal_of("matmul throughput, 4 threads", notes, unit, 615.0)[1][1] == pytest.approx(6.15)
    assert "1% of C++'s time" in run.goal_of("large matmul", notes, unit, 37_000.0)[0]
    for name in ("small network", "primitive creation (cached)", "graph throughput, 4 threads",
                 "execute(in-order)"):
        assert run.goal_of(name, notes, unit, 1e6)[1] == run.goal_of(name, notes, unit, 1.0)[1], name


def _report(unit_call, unit_us, rows):
    return {"date": "2026-12-06", "rounds": 5, "unit_call": unit_call, "unit_us": unit_us,
            "rows": [{"name": name, "overhead_us": median, "overhead_ci95_us": [low, high]}
                     for name, (median, low, high) in rows.items()]}


def test_compare_flags_a_row_whose_overhead_grew_beyond_its_interval():
    old = _report("gc.isenabled()", 0.02, {"execute(in-order)": (0.30, 0.20, 0.40),
                                           "get_memory_kind": (0.06, 0.05, 0.07),
                                           "small network": (12.0, 9.0, 21.0)})
    new = _report("gc.isenabled()", 0.02, {"execute(in-order)": (0.55, 0.45, 0.60),  # grew
                                           "get_memory_kind": (0.065, 0.055, 0.075),  # overlaps
                                           "small network": (5.0, 4.0, 8.0)})  # shrank
    lines, grew = run.compare(old, new)
    assert grew == ["execute(in-order)"]
    assert any("get_memory_kind" in line and "same within the noise" in line for line in lines)
    assert any("small network" in line and "shrank" in line for line in lines)
    # On a machine twice as slow (its unit twice as long) the same overheads
    # in µs are half as many units: nothing grew.
    slow = _report("gc.isenabled()", 0.04, {"execute(in-order)": (0.55, 0.45, 0.60)})
    assert run.compare(old, slow)[1] == []
    # Runs that timed different unit calls compare in µs, and say so.
    other = _report("dnnl._core._empty()", 0.024, {"execute(in-order)": (0.30, 0.20, 0.40)})
    lines, grew = run.compare(other, slow)
    assert grew == ["execute(in-order)"] and "in µs" in lines[0]


def test_compare_from_json_exits_1_when_a_row_grew(tmp_path, capsys):
    import json
    old = _report("gc.isenabled()", 0.02, {"execute(in-order)": (0.30, 0.20, 0.40)})
    new = _report("gc.isenabled()", 0.02, {"execute(in-order)": (0.55, 0.45, 0.60)})
    paths = {}
    for name, report in (("old", old), ("new", new)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(report))
    assert run.main(["--compare", str(paths["old"]), "--from-json", str(paths["new"])]) == 1
    assert "overhead grew beyond its interval: execute(in-order)" in capsys.readouterr().out
    assert run.main(["--compare", str(paths["old"]), "--from-json", str(paths["old"])]) == 0


def test_the_reference_run_in_the_repository_compares():
    """benchmarks/reference.json, what --compare is meant to be given, has
    every field compare() reads, and compares with itself without a flag."""
    import json
    reference = json.loads((Path(run.__file__).parent / "reference.json").read_text())
    assert reference["rows"] and reference["unit_us"] > 0
    assert run.compare(reference, reference)[1] == []


def test_fresh_process_rows_alternate_which_side_goes_first(monkeypatch):
    order = []
    checked = {"n": 64, "sum": 1.0, "head": [0.0]}
    monkeypatch.setattr(run, "run_baseline", lambda *a: (order.append("C++") or (
        {run.FRESH_COLD_ROW: 2.0}, {run.FRESH_COLD_ROW: checked})))

    class Done:
        returncode, stderr, stdout = 0, "", '{"us": 1.0, "digest": {"n": 64, "sum": 1.0, "head": [0.0]}}'

    monkeypatch.setattr(run.subprocess, "run", lambda *a, **k: order.append("Python") or Done())
    both = {"Python": checked, "C++": checked}
    assert run.fresh_cold_rows(python_first=True) == (1.0, 2.0, both)
    assert run.fresh_cold_rows(python_first=False) == (1.0, 2.0, both)
    assert order == ["Python", "C++", "C++", "Python"]


def test_run_py_uses_no_test_hook():
    """The benchmark runs against an installed release build: run.py (and
    the child programs it starts, whose source it holds) names none of the
    development build's test hooks, which a released module does not have."""
    import re

    hooks = load_script("stubs_tool", Path(run.__file__).parent.parent / "tools" / "stubs.py").test_hook_names()
    source = Path(run.__file__).read_text()
    used = sorted(h for h in hooks if re.search(rf"\.{h}\b", source))
    assert not used, f"benchmarks/run.py uses test hooks {used}"
