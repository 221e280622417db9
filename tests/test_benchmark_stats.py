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
        run.check_outputs("Python", {"a row nobody checks": good}, {})


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
    """Budgets over C++ are units of the empty call measured in the run: the
    same row gets twice the µs on a machine twice as slow."""
    notes = {"allocations per execute": 1}
    for name in ("get_memory_kind", "graph execute with allocator", "graph execute with caching pool",
                 "large matmul", "graph throughput, 4 threads", "matmul throughput, 2 threads"):
        fast, slow = run.goal_of(name, notes, 0.05), run.goal_of(name, notes, 0.10)
        assert fast[1][0] == slow[1][0] == "overhead", name
        assert slow[1][1] == pytest.approx(2 * fast[1][1]), name
    # The issues' budgets in µs where the unit takes its reference time.
    reference = run.UNIT_REFERENCE_US
    assert run.goal_of("get_memory_kind", notes, reference)[1][1] == pytest.approx(1.5, rel=0.02)
    assert run.goal_of("graph execute with allocator", notes, reference)[1][1] == pytest.approx(4.5, rel=0.02)
    assert run.goal_of("graph execute with caching pool", notes, reference)[1][1] == pytest.approx(3.0, rel=0.02)
    assert run.goal_of("ops call (cached)", notes, reference)[1][1] == pytest.approx(2.0, rel=0.02)
    assert run.goal_of("execute beside a busy thread", notes, 0.05)[1] == ("ratio", 2.0)


def test_fresh_process_rows_alternate_which_side_goes_first(monkeypatch):
    order = []
    monkeypatch.setattr(run, "run_baseline", lambda *a: (order.append("C++") or ({run.FRESH_COLD_ROW: 2.0}, {})))

    class Done:
        returncode, stderr, stdout = 0, "", '{"us": 1.0}'

    monkeypatch.setattr(run.subprocess, "run", lambda *a, **k: order.append("Python") or Done())
    assert run.fresh_cold_rows(python_first=True) == (1.0, 2.0)
    assert run.fresh_cold_rows(python_first=False) == (1.0, 2.0)
    assert order == ["Python", "C++", "C++", "Python"]
